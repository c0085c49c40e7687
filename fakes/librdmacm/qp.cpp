// QPs on ids, over the fake libibverbs: create (with librdmacm's own CQs and PD when none are
// given), the attributes of each transition from the id's resolution (the sgid_index chosen by
// rdma_cm's rule), destroy; endpoints (create_ep / destroy_ep) and SRQs.
#include "cm.hpp"

#include <cstring>

namespace fakecm {

int init_qp_attr(Id* id, ibv_qp_attr* attr, int* mask) {
  const ibv_qp_type type = id->pub.qp ? id->pub.qp->qp_type : id->pub.qp_type;
  const ibv_qp_state want = attr->qp_state;
  std::memset(attr, 0, sizeof *attr);
  attr->qp_state = want;
  *mask = IBV_QP_STATE;
  if (!id->pub.verbs) return EINVAL;
  switch (want) {
    case IBV_QPS_INIT:
      attr->pkey_index = 0;
      attr->port_num = id->pub.port_num;
      *mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
      if (type == IBV_QPT_UD) {
        attr->qkey = RDMA_UDP_QKEY;
        *mask |= IBV_QP_QKEY;
      } else {
        // The kernel grants remote write, and read/atomic when the connection has responder
        // resources; the fake grants them at INIT so RTR needs no access change.
        attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        if (type == IBV_QPT_RC) attr->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        *mask |= IBV_QP_ACCESS_FLAGS;
      }
      return 0;
    case IBV_QPS_RTR:
      if (type == IBV_QPT_UD) return 0;
      if (id->remote_qpn == 0) return EINVAL;  // no peer yet: nothing to route to
      attr->path_mtu = id->mtu;
      attr->dest_qp_num = id->remote_qpn;
      attr->rq_psn = id->remote_psn;
      attr->ah_attr.is_global = 1;
      std::memcpy(&attr->ah_attr.grh.dgid, &id->pub.route.addr.addr.ibaddr.dgid, 16);
      attr->ah_attr.grh.sgid_index = id->sgid_index;
      attr->ah_attr.grh.hop_limit = 64;
      attr->ah_attr.grh.traffic_class = id->tos;
      attr->ah_attr.port_num = id->pub.port_num;
      *mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
      if (type == IBV_QPT_RC) {
        attr->max_dest_rd_atomic = id->responder_resources;
        attr->min_rnr_timer = 12;
        *mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      }
      return 0;
    case IBV_QPS_RTS:
      attr->sq_psn = id->local_psn;
      *mask |= IBV_QP_SQ_PSN;
      if (type == IBV_QPT_RC) {
        attr->timeout = id->ack_timeout;
        attr->retry_cnt = id->retry > 7 ? 7 : id->retry;
        attr->rnr_retry = id->rnr_retry > 7 ? 7 : id->rnr_retry;
        attr->max_rd_atomic = id->initiator_depth;
        *mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
      }
      return 0;
    case IBV_QPS_ERR:
    case IBV_QPS_RESET:
      return 0;
    default:
      return EINVAL;
  }
}

int modify_to(Library& l, Id* id, ibv_qp_state state) {
  ibv_qp_attr attr{};
  attr.qp_state = state;
  int mask = 0;
  if (const int e = init_qp_attr(id, &attr, &mask); e) {
    errno = e;
    return -1;
  }
  const int rc = ibv_modify_qp(id->pub.qp, &attr, mask);
  auto r = record("modify_qp", id);
  r["qp_num"] = id->pub.qp->qp_num;
  r["state"] = state == IBV_QPS_INIT  ? "INIT"
               : state == IBV_QPS_RTR ? "RTR"
               : state == IBV_QPS_RTS ? "RTS"
                                      : "ERR";
  if (state == IBV_QPS_RTR) r["dest_qp_num"] = id->remote_qpn;
  r["result"] = rc;
  log_record(l, std::move(r));
  if (rc) {
    errno = rc;
    return -1;
  }
  return 0;
}

int create_qp_locked(Library& l, Id* id, ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (!id->pub.verbs)
    return refuse(l, "create_qp", id, EINVAL, "the id has no device: bind or resolve it first");
  if (id->pub.qp) return refuse(l, "create_qp", id, EINVAL, "the id already has a QP");
  if (!pd) {
    auto& d = l.default_pds[id->pub.verbs];
    if (!d) d = ibv_alloc_pd(id->pub.verbs);
    pd = d;
    if (!pd) return refuse(l, "create_qp", id, ENOMEM, "no protection domain");
  } else if (pd->context != id->pub.verbs) {
    return refuse(l, "create_qp", id, EINVAL, "the PD belongs to another device than the id's");
  }
  ibv_qp_init_attr a = *attr;
  // librdmacm makes CQs (each with a completion channel) for a QP created without them.
  if (!a.send_cq || !a.recv_cq) {
    const int depth_s = static_cast<int>(a.cap.max_send_wr ? a.cap.max_send_wr : 1);
    const int depth_r = static_cast<int>(a.cap.max_recv_wr ? a.cap.max_recv_wr : 1);
    if (!a.recv_cq) {
      id->pub.recv_cq_channel = ibv_create_comp_channel(id->pub.verbs);
      id->pub.recv_cq = ibv_create_cq(id->pub.verbs, depth_r, id, id->pub.recv_cq_channel, 0);
      a.recv_cq = id->pub.recv_cq;
    }
    if (!a.send_cq) {
      id->pub.send_cq_channel = ibv_create_comp_channel(id->pub.verbs);
      id->pub.send_cq = ibv_create_cq(id->pub.verbs, depth_s, id, id->pub.send_cq_channel, 0);
      a.send_cq = id->pub.send_cq;
    }
    id->own_cqs = true;
    if (!a.send_cq || !a.recv_cq) return refuse(l, "create_qp", id, ENOMEM, "the CQs could not be created");
  }
  ibv_qp* qp = ibv_create_qp(pd, &a);
  if (!qp) return refuse(l, "create_qp", id, errno ? errno : ENOMEM, "ibv_create_qp failed");
  *attr = a;
  id->pub.qp = qp;
  id->pub.pd = pd;
  id->pub.qp_type = a.qp_type;
  auto r = record("create_qp", id);
  r["qp_num"] = qp->qp_num;
  r["qp_type"] = a.qp_type == IBV_QPT_RC ? "rc" : a.qp_type == IBV_QPT_UC ? "uc" : "ud";
  r["result"] = 0;
  log_record(l, std::move(r));
  // librdmacm leaves a connected QP in INIT (RTR/RTS come with the connection) and takes a UD
  // QP to RTS at once (ucma_init_conn_qp / ucma_init_ud_qp).
  if (modify_to(l, id, IBV_QPS_INIT) != 0) return -1;
  if (a.qp_type == IBV_QPT_UD && (modify_to(l, id, IBV_QPS_RTR) != 0 || modify_to(l, id, IBV_QPS_RTS) != 0))
    return -1;
  return 0;
}

void destroy_qp_locked(Id* id) {
  if (id->pub.qp) ibv_destroy_qp(id->pub.qp);
  id->pub.qp = nullptr;
  if (id->own_cqs) {
    if (id->pub.send_cq) ibv_destroy_cq(id->pub.send_cq);
    if (id->pub.recv_cq) ibv_destroy_cq(id->pub.recv_cq);
    if (id->pub.send_cq_channel) ibv_destroy_comp_channel(id->pub.send_cq_channel);
    if (id->pub.recv_cq_channel) ibv_destroy_comp_channel(id->pub.recv_cq_channel);
    id->pub.send_cq = id->pub.recv_cq = nullptr;
    id->pub.send_cq_channel = id->pub.recv_cq_channel = nullptr;
    id->own_cqs = false;
  }
}

}  // namespace fakecm

using namespace fakecm;

extern "C" {

__attribute__((visibility("default"))) int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd,
                                                          ibv_qp_init_attr* qp_init_attr) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!id || !qp_init_attr) {
      errno = EINVAL;
      return -1;
    }
    return create_qp_locked(l, reinterpret_cast<Id*>(id), pd, qp_init_attr);
  });
}

__attribute__((visibility("default"))) int rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!id || !attr) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    // The extended attributes beyond the PD (creation flags, send ops, RSS) are not modelled.
    if (attr->comp_mask & ~static_cast<std::uint32_t>(IBV_QP_INIT_ATTR_PD))
      return refuse(l, "create_qp_ex", i, EOPNOTSUPP, "only IBV_QP_INIT_ATTR_PD is modelled in comp_mask");
    ibv_qp_init_attr a{};
    a.qp_context = attr->qp_context;
    a.send_cq = attr->send_cq;
    a.recv_cq = attr->recv_cq;
    a.srq = attr->srq;
    a.cap = attr->cap;
    a.qp_type = attr->qp_type;
    a.sq_sig_all = attr->sq_sig_all;
    const int rc = create_qp_locked(l, i, attr->comp_mask & IBV_QP_INIT_ATTR_PD ? attr->pd : nullptr, &a);
    if (rc == 0) attr->cap = a.cap;
    return rc;
  });
}

__attribute__((visibility("default"))) void rdma_destroy_qp(rdma_cm_id* id) {
  locked_void_call([&](Library&, std::unique_lock<std::mutex>&) {
    if (!id) return;
    destroy_qp_locked(reinterpret_cast<Id*>(id));
  });
}

__attribute__((visibility("default"))) int rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* qp_attr,
                                                             int* qp_attr_mask) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!id || !qp_attr || !qp_attr_mask) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    const ibv_qp_state want = qp_attr->qp_state;
    if (const int e = init_qp_attr(i, qp_attr, qp_attr_mask); e)
      return refuse(l, "init_qp_attr", i, e,
                    "no attributes for that state yet (the id has no peer or device)");
    auto r = record("init_qp_attr", i);
    r["state"] = static_cast<int>(want);
    r["mask"] = *qp_attr_mask;
    r["result"] = 0;
    log_record(l, std::move(r));
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd,
                                                          ibv_qp_init_attr* qp_init_attr) {
  return unlocked_call(-1, [&]() -> int {
    if (!id || !res) {
      errno = EINVAL;
      return -1;
    }
    rdma_cm_id* cm = nullptr;
    if (rdma_create_id(nullptr, &cm, nullptr, static_cast<rdma_port_space>(res->ai_port_space)) != 0)
      return -1;
    auto* i = reinterpret_cast<Id*>(cm);
    const auto fail = [&] {
      const int e = errno;
      rdma_destroy_id(cm);
      errno = e;
      return -1;
    };
    if (res->ai_flags & RAI_PASSIVE) {
      if (rdma_bind_addr(cm, res->ai_src_addr) != 0) return fail();
      if (qp_init_attr) {
        // Kept for the requests rdma_get_request hands out.
        locked_void_call([&](Library&, std::unique_lock<std::mutex>&) {
          i->has_ep_qp = true;
          i->ep_qp = *qp_init_attr;
          i->ep_qp.qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);  // as librdmacm: the addrinfo's type
          i->ep_pd = pd;
        });
      }
      *id = cm;
      return 0;
    }
    if (rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000) != 0) return fail();
    if (rdma_resolve_route(cm, 2000) != 0) return fail();
    if (qp_init_attr) {
      qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
      if (rdma_create_qp(cm, pd, qp_init_attr) != 0) return fail();
    }
    *id = cm;
    return 0;
  });
}

__attribute__((visibility("default"))) void rdma_destroy_ep(rdma_cm_id* id) {
  unlocked_void_call([&] {
    if (!id) return;
    if (id->qp) rdma_destroy_qp(id);
    if (id->srq) {
      ibv_destroy_srq(id->srq);
      id->srq = nullptr;
    }
    rdma_destroy_id(id);
  });
}

__attribute__((visibility("default"))) int rdma_create_srq(rdma_cm_id* id, ibv_pd* pd,
                                                           ibv_srq_init_attr* attr) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!id || !attr) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    if (!i->pub.verbs) return refuse(l, "create_srq", i, EINVAL, "the id has no device");
    if (!pd) {
      auto& d = l.default_pds[i->pub.verbs];
      if (!d) d = ibv_alloc_pd(i->pub.verbs);
      pd = d;
    }
    ibv_srq* srq = pd ? ibv_create_srq(pd, attr) : nullptr;
    if (!srq) return refuse(l, "create_srq", i, errno ? errno : ENOMEM, "ibv_create_srq failed");
    i->pub.srq = srq;
    i->pub.pd = pd;
    return 0;
  });
}

__attribute__((visibility("default"))) void rdma_destroy_srq(rdma_cm_id* id) {
  locked_void_call([&](Library&, std::unique_lock<std::mutex>&) {
    if (!id || !id->srq) return;
    ibv_destroy_srq(id->srq);
    id->srq = nullptr;
  });
}

}  // extern "C"
