// gidpolicy: read the GID tables users have (live devices, ibv_devinfo -v or show_gids pastes,
// gidpolicy JSON, a sysfs tree) and say what each policy would advertise and route from.
// docs/cli.md documents every subcommand, the --json schemas and the exit codes.
#include "commands.hpp"
#include "fleet_cmd.hpp"

#include <CLI/CLI.hpp>

#include <iostream>
#include <set>
#include <string>

namespace {

using namespace gidpolicy::cli;

// The source options every table-reading subcommand shares. Values are recorded as given and
// turned into SourceOptions after parsing, so "given" can be told apart from a default.
struct SourceFlags {
  std::string device;
  std::uint32_t port = 0;
  std::string verbs = "dlopen";
  std::string input;
  std::string sysfs;
  std::string input_format;
  CLI::Option *device_opt = nullptr, *port_opt = nullptr, *input_opt = nullptr, *sysfs_opt = nullptr,
              *format_opt = nullptr;

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
    format_opt = g->add_option("--input-format", input_format, "Skip format detection for --input")
                     ->check(CLI::IsMember({"json", "devinfo", "show_gids"}));
  }

  [[nodiscard]] bool any_table_source() const {
    return device_opt->count() || input_opt->count() || sysfs_opt->count();
  }

  [[nodiscard]] SourceOptions get() const {
    SourceOptions o;
    if (device_opt->count()) o.device = device;
    if (port_opt->count()) o.port = port;
    o.verbs = verbs;
    if (input_opt->count()) o.input = input;
    if (sysfs_opt->count()) o.sysfs = sysfs;
    if (format_opt->count()) o.input_format = gidpolicy::formats::format_from_string(input_format);
    return o;
  }
};

int run(int argc, char** argv) {
  CLI::App app{"gidpolicy: which RDMA GID to advertise and route from, and why", "gidpolicy"};
  app.set_version_flag("--version", std::string("gidpolicy ") + GIDPOLICY_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success; 1 a selection failed, a profile disagrees (check) or a pair does not connect "
      "(simulate); 2 bad usage or unreadable input.\nSee docs/cli.md.");

  // show
  ShowOptions show;
  SourceFlags show_src;
  auto* show_cmd =
      app.add_subcommand("show", "Print the GID table(s): index, GID, type, IPv4, netdev, flags");
  show_src.add(show_cmd);
  show_cmd->add_flag("--json", show.json, "Print JSON (schema in docs/cli.md)");
  show_cmd->add_option("--host", show.host,
                       "The host name --json records (default: this machine's for live devices; "
                       "`gidpolicy fleet` reads it)");

  // select
  SelectOptions select;
  SourceFlags select_src;
  auto* select_cmd =
      app.add_subcommand("select", "The entry a policy advertises and the sgid_index it routes from");
  select_src.add(select_cmd);
  select_cmd
      ->add_option("--policy", select.policy, "Policy or profile spec, e.g. auto, jaccl, validated:index=3")
      ->capture_default_str();
  select_cmd->add_flag("--explain", select.explain, "Print why each entry was accepted or rejected");
  select_cmd->add_flag("--json", select.json, "Print JSON (schema in docs/cli.md)");

  // check
  CheckOptions check;
  SourceFlags check_src;
  auto* check_cmd = app.add_subcommand(
      "check", "Every named profile side by side: advertised GID, sgid_index, agreement, predicted RTR");
  check_src.add(check_cmd);
  check_cmd
      ->add_option("--platform", check.platform, "Predict RTR for this platform (default: by link layer)")
      ->check(CLI::IsMember({"linux", "darwin"}));
  check_cmd->add_option("--profile", check.profiles,
                        "Check these profile specs instead of the named ones (repeatable)");
  check_cmd->add_flag("--json", check.json, "Print JSON (schema in docs/cli.md)");

  // explain-errno
  ExplainOptions explain;
  SourceFlags explain_src;
  std::uint32_t sgid_index = 0;
  auto* explain_cmd =
      app.add_subcommand("explain-errno", "What an RTR errno means on a platform, for a table's entry");
  explain_cmd->add_option("errno", explain.err, "The errno number (or name, e.g. EINVAL)")->required();
  explain_src.add(explain_cmd);
  explain_cmd
      ->add_option("--platform", explain.platform, "linux or darwin (default: by link layer, else linux)")
      ->check(CLI::IsMember({"linux", "darwin"}));
  auto* sgid_opt = explain_cmd->add_option("--sgid-index", sgid_index, "The sgid_index the failed RTR used");
  explain_cmd->add_option("--advertised", explain.advertised, "The GID this side advertised");
  explain_cmd->add_option("--peer", explain.peer, "The peer's GID (the dgid)");

  // convert
  ConvertOptions convert;
  SourceFlags convert_src;
  auto* convert_cmd = app.add_subcommand("convert", "Write the table(s) in another format");
  convert_src.add(convert_cmd);
  convert_cmd->add_option("--to", convert.to, "json, devinfo, show_gids or sysfs")
      ->required()
      ->check(CLI::IsMember({"json", "devinfo", "show_gids", "sysfs"}));
  convert_cmd->add_option("--output", convert.output, "Write here (a directory for sysfs) instead of stdout");

  // simulate
  SimulateOptions simulate;
  auto* simulate_cmd = app.add_subcommand(
      "simulate", "Connect fake hosts built from tables (one each) and report which pairs work");
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

  // fleet (tools/gidpolicy/fleet_cmd.cpp)
  FleetCommand fleet(app);

  // CLI11 reports a mistyped subcommand as a missing one; name it instead.
  const std::set<std::string> subcommands{"show",    "select",   "check", "explain-errno",
                                          "convert", "simulate", "fleet"};
  if (argc > 1 && argv[1][0] != '-' && !subcommands.count(argv[1])) {
    std::cerr << "gidpolicy: unknown subcommand '" << argv[1]
              << "': expected show, select, check, explain-errno, convert, simulate or fleet (see gidpolicy "
                 "--help)\n";
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, then where to look: CLI11's own report spans several.
    std::string sub;
    for (const auto* s : app.get_subcommands()) sub = " " + s->get_name();
    std::string what = e.what();
    if (app.get_subcommands().empty())
      what = "expected a subcommand: show, select, check, explain-errno, convert, simulate or fleet";
    std::cerr << "gidpolicy: " << what << " (see gidpolicy" << sub << " --help)\n";
    return kExitUsage;
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
  if (fleet.parsed()) return fleet.run();
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    // The library reports errors as values; this catches allocation failures, iostream and
    // CLI11 set-up errors, so nothing escapes main.
    std::cerr << "gidpolicy: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "gidpolicy: internal error\n";
  }
  return kExitUsage;
}
