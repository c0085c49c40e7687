// VerbsApi: the narrow seam between gidpolicy and an RDMA verbs implementation.
//
// Everything gidpolicy asks of a driver goes through this interface: list and open devices,
// read a port, read the GID table in one of rdma-core's three ways, and take a queue pair from
// RESET to RTR. Backends: LibibverbsApi (links libibverbs, gidpolicy::verbs), DlopenApi (loads it
// at run time), FunctionTableApi (a caller's own function pointers), and fakes::FakeVerbs.
//
// Hardware gotchas encoded here:
//  * rdma-core has four return conventions (0/-1 + errno, a positive errno, a negative errno,
//    NULL + errno). Every member returns result<T>; a driver errno is captured by the backend at
//    the call and kept as std::error_code(errno, generic_category()), never read later.
//  * "Empty" has two spellings: read_gid() (ibv_query_gid) succeeds with all zeros for an empty
//    slot, read_gid_entry() (ibv_query_gid_ex) fails with ENODATA. The seam keeps both as they
//    are; snapshot() turns either into EntryState::empty.
//  * ibv_query_port and friends are macros over inlines in <infiniband/verbs.h>: member names
//    here deliberately do not repeat them (a member called ibv_query_port would be expanded).
//
// Example:
//   gidpolicy::verbs::DlopenApi api;                      // or LibibverbsApi, FakeVerbs...
//   auto dev = api.open_device("mlx5_0");
//   if (!dev) return dev.error();                         // errc::no_devices on a machine without RDMA
//   auto port = api.port_attributes(dev.value(), 1);
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/qp.hpp>

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::verbs {

/// An open device, as handed out by one VerbsApi instance (meaningless to another).
/// 0 is never a valid handle.
struct DeviceHandle {
  std::uint64_t id = 0;
  explicit operator bool() const noexcept { return id != 0; }
  friend bool operator==(DeviceHandle, DeviceHandle) = default;
};

/// A queue pair created through a VerbsApi (it owns the PD and CQ the QP needs).
struct QpHandle {
  std::uint64_t id = 0;
  explicit operator bool() const noexcept { return id != 0; }
  friend bool operator==(QpHandle, QpHandle) = default;
};

/// Every kind of call the seam makes; used by counters, fault injection and snapshot reports.
enum class VerbsCall : std::uint8_t {
  device_names,
  open_device,
  close_device,
  port_attributes,
  read_gid,        ///< ibv_query_gid: empty slot = success with zeros
  read_gid_entry,  ///< ibv_query_gid_ex: empty slot = ENODATA
  read_gid_table,  ///< ibv_query_gid_table: every valid entry of every port in one call
  create_qp,
  modify_qp,
  query_qp,
  destroy_qp,
  read_async_event,  ///< ibv_get_async_event, without blocking
  ack_async_event,   ///< ibv_ack_async_event
};
inline constexpr std::size_t kVerbsCallKinds = 13;
/// "device_names", "open_device", ... (the enumerator names).
std::string_view to_string(VerbsCall c) noexcept;

/// Which GID-reading calls a backend can make for an open device. A backend learns: after a
/// call returned EOPNOTSUPP/ENOSYS (a driver without the ioctl), it reports that call as
/// unsupported so the next snapshot does not pay for it again.
struct ReadSupport {
  bool gid_table = false;   ///< read_gid_table (rdma-core >= v32)
  bool gid_entry = false;   ///< read_gid_entry (rdma-core >= v32)
  bool gid_legacy = false;  ///< read_gid (every libibverbs)
  friend bool operator==(const ReadSupport&, const ReadSupport&) = default;
};

/// One row of read_gid_table(): an entry plus the port it belongs to (the call covers all ports).
struct GidTableRow {
  std::uint32_t port = 1;
  GidEntry entry;
  friend bool operator==(const GidTableRow&, const GidTableRow&) = default;
};

/// What query_qp() reports: enough to check a transition and what RTR was given.
struct QpInfo {
  std::uint32_t qp_num = 0;
  QpKind kind = QpKind::uc;
  ibv_qp_state state = IBV_QPS_RESET;
  ibv_qp_attr attr{};  ///< as the driver reports it (ah_attr.grh.sgid_index, dgid, dest_qp_num...)
};

/// One asynchronous event of a device (ibv_get_async_event), as the seam hands it out.
/// Only device and port events carry meaning for GID choice: IBV_EVENT_GID_CHANGE (the kernel
/// added, removed or replaced a GID of `port`), IBV_EVENT_PORT_ACTIVE / IBV_EVENT_PORT_ERR
/// (link up / down: a port's IP-based GIDs come and go with its netdev). Others are reported
/// with their type and port 0 so a caller can ack and ignore them.
struct AsyncEvent {
  ibv_event_type type = IBV_EVENT_GID_CHANGE;
  std::uint32_t port = 0;  ///< element.port_num for port and GID events, else 0
  /// The event as the driver returned it: ibv_ack_async_event() needs this exact struct back.
  ibv_async_event raw{};
};
/// "gid_change", "port_active", "port_error", "lid_change", ... or "event N".
std::string async_event_name(ibv_event_type type);

/// The sizes of a queue pair made for moving data (create_data_qp()): work requests in flight
/// per queue, and completion-queue entries. A CQ shared by both queues needs at least the sum:
/// a CQ overrun is IBV_EVENT_CQ_ERR and the QP goes to the error state, on hardware and fake.
struct QpCapacity {
  std::uint32_t send_wr = 4;
  std::uint32_t recv_wr = 4;
  std::uint32_t cq_entries = 16;  ///< >= send_wr + recv_wr
};

/// A buffer registered on a data QP's protection domain (register_memory()): the keys a work
/// request (lkey) and a peer's RDMA write (rkey, addr) name it by.
struct MemoryKeys {
  std::uint64_t addr = 0;  ///< the registered address, as a peer's remote_addr names it
  std::uint64_t length = 0;
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
};

/// One send-queue work request of the data path: a SEND, or an RDMA WRITE into the peer's
/// registered memory, of one local buffer (one SGE), signaled.
struct SendRequest {
  enum class Op : std::uint8_t { send, rdma_write };
  Op op = Op::send;
  std::uint64_t wr_id = 0;
  std::uint64_t local_addr = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;
  std::uint64_t remote_addr = 0;  ///< rdma_write only
  std::uint32_t rkey = 0;         ///< rdma_write only
};

/// One work completion as ibv_poll_cq reported it.
struct WorkCompletion {
  std::uint64_t wr_id = 0;
  ibv_wc_status status = IBV_WC_SUCCESS;  ///< IBV_WC_RETRY_EXC_ERR: no ACK within the retry budget
  ibv_wc_opcode opcode = IBV_WC_SEND;
  std::uint32_t byte_len = 0;
};

/// The seam. Implementations are not required to be thread-safe unless they say so.
class VerbsApi {
 public:
  virtual ~VerbsApi() = default;
  VerbsApi() = default;
  VerbsApi(const VerbsApi&) = delete;
  VerbsApi& operator=(const VerbsApi&) = delete;

  /// The backend's name for messages: "libibverbs", "dlopen(libibverbs.so.1)", "fake"...
  [[nodiscard]] virtual std::string backend_name() const = 0;

  /// Names of the RDMA devices present. No device at all (including libibverbs' NULL + ENOSYS
  /// on a machine without an RDMA kernel): errc::no_devices, never an empty success.
  virtual result<std::vector<std::string>> device_names() = 0;
  /// Open a device by name. errc::device_not_found names the devices that exist.
  virtual result<DeviceHandle> open_device(std::string_view name) = 0;
  /// Close a device opened by this API; QPs still open on it are destroyed first.
  virtual result<void> close_device(DeviceHandle device) = 0;
  /// The device's name as opened.
  [[nodiscard]] virtual result<std::string> device_name(DeviceHandle device) const = 0;

  /// ibv_query_port: state, link layer, gid_tbl_len, active MTU, LID. Port numbers are 1..255.
  virtual result<PortInfo> port_attributes(DeviceHandle device, std::uint32_t port) = 0;
  /// ibv_query_gid semantics: an in-range empty slot succeeds with the all-zero GID.
  virtual result<Gid> read_gid(DeviceHandle device, std::uint32_t port, std::uint32_t index) = 0;
  /// ibv_query_gid_ex semantics: type and netdev too; an empty slot fails with ENODATA.
  virtual result<GidEntry> read_gid_entry(DeviceHandle device, std::uint32_t port, std::uint32_t index) = 0;
  /// ibv_query_gid_table semantics: every valid entry of every port, at most `max_entries`
  /// (EINVAL when there are more: the caller retries with a larger buffer). EOPNOTSUPP when the
  /// driver or library lacks it.
  virtual result<std::vector<GidTableRow>> read_gid_table(DeviceHandle device, std::uint32_t max_entries) = 0;
  /// Which of the three reads this backend can make for `device` (no driver call).
  [[nodiscard]] virtual ReadSupport read_support(DeviceHandle device) const = 0;

  /// Create a queue pair of `kind` (with the PD and CQ it needs) on `device`. It starts in RESET.
  virtual result<QpHandle> create_qp(DeviceHandle device, QpKind kind) = 0;
  /// ibv_modify_qp: the driver's errno on failure (EINVAL, ENODATA, ENODEV, ETIMEDOUT...).
  virtual result<void> modify_qp(QpHandle qp, const ibv_qp_attr& attr, int mask) = 0;
  /// ibv_query_qp: number, state and the attributes the QP holds.
  virtual result<QpInfo> query_qp(QpHandle qp) = 0;
  /// Destroy a QP and what create_qp allocated for it.
  virtual result<void> destroy_qp(QpHandle qp) = 0;

  // ---- the data path (gidpolicy probe) -----------------------------------------------------
  // Defaults fail with errc::not_supported; FunctionTableApi (and so DlopenApi and
  // LibibverbsApi) implements them. The QP's memory registrations are released by destroy_qp().

  /// create_qp() with queues sized for data: `capacity` work requests and CQ entries (create_qp()
  /// makes queues of one, enough for RTR checks and nothing more).
  virtual result<QpHandle> create_data_qp(DeviceHandle device, QpKind kind, const QpCapacity& capacity);
  /// ibv_reg_mr of `length` bytes at `addr` on the QP's protection domain, with `access`
  /// (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE to be a peer's RDMA WRITE target). The
  /// memory must outlive the QP.
  virtual result<MemoryKeys> register_memory(QpHandle qp, void* addr, std::size_t length, int access);
  /// ibv_post_send of one signaled work request: the driver's errno when it refuses the post
  /// (ENOMEM: the send queue is full; EINVAL: the QP is not in RTS).
  virtual result<void> post_send(QpHandle qp, const SendRequest& request);
  /// ibv_post_recv of one receive of `length` bytes at `addr` (registered, `lkey`).
  virtual result<void> post_recv(QpHandle qp, std::uint64_t wr_id, std::uint64_t addr, std::uint32_t length,
                                 std::uint32_t lkey);
  /// ibv_poll_cq on the QP's completion queue, without waiting: at most `max` completions, none
  /// when nothing completed.
  virtual result<std::vector<WorkCompletion>> poll_completions(QpHandle qp, std::uint32_t max);

  // ---- asynchronous events (GID table and port changes) ------------------------------------
  // Defaults fail with errc::not_supported, so a backend written before these existed still
  // builds; every backend shipped with gidpolicy overrides them.

  /// A file descriptor that polls readable (POLLIN) while an event of `device` is pending:
  /// ibv_context::async_fd. Owned by the backend: do not read or close it, only poll it.
  virtual result<int> async_event_fd(DeviceHandle device);
  /// The next pending event, without blocking (nullopt: none pending). libibverbs'
  /// ibv_get_async_event blocks unless async_fd is O_NONBLOCK; backends poll the fd first
  /// instead, so the caller's fd flags are never changed. One reader per device: two threads
  /// reading the same device race for the same event.
  virtual result<std::optional<AsyncEvent>> read_async_event(DeviceHandle device);
  /// ibv_ack_async_event: every event read must be acked once (libibverbs counts them, and
  /// destroying the object an event names waits for its acks).
  virtual result<void> ack_async_event(DeviceHandle device, const AsyncEvent& event);
};

/// ibv_qp_type for a QpKind (IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD).
ibv_qp_type to_ibv(QpKind kind) noexcept;
/// The QpKind of an ibv_qp_type; nullopt for types the seam does not create (XRC, raw...).
std::optional<QpKind> qp_kind_from_ibv(ibv_qp_type type) noexcept;
/// GidType of the kernel's gid_type (0 IB, 1 RoCE v1, 2 RoCE v2); unknown for anything else.
GidType gid_type_from_ibv(std::uint32_t gid_type) noexcept;
/// The inverse for the three known types; unknown maps to 0 (IB/RoCE v1, rdma-core's default).
std::uint32_t to_ibv(GidType type) noexcept;
/// PortInfo from an ibv_port_attr. link_layer 0 (IBV_LINK_LAYER_UNSPECIFIED, legacy providers)
/// means InfiniBand, as in rdma-core's own tools. An active_mtu outside 1..5 (IBV_MTU_256 ..
/// IBV_MTU_4096) is an unknown MTU and refused: EPROTO naming `call` (default
/// "ibv_query_port") and the value, never a guessed 1024.
result<PortInfo> port_info_from_ibv(std::string device, std::uint32_t port, const ibv_port_attr& attr,
                                    std::string_view call = {});

}  // namespace gidpolicy::verbs
