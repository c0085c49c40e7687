# Assertions shared by the consumer projects: gidpolicy must not force flags on a consumer.
#
# gidpolicy_assert_clean_usage(<target>...)
#   Each target's usage requirements hold include dirs, libraries and compile features only:
#   no compile or link options (no -Werror, warnings or sanitizer flags leaking), no global
#   C++ standard, and C++20 requested as the compile feature cxx_std_20.
# gidpolicy_assert_no_global_flags(<cxx_flags_before> <c_flags_before>)
# gidpolicy_consumer_programs(<target>...)
#   The consumer programs: `consumer` (consumer.cpp: <gidpolicy/gidpolicy.hpp>, the core and the
#   host library) linked with <target>s, and `consumer_core` (consumer_core.cpp) linked with
#   gidpolicy::core alone, built with it. Writes gidpolicy_consumer.cmake in the build directory:
#   where the core and host libraries are and which nm to ask, for run_consumer.cmake's symbol
#   check (check_core_symbols.cmake).
#   Including gidpolicy left CMAKE_<LANG>_FLAGS, CMAKE_CXX_STANDARD and the directory's
#   compile options as they were (add_subdirectory / FetchContent).

function(gidpolicy_assert_clean_usage)
  foreach(_t IN LISTS ARGN)
    if(NOT TARGET ${_t})
      message(FATAL_ERROR "consumer check: target ${_t} does not exist")
    endif()
    foreach(_prop INTERFACE_COMPILE_OPTIONS INTERFACE_LINK_OPTIONS)
      get_target_property(_v ${_t} ${_prop})
      if(_v)
        message(FATAL_ERROR "consumer check: ${_t} forces ${_prop} on consumers: ${_v}")
      endif()
    endforeach()
    get_target_property(_libs ${_t} INTERFACE_LINK_LIBRARIES)
    if(_libs MATCHES "-fsanitize|-Werror|-W[a-z]")
      message(FATAL_ERROR "consumer check: ${_t} passes flags through INTERFACE_LINK_LIBRARIES: ${_libs}")
    endif()
    get_target_property(_imported ${_t} IMPORTED)
    if(_imported AND _libs MATCHES "nlohmann")
      message(FATAL_ERROR "consumer check: ${_t} requires nlohmann_json, a build-only dependency: ${_libs}")
    endif()
  endforeach()
  foreach(_t gidpolicy::gidpolicy gidpolicy::core gidpolicy::host)
    get_target_property(_features ${_t} INTERFACE_COMPILE_FEATURES)
    if(NOT "cxx_std_20" IN_LIST _features)
      message(FATAL_ERROR "consumer check: ${_t} should ask for cxx_std_20, has '${_features}'")
    endif()
  endforeach()
  if(DEFINED CMAKE_CXX_STANDARD)
    message(FATAL_ERROR "consumer check: CMAKE_CXX_STANDARD was set to ${CMAKE_CXX_STANDARD} for the consumer")
  endif()
  message(STATUS "consumer check: ${ARGN}: no forced options, cxx_std_20 as a compile feature")
endfunction()

function(gidpolicy_assert_no_global_flags cxx_before c_before)
  if(NOT "${CMAKE_CXX_FLAGS}" STREQUAL "${cxx_before}")
    message(FATAL_ERROR "consumer check: CMAKE_CXX_FLAGS changed from '${cxx_before}' to '${CMAKE_CXX_FLAGS}'")
  endif()
  if(NOT "${CMAKE_C_FLAGS}" STREQUAL "${c_before}")
    message(FATAL_ERROR "consumer check: CMAKE_C_FLAGS changed from '${c_before}' to '${CMAKE_C_FLAGS}'")
  endif()
  get_directory_property(_opts COMPILE_OPTIONS)
  if(_opts)
    message(FATAL_ERROR "consumer check: directory compile options were added: ${_opts}")
  endif()
  foreach(_var GIDPOLICY_BUILD_TESTS GIDPOLICY_BUILD_EXAMPLES GIDPOLICY_BUILD_TOOLS GIDPOLICY_BUILD_FAKES)
    if(${_var})
      message(FATAL_ERROR "consumer check: ${_var} defaults ON in a subproject build")
    endif()
  endforeach()
  # Each is off by default in a subproject: its directory must not define its targets then
  # (they would join the consumer's `all`, and their dependencies its configure step).
  foreach(_pair "gidpolicy_unit_tests:GIDPOLICY_BUILD_TESTS" "gidpolicy_fakes:GIDPOLICY_BUILD_FAKES"
                "gidpolicy_cli:GIDPOLICY_BUILD_TOOLS" "print_table:GIDPOLICY_BUILD_EXAMPLES")
    string(REPLACE ":" ";" _pair "${_pair}")
    list(GET _pair 0 _target)
    list(GET _pair 1 _option)
    if(TARGET ${_target})
      message(FATAL_ERROR "consumer check: a subproject build defines ${_target} although ${_option} is OFF "
                          "(its CMakeLists.txt must return() when ${_option} is OFF)")
    endif()
  endforeach()
endfunction()

function(gidpolicy_consumer_programs)
  add_executable(consumer_core ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/consumer_core.cpp)
  target_link_libraries(consumer_core PRIVATE gidpolicy::core)
  add_executable(consumer ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/consumer.cpp)
  target_link_libraries(consumer PRIVATE ${ARGN})
  # The test builds `consumer`; the core's own consumer comes with it.
  add_dependencies(consumer consumer_core)
  if(NOT CMAKE_NM)
    message(FATAL_ERROR "consumer check: no nm (CMAKE_NM) to read the core library's symbols with")
  endif()
  file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/gidpolicy_consumer.cmake" CONTENT
"set(NM \"${CMAKE_NM}\")
set(CORE_LIBRARY \"$<TARGET_FILE:gidpolicy::core>\")
set(HOST_LIBRARY \"$<TARGET_FILE:gidpolicy::host>\")
set(CORE_PROGRAM \"$<TARGET_FILE:consumer_core>\")
")
endfunction()
