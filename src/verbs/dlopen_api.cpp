#include <gidpolicy/verbs/dlopen_api.hpp>

#include <dlfcn.h>

#include <cstring>

namespace gidpolicy::verbs {
namespace {

/// dlsym into a typed function pointer. The object-to-function pointer conversion is
/// conditionally supported in C++ and is what POSIX guarantees for dlsym; memcpy keeps it free
/// of casts between unrelated pointer types.
template <class Fn>
void load(void* handle, const char* symbol, Fn& out) {
  void* p = dlsym(handle, symbol);
  static_assert(sizeof(Fn) == sizeof(void*));
  if (p) std::memcpy(&out, &p, sizeof out);
}

}  // namespace

std::string_view default_verbs_library() noexcept {
#if defined(__APPLE__)
  return "librdma.dylib";
#else
  return "libibverbs.so.1";
#endif
}

DlopenApi::DlopenApi() : DlopenApi(std::string(default_verbs_library())) {}

DlopenApi::DlopenApi(std::string library)
    : FunctionTableApi(VerbsFunctions{}, Options{"dlopen(" + library + ")", true}),
      library_(std::move(library)) {
  dlerror();  // clear a stale message
  handle_ = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = dlerror();
    load_error_ = Error(errc::library_unavailable,
                        "dlopen(" + library_ + "): " + (why ? why : "unknown error") +
                            " (install libibverbs1 / rdma-core, or run where RDMA is present)");
    set_unavailable(load_error_);
    return;
  }
  VerbsFunctions f;
  load(handle_, "ibv_get_device_list", f.get_device_list);
  load(handle_, "ibv_free_device_list", f.free_device_list);
  load(handle_, "ibv_get_device_name", f.get_device_name);
  load(handle_, "ibv_open_device", f.open_device);
  load(handle_, "ibv_close_device", f.close_device);
  // The IBVERBS_1.1 compat entry point behind the ibv_query_port macro; the backend zeroes the
  // whole ibv_port_attr before calling it, as the inline does.
  load(handle_, "ibv_query_port", f.query_port);
  load(handle_, "ibv_query_gid", f.query_gid);
  load(handle_, "_ibv_query_gid_ex", f.query_gid_ex_sized);        // rdma-core >= v32
  load(handle_, "_ibv_query_gid_table", f.query_gid_table_sized);  // rdma-core >= v32
  load(handle_, "ibv_alloc_pd", f.alloc_pd);
  load(handle_, "ibv_dealloc_pd", f.dealloc_pd);
  load(handle_, "ibv_create_cq", f.create_cq);
  load(handle_, "ibv_destroy_cq", f.destroy_cq);
  load(handle_, "ibv_create_qp", f.create_qp);
  load(handle_, "ibv_modify_qp", f.modify_qp);
  load(handle_, "ibv_query_qp", f.query_qp);
  load(handle_, "ibv_destroy_qp", f.destroy_qp);
  load(handle_, "ibv_reg_mr", f.reg_mr);  // the exported function behind the macro
  load(handle_, "ibv_dereg_mr", f.dereg_mr);
  load(handle_, "ibv_get_async_event", f.get_async_event);
  load(handle_, "ibv_ack_async_event", f.ack_async_event);
  const auto missing = f.missing_for_snapshot();
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "ibv_" : ", ibv_") + m;
    load_error_ = Error(errc::symbol_missing, library_ + " lacks " + list);
    set_unavailable(load_error_);
    return;
  }
  set_functions(f);
}

DlopenApi::~DlopenApi() {
  // Release contexts while the library's code is still mapped.
  close_all();
  if (handle_) dlclose(handle_);
}

}  // namespace gidpolicy::verbs
