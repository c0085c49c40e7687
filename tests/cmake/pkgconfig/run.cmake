# pkg-config consumer: compile and run a program with the plain system compiler driver and only
# the flags `pkg-config --cflags --libs <package>` gives, against the installed prefix.
#
#   cmake -DPREFIX=... -DPKGCONFIG_DIR=<rel> -DPACKAGE=gidpolicy -DCOMPILER=c++
#         -DSOURCE=consumer.cpp -DLANG_FLAGS="-std=c++20" -DWORK=<dir> [-DEXPECT=<regex>]
#         -P run.cmake
set(ENV{PKG_CONFIG_PATH} "${PREFIX}/${PKGCONFIG_DIR}")
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

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
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
