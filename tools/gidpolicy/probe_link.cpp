// One link of `gidpolicy probe` (probe_link.hpp).
#include "probe_link.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

namespace gidpolicy::cli {
namespace detail_probe_link {

Platform platform_of(const std::string& s) {
  return s == "darwin" ? Platform::darwin : Platform::linux_kernel;
}

}  // namespace detail_probe_link

using namespace detail_probe_link;

Direction compose(const ProbeSide& sender_side, const SideOutcome& sender, const ProbeSide& receiver_side,
                  const SideOutcome& receiver) {
  Direction d;
  d.from = sender_side.role;
  d.to = receiver_side.role;
  // The prediction: the sender's own when it predicted a failure, else the receiver's.
  const bool sender_fails = sender.predicted != "ok";
  const SideOutcome& p = sender_fails ? sender : receiver;
  const ProbeSide& ps = sender_fails ? sender_side : receiver_side;
  d.predicted = p.predicted;
  d.predicted_errno = p.predicted_errno;
  d.predicted_side = p.predicted == "ok" ? "" : ps.role;
  d.predicted_reason = p.predicted_reason;
  d.predicted_rule = p.predicted_rule;
  if (p.builder_refused)
    d.predicted_reason += " (RtrBuilder refuses these attributes: " + *p.builder_refused + ")";
  // The observation: the first stage that failed, sender first.
  for (const auto* who : {&sender, &receiver}) {
    const ProbeSide& s = who == &sender ? sender_side : receiver_side;
    if (who->stage == "ok") continue;
    d.outcome = who->stage == "create_qp" ? "create_failed"
                : who->stage == "builder" ? "refused_before_rtr"
                : who->stage == "rtr"     ? "rtr_failed"
                                          : "rts_failed";
    d.side = s.role;
    d.err = who->err;
    d.platform = s.platform;
    d.detail = who->err_text;
    if (!who->causes.empty()) d.cause = who->causes.front();
    break;
  }
  if (d.outcome.empty()) {
    if (receiver.ping_received && receiver.payload_ok && receiver.write_ok) {
      d.outcome = "connected";
      d.rtt_us = sender.pong_received ? sender.rtt_us : std::nullopt;
    } else if (receiver.ping_received && !receiver.payload_ok) {
      d.outcome = "payload_mismatch";
      d.side = receiver_side.role;
    } else if (receiver.ping_received) {
      d.outcome = "write_mismatch";
      d.side = receiver_side.role;
    } else if (sender.send_status && *sender.send_status != "success") {
      d.outcome = "completion_error";
      d.side = sender_side.role;
      d.wc_status = sender.send_status;
      d.detail = "the sender's work request completed with " + *sender.send_status +
                 (*sender.send_status == "retry_exceeded"
                      ? " (IBV_WC_RETRY_EXC_ERR: no acknowledgement within the retry budget)"
                      : "");
    } else {
      d.outcome = "no_delivery";
      d.side = receiver_side.role;
      d.wc_status = sender.send_status;
      d.detail = "nothing arrived at the " + receiver_side.role + " within the attempt's deadline";
    }
    // A delivery failure's cause is the side whose table predicts that nothing gets through.
    if (d.outcome != "connected" && d.predicted == "times_out")
      d.cause = Json{{"id", d.predicted_rule}, {"likelihood", "confirmed"}, {"summary", p.predicted_reason}};
  }
  // Does the wire contradict the prediction?
  if (d.predicted == "ok") {
    d.contradicts = d.outcome != "connected";
  } else if (d.predicted == "error") {
    d.contradicts = !((d.outcome == "rtr_failed" || d.outcome == "create_failed") &&
                      d.err == d.predicted_errno && d.side == d.predicted_side);
  } else if (d.predicted == "times_out") {
    d.contradicts = d.outcome != "completion_error" && d.outcome != "no_delivery";
  }
  if (d.outcome == "refused_before_rtr") d.contradicts = false;  // nothing reached the driver
  return d;
}

Json direction_json(const Direction& d) {
  Json j;
  j["from"] = d.from;
  j["to"] = d.to;
  j["outcome"] = d.outcome;
  j["connected"] = d.outcome == "connected";
  j["side"] = d.side.empty() ? Json(nullptr) : Json(d.side);
  j["errno"] = d.err ? Json(d.err) : Json(nullptr);
  j["errno_name"] = d.err ? Json(errno_name(platform_of(d.platform), d.err)) : Json(nullptr);
  j["wc_status"] = d.wc_status ? Json(*d.wc_status) : Json(nullptr);
  j["rtt_us"] = d.rtt_us ? Json(std::round(*d.rtt_us * 10) / 10) : Json(nullptr);
  j["detail"] = d.detail;
  j["cause"] = d.cause;
  Json p;
  p["outcome"] = d.predicted;
  p["side"] = d.predicted_side.empty() ? Json(nullptr) : Json(d.predicted_side);
  p["errno"] = d.predicted_errno ? Json(d.predicted_errno) : Json(nullptr);
  p["rule"] = d.predicted_rule.empty() ? Json(nullptr) : Json(d.predicted_rule);
  p["reason"] = d.predicted_reason;
  j["predicted"] = std::move(p);
  j["contradicts_prediction"] = d.contradicts;
  return j;
}

std::string direction_text(const Direction& d) {
  std::string out = fmt::format("  {} -> {}: ", d.from, d.to);
  if (d.outcome == "connected") {
    out += d.rtt_us ? fmt::format("connected, round trip {:.1f} us", *d.rtt_us) : std::string("connected");
  } else {
    out += "FAILED " + d.outcome + (d.side.empty() ? "" : " at " + d.side);
    if (d.err) out += ": " + errno_name(platform_of(d.platform), d.err) + " (" + std::to_string(d.err) + ")";
    if (!d.detail.empty()) out += "\n      " + d.detail;
    if (d.cause.is_object())
      out += "\n      cause " + d.cause.value("id", std::string()) + ": " +
             d.cause.value("summary", std::string());
  }
  out += "\n      predicted: " + d.predicted + (d.predicted_side.empty() ? "" : " at " + d.predicted_side);
  if (!d.predicted_reason.empty()) out += ": " + d.predicted_reason;
  if (d.contradicts) out += "\n      THE WIRE CONTRADICTS THE PREDICTION";
  return out + "\n";
}

Json side_json(const ProbeSide& s) {
  Json j = hello_json(s);
  j.erase("nonce");
  j.erase("qps");
  return j;
}

LinkOutcome run_link(const AttemptContext& ctx, const ProbeSide& self, std::vector<LocalQp>& qps,
                     ProbeChannel& channel, ProbeClock::duration attempt, ProbeClock::time_point run_end) {
  LinkOutcome link;
  const auto bound = [&](ProbeClock::time_point t) { return std::min(t, run_end); };
  ProbeProblem problem;
  if (auto p = channel.send("hello", hello_json(self))) {
    link.problem = p;
    return link;
  }
  auto hello = channel.receive("hello", "the peer's hello", bound(ProbeClock::now() + attempt), problem);
  if (!hello) {
    link.problem = problem;
    return link;
  }
  std::string why;
  auto peer = hello_from_json(hello.value(), why);
  if (!peer) {
    link.problem = ProbeProblem{ProbeProblem::Kind::invalid, "the peer's hello: " + why};
    return link;
  }
  if (peer->role == self.role) {
    link.problem = ProbeProblem{ProbeProblem::Kind::invalid,
                                "the peer is a " + self.role + " too: one side listens, one connects"};
    return link;
  }
  if (peer->qps.size() != self.qps.size() ||
      !std::equal(self.qps.begin(), self.qps.end(), peer->qps.begin(),
                  [](const QpAdvert& a, const QpAdvert& b) { return a.kind == b.kind; })) {
    link.problem = ProbeProblem{ProbeProblem::Kind::invalid,
                                "the peer tries other queue pair types: give both sides the same --qp"};
    return link;
  }
  link.peer = peer;
  link.connected = true;
  for (std::size_t i = 0; i < qps.size(); ++i) {
    LocalQp& q = qps[i];
    const QpAdvert& remote = peer->qps[i];
    const std::string kind(to_string(q.kind));
    const auto attempt_end = bound(ProbeClock::now() + attempt);
    SideOutcome mine;
    const bool ready = prepare_qp(ctx, q, self, *peer, remote, mine);
    const auto fail_with = [&](ProbeProblem p) {
      link.problem = std::move(p);
      link.connected = false;
      if (q.qp) (void)ctx.api->destroy_qp(q.qp);
      return link;
    };
    if (auto p =
            channel.send("rtr", Json{{"kind", kind}, {"outcome", outcome_json(mine, ctx.model.platform)}}))
      return fail_with(*p);
    auto theirs_msg = channel.receive("rtr", "the peer's RTR outcome for " + kind, attempt_end, problem);
    if (!theirs_msg) return fail_with(problem);
    auto theirs = theirs_msg.value().contains("outcome")
                      ? outcome_from_json(theirs_msg.value()["outcome"], why)
                      : std::nullopt;
    if (!theirs) return fail_with({ProbeProblem::Kind::invalid, "the peer's RTR outcome: " + why});
    const bool peer_ready = theirs->stage == "ok" && !remote.create_errno;
    if (ready && peer_ready) {
      if (auto p = exchange_data(ctx, q, self, *peer, remote, channel, attempt_end, mine))
        return fail_with(*p);
      if (auto p = channel.send("result",
                                Json{{"kind", kind}, {"outcome", outcome_json(mine, ctx.model.platform)}}))
        return fail_with(*p);
      auto r = channel.receive("result", "the peer's result for " + kind,
                               attempt_end + std::chrono::seconds(2), problem);
      if (!r) return fail_with(problem);
      theirs = r.value().contains("outcome") ? outcome_from_json(r.value()["outcome"], why) : std::nullopt;
      if (!theirs) return fail_with({ProbeProblem::Kind::invalid, "the peer's result: " + why});
    }
    LinkOutcome::Qp done{q.kind, compose(self, mine, *peer, *theirs), compose(*peer, *theirs, self, mine)};
    link.connected = link.connected && done.out.outcome == "connected" && done.in.outcome == "connected";
    link.qps.push_back(std::move(done));
    if (q.qp) (void)ctx.api->destroy_qp(q.qp);
  }
  return link;
}

}  // namespace gidpolicy::cli
