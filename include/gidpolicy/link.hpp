// Link judgment: how one direction of a link between two planned sides ends, and why.
//
// The one rule the fake fabric (fakes/fake_fabric.hpp, `gidpolicy simulate`) and the fleet
// analysis (fleet.hpp, `gidpolicy fleet`) apply, so a fleet prediction and a fabric run cannot
// disagree about a link. A direction from a sender to a receiver delivers when
//  1. the sender's RTR, built by RtrBuilder from the sender's plan and what the receiver told it
//     (PeerInfo), is one the builder accepts;
//  2. the sender's driver model accepts it (judge_rtr on rtr_request() of those attributes: what
//     modify_qp sees, nothing the attributes do not carry) and does not predict a timeout; and
//  3. the delivery rule holds: the sender's packets carry the GID of its entry at sgid_index, the
//     receiver accepts only the GID it was told, so that entry must hold the GID the sender
//     advertised (checked on the sender's table as it is when it sends); and
//  4. the framing rule holds: the sender's entry at sgid_index and the receiver's at its own
//     sgid_index are of the same RoCE version. RoCE v1 frames are Ethertype 0x8915 with a GRH,
//     RoCE v2 frames are UDP datagrams to port 4791; a port answers only the framing of the GID
//     type its QP's path uses, so a v1 QP and a v2 QP never hear each other. modify_qp cannot
//     see this (it is not told the peer's type): both RTRs pass and an RC sender ends in
//     IBV_WC_RETRY_EXC_ERR, so the direction times out.
// Each side brings up its own QP whatever the other side's did (the peers exchanged first), so a
// direction names its sender's failure first, else its receiver's (a direction whose receiver
// never reached RTR delivers nothing).
//
// The fleet precomputes steps 1-3 per side and peer class and step 4 per side (a side's framing
// fails against every peer of the other version, one cause) and looks them up per link; the fake
// fabric runs steps 1-2 through the fake verbs (whose modify_qp judges with the same model on the
// same reduction) and steps 3-4 on the fake's tables at send time. judge_link() is the whole rule in
// one call, for one pair.
//
// Example (a host's table and plan against a peer's):
//   const gidpolicy::DriverModel model = gidpolicy::DriverModel::for_table(table);
//   const gidpolicy::LinkJudgment j = gidpolicy::judge_link(
//       {.table = &table, .plan = &plan, .model = &model},
//       {.table = &after, .plan = &plan, .model = &model});  // the peer's table and plan
//   if (!j.connected()) std::cerr << j.a_to_b.text << "; " << j.b_to_a.text << "\n";
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/plan.hpp>
#include <gidpolicy/rtr.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gidpolicy {

/// How one direction of a link ends, worst last. A link connects when both directions are ok.
enum class LinkOutcome : std::uint8_t {
  ok,          ///< delivered
  dropped,     ///< the sender's packets carry another GID (or none) than the peer was told
  times_out,   ///< RTR passes, traffic never arrives (an unroutable source, RoCE v1 against v2)
  rtr_error,   ///< RtrBuilder refuses, or modify_qp to RTR fails (errno)
  qp_refused,  ///< create_qp fails (Apple's ~10 QPs per device)
  unusable,    ///< a side cannot take part: device missing, port down, nothing selected
};
std::string_view to_string(LinkOutcome o) noexcept;  ///< "ok", "dropped", ..., "unusable" (stable: JSON)

/// Steps 1 and 2 for one side: its RTR towards a peer, built and judged.
struct SideRtr {
  LinkOutcome outcome = LinkOutcome::ok;    ///< ok, times_out or rtr_error
  std::optional<RtrAttributes> attributes;  ///< what the builder built (absent when it refused)
  std::optional<Error> refused;             ///< the builder's refusal
  RtrVerdict verdict;                       ///< the model's, on rtr_request() of the attributes (built only)
  /// Empty when ok; "cannot build its RTR: ...", "RTR from sgid_index 1 failed: EINVAL (22): ...",
  /// "traffic times out: ..." (the side is not named: callers prefix a host or a device).
  std::string text;
};

/// The UC RTR a side with `table` and `plan` builds towards a peer that told it `peer`, judged by
/// `model` as its modify_qp would judge it (rtr_request(): the peer's GID type and anything else
/// the attributes do not carry play no part).
[[nodiscard]] SideRtr judge_side_rtr(const GidTable& table, const Plan& plan, const PeerInfo& peer,
                                     const DriverModel& model);

/// Step 3, the delivery rule: nullopt when the entry at `sgid_index` of the sender's table (as it
/// is when it sends) holds `advertised`, the GID the sender told its peer; otherwise why the
/// receiver drops its packets: "sends from sgid_index 1, which holds no GID, but advertises X:
/// dropped" / "sends from G (sgid_index 1) but advertises X: dropped".
[[nodiscard]] std::optional<std::string> delivery_failure(const GidTable& sender, std::uint8_t sgid_index,
                                                          const Gid& advertised);

/// A GID type as the wire frames it: 1 for IB/RoCE v1 (one sysfs type, "IB/RoCE v1": a GRH, on
/// Ethernet under Ethertype 0x8915), 2 for RoCE v2 (UDP port 4791), 0 when not known (no rule).
[[nodiscard]] std::uint8_t wire_framing(GidType t) noexcept;

/// Step 4, the framing rule, on the two entries the QPs route from: nullopt when they frame
/// alike (or either type is unknown, or either slot holds no GID: steps 1-3 judge those);
/// otherwise why nothing the sender sends is delivered: "sends RoCE v1 frames (sgid_index 0);
/// the peer's port routes RoCE v2: nothing is delivered, the sender's retries run out". The
/// peer is not named (the fleet judges one cause per side for all peers of the other version).
[[nodiscard]] std::optional<std::string> framing_failure(const GidTable& sender, std::uint8_t sender_index,
                                                         const GidTable& receiver,
                                                         std::uint8_t receiver_index);
/// The same rule on the two types: "sends <sender> frames (sgid_index N); the peer's port routes
/// <receiver>: ...", or nullopt when wire_framing() of the two is equal or either is 0.
[[nodiscard]] std::optional<std::string> framing_failure(GidType sender, std::uint8_t sender_index,
                                                         GidType receiver);

/// The texts judge_side_rtr() uses, for a caller that runs the steps itself (the fake fabric
/// applies the attributes through the fake verbs): "RTR from sgid_index N failed: <driver>".
[[nodiscard]] std::string rtr_failure_text(std::uint8_t sgid_index, std::string_view driver_said);
/// "traffic times out: <reason>".
[[nodiscard]] std::string times_out_text(std::string_view reason);

/// One side of a pair for judge_link(): its table, its plan, its driver (none kept).
struct LinkSide {
  const GidTable* table = nullptr;
  const Plan* plan = nullptr;
  const DriverModel* model = nullptr;
  std::uint32_t qpn = 1;  ///< what it tells its peer (the verdict never depends on it)
  std::uint32_t psn = 7;
};

/// One direction of a judged pair.
struct DirectionJudgment {
  LinkOutcome outcome = LinkOutcome::ok;
  bool sender_at_fault = true;  ///< whose failure `text` is (false: the receiver's RTR)
  int err = 0;                  ///< the driver's errno for a failed or timed-out RTR, else 0
  std::string text;             ///< empty when ok
  [[nodiscard]] bool ok() const noexcept { return outcome == LinkOutcome::ok; }
};

/// Both directions of one pair.
struct LinkJudgment {
  DirectionJudgment a_to_b, b_to_a;
  [[nodiscard]] bool connected() const noexcept { return a_to_b.ok() && b_to_a.ok(); }
};

/// The whole rule for one pair: each side's RTR towards what the other told it (PeerInfo from
/// the other's plan and port), then each direction's delivery and framing. The sides' tables, plans and
/// models must be set.
[[nodiscard]] LinkJudgment judge_link(const LinkSide& a, const LinkSide& b);

/// What a side tells its peer over the out-of-band channel: its QPN and PSN, the GID its plan
/// advertises, its port's LID and active MTU (the exchange JACCL-style programs make).
[[nodiscard]] PeerInfo told_by(const GidTable& table, const Plan& plan, std::uint32_t qpn, std::uint32_t psn);

}  // namespace gidpolicy
