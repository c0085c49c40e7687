cmake_policy(VERSION 3.20)
# pkg-config consumer: compile and run a program with the plain system compiler driver and only
# the flags `pkg-config --cflags --libs <package>` gives, against the installed prefix.
#
#   cmake -DPREFIX=... -DPKGCONFIG_DIR=<rel> -DPACKAGE=gidpolicy -DCOMPILER=c++
#         -DSOURCE=consumer.cpp -DLANG_FLAGS="-std=c++20" -DWORK=<dir> [-DEXPECT=<regex>]
#         [-DSYSTEM_PACKAGES=libibverbs]
#         [-DNM=nm -DCORE_LIBRARY=<installed core> [-DHOST_LIBRARY=<installed host>]] -P run.cmake
#
# With CORE_LIBRARY, the program and that library are checked for the host library's calls
# (../check_core_symbols.cmake): the gidpolicy-core consumer.
#
# pkg-config sees the install prefix and nothing else (PKG_CONFIG_LIBDIR, not PKG_CONFIG_PATH,
# which only adds to the system's directories): a .pc that requires a package the consumer's
# machine may not have (libibverbs.pc is absent on macOS, where JACCL runs) fails here. The
# packages a .pc is meant to require are named in SYSTEM_PACKAGES; their .pc files, and those
# they require, are copied into a directory of their own and added to the search.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(_search "${PREFIX}/${PKGCONFIG_DIR}")
if(SYSTEM_PACKAGES)
  set(_allowed "${WORK}/system-pc")
  file(MAKE_DIRECTORY "${_allowed}")
  set(_todo ${SYSTEM_PACKAGES})
  set(_done)
  while(_todo)
    list(POP_FRONT _todo _pkg)
    if(_pkg IN_LIST _done)
      continue()
    endif()
    list(APPEND _done ${_pkg})
    execute_process(COMMAND pkg-config --variable=pcfiledir ${_pkg} RESULT_VARIABLE _rc
                    OUTPUT_VARIABLE _dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "SYSTEM_PACKAGES: ${_pkg}.pc is not installed on this machine")
    endif()
    file(COPY "${_dir}/${_pkg}.pc" DESTINATION "${_allowed}")
    execute_process(COMMAND pkg-config --print-requires --print-requires-private ${_pkg}
                    OUTPUT_VARIABLE _reqs ERROR_QUIET)
    string(REGEX REPLACE "[ \t]*[<>=!]+[^\n]*" "" _reqs "${_reqs}")
    string(REPLACE "\n" ";" _reqs "${_reqs}")
    foreach(_r IN LISTS _reqs)
      string(STRIP "${_r}" _r)
      if(_r)
        list(APPEND _todo ${_r})
      endif()
    endforeach()
  endwhile()
  string(APPEND _search ":${_allowed}")
endif()
unset(ENV{PKG_CONFIG_PATH})
set(ENV{PKG_CONFIG_LIBDIR} "${_search}")
execute_process(COMMAND pkg-config --cflags --libs ${PACKAGE}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _flags ERROR_VARIABLE _err
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs ${PACKAGE} failed: ${_err}")
endif()
if(_flags MATCHES "-Werror|-fsanitize|-std=")
  message(FATAL_ERROR "${PACKAGE}.pc forces flags on consumers: ${_flags}")
endif()
separate_arguments(_flags UNIX_COMMAND "${_flags}")
separate_arguments(_lang UNIX_COMMAND "${LANG_FLAGS}")

set(_exe "${WORK}/consumer")
message(STATUS "${COMPILER} ${_lang} ${SOURCE} -o ${_exe} ${_flags}")
execute_process(COMMAND ${COMPILER} ${_lang} "${SOURCE}" -o "${_exe}" ${_flags}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "compiling with pkg-config flags failed:\n${_out}${_err}")
endif()
execute_process(COMMAND "${_exe}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
message(STATUS "${_exe}:\n${_out}${_err}")
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${_exe} exited with ${_rc}")
endif()
if(EXPECT AND NOT _out MATCHES "${EXPECT}")
  message(FATAL_ERROR "output does not match '${EXPECT}'")
endif()
if(CORE_LIBRARY)
  if(_flags MATCHES "gidpolicy_host")
    message(FATAL_ERROR "${PACKAGE}.pc links the host library: ${_flags}")
  endif()
  set(PROGRAMS "${_exe}")
  include("${CMAKE_CURRENT_LIST_DIR}/../check_core_symbols.cmake")
endif()
