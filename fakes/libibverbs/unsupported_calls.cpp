// The verbs entry points the fake does not model. Each one exists so that programs and the
// libraries they load (librdmacm, libmlx5, libefa under perftest) find every symbol they import
// and start; when called, it fails the way rdma-core fails for a provider without the feature
// (its dummy provider ops: NULL with errno EOPNOTSUPP, or EOPNOTSUPP returned) and writes one
// control-log record naming the call, so a run that takes an unmodelled path says so instead of
// producing a wrong answer.
//
// The set is the `symbols.txt` rows whose third column is not `modelled`; that column also
// states each stub's return convention, and fakes/libibverbs/tests checks both (the set matches this
// file exactly; each stub returns what the column says, sets errno, and logs its name).
//
// Signatures and the C ABI. Entry points that verbs.h declares are defined with its exact
// prototypes. rdma-core's provider interface (IBVERBS_PRIVATE_*: ibv_cmd_*, verbs_*,
// execute_ioctl, ...) is declared only in its private driver.h, whose structures the fake never
// sees; those stubs are defined with an empty parameter list and only their return type right.
// That is sound on the platforms rdma-core runs on (x86-64 SysV, AArch64 AAPCS64, and the
// other Linux psABIs): arguments travel in registers or in a caller-allocated, caller-popped
// stack area, so a callee that reads none of them cannot disturb the caller, and the variadic
// ones (__verbs_log, ibv_read_ibdev_sysfs_file) never run va_start. What must match is the
// return: an int in eax/w0, a pointer in rax/x0, nothing for void — hence one macro per
// convention below. No function here returns a structure by value (that would change the
// calling sequence), and none is ever called through a provider: the fake loads none.
#include "fakelib.hpp"

#include <cerrno>

using namespace gidpolicy::fakelib;

namespace {

/// Write the record "call <name> is not modelled" and leave errno at EOPNOTSUPP.
void not_modelled(const char* name, long returned) noexcept {
  try {
    Library& lib = Library::get();
    if (lib.log.enabled()) {
      auto r = lib.record(name, nullptr);
      r["not_modelled"] = true;
      r["result"] = returned;
      r["error"] = errno_name_for(nullptr, EOPNOTSUPP);
      lib.log.write(r);
    }
  } catch (...) {
  }
  errno = EOPNOTSUPP;
}

}  // namespace

// One macro per return convention (the third column of symbols.txt).
#define NOT_MODELLED_NULL(ret, name, params) \
  ret name params {                          \
    not_modelled(#name, 0);                  \
    return nullptr;                          \
  }
#define NOT_MODELLED_ERRNO(ret, name, params) \
  ret name params {                           \
    not_modelled(#name, EOPNOTSUPP);          \
    return EOPNOTSUPP;                        \
  }
#define NOT_MODELLED_MINUS1(ret, name, params) \
  ret name params {                            \
    not_modelled(#name, -1);                   \
    return -1;                                 \
  }
#define NOT_MODELLED_NEGERRNO(ret, name, params) \
  ret name params {                              \
    not_modelled(#name, -EOPNOTSUPP);            \
    return -EOPNOTSUPP;                          \
  }
#define NOT_MODELLED_VOID(name, params) \
  void name params { not_modelled(#name, 0); }
#define NOT_MODELLED_ZERO(ret, name, params) \
  ret name params {                          \
    not_modelled(#name, 0);                  \
    return 0;                                \
  }

extern "C" {

// ---- public verbs (verbs.h prototypes) -------------------------------------------------------
// Multicast: the fake has no multicast groups.
NOT_MODELLED_ERRNO(int, ibv_attach_mcast, (ibv_qp*, const ibv_gid*, uint16_t))
NOT_MODELLED_ERRNO(int, ibv_detach_mcast, (ibv_qp*, const ibv_gid*, uint16_t))
// Resizing a CQ and re-registering an MR: rdma-core's own convention for rereg is
// IBV_REREG_MR_ERR_INPUT (-1) with errno.
NOT_MODELLED_ERRNO(int, ibv_resize_cq, (ibv_cq*, int))
NOT_MODELLED_MINUS1(int, ibv_rereg_mr, (ibv_mr*, int, ibv_pd*, void*, size_t, int))
// Neighbour (ARP/ND) resolution of a RoCE peer's MAC: rdma-core returns a negative errno.
NOT_MODELLED_NEGERRNO(int, ibv_resolve_eth_l2_from_gid, (ibv_context*, ibv_ah_attr*, uint8_t*, uint16_t*))
// Enhanced connection establishment: perftest treats EOPNOTSUPP as "no ECE" and goes on.
NOT_MODELLED_ERRNO(int, ibv_query_ece, (ibv_qp*, ibv_ece*))
NOT_MODELLED_ERRNO(int, ibv_set_ece, (ibv_qp*, ibv_ece*))
// Sharing objects between processes through a command fd, device memory, dma-buf MRs.
NOT_MODELLED_NULL(ibv_context*, ibv_import_device, (int))
NOT_MODELLED_NULL(ibv_mr*, ibv_import_mr, (ibv_pd*, uint32_t))
NOT_MODELLED_NULL(ibv_pd*, ibv_import_pd, (ibv_context*, uint32_t))
NOT_MODELLED_NULL(ibv_dm*, ibv_import_dm, (ibv_context*, uint32_t))
NOT_MODELLED_VOID(ibv_unimport_mr, (ibv_mr*))
NOT_MODELLED_VOID(ibv_unimport_pd, (ibv_pd*))
NOT_MODELLED_VOID(ibv_unimport_dm, (ibv_dm*))
NOT_MODELLED_NULL(ibv_mr*, ibv_reg_dmabuf_mr, (ibv_pd*, uint64_t, size_t, uint64_t, int, int))
// A provider without the query answers 0, "no ordering guarantee beyond the verbs spec".
NOT_MODELLED_ZERO(int, ibv_query_qp_data_in_order, (ibv_qp*, enum ibv_wr_opcode, uint32_t))

#pragma GCC visibility push(default)  // not declared by verbs.h: exported explicitly

// Marshalling of kernel uverbs / rdma_cm replies (librdmacm calls them on what the kernel
// answered; the fake has no kernel device, so no such reply exists). Declared in rdma-core's
// private marshall.h: empty parameter lists, see above.
NOT_MODELLED_VOID(ibv_copy_ah_attr_from_kern, ())
NOT_MODELLED_VOID(ibv_copy_qp_attr_from_kern, ())
NOT_MODELLED_VOID(ibv_copy_path_rec_from_kern, ())
NOT_MODELLED_VOID(ibv_copy_path_rec_to_kern, ())

// ---- rdma-core's provider interface (IBVERBS_PRIVATE_*: empty parameter lists, see above) ----
// Used only by providers (libmlx5, libefa ...) on devices they drive; the fake hands them none.
bool verbs_allow_disassociate_destroy = false;

// Summing linked command buffers: with no provider ever building one there is nothing to add.
// NOLINTNEXTLINE(bugprone-reserved-identifier): the name libibverbs.so.1 exports
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void*) {
  not_modelled("__ioctl_final_num_attrs", static_cast<long>(num_attrs));
  return num_attrs;
}

NOT_MODELLED_NULL(void*, _verbs_init_and_alloc_context, ())
NOT_MODELLED_NULL(ibv_context*, verbs_open_device, ())
NOT_MODELLED_ERRNO(int, execute_ioctl, ())
NOT_MODELLED_MINUS1(int, ibv_read_ibdev_sysfs_file, ())
NOT_MODELLED_VOID(__verbs_log, ())
NOT_MODELLED_VOID(verbs_init_cq, ())
NOT_MODELLED_VOID(verbs_set_ops, ())
NOT_MODELLED_VOID(verbs_uninit_context, ())

// ibv_cmd_poll_cq keeps poll's convention (-1 and errno); every other ibv_cmd_* returns an errno.
NOT_MODELLED_MINUS1(int, ibv_cmd_poll_cq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_advise_mr, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_alloc_dm, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_alloc_mw, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_alloc_pd, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_attach_mcast, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_close_xrcd, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_ah, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_counters, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_cq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_cq_ex, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_flow, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_flow_action_esp, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_qp, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_qp_ex, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_qp_ex2, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_rwq_ind_table, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_srq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_srq_ex, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_create_wq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_dealloc_mw, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_dealloc_pd, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_dereg_mr, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_destroy_ah, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_destroy_counters, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_destroy_cq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_destroy_flow, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_destroy_flow_action, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_destroy_qp, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_destroy_rwq_ind_table, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_destroy_srq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_destroy_wq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_detach_mcast, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_free_dm, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_get_context, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_modify_cq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_modify_flow_action_esp, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_modify_qp, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_modify_qp_ex, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_modify_srq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_modify_wq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_open_qp, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_open_xrcd, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_post_recv, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_post_send, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_post_srq_recv, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_query_context, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_query_device_any, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_query_mr, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_query_port, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_query_qp, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_query_srq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_read_counters, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_reg_dm_mr, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_reg_dmabuf_mr, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_reg_mr, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_req_notify_cq, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_rereg_mr, ())
NOT_MODELLED_ERRNO(int, ibv_cmd_resize_cq, ())

#pragma GCC visibility pop

}  // extern "C"
