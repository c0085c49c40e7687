// RtrBuilder: the INIT->RTR attributes of a UC or RC queue pair, built from the same selection
// whose GID was advertised.
//
// The one idea of gidpolicy: the entry a side advertises and the sgid_index it routes from are
// one decision. The builder takes sgid_index from the Selection (or a Plan); the only other way
// is the named rule SourceIndex::literal(n), kept to reproduce JACCL's `sgid_index = 1`, and the
// built attributes then say whether they agree (RtrAttributes::agreement).
//
// Hardware gotchas encoded here:
//  * Each setter writes a field and its mask bit together, and build() checks the bits the QP
//    type requires for INIT->RTR from a constexpr table (kRtrRequirements): a missing bit is an
//    EINVAL from the driver with no hint which one, here it is an error naming it.
//  * RoCE and Thunderbolt route by GID: the GRH (is_global) is always set there. On InfiniBand
//    a GRH is set only when the peer GID is global (not fe80::/10 and not zero).
//  * Rejected before the driver sees them: a zero peer GID (when a GRH is needed), an IPv4-mapped
//    source with a native IPv6 destination or the reverse (Linux: EINVAL), and a RoCE v1/v2 pair
//    when both sides state their version (passes RTR, then times out).
//  * Path MTU defaults to min(local active MTU, peer MTU); an explicit one may not exceed either.
//  * Repeated failed RTRs reportedly wedge Apple's Thunderbolt port until reboot: fail here.
//
// Example:
//   auto sel = gidpolicy::Ranked{}.select(table).value();
//   auto rtr = gidpolicy::RtrBuilder(gidpolicy::QpKind::uc, table, sel)
//                  .remote({.qpn = peer.qpn, .psn = peer.psn, .gid = peer.gid, .mtu = peer.mtu})
//                  .build();
//   if (!rtr) return rtr.error();
//   ibv_modify_qp(qp, &rtr.value().attr, rtr.value().mask);
#pragma once

#include <gidpolicy/agreement.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/plan.hpp>
#include <gidpolicy/policy.hpp>
#include <gidpolicy/qp.hpp>
#include <gidpolicy/rtr_request.hpp>
#include <gidpolicy/source_index.hpp>

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace gidpolicy {

/// What the peer told this side over the out-of-band channel.
struct PeerInfo {
  std::uint32_t qpn = 0;            ///< its queue pair number (24 bits)
  std::uint32_t psn = 0;            ///< its starting packet sequence number (24 bits)
  Gid gid;                          ///< the GID it advertised: becomes grh.dgid
  std::uint16_t lid = 0;            ///< its LID (InfiniBand without a GRH); 0 on RoCE/Thunderbolt
  std::optional<Mtu> mtu;           ///< its active MTU, when it sent one
  std::optional<GidType> gid_type;  ///< its GID's RoCE version, when it sent one (UCX does)
};

/// The INIT->RTR mask bits a QP type requires (ibv_modify_qp(3)).
struct RtrRequirement {
  QpKind qp_type;
  int required;
};
/// UC: STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN; RC also MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER;
/// UD: STATE only (UD QPs carry no remote address; the builder refuses them).
inline constexpr std::array<RtrRequirement, 3> kRtrRequirements{{
    {QpKind::uc, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN},
    {QpKind::rc, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER},
    {QpKind::ud, IBV_QP_STATE},
}};
/// The required INIT->RTR mask for `type`, from kRtrRequirements.
constexpr int required_rtr_mask(QpKind type) noexcept {
  for (const auto& r : kRtrRequirements)
    if (r.qp_type == type) return r.required;
  return IBV_QP_STATE;
}
/// "STATE|AV|PATH_MTU|..." for the ibv_qp_attr_mask bits in `mask` (unknown bits as hex).
std::string rtr_mask_to_string(int mask);

/// Whether an RTR from a port with link layer `ll` to `dgid` carries a GRH: always where the
/// fabric routes by GID (RoCE, Thunderbolt, and a link layer gidpolicy does not know), on
/// InfiniBand only for a global destination (non-zero and outside fe80::/10); inside one IB
/// subnet the LID routes. RtrBuilder and predict_rtr() both use this rule.
constexpr bool rtr_needs_grh(LinkLayer ll, const Gid& dgid) noexcept {
  if (ll.kind() != LinkLayer::Kind::infiniband) return true;
  return !dgid.is_zero() && !dgid.is_link_local();
}

/// What a driver judges of `modify_qp(qp, &attr, mask)` taking a QP of kind `kind` to RTR, and
/// of `ibv_create_ah(pd, &attr.ah_attr)` for a UD QP (call it with mask IBV_QP_AV): the one
/// reduction of verbs attributes to an RtrRequest, used by the builder (RtrAttributes::request),
/// the in-process fake's modify_qp, the drop-in fake's address handles and the fleet analysis.
///
/// The driver reads only the fields the mask names: without IBV_QP_AV the request has no GRH,
/// no sgid_index and no destination (is_global false, index 0, dgid zero), whatever `attr`
/// holds. With it: is_global, grh.sgid_index and grh.dgid as the caller set them. ibv_qp_attr
/// has no field for the peer's GID type, so peer_gid_type is left unset; source_netdev_present
/// stays true (whether the source GID's netdev exists is the host's state, not the call's: the
/// fakes set it from theirs).
[[nodiscard]] RtrRequest rtr_request(const ibv_qp_attr& attr, int mask, QpKind kind) noexcept;

/// Defaults the builder uses when a value is not set, and why.
/// Hop limit 64: RoCE v2 packets cross routers like IP packets; JACCL's 1 works only on one L2
/// segment or a direct Thunderbolt cable (set hop_limit(1) to reproduce it). Traffic class 0:
/// the default class, as NCCL_IB_TC and UCX default to; set it to your fabric's lossless class.
inline constexpr std::uint8_t kDefaultHopLimit = 64;
inline constexpr std::uint8_t kDefaultTrafficClass = 0;

/// The attributes to hand to ibv_modify_qp, and what they were built from.
struct RtrAttributes {
  ibv_qp_attr attr{};  ///< qp_state = IBV_QPS_RTR and every field named by `mask`
  int mask = 0;        ///< always includes required_rtr_mask(qp_type)
  QpKind qp_type = QpKind::uc;
  /// Whether the entry at attr.ah_attr.grh.sgid_index holds the advertised GID. Always true
  /// for a selected source on a usable entry; false is JACCL's bug reproduced on purpose.
  Agreement agreement;
  std::optional<GidType> peer_gid_type;  ///< as given, for predictions

  [[nodiscard]] bool agrees() const noexcept { return agreement.agrees; }
  [[nodiscard]] bool is_global() const noexcept { return attr.ah_attr.is_global != 0; }
  [[nodiscard]] std::uint8_t sgid_index() const noexcept { return attr.ah_attr.grh.sgid_index; }
  [[nodiscard]] Gid dgid() const noexcept { return Gid::from_bytes(attr.ah_attr.grh.dgid.raw); }
  /// The request judge_rtr() and predict_rtr() evaluate: rtr_request(attr, mask, qp_type), plus
  /// the peer's GID type the builder was told (a prediction input no ibv_qp_attr carries).
  [[nodiscard]] RtrRequest request() const;
  /// One line: "uc RTR mask=STATE|AV|... sgid_index=3 dgid=... hop_limit=64 ... agrees".
  [[nodiscard]] std::string to_string() const;
};

/// Builds RtrAttributes; see the header comment. Setters return *this for chaining.
class RtrBuilder {
 public:
  /// Route from `selection` (or, with SourceIndex::literal(n), from n) on `local`'s port.
  /// `local` is read here and not kept.
  RtrBuilder(QpKind type, const GidTable& local, const Selection& selection,
             SourceIndex source = SourceIndex::selected());
  /// Route the way a profile's plan says (its selection and its resolved sgid_index).
  RtrBuilder(QpKind type, const GidTable& local, const Plan& plan);

  /// Everything the peer sent: sets DEST_QPN, RQ_PSN and the AV (dgid, dlid), and records the
  /// peer's MTU and GID type for the path-MTU default and the version check.
  RtrBuilder& remote(const PeerInfo& peer);
  RtrBuilder& dest_qp_num(std::uint32_t qpn);                        ///< IBV_QP_DEST_QPN
  RtrBuilder& rq_psn(std::uint32_t psn);                             ///< IBV_QP_RQ_PSN
  RtrBuilder& destination(const Gid& dgid, std::uint16_t dlid = 0);  ///< IBV_QP_AV
  RtrBuilder& peer_mtu(Mtu mtu);                                     ///< input to the path-MTU default
  RtrBuilder& peer_gid_type(GidType type);                           ///< input to the RoCE version check
  RtrBuilder& path_mtu(Mtu mtu);                   ///< IBV_QP_PATH_MTU (otherwise min(local, peer))
  RtrBuilder& hop_limit(std::uint8_t hops);        ///< grh.hop_limit (kDefaultHopLimit)
  RtrBuilder& traffic_class(std::uint8_t tclass);  ///< grh.traffic_class (kDefaultTrafficClass)
  RtrBuilder& flow_label(std::uint32_t label);     ///< grh.flow_label (20 bits; default 0)
  RtrBuilder& service_level(std::uint8_t sl);      ///< ah_attr.sl (default 0)
  RtrBuilder& max_dest_rd_atomic(std::uint8_t n);  ///< IBV_QP_MAX_DEST_RD_ATOMIC (RC)
  RtrBuilder& min_rnr_timer(std::uint8_t code);    ///< IBV_QP_MIN_RNR_TIMER (RC)

  /// The attributes, or the first problem: errc::not_supported (UD), errc::invalid_argument
  /// (a value wider than its field, an RC-only attribute on UC, an InfiniBand peer with neither
  /// a global GID nor a LID), errc::mtu_too_large (an explicit path MTU above either side: the
  /// driver's EINVAL), errc::missing_required_attribute (names the bits), errc::peer_gid_zero,
  /// errc::family_mismatch, errc::roce_version_mismatch.
  [[nodiscard]] result<RtrAttributes> build() const;
  /// The attributes build() returns, without its checks: the fields as set, the path-MTU
  /// default and the GRH decision (rtr_needs_grh()). What a program that builds its attributes
  /// by hand would send; predict_rtr() and diagnose() judge these when build() refuses, to say
  /// what the driver would have answered. Never hand them to modify_qp.
  [[nodiscard]] RtrAttributes unchecked() const;

 private:
  RtrBuilder& set(int bit);
  QpKind type_;
  PortInfo port_;
  Agreement agreement_;
  std::optional<GidEntry> source_entry_;  // what the table holds at sgid_index
  ibv_qp_attr attr_{};
  int mask_ = 0;
  std::optional<Mtu> peer_mtu_;
  std::optional<GidType> peer_type_;
};

}  // namespace gidpolicy
