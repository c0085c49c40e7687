// The loopback data path: post_send, post_recv, poll_cq and req_notify_cq, which verbs.h reaches
// through ibv_context::ops (they have no exported symbols).
//
// Each QP owns a UDP socket on 127.0.0.1 whose port is the QP number; a send is one datagram to
// 127.0.0.1:<dest_qp_num>. poll_cq drains the sockets of the CQ's QPs into posted receives.
//
// What the data path enforces, and the hardware behaviour each rule stands for:
//  * A datagram carries the GID stored at the sender's sgid_index at RTR (what the NIC puts in
//    the GRH / IP header) and the GID it was addressed to. The receiver delivers it only when
//    that source GID is the dgid its own RTR was given, i.e. the GID the peer *advertised*:
//    advertise one entry and route from another and the data never arrives (JACCL's literal
//    sgid_index = 1). A datagram addressed to a GID its port does not hold is not delivered
//    either (no such IP on that link).
//  * An RTR the driver profile judged "times out" (a link-local source, a RoCE v1/v2 mismatch)
//    succeeded at modify_qp, but nothing it sends arrives: UC loses it silently, RC completes
//    with IBV_WC_RETRY_EXC_ERR ("transport retry counter exceeded").
//  * RC is acknowledged: a send completes when the responder took it. A responder that cannot
//    accept it (wrong GID, wrong QP) makes the requester's send end in RETRY_EXC_ERR, as a real
//    requester that never sees an ACK does, only without waiting the retry time; a requester
//    whose peer is silent fails after (retry_cnt + 1) * 4.096 us * 2^timeout. Data that finds no
//    receive posted waits (RNR retry); UC drops it.
//  * Bad local keys and short receive buffers end in the completion statuses hardware uses
//    (LOC_PROT_ERR, LOC_LEN_ERR, REM_ACCESS_ERR...).
// Drops are written to the control log ("call": "deliver"), so a run shows why data vanished.
#include "fakelib.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>

using namespace gidpolicy;
using namespace gidpolicy::fakelib;

namespace gidpolicy::fakelib {
namespace {

constexpr std::uint32_t kMagic = 0x56465047;  // "GPFV"
constexpr std::uint16_t kWireVersion = 1;
enum class Kind : std::uint8_t { data = 1, ack = 2, nak = 3 };
constexpr std::uint8_t kHasGrh = 1, kHasImm = 2;

struct Wire {
  std::uint32_t magic;
  std::uint16_t version;
  Kind kind;
  std::uint8_t flags;
  std::uint32_t src_qp;
  std::uint32_t dest_qp;
  std::uint32_t opcode;  // ibv_wr_opcode of the request
  std::uint32_t imm;     // as posted (network order)
  std::uint32_t seq;     // RC: the requester's sequence number, echoed by ACK/NAK
  std::uint32_t status;  // NAK: the ibv_wc_status the requester's send ends with
  std::uint64_t remote_addr;
  std::uint32_t rkey;
  std::uint32_t length;
  std::uint8_t sgid[16];  // the sender's source GID (its table at sgid_index)
  std::uint8_t dgid[16];  // the GID it addressed
};
static_assert(std::has_unique_object_representations_v<Wire>, "no padding on the wire");
static_assert(std::is_trivially_copyable_v<Wire>);

std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool send_to(int sock, std::uint32_t port, const Wire& h, std::span<const std::byte> payload) {
  if (port == 0 || port > 0xffff) return false;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  iovec iov[2];
  iov[0].iov_base = const_cast<Wire*>(&h);
  iov[0].iov_len = sizeof h;
  iov[1].iov_base = const_cast<std::byte*>(payload.data());
  iov[1].iov_len = payload.size();
  msghdr m{};
  m.msg_name = &to;
  m.msg_namelen = sizeof to;
  m.msg_iov = iov;
  m.msg_iovlen = payload.empty() ? 1 : 2;
  return ::sendmsg(sock, &m, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof h + payload.size());
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
  return (wr_opcode == IBV_WR_RDMA_WRITE || wr_opcode == IBV_WR_RDMA_WRITE_WITH_IMM) ? IBV_WC_RDMA_WRITE
                                                                                     : IBV_WC_SEND;
}

void log_drop(Library& lib, const Qp& q, const Wire& h, const std::string& why) {
  if (!lib.log.enabled()) return;
  auto r = lib.record("deliver", q.owner->device);
  r["qp_num"] = q.qp.qp_num;
  r["from_qp"] = h.src_qp;
  if (h.flags & kHasGrh) {
    r["sgid"] = Gid::from_bytes(h.sgid).to_string();
    r["dgid"] = Gid::from_bytes(h.dgid).to_string();
  }
  r["result"] = "dropped";
  r["reason"] = why;
  lib.log.write(r);
}

void reply(const Qp& q, const Wire& req, Kind kind, ibv_wc_status status) {
  Wire h{};
  h.magic = kMagic;
  h.version = kWireVersion;
  h.kind = kind;
  h.src_qp = q.qp.qp_num;
  h.dest_qp = req.src_qp;
  h.seq = req.seq;
  h.status = static_cast<std::uint32_t>(status);
  send_to(q.sock, req.src_qp, h, {});
}

// Scatter `payload` into a receive's SGEs. IBV_WC_SUCCESS or the local error status.
ibv_wc_status scatter(Library& lib, const Qp& q, const RecvWr& w, std::span<const std::byte> payload) {
  std::uint64_t room = 0;
  for (const ibv_sge& s : w.sge) {
    const Mr* m = find_mr(lib, s.lkey);
    if (!m || m->pd != q.pd || !(m->access & IBV_ACCESS_LOCAL_WRITE) || !covers(*m, s.addr, s.length, false))
      return IBV_WC_LOC_PROT_ERR;
    room += s.length;
  }
  if (payload.size() > room) return IBV_WC_LOC_LEN_ERR;
  std::size_t off = 0;
  for (const ibv_sge& s : w.sge) {
    if (off == payload.size()) break;
    const std::size_t n = std::min<std::size_t>(s.length, payload.size() - off);
    // ibv_sge::addr is the program's own address, carried as an integer by the verbs ABI.
    auto* dst =
        reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.addr));  // NOLINT(performance-no-int-to-ptr)
    std::memcpy(dst, payload.data() + off, n);
    off += n;
  }
  return IBV_WC_SUCCESS;
}

enum class Outcome { consumed, hold };

// The responder's side of one data datagram.
Outcome handle_data(Library& lib, Qp& q, const Wire& h, std::span<const std::byte> payload) {
  const bool rc = q.kind == QpKind::rc;
  auto drop = [&](const std::string& why, ibv_wc_status nak) {
    log_drop(lib, q, h, why);
    if (rc) reply(q, h, Kind::nak, nak);
    return Outcome::consumed;
  };
  if (!q.connected || (q.qp.state != IBV_QPS_RTR && q.qp.state != IBV_QPS_RTS)) {
    // A real RC requester retransmits until the responder is ready; UC data is simply lost.
    if (rc && q.qp.state == IBV_QPS_INIT) return Outcome::hold;
    log_drop(lib, q, h, "the QP is not ready to receive (not at RTR)");
    return Outcome::consumed;
  }
  if (h.src_qp != q.dest_qp_num)
    return drop("sent by QP " + std::to_string(h.src_qp) + ", but this QP is connected to QP " +
                    std::to_string(q.dest_qp_num),
                IBV_WC_RETRY_EXC_ERR);
  if (q.is_global) {
    if (!(h.flags & kHasGrh)) return drop("no GRH, but this QP routes by GID", IBV_WC_RETRY_EXC_ERR);
    const Gid src = Gid::from_bytes(h.sgid);
    if (src != q.dgid)
      return drop("source GID " + src.to_string() + " is not the GID the peer advertised (" +
                      q.dgid.to_string() +
                      "): the peer routes from another table entry than the one it told us about",
                  IBV_WC_RETRY_EXC_ERR);
    const Gid dst = Gid::from_bytes(h.dgid);
    if (!q.port_gids.count(dst))
      return drop(
          "addressed to " + dst.to_string() + ", which port " + std::to_string(q.port) + " does not hold",
          IBV_WC_RETRY_EXC_ERR);
  }

  const auto op = static_cast<ibv_wr_opcode>(h.opcode);
  const bool write = op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
  const bool needs_recv = op != IBV_WR_RDMA_WRITE;
  if (needs_recv && q.rq.empty()) {
    if (rc) return Outcome::hold;  // RNR: the requester retries until a receive is posted
    return drop("no receive posted", IBV_WC_SUCCESS);
  }
  if (write) {
    Mr* m = find_mr(lib, h.rkey);
    if (!(q.access_flags & IBV_ACCESS_REMOTE_WRITE) || !m || m->pd != q.pd ||
        !(m->access & IBV_ACCESS_REMOTE_WRITE) || !covers(*m, h.remote_addr, payload.size(), true))
      return drop("RDMA write outside a remotely writable region", IBV_WC_REM_ACCESS_ERR);
    if (!payload.empty()) {
      auto* base = static_cast<std::byte*>(m->mr.addr);
      std::memcpy(base + (h.remote_addr - m->iova), payload.data(), payload.size());
    }
  }
  if (needs_recv) {
    RecvWr w = std::move(q.rq.front());
    q.rq.pop_front();
    ibv_wc_status st = IBV_WC_SUCCESS;
    if (!write) st = scatter(lib, q, w, payload);
    ibv_wc wc = make_wc(q, w.wr_id, st, write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
                        static_cast<std::uint32_t>(payload.size()));
    wc.src_qp = h.src_qp;
    if (h.flags & kHasImm) {
      wc.wc_flags |= IBV_WC_WITH_IMM;
      wc.imm_data = h.imm;
    }
    complete(lib, *q.recv_cq, wc);
    if (st != IBV_WC_SUCCESS) {
      if (rc) reply(q, h, Kind::nak, st == IBV_WC_LOC_LEN_ERR ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_REM_OP_ERR);
      enter_error(lib, q, true);
      return Outcome::consumed;
    }
  }
  if (rc) reply(q, h, Kind::ack, IBV_WC_SUCCESS);
  return Outcome::consumed;
}

// The requester's side of an ACK/NAK.
void handle_reply(Library& lib, Qp& q, const Wire& h) {
  if (q.unacked.empty() || q.unacked.front().seq != h.seq) return;  // stale (after a timeout or reset)
  Unacked u = q.unacked.front();
  q.unacked.pop_front();
  if (h.kind == Kind::ack) {
    if (u.signaled) complete(lib, *q.send_cq, make_wc(q, u.wr_id, IBV_WC_SUCCESS, u.opcode, u.length));
    return;
  }
  complete(lib, *q.send_cq, make_wc(q, u.wr_id, static_cast<ibv_wc_status>(h.status), u.opcode));
  enter_error(lib, q, true);
}

void dispatch(Library& lib, Qp& q, std::span<const std::byte> datagram) {
  Wire h{};
  if (datagram.size() < sizeof h) return;
  std::memcpy(&h, datagram.data(), sizeof h);
  if (h.magic != kMagic || h.version != kWireVersion || h.dest_qp != q.qp.qp_num ||
      h.length != datagram.size() - sizeof h)
    return;
  if (h.kind == Kind::ack || h.kind == Kind::nak) {
    handle_reply(lib, q, h);
    return;
  }
  if (h.kind != Kind::data) return;
  if (handle_data(lib, q, h, datagram.subspan(sizeof h)) == Outcome::hold && q.held.size() < 4096)
    q.held.emplace_back(datagram.begin(), datagram.end());
}

void drain(Library& lib, Qp& q) {
  static thread_local std::vector<std::byte> buf(sizeof(Wire) + kMaxMessage + 1);
  for (;;) {
    const ssize_t n = ::recv(q.sock, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) return;  // EAGAIN: nothing more
    dispatch(lib, q, std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)));
    if (lib.qps.find(&q.qp) == lib.qps.end()) return;
  }
}

// RC sends whose acknowledgement is overdue: retry exceeded.
void expire(Library& lib, Qp& q) {
  if (q.unacked.empty() || q.unacked.front().deadline_ns == 0) return;
  if (now_ns() < q.unacked.front().deadline_ns) return;
  Unacked u = q.unacked.front();
  q.unacked.pop_front();
  complete(lib, *q.send_cq, make_wc(q, u.wr_id, IBV_WC_RETRY_EXC_ERR, u.opcode));
  enter_error(lib, q, true);
}

void set_watch(int epfd, int fd, void* cq, bool armed, int op) {
  epoll_event ev{};
  ev.events = armed ? (EPOLLIN | EPOLLONESHOT) : 0u;
  ev.data.ptr = cq;
  ::epoll_ctl(epfd, op, fd, &ev);
}

void arm_cq(Cq& c, bool armed) {
  c.armed = armed;
  if (!c.channel) return;
  const int epfd = c.channel->ch.fd;
  for (Qp* q : c.qps) {
    if (q->recv_cq == &c) set_watch(epfd, q->sock, &c.cq, armed, EPOLL_CTL_MOD);
    if (q->send_cq == &c && q->recv_cq != &c) set_watch(epfd, q->sock_send, &c.cq, armed, EPOLL_CTL_MOD);
  }
  if (c.event_fd >= 0) {
    if (!armed) {
      std::uint64_t v = 0;
      [[maybe_unused]] const ssize_t n = ::read(c.event_fd, &v, sizeof v);
    }
    set_watch(epfd, c.event_fd, &c.cq, armed, EPOLL_CTL_MOD);
  }
}

}  // namespace

void complete(Library&, Cq& cq, const ibv_wc& wc) {
  cq.done.push_back(wc);
  if (cq.armed && cq.event_fd >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(cq.event_fd, &one, sizeof one);
  }
}

void disarm_cq(Cq& cq) { arm_cq(cq, false); }

void watch_qp(Qp& q) {
  if (q.recv_cq->channel)
    set_watch(q.recv_cq->channel->ch.fd, q.sock, &q.recv_cq->cq, q.recv_cq->armed, EPOLL_CTL_ADD);
  if (q.send_cq != q.recv_cq && q.send_cq->channel)
    set_watch(q.send_cq->channel->ch.fd, q.sock_send, &q.send_cq->cq, q.send_cq->armed, EPOLL_CTL_ADD);
}

void unwatch_qp(Qp& q) {
  if (q.recv_cq && q.recv_cq->channel) ::epoll_ctl(q.recv_cq->channel->ch.fd, EPOLL_CTL_DEL, q.sock, nullptr);
  if (q.send_cq && q.send_cq != q.recv_cq && q.send_cq->channel)
    ::epoll_ctl(q.send_cq->channel->ch.fd, EPOLL_CTL_DEL, q.sock_send, nullptr);
}

void retry_held(Library& lib, Qp& q) {
  std::deque<std::vector<std::byte>> held;
  held.swap(q.held);
  for (const auto& d : held) dispatch(lib, q, d);
}

void enter_error(Library& lib, Qp& q, bool tell_model) {
  q.broken = true;
  for (const Unacked& u : q.unacked)
    complete(lib, *q.send_cq, make_wc(q, u.wr_id, IBV_WC_WR_FLUSH_ERR, u.opcode));
  q.unacked.clear();
  for (const RecvWr& w : q.rq)
    complete(lib, *q.recv_cq, make_wc(q, w.wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV));
  q.rq.clear();
  q.held.clear();
  if (tell_model && q.qp.state != IBV_QPS_ERR) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    (void)lib.model.modify_qp(q.model, a, IBV_QP_STATE);
    q.qp.state = IBV_QPS_ERR;
  }
}

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Qp* q = lib.qp(qp);
    if (!q) {
      if (bad_wr) *bad_wr = wr;
      return EINVAL;
    }
    auto reject = [&](ibv_send_wr* w, int err) {
      if (bad_wr) *bad_wr = w;
      return err;
    };
    for (; wr; wr = wr->next) {
      const bool signaled = (wr->send_flags & IBV_SEND_SIGNALED) || q->init.sq_sig_all;
      const ibv_wc_opcode wc_op = send_wc_opcode(wr->opcode);
      if (q->qp.state == IBV_QPS_ERR) {
        complete(lib, *q->send_cq, make_wc(*q, wr->wr_id, IBV_WC_WR_FLUSH_ERR, wc_op));
        continue;
      }
      if (q->qp.state != IBV_QPS_RTS) return reject(wr, EINVAL);
      if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM &&
          wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM)
        return reject(wr, EOPNOTSUPP);  // reads and atomics need responses the fake does not model
      if (wr->num_sge < 0 || static_cast<std::uint32_t>(wr->num_sge) > q->init.cap.max_send_sge)
        return reject(wr, EINVAL);

      // Gather, checking local keys the way the HCA does (inline data needs no key).
      std::vector<std::byte> packet(sizeof(Wire));
      ibv_wc_status st = IBV_WC_SUCCESS;
      std::uint64_t total = 0;
      for (int i = 0; i < wr->num_sge; ++i) total += wr->sg_list[i].length;
      if ((wr->send_flags & IBV_SEND_INLINE) && total > q->init.cap.max_inline_data)
        return reject(wr, EINVAL);
      if (total > kMaxMessage) st = IBV_WC_LOC_LEN_ERR;
      for (int i = 0; i < wr->num_sge && st == IBV_WC_SUCCESS; ++i) {
        const ibv_sge& s = wr->sg_list[i];
        if (!(wr->send_flags & IBV_SEND_INLINE)) {
          const Mr* m = find_mr(lib, s.lkey);
          if (!m || m->pd != q->pd || !covers(*m, s.addr, s.length, false)) {
            st = IBV_WC_LOC_PROT_ERR;
            break;
          }
        }
        // ibv_sge::addr is the program's own address, carried as an integer by the verbs ABI.
        const auto addr = static_cast<std::uintptr_t>(s.addr);
        const auto* src = reinterpret_cast<const std::byte*>(addr);  // NOLINT(performance-no-int-to-ptr)
        packet.insert(packet.end(), src, src + s.length);
      }
      if (st != IBV_WC_SUCCESS) {
        complete(lib, *q->send_cq, make_wc(*q, wr->wr_id, st, wc_op));
        enter_error(lib, *q, true);
        continue;
      }

      Wire h{};
      h.magic = kMagic;
      h.version = kWireVersion;
      h.kind = Kind::data;
      h.src_qp = q->qp.qp_num;
      h.dest_qp = q->dest_qp_num;
      h.opcode = static_cast<std::uint32_t>(wr->opcode);
      if (wr->opcode == IBV_WR_SEND_WITH_IMM || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
        h.flags |= kHasImm;
        h.imm = wr->imm_data;
      }
      if (q->is_global) {
        h.flags |= kHasGrh;
        if (q->source_gid) q->source_gid->copy_to(h.sgid);
        q->dgid.copy_to(h.dgid);
      }
      if (wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
        h.remote_addr = wr->wr.rdma.remote_addr;
        h.rkey = wr->wr.rdma.rkey;
      }
      h.length = static_cast<std::uint32_t>(packet.size() - sizeof h);
      h.seq = q->next_seq++;
      std::memcpy(packet.data(), &h, sizeof h);

      if (q->times_out) {
        log_drop(
            lib, *q, h,
            "not sent: the driver profile judged this QP's RTR to time out (" + q->times_out_reason + ")");
        if (q->kind == QpKind::rc) {
          complete(lib, *q->send_cq, make_wc(*q, wr->wr_id, IBV_WC_RETRY_EXC_ERR, wc_op));
          enter_error(lib, *q, true);
        } else if (signaled) {
          complete(lib, *q->send_cq, make_wc(*q, wr->wr_id, IBV_WC_SUCCESS, wc_op, h.length));
        }
        continue;
      }
      const bool sent =
          send_to(q->sock, q->dest_qp_num, h, std::span<const std::byte>(packet).subspan(sizeof h));
      if (q->kind == QpKind::uc) {
        // UC has no acknowledgement: the sender completes whether or not anything arrives.
        if (signaled) complete(lib, *q->send_cq, make_wc(*q, wr->wr_id, IBV_WC_SUCCESS, wc_op, h.length));
        continue;
      }
      Unacked u;
      u.seq = h.seq;
      u.wr_id = wr->wr_id;
      u.signaled = signaled;
      u.opcode = wc_op;
      u.length = h.length;
      if (q->timeout != 0 || !sent) {
        const unsigned t = std::min<unsigned>(q->timeout, 31);
        const std::int64_t one = 4096LL << t;  // 4.096 us * 2^timeout, in ns
        u.deadline_ns = now_ns() + one * (static_cast<std::int64_t>(q->retry_cnt) + 1);
      }
      q->unacked.push_back(u);
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
    Qp* q = lib.qp(qp);
    if (!q) {
      if (bad_wr) *bad_wr = wr;
      return EINVAL;
    }
    for (; wr; wr = wr->next) {
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
      if (q->rq.size() >= q->init.cap.max_recv_wr) {
        if (bad_wr) *bad_wr = wr;
        return ENOMEM;  // the receive queue is full
      }
      RecvWr w;
      w.wr_id = wr->wr_id;
      w.sge.assign(wr->sg_list, wr->sg_list + wr->num_sge);
      q->rq.push_back(std::move(w));
    }
    if (!q->held.empty()) retry_held(lib, *q);
    return 0;
  } catch (...) {
    if (bad_wr) *bad_wr = wr;
    return ENOMEM;
  }
}

int post_srq_recv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  if (bad_wr) *bad_wr = wr;
  return EOPNOTSUPP;  // the fake creates no SRQ
}

int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Cq* c = lib.cq(cq);
    if (!c || num_entries < 0 || (num_entries > 0 && !wc)) return -1;
    const std::vector<Qp*> qps = c->qps;  // a completion may destroy nothing, but stay safe
    for (Qp* q : qps) {
      if (lib.qps.find(&q->qp) == lib.qps.end()) continue;
      drain(lib, *q);
      if (q->send_cq == c) expire(lib, *q);
    }
    int n = 0;
    while (n < num_entries && !c->done.empty()) {
      wc[n++] = c->done.front();
      c->done.pop_front();
    }
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
