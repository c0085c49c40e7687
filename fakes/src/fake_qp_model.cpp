// The QP state model: the transitions RESET->INIT->RTR->RTS and the attribute bits each needs, as
// the kernel checks them (ib_modify_qp_is_ok), with INIT->RTR judged by the one driver model.
#include "fake_verbs_impl.hpp"

#include <gidpolicy/rtr.hpp>

namespace gidpolicy::fakes {

namespace {

/// The kernel's required attribute bits (ib_modify_qp_is_ok) for RESET->INIT and RTR->RTS. The
/// INIT->RTR bits come from rtr.hpp's table (required_rtr_mask) so that the builder and the fake
/// cannot disagree about them.
int required_init_mask(QpKind k) {
  if (k == QpKind::ud) return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
  return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}
int required_rts_mask(QpKind k) {
  if (k == QpKind::rc)
    return IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
           IBV_QP_MAX_QP_RD_ATOMIC;
  return IBV_QP_STATE | IBV_QP_SQ_PSN;
}

/// Copy the attributes `mask` names, as the kernel stores them.
void merge_attr(ibv_qp_attr& into, const ibv_qp_attr& from, int mask) {
  if (mask & IBV_QP_STATE) into.qp_state = from.qp_state;
  if (mask & IBV_QP_PKEY_INDEX) into.pkey_index = from.pkey_index;
  if (mask & IBV_QP_PORT) into.port_num = from.port_num;
  if (mask & IBV_QP_ACCESS_FLAGS) into.qp_access_flags = from.qp_access_flags;
  if (mask & IBV_QP_QKEY) into.qkey = from.qkey;
  if (mask & IBV_QP_AV) into.ah_attr = from.ah_attr;
  if (mask & IBV_QP_PATH_MTU) into.path_mtu = from.path_mtu;
  if (mask & IBV_QP_DEST_QPN) into.dest_qp_num = from.dest_qp_num;
  if (mask & IBV_QP_RQ_PSN) into.rq_psn = from.rq_psn;
  if (mask & IBV_QP_SQ_PSN) into.sq_psn = from.sq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) into.max_dest_rd_atomic = from.max_dest_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) into.min_rnr_timer = from.min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) into.timeout = from.timeout;
  if (mask & IBV_QP_RETRY_CNT) into.retry_cnt = from.retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) into.rnr_retry = from.rnr_retry;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) into.max_rd_atomic = from.max_rd_atomic;
}

}  // namespace

std::string qp_state_name(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_SQD:
      return "SQD";
    case IBV_QPS_SQE:
      return "SQE";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "state " + std::to_string(static_cast<int>(s));
  }
}

result<void> FakeVerbs::modify_qp(QpHandle handle, const ibv_qp_attr& attr, int mask) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->qps.find(handle.id);
  if (it == impl_->qps.end())
    return fail(errc::invalid_argument,
                "QP handle " + std::to_string(handle.id) + " does not exist in the fake");
  FakeQp& q = it->second.state;
  const ibv_qp_state from = q.state;
  const ibv_qp_state to = (mask & IBV_QP_STATE) ? attr.qp_state : from;
  const std::string at = "modify_qp(" + q.device + " qp " + hex(static_cast<int>(q.qp_num)) + ", " +
                         qp_state_name(from) + "->" + qp_state_name(to) + ")";
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::modify_qp, at));
  const Device* d = impl_->device(q.device);
  const Errnos E = Errnos::of(d->profile.platform);
  auto missing = [&](int required) -> result<void> {
    if ((mask & required) != required)
      return fail_errno(E.einval, at + ": missing required attribute bits " + hex(required & ~mask));
    return success();
  };

  if (!(mask & IBV_QP_STATE))
    return fail_errno(E.einval, at + ": no IBV_QP_STATE (attribute-only changes are not modelled)");
  if (to == IBV_QPS_RESET) {
    q.state = IBV_QPS_RESET;
    q.attr = ibv_qp_attr{};
    q.attr_mask = 0;
    q.port = 0;
    q.rtr.reset();
    q.source_gid.reset();
    return success();
  }
  if (to == IBV_QPS_ERR) {
    q.state = IBV_QPS_ERR;
    q.attr.qp_state = IBV_QPS_ERR;
    return success();
  }
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
    GIDPOLICY_TRYV(missing(required_init_mask(q.kind)));
    if (!impl_->port(q.device, attr.port_num))
      return fail_errno(E.einval, at + ": port " + std::to_string(attr.port_num) + " does not exist");
    q.port = attr.port_num;
  } else if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    GIDPOLICY_TRYV(missing(required_rtr_mask(q.kind)));
    // A UD QP has no address vector of its own: each address handle is judged when created.
    if (q.kind == QpKind::ud) {
      merge_attr(q.attr, attr, mask);
      q.attr_mask |= mask;
      q.state = to;
      q.attr.qp_state = to;
      return success();
    }
    const Port* p = impl_->port(q.device, q.port).value();
    RtrRequest req;
    req.qp_type = q.kind;
    req.is_global = attr.ah_attr.is_global != 0;
    req.sgid_index = attr.ah_attr.grh.sgid_index;
    req.dgid = Gid::from_bytes(attr.ah_attr.grh.dgid.raw);
    req.source_netdev_present = p->netdev_gone.count(req.sgid_index) == 0;
    // The one driver model (driver_model.hpp), judged on the table as it is at this call.
    const RtrVerdict v = judge_rtr(p->table(), req, d->profile);
    if (v.outcome == RtrOutcome::error) return fail_errno(v.err, at + ": " + v.reason);
    q.rtr = v;
    auto e = p->entries.find(req.sgid_index);
    if (req.is_global && e != p->entries.end() && e->second.state == EntryState::valid)
      q.source_gid = e->second.gid;
  } else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
    GIDPOLICY_TRYV(missing(required_rts_mask(q.kind)));
  } else if (from == to && (from == IBV_QPS_INIT || from == IBV_QPS_RTS)) {
    // INIT->INIT and RTS->RTS: attributes only.
  } else {
    return fail_errno(E.einval, at + ": not a valid transition");
  }
  merge_attr(q.attr, attr, mask);
  q.attr_mask |= mask;
  q.state = to;
  q.attr.qp_state = to;
  return success();
}

}  // namespace gidpolicy::fakes
