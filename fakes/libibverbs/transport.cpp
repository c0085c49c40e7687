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
// fork(): the child of a process with a progress thread has none (threads do not survive
// fork) and its inherited QPs are not usable, as the child of a real verbs process without
// ibv_fork_init() cannot use the parent's registered memory. The child closes its copies of
// the inherited QPs' sockets, so nothing it does (a QP of its own, whose progress thread
// watches every QP, or a poll of an inherited CQ) takes a datagram meant for the parent: the
// HCA writes the parent's pages. The library lock is taken around fork() so the child never
// inherits it held.
#include "data_path.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <type_traits>

namespace gidpolicy::fakelib {
namespace {

constexpr std::uint64_t kWakeToken = ~std::uint64_t{0};

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

void* progress_main(void*) {
  Library& lib = Library::get();
  const int ep = progress().ep;
  epoll_event evs[64];
  int wait_ms = 10;
  for (;;) {
    // At most 10 ms, sooner when an RC timer (retry budget, RNR resend) is due: they fire even
    // when nobody polls.
    if (now_ns() - last_inline_poll_ns().load(std::memory_order_relaxed) < kPollerActiveNs) {
      // A poller is spinning and drains its own QPs: take what accumulated meanwhile, later.
      const timespec pause{0, kDeferNs};
      ::nanosleep(&pause, nullptr);
      wait_ms = 0;
    }
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

void on_exit_stop() {
  stop_progress();
  // Socket files (GIDPOLICY_FAKE_FABRIC) outlive the sockets: a program that exits without
  // destroying its QPs leaves no file behind either.
  if (fabric_dir().empty()) return;
  Library& lib = Library::get();
  std::lock_guard lock(lib.mu);
  for (auto& [k, q] : lib.qps)
    if (q->rx >= 0) remove_qp_address(q->qp.qp_num);
}

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

}  // namespace

void log_drop(Library& lib, const Qp& q, const Wire& h, const std::string& why, const char* result) {
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

// ---- sending ---------------------------------------------------------------------------------

void enqueue(Library& lib, Qp& q, OutMsg&& m) {
  q.outq.push_back(std::move(m));
  if (q.outq.size() == 1) flush(lib, q);
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
      h.sent_ns = now_ns();  // when it goes on the wire, not when it was posted or queued
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

// ---- receiving -------------------------------------------------------------------------------

namespace {

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

}  // namespace

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

// ---- the entry points the resource calls use -----------------------------------------------

std::string& fabric_dir() {
  static std::string dir;
  return dir;
}

void remove_qp_address(std::uint32_t qpn) {
  if (fabric_dir().empty() || qpn == 0) return;
  sockaddr_un a{};
  qp_address(qpn, a);
  ::unlink(a.sun_path);
}

namespace {

// A socket file no socket is bound to any more (its process died): connecting is refused.
bool stale_address(const sockaddr_un& a, socklen_t len) {
  const int probe = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  const bool stale =
      ::connect(probe, reinterpret_cast<const sockaddr*>(&a), len) != 0 && errno == ECONNREFUSED;
  ::close(probe);
  return stale;
}

}  // namespace

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
    // A socket file outlives a process that was killed: one nobody listens on is taken over.
    if (!fabric_dir().empty() && stale_address(a, len)) {
      ::unlink(a.sun_path);
      if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), len) == 0) {
        q.rx = fd;
        return qpn;
      }
      if (errno != EADDRINUSE) break;
    }
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

}  // namespace gidpolicy::fakelib
