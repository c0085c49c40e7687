// The resource half of the verbs C ABI: PD, MR, CQ, completion channel, QP create/modify/
// query/destroy, close_device. QP numbers, states, attributes and the RTR verdict belong to the
// FakeVerbs model (driver models through judge_rtr / judge_create_qp); this file keeps only
// the C structs and what the data path needs.
//
// ABI gotchas encoded here:
//  * ibv_reg_mr is a macro over an inline that calls ibv_reg_mr@IBVERBS_1.1 when the access
//    flags are a compile-time constant and ibv_reg_mr_iova2@IBVERBS_1.8 otherwise: both exist.
//  * ibv_modify_qp returns a positive errno (not -1): JACCL-style callers print it as "errno N".
//    On success the library, not the driver, updates ibv_qp::state.
//  * A QP's number names its loopback socket (an abstract Unix address), so a peer's
//    dest_qp_num is an address the data path can send to.
//  * Address handles and UD: ibv_create_ah judges the AH's sgid_index and dgid with the same
//    driver model as RTR (the kernel resolves the source GID attribute there): an empty slot
//    fails with ENODATA, a path the model says times out is created but carries nothing.
#include "fakelib.hpp"

#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

using namespace gidpolicy;
using namespace gidpolicy::fakelib;

namespace {

void release_qp(Library& lib, Qp& q) {
  unwatch_qp(lib, q);
  for (Cq* c : {q.send_cq, q.recv_cq})
    if (c) c->qps.erase(std::remove(c->qps.begin(), c->qps.end(), &q), c->qps.end());
  if (q.tx >= 0) ::close(q.tx);
  if (q.tx_reserve >= 0) ::close(q.tx_reserve);
  if (q.rx >= 0) ::close(q.rx);
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

void release_cq(Library& lib, Cq& c) {
  if (c.channel && c.event_fd >= 0) ::epoll_ctl(c.channel->ch.fd, EPOLL_CTL_DEL, c.event_fd, nullptr);
  if (c.event_fd >= 0) ::close(c.event_fd);
  pthread_cond_destroy(&c.cq.cond);
  pthread_mutex_destroy(&c.cq.mutex);
  --c.owner->device->in_use.cqs;
  lib.cqs.erase(&c.cq);
}

void release_mr(Library& lib, Mr& m) {
  release_key(lib, m.mr.lkey);
  --m.pd->owner->device->in_use.mrs;
  lib.mrs.erase(&m.mr);
}

ibv_mr* register_mr(ibv_pd* pd, void* addr, std::size_t length, std::uint64_t iova, unsigned access) {
  return locked_call([&](Library& lib) -> ibv_mr* {
    Pd* p = lib.pd(pd);
    if (!p) {
      errno = EINVAL;
      return nullptr;
    }
    auto r = lib.record("reg_mr", p->owner->device);
    r["length"] = length;
    r["access"] = access;
    // The optional-range bits (relaxed ordering ...) are hints a device may ignore: accepted.
    access &= ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
    std::string why;
    if (const int err = validate_registration(addr, length, iova, access, why)) {
      fail_record(lib, r, p->owner->device, err, why);
      errno = err;
      return nullptr;
    }
    Device* dev = p->owner->device;
    if (const int err =
            over_limit(lib, r, dev, dev->in_use.mrs, device_limits(*dev).max_mr, "memory regions")) {
      errno = err;
      return nullptr;
    }
    auto m = std::make_unique<Mr>();
    m->pd = p;
    m->access = static_cast<int>(access);
    m->iova = iova;
    const std::uint32_t key = allocate_key(lib);
    m->mr.context = &p->owner->ctx;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = length;
    m->mr.handle = lib.next_handle++;
    m->mr.lkey = key;
    m->mr.rkey = key;
    ibv_mr* out = &m->mr;
    lib.mr_by_key[key] = m.get();
    lib.mrs.emplace(out, std::move(m));
    ++dev->in_use.mrs;
    r["lkey"] = key;
    r["result"] = 0;
    lib.log.write(r);
    return out;
  });
}

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

int ibv_close_device(ibv_context* context) {
  bool last = false;
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Context* c = lib.context(context);
    if (!c) return EINVAL;
    // What the kernel does when the uverbs file closes: every object of the context goes.
    std::vector<Qp*> qps;
    for (auto& [k, q] : lib.qps)
      if (q->owner == c) qps.push_back(q.get());
    for (Qp* q : qps) release_qp(lib, *q);
    std::vector<Cq*> cqs;
    for (auto& [k, cq] : lib.cqs)
      if (cq->owner == c) cqs.push_back(cq.get());
    for (Cq* cq : cqs) release_cq(lib, *cq);
    std::vector<Mr*> mrs;
    for (auto& [k, m] : lib.mrs)
      if (m->pd->owner == c) mrs.push_back(m.get());
    for (Mr* m : mrs) release_mr(lib, *m);
    InUse& used = c->device->in_use;
    used.srqs -=
        static_cast<unsigned>(std::erase_if(lib.srqs, [c](const auto& kv) { return kv.second->owner == c; }));
    used.ahs -= static_cast<unsigned>(
        std::erase_if(lib.ahs, [c](const auto& kv) { return kv.second->pd->owner == c; }));
    used.pds -=
        static_cast<unsigned>(std::erase_if(lib.pds, [c](const auto& kv) { return kv.second->owner == c; }));
    std::erase_if(lib.channels, [c](const auto& kv) {
      if (kv.second->owner != c) return false;
      ::close(kv.second->ch.fd);
      return true;
    });
    auto r = lib.record("close_device", c->device);
    (void)lib.model.close_device(c->handle);
    ::close(c->async_pipe[0]);
    ::close(c->async_pipe[1]);
    pthread_mutex_destroy(&c->ctx.mutex);
    lib.contexts.erase(context);
    r["result"] = 0;
    lib.log.write(r);
    last = lib.contexts.empty();
  } catch (...) {
    return ENOMEM;
  }
  // The last context is gone, and with it every QP: the progress thread has nothing to serve.
  if (last) stop_progress();
  return 0;
}

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  return locked_call([&](Library& lib) -> ibv_pd* {
    Context* c = lib.context(context);
    if (!c) {
      errno = EINVAL;
      return nullptr;
    }
    auto r = lib.record("alloc_pd", c->device);
    if (const int err = over_limit(lib, r, c->device, c->device->in_use.pds, device_limits(*c->device).max_pd,
                                   "protection domains")) {
      errno = err;
      return nullptr;
    }
    auto p = std::make_unique<Pd>();
    p->owner = c;
    p->pd.context = context;
    p->pd.handle = lib.next_handle++;
    ibv_pd* out = &p->pd;
    lib.pds.emplace(out, std::move(p));
    ++c->device->in_use.pds;
    r["result"] = 0;
    lib.log.write(r);
    return out;
  });
}

int ibv_dealloc_pd(ibv_pd* pd) {
  return locked_call([&](Library& lib) -> int {
    Pd* p = lib.pd(pd);
    if (!p) return EINVAL;
    auto r = lib.record("dealloc_pd", p->owner->device);
    const bool in_use =
        std::any_of(lib.mrs.begin(), lib.mrs.end(), [p](const auto& kv) { return kv.second->pd == p; }) ||
        std::any_of(lib.qps.begin(), lib.qps.end(), [p](const auto& kv) { return kv.second->pd == p; }) ||
        std::any_of(lib.srqs.begin(), lib.srqs.end(), [p](const auto& kv) { return kv.second->pd == p; }) ||
        std::any_of(lib.ahs.begin(), lib.ahs.end(), [p](const auto& kv) { return kv.second->pd == p; });
    if (in_use) {
      fail_record(lib, r, p->owner->device, EBUSY,
                  "memory regions, queue pairs, SRQs or AHs still use the PD");
      return EBUSY;
    }
    --p->owner->device->in_use.pds;
    lib.pds.erase(pd);
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  });
}

#undef ibv_reg_mr
ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return register_mr(pd, addr, length, reinterpret_cast<std::uintptr_t>(addr), static_cast<unsigned>(access));
}

#undef ibv_reg_mr_iova
ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return register_mr(pd, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  return register_mr(pd, addr, length, iova, access);
}

int ibv_dereg_mr(ibv_mr* mr) {
  return locked_call([&](Library& lib) -> int {
    auto it = lib.mrs.find(mr);
    if (it == lib.mrs.end()) return EINVAL;
    auto r = lib.record("dereg_mr", it->second->pd->owner->device);
    r["lkey"] = mr->lkey;
    release_mr(lib, *it->second);
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  });
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  return locked_call([&](Library& lib) -> ibv_comp_channel* {
    Context* c = lib.context(context);
    if (!c) {
      errno = EINVAL;
      return nullptr;
    }
    // The channel's fd is an epoll instance: it becomes readable when an armed CQ's socket or
    // event counter does, so programs can poll()/select() on it as on a real channel.
    const int fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (fd < 0) return nullptr;
    auto ch = std::make_unique<Channel>();
    ch->owner = c;
    ch->ch.context = context;
    ch->ch.fd = fd;
    ch->ch.refcnt = 0;
    ibv_comp_channel* out = &ch->ch;
    lib.channels.emplace(out, std::move(ch));
    auto r = lib.record("create_comp_channel", c->device);
    r["result"] = 0;
    lib.log.write(r);
    return out;
  });
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  return locked_call([&](Library& lib) -> int {
    Channel* ch = lib.channel(channel);
    if (!ch) return EINVAL;
    auto r = lib.record("destroy_comp_channel", ch->owner->device);
    for (auto& [k, c] : lib.cqs)
      if (c->channel == ch) {
        fail_record(lib, r, ch->owner->device, EBUSY, "completion queues still use the channel");
        return EBUSY;
      }
    ::close(ch->ch.fd);
    lib.channels.erase(channel);
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  });
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  return locked_call([&](Library& lib) -> ibv_cq* {
    Context* c = lib.context(context);
    if (!c) {
      errno = EINVAL;
      return nullptr;
    }
    auto r = lib.record("create_cq", c->device);
    r["cqe"] = cqe;
    Channel* ch = channel ? lib.channel(channel) : nullptr;
    const DeviceLimits lim = device_limits(*c->device);
    if (cqe < 1 || static_cast<unsigned>(cqe) > lim.max_cqe || comp_vector < 0 ||
        comp_vector >= context->num_comp_vectors || (channel && (!ch || ch->owner != c))) {
      fail_record(
          lib, r, c->device, EINVAL,
          "cqe out of 1.." + std::to_string(lim.max_cqe) + ", bad completion vector or foreign channel");
      errno = EINVAL;
      return nullptr;
    }
    if (const int err =
            over_limit(lib, r, c->device, c->device->in_use.cqs, lim.max_cq, "completion queues")) {
      errno = err;
      return nullptr;
    }
    auto q = std::make_unique<Cq>();
    q->owner = c;
    q->channel = ch;
    if (ch) {
      q->event_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (q->event_fd < 0) {
        // A CQ is no descriptor on a device: the fake's own need for one is its ENOMEM.
        fail_record(lib, r, c->device, ENOMEM, std::string("no eventfd for the CQ: ") + std::strerror(errno));
        errno = ENOMEM;
        return nullptr;
      }
      epoll_event ev{};
      ev.events = 0;  // disarmed until ibv_req_notify_cq
      ev.data.ptr = &q->cq;
      ::epoll_ctl(ch->ch.fd, EPOLL_CTL_ADD, q->event_fd, &ev);
    }
    q->cq.context = context;
    q->cq.channel = channel;
    q->cq.cq_context = cq_context;
    q->cq.handle = lib.next_handle++;
    q->cq.cqe = cqe;
    pthread_mutex_init(&q->cq.mutex, nullptr);
    pthread_cond_init(&q->cq.cond, nullptr);
    ibv_cq* out = &q->cq;
    lib.cqs.emplace(out, std::move(q));
    ++c->device->in_use.cqs;
    r["result"] = 0;
    lib.log.write(r);
    return out;
  });
}

int ibv_destroy_cq(ibv_cq* cq) {
  return locked_call([&](Library& lib) -> int {
    Cq* c = lib.cq(cq);
    if (!c) return EINVAL;
    auto r = lib.record("destroy_cq", c->owner->device);
    if (!c->qps.empty()) {
      fail_record(lib, r, c->owner->device, EBUSY, "queue pairs still use the CQ");
      return EBUSY;
    }
    release_cq(lib, *c);
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  });
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  try {
    Library& lib = Library::get();
    int fd = -1;
    {
      std::lock_guard lock(lib.mu);
      Channel* ch = lib.channel(channel);
      if (!ch || !cq || !cq_context) {
        errno = EINVAL;
        return -1;
      }
      fd = ch->ch.fd;
    }
    // A program that made the channel non-blocking gets EAGAIN, as from a real channel's read().
    const int fl = ::fcntl(fd, F_GETFL);
    const bool nonblocking = fl >= 0 && (fl & O_NONBLOCK);
    for (;;) {
      epoll_event ev{};
      const int n = ::epoll_wait(fd, &ev, 1, nonblocking ? 0 : -1);  // without the lock
      if (n < 0) return -1;
      if (n == 0) {
        errno = EAGAIN;
        return -1;
      }
      std::lock_guard lock(lib.mu);
      Cq* c = lib.cq(static_cast<ibv_cq*>(ev.data.ptr));
      if (!c) continue;  // destroyed meanwhile
      disarm_cq(*c);
      *cq = &c->cq;
      *cq_context = c->cq.cq_context;
      return 0;
    }
  } catch (...) {
    errno = ENOMEM;
    return -1;
  }
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  if (!cq) return;
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_mutex_unlock(&cq->mutex);
}

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  return locked_call([&](Library& lib) -> ibv_qp* {
    Pd* p = lib.pd(pd);
    if (!p || !attr) {
      errno = EINVAL;
      return nullptr;
    }
    Context* c = p->owner;
    auto r = lib.record("create_qp", c->device);
    const auto kind = verbs::qp_kind_from_ibv(attr->qp_type);
    r["qp_type"] = kind ? std::string(to_string(*kind)) : std::to_string(static_cast<int>(attr->qp_type));
    Cq* scq = lib.cq(attr->send_cq);
    Cq* rcq = lib.cq(attr->recv_cq);
    if (!scq || !rcq || scq->owner != c || rcq->owner != c) {
      fail_record(lib, r, c->device, EINVAL, "send or receive CQ missing or of another context");
      errno = EINVAL;
      return nullptr;
    }
    Srq* srq = attr->srq ? lib.srq(attr->srq) : nullptr;
    if (!kind || (attr->srq && (!srq || srq->owner != c || *kind == QpKind::ud))) {
      fail_record(lib, r, c->device, kind ? EINVAL : EOPNOTSUPP,
                  kind ? "the SRQ does not exist, is of another context, or the QP is UD"
                       : "the fake models RC, UC and UD queue pairs");
      errno = kind ? EINVAL : EOPNOTSUPP;
      return nullptr;
    }
    ibv_qp_cap& cap = attr->cap;
    const DeviceLimits lim = device_limits(*c->device);
    if (cap.max_send_wr > lim.max_qp_wr || cap.max_recv_wr > lim.max_qp_wr ||
        cap.max_send_sge > lim.max_sge || cap.max_recv_sge > lim.max_sge ||
        cap.max_inline_data > lim.max_inline) {
      fail_record(lib, r, c->device, EINVAL,
                  "capabilities above the device's (" + std::to_string(lim.max_qp_wr) + " WRs, " +
                      std::to_string(lim.max_sge) + " SGEs, " + std::to_string(lim.max_inline) +
                      " inline bytes)");
      errno = EINVAL;
      return nullptr;
    }
    if (const int err = over_limit(lib, r, c->device, c->device->in_use.qps, lim.max_qp, "queue pairs")) {
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
      const std::string why = std::strerror(errno);
      if (q->rx >= 0) ::close(q->rx);
      fail_record(lib, r, c->device, ENOMEM, "no socket for the QP: " + why);
      errno = ENOMEM;
      return nullptr;
    }
    lib.pending_qp_number = number;
    auto h = lib.model.create_qp(c->handle, *kind);
    lib.pending_qp_number = 0;
    if (!h) {
      const int err = errno_of(h.error());
      ::close(q->rx);
      ::close(q->tx_reserve);
      fail_record(lib, r, c->device, err, h.error().what());
      errno = err;
      return nullptr;
    }
    q->owner = c;
    q->pd = p;
    q->srq = srq;
    if (srq) ++srq->users;
    q->send_cq = scq;
    q->recv_cq = rcq;
    q->kind = *kind;
    q->model = h.value();
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
      const std::string why = std::strerror(errno);
      release_qp(lib, *raw);
      fail_record(lib, r, c->device, ENOMEM, "the data path's progress thread could not start: " + why);
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
  return locked_call([&](Library& lib) -> int {
    Qp* q = lib.qp(qp);
    if (!q || !attr) return EINVAL;
    const Device* d = q->owner->device;
    const ibv_qp_state from = q->qp.state;
    const ibv_qp_state to = (attr_mask & IBV_QP_STATE) ? attr->qp_state : from;
    auto r = lib.record("modify_qp", d);
    r["qp_num"] = q->qp.qp_num;
    r["qp_type"] = to_string(q->kind);
    r["transition"] = fakes::qp_state_name(from) + "->" + fakes::qp_state_name(to);
    r["mask"] = attr_mask;
    r["mask_bits"] = rtr_mask_to_string(attr_mask);
    if (attr_mask & IBV_QP_AV) {
      r["is_global"] = attr->ah_attr.is_global;
      if (attr->ah_attr.is_global) {
        r["sgid_index"] = attr->ah_attr.grh.sgid_index;
        r["dgid"] = Gid::from_bytes(attr->ah_attr.grh.dgid.raw).to_string();
      }
      r["port_num"] = attr->ah_attr.port_num;
    }
    if (attr_mask & IBV_QP_DEST_QPN) r["dest_qp_num"] = attr->dest_qp_num;

    auto res = lib.model.modify_qp(q->model, *attr, attr_mask);
    if (!res) {
      const int err = errno_of(res.error());
      fail_record(lib, r, d, err, res.error().what());
      errno = err;
      return err;
    }
    if (attr_mask & IBV_QP_STATE) q->qp.state = to;
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
    if (!q || !attr || !init_attr) return EINVAL;
    auto r = lib.record("query_qp", q->owner->device);
    r["qp_num"] = q->qp.qp_num;
    r["mask"] = attr_mask;
    auto info = lib.model.query_qp(q->model);
    if (!info) {
      const int err = errno_of(info.error());
      fail_record(lib, r, q->owner->device, err, info.error().what());
      return err;
    }
    *attr = info.value().attr;
    attr->qp_state = q->qp.state;
    attr->cur_qp_state = q->qp.state;
    attr->cap = q->init.cap;
    *init_attr = q->init;
    init_attr->qp_context = q->qp.qp_context;
    r["state"] = fakes::qp_state_name(q->qp.state);
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
