// gidpolicy: read the GID tables users have (live devices, ibv_devinfo -v or show_gids pastes,
// gidpolicy JSON, a sysfs tree) and say what each policy would advertise and route from.
// docs/cli.md documents every subcommand, the --json schemas and the exit codes.
#include "commands.hpp"
#include "complete.hpp"
#include "doctor_cmd.hpp"
#include "fake_host.hpp"
#include "fleet_cmd.hpp"
#include "output.hpp"
#include "probe_cmd.hpp"
#include "render.hpp"
#include "subcommands.hpp"

#include <gidpolicy/stacks.hpp>

#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace gidpolicy::cli;

// The source options every table-reading subcommand shares. Values are recorded as given and
// turned into SourceArgs after parsing, so "given" can be told apart from a default.
struct SourceFlags {
  std::string device;
  std::uint32_t port = 0;
  std::string verbs = "dlopen";
  std::string input;
  std::string sysfs;
  std::string bundle;
  std::string input_format;
  std::size_t max_input_bytes = gidpolicy::formats::kDefaultMaxInputBytes;
  CLI::Option *device_opt = nullptr, *port_opt = nullptr, *input_opt = nullptr, *sysfs_opt = nullptr,
              *bundle_opt = nullptr, *format_opt = nullptr;

  void add(CLI::App* app) {
    auto* g = app->add_option_group("Source", "Where the GID tables come from (default: every live device)");
    device_opt =
        g->add_option("--device", device,
                      "A live RDMA device (through libibverbs); with --input/--sysfs: only that device");
    port_opt = g->add_option("--port", port, "Only this port (1-255)")->check(CLI::Range(1, 255));
    g->add_option("--verbs", verbs, "Live backend: dlopen (load libibverbs at run time) or linked")
        ->check(CLI::IsMember({"dlopen", "linked"}));
    input_opt =
        g->add_option("--input", input,
                      "A table file: ibv_devinfo -v or show_gids output, or gidpolicy JSON (auto-detected); "
                      "- reads stdin");
    sysfs_opt = g->add_option("--sysfs", sysfs, "A directory laid out like /sys/class/infiniband");
    bundle_opt = g->add_option("--bundle", bundle,
                               "A host bundle gidpolicy-collect wrote (on a Mac or Linux host): its tables");
    format_opt = g->add_option("--input-format", input_format, "Skip format detection for --input")
                     ->check(CLI::IsMember({"json", "devinfo", "show_gids"}));
    g->add_option("--max-input-bytes", max_input_bytes,
                  "Refuse an --input larger than this (default 16 MiB; binary data is refused at once)")
        ->check(CLI::Range(std::size_t{1}, kMaxInputBytesLimit));
  }

  [[nodiscard]] bool any_table_source() const {
    return device_opt->count() || input_opt->count() || sysfs_opt->count() || bundle_opt->count();
  }

  [[nodiscard]] SourceArgs get() const {
    SourceArgs o;
    if (device_opt->count()) o.device = device;
    if (port_opt->count()) o.port = port;
    o.verbs = verbs;
    if (input_opt->count()) o.input = input;
    if (sysfs_opt->count()) o.sysfs = sysfs;
    if (bundle_opt->count()) o.bundle = bundle;
    if (format_opt->count()) o.input_format = gidpolicy::formats::format_from_string(input_format);
    o.max_input_bytes = max_input_bytes;
    return o;
  }
};

// --profile SPEC, and --policy as its old name: kept so scripts written for select/watch before
// every subcommand said --profile still run; hidden from --help, refused together with --profile.
// Both given are refused after parsing (profile_and_policy_given), not by CLI11's excludes():
// that one names the hidden option as "" in its error and prints an empty "Excludes:" in --help.
struct ProfileOption {
  CLI::Option* profile;
  CLI::Option* policy;
};
ProfileOption add_profile_option(CLI::App* cmd, std::string& spec, const std::string& help) {
  auto* profile = cmd->add_option("--profile", spec, help)->capture_default_str();
  auto* policy = cmd->add_option("--policy", spec, "The old name of --profile")->group("");
  return {profile, policy};
}

// What each option takes, in the words of the tool's own errors.
std::string expected_value(const std::string& option) {
  static const std::map<std::string, std::string> kExpected{
      {"--sgid-index", "an index 0..4294967295 (the sgid_index the failed RTR used)"},
      {"--port", "a port number 1..255"},
      {"--platform", "linux or darwin"},
      {"--deadline", "a finite number of seconds 0.05..600 (each verbs call's deadline; probe: the run's)"},
      {"--attempt-deadline", "a finite number of seconds 0.05..600 (each wait on the peer)"},
      {"--qp", "rc, uc or both"},
      {"--rank", "a rank 0..4095 (this host's row of the device file)"},
      {"--verbs", "dlopen or linked"},
      {"--input-format", "json, devinfo or show_gids"},
      {"--to", "json, devinfo, show_gids or sysfs"},
      {"--topology", "mesh or ring"},
      {"--format", "sh, dotenv or json"},
      {"errno", "an errno number or name such as 22 or EINVAL"},
      {"tables", "table files, FILE or FILE:DEVICE[:PORT], one per host"},
  };
  const auto it = kExpected.find(option);
  return it != kExpected.end() ? it->second : "a value";
}

// CLI11's report of a parse error, said the way every other error of the tool is said: one
// line naming the option and what it expects ("--sgid-index: expected an index 0..4294967295
// ..., found '-1'"). CLI11 2.x words its messages as below; anything else is passed through.
std::string own_words(const CLI::ParseError& e) {
  std::string what = e.what();
  const std::string kind = e.get_name();
  const auto after = [&](const std::string& prefix) { return what.substr(prefix.size()); };
  if (kind == "ConversionError" && what.rfind("Could not convert: ", 0) == 0) {
    // "Could not convert: --sgid-index = -1"
    const std::string rest = after("Could not convert: ");
    const std::size_t eq = rest.find(" = ");
    if (eq != std::string::npos) {
      const std::string option = rest.substr(0, eq);
      return option + ": expected " + expected_value(option) + ", found '" + rest.substr(eq + 3) + "'";
    }
  }
  const std::size_t colon = what.find(": ");
  const std::string option = colon != std::string::npos ? what.substr(0, colon) : std::string();
  const std::string detail = colon != std::string::npos ? what.substr(colon + 2) : what;
  if (kind == "ArgumentMismatch" && !option.empty()) {
    // "--input: At Most 1 required but received 2" / "--input: 1 required TEXT missing"
    if (detail.rfind("At Most 1 required but received ", 0) == 0)
      return option + ": given " + detail.substr(std::string("At Most 1 required but received ").size()) +
             " times; give it once";
    if (detail.find("required") != std::string::npos && detail.find("missing") != std::string::npos)
      return option + ": expected " + expected_value(option) + " after it, found nothing";
  }
  if (kind == "ValidationError" && !option.empty()) {
    // "--port: Value 0 not in range 1 to 255" / "--platform: foo not in {linux,darwin}"
    std::string value = detail;
    if (value.rfind("Value ", 0) == 0) value = value.substr(6);
    const std::size_t not_in = value.find(" not in ");
    if (not_in != std::string::npos) value.resize(not_in);
    return option + ": expected " + expected_value(option) + ", found '" + value + "'";
  }
  if (kind == "RequiredError") {
    // "errno is required"
    const std::size_t is = what.find(" is required");
    if (is != std::string::npos) {
      const std::string name = what.substr(0, is);
      return "missing " + name + ": expected " + expected_value(name);
    }
  }
  // "The following argument was not expected: --bogus". Matched by its text: inside a subcommand
  // CLI11 names the error after the subcommand ("show"), not "ExtrasError".
  if (kind == "ExtrasError" || what.rfind("The following argument", 0) == 0) {
    const std::size_t c = what.find(": ");
    if (c != std::string::npos) {
      const std::string args = what.substr(c + 2);
      return (args.find(' ') != std::string::npos ? "unexpected arguments " : "unexpected argument ") + args;
    }
  }
  return what;
}

int run(int argc, char** argv) {
  CLI::App app{"gidpolicy: which RDMA GID to advertise and route from, and why", "gidpolicy"};
  app.set_version_flag("--version", std::string("gidpolicy ") + GIDPOLICY_VERSION);
  app.require_subcommand(1);
  app.footer("Exit codes: 0 success; 1 a finding (each subcommand's --help says which); " +
             std::string(kExitUsageMeaning) + ".\nSee gidpolicy(1); gidpolicy SUBCOMMAND --help for each.");

  // show
  ShowArgs show;
  SourceFlags show_src;
  auto* show_cmd = add_subcommand(app, "show");
  show_src.add(show_cmd);
  show_cmd->add_flag("--json", show.json, "Print JSON (schema gidpolicy.tables; gidpolicy(1) describes it)");
  show_cmd->add_option("--host", show.host,
                       "The host name --json records (default: this machine's for live devices; "
                       "`gidpolicy fleet` reads it)");

  // select
  SelectArgs select;
  SourceFlags select_src;
  auto* select_cmd = add_subcommand(app, "select");
  select_src.add(select_cmd);
  std::vector<ProfileOption> profile_options;
  profile_options.push_back(
      add_profile_option(select_cmd, select.profile, "Profile spec, e.g. auto, jaccl, validated:index=3"));
  select_cmd->add_flag("--explain", select.explain, "Print why each entry was accepted or rejected");
  select_cmd->add_option(
      "--peer", select.peer,
      "Ask the kernel's route to this address (fe80::/10 as fe80::1%NETDEV) and choose as "
      "rdma_cm does: the GID holding its source address on its netdev, else one on that "
      "netdev, never another netdev's (auto:peer=ADDR; with --profile rdma_cm: rdma_cm:peer=ADDR)");
  select_cmd->add_flag("--json", select.json,
                       "Print JSON (schema gidpolicy.select; gidpolicy(1) describes it)");

  // check
  CheckArgs check;
  SourceFlags check_src;
  auto* check_cmd = add_subcommand(app, "check");
  check_src.add(check_cmd);
  check_cmd
      ->add_option("--platform", check.platform, "Predict RTR for this platform (default: by link layer)")
      ->check(CLI::IsMember({"linux", "darwin"}));
  check_cmd->add_option("--profile", check.profiles,
                        "Check these profile specs instead of the named ones (repeatable); 'all': every "
                        "named profile on every port, those of stacks not run on its link layer too");
  check_cmd->add_flag(
      "--json", check.json,
      "Print JSON (schema gidpolicy.check, .check.stacks, .check.pins; gidpolicy(1) describes it)");
  std::string pin_list;  // every pin variable of the stack table
  for (const std::string_view v : gidpolicy::pin_variables())
    pin_list += (pin_list.empty() ? "" : ", ") + std::string(v);
  auto* stacks_flag = check_cmd->add_flag(
      "--stacks", check.stacks,
      "Every RDMA stack's own choice per port (" + gidpolicy::stack_titles(gidpolicy::StackSet::predicted) +
          "): its index, whether RTR works, and the setting that fixes it");
  auto* pins_flag =
      check_cmd->add_flag("--pins", check.pins,
                          "Judge the pinned GID indices (" + pin_list +
                              ") of the environment, each as its stack reads it, on every port");
  check_cmd->add_option("--env-file", check.env_file,
                        "With --stacks or --pins: a dotenv file or a docker-compose file's environment: "
                        "blocks, the launch's settings (they win over the environment's)");
  check_cmd->add_flag("--no-env", check.no_env,
                      "With --stacks or --pins: do not read the stacks' settings from the environment "
                      "(each stack's defaults, unless --env-file gives some)");
  stacks_flag->excludes(pins_flag);

  // explain-errno
  ExplainArgs explain;
  SourceFlags explain_src;
  std::uint32_t sgid_index = 0;
  auto* explain_cmd = add_subcommand(app, "explain-errno");
  explain_cmd
      ->add_option("errno", explain.err,
                   "The errno number or name (22, EINVAL), or a program's error line in quotes "
                   "(\"[jaccl] Couldn't connect (error: 60)\")")
      ->required();
  explain_cmd
      ->add_option("--side", explain.side,
                   "Where the number came from: rtr (ibv_modify_qp) or socket (the TCP side channel the "
                   "ranks exchange their GIDs over); default: what the error line says, else both")
      ->check(CLI::IsMember({"rtr", "socket"}));
  explain_src.add(explain_cmd);
  explain_cmd
      ->add_option("--platform", explain.platform, "linux or darwin (default: by link layer, else linux)")
      ->check(CLI::IsMember({"linux", "darwin"}));
  auto* sgid_opt = explain_cmd->add_option("--sgid-index", sgid_index, "The sgid_index the failed RTR used");
  explain_cmd->add_option("--advertised", explain.advertised, "The GID this side advertised");
  explain_cmd->add_option("--peer", explain.peer, "The peer's GID (the dgid)");

  // convert
  ConvertArgs convert;
  SourceFlags convert_src;
  auto* convert_cmd = add_subcommand(app, "convert");
  convert_src.add(convert_cmd);
  convert_cmd->add_option("--to", convert.to, "json, devinfo, show_gids or sysfs")
      ->required()
      ->check(CLI::IsMember({"json", "devinfo", "show_gids", "sysfs"}));
  convert_cmd->add_option("--output", convert.output, "Write here (a directory for sysfs) instead of stdout");
  convert_cmd->add_flag("--replace", convert.replace,
                        "With --to sysfs: replace a non-empty --output directory (refused otherwise)");
  convert_cmd
      ->add_option("--max-files", convert.max_files,
                   "With --to sysfs: refuse a tree of more files than this, before writing any")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32))
      ->capture_default_str();
  convert_cmd
      ->add_option("--max-bytes", convert.max_bytes,
                   "With --to sysfs: refuse a tree of more bytes of content than this, before writing any")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40))
      ->capture_default_str();

  // simulate
  SimulateArgs simulate;
  auto* simulate_cmd = add_subcommand(app, "simulate");
  simulate_cmd->add_option("--topology", simulate.topology, "mesh (every pair) or ring")
      ->check(CLI::IsMember({"mesh", "ring"}))
      ->capture_default_str();
  simulate_cmd
      ->add_option("--profile", simulate.profile,
                   "What every host runs: a profile spec such as jaccl or auto")
      ->capture_default_str();
  simulate_cmd
      ->add_option("--platform", simulate.platform, "Driver model for every host (default: by link layer)")
      ->check(CLI::IsMember({"linux", "darwin"}));
  simulate_cmd->add_flag("--preflight", simulate.preflight, "Run gidpolicy's preflight before each RTR");
  simulate_cmd->add_option("tables", simulate.tables, "FILE or FILE:DEVICE[:PORT], one per host")->required();

  // watch
  WatchArgs watch;
  std::string watch_device;
  std::uint32_t watch_port = 0;
  auto* watch_cmd = add_subcommand(app, "watch");
  auto* watch_device_opt = watch_cmd->add_option("--device", watch_device, "Only this device (default: all)");
  auto* watch_port_opt =
      watch_cmd->add_option("--port", watch_port, "Only this port (1-255)")->check(CLI::Range(1, 255));
  watch_cmd->add_option("--verbs", watch.verbs, "Live backend: dlopen or linked")
      ->check(CLI::IsMember({"dlopen", "linked"}))
      ->capture_default_str();
  profile_options.push_back(
      add_profile_option(watch_cmd, watch.profile, "The profile whose plan is followed and re-planned"));
  watch_cmd->add_flag("--json", watch.json,
                      "One JSON object per line (schema gidpolicy.watch; gidpolicy(1) describes it)");
  watch_cmd->add_flag(
      "--stacks", watch.stacks,
      "On each change, what each RDMA stack does: keeps its index until it reopens the device, "
      "picks again per connection, or re-selects on the event");
  watch_cmd->add_option(
      "--env-file", watch.env_file,
      "With --stacks: a dotenv file or a docker-compose file's environment: blocks, the launch's "
      "settings (they win over the environment's)");
  watch_cmd->add_flag("--no-env", watch.no_env,
                      "With --stacks: do not read the stacks' settings from the environment");

  EnvArgs env;
  SourceFlags env_src;
  auto* env_cmd = add_subcommand(app, "env");
  env_src.add(env_cmd);
  env_cmd
      ->add_option("--for", env.stacks,
                   "Stacks, comma-separated: " + gidpolicy::stack_names(gidpolicy::StackSet::all))
      ->delimiter(',')
      ->required();
  profile_options.push_back(
      add_profile_option(env_cmd, env.profile, "The profile whose pick the settings name"));
  env_cmd->add_option("--format", env.format, "sh (export lines), dotenv or json")
      ->check(CLI::IsMember({"sh", "dotenv", "json"}))
      ->capture_default_str();
  const gidpolicy::StackInfo& jaccl = gidpolicy::stack_row(gidpolicy::StackId::jaccl);
  env_cmd->add_option("--jaccl-devices", env.jaccl_devices,
                      "jaccl: the device file " + std::string(jaccl.launch.device) + " names (default $" +
                          std::string(jaccl.launch.read_first) + ", $" + std::string(jaccl.launch.device) +
                          "); this host's row is checked");
  env_cmd->add_option("--rank", env.rank,
                      "jaccl: this host's rank in the device file (default $" +
                          std::string(gidpolicy::stack_vars::kJacclRank) + ", $" +
                          std::string(gidpolicy::stack_vars::kMlxRank) + ")");
  env_cmd->add_option("--env-file", env.env_file,
                      "The launch's other settings (a dotenv or docker-compose file): they decide what "
                      "each stack picks on its own");
  env_cmd->add_flag("--no-env", env.no_env, "Do not read the stacks' settings from the environment");
  env_cmd->add_flag("--pin", env.pin,
                    "Print a stack's pin even where its own choice is already right on every port");
  env_cmd->add_flag("--jaccl-ring", env.jaccl_ring,
                    "jaccl: JACCL is asked for its ring (default: $" +
                        std::string(gidpolicy::stack_vars::kJacclRing) + " or $" +
                        std::string(gidpolicy::stack_vars::kMlxJacclRing) + " set)");

  // fleet (tools/gidpolicy/fleet_cmd.cpp)
  FleetCommand fleet(app);
  // fake-host (tools/gidpolicy/fake_host.cpp)
  FakeHostCommand fake_host(app);
  // probe (tools/gidpolicy/probe_cmd.cpp)
  ProbeCommand probe(app);
  // doctor (tools/gidpolicy/doctor_cmd.cpp)
  DoctorCommand doctor(app);

  // Every subcommand registered above is a row of the table the messages below list, and back.
  if (std::string why; !subcommands_match_table(app, why)) throw std::logic_error(why);
  // What the shell completion asks (complete.hpp): answered from the model just registered.
  if (argc > 1 && std::string_view(argv[1]) == "--complete") return run_complete(app, argc - 2, argv + 2);

  // CLI11 reports a mistyped subcommand as a missing one; name it instead.
  if (argc > 1 && argv[1][0] != '-' && !find_subcommand(argv[1])) {
    print_error("unknown subcommand '" + std::string(argv[1]) + "': expected " + subcommand_names() +
                " (see gidpolicy --help)");
    return kExitUsage;
  }
  // --help and --version go out like any other output (output.hpp), not through std::cout.
  const auto print_out = [&](const CLI::Error& e) {
    std::ostringstream text;
    const int code = app.exit(e, text, std::cerr);
    standard_output().write(text.str());
    return code;
  };
  // fake-host's command, after --, never reaches CLI11 (fake_host.hpp: take_command).
  const int parse_argc = fake_host.take_command(argc, argv);
  try {
    app.parse(parse_argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return print_out(e);
  } catch (const CLI::CallForAllHelp& e) {
    return print_out(e);
  } catch (const CLI::CallForVersion& e) {
    return print_out(e);
  } catch (const CLI::ParseError& e) {
    // One line, then where to look: CLI11's own report spans several.
    std::string sub;
    for (const auto* s : app.get_subcommands()) sub = " " + s->get_name();
    std::string what = own_words(e);
    if (app.get_subcommands().empty()) what = "expected a subcommand: " + subcommand_names();
    print_error(what + " (see gidpolicy" + sub + " --help)");
    return kExitUsage;
  }

  for (const ProfileOption& p : profile_options) {
    if (p.profile->count() && p.policy->count()) {
      std::string sub;
      for (const auto* s : app.get_subcommands()) sub = " " + s->get_name();
      print_error("--policy is the old name of --profile: give one of them (see gidpolicy" + sub +
                  " --help)");
      return kExitUsage;
    }
  }
  if (show_cmd->parsed()) {
    show.source = show_src.get();
    return run_show(show);
  }
  if (select_cmd->parsed()) {
    select.source = select_src.get();
    return run_select(select);
  }
  if (check_cmd->parsed()) {
    check.source = check_src.get();
    return run_check(check);
  }
  if (explain_cmd->parsed()) {
    explain.source = explain_src.get();
    explain.has_source = explain_src.any_table_source();
    if (sgid_opt->count()) explain.sgid_index = sgid_index;
    return run_explain(explain);
  }
  if (convert_cmd->parsed()) {
    convert.source = convert_src.get();
    return run_convert(convert);
  }
  if (simulate_cmd->parsed()) return run_simulate(simulate);
  if (watch_cmd->parsed()) {
    if (watch_device_opt->count()) watch.device = watch_device;
    if (watch_port_opt->count()) watch.port = watch_port;
    return run_watch(watch);
  }
  if (fleet.parsed()) return fleet.run();
  if (env_cmd->parsed()) {
    env.source = env_src.get();
    return run_env(env);
  }
  if (fake_host.parsed()) return fake_host.run();
  if (probe.parsed()) return probe.run();
  if (doctor.parsed()) return doctor.run();
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    // Whatever the command concluded, output that did not get out is the failure to report.
    return finish_output(run(argc, argv));
  } catch (const std::exception& e) {
    // The library reports errors as values; this catches allocation failures, iostream and
    // CLI11 set-up errors, so nothing escapes main.
    print_error(std::string("internal error: ") + e.what());
  } catch (...) {
    std::cerr << "gidpolicy: internal error\n";
  }
  return kExitUsage;
}
