// The one C-convention core over FakeVerbs: what a verbs call answers, in the kernel's and
// rdma-core 44's terms, shared by both C fronts over the model (c_abi, the in-process binding
// tests use, and the drop-in libibverbs.so.1). A front looks up its own handles, takes its own
// lock, logs what it logs, and leaves every answer to these functions, so the two cannot
// disagree on an errno, a gid_type or how much of a caller's struct is written.
//
// Each function returns 0 or a positive errno (a count or a negative errno for the table), and
// fills `why` (when given) with the model's reason for a failure. The call frames below turn a
// body into one of rdma-core's return conventions and keep every C++ exception inside (only
// std::bad_alloc can arise; libibverbs answers running out of memory with ENOMEM).
//
// The answers, and the rule behind each:
//  * errno: a driver errno as it is; gidpolicy's own codes through their generic condition
//    (device_not_found / no_devices: ENODEV, not_supported: EOPNOTSUPP); otherwise EINVAL.
//  * gid_type: the kernel stores "IB/RoCE v1" as one type and reports it as IBV_GID_TYPE_ROCE_V1
//    on an Ethernet port and IBV_GID_TYPE_IB elsewhere; RoCE v2 stays RoCE v2. A table's
//    "unknown" type reads as the port's "IB/RoCE v1" (the C ABI has no unknown).
//  * flags: no flag is defined, and the kernel's QUERY_GID_ENTRY / QUERY_GID_TABLE methods refuse
//    any bit with EINVAL (rdma-core 44 passes the kernel's answer on; only its sysfs fallback,
//    for kernels without those methods, says EOPNOTSUPP).
//  * entry_size: below sizeof(ibv_gid_entry) is EINVAL (the kernel's minimum for the attribute);
//    above it, the caller's bytes past the struct are zeroed, as the kernel clears them, and the
//    table is written with the caller's stride.
//  * query_gid_ex: an empty slot is ENODATA; an index at or past gid_tbl_len, or a port the device
//    lacks, is EINVAL. query_gid keeps the legacy API: an empty slot is 0 and zeros, another
//    failure -1 with errno. query_gid_table: the valid entries of every port, EINVAL when they do
//    not fit, and EINVAL for an empty buffer (max_entries 0), as the kernel.
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/gid_table.hpp>

#include <infiniband/verbs.h>

#include <sys/types.h>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace gidpolicy::fakes::c_core {

/// rdma-core's private enum ibv_gid_type_sysfs, which ibv_query_gid_type fills.
inline constexpr int kGidTypeSysfsIbRoceV1 = 0;
inline constexpr int kGidTypeSysfsRoceV2 = 1;

/// The errno a C caller sees for a model Error (see the header comment).
[[nodiscard]] int to_errno(const Error& e) noexcept;

/// ibv_gid_entry::gid_type for an entry of `type` on a port of `link_layer`.
[[nodiscard]] std::uint32_t abi_gid_type(GidType type, LinkLayer link_layer) noexcept;

/// ibv_query_gid: 0 with the GID (zeros for an empty slot), else the errno (the front returns
/// -1 with it, query_gid_frame). `gid` and the index were checked by the front (EINVAL).
int query_gid(FakeVerbs& model, DeviceHandle device, std::uint32_t port, int index, ibv_gid* gid,
              std::string* why = nullptr);

/// _ibv_query_gid_ex: 0 with `entry` filled (entry_size bytes written), or the errno.
int query_gid_ex(FakeVerbs& model, DeviceHandle device, std::uint32_t port, std::uint32_t index,
                 ibv_gid_entry* entry, std::uint32_t flags, std::size_t entry_size,
                 std::string* why = nullptr);

/// _ibv_query_gid_table: the number of entries written (with the caller's stride), or a
/// negative errno.
ssize_t query_gid_table(FakeVerbs& model, DeviceHandle device, ibv_gid_entry* entries,
                        std::size_t max_entries, std::uint32_t flags, std::size_t entry_size,
                        std::string* why = nullptr);

/// ibv_query_gid_type (rdma-core private): 0 with `*type` one of kGidTypeSysfs*; an empty slot
/// reads "IB/RoCE v1" with success, as rdma-core keeps its old API; else the errno.
int query_gid_type(FakeVerbs& model, DeviceHandle device, std::uint32_t port, std::uint32_t index, int* type,
                   std::string* why = nullptr);

/// The ibv_device of the model's device `name`, the `index`-th of the device list: the whole
/// struct written. node_type IBV_NODE_CA; transport IBV_TRANSPORT_IB, or 100 when a port of the
/// device is Thunderbolt (what Apple's RDMA devices report, and what ibv_devinfo prints as a
/// number); name the device's, dev_name "uverbs<index>" as the kernel names the character
/// device. The sysfs paths are each front's (the drop-in points them at its table directory).
void describe_device(const FakeVerbs& model, const std::string& name, int index, ibv_device* out);

/// The largest message a port of the fake carries (ibv_port_attr::max_msg_sz): 1 GiB, the
/// figure mlx5 reports.
inline constexpr std::uint32_t kMaxMessageSize = std::uint32_t{1} << 30;

/// What ibv_query_port reports for a port whose table gives no link width and speed (show_gids
/// prints none, nor do most pastes): 4X EDR, 100 Gb/s, a ConnectX-5-class RoCE port.
inline constexpr LinkRate kDefaultLinkRate{.width = 2, .speed = 32};

/// ibv_query_port: 0 with the whole of `*attr` written (zeros where the model has no figure),
/// else the errno (EINVAL for a port the device lacks). A front that receives rdma-core's
/// shorter _compat_ibv_port_attr copies only its prefix. Where the two fronts used to differ,
/// the kernel's answer (ib_query_port, rdma-core 44's ibv_query_port) decides:
///  * gid_tbl_len: the table's declared length, else the number of slots it lists;
///  * phys_state: LinkUp (5) whenever the logical state is past Down (INIT, ARMED, ACTIVE need
///    a trained physical link), Disabled (3) for a Down port;
///  * port_cap_flags: IBV_PORT_IP_BASED_GIDS on a port that is not InfiniBand, as the kernel
///    sets it for every RoCE port (its GIDs come from IP addresses);
///  * pkey_tbl_len: the model's P_Key table (FakeVerbs::kPkeyTableLength);
///  * active_width and active_speed: the table's (PortInfo::link_rate), else kDefaultLinkRate.
///    A trained link reports a width and a speed, never 0, and middleware sizes its protocols
///    from them (UCX's eager/rendezvous thresholds), so the default is a realistic RoCE port;
///  * max_vl_num 1; max_mtu is the active MTU (the table knows no other).
int query_port(FakeVerbs& model, DeviceHandle device, std::uint32_t port, ibv_port_attr* attr,
               std::string* why = nullptr);

/// The capacities a front reports in ibv_query_device (and enforces at creation).
struct DeviceLimits {
  unsigned max_qp = 0, max_cq = 0, max_pd = 0, max_mr = 0, max_srq = 0, max_ah = 0;
  unsigned max_qp_wr = 0, max_sge = 0, max_cqe = 0, max_srq_wr = 0, max_srq_sge = 0;
  unsigned max_inline = 0, max_rd_atom = 0, pkey_tbl_len = 0;
};

/// ibv_query_device for a device of `node_guid` (host order) with `phys_port_cnt` ports: the
/// whole of `*attr` written from `limits`, max_qp lowered to the device's driver model's QP
/// ceiling when it has one (Apple: 10). 0, or the errno (EINVAL without `attr`).
int query_device(FakeVerbs& model, DeviceHandle device, const DeviceLimits& limits, std::uint64_t node_guid,
                 unsigned phys_port_cnt, ibv_device_attr* attr, std::string* why = nullptr);

// ---- call frames: one per rdma-core return convention ----------------------------------------
// `body` returns the errno-style answer; the frame maps it to the convention and keeps every
// exception inside.

/// Calls that return 0 or a positive errno (query_gid_ex, query_port, modify_qp, destroy_*).
template <class Body>
int errno_frame(Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return ENOMEM;
  }
}

/// Calls that return 0, or -1 with errno (query_gid, get_async_event): `body` returns 0 or the errno.
template <class Body>
int minus_one_frame(Body&& body) noexcept {
  int err = 0;
  try {
    err = body();
  } catch (...) {
    err = ENOMEM;
  }
  if (err == 0) return 0;
  errno = err;
  return -1;
}

/// Calls that return an object, or NULL with errno (open_device, alloc_pd, create_qp): `body`
/// returns the object, or NULL with `err` set through its argument.
template <class Body>
auto pointer_frame(Body&& body) noexcept -> decltype(body(std::declval<int&>())) {
  int err = 0;
  try {
    auto* p = body(err);
    if (p) return p;
  } catch (...) {
    err = ENOMEM;
  }
  errno = err != 0 ? err : EINVAL;
  return nullptr;
}

/// Calls that return a count or a negative errno (query_gid_table).
template <class Body>
ssize_t count_frame(Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return -ENOMEM;
  }
}

}  // namespace gidpolicy::fakes::c_core
