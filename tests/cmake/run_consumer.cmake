# Test command of the CMake consumer projects: check what actually reached the compiler for the
# consumer's own sources, then run the consumer and check its output, then the consumer of
# gidpolicy::core alone and the core's symbols.
#
#   cmake -DBIN=<consumer build dir> -DSRC=<consumer source dir> -DEXE=<program>
#         [-DSTD_FLAG=<regex>] [-DEXPECT=<regex>] -P run_consumer.cmake
#
# The consumer's own translation units must get C++20 from the compile feature (STD_FLAG,
# e.g. -std=(gnu|c)\+\+20) and none of gidpolicy's maintainer flags (-Werror, -Wconversion,
# -fsanitize=...), whatever options gidpolicy itself was built with.
file(READ "${BIN}/compile_commands.json" _db)
string(JSON _n LENGTH "${_db}")
math(EXPR _last "${_n} - 1")
set(_seen 0)
foreach(_i RANGE ${_last})
  string(JSON _file GET "${_db}" ${_i} file)
  file(REAL_PATH "${_file}" _file)
  file(REAL_PATH "${SRC}" _src)
  string(FIND "${_file}" "${_src}/" _at)
  if(NOT _at EQUAL 0 OR _file MATCHES "/_deps/|/gidpolicy-build/")
    continue()  # gidpolicy's own sources (add_subdirectory / FetchContent) may use its flags
  endif()
  string(JSON _cmd GET "${_db}" ${_i} command)
  math(EXPR _seen "${_seen} + 1")
  if(_cmd MATCHES "-Werror|-Wconversion|-Wshadow|-fsanitize")
    message(FATAL_ERROR "gidpolicy's flags reached the consumer's ${_file}:\n${_cmd}")
  endif()
  if(STD_FLAG AND NOT _cmd MATCHES "${STD_FLAG}")
    message(FATAL_ERROR "${_file} was not compiled with ${STD_FLAG}:\n${_cmd}")
  endif()
endforeach()
if(_seen EQUAL 0)
  message(FATAL_ERROR "no consumer source of ${SRC} found in ${BIN}/compile_commands.json")
endif()

execute_process(COMMAND "${EXE}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
message(STATUS "${EXE}:\n${_out}${_err}")
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${EXE} exited with ${_rc}")
endif()
if(EXPECT AND NOT _out MATCHES "${EXPECT}")
  message(FATAL_ERROR "${EXE} output does not match '${EXPECT}'")
endif()

# The consumer of gidpolicy::core alone (gidpolicy_consumer_programs): it runs, and neither it
# nor the core library holds what the host library is for (check_core_symbols.cmake).
if(EXISTS "${BIN}/gidpolicy_consumer.cmake")
  include("${BIN}/gidpolicy_consumer.cmake")
  execute_process(COMMAND "${CORE_PROGRAM}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  message(STATUS "${CORE_PROGRAM}:\n${_out}${_err}")
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${CORE_PROGRAM} exited with ${_rc}")
  endif()
  if(NOT _out MATCHES "consumer core: auto advertises ::ffff:10\\.99\\.0\\.3 and routes from sgid_index 2")
    message(FATAL_ERROR "${CORE_PROGRAM} did not plan index 2")
  endif()
  set(PROGRAMS "${CORE_PROGRAM}")
  include("${CMAKE_CURRENT_LIST_DIR}/check_core_symbols.cmake")
endif()
