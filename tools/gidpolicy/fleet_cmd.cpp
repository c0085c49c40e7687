#include "fleet_cmd.hpp"
#include "env_file.hpp"
#include "fleet_report.hpp"
#include "fleet_stack.hpp"

#include "commands.hpp"
#include "output.hpp"
#include "render.hpp"
#include "subcommands.hpp"

#include <gidpolicy/fleet.hpp>
#include <gidpolicy/names.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/stacks.hpp>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>

namespace gidpolicy::cli {
namespace {

using fleet::Analysis;
using fleet::Direction;
using fleet::Link;
using gidpolicy::LinkOutcome;

// The report and the --svg matrix go through the one output path (output.hpp).
using Sink = Output;

}  // namespace

// ---------------------------------------------------------------------------------------------
FleetCommand::FleetCommand(CLI::App& app) {
  cmd_ = add_subcommand(app, "fleet");
  cmd_->add_option("hosts", o_.hosts, "FILE, HOST=FILE or a directory of *.json snapshots, one host each")
      ->required();
  cmd_->add_option("--topology", o_.topology, "mesh, ring, rail, or jaccl (a JACCL device file)")
      ->check(CLI::IsMember({"mesh", "ring", "rail", "jaccl"}))
      ->capture_default_str();
  cmd_->add_option("--device", o_.device,
                   "mesh/ring: the device every host uses (default: each host's first port)");
  cmd_->add_option("--port", o_.port, "The port on every named device")
      ->check(CLI::Range(1, 255))
      ->capture_default_str();
  cmd_->add_option("--rails", o_.rails,
                   "rail: the rails' devices in order (default: each host's ports in natural order)")
      ->delimiter(',');
  const StackInfo& jaccl = stack_row(StackId::jaccl);
  auto* devices_opt =
      cmd_->add_option("--jaccl-devices", o_.jaccl_devices,
                       "JACCL's device file, or an mlx.distributed_config hostfile (default: $" +
                           std::string(jaccl.launch.read_first) + " or $" + std::string(jaccl.launch.device) +
                           "); implies --topology jaccl");
  cmd_->add_option(
          "--hostfile", o_.jaccl_devices,
          "The hostfile mlx.distributed_config writes ({\"hosts\": [{\"ssh\", \"ips\", \"rdma\"}]}): "
          "its rdma rows are the device file; implies --topology jaccl")
      ->excludes(devices_opt);
  ring_flag_ = cmd_->add_flag("--jaccl-ring", o_.jaccl_ring,
                              "Prefer JACCL's ring when the file allows one (default: $" +
                                  std::string(stack_vars::kJacclRing) + " or $" +
                                  std::string(stack_vars::kMlxJacclRing) + " set)");
  cmd_->add_option("--profile", o_.profile, "What every host runs: a profile spec such as jaccl or auto")
      ->capture_default_str();
  cmd_->add_option(
      "--stack", o_.stack,
      "Every host runs this stack's own choice (" + stack_names(StackSet::predicted) +
          ", with its options: nccl:gid_index=3); hosts where it is not the entry to use are named");
  cmd_->add_option("--env-dir", o_.env_dir,
                   "With --stack: write one dotenv file per host (HOST.env) with the settings that make the "
                   "stack use gidpolicy's auto pick there");
  cmd_->add_option("--env-file", o_.env_file,
                   "With --stack: the launch's settings (a dotenv or docker-compose file), as check --stacks "
                   "reads them; they win over the environment's");
  cmd_->add_flag("--no-env", o_.no_env,
                 "With --stack: do not read the stack's settings from the environment");
  cmd_->add_flag("--replace", o_.replace_env_dir,
                 "With --env-dir: replace a non-empty directory (refused otherwise)");
  cmd_->add_option("--platform", o_.platform, "Driver model for every host (default: by link layer)")
      ->check(CLI::IsMember({"linux", "darwin"}));
  cmd_->add_flag(
      "--json", o_.json,
      "Print JSON (schema gidpolicy.fleet; gidpolicy(1) describes it): causes, sides, failed links streamed");
  cmd_->add_flag("--all-links", o_.all_links, "With --json: list connected links too");
  cmd_->add_option("--limit", o_.limit, "Text: list at most this many causes and failed links")
      ->capture_default_str();
  cmd_->add_option("--svg", o_.svg,
                   "Write a host x host matrix coloured by outcome (cause on hover) to FILE");
  cmd_->add_option("--output", o_.output, "Write the report to FILE (atomically) instead of stdout");
  cmd_->add_option("--threads", o_.threads, "Threads for reading and judging")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
}

int FleetCommand::run() const {
  FleetArgs o = o_;
  auto env = [](const char* a, const char* b) -> const char* {
    if (const char* v = std::getenv(a)) return v;
    return std::getenv(b);
  };
  if (o.jaccl_devices) o.topology = "jaccl";
  if (o.topology == "jaccl" && !o.jaccl_devices) {
    const StackInfo& jaccl = stack_row(StackId::jaccl);
    if (const char* f =
            env(std::string(jaccl.launch.read_first).c_str(), std::string(jaccl.launch.device).c_str()))
      o.jaccl_devices = std::string(f);
  }
  if (!ring_flag_->count() &&
      env(std::string(stack_vars::kJacclRing).c_str(), std::string(stack_vars::kMlxJacclRing).c_str()))
    o.jaccl_ring = true;
  return run_fleet(o);
}

int run_fleet(const FleetArgs& o) {
  // Both outputs are looked at before any work: a target that cannot be written is said at once,
  // not after reading a whole cluster's snapshots.
  std::optional<Sink> svg;
  if (o.svg) {
    svg.emplace(Sink::open(o.svg, "--svg"));
    if (svg->error()) return output_error(*svg->error());
  }
  auto sink = Sink::open(o.output, "--output");
  if (sink.error()) return output_error(*sink.error());
  std::string stack_name;
  std::optional<StackLaunch> launch;  // --stack's settings (read_launch)
  std::string stack_spec;  // the row's automatic spec with the options given: nvshmem:gid_index=3 is nccl's
  if (o.stack) {
    if (o.profile != "auto") return usage_error("fleet: give --stack or --profile, not both");
    const std::size_t colon = o.stack->find(':');
    stack_name = o.stack->substr(0, colon);
    const StackInfo* row = find_stack(stack_name);
    if (!row || !row->predicted)
      return usage_error("fleet --stack: expected one of " + stack_names(StackSet::predicted) + ", found '" +
                         bounded(stack_name) + "'");
    stack_spec = std::string(row->automatic) + (colon == std::string::npos ? "" : o.stack->substr(colon));
    // The launch's settings (the environment's, --env-file's), the same on every host: options
    // given after ':' state the settings themselves and win over them.
    auto settings = read_launch_settings(!o.no_env, o.env_file);
    if (!settings) return usage_error(settings.error());
    launch = read_launch(row->id, settings.value());
    if (launch->refused)
      return usage_error("fleet --stack " + bounded(stack_name) + ": " + launch->pin_variable + " " +
                         *launch->refused + ": the stack does not start");
    if (colon == std::string::npos) stack_spec += launch_spec_options(*launch);
  } else if (o.env_file || o.no_env) {
    return usage_error("fleet: --env-file and --no-env are for --stack");
  } else if (o.env_dir) {
    return usage_error("fleet --env-dir needs --stack STACK (which stack's settings to write)");
  }
  // --env-dir is staged beside its target and renamed into place only after every other output
  // is written: a run that fails later leaves none of it (StagedTree, output.hpp).
  std::optional<StagedTree> env_tree;
  if (o.env_dir) {
    env_tree.emplace(StagedTree::open(*o.env_dir, "--env-dir", o.replace_env_dir));
    if (env_tree->error()) return output_error(*env_tree->error());
  }
  const std::string profile_text = o.stack ? stack_spec : o.profile;
  auto profile = parse_profile(profile_text);
  if (!profile)
    return usage_error(Error(profile.error().code, std::string(o.stack ? "--stack " : "--profile ") +
                                                       bounded(o.stack ? *o.stack : o.profile) + ": " +
                                                       profile.error().detail));
  fleet::Topology topo;
  topo.device = o.device;
  topo.port = o.port;
  if (o.topology == "ring") topo.pairing = fleet::Pairing::ring;
  if (o.topology == "rail") {
    topo.pairing = fleet::Pairing::rail;
    topo.rails = o.rails;
  }
  if (o.topology == "jaccl" && !o.jaccl_devices)
    return usage_error("fleet --topology jaccl: give the device file with --jaccl-devices FILE (or set " +
                       std::string(stack_row(StackId::jaccl).launch.read_first) + ")");
  fleet::ReadLimits limits;
  limits.threads = o.threads;
  auto hosts = fleet::read_snapshots(o.hosts, limits);
  if (!hosts) return usage_error(hosts.error());
  if (o.topology == "jaccl") {
    // The hosts first: the device file is checked against their count before it is built.
    // A JACCL device file or a hostfile: mlx.launch turns the hostfile's rdma rows into the
    // device file it points its variable (the jaccl row's device setting) at, so either stands
    // for the same matrix.
    auto devices = fleet::read_device_file(*o.jaccl_devices, hosts.value().size());
    if (!devices) return usage_error(devices.error());
    topo.pairing = fleet::Pairing::jaccl;
    topo.jaccl = std::move(devices).value();
    topo.jaccl_prefer_ring = o.jaccl_ring;
  }
  fleet::Options opts;
  opts.profile = profile.value();
  opts.threads = o.threads;
  if (o.platform)
    opts.driver =
        DriverModel::for_platform(platform_from_string(*o.platform).value_or(Platform::linux_kernel));
  auto an = Analysis::run(std::move(hosts).value(), topo, opts);
  if (!an) return usage_error(an.error());
  const Analysis& a = an.value();
  ReportOptions report;
  report.limit = o.limit;
  report.all_links = o.all_links;
  if (svg) fleet_svg(a, report, [&](std::string_view s) { svg->write(s); });
  bool stack_wrong = false;
  std::vector<StackHost> stack_hosts;
  if (o.stack) {
    const std::size_t colon = o.stack->find(':');
    stack_hosts = judge_stack_hosts(
        a, profile.value(), o, find_stack(stack_name),
        colon == std::string::npos ? std::string_view() : std::string_view(*o.stack).substr(colon),
        launch ? &*launch : nullptr);
    stack_wrong =
        std::any_of(stack_hosts.begin(), stack_hosts.end(), [](const StackHost& h) { return !h.right; });
  }
  if (o.json) {
    fleet_json(
        a, report,
        o.stack ? stack_json(stack_hosts, profile.value(), launch ? &*launch : nullptr) : std::string(),
        [&](std::string_view s) { sink.write(s); });
  } else {
    fleet_text(a, report, [&](std::string_view s) { sink.write(s); });
    if (o.stack) print_stack_hosts(stack_hosts, profile.value(), o, sink);
    if (launch)
      for (const SettingReading& r : launch->read)
        sink.write("  launch setting read: " + show_text(r.variable, 60) + "=" + show_text(r.value, 40) +
                   " (" + show_text(r.origin) + "): " + show_text(r.reading, std::string::npos) +
                   (r.applied ? "" : " [not applied]") + "\n");
  }
  bool env_conflict = false;
  if (env_tree)
    if (auto wrote = write_env_dir(a, stack_name, *env_tree, env_conflict); !wrote) {
      const Error& e = wrote.error();
      return e.code.category() == std::generic_category()
                 ? output_error("output error: --env-dir " + *o.env_dir + ": " + e.what())
                 : usage_error(e);
    }
  // Every output is complete: each is put in place now, the report last (a failure of one of
  // them before the report is said, and the report is not written).
  if (svg)
    if (auto err = svg->commit()) return output_error(*err);
  if (env_tree)
    if (auto err = env_tree->commit()) return output_error(*err);
  if (auto err = sink.commit()) return output_error(*err);
  // A duplicate address fails the fleet even where the fabric model connects every link.
  return a.ok() && !stack_wrong && !env_conflict ? kExitOk : kExitFinding;
}

}  // namespace gidpolicy::cli
