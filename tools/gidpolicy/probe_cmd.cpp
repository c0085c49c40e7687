// `gidpolicy probe --listen/--connect`: one link tried on the wire with the GID a profile or a
// stack uses, each direction's outcome beside the prediction made before the attempt
// (docs/probe.md).
#include "probe_cmd.hpp"

#include "commands.hpp"
#include "env_file.hpp"
#include "output.hpp"
#include "probe_attempt.hpp"
#include "probe_link.hpp"
#include "probe_wire.hpp"
#include "render.hpp"
#include "subcommands.hpp"

#include <gidpolicy/profiles.hpp>
#include <gidpolicy/stack_table.hpp>
#include <gidpolicy/stacks.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <fmt/core.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

namespace gidpolicy::cli {
namespace detail_probe_cmd {}  // namespace detail_probe_cmd

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
  auto* stacks = cmd_->add_flag(
      "--stacks", o_.stacks, "Try each stack's own pick on the port in one run (both sides give --stacks)");
  profile->excludes(stack)->excludes(sgid_opt_)->excludes(stacks);
  stack->excludes(sgid_opt_)->excludes(stacks);
  sgid_opt_->excludes(stacks);
  cmd_->add_option("--env-file", o_.env_file,
                   "With --stack or --stacks: a dotenv or docker-compose file, the launch's settings");
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
  cmd_->add_flag("--json", o_.json, "Print JSON (schema gidpolicy.probe; gidpolicy(1) describes it)");
}

int ProbeCommand::run() const {
  ProbeArgs o = o_;
  if (sgid_opt_->count()) o.sgid_index = sgid_;
  return run_probe(o);
}

int run_probe(const ProbeArgs& o) {
  if (!o.listen && !o.connect) return usage_error("probe: give --listen [ADDR:]PORT or --connect HOST:PORT");
  if ((o.env_file || o.no_env) && !o.stack && !o.stacks)
    return usage_error("probe: --env-file and --no-env are for --stack and --stacks");
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

  // What to try: one profile, or (--stacks) each stack's own pick under the launch's settings.
  struct Choice {
    std::string stack;  ///< "" outside --stacks
    Profile profile = profiles::automatic();
    std::optional<Json> pin;
    std::optional<std::string> skip;  ///< why this side does not try it
  };
  std::vector<Choice> choices;
  if (o.stacks || o.stack) {
    auto settings = read_launch_settings(!o.no_env, o.env_file);
    if (!settings) return usage_error(settings.error());
    if (o.stack) {
      const StackInfo* s = find_stack(*o.stack);
      if (!s || !s->predicted)
        return usage_error("--stack: expected one of " + stack_names(StackSet::predicted) + ", found '" +
                           bounded(*o.stack) + "'");
    }
    for (const StackInfo& s : stack_catalogue()) {
      if (o.stack ? s.name != *o.stack : (!s.predicted || !s.runs_on.has(t.port().link_layer))) continue;
      Choice c{.stack = o.stacks ? std::string(s.name) : std::string(),
               .profile = profiles::automatic(),
               .pin = std::nullopt,
               .skip = std::nullopt};
      const StackLaunch launch = read_launch(s.id, settings.value());
      if (launch.refused) {
        if (o.stack)
          return usage_error("--stack " + *o.stack + ": the stack does not start: " + launch.pin_variable +
                             " " + *launch.refused);
        c.skip = "the stack does not start: " + launch.pin_variable + " " + *launch.refused;
      } else if (o.stacks && !launch.uses(t.port().device, t.port().port)) {
        c.skip = "not used: " + launch.devices->variable + " leaves this port out";
      } else if (auto p = stack_profile_for(s.id, t, launch); !p) {
        if (o.stack) return usage_error(p.error());
        c.skip = p.error().what();
      } else {
        c.profile = p.value();
        c.pin = stale_pin_cause(s.id, launch, t, model);
      }
      choices.push_back(std::move(c));
    }
  } else if (o.sgid_index) {
    choices.push_back({"", parse_profile("ds4:index=" + std::to_string(*o.sgid_index)).value(), std::nullopt,
                       std::nullopt});
  } else if (o.profile) {
    auto p = parse_profile(*o.profile);
    if (!p)
      return usage_error(Error(p.error().code, "--profile " + bounded(*o.profile) + ": " + p.error().detail));
    choices.push_back({"", p.value(), std::nullopt, std::nullopt});
  } else {
    choices.push_back({"", profiles::automatic(), std::nullopt, std::nullopt});
  }
  if (choices.empty()) return usage_error("probe --stacks: no modelled stack runs on " + port_name(t));

  std::vector<QpKind> kinds;
  if (o.qp != "uc") kinds.push_back(QpKind::rc);
  if (o.qp != "rc") kinds.push_back(QpKind::uc);
  std::mt19937 rng(std::random_device{}());
  // This side for one choice: its plan and QPs (none when the choice is skipped or its plan fails).
  const auto side_for = [&](const Choice& c, const result<Plan>& plan, std::vector<LocalQp>& qps) {
    ProbeSide self = port_side(t, model, c.profile.spec(), rng);
    self.role = role;
    if (c.skip || !plan) return self;
    advertise_plan(self, plan.value(), v, dev.value(), o.port, kinds, rng, qps);
    return self;
  };
  std::vector<LocalQp> qps;
  auto plan = choices.front().skip ? result<Plan>(fail(errc::invalid_argument, *choices.front().skip))
                                   : choices.front().profile.plan(t);
  ProbeSide self = side_for(choices.front(), plan, qps);

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
  doc["skipped"] = Json::array();
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
  if (o.stacks) {
    // Both sides try the stacks both listed, in the catalogue's order.
    Json names = Json::array();
    for (const auto& c : choices) names.push_back(c.stack);
    if (auto p = sock->send("stacks", Json{{"stacks", names}})) return give_up(*p);
    auto theirs = sock->receive("stacks", "the peer's stacks", bound(ProbeClock::now() + attempt), problem);
    if (!theirs) return give_up(problem);
    const Json& peer_names = theirs.value()["stacks"];
    if (!peer_names.is_array() || peer_names.size() > 32)
      return give_up(
          {ProbeProblem::Kind::invalid, "the peer's stacks: field 'stacks': expected an array of names"});
    bool all = true;
    std::string text;
    for (std::size_t i = 0; i < choices.size(); ++i) {
      const Choice& c = choices[i];
      if (std::find(peer_names.begin(), peer_names.end(), Json(c.stack)) == peer_names.end()) continue;
      std::vector<LocalQp> cqps;
      auto cplan = c.skip ? result<Plan>(fail(errc::invalid_argument, *c.skip)) : c.profile.plan(t);
      ProbeSide cself = side_for(c, cplan, cqps);
      if (i == 0) doc["local"] = side_json(cself);
      std::string skipped;
      if (!cplan) {
        skipped = "this side: " + (c.skip ? *c.skip : "the selection failed: " + cplan.error().what());
        if (auto p = sock->send("abort", Json{{"reason", skipped}})) return give_up(*p);
        ProbeProblem ignored;  // the peer's hello (or its own abort), taken so the next stack starts clean
        if (!sock->receive("hello", "the peer's hello", bound(ProbeClock::now() + attempt), ignored) &&
            ignored.kind != ProbeProblem::Kind::gave_up)
          return give_up(ignored);
      } else {
        AttemptContext cctx{
            .api = &v, .table = &t, .plan = &cplan.value(), .model = model, .pin_cause = c.pin};
        LinkOutcome link = run_link(cctx, cself, cqps, *sock, attempt, run_end);
        if (link.peer) {
          doc["peer"] = side_json(*link.peer);
          doc["peer"]["address"] = sock->peer();
        }
        if (link.problem && link.problem->kind != ProbeProblem::Kind::gave_up) return give_up(*link.problem);
        if (link.problem) {
          skipped = link.problem->text;
        } else {
          text += fmt::format("stack {} (profile {}): index {} {}, sgid_index {}\n", c.stack, cself.profile,
                              cself.gid_index, cself.gid.to_string(), cself.sgid_index);
          for (const auto& q : link.qps) {
            Json jq;
            jq["kind"] = std::string(to_string(q.kind));
            jq["stack"] = c.stack;
            jq["directions"] = Json::array({direction_json(q.out), direction_json(q.in)});
            doc["qps"].push_back(std::move(jq));
            text += std::string(to_string(q.kind)) + ":\n" + direction_text(q.out) + direction_text(q.in);
          }
          all = all && link.connected;
        }
      }
      if (!skipped.empty()) {
        all = false;
        doc["skipped"].push_back(Json{{"stack", c.stack}, {"reason", skipped}});
        text += fmt::format("stack {}: not tried: {}\n", c.stack, skipped);
      }
    }
    doc["connected"] = all;
    if (o.json) {
      print_json(doc);
    } else {
      standard_output().print("{}", text);
      standard_output().print("{}\n",
                              all ? "every stack's pick connected" : "not every stack's pick connects");
    }
    return all ? kExitOk : kExitFinding;
  }
  if (!plan) {
    const std::string why =
        choices.front().skip ? *choices.front().skip : "the selection failed: " + plan.error().what();
    (void)sock->send("abort", Json{{"reason", why}});
    if (o.json) {
      doc["problem"] = Json{{"kind", "selection"}, {"text", why}};
      print_json(doc);
    }
    print_error("probe: " + why);
    return kExitFinding;
  }
  AttemptContext ctx{
      .api = &v, .table = &t, .plan = &plan.value(), .model = model, .pin_cause = choices.front().pin};
  LinkOutcome link = run_link(ctx, self, qps, *sock, attempt, run_end);
  if (link.peer) {
    doc["peer"] = side_json(*link.peer);
    doc["peer"]["address"] = sock->peer();
  }
  if (link.problem) return give_up(*link.problem);
  const ProbeSide& peer = *link.peer;
  const bool all_connected = link.connected;
  std::string text =
      fmt::format("probe {} {} port {} <-> {} {} port {} ({}), profile {}\n", role, self.device, self.port,
                  peer.role, peer.device, peer.port, sock->peer(), self.profile);
  text += fmt::format("  this side: index {} {} ({}), sgid_index {}\n", self.gid_index, self.gid.to_string(),
                      to_string(self.gid_type), self.sgid_index);
  text += fmt::format("  peer side: index {} {} ({}), sgid_index {}\n", peer.gid_index, peer.gid.to_string(),
                      to_string(peer.gid_type), peer.sgid_index);
  for (const auto& q : link.qps) {
    Json jq;
    jq["kind"] = std::string(to_string(q.kind));
    jq["directions"] = Json::array({direction_json(q.out), direction_json(q.in)});
    doc["qps"].push_back(std::move(jq));
    text += std::string(to_string(q.kind)) + ":\n" + direction_text(q.out) + direction_text(q.in);
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
