// `gidpolicy probe --listen/--connect`: one link tried on the wire with the GID a profile or a
// stack uses, each direction's outcome beside the prediction made before the attempt
// (docs/probe.md).
#include "probe_cmd.hpp"

#include "commands.hpp"
#include "env_file.hpp"
#include "output.hpp"
#include "probe_attempt.hpp"
#include "probe_wire.hpp"
#include "render.hpp"
#include "subcommands.hpp"

#include <gidpolicy/profiles.hpp>
#include <gidpolicy/stack_table.hpp>
#include <gidpolicy/stacks.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <fmt/core.h>

#include <unistd.h>

#include <cmath>
#include <iostream>
#include <random>

namespace gidpolicy::cli {
namespace detail_probe_cmd {

// One direction of one QP type, as both sides' outcomes say it.
struct Direction {
  std::string from, to;
  std::string outcome;  ///< connected, create_failed, refused_before_rtr, rtr_failed, rts_failed,
                        ///< completion_error, no_delivery, payload_mismatch, write_mismatch, not_attempted
  std::string side;     ///< where it failed ("" when connected)
  int err = 0;
  std::string platform;  ///< the numbering of err
  std::string detail;
  std::optional<std::string> wc_status;
  std::optional<double> rtt_us;
  Json cause = nullptr;
  // The prediction for the link (the first side predicted not to work, sender first).
  std::string predicted;
  int predicted_errno = 0;
  std::string predicted_side;
  std::string predicted_reason;
  std::string predicted_rule;
  bool contradicts = false;
};

Platform platform_of(const std::string& s) {
  return s == "darwin" ? Platform::darwin : Platform::linux_kernel;
}

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

// The pin's verdict as a cause, when the stack is launched with a pin that is stale on this port.
std::optional<Json> pin_cause(StackId id, const StackLaunch& launch, const GidTable& table,
                              const DriverModel& model) {
  if (!launch.pinned) return std::nullopt;
  for (const SettingReading& r : launch.read) {
    if (r.variable != launch.pin_variable) continue;
    for (const PinReading& reading : read_pin(r.variable, r.value, false)) {
      if (reading.stack != id) continue;
      const PinJudgement j = judge_pin(reading, table, model);
      if (j.status != PinJudgement::Status::stale) return std::nullopt;
      std::string remedy = "unset " + launch.pin_variable;
      if (j.right_index) remedy += ", or set it to " + std::to_string(*j.right_index);
      return Json{{"id", "stale_pin"},
                  {"likelihood", "confirmed"},
                  {"summary", r.variable + "=" + r.value + " (" + r.origin + "): " + j.summary},
                  {"remedy", remedy}};
    }
  }
  return std::nullopt;
}

}  // namespace detail_probe_cmd

using namespace detail_probe_cmd;

ProbeCommand::ProbeCommand(CLI::App& app) {
  cmd_ = add_subcommand(app, "probe");
  auto* listen =
      cmd_->add_option("--listen", o_.listen, "[ADDR:]PORT: wait for the peer here (PORT 0: any, printed)");
  auto* connect = cmd_->add_option("--connect", o_.connect, "HOST:PORT: the peer's --listen");
  listen->excludes(connect);
  cmd_->add_option("--device", o_.device, "The live RDMA device (default: the first one)");
  cmd_->add_option("--port", o_.port, "Its port (1-255)")->check(CLI::Range(1, 255))->capture_default_str();
  cmd_->add_option("--verbs", o_.verbs, "Live backend: dlopen or linked")
      ->check(CLI::IsMember({"dlopen", "linked"}))
      ->capture_default_str();
  auto* profile =
      cmd_->add_option("--profile", o_.profile, "The profile whose plan is advertised (default auto)");
  auto* stack = cmd_->add_option(
      "--stack", o_.stack,
      "A stack's own choice under the launch's settings: " + stack_names(StackSet::predicted));
  sgid_opt_ =
      cmd_->add_option("--sgid-index", sgid_, "Advertise and route from this index, as perftest -x N");
  profile->excludes(stack)->excludes(sgid_opt_);
  stack->excludes(sgid_opt_);
  cmd_->add_option("--env-file", o_.env_file,
                   "With --stack: a dotenv or docker-compose file, the launch's settings");
  cmd_->add_flag("--no-env", o_.no_env,
                 "With --stack: do not read the stack's settings from the environment");
  cmd_->add_option("--qp", o_.qp, "Queue pair types to try: rc, uc or both")
      ->check(CLI::IsMember({"rc", "uc", "both"}))
      ->capture_default_str();
  cmd_->add_option("--deadline", o_.deadline, "The whole run's deadline in seconds")
      ->check(CLI::Range(0.05, 600.0))
      ->capture_default_str();
  cmd_->add_option("--attempt-deadline", o_.attempt_deadline,
                   "Each wait on the peer and each QP type's data exchange, in seconds")
      ->check(CLI::Range(0.05, 600.0))
      ->capture_default_str();
  cmd_->add_option("--platform", o_.platform, "Predict for this platform (default: by link layer)")
      ->check(CLI::IsMember({"linux", "darwin"}));
  cmd_->add_flag("--json", o_.json, "Print JSON (schemas/gidpolicy.probe.schema.json)");
}

int ProbeCommand::run() const {
  ProbeArgs o = o_;
  if (sgid_opt_->count()) o.sgid_index = sgid_;
  return run_probe(o);
}

int run_probe(const ProbeArgs& o) {
  if (!o.listen && !o.connect) return usage_error("probe: give --listen [ADDR:]PORT or --connect HOST:PORT");
  if ((o.env_file || o.no_env) && !o.stack)
    return usage_error("probe: --env-file and --no-env are for --stack");
  if (o.sgid_index && *o.sgid_index > 255)
    return usage_error("--sgid-index: expected an index 0..255 (grh.sgid_index is 8 bits), found " +
                       std::to_string(*o.sgid_index));
  const auto run_end = ProbeClock::now() + std::chrono::duration_cast<ProbeClock::duration>(
                                               std::chrono::duration<double>(o.deadline));
  const auto attempt = std::chrono::duration_cast<ProbeClock::duration>(
      std::chrono::duration<double>(std::min(o.attempt_deadline, o.deadline)));
  const auto bound = [&](ProbeClock::time_point t) { return std::min(t, run_end); };
  const std::string role = o.listen ? "listener" : "connector";

  // Everything local first: a mistake here is said before the peer is involved.
  auto api = make_api(o.verbs);
  if (!api) return usage_error(api.error());
  verbs::VerbsApi& v = *api.value();
  std::string device_name;
  if (o.device) {
    device_name = *o.device;
  } else {
    auto names = v.device_names();
    if (!names) return usage_error(names.error());
    device_name = names.value().front();
  }
  auto dev = v.open_device(device_name);
  if (!dev) return usage_error(dev.error());
  auto table = verbs::snapshot(v, dev.value(), o.port);
  if (!table) return usage_error(table.error());
  const GidTable& t = table.value();
  const DriverModel model = driver_for(t, o.platform);

  Profile profile = profiles::automatic();
  std::optional<Json> stale_pin;
  if (o.stack) {
    const StackInfo* s = find_stack(*o.stack);
    if (!s || !s->predicted)
      return usage_error("--stack: expected one of " + stack_names(StackSet::predicted) + ", found '" +
                         bounded(*o.stack) + "'");
    auto settings = read_launch_settings(!o.no_env, o.env_file);
    if (!settings) return usage_error(settings.error());
    const StackLaunch launch = read_launch(s->id, settings.value());
    if (launch.refused)
      return usage_error("--stack " + *o.stack + ": the stack does not start: " + launch.pin_variable + " " +
                         *launch.refused);
    auto p = stack_profile_for(s->id, t, launch);
    if (!p) return usage_error(p.error());
    profile = p.value();
    stale_pin = pin_cause(s->id, launch, t, model);
  } else if (o.sgid_index) {
    profile = parse_profile("ds4:index=" + std::to_string(*o.sgid_index)).value();
  } else if (o.profile) {
    auto p = parse_profile(*o.profile);
    if (!p)
      return usage_error(Error(p.error().code, "--profile " + bounded(*o.profile) + ": " + p.error().detail));
    profile = p.value();
  }
  auto plan = profile.plan(t);

  std::vector<QpKind> kinds;
  if (o.qp != "uc") kinds.push_back(QpKind::rc);
  if (o.qp != "rc") kinds.push_back(QpKind::uc);
  std::mt19937 rng(std::random_device{}());
  ProbeSide self;
  self.role = role;
  self.device = t.port().device;
  self.port = t.port().port;
  self.link_layer = std::string(to_string(t.port().link_layer));
  self.platform = std::string(to_string(model.platform));
  self.profile = profile.spec();
  self.lid = t.port().lid;
  self.mtu = t.port().active_mtu;
  self.nonce = static_cast<std::uint32_t>(rng());
  std::vector<LocalQp> qps;
  if (plan) {
    self.gid = plan.value().selection.entry.gid;
    self.gid_index = plan.value().selection.entry.index;
    self.sgid_index = plan.value().sgid_index;
    self.gid_type = plan.value().selection.entry.type;
    for (QpKind k : kinds) {
      qps.push_back(make_local_qp(v, dev.value(), o.port, k, static_cast<std::uint32_t>(rng())));
      const LocalQp& q = qps.back();
      self.qps.push_back(QpAdvert{.kind = k,
                                  .create_errno = q.create_errno,
                                  .qpn = q.qpn,
                                  .psn = q.psn,
                                  .addr = q.keys.addr,
                                  .rkey = q.keys.rkey});
    }
  }

  Json doc = json_envelope("gidpolicy.probe", 1, this_host_name(), "live devices (" + v.backend_name() + ")");
  doc["role"] = role;
  doc["address"] = o.listen ? *o.listen : *o.connect;
  doc["protocol"] = kProbeProtocol;
  doc["settings"] =
      Json{{"rc_timeout", kProbeRcTimeout}, {"rc_retry_cnt", kProbeRcRetryCount},
           {"rnr_retry", kProbeRnrRetry},   {"min_rnr_timer", kProbeMinRnrTimer},
           {"deadline_s", o.deadline},      {"attempt_deadline_s", std::min(o.attempt_deadline, o.deadline)}};
  doc["local"] = side_json(self);
  doc["peer"] = nullptr;
  doc["qps"] = Json::array();
  doc["connected"] = false;
  doc["problem"] = nullptr;
  // One line naming what went wrong with the peer; the document says it too.
  const auto give_up = [&](const ProbeProblem& p) {
    if (o.json) {
      doc["problem"] = Json{{"kind", std::string(to_string(p.kind))}, {"text", p.text}};
      print_json(doc);
    }
    print_error("probe: " + p.text);
    return p.exit_code();
  };

  ProbeProblem problem;
  std::optional<ProbeSocket> sock;
  if (o.listen) {
    std::uint16_t bound_port = 0;
    auto fd = probe_listen(*o.listen, bound_port, problem);
    if (!fd)
      return problem.kind == ProbeProblem::Kind::invalid ? usage_error(problem.text) : give_up(problem);
    std::cerr << "gidpolicy probe: listening on port " << bound_port << "\n" << std::flush;
    sock = probe_accept(*fd, run_end, problem);
    ::close(*fd);
    if (!sock && problem.kind == ProbeProblem::Kind::absent)
      problem.text = fmt::format(
          "absent peer: nobody connected within --deadline {:g} s (start `gidpolicy probe "
          "--connect` on the other host)",
          o.deadline);
  } else {
    sock = probe_connect(*o.connect, bound(ProbeClock::now() + attempt), problem);
    if (!sock && problem.kind == ProbeProblem::Kind::invalid) return usage_error(problem.text);
  }
  if (!sock) return give_up(problem);
  if (!plan) {
    const std::string why = "the selection failed: " + plan.error().what();
    (void)sock->send("abort", Json{{"reason", why}});
    if (o.json) {
      doc["problem"] = Json{{"kind", "selection"}, {"text", why}};
      print_json(doc);
    }
    print_error("probe: " + why);
    return kExitFinding;
  }
  if (auto p = sock->send("hello", hello_json(self))) return give_up(*p);
  auto hello = sock->receive("hello", "the peer's hello", bound(ProbeClock::now() + attempt), problem);
  if (!hello) return give_up(problem);
  std::string why;
  auto peer = hello_from_json(hello.value(), why);
  if (!peer) return give_up({ProbeProblem::Kind::invalid, "the peer's hello: " + why});
  if (peer->role == role)
    return give_up(
        {ProbeProblem::Kind::invalid, "the peer is a " + role + " too: one side listens, one connects"});
  if (peer->qps.size() != self.qps.size() ||
      !std::equal(kinds.begin(), kinds.end(), peer->qps.begin(),
                  [](QpKind k, const QpAdvert& a) { return k == a.kind; }))
    return give_up(
        {ProbeProblem::Kind::invalid,
         "the peer tries other queue pair types: give both sides the same --qp (this side: " + o.qp + ")"});
  doc["peer"] = side_json(*peer);
  doc["peer"]["address"] = sock->peer();

  AttemptContext ctx{.api = &v, .table = &t, .plan = &plan.value(), .model = model, .pin_cause = stale_pin};
  bool all_connected = true;
  std::string text =
      fmt::format("probe {} {} port {} <-> {} {} port {} ({}), profile {}\n", role, self.device, self.port,
                  peer->role, peer->device, peer->port, sock->peer(), self.profile);
  text += fmt::format("  this side: index {} {} ({}), sgid_index {}\n", self.gid_index, self.gid.to_string(),
                      to_string(self.gid_type), self.sgid_index);
  text += fmt::format("  peer side: index {} {} ({}), sgid_index {}\n", peer->gid_index,
                      peer->gid.to_string(), to_string(peer->gid_type), peer->sgid_index);
  for (std::size_t i = 0; i < qps.size(); ++i) {
    LocalQp& q = qps[i];
    const QpAdvert& remote = peer->qps[i];
    const std::string kind(to_string(q.kind));
    const auto attempt_end = bound(ProbeClock::now() + attempt);
    SideOutcome mine;
    const bool ready = prepare_qp(ctx, q, self, *peer, remote, mine);
    if (auto p = sock->send("rtr", Json{{"kind", kind}, {"outcome", outcome_json(mine, model.platform)}}))
      return give_up(*p);
    auto theirs_msg = sock->receive("rtr", "the peer's RTR outcome for " + kind, attempt_end, problem);
    if (!theirs_msg) return give_up(problem);
    auto theirs = theirs_msg.value().contains("outcome")
                      ? outcome_from_json(theirs_msg.value()["outcome"], why)
                      : std::nullopt;
    if (!theirs) return give_up({ProbeProblem::Kind::invalid, "the peer's RTR outcome: " + why});
    const bool peer_ready = theirs->stage == "ok" && !remote.create_errno;
    if (ready && peer_ready) {
      if (auto p = exchange_data(ctx, q, self, *peer, remote, *sock, attempt_end, mine)) return give_up(*p);
      if (auto p =
              sock->send("result", Json{{"kind", kind}, {"outcome", outcome_json(mine, model.platform)}}))
        return give_up(*p);
      auto r = sock->receive("result", "the peer's result for " + kind, attempt_end + std::chrono::seconds(2),
                             problem);
      if (!r) return give_up(problem);
      theirs = r.value().contains("outcome") ? outcome_from_json(r.value()["outcome"], why) : std::nullopt;
      if (!theirs) return give_up({ProbeProblem::Kind::invalid, "the peer's result: " + why});
    }
    const Direction out = compose(self, mine, *peer, *theirs);
    const Direction in = compose(*peer, *theirs, self, mine);
    all_connected = all_connected && out.outcome == "connected" && in.outcome == "connected";
    Json jq;
    jq["kind"] = kind;
    jq["directions"] = Json::array({direction_json(out), direction_json(in)});
    doc["qps"].push_back(std::move(jq));
    text += kind + ":\n" + direction_text(out) + direction_text(in);
    if (q.qp) (void)v.destroy_qp(q.qp);
  }
  doc["connected"] = all_connected;
  if (o.json) {
    print_json(doc);
  } else {
    standard_output().print("{}", text);
    standard_output().print("{}\n", all_connected ? "every direction connected" : "the link does not work");
  }
  return all_connected ? kExitOk : kExitFinding;
}

}  // namespace gidpolicy::cli
