// The requester's side of the data path: post_send (a work request checked as the provider and
// the HCA check it, then turned into a message for the transport), and what an RC requester
// does after that: it keeps every request until the responder answers it (Unacked), completes
// it on the ACK, NAK or response, sends it again after an RNR NAK, and fails it when its retry
// budget ends. The rules each of these stands for are listed in data_path.hpp.
#include "data_path.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <string>

namespace gidpolicy::fakelib {
namespace {

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

}  // namespace

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

namespace {

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

}  // namespace

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
      if (q->hw_state == IBV_QPS_ERR) {
        complete(lib, *q->send_cq, make_wc(*q, wr->wr_id, IBV_WC_WR_FLUSH_ERR, wc_op));
        continue;
      }
      if (q->hw_state != IBV_QPS_RTS) return reject(wr, EINVAL);
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

}  // namespace gidpolicy::fakelib
