// Link judgment (see link.hpp): a side's RTR through the builder and its driver model, and the
// delivery rule, shared by the fake fabric and the fleet analysis.
#include <gidpolicy/link.hpp>

namespace gidpolicy {

std::string_view to_string(LinkOutcome o) noexcept {
  switch (o) {
    case LinkOutcome::ok:
      return "ok";
    case LinkOutcome::dropped:
      return "dropped";
    case LinkOutcome::times_out:
      return "times_out";
    case LinkOutcome::rtr_error:
      return "rtr_error";
    case LinkOutcome::qp_refused:
      return "qp_refused";
    case LinkOutcome::unusable:
      return "unusable";
  }
  return "ok";
}

std::string rtr_failure_text(std::uint8_t sgid_index, std::string_view driver_said) {
  return "RTR from sgid_index " + std::to_string(sgid_index) + " failed: " + std::string(driver_said);
}

std::string times_out_text(std::string_view reason) { return "traffic times out: " + std::string(reason); }

PeerInfo told_by(const GidTable& table, const Plan& plan, std::uint32_t qpn, std::uint32_t psn) {
  PeerInfo info;
  info.qpn = qpn;
  info.psn = psn;
  info.gid = plan.selection.entry.gid;
  info.lid = table.port().lid;
  info.mtu = table.port().active_mtu;
  return info;
}

SideRtr judge_side_rtr(const GidTable& table, const Plan& plan, const PeerInfo& peer,
                       const DriverModel& model) {
  SideRtr out;
  auto built = RtrBuilder(QpKind::uc, table, plan).remote(peer).build();
  if (!built) {
    out.outcome = LinkOutcome::rtr_error;
    out.text = "cannot build its RTR: " + built.error().what();
    out.refused = std::move(built).error();
    return out;
  }
  const RtrAttributes& a = built.value();
  // What modify_qp sees: the attributes and their mask, nothing the builder was told besides.
  out.verdict = judge_rtr(table, rtr_request(a.attr, a.mask, a.qp_type), model);
  if (out.verdict.outcome == RtrOutcome::error) {
    out.outcome = LinkOutcome::rtr_error;
    out.text = rtr_failure_text(a.sgid_index(), out.verdict.to_string(model.platform));
  } else if (out.verdict.outcome == RtrOutcome::times_out) {
    out.outcome = LinkOutcome::times_out;
    out.text = times_out_text(out.verdict.reason);
  }
  out.attributes = std::move(built).value();
  return out;
}

std::optional<std::string> delivery_failure(const GidTable& sender, std::uint8_t sgid_index,
                                            const Gid& advertised) {
  const GidEntry* e = sender.find(sgid_index);
  if (!e || !e->usable())
    return "sends from sgid_index " + std::to_string(sgid_index) + ", which holds no GID, but advertises " +
           advertised.to_string() + ": dropped";
  if (e->gid != advertised)
    return "sends from " + e->gid.to_string() + " (sgid_index " + std::to_string(sgid_index) +
           ") but advertises " + advertised.to_string() + ": dropped";
  return std::nullopt;
}

std::uint8_t wire_framing(GidType t) noexcept {
  switch (t) {
    case GidType::ib:
    case GidType::roce_v1:
      return 1;
    case GidType::roce_v2:
      return 2;
    case GidType::unknown:
      return 0;
  }
  return 0;
}

namespace detail_link {

std::string_view framing_name(GidType t) {
  return t == GidType::roce_v2 ? "RoCE v2" : t == GidType::roce_v1 ? "RoCE v1" : "IB/RoCE v1";
}

}  // namespace detail_link

std::optional<std::string> framing_failure(GidType sender, std::uint8_t sender_index, GidType receiver) {
  const std::uint8_t s = wire_framing(sender), r = wire_framing(receiver);
  if (s == 0 || r == 0 || s == r) return std::nullopt;
  return "sends " + std::string(detail_link::framing_name(sender)) + " frames (sgid_index " +
         std::to_string(sender_index) + "); the peer's port routes " +
         std::string(detail_link::framing_name(receiver)) +
         ": nothing is delivered, the sender's retries run out";
}

std::optional<std::string> framing_failure(const GidTable& sender, std::uint8_t sender_index,
                                           const GidTable& receiver, std::uint8_t receiver_index) {
  const GidEntry* s = sender.find(sender_index);
  const GidEntry* r = receiver.find(receiver_index);
  if (!s || !r || !s->usable() || !r->usable()) return std::nullopt;
  return framing_failure(s->type, sender_index, r->type);
}

namespace {

DirectionJudgment from_rtr(const SideRtr& s, bool sender) {
  DirectionJudgment d;
  d.outcome = s.outcome;
  d.sender_at_fault = sender;
  d.err = s.outcome == LinkOutcome::ok ? 0 : s.verdict.err;
  d.text = s.text;
  return d;
}

/// One direction once both RTRs are known: the sender's refusal first, else the receiver's
/// (its QP never reached RTR, so nothing is received), then a timeout, then delivery.
/// Then the delivery rule, then the framing rule (the order the receiving port applies them: a
/// packet from another GID is dropped whatever its framing).
DirectionJudgment direction(const SideRtr& sender, const SideRtr& receiver, const LinkSide& s,
                            const LinkSide& r) {
  if (sender.outcome == LinkOutcome::rtr_error) return from_rtr(sender, true);
  if (receiver.outcome == LinkOutcome::rtr_error) return from_rtr(receiver, false);
  if (sender.outcome == LinkOutcome::times_out) return from_rtr(sender, true);
  DirectionJudgment d;
  const std::uint8_t index = sender.attributes->sgid_index();
  if (auto why = delivery_failure(*s.table, index, s.plan->selection.entry.gid)) {
    d.outcome = LinkOutcome::dropped;
    d.text = std::move(*why);
  } else if (sender.attributes->is_global() && receiver.attributes->is_global()) {
    if (auto frame = framing_failure(*s.table, index, *r.table, receiver.attributes->sgid_index())) {
      d.outcome = LinkOutcome::times_out;
      d.text = std::move(*frame);
    }
  }
  return d;
}

}  // namespace

LinkJudgment judge_link(const LinkSide& a, const LinkSide& b) {
  const SideRtr ra = judge_side_rtr(*a.table, *a.plan, told_by(*b.table, *b.plan, b.qpn, b.psn), *a.model);
  const SideRtr rb = judge_side_rtr(*b.table, *b.plan, told_by(*a.table, *a.plan, a.qpn, a.psn), *b.model);
  LinkJudgment j;
  j.a_to_b = direction(ra, rb, a, b);
  j.b_to_a = direction(rb, ra, b, a);
  return j;
}

}  // namespace gidpolicy
