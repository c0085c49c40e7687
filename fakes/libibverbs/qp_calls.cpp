// The queue-pair half of the verbs C ABI's resource calls: ibv_create_qp, ibv_modify_qp,
// ibv_query_qp, ibv_destroy_qp. QP numbers, states, attributes and the RTR verdict belong to the
// FakeVerbs model (driver models through judge_rtr / judge_create_qp); this file keeps the C
// ibv_qp and what the data path needs of it, fixed when the QP reaches RTR.
//
// ABI gotchas encoded here:
//  * ibv_modify_qp returns a positive errno (not -1): JACCL-style callers print it as "errno N".
//    On success the library, not the driver, updates ibv_qp::state.
//  * A QP's number names its loopback socket (an abstract Unix address), so a peer's
//    dest_qp_num is an address the data path can send to.
#include "fakelib.hpp"

#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

using namespace gidpolicy;
using namespace gidpolicy::fakelib;

namespace gidpolicy::fakelib {

void release_qp(Library& lib, Qp& q) {
  unwatch_qp(lib, q);
  for (Cq* c : {q.send_cq, q.recv_cq})
    if (c) c->qps.erase(std::remove(c->qps.begin(), c->qps.end(), &q), c->qps.end());
  if (q.tx >= 0) ::close(q.tx);
  if (q.tx_reserve >= 0) ::close(q.tx_reserve);
  if (q.rx >= 0) {
    ::close(q.rx);
    // Only the process that bound the socket removes its file (a fork child closed its copy
    // and set rx to -1: the file is still the parent's).
    remove_qp_address(q.qp.qp_num);
  }
  if (q.srq) {
    --q.srq->users;
    q.srq->unpolled -= q.srq_unpolled;  // the HCA frees them with the QP (libmlx5 cleans its CQEs)
  }
  --q.owner->device->in_use.qps;
  lib.qp_by_num.erase(q.qp.qp_num);
  (void)lib.model.destroy_qp(q.model);
  pthread_cond_destroy(&q.qp.cond);
  pthread_mutex_destroy(&q.qp.mutex);
  lib.qps.erase(&q.qp);
}

}  // namespace gidpolicy::fakelib

namespace {

// The attributes the data path needs, fixed when the QP reaches RTR (the kernel resolves the
// source GID attribute at modify_qp time, so later table changes do not move a connected QP).
void connect_from_model(Library& lib, Qp& q) {
  auto fq = lib.model.qp(q.model);
  if (!fq) return;
  const fakes::FakeQp& m = fq.value();
  q.connected = true;
  q.dest_qp_num = q.kind == QpKind::ud ? 0 : m.attr.dest_qp_num;
  q.is_global = m.attr.ah_attr.is_global != 0;
  q.dgid = Gid::from_bytes(m.attr.ah_attr.grh.dgid.raw);
  q.sgid_index = m.attr.ah_attr.grh.sgid_index;
  q.source_gid = m.source_gid;
  q.port = m.port;
  q.access_flags = m.attr.qp_access_flags;
  q.times_out = m.rtr && m.rtr->outcome == RtrOutcome::times_out;
  q.times_out_reason = m.rtr ? m.rtr->reason : std::string();
  q.port_gids.clear();
  q.source_type = GidType::unknown;
  if (auto t = lib.model.table(q.owner->device->name, q.port)) {
    for (const GidEntry& e : t.value()) {
      if (!e.usable()) continue;
      // Bit 1: IB/RoCE v1, bit 2: RoCE v2 (the wire's numbering); 0: untyped.
      const unsigned bit = e.type == GidType::roce_v2 ? 4u : (e.type == GidType::unknown ? 0u : 2u);
      q.port_gids[e.gid] |= bit;
    }
    if (q.is_global)
      if (const GidEntry* e = t.value().find(q.sgid_index)) q.source_type = e->type;
  }
  q.waits_for_receive = false;
  if (auto p = lib.model.driver_model(q.owner->device->name))
    q.waits_for_receive = q.kind == QpKind::uc && p.value().uc_waits_for_receive;
}

}  // namespace

extern "C" {

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  hang_point("ibv_create_qp");  // GIDPOLICY_FAKE_HANG
  return locked_call([&](Library& lib) -> ibv_qp* {
    Pd* p = lib.pd(pd);
    if (!p) {
      errno = EINVAL;
      return nullptr;
    }
    Context* c = p->owner;
    auto r = lib.record("create_qp", c->device);
    const auto named = attr ? verbs::qp_kind_from_ibv(attr->qp_type) : std::nullopt;
    if (attr)
      r["qp_type"] = named ? std::string(to_string(*named)) : std::to_string(static_cast<int>(attr->qp_type));
    // The checks and their errnos are the C core's, as the in-process C ABI's (fake_c_core.hpp).
    Cq* scq = attr ? lib.cq(attr->send_cq) : nullptr;
    Cq* rcq = attr ? lib.cq(attr->recv_cq) : nullptr;
    Srq* srq = attr && attr->srq ? lib.srq(attr->srq) : nullptr;
    fakes::c_core::QpObjects objects;
    objects.send_cq = scq && scq->owner == c;
    objects.recv_cq = rcq && rcq->owner == c;
    objects.srq = !attr || !attr->srq || (srq && srq->owner == c);
    const DeviceLimits lim = device_limits(*c->device);
    QpKind kind = QpKind::uc;
    std::string why;
    if (const int err =
            fakes::c_core::check_create_qp(attr, objects, lim, c->device->in_use.qps, &kind, &why)) {
      fail_record(lib, r, c->device, err, why);
      errno = err;
      return nullptr;
    }

    // The QP's number names its socket (an abstract Unix address). Both sockets are taken now:
    // a device has no descriptor to run out of at RTR, and a QP that exists must be able to send.
    // Failing here is ENOMEM (the device's "no resources"), never EMFILE.
    auto q = std::make_unique<Qp>();
    const std::uint32_t number = open_qp_socket(*q);
    if (number != 0) q->tx_reserve = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (number == 0 || q->tx_reserve < 0) {
      const std::string cause = std::strerror(errno);
      if (q->rx >= 0) {
        ::close(q->rx);
        remove_qp_address(number);
      }
      fail_record(lib, r, c->device, ENOMEM, "no socket for the QP: " + cause);
      errno = ENOMEM;
      return nullptr;
    }
    lib.pending_qp_number = number;
    verbs::QpHandle h;
    const int created = fakes::c_core::create_qp(lib.model, c->handle, kind, &h, &why);
    lib.pending_qp_number = 0;
    if (created != 0) {
      ::close(q->rx);
      remove_qp_address(number);
      ::close(q->tx_reserve);
      fail_record(lib, r, c->device, created, why);
      errno = created;
      return nullptr;
    }
    q->owner = c;
    q->pd = p;
    q->srq = srq;
    if (srq) ++srq->users;
    q->send_cq = scq;
    q->recv_cq = rcq;
    q->kind = kind;
    q->model = h;
    q->init = *attr;
    q->qp.context = &c->ctx;
    q->qp.qp_context = attr->qp_context;
    q->qp.pd = pd;
    q->qp.send_cq = attr->send_cq;
    q->qp.recv_cq = attr->recv_cq;
    q->qp.srq = attr->srq;
    q->qp.handle = lib.next_handle++;
    q->qp.qp_num = number;
    q->qp.state = IBV_QPS_RESET;
    q->qp.qp_type = attr->qp_type;
    pthread_mutex_init(&q->qp.mutex, nullptr);
    pthread_cond_init(&q->qp.cond, nullptr);
    Qp* raw = q.get();
    ibv_qp* out = &q->qp;
    lib.qps.emplace(out, std::move(q));
    lib.qp_by_num[number] = raw;
    scq->qps.push_back(raw);
    if (rcq != scq) rcq->qps.push_back(raw);
    ++c->device->in_use.qps;
    if (!watch_qp(lib, *raw)) {
      // No progress thread (no epoll instance, eventfd or thread): nothing would ever move.
      const std::string cause = std::strerror(errno);
      release_qp(lib, *raw);
      fail_record(lib, r, c->device, ENOMEM, "the data path's progress thread could not start: " + cause);
      errno = ENOMEM;
      return nullptr;
    }
    r["qp_num"] = number;
    r["result"] = 0;
    lib.log.write(r);
    return out;
  });
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  hang_point("ibv_modify_qp");  // GIDPOLICY_FAKE_HANG
  // The errno is returned and left in errno (the core's errno_set_frame), as the in-process C ABI.
  return locked_call_setting_errno([&](Library& lib) -> int {
    Qp* q = lib.qp(qp);
    if (!q) return EINVAL;
    const Device* d = q->owner->device;
    const ibv_qp_state from = q->hw_state;  // the HCA's: an RTS QP the transport broke is in ERR
    const ibv_qp_state to = attr && (attr_mask & IBV_QP_STATE) ? attr->qp_state : from;
    auto r = lib.record("modify_qp", d);
    r["qp_num"] = q->qp.qp_num;
    r["qp_type"] = to_string(q->kind);
    r["transition"] = fakes::qp_state_name(from) + "->" + fakes::qp_state_name(to);
    r["mask"] = attr_mask;
    r["mask_bits"] = rtr_mask_to_string(attr_mask);
    if (attr && (attr_mask & IBV_QP_AV)) {
      r["is_global"] = attr->ah_attr.is_global;
      if (attr->ah_attr.is_global) {
        r["sgid_index"] = attr->ah_attr.grh.sgid_index;
        r["dgid"] = Gid::from_bytes(attr->ah_attr.grh.dgid.raw).to_string();
      }
      r["port_num"] = attr->ah_attr.port_num;
    }
    if (attr && (attr_mask & IBV_QP_DEST_QPN)) r["dest_qp_num"] = attr->dest_qp_num;

    std::string why;
    if (const int err = fakes::c_core::modify_qp(lib.model, q->model, attr, attr_mask, &why)) {
      fail_record(lib, r, d, err, why);
      return err;
    }
    if (attr_mask & IBV_QP_STATE) q->qp.state = q->hw_state = to;  // as rdma-core's ibv_modify_qp
    if (to == IBV_QPS_RESET) {
      // RESET discards every queued request without completions.
      q->rq.clear();
      q->held.clear();
      q->held_bytes = 0;
      q->unacked.clear();
      q->outq.clear();
      q->in = Inbound{};
      q->ack_pending = 0;
      q->connected = false;
      q->broken = false;
      q->sq_wr_ids.clear();
      q->sq_marks.clear();
      q->sq_head = q->sq_generated = 0;
      q->rq_unpolled = 0;
      if (q->srq) q->srq->unpolled -= q->srq_unpolled;
      q->srq_unpolled = 0;
      q->rnr_seq = 0;
      q->resend_from = 0;
    } else if (to == IBV_QPS_ERR) {
      enter_error(lib, *q, false);
    } else if (to == IBV_QPS_RTR && from == IBV_QPS_INIT) {
      connect_from_model(lib, *q);
      connect_transport(lib, *q);
      if (q->times_out) {
        r["verdict"] = "times_out";
        r["reason"] = q->times_out_reason;
      }
    }
    if (attr_mask & IBV_QP_TIMEOUT) q->timeout = attr->timeout;
    if (attr_mask & IBV_QP_RETRY_CNT) q->retry_cnt = attr->retry_cnt;
    if (attr_mask & IBV_QP_RNR_RETRY) q->rnr_retry = attr->rnr_retry;
    if (attr_mask & IBV_QP_MIN_RNR_TIMER) q->min_rnr_timer = attr->min_rnr_timer;
    if (attr_mask & IBV_QP_QKEY) q->qkey = attr->qkey;
    r["result"] = 0;
    lib.log.write(r);
    if (q->connected) retry_held(lib, *q);  // RC data that arrived before this side reached RTR
    return 0;
  });
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
  return locked_call([&](Library& lib) -> int {
    Qp* q = lib.qp(qp);
    if (!q) return EINVAL;
    auto r = lib.record("query_qp", q->owner->device);
    r["qp_num"] = q->qp.qp_num;
    r["mask"] = attr_mask;
    // The answer is the C core's, as the in-process C ABI's: the model's attributes and state
    // (the data path tells the model when it breaks a QP: enter_error), the capabilities and
    // init_attr the QP was created with.
    std::string why;
    if (const int err = fakes::c_core::query_qp(lib.model, q->model, q->init, attr, init_attr, &why)) {
      fail_record(lib, r, q->owner->device, err, why);
      return err;
    }
    // rdma-core's ibv_query_qp refreshes the struct's field from what the HCA answered.
    if (attr_mask & IBV_QP_STATE) q->qp.state = q->hw_state;
    r["state"] = fakes::qp_state_name(q->hw_state);
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  });
}

int ibv_destroy_qp(ibv_qp* qp) {
  return locked_call([&](Library& lib) -> int {
    Qp* q = lib.qp(qp);
    if (!q) return EINVAL;
    auto r = lib.record("destroy_qp", q->owner->device);
    r["qp_num"] = q->qp.qp_num;
    release_qp(lib, *q);
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  });
}

// The fake's QPs are not extended QPs (no ibv_create_qp_ex): rdma-core returns NULL for those.
ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp*) { return nullptr; }

}  // extern "C"
