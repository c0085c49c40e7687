#include <gidpolicy/rtr.hpp>

#include "describe.hpp"

#include <algorithm>
#include <cstdio>

namespace gidpolicy {
namespace {

/// Bits a UC/RC INIT->RTR may carry besides the required ones (ibv_modify_qp(3), the kernel's
/// qp_state_table): anything else makes the driver return EINVAL with no hint which bit.
constexpr int kRtrOptional = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;

struct MaskName {
  int bit;
  const char* name;
};
constexpr MaskName kMaskNames[] = {
    {IBV_QP_STATE, "STATE"},
    {IBV_QP_CUR_STATE, "CUR_STATE"},
    {IBV_QP_EN_SQD_ASYNC_NOTIFY, "EN_SQD_ASYNC_NOTIFY"},
    {IBV_QP_ACCESS_FLAGS, "ACCESS_FLAGS"},
    {IBV_QP_PKEY_INDEX, "PKEY_INDEX"},
    {IBV_QP_PORT, "PORT"},
    {IBV_QP_QKEY, "QKEY"},
    {IBV_QP_AV, "AV"},
    {IBV_QP_PATH_MTU, "PATH_MTU"},
    {IBV_QP_TIMEOUT, "TIMEOUT"},
    {IBV_QP_RETRY_CNT, "RETRY_CNT"},
    {IBV_QP_RNR_RETRY, "RNR_RETRY"},
    {IBV_QP_RQ_PSN, "RQ_PSN"},
    {IBV_QP_MAX_QP_RD_ATOMIC, "MAX_QP_RD_ATOMIC"},
    {IBV_QP_ALT_PATH, "ALT_PATH"},
    {IBV_QP_MIN_RNR_TIMER, "MIN_RNR_TIMER"},
    {IBV_QP_SQ_PSN, "SQ_PSN"},
    {IBV_QP_MAX_DEST_RD_ATOMIC, "MAX_DEST_RD_ATOMIC"},
    {IBV_QP_PATH_MIG_STATE, "PATH_MIG_STATE"},
    {IBV_QP_CAP, "CAP"},
    {IBV_QP_DEST_QPN, "DEST_QPN"},
    {IBV_QP_RATE_LIMIT, "RATE_LIMIT"},
};

/// The setter that provides each required bit, for the error message.
const char* setter_for(int bit) {
  switch (bit) {
    case IBV_QP_AV:
      return "destination() or remote()";
    case IBV_QP_PATH_MTU:
      return "path_mtu()";
    case IBV_QP_DEST_QPN:
      return "dest_qp_num() or remote()";
    case IBV_QP_RQ_PSN:
      return "rq_psn() or remote()";
    case IBV_QP_MAX_DEST_RD_ATOMIC:
      return "max_dest_rd_atomic()";
    case IBV_QP_MIN_RNR_TIMER:
      return "min_rnr_timer()";
    default:
      return nullptr;
  }
}

constexpr std::uint32_t kMax24 = 0xffffffu;
constexpr std::uint32_t kMax20 = 0xfffffu;

Mtu to_mtu(ibv_mtu m) { return static_cast<Mtu>(static_cast<std::uint8_t>(m)); }
ibv_mtu to_ibv(Mtu m) { return static_cast<ibv_mtu>(static_cast<int>(m)); }

}  // namespace

std::string rtr_mask_to_string(int mask) {
  std::string out;
  int rest = mask;
  for (const auto& [bit, name] : kMaskNames) {
    if ((mask & bit) == 0) continue;
    if (!out.empty()) out += '|';
    out += name;
    rest &= ~bit;
  }
  if (rest != 0) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", static_cast<unsigned>(rest));
    if (!out.empty()) out += '|';
    out += buf;
  }
  return out.empty() ? "0" : out;
}

RtrRequest rtr_request(const ibv_qp_attr& attr, int mask, QpKind kind) noexcept {
  RtrRequest r;
  r.qp_type = kind;
  if ((mask & IBV_QP_AV) == 0) {
    // The driver does not read ah_attr: no GRH, no source index, no destination.
    r.is_global = false;
    r.sgid_index = 0;
    return r;
  }
  r.is_global = attr.ah_attr.is_global != 0;
  r.sgid_index = attr.ah_attr.grh.sgid_index;
  r.dgid = Gid::from_bytes(attr.ah_attr.grh.dgid.raw);
  return r;
}

RtrRequest RtrAttributes::request() const {
  RtrRequest r = rtr_request(attr, mask, qp_type);
  r.peer_gid_type = peer_gid_type;
  return r;
}

std::string RtrAttributes::to_string() const {
  std::string s = std::string(gidpolicy::to_string(qp_type)) + " INIT->RTR mask=" + rtr_mask_to_string(mask);
  s += " path_mtu=" + std::to_string(mtu_bytes(to_mtu(attr.path_mtu)));
  s += " dest_qp_num=" + std::to_string(attr.dest_qp_num) + " rq_psn=" + std::to_string(attr.rq_psn);
  s += " port_num=" + std::to_string(attr.ah_attr.port_num);
  if (is_global()) {
    s += " is_global=1 sgid_index=" + std::to_string(sgid_index()) + " dgid=" + dgid().to_string() +
         " hop_limit=" + std::to_string(attr.ah_attr.grh.hop_limit) +
         " traffic_class=" + std::to_string(attr.ah_attr.grh.traffic_class);
  } else {
    s += " is_global=0 dlid=" + std::to_string(attr.ah_attr.dlid);
  }
  if (qp_type == QpKind::rc)
    s += " max_dest_rd_atomic=" + std::to_string(attr.max_dest_rd_atomic) +
         " min_rnr_timer=" + std::to_string(attr.min_rnr_timer);
  s += agreement.agrees ? "; agrees" : "; DISAGREES: " + agreement.explanation;
  return s;
}

RtrBuilder::RtrBuilder(QpKind type, const GidTable& local, const Selection& selection, SourceIndex source)
    : type_(type), port_(local.port()) {
  const std::uint8_t idx = source.resolve(selection);
  agreement_ = check_agreement(local, selection.entry.gid, idx);
  if (const GidEntry* e = local.find(idx)) source_entry_ = *e;
  attr_.qp_state = IBV_QPS_RTR;
  mask_ = IBV_QP_STATE;
  attr_.ah_attr.port_num = static_cast<std::uint8_t>(port_.port & 0xffu);
  attr_.ah_attr.grh.sgid_index = idx;
  attr_.ah_attr.grh.hop_limit = kDefaultHopLimit;
  attr_.ah_attr.grh.traffic_class = kDefaultTrafficClass;
}

RtrBuilder::RtrBuilder(QpKind type, const GidTable& local, const Plan& plan)
    : RtrBuilder(type, local, plan.selection, SourceIndex::literal(plan.sgid_index)) {}

RtrBuilder& RtrBuilder::set(int bit) {
  mask_ |= bit;
  return *this;
}

RtrBuilder& RtrBuilder::remote(const PeerInfo& peer) {
  dest_qp_num(peer.qpn);
  rq_psn(peer.psn);
  destination(peer.gid, peer.lid);
  if (peer.mtu) peer_mtu_ = peer.mtu;
  if (peer.gid_type) peer_type_ = peer.gid_type;
  return *this;
}

RtrBuilder& RtrBuilder::dest_qp_num(std::uint32_t qpn) {
  attr_.dest_qp_num = qpn;
  return set(IBV_QP_DEST_QPN);
}

RtrBuilder& RtrBuilder::rq_psn(std::uint32_t psn) {
  attr_.rq_psn = psn;
  return set(IBV_QP_RQ_PSN);
}

RtrBuilder& RtrBuilder::destination(const Gid& dgid, std::uint16_t dlid) {
  dgid.copy_to(attr_.ah_attr.grh.dgid.raw);
  attr_.ah_attr.dlid = dlid;
  return set(IBV_QP_AV);
}

RtrBuilder& RtrBuilder::peer_mtu(Mtu mtu) {
  peer_mtu_ = mtu;
  return *this;
}

RtrBuilder& RtrBuilder::peer_gid_type(GidType type) {
  peer_type_ = type;
  return *this;
}

RtrBuilder& RtrBuilder::path_mtu(Mtu mtu) {
  attr_.path_mtu = to_ibv(mtu);
  return set(IBV_QP_PATH_MTU);
}

RtrBuilder& RtrBuilder::hop_limit(std::uint8_t hops) {
  attr_.ah_attr.grh.hop_limit = hops;
  return *this;
}

RtrBuilder& RtrBuilder::traffic_class(std::uint8_t tclass) {
  attr_.ah_attr.grh.traffic_class = tclass;
  return *this;
}

RtrBuilder& RtrBuilder::flow_label(std::uint32_t label) {
  attr_.ah_attr.grh.flow_label = label;
  return *this;
}

RtrBuilder& RtrBuilder::service_level(std::uint8_t sl) {
  attr_.ah_attr.sl = sl;
  return *this;
}

RtrBuilder& RtrBuilder::max_dest_rd_atomic(std::uint8_t n) {
  attr_.max_dest_rd_atomic = n;
  return set(IBV_QP_MAX_DEST_RD_ATOMIC);
}

RtrBuilder& RtrBuilder::min_rnr_timer(std::uint8_t code) {
  attr_.min_rnr_timer = code;
  return set(IBV_QP_MIN_RNR_TIMER);
}

RtrAttributes RtrBuilder::unchecked() const {
  RtrAttributes out;
  out.qp_type = type_;
  out.attr = attr_;
  out.mask = mask_;
  out.agreement = agreement_;
  out.peer_gid_type = peer_type_;
  // Path MTU: the smaller side's unless set.
  if ((out.mask & IBV_QP_PATH_MTU) == 0) {
    Mtu m = port_.active_mtu;
    if (peer_mtu_ && *peer_mtu_ < m) m = *peer_mtu_;
    out.attr.path_mtu = to_ibv(m);
    out.mask |= IBV_QP_PATH_MTU;
  }
  out.attr.ah_attr.is_global = rtr_needs_grh(port_.link_layer, out.dgid()) ? 1 : 0;
  return out;
}

result<RtrAttributes> RtrBuilder::build() const {
  const std::string qp = std::string(to_string(type_));
  if (type_ == QpKind::ud)
    return fail(errc::not_supported,
                "UD queue pairs carry no remote address at RTR: address each send instead");
  if (port_.port == 0 || port_.port > 255)
    return fail(errc::invalid_argument,
                "port number " + std::to_string(port_.port) + " does not fit ah_attr.port_num");

  RtrAttributes out = unchecked();

  // An explicit path MTU may not exceed either side.
  const Mtu local_mtu = port_.active_mtu;
  if ((mask_ & IBV_QP_PATH_MTU) != 0) {
    const Mtu m = to_mtu(out.attr.path_mtu);
    if (m > local_mtu)
      return fail(errc::mtu_too_large, "path MTU " + std::to_string(mtu_bytes(m)) +
                                           " exceeds the local active MTU " +
                                           std::to_string(mtu_bytes(local_mtu)) + " of " + port_.device);
    if (peer_mtu_ && m > *peer_mtu_)
      return fail(errc::mtu_too_large, "path MTU " + std::to_string(mtu_bytes(m)) +
                                           " exceeds the peer's MTU " +
                                           std::to_string(mtu_bytes(*peer_mtu_)));
  }
  const int required = required_rtr_mask(type_);
  if (const int missing = required & ~out.mask; missing != 0) {
    std::string how;
    for (const auto& [bit, name] : kMaskNames) {
      if ((missing & bit) == 0) continue;
      if (!how.empty()) how += ", ";
      how += std::string(name);
      if (const char* s = setter_for(bit)) how += std::string(" (") + s + ")";
    }
    return fail(errc::missing_required_attribute, qp + " INIT->RTR requires " + how);
  }
  if (const int extra = out.mask & ~(required | kRtrOptional); extra != 0)
    return fail(errc::invalid_argument, qp + " INIT->RTR does not take " + rtr_mask_to_string(extra) +
                                            " (the driver would return EINVAL)");
  if (out.attr.dest_qp_num > kMax24)
    return fail(errc::invalid_argument,
                "dest_qp_num " + std::to_string(out.attr.dest_qp_num) + " exceeds 24 bits");
  if (out.attr.rq_psn > kMax24)
    return fail(errc::invalid_argument, "rq_psn " + std::to_string(out.attr.rq_psn) + " exceeds 24 bits");
  if (out.attr.ah_attr.grh.flow_label > kMax20)
    return fail(errc::invalid_argument,
                "flow_label " + std::to_string(out.attr.ah_attr.grh.flow_label) + " exceeds 20 bits");

  const Gid dgid = Gid::from_bytes(out.attr.ah_attr.grh.dgid.raw);
  const LinkLayer ll = port_.link_layer;
  if (!out.is_global()) {
    // InfiniBand inside one subnet: LID-routed, no GRH (unchecked() decided it by rtr_needs_grh).
    if (out.attr.ah_attr.dlid == 0)
      return fail(errc::invalid_argument, "InfiniBand peer without a global GID needs its LID (dlid is 0)");
    return out;
  }
  if (dgid.is_zero())
    return fail(
        errc::peer_gid_zero,
        "the peer advertised the all-zero GID (its side selected an empty slot); a GRH needs a real dgid");
  if (ll.kind() != LinkLayer::Kind::infiniband && source_entry_ && source_entry_->usable() &&
      source_entry_->gid.is_ipv4_mapped() != dgid.is_ipv4_mapped())
    return fail(errc::family_mismatch, detail::holds(*source_entry_) +
                                           (source_entry_->gid.is_ipv4_mapped() ? " (IPv4)" : " (IPv6)") +
                                           " but the peer's GID " + dgid.to_string() + " is " +
                                           (dgid.is_ipv4_mapped() ? "IPv4" : "IPv6") +
                                           ": Linux refuses this RTR with EINVAL");
  const auto is_roce = [](GidType t) { return t == GidType::roce_v1 || t == GidType::roce_v2; };
  if (ll.kind() == LinkLayer::Kind::ethernet && source_entry_ && peer_type_ && is_roce(source_entry_->type) &&
      is_roce(*peer_type_) && source_entry_->type != *peer_type_)
    return fail(errc::roce_version_mismatch,
                detail::holds(*source_entry_) + " but the peer uses " + std::string(to_string(*peer_type_)) +
                    ": the RTR would pass and every packet be dropped (timeout)");
  return out;
}

}  // namespace gidpolicy
