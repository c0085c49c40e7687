// Internal state of the drop-in fake libibverbs.so.1 (not installed, not a public header).
//
// The library is the in-process fakes::FakeVerbs model behind the C ABI: devices, ports, GID
// tables, QP numbers, states and RTR verdicts live in the model (one per process, loaded from
// GIDPOLICY_FAKE_TABLES); this layer adds only what a C program needs on top of it: the C
// structs it hands out (ibv_device, ibv_context, ibv_pd, ibv_mr, ibv_cq, ibv_qp, ibv_srq,
// ibv_ah, ibv_comp_channel), memory regions, completion queues, and a data path between
// processes (Unix datagrams and a progress thread per process: transport.cpp and
// the files data_path.hpp names).
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
#include <gidpolicy/fakes/fake_c_core.hpp>
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
inline constexpr int kGidTypeSysfsIbRoceV1 = fakes::c_core::kGidTypeSysfsIbRoceV1;
inline constexpr int kGidTypeSysfsRoceV2 = fakes::c_core::kGidTypeSysfsRoceV2;

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
  std::uint8_t kind;  // data, ack, nak, rnr, read_resp, atomic_resp (data_path.hpp)
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
  // CLOCK_MONOTONIC (one clock for every process on the machine) when this fragment left the
  // sender: the moment it reaches the responder on a wire. A receive posted after it did not
  // exist when the packet arrived, however late the responder's process reads its socket.
  std::int64_t sent_ns;
};

/// rdma-core's struct verbs_device (its private driver.h, not installed): every provider takes an
/// ibv_device to be the head of one. libmlx5's and libefa's dv calls compare `ops` with their
/// own device ops (mlx5dv_query_device, efadv_query_device): NULL, so they answer EOPNOTSUPP
/// instead of reading past a bare ibv_device.
struct VerbsDeviceHead {
  ibv_device dev{};  // its address is what ibv_get_device_list hands out: never moves
  const void* ops = nullptr;
  int refcount = 0;           // atomic_int there: same size and alignment
  void* list_next = nullptr;  // struct list_node
  void* list_prev = nullptr;
  void* sysfs = nullptr;
  std::uint64_t core_support = 0;
};
static_assert(std::is_standard_layout_v<VerbsDeviceHead>);
static_assert(offsetof(VerbsDeviceHead, dev) == 0 && sizeof(VerbsDeviceHead) == sizeof(ibv_device) + 48);

/// What the process counts against the limits ibv_query_device reports (limits.cpp).
struct InUse {
  unsigned pds = 0, cqs = 0, qps = 0, mrs = 0, srqs = 0, ahs = 0;
};

// The verbs_device head comes first: the base of a single, non-virtual inheritance sits at the
// object's start, so &device->dev is the verbs_device a provider casts it to.
struct Device : VerbsDeviceHead {
  std::string name;
  std::vector<std::uint32_t> ports;    // port numbers, in the order the table file lists them
  std::vector<LinkLayer> link_layers;  // per entry of `ports`
  std::uint32_t phys_port_cnt = 0;
  std::uint64_t guid = 0;  // host order
  int index = 0;
  bool thunderbolt = false;
  InUse in_use;  // objects this process holds on the device
};

struct Context {
  // The context is the tail of a struct verbs_context, as every modern provider's is
  // (abi_compat = __VERBS_ABI_IS_EXTENDED, sz set): verbs_get_ctx() and the provider dv
  // libraries dereference it. Its ops are NULL: the verbs.h inlines take their legacy paths
  // (ibv_query_device_ex, ibv_query_port) or answer EOPNOTSUPP (ibv_create_cq_ex ...).
  verbs_context vctx{};
  ibv_context& ctx = vctx.context;
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
  std::int64_t posted_ns = 0;  // CLOCK_MONOTONIC at ibv_post_recv / ibv_post_srq_recv
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
  unsigned users = 0;          // QPs created with it
  std::uint32_t unpolled = 0;  // receives consumed whose completion is not polled yet: still held
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
  // Overrun: a completion found the CQ full (done.size() == cqe). The CQ takes nothing more; the
  // IBV_EVENT_CQ_ERR event and the error state of its QPs follow at the next safe point
  // (settle_overruns), not inside complete(), whose callers may be walking a QP's queues.
  bool overrun = false;
  bool overrun_settled = false;
  int event_fd = -1;  // raised when a completion is added while armed (sends complete locally)
};

/// One piece of an outgoing message: program memory (registered, checked at post time) or
/// bytes the message owns.
struct Piece {
  const std::byte* data = nullptr;
  std::size_t size = 0;
  /// 0: bytes the message owns. Otherwise the key of the region `data` lies in (the lkey of a
  /// requester's SGE, the rkey a read response streams from): every fragment checks that the
  /// region is still registered and covers it before the bytes are read (the HCA's rule after
  /// ibv_dereg_mr).
  std::uint32_t key = 0;
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
  bool write = false;      // an RDMA write: fragments land at remote_addr + offset
  std::uint32_t rkey = 0;  // ... in the region of this key, looked up for every fragment
  std::uint64_t remote_addr = 0;
  ibv_wc_status status = IBV_WC_SUCCESS;
};

struct Qp {
  // The program's struct. Its `state` field is libibverbs', not the HCA's: ibv_modify_qp and
  // ibv_query_qp write it (rdma-core's wrappers do, on success, when the mask has IBV_QP_STATE),
  // nothing else does. A QP the hardware moves to the error state (a retry budget spent, a CQ
  // overrun, a remote access error) still reads RTS there until the program asks, and UCX
  // asserts exactly that before each post.
  ibv_qp qp{};
  // The QP's state as the HCA holds it: what every data-path decision reads.
  ibv_qp_state hw_state = IBV_QPS_RESET;
  Context* owner = nullptr;
  Pd* pd = nullptr;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  Srq* srq = nullptr;
  QpKind kind = QpKind::uc;
  verbs::QpHandle model;
  int rx = -1;  // Unix datagram socket bound to the QP number's abstract address
  int tx = -1;  // connected QPs: a socket connected to the peer's rx (flow control); UD: unconnected
  // The transmit socket, opened with rx at create time and not yet connected: a QP that exists
  // can always reach RTR and send, whatever the program did to its descriptors meanwhile.
  int tx_reserve = -1;
  ibv_qp_init_attr init{};
  std::deque<RecvWr> rq;
  // Queue occupancy as the HCA counts it (libmlx5 frees a slot when poll_cq hands out its
  // completion): a send WR holds its slot until its own completion, or a later one of the same
  // send queue, has been polled (unsignaled WRs retire with the next signaled one); a receive
  // until its completion has been polled. Full: ibv_post_send / ibv_post_recv return ENOMEM.
  std::deque<std::uint64_t> sq_wr_ids;  // outstanding send WRs in post order
  std::uint64_t sq_head = 0;            // the post number of sq_wr_ids.front()
  std::uint64_t sq_generated = 0;       // post number after the last WR a queued completion covers
  std::deque<std::uint64_t> sq_marks;   // per queued send completion: the post number it retires to
  std::uint32_t rq_unpolled = 0;        // receives consumed whose completion is not polled yet
  std::uint32_t srq_unpolled = 0;       // of the SRQ's unpolled receives, those this QP consumed
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

/// One JSON object per line, appended with a single write() so two processes can share a file
/// (control_log.cpp). The log is the fake's own I/O, so it never blocks, never raises SIGPIPE and
/// never changes errno: a FIFO nobody reads yet is opened once a reader comes (retried at most
/// every 100 ms), a full pipe or disk loses the record, and the first loss is said on stderr.
class ControlLog {
 public:
  ControlLog() = default;
  ControlLog(const ControlLog&) = delete;
  ControlLog& operator=(const ControlLog&) = delete;
  ~ControlLog();
  /// Open `path` for appending without blocking. A FIFO without a reader is no error (the open
  /// is retried when a record is written). Errors: the errno of open().
  int open(const std::string& path) noexcept;
  [[nodiscard]] bool enabled() const noexcept { return !path_.empty(); }
  /// Thread-safe: the progress and table-watch threads log too.
  void write(const nlohmann::ordered_json& record) const noexcept;

 private:
  void lost(const char* reason) const noexcept;

  std::string path_;
  mutable std::mutex mu_;
  mutable int fd_ = -1;                    // -1 while a FIFO has no reader
  mutable std::int64_t next_open_ns_ = 0;  // the next retry of a FIFO's open (CLOCK_MONOTONIC)
  mutable bool told_ = false;              // the one "records lost" line was printed
};

/// The process-wide library state. Every exported call takes `mu` (the model has its own lock).
/// The calls GIDPOLICY_FAKE_HANG may name: the ones a program makes to read a device, its ports
/// and GIDs, and to bring a QP up.
inline constexpr const char* kHangableCalls[] = {
    "ibv_get_device_list", "ibv_open_device", "ibv_close_device", "ibv_query_device",
    "ibv_query_port",      "ibv_query_gid",   "ibv_query_gid_ex", "ibv_query_gid_table",
    "ibv_query_gid_type",  "ibv_create_qp",   "ibv_modify_qp"};

class Library {
 public:
  /// The state, configured from the environment on first use. Never destroyed: a program's
  /// own static destructors may still close devices after main returns.
  static Library& get();

  std::mutex mu;
  /// Notified (under `mu`) whenever a completion is queued: a poll_cq that sleeps waits on it.
  std::condition_variable completion;
  bool configured = false;  ///< false: bad configuration, zero devices (the line was printed)
  /// GIDPOLICY_FAKE_HANG: the verbs call that never returns ("" for none), as a wedged port's
  /// driver does not (ibv_devinfo hangs in it). One of kHangableCalls.
  std::string hang;
  /// Blocks the calling thread forever when `call` is the one GIDPOLICY_FAKE_HANG names: before
  /// any lock is taken, so the process's other threads go on, and only a signal ends it.
  void hang_in(const char* call);
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
  // Keys (memory.cpp): the per-process start of the index space, indices issued, freed keys.
  std::uint32_t key_base = 0;
  std::uint32_t keys_issued = 0;
  std::deque<std::uint32_t> freed_keys;
  bool overruns_pending = false;  ///< a CQ overran and settle_overruns() has not seen it yet
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

/// An exported call's frame: `body(lib)` runs with Library::mu held, inside the guard's frame
/// for its return convention (c_guard.hpp, the one guard of every C entry point of the fakes),
/// so an exception is answered in that convention (std::bad_alloc as libibverbs answers running
/// out of memory: NULL with errno ENOMEM from a call returning an object, ENOMEM from one
/// returning an errno). No C++ exception may cross the C ABI, so control-log records (nlohmann
/// JSON, which allocates) are built only inside a frame.
template <class Body>
auto locked_call(Body&& body) noexcept -> decltype(body(std::declval<Library&>())) {
  using Result = decltype(body(std::declval<Library&>()));
  if constexpr (std::is_pointer_v<Result>) {
    return fakes::c_core::pointer_frame([&](int& err) -> Result {
      Library& lib = Library::get();
      std::lock_guard lock(lib.mu);
      Result p = body(lib);
      if (!p) err = errno;  // the body said why
      return p;
    });
  } else {
    return fakes::c_core::errno_frame([&]() -> Result {
      Library& lib = Library::get();
      std::lock_guard lock(lib.mu);
      return body(lib);
    });
  }
}

/// As locked_call for a call returning 0 or a positive errno that also leaves a failure's errno
/// in errno (ibv_modify_qp: c_guard::errno_set_frame).
template <class Body>
int locked_call_setting_errno(Body&& body) noexcept {
  return fakes::c_guard::errno_set_frame([&]() -> int {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    return body(lib);
  });
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

// Memory regions (memory.cpp).
/// ibv_reg_mr's checks, as the kernel makes them: 0, or the errno (EINVAL, EOPNOTSUPP, EFAULT)
/// with `why` set. `access` without the optional-range bits is what is judged.
int validate_registration(const void* addr, std::size_t length, std::uint64_t iova, unsigned access,
                          std::string& why);
/// A fresh key <index, variant> for a new region (lkey == rkey). Caller holds mu.
std::uint32_t allocate_key(Library& lib);
/// Forget a deregistered region's key; its index comes back later with another variant.
void release_key(Library& lib, std::uint32_t key);
/// The registered region of `key` that covers [addr, addr + len) (its iova space when `by_iova`,
/// else its virtual addresses), belongs to `pd` (when given) and allows `need_access` (when
/// non-zero); nullptr otherwise. Caller holds mu.
const Mr* live_region(const Library& lib, std::uint32_t key, const Pd* pd, std::uint64_t addr,
                      std::uint64_t len, bool by_iova, int need_access);
/// Copy into / out of the program's memory without ever faulting: false when a page is not
/// mapped (the program unmapped memory that was still registered).
bool copy_to_program(std::uint64_t addr, const void* src, std::size_t n);
bool copy_from_program(void* dst, std::uint64_t addr, std::size_t n);

/// Start watching GIDPOLICY_FAKE_TABLES for rewrites, once per process (async_events.cpp).
void start_table_watch(Library& lib);

// Data path (transport.cpp, requester.cpp, responder.cpp, completions.cpp; data_path.hpp).
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc);
int req_notify_cq(ibv_cq* cq, int solicited_only);
/// Add a completion; raises the CQ's event when it is armed. A full CQ (cqe completions
/// queued) overruns instead: the completion is lost and the CQ marked, see Cq::overrun. Caller
/// holds Library::mu.
void complete(Library& lib, Cq& cq, const ibv_wc& wc);
/// poll_cq handed out `wc` from `cq`: free the send or receive queue slots it retires.
void retire_polled(Library& lib, const Cq& cq, const ibv_wc& wc);
/// For every CQ that overran since the last call: log it, raise IBV_EVENT_CQ_ERR on its context
/// and move its QPs to the error state, as an HCA does. Called where no QP's queues are being
/// walked (the entry of post_send / post_recv / poll_cq, the progress thread). Caller holds mu.
void settle_overruns(Library& lib);
/// Open the QP's receive socket at a fresh QP number (its abstract Unix address); 0 on failure
/// with errno set. Register / unregister it with the progress thread. Caller holds mu.
std::uint32_t open_qp_socket(Qp& qp);
/// Removes QP `qpn`'s socket file when QPs live in a fabric directory (GIDPOLICY_FAKE_FABRIC;
/// nothing otherwise). Only the process that bound the socket calls it.
void remove_qp_address(std::uint32_t qpn);
/// false (errno set) when the progress thread is not running and could not be started.
bool watch_qp(Library& lib, Qp& qp);
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

/// Free a QP: its sockets, its place on its CQs and SRQ, its model QP (ibv_destroy_qp, and
/// ibv_close_device for the QPs a program left; qp_calls.cpp). Caller holds mu.
void release_qp(Library& lib, Qp& qp);

// Device limits (limits.cpp).
/// What ibv_query_device reports, and what creation enforces: the fake's own figures, capped by
/// what the process's descriptor limit lets the fake honour (a QP costs two sockets, a CQ with a
/// completion channel one eventfd).
/// The C core's limits (fake_c_core.hpp), which ibv_query_device reports.
using DeviceLimits = fakes::c_core::DeviceLimits;
/// The limits of `device`, for this process now. The QP figure is the fake's own ceiling; a
/// driver model's smaller one (Apple: 10 QPs, the 11th EBUSY) is reported by ibv_query_device
/// and enforced by the model.
DeviceLimits device_limits(const Device& device) noexcept;
/// Raise RLIMIT_NOFILE's soft limit to the hard one, once: a QP costs the fake two descriptors
/// and a real device none, so a program that creates 1,000 QPs on hardware must not run out of
/// descriptors on the fake. Returns the soft limit in force.
unsigned long raise_descriptor_limit() noexcept;
/// ENOMEM when `count` objects of `what` already exist against `limit` (logged in `r`, which is
/// written); 0 otherwise.
int over_limit(Library& lib, nlohmann::ordered_json& r, const Device* d, unsigned count, unsigned limit,
               const char* what);

/// The providers (libmlx5, libefa ...) whose constructors called verbs_register_driver_34, in
/// order (abi_helpers.cpp). The fake drives no device through them; they are only logged.
std::vector<std::string> registered_providers();

/// GIDPOLICY_FAKE_HANG's hook, first in each call of kHangableCalls: blocks forever when `call`
/// is the one named (Library::hang_in), returns at once otherwise. Never throws.
void hang_point(const char* call) noexcept;

}  // namespace gidpolicy::fakelib
