// Internal state of the drop-in fake libibverbs.so.1 (not installed, not a public header).
//
// The library is the in-process fakes::FakeVerbs model behind the C ABI: devices, ports, GID
// tables, QP numbers, states and RTR verdicts live in the model (one per process, loaded from
// GIDPOLICY_FAKE_TABLES); this layer adds only what a C program needs on top of it: the C
// structs it hands out (ibv_device, ibv_context, ibv_pd, ibv_mr, ibv_cq, ibv_qp,
// ibv_comp_channel), memory regions, completion queues, and a loopback UDP data path.
//
// Handles are looked up in maps, never cast back from the pointer a program passes: a stale or
// foreign pointer gets EINVAL instead of a crash.
#pragma once

// Everything verbs.h declares keeps default visibility although the library is built with
// -fvisibility=hidden: the exported definitions below inherit it from these declarations, and
// the version script then decides what is really exported (and under which node).
#pragma GCC visibility push(default)
#include <infiniband/verbs.h>
extern "C" {
// rdma-core private declarations (driver.h): the Debian tools import them, the public headers
// do not declare them. ibv_query_gid_type fills rdma-core's private enum ibv_gid_type_sysfs.
int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index, int* type);
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
}
#pragma GCC visibility pop

#include <gidpolicy/driver_profile.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gidpolicy::fakelib {

/// rdma-core's private enum ibv_gid_type_sysfs: what ibv_devinfo prints as "RoCE v1" / "RoCE v2".
inline constexpr int kGidTypeSysfsIbRoceV1 = 0;
inline constexpr int kGidTypeSysfsRoceV2 = 1;

/// The largest message the loopback data path carries: one UDP datagram minus the header.
/// Reported as the port's max_msg_sz so programs can see the limit.
inline constexpr std::uint32_t kMaxMessage = 65000;

struct Device {
  ibv_device dev{};  // its address is what ibv_get_device_list hands out: never moves
  std::string name;
  std::vector<std::uint32_t> ports;    // port numbers, in the order the table file lists them
  std::vector<LinkLayer> link_layers;  // per entry of `ports`
  std::uint32_t phys_port_cnt = 0;
  std::uint64_t guid = 0;  // host order
  int index = 0;
  bool thunderbolt = false;
};

struct Context {
  ibv_context ctx{};
  Device* device = nullptr;
  verbs::DeviceHandle handle;
  int async_pipe[2] = {-1, -1};  // fallback async_fd when the model has none (never written)
};

struct Pd {
  ibv_pd pd{};
  Context* owner = nullptr;
};

struct Mr {
  ibv_mr mr{};
  Pd* pd = nullptr;
  int access = 0;
  std::uint64_t iova = 0;  // remote_addr space (reg_mr_iova); equals addr for ibv_reg_mr
};

struct Qp;

struct Channel {
  ibv_comp_channel ch{};  // ch.fd is an epoll instance watching the armed CQs' sources
  Context* owner = nullptr;
};

struct Cq {
  ibv_cq cq{};
  Context* owner = nullptr;
  Channel* channel = nullptr;
  std::deque<ibv_wc> done;
  std::vector<Qp*> qps;  // QPs using this CQ for sends or receives: their sockets feed it
  bool armed = false;
  int event_fd = -1;  // raised when a completion is added while armed (sends complete locally)
};

struct RecvWr {
  std::uint64_t wr_id = 0;
  std::vector<ibv_sge> sge;
};

/// An RC send waiting for the peer's acknowledgement.
struct Unacked {
  std::uint32_t seq = 0;
  std::uint64_t wr_id = 0;
  bool signaled = false;
  ibv_wc_opcode opcode = IBV_WC_SEND;
  std::uint32_t length = 0;
  std::int64_t deadline_ns = 0;  // 0: no timeout (attr.timeout 0 means "wait forever")
};

struct Qp {
  ibv_qp qp{};
  Context* owner = nullptr;
  Pd* pd = nullptr;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  QpKind kind = QpKind::uc;
  verbs::QpHandle model;
  int sock = -1;       // bound to 127.0.0.1:<qp_num>
  int sock_send = -1;  // dup of sock: the send CQ's channel watches it separately
  ibv_qp_init_attr init{};
  std::deque<RecvWr> rq;
  // RC datagrams this side cannot take yet: no receive posted (the requester's RNR retries) or
  // the QP not yet at RTR (its retransmissions). Re-examined when either changes.
  std::deque<std::vector<std::byte>> held;
  std::deque<Unacked> unacked;
  std::uint32_t next_seq = 1;
  bool broken = false;  // an error completion moved the QP to the error state

  // Fixed at RTR, as the kernel resolves the source GID attribute at modify_qp time.
  bool connected = false;
  bool times_out = false;  // the model's verdict: RTR passed, traffic never arrives
  std::string times_out_reason;
  std::uint32_t dest_qp_num = 0;
  bool is_global = false;
  Gid dgid;                       // what this side was told the peer's GID is
  std::optional<Gid> source_gid;  // the GID stored at sgid_index at RTR
  std::uint32_t sgid_index = 0;
  std::uint32_t port = 1;
  std::unordered_set<Gid> port_gids;  // the valid GIDs of this QP's port at RTR
  unsigned access_flags = 0;
  std::uint8_t timeout = 0;  // RC: local ACK timeout exponent (4.096 us * 2^timeout)
  std::uint8_t retry_cnt = 0;
};

/// One JSON object per line, appended with a single write() so two processes can share a file.
class ControlLog {
 public:
  ~ControlLog();
  /// Errors: the errno of open().
  int open(const std::string& path) noexcept;
  [[nodiscard]] bool enabled() const noexcept { return fd_ >= 0; }
  void write(const nlohmann::ordered_json& record) const noexcept;

 private:
  int fd_ = -1;
};

/// The process-wide library state. Every exported call takes `mu` (the model has its own lock).
class Library {
 public:
  /// The state, configured from the environment on first use. Never destroyed: a program's
  /// own static destructors may still close devices after main returns.
  static Library& get();

  std::mutex mu;
  bool configured = false;  ///< false: bad configuration, zero devices (the line was printed)
  fakes::FakeVerbs model;
  std::vector<std::unique_ptr<Device>> devices;
  ControlLog log;

  std::unordered_map<const ibv_context*, std::unique_ptr<Context>> contexts;
  std::unordered_map<const ibv_pd*, std::unique_ptr<Pd>> pds;
  std::unordered_map<const ibv_mr*, std::unique_ptr<Mr>> mrs;
  std::unordered_map<std::uint32_t, Mr*> mr_by_key;
  std::unordered_map<const ibv_cq*, std::unique_ptr<Cq>> cqs;
  std::unordered_map<const ibv_comp_channel*, std::unique_ptr<Channel>> channels;
  std::unordered_map<const ibv_qp*, std::unique_ptr<Qp>> qps;
  std::uint32_t next_key = 0x100;
  std::uint32_t next_handle = 1;
  /// The QP number the model's allocator hands out next (the UDP port of the QP's socket).
  std::uint32_t pending_qp_number = 0;

  Context* context(const ibv_context* c);
  Pd* pd(const ibv_pd* p);
  Cq* cq(const ibv_cq* c);
  Qp* qp(const ibv_qp* q);
  Channel* channel(const ibv_comp_channel* c);

  /// A log record with the fields every record has.
  nlohmann::ordered_json record(const char* call, const Device* device) const;

 private:
  Library();
};

/// ibv_gid_entry::gid_type for an entry on a port of `link_layer`, as the kernel reports it: the
/// sysfs type "IB/RoCE v1" is IBV_GID_TYPE_ROCE_V1 on an Ethernet port and IBV_GID_TYPE_IB
/// elsewhere, so a table's ib or unknown type becomes one of those two (the C ABI has no
/// "unknown"); RoCE v2 stays RoCE v2.
std::uint32_t abi_gid_type(GidType type, LinkLayer link_layer) noexcept;
/// The link layer of a device's port (ethernet when the port is unknown).
LinkLayer link_layer_of(const Device& device, std::uint32_t port) noexcept;

/// The errno an Error from the model stands for (a gidpolicy::errc maps to its nearest errno).
int errno_of(const Error& e) noexcept;
/// "ENODATA" etc. in the numbering of the device's driver profile.
std::string errno_name_for(const Device* device, int err);

/// Start watching GIDPOLICY_FAKE_TABLES for rewrites, once per process (async_events.cpp).
void start_table_watch(Library& lib);

// Data path (data_path.cpp).
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc);
int req_notify_cq(ibv_cq* cq, int solicited_only);
/// Add a completion; raises the CQ's event when it is armed. Caller holds Library::mu.
void complete(Library& lib, Cq& cq, const ibv_wc& wc);
/// Register / unregister a QP's sockets with the channels of its CQs. Caller holds Library::mu.
void watch_qp(Qp& qp);
void unwatch_qp(Qp& qp);
/// Stop the CQ's channel from reporting it until the next ibv_req_notify_cq. Caller holds mu.
void disarm_cq(Cq& cq);
/// Re-examine held RC datagrams (a receive was posted, or the QP reached RTR). Caller holds mu.
void retry_held(Library& lib, Qp& qp);
/// Move the QP to the error state: outstanding sends and posted receives complete with
/// IBV_WC_WR_FLUSH_ERR. `tell_model`: also take the model's QP to ERR (when the data path,
/// not ibv_modify_qp, broke it). Caller holds Library::mu.
void enter_error(Library& lib, Qp& qp, bool tell_model);

}  // namespace gidpolicy::fakelib
