# Per-target build options for gidpolicy's own targets.
# -Wno-missing-field-initializers: GCC 12 warns on designated initializers that rely on default
# member initializers, which is how the public option structs are meant to be used.
#
# Nothing here is global: consumers that add_subdirectory(gidpolicy) get no -Werror and no
# sanitizer flags, and the drop-in fake libibverbs is never instrumented (an ASan runtime in a
# library loaded by uninstrumented Debian tools makes them refuse to start).

# gidpolicy_target_options(<target> [NO_SANITIZE])
function(gidpolicy_target_options target)
  cmake_parse_arguments(ARG "NO_SANITIZE" "" "" ${ARGN})
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
                                -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
                                -Wno-missing-field-initializers>
      $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion>)
    if(GIDPOLICY_WARNINGS_AS_ERRORS)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
  endif()
  if(GIDPOLICY_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                                               UNITY_BUILD_BATCH_SIZE ${GIDPOLICY_UNITY_BUILD_BATCH_SIZE})
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # A unity build #includes several sources into one file; GCC then reports a type from one
    # source's anonymous namespace used in another's class as -Wsubobject-linkage, which only
    # means something for headers. Off in unity builds only.
    target_compile_options(${target} PRIVATE
      $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:$<TARGET_PROPERTY:UNITY_BUILD>>>:-Wno-subobject-linkage>)
  endif()
  if(GIDPOLICY_SANITIZE AND NOT ARG_NO_SANITIZE)
    gidpolicy_sanitize(${target})
  endif()
endfunction()

# gidpolicy_sanitize(<target>): ASan + UBSan, abort on the first report.
function(gidpolicy_sanitize target)
  set(_flags -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_compile_options(${target} PRIVATE ${_flags})
  target_link_options(${target} PRIVATE ${_flags})
endfunction()

# gidpolicy_fuzz_hooks(<target>): libFuzzer's coverage hooks (-fsanitize=fuzzer-no-link), with
# ASan + UBSan where the tree does not already add them. For the libraries the fuzz targets
# exercise (the core and the C API), in trees with GIDPOLICY_BUILD_FUZZ. The hooks are how the
# fuzzer finds new paths inside the library. In the `asan` tree the test programs link the same
# hooked objects: the sanitizer runtime defines the hooks' callbacks (as no-ops outside a
# fuzzer), and the tree compiles the core once instead of once more for the fuzzers.
function(gidpolicy_fuzz_hooks target)
  set(_flags -fsanitize=fuzzer-no-link)
  if(NOT GIDPOLICY_SANITIZE)
    list(APPEND _flags -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  endif()
  target_compile_options(${target} PRIVATE ${_flags})
endfunction()

# gidpolicy_test_options(<target>): options for test programs (warnings, sanitizers; not installed).
function(gidpolicy_test_options target)
  gidpolicy_target_options(${target})
endfunction()

# gidpolicy_source_copy(<name> <STATIC|OBJECT> <target>...): a library compiled from the C++
# sources of <target>s, with their include directories and definitions, but flags of its own.
# Sanitizer and fuzz builds need one for the drop-in fake libibverbs and librdmacm: the core
# and the fake model uninstrumented. The copy gets gidpolicy's warnings,
# never the sanitizer flags of gidpolicy_target_options: the caller adds what it needs.
function(gidpolicy_source_copy name type)
  set(_sources)
  set(_includes)
  set(_definitions)
  foreach(_target IN LISTS ARGN)
    get_target_property(_dir ${_target} SOURCE_DIR)
    get_target_property(_target_sources ${_target} SOURCES)
    foreach(_src IN LISTS _target_sources)
      if(NOT _src MATCHES "\\.(cpp|cc|cxx)$")
        continue()
      endif()
      if(NOT IS_ABSOLUTE "${_src}")
        set(_src "${_dir}/${_src}")
      endif()
      list(APPEND _sources "${_src}")
    endforeach()
    list(APPEND _includes "$<TARGET_PROPERTY:${_target},INCLUDE_DIRECTORIES>" "${_dir}")
    list(APPEND _definitions "$<TARGET_PROPERTY:${_target},COMPILE_DEFINITIONS>")
  endforeach()
  add_library(${name} ${type} ${_sources})
  target_compile_features(${name} PUBLIC cxx_std_20)
  target_include_directories(${name} PUBLIC ${_includes})
  target_compile_definitions(${name} PUBLIC ${_definitions})
  target_link_libraries(${name} PUBLIC Boost::headers nlohmann_json::nlohmann_json ${CMAKE_DL_LIBS})
  gidpolicy_target_options(${name} NO_SANITIZE)
endfunction()
