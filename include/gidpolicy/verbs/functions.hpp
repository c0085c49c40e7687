// VerbsFunctions: a table of libibverbs entry points as plain C function pointers.
//
// Why: JACCL (MLX) and ds4 never link libibverbs; they dlopen it and keep their own struct of
// function pointers (JACCL's IBVWrapper, ds4's ds4_tp_verbs_api). gidpolicy's FunctionTableApi
// runs on such a struct, so a fork adopts gidpolicy without changing how it loads verbs, and the
// dlopen and linked backends are the same code with the table filled differently.
//
// Hardware/library gotchas encoded here:
//  * ibv_query_gid_ex and ibv_query_gid_table are static inlines over the exported
//    _ibv_query_gid_ex / _ibv_query_gid_table, which take one more argument (the entry size).
//    A loader that dlsym()s gets the 6/5-argument form; a table that wraps the inline has the
//    5/4-argument form. Both slots exist; the backend uses whichever is set.
//  * ibv_query_port is a macro over an inline; the exported symbol (IBVERBS_1.1) takes rdma-core's
//    private _compat_ibv_port_attr, a prefix of ibv_port_attr. Pointers loaded with dlsym are
//    stored under the public signature and the backend zeroes the struct first, as the inline does.
//
// Example (a JACCL-style wrapper):
//   // wrapper: JACCL's IBVWrapper, a struct of pointers named after the verbs
//   // (get_device_list, ..., query_gid); missing members are left null
//   gidpolicy::verbs::FunctionTableApi api(gidpolicy::verbs::functions_from(wrapper));
#pragma once

#include <infiniband/verbs.h>

#include <sys/types.h>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gidpolicy::verbs {

/// libibverbs entry points, each with the signature of the libibverbs function of that name.
/// A null pointer means "not available": required ones make calls fail with errc::symbol_missing,
/// optional ones make the backend fall back (see FunctionTableApi).
struct VerbsFunctions {
  // Required for anything at all.
  ibv_device** (*get_device_list)(int* num_devices) = nullptr;
  void (*free_device_list)(ibv_device** list) = nullptr;
  ibv_context* (*open_device)(ibv_device* device) = nullptr;
  int (*close_device)(ibv_context* context) = nullptr;
  /// Optional: without it the name is read from ibv_device::name.
  const char* (*get_device_name)(ibv_device* device) = nullptr;
  /// Required for snapshots. The exported ibv_query_port or a wrapper of the macro.
  int (*query_port)(ibv_context* context, std::uint8_t port_num, ibv_port_attr* attr) = nullptr;

  // GID reads: at least one of them is required for snapshots.
  int (*query_gid)(ibv_context* context, std::uint8_t port_num, int index, ibv_gid* gid) = nullptr;
  /// The inline ibv_query_gid_ex form.
  int (*query_gid_ex)(ibv_context* context, std::uint32_t port_num, std::uint32_t gid_index,
                      ibv_gid_entry* entry, std::uint32_t flags) = nullptr;
  /// The exported _ibv_query_gid_ex form (what dlsym finds).
  int (*query_gid_ex_sized)(ibv_context* context, std::uint32_t port_num, std::uint32_t gid_index,
                            ibv_gid_entry* entry, std::uint32_t flags, std::size_t entry_size) = nullptr;
  /// The inline ibv_query_gid_table form.
  ssize_t (*query_gid_table)(ibv_context* context, ibv_gid_entry* entries, std::size_t max_entries,
                             std::uint32_t flags) = nullptr;
  /// The exported _ibv_query_gid_table form (what dlsym finds).
  ssize_t (*query_gid_table_sized)(ibv_context* context, ibv_gid_entry* entries, std::size_t max_entries,
                                   std::uint32_t flags, std::size_t entry_size) = nullptr;

  // Queue pairs (optional: without them QP calls fail with errc::not_supported).
  ibv_pd* (*alloc_pd)(ibv_context* context) = nullptr;
  int (*dealloc_pd)(ibv_pd* pd) = nullptr;
  ibv_cq* (*create_cq)(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                       int comp_vector) = nullptr;
  int (*destroy_cq)(ibv_cq* cq) = nullptr;
  ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr) = nullptr;
  int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask) = nullptr;
  int (*query_qp)(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init_attr) = nullptr;
  int (*destroy_qp)(ibv_qp* qp) = nullptr;

  // Memory registration (optional: without them the data path fails with errc::not_supported).
  // The exported ibv_reg_mr (IBVERBS_1.1); verbs.h's ibv_reg_mr is a macro over an inline that
  // calls it when the access flags are a constant without IBV_ACCESS_OPTIONAL_RANGE. Posting and
  // polling need no entry here: ibv_post_send, ibv_post_recv and ibv_poll_cq are inlines over
  // the context's ops, which every provider fills.
  ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, std::size_t length, int access) = nullptr;
  int (*dereg_mr)(ibv_mr* mr) = nullptr;

  // Asynchronous events (optional: without them GID watching fails with errc::not_supported).
  int (*get_async_event)(ibv_context* context, ibv_async_event* event) = nullptr;
  void (*ack_async_event)(ibv_async_event* event) = nullptr;

  /// Names (as above) of the required members that are null: empty when the table is usable
  /// for snapshots. QP members are reported by missing_for_qps().
  [[nodiscard]] std::vector<std::string> missing_for_snapshot() const;
  /// Names of the null members create/modify/query/destroy_qp need.
  [[nodiscard]] std::vector<std::string> missing_for_qps() const;
};

namespace detail {
// Copy `src.<name>` into `dst` when T has such a member and it converts to dst's type.
// `name` is a member name (it follows `src.`), so it cannot be parenthesised; `dst` is.
#define GIDPOLICY_DETAIL_TAKE(dst, name)          \
  if constexpr (requires { (dst) = src.name; }) { \
    if (!(dst)) (dst) = src.name;                 \
  }
}  // namespace detail

/// Build a VerbsFunctions from any struct whose members are function pointers named like
/// libibverbs functions, without the prefix (JACCL's IBVWrapper: `get_device_list`,
/// `query_gid`...) or with it (`ibv_get_device_list`...; never `ibv_query_port`, a macro).
/// The GID-entry calls are looked up as `query_gid_ex` / `query_gid_table` (either arity) and
/// `query_gid_ex_sized` / `query_gid_table_sized`. A member whose signature does not match a slot
/// is skipped, never cast, so a 5-argument `query_gid_ex` fills the inline slot and a
/// 6-argument one (a dlsym of _ibv_query_gid_ex) the sized slot.
/// Example: `FunctionTableApi api(functions_from(ds4_api));`
template <class T>
VerbsFunctions functions_from(const T& src) {
  VerbsFunctions f;
  GIDPOLICY_DETAIL_TAKE(f.get_device_list, get_device_list)
  GIDPOLICY_DETAIL_TAKE(f.get_device_list, ibv_get_device_list)
  GIDPOLICY_DETAIL_TAKE(f.free_device_list, free_device_list)
  GIDPOLICY_DETAIL_TAKE(f.free_device_list, ibv_free_device_list)
  GIDPOLICY_DETAIL_TAKE(f.open_device, open_device)
  GIDPOLICY_DETAIL_TAKE(f.open_device, ibv_open_device)
  GIDPOLICY_DETAIL_TAKE(f.close_device, close_device)
  GIDPOLICY_DETAIL_TAKE(f.close_device, ibv_close_device)
  GIDPOLICY_DETAIL_TAKE(f.get_device_name, get_device_name)
  GIDPOLICY_DETAIL_TAKE(f.get_device_name, ibv_get_device_name)
  GIDPOLICY_DETAIL_TAKE(f.query_port, query_port)
  GIDPOLICY_DETAIL_TAKE(f.query_gid, query_gid)
  GIDPOLICY_DETAIL_TAKE(f.query_gid, ibv_query_gid)
  GIDPOLICY_DETAIL_TAKE(f.query_gid_ex, query_gid_ex)
  GIDPOLICY_DETAIL_TAKE(f.query_gid_ex_sized, query_gid_ex)
  GIDPOLICY_DETAIL_TAKE(f.query_gid_ex_sized, query_gid_ex_sized)
  GIDPOLICY_DETAIL_TAKE(f.query_gid_table, query_gid_table)
  GIDPOLICY_DETAIL_TAKE(f.query_gid_table_sized, query_gid_table)
  GIDPOLICY_DETAIL_TAKE(f.query_gid_table_sized, query_gid_table_sized)
  GIDPOLICY_DETAIL_TAKE(f.alloc_pd, alloc_pd)
  GIDPOLICY_DETAIL_TAKE(f.alloc_pd, ibv_alloc_pd)
  GIDPOLICY_DETAIL_TAKE(f.dealloc_pd, dealloc_pd)
  GIDPOLICY_DETAIL_TAKE(f.dealloc_pd, ibv_dealloc_pd)
  GIDPOLICY_DETAIL_TAKE(f.create_cq, create_cq)
  GIDPOLICY_DETAIL_TAKE(f.create_cq, ibv_create_cq)
  GIDPOLICY_DETAIL_TAKE(f.destroy_cq, destroy_cq)
  GIDPOLICY_DETAIL_TAKE(f.destroy_cq, ibv_destroy_cq)
  GIDPOLICY_DETAIL_TAKE(f.create_qp, create_qp)
  GIDPOLICY_DETAIL_TAKE(f.create_qp, ibv_create_qp)
  GIDPOLICY_DETAIL_TAKE(f.modify_qp, modify_qp)
  GIDPOLICY_DETAIL_TAKE(f.modify_qp, ibv_modify_qp)
  GIDPOLICY_DETAIL_TAKE(f.query_qp, query_qp)
  GIDPOLICY_DETAIL_TAKE(f.query_qp, ibv_query_qp)
  GIDPOLICY_DETAIL_TAKE(f.destroy_qp, destroy_qp)
  GIDPOLICY_DETAIL_TAKE(f.destroy_qp, ibv_destroy_qp)
  GIDPOLICY_DETAIL_TAKE(f.reg_mr, reg_mr)
  GIDPOLICY_DETAIL_TAKE(f.dereg_mr, dereg_mr)
  GIDPOLICY_DETAIL_TAKE(f.dereg_mr, ibv_dereg_mr)
  GIDPOLICY_DETAIL_TAKE(f.get_async_event, get_async_event)
  GIDPOLICY_DETAIL_TAKE(f.get_async_event, ibv_get_async_event)
  GIDPOLICY_DETAIL_TAKE(f.ack_async_event, ack_async_event)
  GIDPOLICY_DETAIL_TAKE(f.ack_async_event, ibv_ack_async_event)
  return f;
}

#undef GIDPOLICY_DETAIL_TAKE

}  // namespace gidpolicy::verbs
