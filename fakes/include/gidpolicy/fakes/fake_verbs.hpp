// FakeVerbs: an in-memory RDMA stack behind the VerbsApi seam, the default test double.
//
// Devices, ports and GID tables come from any table file gidpolicy reads. What modify_qp(RTR)
// and create_qp return is decided by the device's DriverModel through judge_rtr() and
// judge_create_qp() (driver_model.hpp): the same model predict_rtr() and the drop-in fake
// libibverbs.so.1 use, so a test, a prediction and an unmodified program agree.
//
// What it models, and the gotcha each part encodes:
//  * GID reads with rdma-core's semantics: read_gid() gives zeros for an empty slot,
//    read_gid_entry() ENODATA, read_gid_table() only valid entries of every port and EINVAL when
//    the buffer is too small; an index at or past gid_tbl_len is EINVAL. A slot the source table
//    did not show (ibv_devinfo input) reads as empty.
//  * Queue pairs with numbers, states and attributes kept in the model: RESET->INIT->RTR->RTS
//    with the kernel's required mask bits (EINVAL when one is missing), the RTR judged on the
//    table *as it is at that call* (so a mutation between selection and RTR shows up), and the
//    verdict kept on the QP (an RTR that "times out" succeeds but its QP never delivers).
//  * Tables change under running jobs (NCCL 2157): a TableMutation (stale entry, moved index,
//    emptied slot, netdev gone) can be applied now or just before the Nth call of a kind.
//  * The kernel tells running programs about table changes through asynchronous events:
//    every mutation that changes a port's GIDs raises IBV_EVENT_GID_CHANGE, a port going down
//    or up IBV_EVENT_PORT_ERR / IBV_EVENT_PORT_ACTIVE, on every handle open on the device.
//    async_event_fd() is an eventfd that polls readable while events are pending.
//  * Fault injection: the Nth call of a kind, the Nth call overall, or every call of a kind
//    fails with a given errno. Every call is counted, failed ones included.
// Thread-safe: every member locks one mutex (the drop-in libibverbs may be called from threads).
//
// Example:
//   gidpolicy::fakes::FakeVerbs fake;
//   if (auto ok = fake.load_file("examples/tables/macmini-mapped-at-2.json"); !ok) return ok.error();
//   fake.fail_nth(VerbsCall::read_gid_table, 1, EOPNOTSUPP);     // a driver without the ioctl
//   auto t = gidpolicy::verbs::snapshot(fake, "rdma_en2", 1);
//   unsigned reads = fake.calls(VerbsCall::read_gid_entry);      // 16: one query per entry
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::fakes {

using verbs::DeviceHandle;
using verbs::QpHandle;
using verbs::VerbsCall;

/// "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", or "state N": a QP state as the fakes'
/// messages and the fake libibverbs' JSON log name it.
std::string qp_state_name(ibv_qp_state s);

/// A change to one port's GID table, as the kernel makes them when addresses and links change.
struct TableMutation {
  enum class Kind : std::uint8_t {
    stale_entry,  ///< the slot now holds another GID (an address replaced in place)
    moved_index,  ///< the slot's entry moves to another index, the slot empties (a port flap)
    emptied,      ///< the slot empties (the address was removed)
    netdev_gone,  ///< the entry stays but its netdev is gone or in another namespace (ENODEV)
    netdev_back,  ///< undo netdev_gone
    set_entry,    ///< store `entry` as is (any state)
    port_state,   ///< the port goes to `state` (down: IBV_EVENT_PORT_ERR, active: PORT_ACTIVE)
  };
  Kind kind = Kind::set_entry;
  std::string device;
  std::uint32_t port = 1;
  std::uint32_t index = 0;
  std::uint32_t to_index = 0;           ///< moved_index: the new index
  Gid gid;                              ///< stale_entry: the GID the slot holds now
  GidEntry entry;                       ///< set_entry: the entry to store (its index is `index`)
  PortState state = PortState::active;  ///< port_state: the new state

  static TableMutation stale_entry(std::string device, std::uint32_t port, std::uint32_t index, Gid now);
  static TableMutation moved_index(std::string device, std::uint32_t port, std::uint32_t from,
                                   std::uint32_t to);
  static TableMutation emptied(std::string device, std::uint32_t port, std::uint32_t index);
  static TableMutation netdev_gone(std::string device, std::uint32_t port, std::uint32_t index);
  static TableMutation netdev_back(std::string device, std::uint32_t port, std::uint32_t index);
  static TableMutation set(std::string device, std::uint32_t port, GidEntry entry);
  static TableMutation port_state(std::string device, std::uint32_t port, PortState state);
  /// "stale_entry rdma_en2:1[2] -> ::ffff:10.0.0.9" etc.
  [[nodiscard]] std::string to_string() const;
};

/// A queue pair as the fake holds it.
struct FakeQp {
  std::uint32_t qp_num = 0;
  QpKind kind = QpKind::uc;
  std::string device;
  std::uint32_t port = 0;  ///< set at RESET->INIT (IBV_QP_PORT)
  ibv_qp_state state = IBV_QPS_RESET;
  ibv_qp_attr attr{};  ///< every attribute set so far, field by field as the masks named them
  int attr_mask = 0;   ///< the union of the masks applied
  /// The model's verdict on the INIT->RTR transition, once made: ok, or times_out (the QP
  /// reached RTR but its traffic will not arrive). Failed RTRs leave the QP in INIT.
  std::optional<RtrVerdict> rtr;
  /// The GID the QP routes from, read from the table at RTR time (what leaves the wire).
  std::optional<Gid> source_gid;
};

class FakeVerbs final : public verbs::VerbsApi {
 public:
  FakeVerbs();
  ~FakeVerbs() override;

  // ---- building the model ----------------------------------------------------------------
  /// Add one port's table. The device is created on its first port, with `model` or, when
  /// none is given, DriverModel::for_table(table). Errors:
  /// errc::invalid_argument for a port that exists already or a port number outside 1..255.
  result<void> add_port(const GidTable& table, std::optional<DriverModel> model = std::nullopt);
  /// add_port() for each table.
  result<void> add_tables(const std::vector<GidTable>& tables,
                          const std::optional<DriverModel>& model = std::nullopt);
  /// Parse tables in any text format gidpolicy reads (JSON, `ibv_devinfo -v`, show_gids; see
  /// formats/detect.hpp) and add their ports. `source` names the input in errors.
  result<void> load_text(std::string_view text, std::string_view source = "<text>",
                         const std::optional<DriverModel>& model = std::nullopt);
  /// The same for a file, or a sysfs directory tree. errc::io_error when it cannot be read.
  result<void> load_file(const std::filesystem::path& path,
                         const std::optional<DriverModel>& model = std::nullopt);

  /// Change a device's driver model (what create_qp and RTR return from now on).
  result<void> set_driver_model(std::string_view device, DriverModel model);
  [[nodiscard]] result<DriverModel> driver_model(std::string_view device) const;
  /// Which GID reads the device's driver implements; an unimplemented one fails with
  /// EOPNOTSUPP and read_support() says so (default: all three).
  result<void> set_read_support(std::string_view device, verbs::ReadSupport support);
  /// QP numbers: by default 0x100, 0x101, ...; the drop-in libibverbs sets its own (a UDP port).
  void set_qp_number_allocator(std::function<result<std::uint32_t>()> next);

  // ---- the model's state -----------------------------------------------------------------
  [[nodiscard]] std::vector<std::string> devices() const;
  /// The table of a port as it is now.
  [[nodiscard]] result<GidTable> table(std::string_view device, std::uint32_t port) const;
  /// Apply a mutation now. errc::device_not_found / invalid_argument for a bad target.
  /// Raises the event the kernel would (see the header comment) on every open handle.
  result<void> apply(const TableMutation& mutation);
  /// Replace a port's entries and state with `table`'s in one step (what a rewritten table
  /// file means to the drop-in libibverbs): one IBV_EVENT_GID_CHANGE when any entry differs,
  /// PORT_ERR / PORT_ACTIVE when the state crosses active. Nothing changes on error
  /// (errc::device_not_found, invalid_argument for an unknown port or an entry beyond
  /// gid_tbl_len). Returns whether anything changed.
  result<bool> replace_port(const GidTable& table);
  /// Queue an asynchronous event of `type` for `port` on every open handle of `device`, as a
  /// driver would (tests of event handling beyond table changes).
  result<void> raise_event(std::string_view device, std::uint32_t port, ibv_event_type type);
  /// Queue `event` (a CQ, QP or SRQ event: its element names the object) on the one open handle
  /// that owns the object, as the kernel reports an object's event to its own context only.
  /// errc::invalid_argument for a handle that is not open.
  result<void> raise_object_event(DeviceHandle device, const ibv_async_event& event);
  /// Events read through read_async_event() and not yet acked, over all handles.
  [[nodiscard]] unsigned unacked_events() const;
  /// A QP by handle, or by number on a device (the data path and the drop-in library need it).
  [[nodiscard]] result<FakeQp> qp(QpHandle handle) const;
  [[nodiscard]] std::optional<FakeQp> qp_by_number(std::string_view device, std::uint32_t qp_num) const;
  /// QPs currently created on a device (every handle).
  [[nodiscard]] unsigned qp_count(std::string_view device) const;

  // ---- fault injection (counted from the moment of the call) -------------------------------
  /// The `nth` call of `kind` from now (1 = the next) fails with `err` and has no effect.
  void fail_nth(VerbsCall kind, unsigned nth, int err);
  /// Every call of `kind` fails with `err` until clear_faults().
  void fail_every(VerbsCall kind, int err);
  /// The `nth` call of any kind from now fails with `err`.
  void fail_call_number(unsigned nth, int err);
  /// Apply `mutation` just before the `nth` call of `kind` from now runs (that call sees it).
  /// Its target (device, port, indices below gid_tbl_len) is checked now: errc::device_not_found
  /// or errc::invalid_argument. One that still cannot apply when it fires (moving a slot that
  /// emptied meanwhile) is recorded in failed_mutations(), never silently dropped.
  result<void> mutate_at(VerbsCall kind, unsigned nth, TableMutation mutation);
  /// Mutations that fired but could not be applied, with why.
  [[nodiscard]] std::vector<Error> failed_mutations() const;
  /// Drop every pending fault and mutation.
  void clear_faults();
  /// Faults and mutations injected that have not fired yet.
  [[nodiscard]] unsigned pending_faults() const;

  // ---- counters ----------------------------------------------------------------------------
  [[nodiscard]] unsigned calls(VerbsCall kind) const;
  [[nodiscard]] unsigned total_calls() const;
  /// Every call since the last reset, in order.
  [[nodiscard]] std::vector<VerbsCall> call_log() const;
  void reset_counters();

  // ---- VerbsApi ----------------------------------------------------------------------------
  [[nodiscard]] std::string backend_name() const override { return "fake"; }
  result<std::vector<std::string>> device_names() override;
  result<DeviceHandle> open_device(std::string_view name) override;
  result<void> close_device(DeviceHandle device) override;
  [[nodiscard]] result<std::string> device_name(DeviceHandle device) const override;
  result<PortInfo> port_attributes(DeviceHandle device, std::uint32_t port) override;
  result<Gid> read_gid(DeviceHandle device, std::uint32_t port, std::uint32_t index) override;
  result<GidEntry> read_gid_entry(DeviceHandle device, std::uint32_t port, std::uint32_t index) override;
  result<std::vector<verbs::GidTableRow>> read_gid_table(DeviceHandle device,
                                                         std::uint32_t max_entries) override;
  [[nodiscard]] verbs::ReadSupport read_support(DeviceHandle device) const override;
  result<QpHandle> create_qp(DeviceHandle device, QpKind kind) override;
  result<void> modify_qp(QpHandle handle, const ibv_qp_attr& attr, int mask) override;
  result<verbs::QpInfo> query_qp(QpHandle handle) override;
  result<void> destroy_qp(QpHandle handle) override;
  /// An eventfd (semaphore mode) per open handle: readable while its queue holds events. At
  /// most kMaxQueuedEvents wait per handle; past that new events are dropped (a watcher
  /// re-reads the whole table on the next one, so nothing but the count is lost).
  result<int> async_event_fd(DeviceHandle device) override;
  result<std::optional<verbs::AsyncEvent>> read_async_event(DeviceHandle device) override;
  /// errc::invalid_argument for an ack without a matching read (a double ack in a test).
  result<void> ack_async_event(DeviceHandle device, const verbs::AsyncEvent& event) override;
  /// ibv_get_async_event's wait, for the C-ABI bindings over the fake (c_abi and the drop-in
  /// libibverbs): the next event for `device`, waiting on `fd` (the context's async_fd) until one
  /// is queued, as libibverbs blocks; with `fd` O_NONBLOCK an empty queue is errno EAGAIN. Call it
  /// without the binding's own lock: the calls that raise events must go on meanwhile. Errors:
  /// read_async_event()'s, or poll()'s errno.
  result<verbs::AsyncEvent> wait_async_event(DeviceHandle device, int fd);
  static constexpr std::size_t kMaxQueuedEvents = 4096;
  /// The P_Key table every fake port has: the one default partition (pkey_index 0 only).
  static constexpr std::uint32_t kPkeyTableLength = 1;
  /// max_qp_rd_atom / max_qp_init_rd_atom of every fake device: modify_qp refuses more.
  static constexpr std::uint32_t kMaxRdAtomic = 16;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gidpolicy::fakes
