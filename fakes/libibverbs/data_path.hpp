// The data path's internals, shared by its four files (not installed, not a public header):
// transport.cpp (sockets, the progress thread, fragments out and in, fork), requester.cpp
// (post_send and an RC requester's timers and responses), responder.cpp (what a QP does with the
// data it receives) and completions.cpp (receive queues, CQs, the error state). The wire header
// (Wire), the queues and the C-facing entry points are in fakelib.hpp.
//
// What the data path enforces, and the hardware behaviour each rule stands for:
//  * A packet carries the GID stored at the sender's sgid_index at RTR (the GRH / IP header),
//    the GID it was addressed to and its source entry's GID type. A connected QP delivers it
//    only when that source GID is the dgid its own RTR was given (the GID the peer advertised),
//    the destination is a GID its port holds, and the type is its own: RoCE v1 and v2 are
//    different encapsulations, so a v1 QP and a v2 QP never hear each other.
//  * An RTR (or address handle) the driver model judged "times out" (a link-local source, a
//    RoCE v1/v2 mismatch) succeeded at modify_qp, but the path does not exist in either
//    direction: nothing it sends arrives and it takes (and acknowledges) nothing.
//  * Dropped packets are silent, as on a wire: an RC requester ends in IBV_WC_RETRY_EXC_ERR
//    after (retry_cnt + 1) * 4.096 us * 2^timeout (timeout 0: it waits forever, as hardware).
//    Every request has that deadline from its post. When it passes, a request the responder
//    said it dropped, or the transport could not deliver, fails; otherwise the peer's socket is
//    looked up: gone (the process died, the QP was destroyed) fails it, alive extends the
//    deadline (the peer's progress thread, its "HCA", may just be descheduled on a busy
//    machine). The failing request ends in RETRY_EXC_ERR, the rest are flushed.
//  * Receive semantics per driver model: an RC message that finds no receive posted is
//    RNR-NAKed and not kept: the requester sends it (and everything after it) again after the
//    responder's min_rnr_timer, rnr_retry times (7: forever), then fails it with
//    IBV_WC_RNR_RETRY_EXC_ERR. So a message the requester abandons is never delivered, and a
//    message of any size completes once the receive is posted. Under the Apple Thunderbolt
//    model a UC message waits for its receive; under the Linux model UC drops it (the
//    InfiniBand rule); UD always drops it. "Finds no receive" is judged as of the packet's
//    arrival, which is its send time (Wire::sent_ns): the responder's process may read its
//    socket later, after the program posted a receive, and that receive did not exist when an
//    HCA would have seen the packet.
//  * Remote keys, bounds and access flags are checked by the responder: violations end the
//    requester's work request in IBV_WC_REM_ACCESS_ERR (misaligned atomics and bad lengths in
//    IBV_WC_REM_INV_REQ_ERR); local key and length errors in LOC_PROT_ERR / LOC_LEN_ERR.
//  * UD receives start with the 40-byte GRH as RoCE hardware writes it: an IPv6 header with
//    the source and destination GIDs, or for an IPv4-mapped RoCE v2 GID the IPv4 header in its
//    last 20 bytes; wc.sl carries that header type as libmlx5 reports it. A UD message is one
//    packet: longer than the port's active MTU is LOC_LEN_ERR at the sender.
//  * Program memory is touched only through a region that is registered at that moment, checked
//    for every fragment (an HCA checks keys per packet and never touches a region after
//    ibv_dereg_mr), and only through copies that cannot fault (memory.cpp): a region
//    deregistered or unmapped mid-transfer ends the work request in REM_ACCESS_ERR (remote
//    region), LOC_PROT_ERR (a local SGE) or, for a receive buffer, LOC_PROT_ERR with
//    REM_OP_ERR at the sender. Zero-length RDMA operations name no region and check none.
//    RDMA write fragments (the bulk of one-sided traffic) land straight from the socket:
//    recvmsg into the region is one copy, and the kernel's, which is EFAULT for a missing page.
// Drops are written to the control log ("call": "deliver"), so a run shows why data vanished.
#pragma once

#include "fakelib.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <type_traits>

namespace gidpolicy::fakelib {

static_assert(std::has_unique_object_representations_v<Wire>, "no padding on the wire");
static_assert(std::is_trivially_copyable_v<Wire>);

constexpr std::uint32_t kMagic = 0x56465047;  // "GPFV"
constexpr std::uint16_t kWireVersion = 4;     // 4: fragments carry sent_ns; 3: RNR NAKs carry min_rnr_timer
// `dropped` is the fake's own bookkeeping, not a packet of the protocol: a responder that drops
// a request silently (as a wire would) tells the requester's library, which then starts the
// retry timer. A requester thus never times out merely because a busy machine delayed a live
// responder's ACK, and a dropped request still ends in RETRY_EXC_ERR after the retry budget.
enum class Kind : std::uint8_t {
  data = 1,
  ack = 2,
  nak = 3,
  rnr = 4,
  read_resp = 5,
  atomic_resp = 6,
  dropped = 7
};
constexpr std::uint8_t kHasGrh = 1, kHasImm = 2;

/// What the responder did with a data fragment: taken (landed, answered or dropped), or held
/// until a receive is posted or the QP reaches RTR.
enum class Outcome { consumed, hold };

inline std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

/// CLOCK_MONOTONIC of the last ibv_poll_cq that did the data path's work itself (it held the
/// library lock and drained its CQ's QPs). While a program spins on poll_cq the progress thread
/// stops waiting on the sockets (every datagram would wake it, and on a small machine each wake-up
/// takes the CPU from a spinning poller and contends for the lock it holds); it handles what
/// accumulated every kDeferNs instead, for the QPs no poller drains, and the RC timers.
inline std::atomic<std::int64_t>& last_inline_poll_ns() {
  static std::atomic<std::int64_t> t{0};
  return t;
}
constexpr std::int64_t kPollerActiveNs = 100'000;  // a poll this recent: a poller is spinning
constexpr std::int64_t kDeferNs = 100'000;         // the progress thread's period meanwhile

/// Where QP sockets live: empty for the abstract namespace (the default), else a directory
/// (GIDPOLICY_FAKE_FABRIC, set by `gidpolicy fake-host`). Abstract Unix addresses belong to a
/// network namespace, so processes in two fake hosts with private network namespaces could not
/// reach each other's QPs through them; a socket file in a shared directory is found by its
/// path from any network namespace. Set once, before the first QP.
std::string& fabric_dir();

/// The Unix address of QP `qpn`'s receive socket.
inline socklen_t qp_address(std::uint32_t qpn, sockaddr_un& a) {
  a = sockaddr_un{};
  a.sun_family = AF_UNIX;
  const std::string& dir = fabric_dir();
  if (!dir.empty()) {
    // A path (its length checked when the variable was read): found from every network namespace.
    const int n = std::snprintf(a.sun_path, sizeof a.sun_path, "%s/qp-%06x", dir.c_str(), qpn);
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + static_cast<std::size_t>(n) + 1);
  }
  // Abstract namespace (leading NUL): nothing on disk, gone when the socket closes.
  const int n = std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "gidpolicy-fake-qp-%06x", qpn);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + static_cast<std::size_t>(n));
}

/// A GID type as the wire carries it: 2 RoCE v2, 1 RoCE v1 (or InfiniBand), 0 untyped.
inline std::uint32_t wire_gid_type(GidType t) {
  if (t == GidType::roce_v2) return 2;
  if (t == GidType::roce_v1 || t == GidType::ib) return 1;
  return 0;
}

inline const char* wire_gid_type_name(std::uint32_t t) {
  return t == 2 ? "RoCE v2" : t == 1 ? "RoCE v1" : "untyped";
}

// ibv_sge::addr and remote addresses are the program's own addresses, carried as integers by
// the verbs ABI.
inline std::byte* at_address(std::uint64_t addr) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the verbs ABI carries addresses as integers
  return reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(addr));
}

inline Mr* find_mr(Library& lib, std::uint32_t key) {
  auto it = lib.mr_by_key.find(key);
  return it == lib.mr_by_key.end() ? nullptr : it->second;
}

inline bool covers(const Mr& m, std::uint64_t addr, std::uint64_t len, bool by_iova) {
  const std::uint64_t base = by_iova ? m.iova : reinterpret_cast<std::uintptr_t>(m.mr.addr);
  return addr >= base && len <= m.mr.length && addr - base <= m.mr.length - len;
}

inline ibv_wc make_wc(const Qp& q, std::uint64_t wr_id, ibv_wc_status status, ibv_wc_opcode opcode,
                      std::uint32_t len = 0) {
  ibv_wc wc{};
  wc.wr_id = wr_id;
  wc.status = status;
  wc.opcode = opcode;
  wc.byte_len = len;
  wc.qp_num = q.qp.qp_num;
  return wc;
}

// Transport (transport.cpp). Caller holds Library::mu for all of them.
/// Write a drop to the control log ("call": "deliver") with the packet's addresses and `why`.
void log_drop(Library& lib, const Qp& q, const Wire& h, const std::string& why,
              const char* result = "dropped");
/// Queue a message for the transport and write what fits now.
void enqueue(Library& lib, Qp& q, OutMsg&& m);
/// Write as much of the out-queue as the transport takes now. Never blocks.
void flush(Library& lib, Qp& q);
/// Answer request `req` (an ACK, NAK, RNR NAK or response) with `kind`, `status` and `payload`.
void reply(Library& lib, Qp& q, const Wire& req, Kind kind, ibv_wc_status status,
           std::vector<std::byte> payload = {});
// Send the cumulative ACK a batch of taken messages owes, before anything else this QP answers.
void flush_ack(Library& lib, Qp& q);
/// Tell the requester a request was dropped (see Kind::dropped).
void tell_dropped(const Qp& q, const Wire& req);
/// Take everything waiting in the QP's receive socket.
void drain(Library& lib, Qp& q);

// Requester (requester.cpp).
// The requester's side of a response.
void handle_reply(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload);
// The RC requester's timers: the RNR resend, and every outstanding request's retry budget (not
// only the oldest's: any of them may be the one the peer never answers). Returns when it must
// run next (0: no timer).
std::int64_t expire(Library& lib, Qp& q);

// Responder (responder.cpp).
/// A data fragment, handed to the UD or the connected QP's rules.
Outcome handle_data(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload);
// Copy `bytes` to `offset` of the buffers a scatter list describes. Every SGE written is checked
// against the live regions first (registered, in `pd`, local write, covering it) and written
// without faulting: false when one fails (the caller ends the work request in LOC_PROT_ERR).
bool scatter_at(const Library& lib, const Pd* pd, const std::vector<ibv_sge>& sges, std::uint64_t offset,
                std::span<const std::byte> bytes);
// An RDMA write fragment lands straight from the socket into the target region: one copy (the
// kernel's, which answers EFAULT for an unmapped page instead of faulting) rather than two.
// Taken only when the ordinary path would land it unchanged: a plain write (no immediate, so no
// receive) whose region is live, in this QP's PD, allows remote write and covers the whole
// message (first fragment), or the next fragment of the write being received. false: not taken
// (the datagram is still queued). `h`: the datagram's header, peeked.
bool land_write_directly(Library& lib, Qp& q, int fd, const Wire& h, std::size_t datagram_size);

}  // namespace gidpolicy::fakelib
