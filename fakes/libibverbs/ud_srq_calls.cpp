// Address handles and shared receive queues: ibv_create_ah, ibv_create_ah_from_wc,
// ibv_init_ah_from_wc, ibv_destroy_ah, ibv_create_srq, ibv_modify_srq, ibv_query_srq,
// ibv_destroy_srq (ibv_post_srq_recv is ctx->ops.post_srq_recv, in completions.cpp).
//
// Gotchas encoded here:
//  * The kernel resolves an AH's source GID attribute at ibv_create_ah, as it does for a
//    connected QP at RTR, so the AH is judged by the same driver model (judge_rtr): an empty
//    sgid_index fails with ENODATA (Linux >= 5.10), a source the model says times out (a
//    link-local GID towards a global one) gives an AH whose datagrams never arrive.
//  * ibv_init_ah_from_wc reads the GRH the NIC wrote in front of a UD payload. For a RoCE v2
//    IPv4 GID that is an IPv4 header in the GRH's last 20 bytes (bytes 0-19 undefined), else an
//    IPv6 header; the reply's sgid_index is the local entry holding the GID the datagram was
//    addressed to, with the same GID type (what rdma-core's ibv_find_gid_index does).
#include "fakelib.hpp"

#include <gidpolicy/rtr.hpp>

#include <arpa/inet.h>

#include <cstring>
#include <string>

using namespace gidpolicy;
using namespace gidpolicy::fakelib;

namespace {

bool has_port(const Device& d, std::uint32_t port) {
  for (std::uint32_t p : d.ports)
    if (p == port) return true;
  return false;
}

// Create an AH under the lock. Errors: the errno, with errno set.
ibv_ah* create_ah_locked(Library& lib, Pd& p, const ibv_ah_attr& attr) {
  Device* d = p.owner->device;
  auto r = lib.record("create_ah", d);
  r["is_global"] = attr.is_global;
  r["port_num"] = attr.port_num;
  if (attr.is_global) {
    r["sgid_index"] = attr.grh.sgid_index;
    r["dgid"] = Gid::from_bytes(attr.grh.dgid.raw).to_string();
  }
  if (!has_port(*d, attr.port_num)) {
    fail_record(lib, r, d, EINVAL, "port " + std::to_string(attr.port_num) + " does not exist");
    errno = EINVAL;
    return nullptr;
  }
  if (const int err = over_limit(lib, r, d, d->in_use.ahs, device_limits(*d).max_ah, "address handles")) {
    errno = err;
    return nullptr;
  }
  auto table = lib.model.table(d->name, attr.port_num);
  auto driver = lib.model.driver_model(d->name);
  if (!table || !driver) {
    fail_record(lib, r, d, EINVAL, "no GID table for the port");
    errno = EINVAL;
    return nullptr;
  }
  // An AH is an address vector judged as a UD QP's RTR would judge it (rtr.hpp's one reduction).
  ibv_qp_attr as_qp{};
  as_qp.ah_attr = attr;
  const RtrRequest req = rtr_request(as_qp, IBV_QP_AV, QpKind::ud);
  const RtrVerdict v = judge_rtr(table.value(), req, driver.value());
  if (v.outcome == RtrOutcome::error) {
    fail_record(lib, r, d, v.err, v.reason);
    errno = v.err;
    return nullptr;
  }
  auto a = std::make_unique<Ah>();
  a->pd = &p;
  a->is_global = req.is_global;
  a->dgid = req.dgid;
  a->port = attr.port_num;
  a->sgid_index = attr.grh.sgid_index;
  if (const GidEntry* e = table.value().find(attr.grh.sgid_index); e && req.is_global && e->usable()) {
    a->source_gid = e->gid;
    a->source_type = e->type;
  }
  a->times_out = v.outcome == RtrOutcome::times_out;
  a->times_out_reason = v.reason;
  a->ah.context = &p.owner->ctx;
  a->ah.pd = &p.pd;
  a->ah.handle = lib.next_handle++;
  ibv_ah* out = &a->ah;
  lib.ahs.emplace(out, std::move(a));
  ++d->in_use.ahs;
  if (v.outcome == RtrOutcome::times_out) {
    r["verdict"] = "times_out";
    r["reason"] = v.reason;
  }
  r["result"] = 0;
  lib.log.write(r);
  return out;
}

// The GRH's source and destination GIDs and whether it is RoCE v2 (false: v1 / IB).
struct GrhInfo {
  Gid source;
  Gid dest;
  bool v2 = false;
};

GrhInfo parse_grh(const ibv_grh& grh) {
  std::uint8_t b[40];
  static_assert(sizeof(ibv_grh) == sizeof b);
  std::memcpy(b, &grh, sizeof b);
  GrhInfo g;
  const std::uint8_t* ip = b + 20;
  std::uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>(ip[i] << 8 | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  if (ip[0] == 0x45 && sum == 0xffff) {
    // RoCE v2 over IPv4: the addresses become IPv4-mapped GIDs.
    std::uint8_t s[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    std::uint8_t t[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    std::memcpy(s + 12, ip + 12, 4);
    std::memcpy(t + 12, ip + 16, 4);
    g.source = Gid::from_bytes(s);
    g.dest = Gid::from_bytes(t);
    g.v2 = true;
    return g;
  }
  g.source = Gid::from_bytes(b + 8);
  g.dest = Gid::from_bytes(b + 24);
  g.v2 = b[6] == 17;  // next header UDP: RoCE v2; 0x1b: the IBA GRH of RoCE v1
  return g;
}

int init_ah_locked(Library& lib, Context& c, std::uint8_t port_num, const ibv_wc& wc, const ibv_grh* grh,
                   ibv_ah_attr& ah_attr) {
  std::memset(&ah_attr, 0, sizeof ah_attr);
  ah_attr.dlid = wc.slid;
  ah_attr.sl = wc.sl;
  ah_attr.src_path_bits = wc.dlid_path_bits;
  ah_attr.port_num = port_num;
  if (!(wc.wc_flags & IBV_WC_GRH)) return 0;
  if (!grh) return EINVAL;
  const GrhInfo g = parse_grh(*grh);
  auto table = lib.model.table(c.device->name, port_num);
  if (!table) return EINVAL;
  for (const GidEntry& e : table.value()) {
    if (!e.usable() || e.gid != g.dest) continue;
    if (g.v2 != (e.type == GidType::roce_v2) && e.type != GidType::unknown) continue;
    ah_attr.is_global = 1;
    ah_attr.grh.sgid_index = static_cast<std::uint8_t>(e.index);
    g.source.copy_to(ah_attr.grh.dgid.raw);
    ah_attr.grh.hop_limit = 0xff;
    std::uint8_t b[4];
    std::memcpy(b, &grh->version_tclass_flow, 4);
    const std::uint32_t vtf = static_cast<std::uint32_t>(b[0]) << 24 |
                              static_cast<std::uint32_t>(b[1]) << 16 | static_cast<std::uint32_t>(b[2]) << 8 |
                              b[3];
    if (!g.v2 || !g.source.is_ipv4_mapped()) {
      ah_attr.grh.flow_label = vtf & 0xfffff;
      ah_attr.grh.traffic_class = static_cast<std::uint8_t>(vtf >> 20);
    }
    return 0;
  }
  return ENOENT;  // no local entry holds the GID the datagram was addressed to
}

}  // namespace

extern "C" {

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  return locked_call([&](Library& lib) -> ibv_ah* {
    Pd* p = lib.pd(pd);
    if (!p || !attr) {
      errno = EINVAL;
      return nullptr;
    }
    return create_ah_locked(lib, *p, *attr);
  });
}

int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* ah_attr) {
  try {
    Library& lib = Library::get();
    std::lock_guard lock(lib.mu);
    Context* c = lib.context(context);
    if (!c || !wc || !ah_attr) {
      errno = EINVAL;
      return -1;
    }
    const int err = init_ah_locked(lib, *c, port_num, *wc, grh, *ah_attr);
    if (err) {
      errno = err;
      return -1;
    }
    return 0;
  } catch (...) {
    errno = ENOMEM;
    return -1;
  }
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
  return locked_call([&](Library& lib) -> ibv_ah* {
    Pd* p = lib.pd(pd);
    if (!p || !wc) {
      errno = EINVAL;
      return nullptr;
    }
    ibv_ah_attr attr{};
    if (const int err = init_ah_locked(lib, *p->owner, port_num, *wc, grh, attr); err) {
      errno = err;
      return nullptr;
    }
    return create_ah_locked(lib, *p, attr);
  });
}

int ibv_destroy_ah(ibv_ah* ah) {
  return locked_call([&](Library& lib) -> int {
    Ah* a = lib.ah(ah);
    if (!a) return EINVAL;
    auto r = lib.record("destroy_ah", a->pd->owner->device);
    --a->pd->owner->device->in_use.ahs;
    lib.ahs.erase(ah);
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  });
}

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* srq_init_attr) {
  return locked_call([&](Library& lib) -> ibv_srq* {
    Pd* p = lib.pd(pd);
    if (!p || !srq_init_attr) {
      errno = EINVAL;
      return nullptr;
    }
    Device* d = p->owner->device;
    auto r = lib.record("create_srq", d);
    r["max_wr"] = srq_init_attr->attr.max_wr;
    r["max_sge"] = srq_init_attr->attr.max_sge;
    const DeviceLimits lim = device_limits(*d);
    if (srq_init_attr->attr.max_wr == 0 || srq_init_attr->attr.max_wr > lim.max_srq_wr ||
        srq_init_attr->attr.max_sge > lim.max_srq_sge ||
        srq_init_attr->attr.srq_limit > srq_init_attr->attr.max_wr) {
      fail_record(lib, r, d, EINVAL,
                  "max_wr not in 1.." + std::to_string(lim.max_srq_wr) + ", max_sge above " +
                      std::to_string(lim.max_srq_sge) + " or srq_limit above max_wr");
      errno = EINVAL;
      return nullptr;
    }
    if (const int err = over_limit(lib, r, d, d->in_use.srqs, lim.max_srq, "shared receive queues")) {
      errno = err;
      return nullptr;
    }
    auto s = std::make_unique<Srq>();
    s->pd = p;
    s->owner = p->owner;
    s->max_wr = srq_init_attr->attr.max_wr;
    s->max_sge = srq_init_attr->attr.max_sge;
    s->limit = srq_init_attr->attr.srq_limit;
    s->srq.context = &p->owner->ctx;
    s->srq.srq_context = srq_init_attr->srq_context;
    s->srq.pd = pd;
    s->srq.handle = lib.next_handle++;
    pthread_mutex_init(&s->srq.mutex, nullptr);
    pthread_cond_init(&s->srq.cond, nullptr);
    ibv_srq* out = &s->srq;
    lib.srqs.emplace(out, std::move(s));
    ++d->in_use.srqs;
    r["result"] = 0;
    lib.log.write(r);
    return out;
  });
}

int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  return locked_call([&](Library& lib) -> int {
    Srq* s = lib.srq(srq);
    if (!s || !attr) return EINVAL;
    const std::uint32_t max_wr = (mask & IBV_SRQ_MAX_WR) ? attr->max_wr : s->max_wr;
    const std::uint32_t limit = (mask & IBV_SRQ_LIMIT) ? attr->srq_limit : s->limit;
    // Shrinking below what is posted, or a limit above the size, is refused (the kernel's EINVAL).
    if (max_wr == 0 || max_wr > device_limits(*s->owner->device).max_srq_wr ||
        max_wr < s->rq.size() + s->unpolled || limit > max_wr)
      return EINVAL;
    s->max_wr = max_wr;
    s->limit = limit;
    return 0;
  });
}

int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  return locked_call([&](Library& lib) -> int {
    Srq* s = lib.srq(srq);
    if (!s || !attr) return EINVAL;
    attr->max_wr = s->max_wr;
    attr->max_sge = s->max_sge;
    attr->srq_limit = s->limit;
    return 0;
  });
}

int ibv_destroy_srq(ibv_srq* srq) {
  return locked_call([&](Library& lib) -> int {
    Srq* s = lib.srq(srq);
    if (!s) return EINVAL;
    auto r = lib.record("destroy_srq", s->owner->device);
    if (s->users != 0) {
      fail_record(lib, r, s->owner->device, EBUSY, "queue pairs still use the SRQ");
      return EBUSY;
    }
    pthread_cond_destroy(&s->srq.cond);
    pthread_mutex_destroy(&s->srq.mutex);
    --s->owner->device->in_use.srqs;
    lib.srqs.erase(srq);
    r["result"] = 0;
    lib.log.write(r);
    return 0;
  });
}

}  // extern "C"
