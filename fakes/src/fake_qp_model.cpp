// The QP state model: the transitions RESET->INIT->RTR->RTS and the attribute bits each needs, as
// the kernel checks them (ib_modify_qp_is_ok), with INIT->RTR judged by the one driver model.
#include "fake_verbs_impl.hpp"

#include <gidpolicy/rtr.hpp>

#include <array>
#include <cstddef>

namespace gidpolicy::fakes {

namespace {

/// One transition of the kernel's QP state table (ib_modify_qp_is_ok): whether it exists, and
/// the attribute bits it requires and allows per QP type (UD, UC, RC).
struct Transition {
  bool valid = false;
  std::array<int, 3> required{};
  std::array<int, 3> optional{};
};
constexpr std::size_t kind_index(QpKind k) { return k == QpKind::ud ? 0 : (k == QpKind::uc ? 1 : 2); }
constexpr std::size_t kStates = 7;  // RESET, INIT, RTR, RTS, SQD, SQE, ERR

/// The table, in the kernel's terms (drivers/infiniband/core/verbs.c). INIT->RTR's required bits
/// come from rtr.hpp's kRtrRequirements, so that the builder and the fake cannot disagree.
constexpr std::array<std::array<Transition, kStates>, kStates> make_table() {
  std::array<std::array<Transition, kStates>, kStates> t{};
  auto rc_uc_ud = [](int ud, int uc, int rc) { return std::array<int, 3>{ud, uc, rc}; };
  for (std::size_t from = IBV_QPS_INIT; from < kStates; ++from) {
    t[from][IBV_QPS_RESET].valid = true;  // any state but RESET itself -> RESET / ERR, no bits
    t[from][IBV_QPS_ERR].valid = true;
  }
  t[IBV_QPS_RESET][IBV_QPS_RESET].valid = true;
  const int init_ud = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
  const int init_conn = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  t[IBV_QPS_RESET][IBV_QPS_INIT] = {true, rc_uc_ud(init_ud, init_conn, init_conn), {}};
  t[IBV_QPS_INIT][IBV_QPS_INIT] = {true, {}, rc_uc_ud(init_ud, init_conn, init_conn)};
  const int strip = ~IBV_QP_STATE;
  t[IBV_QPS_INIT][IBV_QPS_RTR] = {
      true,
      rc_uc_ud(required_rtr_mask(QpKind::ud) & strip, required_rtr_mask(QpKind::uc) & strip,
               required_rtr_mask(QpKind::rc) & strip),
      rc_uc_ud(IBV_QP_PKEY_INDEX | IBV_QP_QKEY, IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
               IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX)};
  const int rts_uc = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE;
  t[IBV_QPS_RTR][IBV_QPS_RTS] = {
      true,
      rc_uc_ud(
          IBV_QP_SQ_PSN, IBV_QP_SQ_PSN,
          IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
      rc_uc_ud(IBV_QP_CUR_STATE | IBV_QP_QKEY, rts_uc, rts_uc | IBV_QP_MIN_RNR_TIMER)};
  t[IBV_QPS_RTS][IBV_QPS_RTS] = {
      true, {}, rc_uc_ud(IBV_QP_CUR_STATE | IBV_QP_QKEY, rts_uc, rts_uc | IBV_QP_MIN_RNR_TIMER)};
  // RTS->SQD, SQD->RTS/SQD and SQE->RTS exist on hardware; the fake never drains a send queue
  // (modify_qp refuses them below as not modelled).
  t[IBV_QPS_RTS][IBV_QPS_SQD] = {
      true, {}, rc_uc_ud(IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY)};
  return t;
}
constexpr auto kTable = make_table();

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
  const Errnos E = Errnos::of(d->driver.platform);

  // Without IBV_QP_STATE the next state is the current one (ib_uverbs' modify_qp takes
  // `cur_state` as the next): a cur->cur transition, judged by the same table, so an RTS QP
  // may change its access flags or RNR timer alone, and whatever that row does not allow is
  // EINVAL.
  if (static_cast<unsigned>(from) >= kStates || static_cast<unsigned>(to) >= kStates)
    return fail_errno(E.einval, at + ": not a QP state");
  // IBV_QP_CUR_STATE names a state the QP may be in only from RTR, RTS, SQD or SQE.
  if ((mask & IBV_QP_CUR_STATE) && from != IBV_QPS_RTR && from != IBV_QPS_RTS && from != IBV_QPS_SQD &&
      from != IBV_QPS_SQE)
    return fail_errno(E.einval, at + ": IBV_QP_CUR_STATE is taken only from RTR, RTS, SQD or SQE");
  // The kernel's check (ib_modify_qp_is_ok): the transition exists, every required bit is set
  // and no bit is set that the QP type does not take there. EINVAL, which names nothing.
  const Transition& t = kTable[from][to];
  if (!t.valid) return fail_errno(E.einval, at + ": not a valid transition");
  const int required = t.required[kind_index(q.kind)];
  const int allowed = required | t.optional[kind_index(q.kind)] | IBV_QP_STATE;
  if ((mask & required) != required)
    return fail_errno(E.einval,
                      at + ": missing required attribute bits " + rtr_mask_to_string(required & ~mask));
  if (const int extra = mask & ~allowed; extra != 0)
    return fail_errno(E.einval, at + ": " + std::string(to_string(q.kind)) + " does not take " +
                                    rtr_mask_to_string(extra) + " at this transition");
  if (to == IBV_QPS_SQD) return fail_errno(E.einval, at + ": the fake does not model draining (SQD)");
  // The values the kernel and the drivers check (uverbs' modify_qp, mlx5, rxe): a port of the
  // device, a P_Key index inside the one-entry table, a path MTU no larger than the port's.
  const std::uint32_t port = (mask & IBV_QP_PORT) ? attr.port_num : q.port;
  if ((mask & IBV_QP_PORT) && !impl_->port(q.device, attr.port_num))
    return fail_errno(E.einval, at + ": port " + std::to_string(attr.port_num) + " does not exist");
  if ((mask & IBV_QP_AV) && !impl_->port(q.device, attr.ah_attr.port_num))
    return fail_errno(E.einval, at + ": ah_attr.port_num " + std::to_string(attr.ah_attr.port_num) +
                                    " is not a port of the device");
  if ((mask & IBV_QP_PKEY_INDEX) && attr.pkey_index >= kPkeyTableLength)
    return fail_errno(E.einval, at + ": pkey_index " + std::to_string(attr.pkey_index) +
                                    " is not below pkey_tbl_len " + std::to_string(kPkeyTableLength));
  if (mask & IBV_QP_PATH_MTU) {
    const auto mtu = static_cast<int>(attr.path_mtu);
    auto p = impl_->port(q.device, port);
    const int active = p ? static_cast<int>(p.value()->info.active_mtu) : 0;
    if (mtu < IBV_MTU_256 || mtu > IBV_MTU_4096 || mtu > active)
      return fail_errno(E.einval, at + ": path_mtu " + std::to_string(128 << mtu) +
                                      " is above the port's active MTU " + std::to_string(128 << active));
  }
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr.max_rd_atomic > kMaxRdAtomic)
    return fail_errno(E.einval, at + ": max_rd_atomic above the device's " + std::to_string(kMaxRdAtomic));
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr.max_dest_rd_atomic > kMaxRdAtomic)
    return fail_errno(E.einval,
                      at + ": max_dest_rd_atomic above the device's " + std::to_string(kMaxRdAtomic));

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
  if (mask & IBV_QP_PORT) q.port = attr.port_num;
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    // A UD QP has no address vector of its own: each address handle is judged when created.
    if (q.kind == QpKind::ud) {
      merge_attr(q.attr, attr, mask);
      q.attr_mask |= mask;
      q.state = to;
      q.attr.qp_state = to;
      return success();
    }
    const Port* p = impl_->port(q.device, q.port).value();
    // What the driver reads of these attributes (rtr.hpp's one reduction), and this host's
    // state of the source GID's netdev.
    RtrRequest req = rtr_request(attr, mask, q.kind);
    req.source_netdev_present = p->netdev_gone.count(req.sgid_index) == 0;
    // The one driver model (driver_model.hpp), judged on the table as it is at this call.
    const RtrVerdict v = judge_rtr(p->table(), req, d->driver);
    if (v.outcome == RtrOutcome::error) return fail_errno(v.err, at + ": " + v.reason);
    q.rtr = v;
    auto e = p->entries.find(req.sgid_index);
    if (req.is_global && e != p->entries.end() && e->second.state == EntryState::valid)
      q.source_gid = e->second.gid;
  }
  merge_attr(q.attr, attr, mask);
  q.attr_mask |= mask;
  q.state = to;
  q.attr.qp_state = to;
  return success();
}

}  // namespace gidpolicy::fakes
