// The loopback data path: post_send, post_recv, post_srq_recv, poll_cq and req_notify_cq, which
// verbs.h reaches through ibv_context::ops (they have no exported symbols), and the progress
// thread that moves data while the program calls no verb at all.
//
// Transport. Each QP owns a Unix datagram socket bound to an abstract address named after its
// QP number ("\0gidpolicy-fake-qp-<qpn>"); a peer's dest_qp_num is thus an address. A message
// travels as fragments of up to kFragment bytes, each one datagram with a Wire header, so RC and
// UC messages reach kMaxMessage (1 GiB). Unix datagrams are reliable and ordered: a full
// receiver makes the sender wait (EAGAIN) instead of losing data, which is what an RC or a
// credit-less UC stream needs. A connected QP writes through a second socket connect()ed to the
// peer's, so its progress thread is woken (EPOLLOUT) when the peer has room.
//
// Progress. One thread per process (started with the first QP, stopped at exit or when the last
// device context closes) waits on every QP's sockets and, under Library::mu, delivers what
// arrives: RDMA writes and atomics land in the target's memory region, RDMA reads are answered,
// sends fill posted receives, acknowledgements complete the requester's work requests. So a
// passive target (perftest's ib_write_bw server) needs to call nothing. No thread ever blocks
// in a send: what does not fit waits in the QP's out-queue for EPOLLOUT; and every thread
// always drains what arrives (holding what it cannot deliver yet, bounded), so two processes
// writing to each other cannot deadlock. poll_cq drains its QPs too, for latency.
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
//    InfiniBand rule); UD always drops it.
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
//
// fork(): the child of a process with a progress thread has none (threads do not survive
// fork) and its inherited QPs are not usable, as the child of a real verbs process without
// ibv_fork_init() cannot use the parent's registered memory. The child closes its copies of
// the inherited QPs' sockets, so nothing it does (a QP of its own, whose progress thread
// watches every QP, or a poll of an inherited CQ) takes a datagram meant for the parent: the
// HCA writes the parent's pages. The library lock is taken around fork() so the child never
// inherits it held.
#include "fakelib.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <type_traits>

using namespace gidpolicy;
using namespace gidpolicy::fakelib;

namespace gidpolicy::fakelib {
namespace {

static_assert(std::has_unique_object_representations_v<Wire>, "no padding on the wire");
static_assert(std::is_trivially_copyable_v<Wire>);

constexpr std::uint32_t kMagic = 0x56465047;  // "GPFV"
constexpr std::uint16_t kWireVersion = 3;     // 3: RNR NAKs carry min_rnr_timer; RNR-NAKed data is not held
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
constexpr std::uint64_t kWakeToken = ~std::uint64_t{0};

std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

socklen_t qp_address(std::uint32_t qpn, sockaddr_un& a) {
  a = sockaddr_un{};
  a.sun_family = AF_UNIX;
  // Abstract namespace (leading NUL): nothing on disk, gone when the socket closes.
  const int n = std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "gidpolicy-fake-qp-%06x", qpn);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + static_cast<std::size_t>(n));
}

std::uint32_t wire_gid_type(GidType t) {
  if (t == GidType::roce_v2) return 2;
  if (t == GidType::roce_v1 || t == GidType::ib) return 1;
  return 0;
}

const char* wire_gid_type_name(std::uint32_t t) {
  return t == 2 ? "RoCE v2" : t == 1 ? "RoCE v1" : "untyped";
}

// ibv_sge::addr and remote addresses are the program's own addresses, carried as integers by
// the verbs ABI.
std::byte* at_address(std::uint64_t addr) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the verbs ABI carries addresses as integers
  return reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(addr));
}

Mr* find_mr(Library& lib, std::uint32_t key) {
  auto it = lib.mr_by_key.find(key);
  return it == lib.mr_by_key.end() ? nullptr : it->second;
}

bool covers(const Mr& m, std::uint64_t addr, std::uint64_t len, bool by_iova) {
  const std::uint64_t base = by_iova ? m.iova : reinterpret_cast<std::uintptr_t>(m.mr.addr);
  return addr >= base && len <= m.mr.length && addr - base <= m.mr.length - len;
}

ibv_wc make_wc(const Qp& q, std::uint64_t wr_id, ibv_wc_status status, ibv_wc_opcode opcode,
               std::uint32_t len = 0) {
  ibv_wc wc{};
  wc.wr_id = wr_id;
  wc.status = status;
  wc.opcode = opcode;
  wc.byte_len = len;
  wc.qp_num = q.qp.qp_num;
  return wc;
}

ibv_wc_opcode send_wc_opcode(std::uint32_t wr_opcode) {
  switch (wr_opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
      return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      return IBV_WC_FETCH_ADD;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      return IBV_WC_COMP_SWAP;
    default:
      return IBV_WC_SEND;
  }
}

void log_drop(Library& lib, const Qp& q, const Wire& h, const std::string& why,
              const char* result = "dropped") {
  if (!lib.log.enabled()) return;
  auto r = lib.record("deliver", q.owner->device);
  r["qp_num"] = q.qp.qp_num;
  r["from_qp"] = h.src_qp;
  if (h.flags & kHasGrh) {
    r["sgid"] = Gid::from_bytes(h.sgid).to_string();
    r["dgid"] = Gid::from_bytes(h.dgid).to_string();
    r["gid_type"] = wire_gid_type_name(h.gid_type);
  }
  r["result"] = result;
  r["reason"] = why;
  lib.log.write(r);
}

// The RC retry budget: (retry_cnt + 1) tries of 4.096 us * 2^timeout each. 0: timeout 0, the
// requester waits forever (the InfiniBand rule for a local ACK timeout of 0).
std::int64_t retry_budget_ns(const Qp& q) {
  if (q.timeout == 0) return 0;
  const unsigned t = std::min<unsigned>(q.timeout, 31);
  return (std::int64_t{4096} << t) * (static_cast<std::int64_t>(q.retry_cnt) + 1);
}

// The InfiniBand RNR NAK timer encoding (min_rnr_timer 0-31), in units of 10 us: 1 is 0.01 ms,
// 12 is 0.64 ms, 31 is 491.52 ms, and 0 is the longest, 655.36 ms.
std::int64_t rnr_delay_ns(std::uint32_t code) {
  static constexpr std::array<std::int32_t, 32> k10us = {
      65536, 1,   2,   3,   4,    6,    8,    12,   16,   24,   32,   48,    64,    96,    128,   192,
      256,   384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return std::int64_t{k10us[code & 31]} * 10000;
}

// A copy of a message to send again: its pieces that point into the message's own bytes
// (inline data) point into the copy's.
OutMsg copy_msg(const OutMsg& m) {
  OutMsg c = m;
  const std::byte* base = m.owned.data();
  for (Piece& p : c.gather)
    if (!m.owned.empty() && p.data >= base && p.data < base + m.owned.size())
      p.data = c.owned.data() + (p.data - base);
  c.piece = 0;
  c.piece_off = 0;
  c.sent = 0;
  return c;
}

// ---- the progress thread -------------------------------------------------------------------

struct Progress {
  bool running = false;
  bool stopping = false;
  int ep = -1;
  int wake = -1;
  pthread_t thread{};
};

Progress& progress() {
  // Trivially destructible, so no destructor runs at exit (the thread may still be stopping), and
  // no heap block is left behind when a program dlclose()s the library (ds4 does).
  static_assert(std::is_trivially_destructible_v<Progress>);
  static Progress p;
  return p;
}

void drain(Library& lib, Qp& q);
void flush(Library& lib, Qp& q);
std::int64_t expire(Library& lib, Qp& q);

void* progress_main(void*) {
  Library& lib = Library::get();
  const int ep = progress().ep;
  epoll_event evs[64];
  int wait_ms = 10;
  for (;;) {
    // At most 10 ms, sooner when an RC timer (retry budget, RNR resend) is due: they fire even
    // when nobody polls.
    const int n = ::epoll_wait(ep, evs, 64, wait_ms);
    std::lock_guard lock(lib.mu);
    if (progress().stopping) return nullptr;
    for (int i = 0; i < n; ++i) {
      const std::uint64_t token = evs[i].data.u64;
      if (token == kWakeToken) continue;
      auto it = lib.qp_by_num.find(static_cast<std::uint32_t>(token >> 1));
      if (it == lib.qp_by_num.end()) continue;  // destroyed meanwhile
      if (token & 1)
        flush(lib, *it->second);
      else
        drain(lib, *it->second);
    }
    std::int64_t next = 0;
    for (auto& [k, q] : lib.qps) {
      const std::int64_t t = expire(lib, *q);
      if (t != 0 && (next == 0 || t < next)) next = t;
    }
    wait_ms = 10;
    if (next != 0) {
      const std::int64_t ms = (next - now_ns() + 999'999) / 1'000'000;
      wait_ms = static_cast<int>(std::clamp<std::int64_t>(ms, 0, 10));
    }
    settle_overruns(lib);
  }
}

void add_watch(int ep, int fd, std::uint64_t token, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = token;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

void watch_sockets(Progress& p, const Qp& q) {
  const std::uint64_t token = std::uint64_t{q.qp.qp_num} << 1;
  if (q.rx >= 0) add_watch(p.ep, q.rx, token, EPOLLIN | EPOLLET);
  if (q.tx >= 0) add_watch(p.ep, q.tx, token | 1, 0);  // armed by flush() on EAGAIN
}

void on_exit_stop() { stop_progress(); }

void fork_prepare() { Library::get().mu.lock(); }
void fork_parent() { Library::get().mu.unlock(); }
void fork_child() {
  // The thread did not survive the fork; the epoll instance is shared with the parent.
  Progress& p = progress();
  if (p.running) {
    ::close(p.ep);
    ::close(p.wake);
    p = Progress{};
  }
  // The parent's QPs stay the parent's: the child's copies of their sockets go, so neither a
  // progress thread of the child's own nor its polls can read (and acknowledge) their traffic.
  // (The sockets stay open in the parent; a closed copy is invisible to it.)
  Library& lib = Library::get();
  // Threads sleeping in poll_cq did not survive either, but the condition variable still counts
  // them, and glibc's broadcast may wait for counted waiters to leave its group: a fresh one.
  // (The old one is not destroyed, which is undefined with waiters; its memory is reused.)
  // fakelib.datapath.empty_poll_never_waits forks while a thread polls.
  new (&lib.completion) std::condition_variable();
  for (auto& [k, q] : lib.qps) {
    if (q->rx >= 0) ::close(q->rx);
    if (q->tx >= 0) ::close(q->tx);
    q->rx = q->tx = -1;
  }
  lib.mu.unlock();
}

// Caller holds mu.
void ensure_progress(Library& lib) {
  Progress& p = progress();
  if (p.running) return;
  static bool hooks = false;
  if (!hooks) {
    hooks = true;
    std::atexit(on_exit_stop);
    ::pthread_atfork(fork_prepare, fork_parent, fork_child);
  }
  p.ep = ::epoll_create1(EPOLL_CLOEXEC);
  p.wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (p.ep < 0 || p.wake < 0) return;
  add_watch(p.ep, p.wake, kWakeToken, EPOLLIN);
  for (auto& [k, q] : lib.qps) watch_sockets(p, *q);
  // The thread must not take the program's signals (a program's SIGALRM handler, say).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int err = ::pthread_create(&p.thread, nullptr, progress_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (err != 0) {
    ::close(p.ep);
    ::close(p.wake);
    p = Progress{};
    return;
  }
  p.running = true;
}

// ---- sending ---------------------------------------------------------------------------------

void reply(Library& lib, Qp& q, const Wire& req, Kind kind, ibv_wc_status status,
           std::vector<std::byte> payload = {});

void enqueue(Library& lib, Qp& q, OutMsg&& m) {
  q.outq.push_back(std::move(m));
  if (q.outq.size() == 1) flush(lib, q);
}

// A request that could not be handed to the peer: it fails when its retry budget ends.
void mark_lost(Qp& q, std::uint32_t seq) {
  for (Unacked& u : q.unacked)
    if (u.seq == seq) {
      u.lost = true;
      return;
    }
}

// The front message of the out-queue cannot read its memory any more. A read response becomes
// a NAK (remote access error, the responder's R_Key check failing mid-stream); a request of this
// QP ends in a local protection error and the QP in the error state, as an HCA's L_Key check.
void source_gone(Library& lib, Qp& q, const std::string& why) {
  OutMsg m = std::move(q.outq.front());
  q.outq.pop_front();
  log_drop(lib, q, m.h, "not sent further: " + why);
  const auto kind = static_cast<Kind>(m.h.kind);
  if (kind != Kind::data && kind != Kind::read_resp) return;  // owned bytes only: never
  if (kind == Kind::read_resp) {
    OutMsg nak;
    nak.h = m.h;
    nak.h.kind = static_cast<std::uint8_t>(Kind::nak);
    nak.h.status = static_cast<std::uint32_t>(IBV_WC_REM_ACCESS_ERR);
    nak.h.total = 0;
    q.outq.push_front(std::move(nak));
    flush(lib, q);
    return;
  }
  ibv_wc wc = m.wc;
  if (m.rc_request) {
    auto it =
        std::find_if(q.unacked.begin(), q.unacked.end(), [&](const Unacked& u) { return u.seq == m.seq; });
    if (it == q.unacked.end()) return;
    wc = make_wc(q, it->wr_id, IBV_WC_LOC_PROT_ERR, it->opcode);
    q.unacked.erase(it);
  }
  wc.status = IBV_WC_LOC_PROT_ERR;  // error completions are reported even when unsignaled
  complete(lib, *q.send_cq, wc);
  enter_error(lib, q, true);
}

// Write as much of the out-queue as the transport takes now. Never blocks. Caller holds mu.
void flush(Library& lib, Qp& q) {
  while (!q.outq.empty()) {
    OutMsg& m = q.outq.front();
    bool lost = q.tx < 0;
    for (;;) {
      if (lost) break;
      const std::uint64_t frag = std::min<std::uint64_t>(kFragment, m.total - m.sent);
      Wire h = m.h;
      h.offset = m.sent;
      h.length = static_cast<std::uint32_t>(frag);
      iovec iov[1 + 16 + 2];
      std::size_t n = 0;
      iov[n].iov_base = &h;
      iov[n++].iov_len = sizeof h;
      std::size_t piece = m.piece, off = m.piece_off;
      std::uint64_t left = frag;
      const char* gone = nullptr;
      while (left > 0 && piece < m.gather.size() && n < std::size(iov)) {
        const Piece& pc = m.gather[piece];
        const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(left, pc.size - off));
        // The HCA reads a region only while it is registered: checked for every fragment.
        if (pc.key != 0 && !live_region(lib, pc.key, q.pd, reinterpret_cast<std::uintptr_t>(pc.data + off),
                                        take, false, 0)) {
          gone = "the region was deregistered while the message was being sent";
          break;
        }
        iov[n].iov_base = const_cast<std::byte*>(pc.data + off);
        iov[n++].iov_len = take;
        left -= take;
        off += take;
        if (off == pc.size) {
          ++piece;
          off = 0;
        }
      }
      sockaddr_un to{};
      msghdr msg{};
      if (q.kind == QpKind::ud) {
        msg.msg_name = &to;
        msg.msg_namelen = qp_address(m.dest_qp, to);
      }
      msg.msg_iov = iov;
      msg.msg_iovlen = n;
      const ssize_t r = gone ? -1 : ::sendmsg(q.tx, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (gone || (r < 0 && errno == EFAULT)) {
        // The memory this message reads is gone (deregistered, or unmapped while registered).
        source_gone(lib, q,
                    gone ? gone : "a page of the region is no longer mapped (unmapped while registered)");
        return;
      }
      if (r < 0) {
        if ((errno == EAGAIN || errno == ENOBUFS) && q.kind != QpKind::ud) {
          // The peer is full: the progress thread resumes when it has room (one wake-up, not
          // one per datagram the peer reads).
          Progress& p = progress();
          if (p.running) {
            epoll_event ev{};
            ev.events = EPOLLOUT | EPOLLONESHOT;
            ev.data.u64 = (std::uint64_t{q.qp.qp_num} << 1) | 1;
            ::epoll_ctl(p.ep, EPOLL_CTL_MOD, q.tx, &ev);
          }
          return;
        }
        // UD is unreliable (a full receiver loses it); a peer QP that is gone loses everything.
        log_drop(lib, q, h,
                 q.kind == QpKind::ud && errno == EAGAIN
                     ? "the receiver's queue is full (UD drops)"
                     : std::string("no peer QP at that number (") + std::strerror(errno) + ")");
        lost = true;
        break;
      }
      m.sent += frag;
      m.piece = piece;
      m.piece_off = off;
      if (m.sent >= m.total) break;
    }
    if (m.complete_when_sent) complete(lib, *q.send_cq, m.wc);
    if (m.rc_request && lost) mark_lost(q, m.seq);
    q.outq.pop_front();
  }
}

// Send the cumulative ACK a batch of taken messages owes, before anything else this QP answers.
void flush_ack(Library& lib, Qp& q);

void reply(Library& lib, Qp& q, const Wire& req, Kind kind, ibv_wc_status status,
           std::vector<std::byte> payload) {
  if (kind != Kind::ack) flush_ack(lib, q);
  OutMsg m;
  m.h.magic = kMagic;
  m.h.version = kWireVersion;
  m.h.kind = static_cast<std::uint8_t>(kind);
  m.h.src_qp = q.qp.qp_num;
  m.h.dest_qp = req.src_qp;
  m.h.seq = req.seq;
  m.h.opcode = req.opcode;
  m.h.status = static_cast<std::uint32_t>(status);
  m.h.total = payload.size();
  m.owned = std::move(payload);
  m.total = m.owned.size();
  if (!m.owned.empty()) m.gather.push_back({m.owned.data(), m.owned.size()});
  enqueue(lib, q, std::move(m));
}

void flush_ack(Library& lib, Qp& q) {
  if (q.ack_pending == 0) return;
  Wire req{};
  req.src_qp = q.ack_to_qp;
  req.seq = q.ack_pending;
  q.ack_pending = 0;
  reply(lib, q, req, Kind::ack, IBV_WC_SUCCESS);
}

// ---- receiving -------------------------------------------------------------------------------

bool has_receive(const Qp& q) { return q.srq ? !q.srq->rq.empty() : !q.rq.empty(); }

RecvWr take_receive(Qp& q) {
  std::deque<RecvWr>& rq = q.srq ? q.srq->rq : q.rq;
  RecvWr w = std::move(rq.front());
  rq.pop_front();
  return w;
}

// Check a receive's buffers can take `len` bytes.
ibv_wc_status check_receive(Library& lib, const Qp& q, const RecvWr& w, std::uint64_t len) {
  std::uint64_t room = 0;
  for (const ibv_sge& s : w.sge) {
    const Mr* m = find_mr(lib, s.lkey);
    if (!m || m->pd != q.pd || !(m->access & IBV_ACCESS_LOCAL_WRITE) || !covers(*m, s.addr, s.length, false))
      return IBV_WC_LOC_PROT_ERR;
    room += s.length;
  }
  return len > room ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS;
}

// Copy `bytes` to `offset` of the buffers a scatter list describes. Every SGE written is checked
// against the live regions first (registered, in `pd`, local write, covering it) and written
// without faulting: false when one fails (the caller ends the work request in LOC_PROT_ERR).
bool scatter_at(const Library& lib, const Pd* pd, const std::vector<ibv_sge>& sges, std::uint64_t offset,
                std::span<const std::byte> bytes) {
  std::size_t done = 0;
  for (const ibv_sge& s : sges) {
    if (done == bytes.size()) break;
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(s.length - offset, bytes.size() - done));
    if (!live_region(lib, s.lkey, pd, s.addr + offset, n, false, IBV_ACCESS_LOCAL_WRITE) ||
        !copy_to_program(s.addr + offset, bytes.data() + done, n))
      return false;
    done += n;
    offset = 0;
  }
  return true;
}

enum class Outcome { consumed, hold };

// The drop notice (see Kind::dropped): best effort, straight to the sender's socket.
void tell_dropped(const Qp& q, const Wire& req) {
  if (q.rx < 0) return;
  Wire n{};
  n.magic = kMagic;
  n.version = kWireVersion;
  n.kind = static_cast<std::uint8_t>(Kind::dropped);
  n.src_qp = q.qp.qp_num;
  n.dest_qp = req.src_qp;
  n.seq = req.seq;
  sockaddr_un to{};
  const socklen_t len = qp_address(req.src_qp, to);
  [[maybe_unused]] const ssize_t r =
      ::sendto(q.rx, &n, sizeof n, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), len);
}

void finish_inbound(Library& lib, Qp& q, const Wire& h) {
  Inbound& in = q.in;
  in.active = false;
  if (in.has_recv) {
    const bool imm_write = in.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    ibv_wc wc = make_wc(q, in.recv.wr_id, IBV_WC_SUCCESS, imm_write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
                        static_cast<std::uint32_t>(in.total));
    wc.src_qp = h.src_qp;
    if (h.flags & kHasImm) {
      wc.wc_flags |= IBV_WC_WITH_IMM;
      wc.imm_data = h.imm;
    }
    complete(lib, *q.recv_cq, wc);
  }
  if (q.kind == QpKind::rc) {
    q.ack_pending = h.seq;
    q.ack_to_qp = h.src_qp;
  }
}

// A responder whose own receive failed: the requester is told (RC: a NAK with `status`) and this
// QP enters the error state. The acknowledgements it owes and the NAK still leave: the error
// state ends this QP's own requests, not the answers its peer waits for (a lost NAK would leave
// the requester waiting forever).
void nak_and_break(Library& lib, Qp& q, const Wire& h, ibv_wc_status status) {
  flush_ack(lib, q);
  if (q.kind == QpKind::rc) reply(lib, q, h, Kind::nak, status);
  std::deque<OutMsg> answers;
  for (OutMsg& m : q.outq)
    if (static_cast<Kind>(m.h.kind) == Kind::ack || static_cast<Kind>(m.h.kind) == Kind::nak)
      answers.push_back(std::move(m));
  enter_error(lib, q, true);
  q.outq = std::move(answers);
  if (!q.outq.empty()) flush(lib, q);
}

// One fragment's bytes, where the message being received puts them. A region deregistered (or
// memory unmapped) since the message began ends it: an RDMA write is NAKed with a remote access
// error (the R_Key check of every packet), a receive completes in LOC_PROT_ERR and the requester
// gets a remote operational error, as for a bad receive lkey. false: the message was ended.
bool land(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload) {
  if (payload.empty()) return true;
  Inbound& in = q.in;
  if (in.write) {
    const Mr* m = live_region(lib, in.rkey, q.pd, in.remote_addr + h.offset, payload.size(), true,
                              IBV_ACCESS_REMOTE_WRITE);
    const char* why = nullptr;
    if (!m)
      why = "RDMA write: the region was deregistered while the message was arriving";
    else if (!copy_to_program(
                 reinterpret_cast<std::uintptr_t>(m->mr.addr) + (in.remote_addr + h.offset - m->iova),
                 payload.data(), payload.size()))
      why = "RDMA write: a page of the region is no longer mapped (unmapped while registered)";
    if (!why) return true;
    log_drop(lib, q, h, why);
    if (q.kind == QpKind::rc) reply(lib, q, h, Kind::nak, IBV_WC_REM_ACCESS_ERR);
    in.dropping = true;
    in.active = h.offset + h.length < in.total;
    return false;
  }
  if (!in.has_recv || scatter_at(lib, q.pd, in.recv.sge, h.offset, payload)) return true;
  log_drop(lib, q, h,
           "the receive buffer's region was deregistered or unmapped while the message was arriving");
  ibv_wc wc = make_wc(q, in.recv.wr_id, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV);
  complete(lib, *q.recv_cq, wc);
  in.has_recv = false;
  nak_and_break(lib, q, h, IBV_WC_REM_OP_ERR);
  return false;
}

// RNR: an RC message that finds no receive is NAKed with this side's min_rnr_timer and not
// kept (the rest of its fragments, and the messages after it, are discarded until the
// requester sends it again). Logged once per message, not once per retry.
Outcome rnr_nak(Library& lib, Qp& q, const Wire& h, Inbound&& in, bool last) {
  if (q.rnr_told != h.seq) {
    q.rnr_told = h.seq;
    log_drop(lib, q, h, "no receive posted: RNR NAK, the requester sends it again after min_rnr_timer",
             "rnr_nak");
  }
  reply(lib, q, h, Kind::rnr, static_cast<ibv_wc_status>(q.min_rnr_timer));
  q.rnr_seq = h.seq;
  in.dropping = true;
  in.active = !last;
  q.in = std::move(in);
  return Outcome::consumed;
}

// The responder's side of one data fragment on a connected (RC / UC) QP.
Outcome handle_connected(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload) {
  const bool rc = q.kind == QpKind::rc;
  const bool first = h.offset == 0;
  auto drop = [&](const std::string& why) {
    if (first) {
      log_drop(lib, q, h, why);
      tell_dropped(q, h);
    }
    return Outcome::consumed;
  };
  if (q.times_out)
    return drop("this QP's RTR was judged to time out (" + q.times_out_reason +
                "): the path does not exist, nothing arrives and nothing is acknowledged");
  if (!q.connected || (q.qp.state != IBV_QPS_RTR && q.qp.state != IBV_QPS_RTS)) {
    // An RC requester retransmits until the responder is ready; so, under the Apple model, does
    // UC wait. Otherwise UC data that reaches a QP before its RTR is lost.
    if (q.qp.state == IBV_QPS_INIT && (rc || q.waits_for_receive)) return Outcome::hold;
    return drop("the QP is not ready to receive (not at RTR)");
  }
  if (h.src_qp != q.dest_qp_num)
    return drop("sent by QP " + std::to_string(h.src_qp) + ", but this QP is connected to QP " +
                std::to_string(q.dest_qp_num));
  if (q.is_global) {
    if (!(h.flags & kHasGrh)) return drop("no GRH, but this QP routes by GID");
    const Gid src = Gid::from_bytes(h.sgid);
    if (src != q.dgid)
      return drop("source GID " + src.to_string() + " is not the GID the peer advertised (" +
                  q.dgid.to_string() +
                  "): the peer routes from another table entry than the one it told us about");
    const Gid dst = Gid::from_bytes(h.dgid);
    auto it = q.port_gids.find(dst);
    if (it == q.port_gids.end())
      return drop("addressed to " + dst.to_string() + ", which port " + std::to_string(q.port) +
                  " does not hold");
    const std::uint32_t mine = wire_gid_type(q.source_type);
    if (h.gid_type != 0 && mine != 0 && h.gid_type != mine)
      return drop(std::string("a ") + wire_gid_type_name(h.gid_type) + " packet reaches a QP that routes " +
                  wire_gid_type_name(mine) + " (sgid_index " + std::to_string(q.sgid_index) +
                  "): the other encapsulation, dropped, the requester times out");
  }

  // After an RNR NAK the requester sends the NAKed message and all after it again: until that
  // message's first fragment is back, what was already on its way is discarded (in order, as an
  // HCA discards packets past the PSN it NAKed).
  if (rc && q.rnr_seq != 0) {
    if (h.seq != q.rnr_seq) return Outcome::consumed;
    if (first) q.rnr_seq = 0;
  }

  if (!first) {
    if (!q.in.active || q.in.seq != h.seq || q.in.dropping) {
      if (q.in.active && q.in.seq == h.seq && h.offset + h.length >= q.in.total) q.in.active = false;
      return Outcome::consumed;
    }
    if (land(lib, q, h, payload) && h.offset + h.length >= q.in.total) finish_inbound(lib, q, h);
    return Outcome::consumed;
  }

  const auto op = static_cast<ibv_wr_opcode>(h.opcode);
  const bool last = h.length >= h.total;
  Inbound in;
  in.active = true;
  in.seq = h.seq;
  in.opcode = h.opcode;
  in.total = h.total;
  // A message rejected at its first fragment: RC answers with a NAK, UC loses it silently.
  auto reject = [&](const std::string& why, ibv_wc_status nak) {
    log_drop(lib, q, h, why);
    if (rc) reply(lib, q, h, Kind::nak, nak);
    in.dropping = true;
    in.active = !last;
    q.in = std::move(in);
    return Outcome::consumed;
  };
  // nullptr with the message rejected, or the region; a zero-length write or read names none
  // (no R_Key, bounds or region access check applies to zero bytes: UCX flushes with rkey 0),
  // answered by `none`.
  static Mr none;
  auto remote_region = [&](int access, std::uint64_t len, const char* what) -> Mr* {
    Mr* m = find_mr(lib, h.rkey);
    if (!(q.access_flags & static_cast<unsigned>(access))) {
      reject(std::string(what) + ": the QP's access flags do not allow it", IBV_WC_REM_ACCESS_ERR);
      return nullptr;
    }
    if (len == 0 && access != IBV_ACCESS_REMOTE_ATOMIC) return &none;
    if (!m || m->pd != q.pd) {
      reject(std::string(what) + ": rkey " + std::to_string(h.rkey) + " names no region of this QP's PD",
             IBV_WC_REM_ACCESS_ERR);
      return nullptr;
    }
    if (!(m->access & access)) {
      reject(std::string(what) + ": the region's access flags do not allow it", IBV_WC_REM_ACCESS_ERR);
      return nullptr;
    }
    if (!covers(*m, h.remote_addr, len, true)) {
      reject(std::string(what) + ": outside the region (bounds)", IBV_WC_REM_ACCESS_ERR);
      return nullptr;
    }
    return m;
  };

  switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: {
      const bool write = op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
      Mr* m = nullptr;
      if (write) {
        m = remote_region(IBV_ACCESS_REMOTE_WRITE, h.total, "RDMA write");
        if (!m) return Outcome::consumed;
      }
      if (op != IBV_WR_RDMA_WRITE) {
        if (!has_receive(q)) {
          if (rc) return rnr_nak(lib, q, h, std::move(in), last);
          if (q.waits_for_receive) return Outcome::hold;
          log_drop(lib, q, h, "no receive posted: UC drops the message (the InfiniBand rule, Linux model)");
          in.dropping = true;
          in.active = !last;
          q.in = std::move(in);
          return Outcome::consumed;
        }
        in.recv = take_receive(q);
        in.has_recv = true;
        const ibv_wc_status st = check_receive(lib, q, in.recv, write ? 0 : h.total);
        if (st != IBV_WC_SUCCESS) {
          ibv_wc wc = make_wc(q, in.recv.wr_id, st, IBV_WC_RECV, static_cast<std::uint32_t>(h.total));
          complete(lib, *q.recv_cq, wc);
          log_drop(lib, q, h,
                   st == IBV_WC_LOC_LEN_ERR ? "the receive buffer is too short" : "bad receive lkey");
          nak_and_break(lib, q, h, st == IBV_WC_LOC_LEN_ERR ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_REM_OP_ERR);
          return Outcome::consumed;
        }
      }
      if (write) {
        in.write = true;
        in.rkey = h.rkey;
        in.remote_addr = h.remote_addr;
      }
      q.in = std::move(in);
      if (land(lib, q, h, payload) && last) finish_inbound(lib, q, h);
      return Outcome::consumed;
    }
    case IBV_WR_RDMA_READ: {
      if (!rc) return reject("RDMA read on a UC QP", IBV_WC_REM_INV_REQ_ERR);
      if (h.total > kMaxMessage) return reject("RDMA read longer than max_msg_sz", IBV_WC_REM_INV_REQ_ERR);
      Mr* m = remote_region(IBV_ACCESS_REMOTE_READ, h.total, "RDMA read");
      if (!m) return Outcome::consumed;
      // The response streams from the region as it is when it leaves, as a responder's DMA does.
      OutMsg r;
      r.h.magic = kMagic;
      r.h.version = kWireVersion;
      r.h.kind = static_cast<std::uint8_t>(Kind::read_resp);
      r.h.src_qp = q.qp.qp_num;
      r.h.dest_qp = h.src_qp;
      r.h.seq = h.seq;
      r.h.opcode = h.opcode;
      r.h.total = h.total;
      if (h.total)
        r.gather.push_back(
            {static_cast<std::byte*>(m->mr.addr) + (h.remote_addr - m->iova), h.total, h.rkey});
      r.total = h.total;
      enqueue(lib, q, std::move(r));
      return Outcome::consumed;
    }
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_CMP_AND_SWP: {
      if (!rc) return reject("atomic on a UC QP", IBV_WC_REM_INV_REQ_ERR);
      if (h.remote_addr % 8 != 0)
        return reject("atomic on an address not 8-byte aligned", IBV_WC_REM_INV_REQ_ERR);
      Mr* m = remote_region(IBV_ACCESS_REMOTE_ATOMIC, 8, "atomic");
      if (!m) return Outcome::consumed;
      // Atomic with respect to every other access through the fake: all of them hold mu.
      const std::uint64_t p = reinterpret_cast<std::uintptr_t>(m->mr.addr) + (h.remote_addr - m->iova);
      std::uint64_t old = 0;
      std::uint64_t next = 0;
      bool mapped = copy_from_program(&old, p, 8);
      if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
        next = old + h.compare_add;
      else
        next = old == h.compare_add ? h.swap : old;
      mapped = mapped && copy_to_program(p, &next, 8);
      if (!mapped)
        return reject("atomic: the region's page is no longer mapped (unmapped while registered)",
                      IBV_WC_REM_ACCESS_ERR);
      std::vector<std::byte> value(8);
      std::memcpy(value.data(), &old, 8);
      reply(lib, q, h, Kind::atomic_resp, IBV_WC_SUCCESS, std::move(value));
      return Outcome::consumed;
    }
    default:
      return reject("opcode " + std::to_string(h.opcode) + " is not a request this QP takes",
                    IBV_WC_REM_INV_REQ_ERR);
  }
}

// Whether the packet travels as RoCE v2 over IPv4 (an IPv4 header, not an IPv6 one).
bool ipv4_header(const Wire& h) {
  return h.gid_type == 2 && Gid::from_bytes(h.sgid).is_ipv4_mapped() &&
         Gid::from_bytes(h.dgid).is_ipv4_mapped();
}

// The 40 bytes a RoCE NIC writes in front of a UD payload.
std::array<std::byte, kGrhBytes> make_grh(const Wire& h) {
  std::array<std::uint8_t, kGrhBytes> g{};
  const Gid src = Gid::from_bytes(h.sgid);
  const Gid dst = Gid::from_bytes(h.dgid);
  const std::uint32_t payload = 12 + 8 + h.length + 4;  // BTH + DETH + data + ICRC
  if (ipv4_header(h)) {
    // RoCE v2 over IPv4: the IPv4 header sits in the GRH's last 20 bytes.
    std::uint8_t* ip = g.data() + 20;
    const std::uint32_t len = 20 + 8 + payload;
    ip[0] = 0x45;
    ip[2] = static_cast<std::uint8_t>(len >> 8);
    ip[3] = static_cast<std::uint8_t>(len);
    ip[6] = 0x40;           // don't fragment
    ip[8] = 64;             // TTL
    ip[9] = 17;             // UDP
    src.copy_to(g.data());  // scratch: bytes 12-15 are the address
    std::memcpy(ip + 12, g.data() + 12, 4);
    dst.copy_to(g.data());
    std::memcpy(ip + 16, g.data() + 12, 4);
    std::memset(g.data(), 0, 20);
    std::uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    const std::uint16_t csum = static_cast<std::uint16_t>(~sum);
    ip[10] = static_cast<std::uint8_t>(csum >> 8);
    ip[11] = static_cast<std::uint8_t>(csum);
  } else {
    // IPv6 header (RoCE v2) or IBA GRH (RoCE v1, next header 0x1b): same layout.
    g[0] = 0x60;
    g[4] = static_cast<std::uint8_t>(payload >> 8);
    g[5] = static_cast<std::uint8_t>(payload);
    g[6] = h.gid_type == 2 ? 17 : 0x1b;
    g[7] = 64;
    std::memcpy(g.data() + 8, h.sgid, 16);
    std::memcpy(g.data() + 24, h.dgid, 16);
  }
  std::array<std::byte, kGrhBytes> out{};
  std::memcpy(out.data(), g.data(), kGrhBytes);
  return out;
}

void handle_ud(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload) {
  auto drop = [&](const std::string& why) { log_drop(lib, q, h, why); };
  if (!q.connected || (q.qp.state != IBV_QPS_RTR && q.qp.state != IBV_QPS_RTS))
    return drop("the UD QP is not ready to receive (not at RTR)");
  if (static_cast<ibv_wr_opcode>(h.opcode) != IBV_WR_SEND &&
      static_cast<ibv_wr_opcode>(h.opcode) != IBV_WR_SEND_WITH_IMM)
    return drop("not a send");
  if (h.qkey != q.qkey)
    return drop("Q_Key " + std::to_string(h.qkey) + " is not this QP's (" + std::to_string(q.qkey) + ")");
  if (!(h.flags & kHasGrh)) return drop("no GRH, but RoCE routes by GID");
  const Gid dst = Gid::from_bytes(h.dgid);
  auto it = q.port_gids.find(dst);
  if (it == q.port_gids.end())
    return drop("addressed to " + dst.to_string() + ", which port " + std::to_string(q.port) +
                " does not hold");
  if (h.gid_type != 0 && it->second != 0 && !(it->second & (1u << h.gid_type)))
    return drop(std::string("a ") + wire_gid_type_name(h.gid_type) + " packet to " + dst.to_string() +
                ", which port " + std::to_string(q.port) + " holds only as the other type");
  if (!has_receive(q)) return drop("no receive posted: UD drops the datagram");
  RecvWr w = take_receive(q);
  const std::uint32_t len = kGrhBytes + h.length;
  ibv_wc_status st = check_receive(lib, q, w, len);
  ibv_wc wc = make_wc(q, w.wr_id, st, IBV_WC_RECV, len);
  if (st == IBV_WC_SUCCESS) {
    const auto grh = make_grh(h);
    if (!scatter_at(lib, q.pd, w.sge, 0, grh) || !scatter_at(lib, q.pd, w.sge, kGrhBytes, payload))
      wc.status = st = IBV_WC_LOC_PROT_ERR;
  }
  if (st == IBV_WC_SUCCESS) {
    wc.src_qp = h.src_qp;
    wc.wc_flags |= IBV_WC_GRH;
    // libmlx5 reports the RoCE header type in sl: 2 an IPv4 header, 1 IPv6 (RoCE v2), 0 a GRH
    // (RoCE v1, InfiniBand). UCX reads it to find the destination GID in the 40 bytes.
    wc.sl = ipv4_header(h) ? 2 : (h.gid_type == 2 ? 1 : 0);
    if (h.flags & kHasImm) {
      wc.wc_flags |= IBV_WC_WITH_IMM;
      wc.imm_data = h.imm;
    }
  }
  complete(lib, *q.recv_cq, wc);
  if (st != IBV_WC_SUCCESS) enter_error(lib, q, true);
}

// The requester's side of a response.
void handle_reply(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload) {
  auto it =
      std::find_if(q.unacked.begin(), q.unacked.end(), [&](const Unacked& u) { return u.seq == h.seq; });
  if (it == q.unacked.end()) return;  // stale (after a timeout or reset)
  switch (static_cast<Kind>(h.kind)) {
    case Kind::rnr: {
      // rnr_retry retries (7: forever), each after the responder's min_rnr_timer; then the
      // request fails and the QP goes to the error state.
      if (q.rnr_retry != 7 && ++it->rnr_naks > q.rnr_retry) {
        const Unacked u = std::move(*it);
        q.unacked.erase(it);
        complete(lib, *q.send_cq, make_wc(q, u.wr_id, IBV_WC_RNR_RETRY_EXC_ERR, u.opcode));
        enter_error(lib, q, true);
        return;
      }
      // Send it and everything after it again, later: what is still queued waits too.
      q.resend_from = h.seq;
      q.resend_at_ns = now_ns() + rnr_delay_ns(h.status);
      std::erase_if(q.outq, [&](const OutMsg& m) { return m.rc_request && m.seq >= h.seq; });
      return;
    }
    case Kind::dropped: {
      // Fails when the retries would have ended (timeout 0: hardware waits forever, so does this).
      const std::int64_t budget = retry_budget_ns(q);
      it->lost = true;
      it->deadline_ns = budget == 0 ? 0 : now_ns() + budget;
      return;
    }
    case Kind::ack: {
      // Cumulative: every send and write up to this one was taken (reads and atomics end with
      // their responses, which arrive before any later ACK).
      while (!q.unacked.empty() && q.unacked.front().seq <= h.seq) {
        const Unacked& u = q.unacked.front();
        const bool answered =
            u.opcode == IBV_WC_RDMA_READ || u.opcode == IBV_WC_FETCH_ADD || u.opcode == IBV_WC_COMP_SWAP;
        if (!answered && u.signaled)
          complete(lib, *q.send_cq, make_wc(q, u.wr_id, IBV_WC_SUCCESS, u.opcode, u.length));
        q.unacked.pop_front();
      }
      return;
    }
    case Kind::nak: {
      const Unacked u = std::move(*it);
      q.unacked.erase(it);
      complete(lib, *q.send_cq, make_wc(q, u.wr_id, static_cast<ibv_wc_status>(h.status), u.opcode));
      enter_error(lib, q, true);
      return;
    }
    case Kind::read_resp:
    case Kind::atomic_resp: {
      // The local buffers are checked as each fragment lands: deregistered or unmapped since
      // the post, the request ends in a local protection error and nothing more lands.
      const bool read = static_cast<Kind>(h.kind) == Kind::read_resp;
      if ((read || (payload.size() == 8 && !it->local.empty())) &&
          !scatter_at(lib, q.pd, it->local, read ? h.offset : 0, payload)) {
        const Unacked u = std::move(*it);
        q.unacked.erase(it);
        log_drop(lib, q, h, "the response's local region was deregistered or unmapped while it arrived");
        complete(lib, *q.send_cq, make_wc(q, u.wr_id, IBV_WC_LOC_PROT_ERR, u.opcode));
        enter_error(lib, q, true);
        return;
      }
      if (read) {
        it->received += payload.size();
        if (h.offset + h.length < h.total) return;
      }
      break;
    }
    default:
      return;
  }
  const Unacked u = std::move(*it);
  q.unacked.erase(it);
  if (u.signaled) complete(lib, *q.send_cq, make_wc(q, u.wr_id, IBV_WC_SUCCESS, u.opcode, u.length));
}

Outcome handle_data(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload) {
  if (q.kind == QpKind::ud) {
    handle_ud(lib, q, h, payload);
    return Outcome::consumed;
  }
  return handle_connected(lib, q, h, payload);
}

void hold(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> datagram) {
  if (q.held_bytes + datagram.size() > kMaxHeldBytes) {
    log_drop(lib, q, h, "more than " + std::to_string(kMaxHeldBytes) + " bytes wait for receives: overrun");
    if (h.offset == 0) tell_dropped(q, h);
    return;
  }
  // Pointers, not span iterators: libc++ copies a pointer range with one memcpy, but a wrapped
  // iterator range byte by byte (a 5x slower data path in the unoptimised libcxx build).
  q.held.emplace_back(datagram.data(), datagram.data() + datagram.size());
  q.held_bytes += datagram.size();
}

void dispatch(Library& lib, Qp& q, std::span<const std::byte> datagram, bool replay) {
  Wire h{};
  if (datagram.size() < sizeof h) return;
  std::memcpy(&h, datagram.data(), sizeof h);
  if (h.magic != kMagic || h.version != kWireVersion || h.dest_qp != q.qp.qp_num ||
      h.length != datagram.size() - sizeof h)
    return;
  const auto payload = datagram.subspan(sizeof h);
  if (static_cast<Kind>(h.kind) != Kind::data) {
    if (q.kind == QpKind::rc) handle_reply(lib, q, h, payload);
    return;
  }
  // Data behind held data waits too: messages are taken in order.
  if (!replay && !q.held.empty()) {
    hold(lib, q, h, datagram);
    return;
  }
  if (handle_data(lib, q, h, payload) == Outcome::hold) hold(lib, q, h, datagram);
}

// Whether a data fragment passes every check handle_connected makes before it looks at the
// opcode (path verdict, state, source QP, GRH), so it may land without that function. Any doubt
// answers false: the fragment then takes the ordinary path, which logs why it is refused.
bool plainly_accepted(const Qp& q, const Wire& h) {
  if (q.kind == QpKind::ud || q.times_out || !q.connected || !q.held.empty() ||
      (q.qp.state != IBV_QPS_RTR && q.qp.state != IBV_QPS_RTS) || h.src_qp != q.dest_qp_num)
    return false;
  // After an RNR NAK the ordinary path discards what follows the NAKed message until the
  // requester sends it again: nothing may land directly meanwhile.
  if (q.kind == QpKind::rc && q.rnr_seq != 0) return false;
  if (!q.is_global) return true;
  if (!(h.flags & kHasGrh) || Gid::from_bytes(h.sgid) != q.dgid) return false;
  const auto it = q.port_gids.find(Gid::from_bytes(h.dgid));
  const std::uint32_t mine = wire_gid_type(q.source_type);
  return it != q.port_gids.end() && (h.gid_type == 0 || mine == 0 || h.gid_type == mine);
}

// An RDMA write fragment lands straight from the socket into the target region: one copy (the
// kernel's, which answers EFAULT for an unmapped page instead of faulting) rather than two.
// Taken only when the ordinary path would land it unchanged: a plain write (no immediate, so no
// receive) whose region is live, in this QP's PD, allows remote write and covers the whole
// message (first fragment), or the next fragment of the write being received. false: not taken
// (the datagram is still queued). `h`: the datagram's header, peeked.
bool land_write_directly(Library& lib, Qp& q, int fd, const Wire& h, std::size_t datagram_size) {
  if (h.magic != kMagic || h.version != kWireVersion || h.dest_qp != q.qp.qp_num ||
      static_cast<Kind>(h.kind) != Kind::data || h.length == 0 || h.length != datagram_size - sizeof h ||
      h.offset > h.total || h.length > h.total - h.offset || !plainly_accepted(q, h))
    return false;
  const bool first = h.offset == 0;
  if (first) {
    if (h.opcode != IBV_WR_RDMA_WRITE || !(q.access_flags & IBV_ACCESS_REMOTE_WRITE) ||
        !live_region(lib, h.rkey, q.pd, h.remote_addr, h.total, true, IBV_ACCESS_REMOTE_WRITE))
      return false;
  } else if (!q.in.active || !q.in.write || q.in.dropping || q.in.seq != h.seq || q.in.opcode != h.opcode) {
    return false;
  }
  const Mr* m =
      live_region(lib, h.rkey, q.pd, h.remote_addr + h.offset, h.length, true, IBV_ACCESS_REMOTE_WRITE);
  if (!m) return false;  // deregistered meanwhile: the ordinary path ends the message
  Wire copy{};
  iovec iov[2];
  iov[0].iov_base = &copy;
  iov[0].iov_len = sizeof copy;
  iov[1].iov_base = static_cast<std::byte*>(m->mr.addr) + (h.remote_addr + h.offset - m->iova);
  iov[1].iov_len = h.length;
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  const ssize_t r = ::recvmsg(fd, &msg, MSG_DONTWAIT);
  if (r < 0 && errno != EFAULT) return false;  // nothing was taken
  if (first) {
    Inbound in;
    in.active = true;
    in.seq = h.seq;
    in.opcode = h.opcode;
    in.total = h.total;
    in.write = true;
    in.rkey = h.rkey;
    in.remote_addr = h.remote_addr;
    q.in = std::move(in);
  }
  const bool last = h.offset + h.length >= h.total;
  if (r != static_cast<ssize_t>(sizeof h + h.length)) {
    // The datagram is gone and its bytes did not all land: memory unmapped while registered.
    log_drop(lib, q, h, "RDMA write: a page of the region is no longer mapped (unmapped while registered)");
    if (q.kind == QpKind::rc) reply(lib, q, h, Kind::nak, IBV_WC_REM_ACCESS_ERR);
    q.in.dropping = true;
    q.in.active = !last;
    return true;
  }
  if (last) finish_inbound(lib, q, h);
  return true;
}

void drain(Library& lib, Qp& q) {
  static thread_local std::vector<std::byte> buf(sizeof(Wire) + kFragment);
  const std::uint32_t num = q.qp.qp_num;
  for (;;) {
    // The next datagram's header and length (MSG_TRUNC), without taking it.
    Wire h{};
    const ssize_t next = ::recv(q.rx, &h, sizeof h, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
    if (next < 0) break;  // EAGAIN: nothing more
    if (next > static_cast<ssize_t>(sizeof h) &&
        land_write_directly(lib, q, q.rx, h, static_cast<std::size_t>(next)))
      continue;
    const ssize_t n = ::recv(q.rx, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) break;  // EAGAIN: nothing more
    dispatch(lib, q, std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)), false);
    if (lib.qp_by_num.find(num) == lib.qp_by_num.end()) return;
  }
  flush_ack(lib, q);
}

// Whether the peer QP's socket still exists: a connect() to its address succeeds (nothing is
// sent). A process that died, or a QP destroyed, has none.
bool peer_alive(const Qp& q) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;  // no descriptor to look with: assume the peer lives
  sockaddr_un a{};
  const socklen_t len = qp_address(q.dest_qp_num, a);
  const bool refused =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&a), len) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return !refused;
}

// Send the requests an RNR NAK stopped again, in order.
void resend(Library& lib, Qp& q) {
  const std::uint32_t from = q.resend_from;
  q.resend_from = 0;
  q.resend_at_ns = 0;
  for (const Unacked& u : q.unacked)
    if (u.seq >= from) q.outq.push_back(copy_msg(u.msg));
  flush(lib, q);
}

// The RC requester's timers: the RNR resend, and every outstanding request's retry budget (not
// only the oldest's: any of them may be the one the peer never answers). Returns when it must
// run next (0: no timer).
std::int64_t expire(Library& lib, Qp& q) {
  if (q.unacked.empty()) return 0;
  std::int64_t now = now_ns();
  if (q.resend_from != 0 && now >= q.resend_at_ns) {
    resend(lib, q);
    now = now_ns();
  }
  int alive = -1;  // looked up at most once per call
  std::int64_t next = q.resend_from != 0 ? q.resend_at_ns : 0;
  for (auto it = q.unacked.begin(); it != q.unacked.end(); ++it) {
    if (it->deadline_ns == 0) continue;
    if (now < it->deadline_ns) {
      if (next == 0 || it->deadline_ns < next) next = it->deadline_ns;
      continue;
    }
    if (!it->lost) {
      if (alive < 0) alive = peer_alive(q) ? 1 : 0;
      if (alive == 1) {
        it->deadline_ns = now + retry_budget_ns(q);
        if (next == 0 || it->deadline_ns < next) next = it->deadline_ns;
        continue;
      }
    }
    const Unacked u = std::move(*it);
    q.unacked.erase(it);
    complete(lib, *q.send_cq, make_wc(q, u.wr_id, IBV_WC_RETRY_EXC_ERR, u.opcode));
    enter_error(lib, q, true);
    return 0;
  }
  return next;
}

void set_watch(int epfd, int fd, void* cq, bool armed, int op) {
  epoll_event ev{};
  ev.events = armed ? (EPOLLIN | EPOLLONESHOT) : 0u;
  ev.data.ptr = cq;
  ::epoll_ctl(epfd, op, fd, &ev);
}

// A channel is woken only through the CQ's event counter: completions are made by whoever
// drains the sockets (the progress thread or poll_cq), and complete() raises it when armed.
void arm_cq(Cq& c, bool armed) {
  c.armed = armed;
  if (!c.channel || c.event_fd < 0) return;
  if (!armed) {
    std::uint64_t v = 0;
    [[maybe_unused]] const ssize_t n = ::read(c.event_fd, &v, sizeof v);
  } else if (!c.done.empty()) {
    // Completions already waiting: a real CQ raises the event for them when armed.
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(c.event_fd, &one, sizeof one);
  }
  set_watch(c.channel->ch.fd, c.event_fd, &c.cq, armed, EPOLL_CTL_MOD);
}

// Receives posted (to a QP or its SRQ): held data may go now; what then remains in the socket
// was not drained while the held data blocked it, so drain it as well.
void unblock(Library& lib, Qp& q) {
  if (!q.held.empty()) retry_held(lib, q);
  if (q.held.empty() && q.rx >= 0) drain(lib, q);
}

}  // namespace

void complete(Library& lib, Cq& cq, const ibv_wc& wc) {
  // An HCA writes a CQE only into a free slot: a full CQ overruns and takes nothing more.
  if (cq.overrun) return;
  if (cq.done.size() >= static_cast<std::size_t>(std::max(cq.cq.cqe, 1))) {
    cq.overrun = true;
    lib.overruns_pending = true;
    return;
  }
  if (auto it = lib.qp_by_num.find(wc.qp_num); it != lib.qp_by_num.end()) {
    Qp& q = *it->second;
    if (!(wc.opcode & IBV_WC_RECV) && &cq == q.send_cq) {
      // The send WR this completion is for: the first not yet covered with its wr_id (the
      // send queue completes in order). Polling it retires it and every WR before it.
      std::uint64_t mark = q.sq_generated;
      for (std::uint64_t i = std::max(q.sq_generated, q.sq_head); i < q.sq_head + q.sq_wr_ids.size(); ++i)
        if (q.sq_wr_ids[i - q.sq_head] == wc.wr_id) {
          mark = i + 1;
          break;
        }
      q.sq_generated = mark;
      q.sq_marks.push_back(mark);
    } else if ((wc.opcode & IBV_WC_RECV) && &cq == q.recv_cq) {
      if (q.srq) {
        ++q.srq->unpolled;
        ++q.srq_unpolled;
      } else {
        ++q.rq_unpolled;
      }
    }
  }
  cq.done.push_back(wc);
  lib.completion.notify_all();
  if (cq.armed && cq.event_fd >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(cq.event_fd, &one, sizeof one);
  }
}

void retire_polled(Library& lib, const Cq& cq, const ibv_wc& wc) {
  auto it = lib.qp_by_num.find(wc.qp_num);
  if (it == lib.qp_by_num.end()) return;  // destroyed meanwhile
  Qp& q = *it->second;
  if (!(wc.opcode & IBV_WC_RECV) && &cq == q.send_cq) {
    if (q.sq_marks.empty()) return;  // queued before a reset of the QP
    const std::uint64_t mark = q.sq_marks.front();
    q.sq_marks.pop_front();
    while (q.sq_head < mark && !q.sq_wr_ids.empty()) {
      q.sq_wr_ids.pop_front();
      ++q.sq_head;
    }
  } else if ((wc.opcode & IBV_WC_RECV) && &cq == q.recv_cq) {
    if (!q.srq) {
      if (q.rq_unpolled > 0) --q.rq_unpolled;
    } else if (q.srq_unpolled > 0) {
      --q.srq_unpolled;
      --q.srq->unpolled;
    }
  }
}

void settle_overruns(Library& lib) {
  if (!lib.overruns_pending) return;
  lib.overruns_pending = false;
  for (auto& [k, c] : lib.cqs) {
    if (!c->overrun || c->overrun_settled) continue;
    c->overrun_settled = true;
    auto r = lib.record("cq_overrun", c->owner->device);
    r["cqe"] = c->cq.cqe;
    r["result"] = "IBV_EVENT_CQ_ERR";
    r["reason"] = "a completion found the CQ full (" + std::to_string(c->cq.cqe) +
                  " unpolled): it is lost, the CQ's queue pairs move to the error state";
    lib.log.write(r);
    ibv_async_event ev{};
    ev.event_type = IBV_EVENT_CQ_ERR;
    ev.element.cq = &c->cq;
    (void)lib.model.raise_object_event(c->owner->handle, ev);
    const std::vector<Qp*> qps = c->qps;
    for (Qp* q : qps)
      if (q->qp.state != IBV_QPS_RESET && q->qp.state != IBV_QPS_ERR) enter_error(lib, *q, true);
  }
}

void disarm_cq(Cq& cq) { arm_cq(cq, false); }

std::uint32_t open_qp_socket(Qp& q) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  // QP numbers are 24 bits; start from a per-process point and take the first free address.
  static std::uint32_t counter = 0;
  const std::uint32_t span = 0xffffffu - 0x100u;
  const std::uint32_t start = static_cast<std::uint32_t>(::getpid()) * 2654435761u;
  for (int attempt = 0; attempt < 256; ++attempt) {
    const std::uint32_t qpn = 0x100u + (start + 40503u * counter++) % span;
    sockaddr_un a{};
    const socklen_t len = qp_address(qpn, a);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), len) == 0) {
      q.rx = fd;
      return qpn;
    }
    if (errno != EADDRINUSE) break;
  }
  const int err = errno;
  ::close(fd);
  errno = err;
  return 0;
}

bool watch_qp(Library& lib, Qp& q) {
  ensure_progress(lib);
  Progress& p = progress();
  if (p.running) watch_sockets(p, q);
  return p.running;
}

void unwatch_qp(Library&, Qp& q) {
  Progress& p = progress();
  if (!p.running) return;
  if (q.rx >= 0) ::epoll_ctl(p.ep, EPOLL_CTL_DEL, q.rx, nullptr);
  if (q.tx >= 0) ::epoll_ctl(p.ep, EPOLL_CTL_DEL, q.tx, nullptr);
}

void connect_transport(Library& lib, Qp& q) {
  Progress& p = progress();
  // The socket opened at create time (or the one of an earlier RTR, connected anew): no
  // descriptor is taken here, so reaching RTR cannot fail for want of one.
  int fd = q.tx >= 0 ? q.tx : q.tx_reserve;
  if (q.tx >= 0 && p.running) ::epoll_ctl(p.ep, EPOLL_CTL_DEL, q.tx, nullptr);
  q.tx = q.tx_reserve = -1;
  if (fd < 0) fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  // A deep send buffer: fragments in flight are charged to the sender until the peer reads them.
  const int sndbuf = 4 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  if (q.kind != QpKind::ud) {
    sockaddr_un a{};
    const socklen_t len = qp_address(q.dest_qp_num, a);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), len) != 0) {
      // No QP with that number: everything this QP sends is lost (RC then times out).
      if (lib.log.enabled()) {
        auto r = lib.record("deliver", q.owner->device);
        r["qp_num"] = q.qp.qp_num;
        r["dest_qp_num"] = q.dest_qp_num;
        r["result"] = "dropped";
        r["reason"] = "no QP " + std::to_string(q.dest_qp_num) + " to send to";
        lib.log.write(r);
      }
      q.tx_reserve = fd;  // kept for a later RTR (reset and connected again)
      return;
    }
  }
  q.tx = fd;
  if (p.running) add_watch(p.ep, q.tx, (std::uint64_t{q.qp.qp_num} << 1) | 1, 0);  // armed on EAGAIN
}

void stop_progress() {
  Library& lib = Library::get();
  pthread_t t{};
  {
    std::lock_guard lock(lib.mu);
    Progress& p = progress();
    if (!p.running || p.stopping) return;
    p.stopping = true;
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(p.wake, &one, sizeof one);
    t = p.thread;
  }
  ::pthread_join(t, nullptr);
  std::lock_guard lock(lib.mu);
  Progress& p = progress();
  ::close(p.ep);
  ::close(p.wake);
  p = Progress{};
}

void retry_held(Library& lib, Qp& q) {
  struct AckAfter {  // whatever the replay took is acknowledged when it ends
    Library& lib;
    Qp& q;
    ~AckAfter() { flush_ack(lib, q); }
  } ack_after{lib, q};
  while (!q.held.empty()) {
    std::vector<std::byte> d = std::move(q.held.front());
    q.held.pop_front();
    q.held_bytes -= d.size();
    Wire h{};
    std::memcpy(&h, d.data(), sizeof h);
    if (handle_data(lib, q, h, std::span<const std::byte>(d).subspan(sizeof h)) == Outcome::hold) {
      q.held_bytes += d.size();
      q.held.push_front(std::move(d));
      return;
    }
  }
}

void enter_error(Library& lib, Qp& q, bool tell_model) {
  q.broken = true;
  q.resend_from = 0;  // nothing flushed is ever sent again
  q.rnr_seq = 0;
  for (const Unacked& u : q.unacked)
    complete(lib, *q.send_cq, make_wc(q, u.wr_id, IBV_WC_WR_FLUSH_ERR, u.opcode));
  q.unacked.clear();
  for (const OutMsg& m : q.outq)
    if (m.complete_when_sent) {
      ibv_wc wc = m.wc;
      wc.status = IBV_WC_WR_FLUSH_ERR;
      complete(lib, *q.send_cq, wc);
    }
  q.outq.clear();
  for (const RecvWr& w : q.rq)
    complete(lib, *q.recv_cq, make_wc(q, w.wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV));
  q.rq.clear();
  q.held.clear();
  q.held_bytes = 0;
  q.in = Inbound{};
  q.ack_pending = 0;
  if (tell_model && q.qp.state != IBV_QPS_ERR) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    (void)lib.model.modify_qp(q.model, a, IBV_QP_STATE);
    q.qp.state = IBV_QPS_ERR;
  }
}

namespace {
// A UD message is one packet: at most the path MTU, the active MTU of the QP's port (an AH
// carries no MTU of its own); larger is a local length error at the sender.
std::uint64_t ud_path_mtu(Library& lib, const Qp& q) {
  auto info = lib.model.port_attributes(q.owner->handle, q.port);
  return info ? std::uint64_t{mtu_bytes(info.value().active_mtu)} : std::uint64_t{kMaxUdMessage};
}
}  // namespace

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Qp* q = lib.qp(qp);
    if (!q) {
      if (bad_wr) *bad_wr = wr;
      return EINVAL;
    }
    settle_overruns(lib);
    auto reject = [&](ibv_send_wr* w, int err) {
      if (bad_wr) *bad_wr = w;
      if (err != ENOMEM) q->sq_wr_ids.pop_back();  // the WR was taken below: give its slot back
      return err;
    };
    for (; wr; wr = wr->next) {
      // The send queue holds max_send_wr WRs until their completions are polled (the HCA's
      // ring): one more is ENOMEM, the provider's answer for a full queue.
      if (q->sq_wr_ids.size() >= q->init.cap.max_send_wr) return reject(wr, ENOMEM);
      q->sq_wr_ids.push_back(wr->wr_id);
      const bool signaled = (wr->send_flags & IBV_SEND_SIGNALED) || q->init.sq_sig_all;
      const ibv_wc_opcode wc_op = send_wc_opcode(wr->opcode);
      if (q->qp.state == IBV_QPS_ERR) {
        complete(lib, *q->send_cq, make_wc(*q, wr->wr_id, IBV_WC_WR_FLUSH_ERR, wc_op));
        continue;
      }
      if (q->qp.state != IBV_QPS_RTS) return reject(wr, EINVAL);
      const bool is_send = wr->opcode == IBV_WR_SEND || wr->opcode == IBV_WR_SEND_WITH_IMM;
      const bool is_write = wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
      const bool is_read = wr->opcode == IBV_WR_RDMA_READ;
      const bool is_atomic =
          wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP;
      // What each transport supports (a provider rejects the rest at post time).
      const bool supported =
          is_send || (q->kind != QpKind::ud && is_write) || (q->kind == QpKind::rc && (is_read || is_atomic));
      if (!supported) return reject(wr, EINVAL);
      if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > q->init.cap.max_send_sge)
        return reject(wr, EINVAL);
      const bool inl = (wr->send_flags & IBV_SEND_INLINE) && (is_send || is_write);
      std::uint64_t total = 0;
      for (int i = 0; i < wr->num_sge; ++i) total += wr->sg_list[i].length;
      if (inl && total > q->init.cap.max_inline_data) return reject(wr, EINVAL);
      if (is_atomic && (wr->num_sge != 1 || total != 8)) return reject(wr, EINVAL);
      Ah* ah = nullptr;
      if (q->kind == QpKind::ud) {
        ah = lib.ah(wr->wr.ud.ah);
        if (!ah || ah->pd->owner != q->owner) return reject(wr, EINVAL);
      }

      // Local keys and lengths, checked the way the HCA does (inline data needs no key;
      // reads and atomics write their local buffers, which need local write access).
      ibv_wc_status st = IBV_WC_SUCCESS;
      if (total > (q->kind == QpKind::ud ? ud_path_mtu(lib, *q) : kMaxMessage)) st = IBV_WC_LOC_LEN_ERR;
      for (int i = 0; i < wr->num_sge && st == IBV_WC_SUCCESS && !inl; ++i) {
        const ibv_sge& s = wr->sg_list[i];
        const Mr* m = find_mr(lib, s.lkey);
        if (!m || m->pd != q->pd || !covers(*m, s.addr, s.length, false) ||
            ((is_read || is_atomic) && !(m->access & IBV_ACCESS_LOCAL_WRITE)))
          st = IBV_WC_LOC_PROT_ERR;
      }
      if (st != IBV_WC_SUCCESS) {
        complete(lib, *q->send_cq, make_wc(*q, wr->wr_id, st, wc_op));
        enter_error(lib, *q, true);
        continue;
      }

      OutMsg m;
      Wire& h = m.h;
      h.magic = kMagic;
      h.version = kWireVersion;
      h.kind = static_cast<std::uint8_t>(Kind::data);
      h.src_qp = q->qp.qp_num;
      h.dest_qp = q->dest_qp_num;
      h.opcode = static_cast<std::uint32_t>(wr->opcode);
      h.seq = q->next_seq++;
      h.total = total;
      if (wr->opcode == IBV_WR_SEND_WITH_IMM || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
        h.flags |= kHasImm;
        h.imm = wr->imm_data;
      }
      bool path_times_out = q->times_out;
      std::string why = q->times_out_reason;
      if (ah) {
        h.dest_qp = wr->wr.ud.remote_qpn;
        // A Q_Key with the high bit set means "use the QP's own" (the verbs rule).
        h.qkey = (wr->wr.ud.remote_qkey & 0x80000000u) ? q->qkey : wr->wr.ud.remote_qkey;
        if (ah->is_global) {
          h.flags |= kHasGrh;
          if (ah->source_gid) ah->source_gid->copy_to(h.sgid);
          ah->dgid.copy_to(h.dgid);
          h.gid_type = wire_gid_type(ah->source_type);
        }
        path_times_out = ah->times_out;
        why = ah->times_out_reason;
        m.dest_qp = h.dest_qp;
      } else if (q->is_global) {
        h.flags |= kHasGrh;
        if (q->source_gid) q->source_gid->copy_to(h.sgid);
        q->dgid.copy_to(h.dgid);
        h.gid_type = wire_gid_type(q->source_type);
      }
      if (is_write || is_read || is_atomic) {
        h.remote_addr = is_atomic ? wr->wr.atomic.remote_addr : wr->wr.rdma.remote_addr;
        h.rkey = is_atomic ? wr->wr.atomic.rkey : wr->wr.rdma.rkey;
      }
      if (is_atomic) {
        h.compare_add = wr->wr.atomic.compare_add;
        h.swap = wr->wr.atomic.swap;
      }
      if (is_send || is_write) {
        m.total = total;
        if (inl) {
          // Inline data is copied at post time: the program may reuse its buffer at once.
          m.owned.reserve(total);
          for (int i = 0; i < wr->num_sge; ++i) {
            const std::byte* src = at_address(wr->sg_list[i].addr);
            m.owned.insert(m.owned.end(), src, src + wr->sg_list[i].length);
          }
          if (!m.owned.empty()) m.gather.push_back({m.owned.data(), m.owned.size()});
        } else {
          for (int i = 0; i < wr->num_sge; ++i)
            if (wr->sg_list[i].length)
              m.gather.push_back(
                  {at_address(wr->sg_list[i].addr), wr->sg_list[i].length, wr->sg_list[i].lkey});
        }
      }

      if (path_times_out) {
        log_drop(lib, *q, h, "not sent: the driver model judged this path to time out (" + why + ")");
        if (q->kind != QpKind::rc && signaled)
          complete(lib, *q->send_cq,
                   make_wc(*q, wr->wr_id, IBV_WC_SUCCESS, wc_op, static_cast<std::uint32_t>(total)));
        if (q->kind != QpKind::rc) continue;
      }
      m.seq = h.seq;
      if (q->kind == QpKind::rc) {
        // The retry budget runs from the post (the transport takes it at once unless the peer is
        // full); an RC request on a path that does not exist fails when it ends, as its retries
        // would (timeout 0: never).
        const std::int64_t budget = retry_budget_ns(*q);
        Unacked u;
        u.seq = h.seq;
        u.wr_id = wr->wr_id;
        u.signaled = signaled;
        u.opcode = wc_op;
        u.length = static_cast<std::uint32_t>(total);
        u.lost = path_times_out;
        u.deadline_ns = budget == 0 ? 0 : now_ns() + budget;
        if (is_read || is_atomic) u.local.assign(wr->sg_list, wr->sg_list + wr->num_sge);
        m.rc_request = true;
        u.msg = copy_msg(m);
        q->unacked.push_back(std::move(u));
        // Not sent: on a path that does not exist, or (after an RNR NAK) behind the requests
        // that are sent again first.
        if (path_times_out || q->resend_from != 0) continue;
      } else {
        // UC and UD have no acknowledgement: the send completes when it has left (an error
        // completes it even when unsignaled).
        m.complete_when_sent = signaled;
        m.wc = make_wc(*q, wr->wr_id, IBV_WC_SUCCESS, wc_op, static_cast<std::uint32_t>(total));
      }
      enqueue(lib, *q, std::move(m));
    }
    return 0;
  } catch (...) {
    if (bad_wr) *bad_wr = wr;
    return ENOMEM;
  }
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    settle_overruns(lib);
    Qp* q = lib.qp(qp);
    if (!q) {
      if (bad_wr) *bad_wr = wr;
      return EINVAL;
    }
    for (; wr; wr = wr->next) {
      if (q->srq) {  // a QP attached to an SRQ takes receives only from it
        if (bad_wr) *bad_wr = wr;
        return EINVAL;
      }
      if (q->qp.state == IBV_QPS_ERR) {
        complete(lib, *q->recv_cq, make_wc(*q, wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV));
        continue;
      }
      // Receives may be posted from INIT on (pingpong does so before RTR), not in RESET.
      if (q->qp.state == IBV_QPS_RESET || wr->num_sge < 0 ||
          static_cast<std::uint32_t>(wr->num_sge) > q->init.cap.max_recv_sge) {
        if (bad_wr) *bad_wr = wr;
        return EINVAL;
      }
      // Full until the completions of consumed receives are polled, as the HCA's ring.
      if (q->rq.size() + q->rq_unpolled >= q->init.cap.max_recv_wr) {
        if (bad_wr) *bad_wr = wr;
        return ENOMEM;  // the receive queue is full
      }
      RecvWr w;
      w.wr_id = wr->wr_id;
      w.sge.assign(wr->sg_list, wr->sg_list + wr->num_sge);
      q->rq.push_back(std::move(w));
    }
    unblock(lib, *q);
    return 0;
  } catch (...) {
    if (bad_wr) *bad_wr = wr;
    return ENOMEM;
  }
}

int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Srq* s = lib.srq(srq);
    if (!s) {
      if (bad_wr) *bad_wr = wr;
      return EINVAL;
    }
    for (; wr; wr = wr->next) {
      if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > s->max_sge) {
        if (bad_wr) *bad_wr = wr;
        return EINVAL;
      }
      if (s->rq.size() + s->unpolled >= s->max_wr) {
        if (bad_wr) *bad_wr = wr;
        return ENOMEM;
      }
      RecvWr w;
      w.wr_id = wr->wr_id;
      w.sge.assign(wr->sg_list, wr->sg_list + wr->num_sge);
      s->rq.push_back(std::move(w));
    }
    std::vector<Qp*> users;
    for (auto& [k, q] : lib.qps)
      if (q->srq == s) users.push_back(q.get());
    for (Qp* q : users) unblock(lib, *q);
    return 0;
  } catch (...) {
    if (bad_wr) *bad_wr = wr;
    return ENOMEM;
  }
}

int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  // An empty poll costs what it costs on hardware, microseconds, however long the CQ has been
  // idle, and nothing it does to save CPU may delay a completion queued on any CQ. Yet programs
  // spin on ibv_poll_cq (perftest, the pingpongs, JACCL), and on a small machine a spinning
  // poller takes the CPU its peer, or its own progress thread, needs to produce the answer it
  // waits for. So once this thread has polled nothing for kSpinNs, and no CQ of the process
  // holds a completion, an empty poll sleeps up to kWait, woken by the first completion
  // (complete() notifies); then it spins kSpinNs again. The CPU goes to whoever needs it at
  // least part of the time, a completion ends the sleep at once, one already queued on another
  // CQ prevents it, and most empty polls (a loop over many CQs) return without sleeping.
  constexpr std::int64_t kSpinNs = 50'000;
  constexpr auto kWait = std::chrono::microseconds(50);
  static thread_local std::int64_t empty_since = 0;  // this thread's current run of empty polls
  try {
    Library& lib = Library::get();
    // When another thread (the progress thread) holds the lock it is doing the work: wait for
    // it, but do not repeat it.
    std::unique_lock lock(lib.mu, std::try_to_lock);
    const bool work = lock.owns_lock();
    if (!work) lock.lock();
    Cq* c = lib.cq(cq);
    if (!c || num_entries < 0 || (num_entries > 0 && !wc)) return -1;
    if (work && c->done.empty()) {
      // Nothing yet: do the progress thread's work here rather than wait for it to wake.
      for (Qp* q : c->qps) {
        drain(lib, *q);
        if (!q->outq.empty()) flush(lib, *q);
        if (q->send_cq == c) expire(lib, *q);
      }
    }
    if (c->done.empty() && num_entries > 0) {
      const std::int64_t now = now_ns();
      if (empty_since == 0) {
        empty_since = now;
      } else if (now - empty_since >= kSpinNs) {
        const bool queued = std::any_of(lib.cqs.begin(), lib.cqs.end(),
                                        [](const auto& e) { return !e.second->done.empty(); });
        if (!queued) {
          lib.completion.wait_for(lock, kWait);
          c = lib.cq(cq);  // the program may have destroyed it meanwhile (its own race)
          if (!c) return 0;
        }
        empty_since = now_ns();
      }
    }
    int n = 0;
    while (n < num_entries && !c->done.empty()) {
      wc[n] = c->done.front();
      c->done.pop_front();
      retire_polled(lib, *c, wc[n++]);
    }
    settle_overruns(lib);
    if (n > 0) empty_since = 0;
    return n;
  } catch (...) {
    return -1;
  }
}

int req_notify_cq(ibv_cq* cq, int) {
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Cq* c = lib.cq(cq);
    if (!c) return EINVAL;
    arm_cq(*c, true);
    return 0;
  } catch (...) {
    return ENOMEM;
  }
}

}  // namespace gidpolicy::fakelib
