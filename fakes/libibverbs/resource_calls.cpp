// The resource half of the verbs C ABI: PD, MR, CQ, completion channel, close_device (the QP
// calls are in qp_calls.cpp). The model owns the devices; this file keeps only the C structs and
// what the data path needs.
//
// ABI gotchas encoded here:
//  * ibv_reg_mr is a macro over an inline that calls ibv_reg_mr@IBVERBS_1.1 when the access
//    flags are a compile-time constant and ibv_reg_mr_iova2@IBVERBS_1.8 otherwise: both exist.
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

}  // namespace

extern "C" {

int ibv_close_device(ibv_context* context) {
  hang_point("ibv_close_device");  // GIDPOLICY_FAKE_HANG
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

}  // extern "C"
