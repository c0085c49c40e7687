// The one C-convention core over FakeVerbs: what a verbs call answers, in the kernel's and
// rdma-core 44's terms, shared by both C fronts over the model (c_abi, the in-process binding
// tests use, and the drop-in libibverbs.so.1). A front looks up its own handles, takes its own
// lock, logs what it logs, and leaves every answer to these functions, so the two cannot
// disagree on an errno, a gid_type or how much of a caller's struct is written.
//
// Each function returns 0 or a positive errno (a count or a negative errno for the table), and
// fills `why` (when given) with the model's reason for a failure. The call frames (c_guard.hpp,
// the one guard of every C entry point of the fakes) turn a body into one of rdma-core's return
// conventions and keep every C++ exception inside (std::bad_alloc: ENOMEM, as libibverbs answers
// running out of memory).
//
// The QP calls (create_qp's checks, query_qp, modify_qp) are answered here too, so the in-process
// C ABI and the drop-in refuse the same NULL CQ, the same capabilities and the same transition
// with the same errno.
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
#include <gidpolicy/fakes/c_guard.hpp>
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

// ---- queue pairs: ibv_create_qp, ibv_query_qp, ibv_modify_qp ---------------------------------
// One answer for both fronts. A front looks up the objects a call names in its own maps (never
// casting a caller's pointer back) and passes what it found; the checks, their order, the errno
// and the reason are these functions'.

/// The figures the fake's devices report in ibv_query_device and enforce at creation, before a
/// front's own lowering (the drop-in caps max_qp and max_cq by the descriptors it has: a QP
/// costs it two sockets). A driver model's QP ceiling (Apple: 10) is the model's to enforce.
/// max_cqe is a ConnectX port's CQ depth (2^22 - 1): libfabric's ofi_rxm sizes its CQ for 256
/// peers (262144 entries) and gets it on hardware.
inline constexpr DeviceLimits kDeviceLimits{.max_qp = 1024,
                                            .max_cq = 1024,
                                            .max_pd = 1024,
                                            .max_mr = 4096,
                                            .max_srq = 1024,
                                            .max_ah = 65536,
                                            .max_qp_wr = 4096,
                                            .max_sge = 16,
                                            .max_cqe = 4194303,
                                            .max_srq_wr = 4096,
                                            .max_srq_sge = 16,
                                            .max_inline = 512,
                                            .max_rd_atom = FakeVerbs::kMaxRdAtomic,
                                            .pkey_tbl_len = FakeVerbs::kPkeyTableLength};

/// What a front found of the objects an ibv_qp_init_attr names, in its own maps.
struct QpObjects {
  bool send_cq = false;  ///< attr->send_cq is a CQ this front handed out, of the PD's context
  bool recv_cq = false;  ///< likewise attr->recv_cq
  bool srq = true;       ///< attr->srq is NULL, or an SRQ this front handed out, of the PD's context
};

/// ibv_create_qp's checks, in the kernel's order (uverbs' create_qp, then the driver's): 0 with
/// `*kind` set, or the errno:
///  * EINVAL: no attributes; a send or receive CQ that is NULL, unknown or of another context
///    (the kernel looks both up by handle: a QP always has both);
///  * EOPNOTSUPP: a QP type the fake does not model (XRC, raw packet, driver-specific);
///  * EINVAL: an SRQ that is unknown, of another context, or on a UD QP (the fake's UD takes
///    none); capabilities above the device's (max_qp_wr, max_sge, max_inline: mlx5 and rxe
///    refuse them with EINVAL, never silently clamp);
///  * ENOMEM: `qps_in_use` already at the device's max_qp ("no resources").
/// Example (a QP without CQs is EINVAL, whatever else its attributes say):
///   ibv_qp_init_attr attr{};
///   attr.qp_type = IBV_QPT_RC;
///   QpKind kind = QpKind::rc;
///   namespace c_core = gidpolicy::fakes::c_core;
///   int e = c_core::check_create_qp(&attr, c_core::QpObjects{}, c_core::kDeviceLimits, 0, &kind);
int check_create_qp(const ibv_qp_init_attr* attr, const QpObjects& objects, const DeviceLimits& limits,
                    unsigned qps_in_use, QpKind* kind, std::string* why = nullptr);

/// The model's QP for a create_qp that passed check_create_qp: 0 with `*out`, or the model's
/// errno (the driver model's judge_create_qp: Apple's RC refusal, its QP ceiling).
int create_qp(FakeVerbs& model, DeviceHandle device, QpKind kind, QpHandle* out, std::string* why = nullptr);

/// ibv_query_qp: 0 with `*attr` the model's (every attribute the QP holds, qp_state and
/// cur_qp_state its state) and its cap the capabilities it was created with, and `*init_attr`
/// the attributes it was created with (`created`). EINVAL without `attr` or `init_attr`:
/// rdma-core's ibv_query_qp writes both, as the kernel's query reply carries both. Else the
/// model's errno.
int query_qp(FakeVerbs& model, QpHandle qp, const ibv_qp_init_attr& created, ibv_qp_attr* attr,
             ibv_qp_init_attr* init_attr, std::string* why = nullptr);

/// ibv_modify_qp: 0, or the errno: EINVAL without `attr`; else the model's (the kernel's
/// ib_modify_qp_is_ok on the mask and the transition, the port, P_Key index, path MTU and
/// read-atomic limits, and INIT->RTR judged by the driver model). Fronts return it through
/// errno_set_frame: rdma-core returns the errno and errno holds it too.
int modify_qp(FakeVerbs& model, QpHandle qp, const ibv_qp_attr* attr, int mask, std::string* why = nullptr);

// ---- call frames: one per rdma-core return convention (c_guard.hpp) ---------------------------
using c_guard::count_frame;
using c_guard::errno_frame;
using c_guard::errno_set_frame;
using c_guard::minus_one_frame;
using c_guard::pointer_frame;

}  // namespace gidpolicy::fakes::c_core
