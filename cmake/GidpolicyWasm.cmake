# The browser build (the `wasm` preset, docs/web.md): Debian's emscripten compiles the portable
# core and the CLI's table subcommands to WebAssembly for the page web/gidpolicy.html.
#
# Emscripten's toolchain file confines find_package() to its own sysroot, which holds none of the
# header-only libraries gidpolicy uses; and adding the host's /usr/include as an include directory
# (what nlohmann_json's CMake package does) puts glibc's headers in front of emscripten's musl,
# which breaks the build. So each library's own directory, and nothing else of /usr/include, is
# linked into one staging directory that the targets below name.
set(GIDPOLICY_WASM_HOST_INCLUDE "/usr/include" CACHE PATH
    "Where the host's header-only libraries are (Boost, nlohmann-json, fmt, CLI11, rdma-core's verbs headers)")
set(_gidpolicy_wasm_inc "${PROJECT_BINARY_DIR}/wasm-include")
file(MAKE_DIRECTORY "${_gidpolicy_wasm_inc}")
# Directory, a header in it, and the Debian package that ships it.
set(_gidpolicy_wasm_deps
    "boost|boost/version.hpp|libboost-dev"
    "nlohmann|nlohmann/json.hpp|nlohmann-json3-dev"
    "fmt|fmt/core.h|libfmt-dev"
    "CLI|CLI/CLI.hpp|libcli11-dev"
    "infiniband|infiniband/verbs.h|libibverbs-dev"
    "rdma|rdma/ib_user_verbs.h|libibverbs-dev")
foreach(_dep IN LISTS _gidpolicy_wasm_deps)
  string(REPLACE "|" ";" _dep "${_dep}")
  list(GET _dep 0 _dir)
  list(GET _dep 1 _header)
  list(GET _dep 2 _package)
  if(NOT EXISTS "${GIDPOLICY_WASM_HOST_INCLUDE}/${_header}")
    message(FATAL_ERROR "gidpolicy (wasm): ${GIDPOLICY_WASM_HOST_INCLUDE}/${_header} not found: "
                        "install ${_package} (scripts/deps.sh)")
  endif()
  if(NOT EXISTS "${_gidpolicy_wasm_inc}/${_dir}")
    file(CREATE_LINK "${GIDPOLICY_WASM_HOST_INCLUDE}/${_dir}" "${_gidpolicy_wasm_inc}/${_dir}" SYMBOLIC)
  endif()
endforeach()

# rdma-core's verbs headers include <linux/types.h>, the kernel's fixed-width names, which a
# non-Linux target does not have: cmake/wasm/include supplies those names (and nothing else).
add_library(gidpolicy_wasm_headers INTERFACE)
target_include_directories(gidpolicy_wasm_headers SYSTEM INTERFACE "${_gidpolicy_wasm_inc}"
                                                                    "${PROJECT_SOURCE_DIR}/cmake/wasm/include")
add_library(Boost::headers ALIAS gidpolicy_wasm_headers)
add_library(nlohmann_json::nlohmann_json ALIAS gidpolicy_wasm_headers)
