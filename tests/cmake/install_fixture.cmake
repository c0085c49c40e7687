# The fixture every find_package / pkg-config consumer test shares: a fresh `cmake --install` of
# the build under test into a private prefix, then a check of what landed there.
#
#   cmake -DBUILD_DIR=... -DPREFIX=... -DCONFIG=... -DEXPECT="rel;paths" -P install_fixture.cmake
foreach(_v BUILD_DIR PREFIX EXPECT)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "install_fixture.cmake: ${_v} not set")
  endif()
endforeach()

file(REMOVE_RECURSE "${PREFIX}")
set(_config_args)
if(CONFIG)
  set(_config_args --config "${CONFIG}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" ${_config_args}
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${_rc}):\n${_out}\n${_err}")
endif()

set(_missing)
foreach(_f IN LISTS EXPECT)
  if(NOT EXISTS "${PREFIX}/${_f}")
    list(APPEND _missing "${_f}")
  endif()
endforeach()
if(_missing)
  message(FATAL_ERROR "not installed: ${_missing}\ninstall log:\n${_out}")
endif()

# The exported targets must not carry build-only dependencies or maintainer flags.
file(GLOB _target_files "${PREFIX}/*/cmake/gidpolicy/gidpolicyTargets*.cmake"
                        "${PREFIX}/*/*/cmake/gidpolicy/gidpolicyTargets*.cmake")
if(NOT _target_files)
  message(FATAL_ERROR "no gidpolicyTargets*.cmake under ${PREFIX}")
endif()
foreach(_f IN LISTS _target_files)
  file(READ "${_f}" _text)
  foreach(_bad nlohmann -Werror -fsanitize -Wconversion GTest rapidcheck)
    string(FIND "${_text}" "${_bad}" _at)
    if(NOT _at EQUAL -1)
      message(FATAL_ERROR "${_f} mentions '${_bad}': a build-only dependency or flag leaked into the export")
    endif()
  endforeach()
endforeach()
file(GLOB _pc_files "${PREFIX}/*/pkgconfig/*.pc" "${PREFIX}/*/*/pkgconfig/*.pc")
foreach(_f IN LISTS _pc_files)
  file(READ "${_f}" _text)
  if(_text MATCHES "nlohmann|-Werror|-fsanitize|\\$<")
    message(FATAL_ERROR "${_f} holds a build-only dependency, a flag or an unexpanded generator expression:\n${_text}")
  endif()
endforeach()
message(STATUS "installed into ${PREFIX}: ${EXPECT}")
