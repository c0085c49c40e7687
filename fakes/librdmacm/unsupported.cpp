// What the fake does not model: multicast, ECE, extended SRQs and rsockets. Each fails as
// rdma-core fails for a device without the feature (EOPNOTSUPP) and leaves a control-log record
// naming the call, so a run that takes such a path says so.
#include "cm.hpp"

#include <rdma/rsocket.h>

#include <cstdarg>

namespace {

// Each exported stub below is this one guarded call (cm.hpp's locked_call).
int unsupported(const char* call) {
  return fakecm::locked_call(-1, [&](fakecm::Library& l, std::unique_lock<std::mutex>&) -> int {
    auto r = fakecm::record(call, nullptr);
    r["not_modelled"] = true;
    r["error"] = "EOPNOTSUPP";
    fakecm::log_record(l, std::move(r));
    errno = EOPNOTSUPP;
    return -1;
  });
}

}  // namespace

#define FAKECM_API extern "C" __attribute__((visibility("default")))

FAKECM_API int rdma_join_multicast(rdma_cm_id*, sockaddr*, void*) {
  return unsupported("rdma_join_multicast");
}
FAKECM_API int rdma_leave_multicast(rdma_cm_id*, sockaddr*) { return unsupported("rdma_leave_multicast"); }
FAKECM_API int rdma_join_multicast_ex(rdma_cm_id*, rdma_cm_join_mc_attr_ex*, void*) {
  return unsupported("rdma_join_multicast_ex");
}
FAKECM_API int rdma_set_local_ece(rdma_cm_id*, ibv_ece*) { return unsupported("rdma_set_local_ece"); }
FAKECM_API int rdma_get_remote_ece(rdma_cm_id*, ibv_ece*) { return unsupported("rdma_get_remote_ece"); }
FAKECM_API int rdma_reject_ece(rdma_cm_id*, const void*, uint8_t) { return unsupported("rdma_reject_ece"); }
FAKECM_API int rdma_create_srq_ex(rdma_cm_id*, ibv_srq_init_attr_ex*) {
  return unsupported("rdma_create_srq_ex");
}

FAKECM_API int rsocket(int, int, int) { return unsupported("rsocket"); }
FAKECM_API int rbind(int, const sockaddr*, socklen_t) { return unsupported("rbind"); }
FAKECM_API int rlisten(int, int) { return unsupported("rlisten"); }
FAKECM_API int raccept(int, sockaddr*, socklen_t*) { return unsupported("raccept"); }
FAKECM_API int rconnect(int, const sockaddr*, socklen_t) { return unsupported("rconnect"); }
FAKECM_API int rshutdown(int, int) { return unsupported("rshutdown"); }
FAKECM_API int rclose(int) { return unsupported("rclose"); }
FAKECM_API ssize_t rrecv(int, void*, size_t, int) { return unsupported("rrecv"); }
FAKECM_API ssize_t rrecvfrom(int, void*, size_t, int, sockaddr*, socklen_t*) {
  return unsupported("rrecvfrom");
}
FAKECM_API ssize_t rrecvmsg(int, msghdr*, int) { return unsupported("rrecvmsg"); }
FAKECM_API ssize_t rsend(int, const void*, size_t, int) { return unsupported("rsend"); }
FAKECM_API ssize_t rsendto(int, const void*, size_t, int, const sockaddr*, socklen_t) {
  return unsupported("rsendto");
}
FAKECM_API ssize_t rsendmsg(int, const msghdr*, int) { return unsupported("rsendmsg"); }
FAKECM_API ssize_t rread(int, void*, size_t) { return unsupported("rread"); }
FAKECM_API ssize_t rreadv(int, const iovec*, int) { return unsupported("rreadv"); }
FAKECM_API ssize_t rwrite(int, const void*, size_t) { return unsupported("rwrite"); }
FAKECM_API ssize_t rwritev(int, const iovec*, int) { return unsupported("rwritev"); }
FAKECM_API int rpoll(pollfd*, nfds_t, int) { return unsupported("rpoll"); }
FAKECM_API int rselect(int, fd_set*, fd_set*, fd_set*, timeval*) { return unsupported("rselect"); }
FAKECM_API int rgetpeername(int, sockaddr*, socklen_t*) { return unsupported("rgetpeername"); }
FAKECM_API int rgetsockname(int, sockaddr*, socklen_t*) { return unsupported("rgetsockname"); }
FAKECM_API int rsetsockopt(int, int, int, const void*, socklen_t) { return unsupported("rsetsockopt"); }
FAKECM_API int rgetsockopt(int, int, int, void*, socklen_t*) { return unsupported("rgetsockopt"); }
FAKECM_API int rfcntl(int, int, ...) { return unsupported("rfcntl"); }
FAKECM_API off_t riomap(int, void*, size_t, int, int, off_t) { return unsupported("riomap"); }
FAKECM_API int riounmap(int, void*, size_t) { return unsupported("riounmap"); }
FAKECM_API size_t riowrite(int, const void*, size_t, off_t, int) {
  return static_cast<size_t>(unsupported("riowrite"));
}
