// The data path's queues as the program sees them: post_recv and post_srq_recv (the receive
// queues), the completion queues (complete, which overruns a full CQ as an HCA does; poll_cq;
// req_notify_cq and the channel's event counter) and the error state that flushes a QP's work
// requests. A queue holds its depth of work requests until their completions are polled.
#include "data_path.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace gidpolicy::fakelib {
namespace {

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
      if (q->hw_state != IBV_QPS_RESET && q->hw_state != IBV_QPS_ERR) enter_error(lib, *q, true);
  }
}

void disarm_cq(Cq& cq) { arm_cq(cq, false); }

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
  if (tell_model && q.hw_state != IBV_QPS_ERR) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    (void)lib.model.modify_qp(q.model, a, IBV_QP_STATE);
    q.hw_state = IBV_QPS_ERR;
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
      if (q->hw_state == IBV_QPS_ERR) {
        complete(lib, *q->recv_cq, make_wc(*q, wr->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV));
        continue;
      }
      // Receives may be posted from INIT on (pingpong does so before RTR), not in RESET.
      if (q->hw_state == IBV_QPS_RESET || wr->num_sge < 0 ||
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
      w.posted_ns = now_ns();
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
      w.posted_ns = now_ns();
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
    if (work) last_inline_poll_ns().store(now_ns(), std::memory_order_relaxed);
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
