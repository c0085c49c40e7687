// Internal state of the drop-in fake libibverbs.so.1 (not installed, not a public header).
//
// The library is the in-process fakes::FakeVerbs model behind the C ABI: devices, ports, GID
// tables, QP numbers, states and RTR verdicts live in the model (one per process, loaded from
// GIDPOLICY_FAKE_TABLES); this layer adds only what a C program needs on top of it: the C
// structs it hands out (ibv_device, ibv_context, ibv_pd, ibv_mr, ibv_cq, ibv_qp, ibv_srq,
// ibv_ah, ibv_comp_channel), memory regions, completion queues, and a data path between
// processes (Unix datagrams and a progress thread per process, data_path.cpp).
//
// Threads: every exported call and the progress thread take Library::mu; the model has its own
// lock, always taken after it (never the other way round).
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

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace gidpolicy::fakelib {

/// rdma-core's private enum ibv_gid_type_sysfs: what ibv_devinfo prints as "RoCE v1" / "RoCE v2".
inline constexpr int kGidTypeSysfsIbRoceV1 = 0;
inline constexpr int kGidTypeSysfsRoceV2 = 1;

/// The largest RC/UC message the data path carries, reported as the port's max_msg_sz: a
/// message travels as fragments of kFragment bytes, so the limit is the device's, not a
/// datagram's.
inline constexpr std::uint64_t kMaxMessage = std::uint64_t{1} << 30;
/// The payload of one fragment on the loopback transport (a Unix datagram).
inline constexpr std::size_t kFragment = std::size_t{256} * 1024;
/// UD messages are single packets: at most the largest path MTU.
inline constexpr std::uint32_t kMaxUdMessage = 4096;
/// UD receive buffers start with the 40-byte GRH, as on RoCE hardware.
inline constexpr std::uint32_t kGrhBytes = 40;
/// Data a QP cannot take yet (no receive posted) is held up to this many bytes per QP.
inline constexpr std::size_t kMaxHeldBytes = std::size_t{256} << 20;

/// What one datagram of the loopback transport starts with. The payload (a fragment of a
/// message, or nothing) follows. No padding: the struct is copied to and from the wire as bytes.
struct Wire {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint8_t kind;  // data, ack, nak, rnr, read_resp, atomic_resp (data_path.cpp)
  std::uint8_t flags;
  std::uint32_t src_qp;
  std::uint32_t dest_qp;
  std::uint32_t opcode;  // ibv_wr_opcode of the request
  std::uint32_t imm;     // as posted (network order)
  std::uint32_t seq;     // the requester's message number, echoed by responses
  std::uint32_t status;  // NAK: the requester's ibv_wc_status; RNR NAK: the responder's min_rnr_timer
  std::uint64_t remote_addr;
  std::uint32_t rkey;
  std::uint32_t gid_type;  // of the sender's source entry: 0 unknown, 1 IB/RoCE v1, 2 RoCE v2
  std::uint64_t total;     // the message's length (reads: the length asked for)
  std::uint64_t offset;    // of this fragment in the message
  std::uint64_t compare_add;
  std::uint64_t swap;
  std::uint32_t qkey;
  std::uint32_t length;   // of this fragment's payload
  std::uint8_t sgid[16];  // the sender's source GID (its table at sgid_index): the GRH
  std::uint8_t dgid[16];  // the GID it addressed
};

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

struct RecvWr {
  std::uint64_t wr_id = 0;
  std::vector<ibv_sge> sge;
};

/// A shared receive queue: receives any QP created with it consumes.
struct Srq {
  ibv_srq srq{};
  Pd* pd = nullptr;
  Context* owner = nullptr;
  std::deque<RecvWr> rq;
  std::uint32_t max_wr = 0;
  std::uint32_t max_sge = 0;
  std::uint32_t limit = 0;
  unsigned users = 0;  // QPs created with it
};

/// An address handle: a UD destination, judged by the driver model when it is created (the
/// kernel resolves the source GID attribute at ibv_create_ah, as at RTR for connected QPs).
struct Ah {
  ibv_ah ah{};
  Pd* pd = nullptr;
  bool is_global = false;
  Gid dgid;
  std::optional<Gid> source_gid;
  GidType source_type = GidType::unknown;
  std::uint32_t port = 1;
  std::uint32_t sgid_index = 0;
  bool times_out = false;
  std::string times_out_reason;
};

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

/// One piece of an outgoing message: program memory (registered, checked at post time) or
/// bytes the message owns.
struct Piece {
  const std::byte* data = nullptr;
  std::size_t size = 0;
};

/// A message on its way out, fragmented when it is written to the transport; `h` is the header
/// every fragment carries, with offset and length filled per fragment.
struct OutMsg {
  Wire h{};
  std::vector<Piece> gather;
  std::size_t piece = 0;  // where the next fragment starts: gather[piece], piece_off bytes in
  std::size_t piece_off = 0;
  std::vector<std::byte> owned;  // inline data / atomic value; `gather` may point into it
  std::uint64_t total = 0;
  std::uint64_t sent = 0;
  std::uint32_t dest_qp = 0;  // UD: the destination QP (connected QPs send on their tx socket)
  std::uint32_t seq = 0;
  bool rc_request = false;          // starts the ACK timer of `seq` when fully written
  bool complete_when_sent = false;  // UC / UD: the send completes when it leaves
  ibv_wc wc{};
};

/// An RC request the responder has not answered yet: an acknowledgement (send, write), the
/// read response (scattered into `local` as it arrives) or the atomic's original value. `msg` is
/// the request as posted, kept until it is answered: an RNR NAK makes the requester send it
/// again, as an HCA retransmits from the NAKed packet.
struct Unacked {
  std::uint32_t seq = 0;
  std::uint64_t wr_id = 0;
  bool signaled = false;
  ibv_wc_opcode opcode = IBV_WC_SEND;
  std::uint32_t length = 0;
  std::vector<ibv_sge> local;    // read / atomic: where the response lands
  std::uint64_t received = 0;    // read: response bytes landed so far
  bool lost = false;             // certainly unanswered: the peer dropped it, or it could not be sent
  unsigned rnr_naks = 0;         // RNR NAKs received for it (the rnr_retry budget)
  std::int64_t deadline_ns = 0;  // the retry budget's end (0: none, attr.timeout 0 waits forever)
  OutMsg msg;
};

/// The message a connected QP is receiving, fragment by fragment.
struct Inbound {
  bool active = false;
  bool dropping = false;  // rejected at its first fragment: the rest is discarded
  std::uint32_t seq = 0;
  std::uint32_t opcode = 0;
  std::uint64_t total = 0;
  bool has_recv = false;
  RecvWr recv;
  std::byte* target = nullptr;  // RDMA write: where offset 0 lands
  ibv_wc_status status = IBV_WC_SUCCESS;
};

struct Qp {
  ibv_qp qp{};
  Context* owner = nullptr;
  Pd* pd = nullptr;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  Srq* srq = nullptr;
  QpKind kind = QpKind::uc;
  verbs::QpHandle model;
  int rx = -1;  // Unix datagram socket bound to the QP number's abstract address
  int tx = -1;  // connected QPs: a socket connected to the peer's rx (flow control); UD: unconnected
  ibv_qp_init_attr init{};
  std::deque<RecvWr> rq;
  // Data this side cannot take yet: no receive posted (the Apple model's UC wait) or the QP not
  // yet at RTR. Kept in arrival order; re-examined when either changes. (RC data that finds no
  // receive is not held: it is RNR-NAKed and the requester sends it again.)
  std::deque<std::vector<std::byte>> held;
  std::size_t held_bytes = 0;
  std::uint32_t rnr_told = 0;  // the seq an RNR NAK was last logged for
  // Responder: the RC message it RNR-NAKed and waits to see again; later messages the requester
  // had already sent are discarded meanwhile (it sends them again after that one). 0: none.
  std::uint32_t rnr_seq = 0;
  // Requester: after an RNR NAK, the requests from `resend_from` on are sent again at
  // `resend_at_ns` (the responder's RNR timer); new posts wait behind them. 0: none.
  std::uint32_t resend_from = 0;
  std::int64_t resend_at_ns = 0;
  // RC: the newest message taken and not yet acknowledged. One cumulative ACK per batch of
  // datagrams (hardware coalesces acknowledgements too); 0: none pending.
  std::uint32_t ack_pending = 0;
  std::uint32_t ack_to_qp = 0;
  std::deque<Unacked> unacked;
  std::deque<OutMsg> outq;
  Inbound in;
  std::uint32_t next_seq = 1;
  bool broken = false;  // an error completion moved the QP to the error state
  std::uint32_t qkey = 0;

  // Fixed at RTR, as the kernel resolves the source GID attribute at modify_qp time.
  bool connected = false;
  bool times_out = false;  // the model's verdict: RTR passed, traffic never arrives
  std::string times_out_reason;
  std::uint32_t dest_qp_num = 0;
  bool is_global = false;
  Gid dgid;                                // what this side was told the peer's GID is
  std::optional<Gid> source_gid;           // the GID stored at sgid_index at RTR
  GidType source_type = GidType::unknown;  // its type: RoCE v1 and v2 packets do not meet
  std::uint32_t sgid_index = 0;
  std::uint32_t port = 1;
  std::unordered_map<Gid, unsigned> port_gids;  // valid GIDs of the port at RTR: mask of wire types
  unsigned access_flags = 0;
  std::uint8_t timeout = 0;  // RC: local ACK timeout exponent (4.096 us * 2^timeout)
  std::uint8_t retry_cnt = 0;
  std::uint8_t rnr_retry = 7;      // RC requester: RNR NAKs retried (7: forever)
  std::uint8_t min_rnr_timer = 0;  // RC responder: the RNR NAK timer code it sends (0: 655.36 ms)
  bool waits_for_receive = false;  // the driver model's UC rule (Apple: wait, Linux: drop)
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
  /// Notified (under `mu`) whenever a completion is queued: a poll_cq that sleeps waits on it.
  std::condition_variable completion;
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
  std::unordered_map<std::uint32_t, Qp*> qp_by_num;
  std::unordered_map<const ibv_srq*, std::unique_ptr<Srq>> srqs;
  std::unordered_map<const ibv_ah*, std::unique_ptr<Ah>> ahs;
  std::uint32_t next_key = 0x100;
  std::uint32_t next_handle = 1;
  /// The QP number the model's allocator hands out next (the name of the QP's socket).
  std::uint32_t pending_qp_number = 0;

  Context* context(const ibv_context* c);
  Pd* pd(const ibv_pd* p);
  Cq* cq(const ibv_cq* c);
  Qp* qp(const ibv_qp* q);
  Channel* channel(const ibv_comp_channel* c);
  Srq* srq(const ibv_srq* s);
  Ah* ah(const ibv_ah* a);

  /// A log record with the fields every record has.
  nlohmann::ordered_json record(const char* call, const Device* device) const;

 private:
  Library();
};

/// An exported call's frame: `body(lib)` runs with Library::mu held, and an exception (only
/// std::bad_alloc can arise) is answered as libibverbs answers running out of memory: NULL with
/// errno ENOMEM from a call returning an object, ENOMEM from one returning an errno. No C++
/// exception may cross the C ABI.
template <class Body>
auto locked_call(Body&& body) noexcept -> decltype(body(std::declval<Library&>())) {
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    return body(lib);
  } catch (...) {
    if constexpr (std::is_pointer_v<decltype(body(std::declval<Library&>()))>) {
      errno = ENOMEM;
      return nullptr;
    } else {
      return ENOMEM;
    }
  }
}

/// ibv_gid_entry::gid_type for an entry on a port of `link_layer`, as the kernel reports it: the
/// sysfs type "IB/RoCE v1" is IBV_GID_TYPE_ROCE_V1 on an Ethernet port and IBV_GID_TYPE_IB
/// elsewhere, so a table's ib or unknown type becomes one of those two (the C ABI has no
/// "unknown"); RoCE v2 stays RoCE v2.
std::uint32_t abi_gid_type(GidType type, LinkLayer link_layer) noexcept;
/// The link layer of a device's port (ethernet when the port is unknown).
LinkLayer link_layer_of(const Device& device, std::uint32_t port) noexcept;

/// The errno an Error from the model stands for (a gidpolicy::errc maps to its nearest errno).
int errno_of(const Error& e) noexcept;
/// "ENODATA" etc. in the numbering of the device's driver model.
std::string errno_name_for(const Device* device, int err);
/// Finish a control-log record `r` for a call that failed with `err`: its result, the errno's
/// name in the device's numbering and, when given, why; then write it.
void fail_record(Library& lib, nlohmann::ordered_json& r, const Device* d, int err,
                 const std::string& reason);

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
/// Open the QP's receive socket at a fresh QP number (its abstract Unix address); 0 on failure
/// with errno set. Register / unregister it with the progress thread. Caller holds mu.
std::uint32_t open_qp_socket(Qp& qp);
void watch_qp(Library& lib, Qp& qp);
void unwatch_qp(Library& lib, Qp& qp);
/// Connect a QP that reached RTR to its peer's socket. Caller holds mu.
void connect_transport(Library& lib, Qp& qp);
/// Stop the progress thread (at exit, and when the last device context closes). Caller must
/// not hold mu.
void stop_progress();
/// Stop the CQ's channel from reporting it until the next ibv_req_notify_cq. Caller holds mu.
void disarm_cq(Cq& cq);
/// Re-examine held RC datagrams (a receive was posted, or the QP reached RTR). Caller holds mu.
void retry_held(Library& lib, Qp& qp);
/// Move the QP to the error state: outstanding sends and posted receives complete with
/// IBV_WC_WR_FLUSH_ERR. `tell_model`: also take the model's QP to ERR (when the data path,
/// not ibv_modify_qp, broke it). Caller holds Library::mu.
void enter_error(Library& lib, Qp& qp, bool tell_model);

/// The providers (libmlx5, libefa ...) whose constructors called verbs_register_driver_34, in
/// order (abi_helpers.cpp). The fake drives no device through them; they are only logged.
std::vector<std::string> registered_providers();

}  // namespace gidpolicy::fakelib
