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

# gidpolicy_test_options(<target>): options for test programs (warnings, sanitizers; not installed).
function(gidpolicy_test_options target)
  gidpolicy_target_options(${target})
endfunction()
