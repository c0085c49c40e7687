# Install rules and package files: headers, libraries, the CLI, gidpolicyConfig.cmake (+ version
# file, namespaced targets gidpolicy::core / ::host / ::gidpolicy / ::verbs / ::c / ::c_verbs)
# and pkg-config files (gidpolicy-core, gidpolicy-host, gidpolicy, gidpolicy-verbs, gidpolicy-c,
# gidpolicy-c-verbs).
#
# Included by the top-level CMakeLists.txt after every target is defined, so `if(TARGET ...)`
# sees the libraries other directories add (src/libibverbs, src/capi, tools/gidpolicy).
#
# What consumers get, and what they must not get:
#  * The core and host libraries are static unless BUILD_SHARED_LIBS is ON (gidpolicy::gidpolicy
#    is an interface target naming both). Their nlohmann_json use is
#    PRIVATE and wrapped in BUILD_INTERFACE (header-only: nothing to link), so neither the
#    export set nor the .pc mention it. Boost (Boost.Outcome in the public headers) is a
#    public dependency: the Config calls find_dependency(Boost).
#  * No compile or link options: warnings, -Werror and sanitizer flags are PRIVATE on
#    gidpolicy's own targets (cmake/GidpolicyTargetOptions.cmake). The only usage requirement
#    beyond include dirs and libraries is the compile feature cxx_std_20, which asks for
#    C++20 without overriding a consumer's newer standard. tests/cmake asserts all of this.

include(CMakePackageConfigHelpers)

set(GIDPOLICY_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/gidpolicy"
    CACHE STRING "Where gidpolicyConfig.cmake is installed (relative to the prefix)")
set(GIDPOLICY_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where the gidpolicy*.pc files are installed (relative to the prefix)")
mark_as_advanced(GIDPOLICY_INSTALL_CMAKEDIR GIDPOLICY_INSTALL_PKGCONFIGDIR)

# --- libraries ---------------------------------------------------------------------------------
# gidpolicy_c_verbs is the C API's ibv_context* entry point (links libibverbs); gidpolicy_c is
# the rest of the C API, usable by programs that dlopen libibverbs (ds4).
set(_gidpolicy_export_targets gidpolicy_core gidpolicy_host gidpolicy)
set(GIDPOLICY_EXPORTED_COMPONENTS "")
foreach(_t IN ITEMS gidpolicy_verbs gidpolicy_c gidpolicy_c_verbs)
  if(TARGET ${_t})
    list(APPEND _gidpolicy_export_targets ${_t})
    get_target_property(_export_name ${_t} EXPORT_NAME)
    list(APPEND GIDPOLICY_EXPORTED_COMPONENTS ${_export_name})
  endif()
endforeach()

install(TARGETS ${_gidpolicy_export_targets}
  EXPORT gidpolicyTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT gidpolicy_development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT gidpolicy_runtime
          NAMELINK_COMPONENT gidpolicy_development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT gidpolicy_runtime)
# (No INCLUDES DESTINATION: the core's INSTALL_INTERFACE include dir reaches every target
# through its link to gidpolicy::core.)

# Public headers: the include/gidpolicy tree (C++ headers and the C header gidpolicy.h), file by
# file so that directories without headers yet are not installed empty.
file(GLOB_RECURSE _gidpolicy_headers CONFIGURE_DEPENDS RELATIVE "${PROJECT_SOURCE_DIR}/include"
     "${PROJECT_SOURCE_DIR}/include/gidpolicy/*.hpp" "${PROJECT_SOURCE_DIR}/include/gidpolicy/*.h")
foreach(_h IN LISTS _gidpolicy_headers)
  get_filename_component(_dir "${_h}" DIRECTORY)
  install(FILES "${PROJECT_SOURCE_DIR}/include/${_h}"
    DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/${_dir}" COMPONENT gidpolicy_development)
endforeach()

# --- the command-line tool ---------------------------------------------------------------------
foreach(_t IN ITEMS gidpolicy_cli gidpolicy_tool)
  if(TARGET ${_t})
    get_target_property(_type ${_t} TYPE)
    if(_type STREQUAL "EXECUTABLE")
      if(BUILD_SHARED_LIBS)
        # A shared core next to the tool: find it relative to the installed binary.
        file(RELATIVE_PATH _rel "/${CMAKE_INSTALL_BINDIR}" "/${CMAKE_INSTALL_LIBDIR}")
        set_property(TARGET ${_t} APPEND PROPERTY INSTALL_RPATH "$ORIGIN/${_rel}")
      endif()
      install(TARGETS ${_t} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT gidpolicy_runtime)
    endif()
  endif()
endforeach()

# --- the fake libibverbs and librdmacm --------------------------------------------------------
# In GIDPOLICY_INSTALL_FAKEDIR (<libdir>/gidpolicy/fake), which the dynamic linker never
# searches: only `gidpolicy fake-host` puts it on a command's LD_LIBRARY_PATH, so installing the
# fakes never shadows the real libraries. Only the SONAME files: nothing links against a fake.
foreach(_t IN ITEMS gidpolicy_fake_libibverbs gidpolicy_fake_librdmacm)
  if(TARGET ${_t})
    install(TARGETS ${_t} LIBRARY DESTINATION ${GIDPOLICY_INSTALL_FAKEDIR} COMPONENT gidpolicy_fake
            NAMELINK_SKIP)
  endif()
endforeach()

# --- CMake package -----------------------------------------------------------------------------
install(EXPORT gidpolicyTargets
  NAMESPACE gidpolicy::
  FILE gidpolicyTargets.cmake
  DESTINATION ${GIDPOLICY_INSTALL_CMAKEDIR}
  COMPONENT gidpolicy_development)

# What the Config needs to recreate the imported targets the exported ones name.
set(GIDPOLICY_CONFIG_NEEDS_IBVERBS OFF)
if(TARGET gidpolicy_verbs OR TARGET gidpolicy_c_verbs)
  set(GIDPOLICY_CONFIG_NEEDS_IBVERBS ON)
endif()
# The C++ runtime a C-only project needs to link the static C API (the libraries CMake adds
# for C++ and not for C: stdc++ and m with GCC and Clang on Linux).
set(GIDPOLICY_CXX_RUNTIME_LIBS ${CMAKE_CXX_IMPLICIT_LINK_LIBRARIES})
if(CMAKE_C_IMPLICIT_LINK_LIBRARIES)
  list(REMOVE_ITEM GIDPOLICY_CXX_RUNTIME_LIBS ${CMAKE_C_IMPLICIT_LINK_LIBRARIES})
endif()
get_target_property(_core_type gidpolicy_core TYPE)
set(GIDPOLICY_STATIC_LIBS OFF)
if(_core_type STREQUAL "STATIC_LIBRARY")
  set(GIDPOLICY_STATIC_LIBS ON)
endif()

configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/gidpolicyConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/gidpolicyConfig.cmake"
  INSTALL_DESTINATION ${GIDPOLICY_INSTALL_CMAKEDIR})
# 0.x: a minor release may break the API, so only the same major.minor is compatible.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/gidpolicyConfigVersion.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/gidpolicyConfig.cmake"
              "${PROJECT_BINARY_DIR}/gidpolicyConfigVersion.cmake"
  DESTINATION ${GIDPOLICY_INSTALL_CMAKEDIR}
  COMPONENT gidpolicy_development)

# --- pkg-config --------------------------------------------------------------------------------
# The .pc files locate the prefix relative to themselves (${pcfiledir}), so an install made with
# `cmake --install --prefix DIR` or DESTDIR is correct wherever it lands.
function(_gidpolicy_pc_relpath out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "\${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
if(IS_ABSOLUTE "${GIDPOLICY_INSTALL_PKGCONFIGDIR}")
  set(GIDPOLICY_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _up "/${GIDPOLICY_INSTALL_PKGCONFIGDIR}" "/")
  string(REGEX REPLACE "/$" "" _up "${_up}")
  set(GIDPOLICY_PC_PREFIX "\${pcfiledir}/${_up}")
endif()
_gidpolicy_pc_relpath(GIDPOLICY_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
_gidpolicy_pc_relpath(GIDPOLICY_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")

# A static library's own dependencies must appear in Libs (pkg-config --libs without --static
# ignores Libs.private); a shared one carries them itself. The core has none of its own (no
# dlopen: that is the host library's VerbsApi backend).
set(_host_deps "")
foreach(_lib IN LISTS CMAKE_DL_LIBS)
  string(APPEND _host_deps " -l${_lib}")
endforeach()
set(_cxx_runtime "")
foreach(_lib IN LISTS GIDPOLICY_CXX_RUNTIME_LIBS)
  if(_lib MATCHES "^-")
    string(APPEND _cxx_runtime " ${_lib}")
  else()
    string(APPEND _cxx_runtime " -l${_lib}")
  endif()
endforeach()
if(GIDPOLICY_STATIC_LIBS)
  set(GIDPOLICY_PC_HOST_LIBS "${_host_deps}")
  set(GIDPOLICY_PC_HOST_LIBS_PRIVATE "")
  # Linking a C++ archive with the C driver (`cc`) needs the C++ runtime spelled out.
  set(GIDPOLICY_PC_C_LIBS "${_host_deps}${_cxx_runtime}")
  set(GIDPOLICY_PC_C_LIBS_PRIVATE "")
else()
  set(GIDPOLICY_PC_HOST_LIBS "")
  set(GIDPOLICY_PC_HOST_LIBS_PRIVATE "${_host_deps}")
  set(GIDPOLICY_PC_C_LIBS "")
  set(GIDPOLICY_PC_C_LIBS_PRIVATE "${_host_deps}${_cxx_runtime}")
endif()

# One .pc per link target, each requiring the one below it:
#   gidpolicy-core   the pure core (gidpolicy::core). Its headers use Boost (found in the default
#                    include path on every distribution that ships it; Boost has no .pc) and
#                    rtr.hpp includes <infiniband/verbs.h> for ibv_qp_attr, so the headers need
#                    libibverbs' -I (Requires.private), never its library.
#   gidpolicy-host   what asks the host (gidpolicy::host), on the core.
#   gidpolicy        everything (gidpolicy::gidpolicy): requires gidpolicy-host.
# The C++20 requirement is documented, not forced: a consumer passes -std=c++20 or newer.
set(GIDPOLICY_PC_NAME gidpolicy)
set(_pc_files gidpolicy-core gidpolicy-host gidpolicy)
if(TARGET gidpolicy_verbs)
  list(APPEND _pc_files gidpolicy-verbs)
endif()
if(TARGET gidpolicy_c)
  list(APPEND _pc_files gidpolicy-c)
endif()
if(TARGET gidpolicy_c_verbs)
  list(APPEND _pc_files gidpolicy-c-verbs)
endif()
# Library names come from the targets (OUTPUT_NAME, a DEBUG_POSTFIX...) at generate time; each
# is used only by the .pc of a target that exists.
set(GIDPOLICY_PC_CORE_LIBNAME "$<TARGET_FILE_BASE_NAME:gidpolicy_core>")
set(GIDPOLICY_PC_HOST_LIBNAME "$<TARGET_FILE_BASE_NAME:gidpolicy_host>")
set(GIDPOLICY_PC_VERBS_LIBNAME "$<TARGET_FILE_BASE_NAME:gidpolicy_verbs>")
set(GIDPOLICY_PC_C_LIBNAME "$<TARGET_FILE_BASE_NAME:gidpolicy_c>")
set(GIDPOLICY_PC_C_VERBS_LIBNAME "$<TARGET_FILE_BASE_NAME:gidpolicy_c_verbs>")
foreach(_pc IN LISTS _pc_files)
  configure_file("${CMAKE_CURRENT_LIST_DIR}/${_pc}.pc.in" "${PROJECT_BINARY_DIR}/pkgconfig/${_pc}.pc.gen" @ONLY)
  file(GENERATE OUTPUT "${PROJECT_BINARY_DIR}/pkgconfig/${_pc}.pc"
                INPUT "${PROJECT_BINARY_DIR}/pkgconfig/${_pc}.pc.gen")
  install(FILES "${PROJECT_BINARY_DIR}/pkgconfig/${_pc}.pc"
    DESTINATION ${GIDPOLICY_INSTALL_PKGCONFIGDIR} COMPONENT gidpolicy_development)
endforeach()
