// `gidpolicy simulate`: hosts with the given tables connected over the fake fabric.
#include "commands.hpp"
#include "output.hpp"
#include "render.hpp"

#include <gidpolicy/profiles.hpp>
#if GIDPOLICY_CLI_HAVE_FAKES
#include <gidpolicy/fakes/fake_fabric.hpp>
#endif

#include <fmt/core.h>

#include <filesystem>
#include <set>

namespace gidpolicy::cli {
namespace {

namespace fs = std::filesystem;

}  // namespace

int run_simulate(const SimulateArgs& o) {
#if GIDPOLICY_CLI_HAVE_FAKES
  if (o.tables.size() < 2) return usage_error("simulate: give at least two tables (one host each)");
  auto profile = parse_profile(o.profile);
  if (!profile)
    return usage_error(
        Error(profile.error().code, "--profile " + bounded(o.profile) + ": " + profile.error().detail));
  const auto topology = o.topology == "ring" ? fleet::Pairing::ring : fleet::Pairing::mesh;
  fakes::FakeFabric fabric;
  std::set<std::string> names;
  for (const auto& spec : o.tables) {
    // A host is named after its file: the name rule (names.hpp) before it reaches the report.
    if (auto why = name_problem(spec, NameKind::path))
      return usage_error("simulate: table " + quote_name(spec, 200) + ": " + *why);
    auto table = load_host_table(spec);
    if (!table) return usage_error(table.error());
    // A host is named after its file (and device/port when given): short, and what the user typed.
    std::string name = fs::path(spec).filename().string();
    for (int n = 2; names.count(name); ++n)
      name = fs::path(spec).filename().string() + "#" + std::to_string(n);
    names.insert(name);
    fakes::FabricHost host{
        .name = name, .table = table.value(), .profile = profile.value(), .driver = std::nullopt};
    if (o.platform) host.driver = driver_for(table.value(), o.platform);
    auto added = fabric.add_host(std::move(host));
    if (!added) return usage_error(Error(added.error().code, spec + ": " + added.error().what()));
  }
  auto report = fabric.connect(topology, {.preflight = o.preflight});
  if (!report) return usage_error(report.error());
  const auto& r = report.value();
  standard_output().print("{} of {} hosts, profile {}{}\n", to_string(topology), names.size(),
                          profile.value().spec(), o.preflight ? ", with preflight" : "");
  standard_output().print("{}", r.to_string());
  standard_output().print("{} of {} pairs connected\n", r.connected_count(), r.pairs.size());
  return r.all_connected() ? kExitOk : kExitFinding;
#else
  (void)o;
  return usage_error("simulate: this gidpolicy was built without the fakes (GIDPOLICY_BUILD_FAKES=OFF)");
#endif
}

}  // namespace gidpolicy::cli
