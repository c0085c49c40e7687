// The device limits the drop-in fake reports (ibv_query_device) and enforces at creation.
//
// Hardware rule: a device has fixed capacities (max_qp, max_cq, max_mr ...), reported by
// ibv_query_device; creating one object more fails with ENOMEM, an attribute above a per-object
// maximum (max_qp_wr, max_sge, max_cqe ...) with EINVAL. No verbs object is a file descriptor on
// a real device, so none fails with EMFILE.
//
// The fake's objects do cost descriptors: a QP owns two sockets (its receive address and the
// socket it sends through, both opened at create time so that a QP that exists can always
// transfer), a CQ with a completion channel an eventfd. Two things keep that honest:
//  * the first ibv_open_device raises RLIMIT_NOFILE's soft limit to the hard one (a program
//    that creates 1,000 QPs on hardware needs no descriptors for them);
//  * the QP and CQ figures reported are capped by what the soft limit leaves after a reserve
//    for the program's own files, so a program that stays within what ibv_query_device says
//    never meets the descriptor limit through the fake; one that exhausts descriptors itself
//    gets ENOMEM at create time, logged, never a QP that silently cannot send.
// The counts are per process (each process has its own fake); a real device counts every
// process's objects together.
#include "fakelib.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <mutex>
#include <string>

namespace gidpolicy::fakelib {
namespace {

/// Descriptors left to the program itself (stdio, its sockets and files, the fake's log,
/// table watcher, progress thread and per-context descriptors).
constexpr unsigned long kProgramReserve = 64;
/// The soft limit is not raised past this (an unlimited hard limit is not a usable soft one).
constexpr rlim_t kMaxSoftLimit = rlim_t{1} << 20;

unsigned long soft_limit() noexcept {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return kMaxSoftLimit;
  return static_cast<unsigned long>(rl.rlim_cur);
}

}  // namespace

unsigned long raise_descriptor_limit() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    const rlim_t want = std::min(rl.rlim_max, kMaxSoftLimit);
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
      rl.rlim_cur = want;
      (void)::setrlimit(RLIMIT_NOFILE, &rl);  // refused: the lower figures below say so
    }
  });
  return soft_limit();
}

DeviceLimits device_limits(const Device&) noexcept {
  // The fake's figures are the C core's, which the in-process C ABI enforces too.
  DeviceLimits l = fakes::c_core::kDeviceLimits;
  // Two descriptors per QP and one per CQ (with a channel): a third of what is left each.
  const unsigned long soft = soft_limit();
  const unsigned long avail = soft > kProgramReserve ? soft - kProgramReserve : 0;
  const auto cap = static_cast<unsigned>(std::min<unsigned long>(avail / 3, 1u << 30));
  l.max_qp = std::min(l.max_qp, cap);
  l.max_cq = std::min(l.max_cq, cap);
  return l;
}

int over_limit(Library& lib, nlohmann::ordered_json& r, const Device* d, unsigned count, unsigned limit,
               const char* what) {
  if (count < limit) return 0;
  fail_record(lib, r, d, ENOMEM,
              std::string("the device's limit of ") + std::to_string(limit) + " " + what +
                  " (ibv_query_device) is reached");
  return ENOMEM;
}

}  // namespace gidpolicy::fakelib
