// `gidpolicy env --for STACK[,STACK...]`: each stack's variables (or arguments) for the GID the
// chosen profile picks, and why, as the library's plan_env() computes them (env.hpp); printed as
// shell exports, a dotenv file or JSON. A conflict (no one value is right) exits 1 naming each.
#include "env_cmd.hpp"

#include "commands.hpp"
#include "env_file.hpp"
#include "output.hpp"
#include "render.hpp"

#include <gidpolicy/fleet.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/stack_table.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace gidpolicy::cli {
namespace {

std::string comment(std::string_view text) {
  // One line per comment: nothing from a table (a device name) may end the comment early, and
  // no control character reaches the terminal (show_text(), quoting.hpp).
  return "# " + show_text(text, std::string::npos) + "\n";
}

// A value as one shell word: shell_quote() (quoting.hpp), a bare word single-quoted too so every
// value reads the same way ('7', 'mlx5_0:1').
std::string value_word(std::string_view v) {
  std::string q = shell_quote(v);
  return q.front() == '\'' || q.front() == '$' ? q : "'" + q + "'";
}

}  // namespace

std::optional<RankText> rank_text(const std::optional<std::string>& option) {
  if (option) return RankText{*option, "--rank"};
  for (const std::string_view var : {stack_vars::kJacclRank, stack_vars::kMlxRank})
    if (const char* v = std::getenv(std::string(var).c_str())) return RankText{v, std::string(var)};
  return std::nullopt;
}

result<std::size_t> rank_in(const RankText& r, std::size_t ranks, const std::string& file) {
  const auto rank = fleet::parse_rank(r.text);
  if (ranks == 0)
    return fail(errc::invalid_argument,
                r.from + " " + shell_quote(r.text) + ": " + bounded(file) + " has no ranks");
  if (!rank || rank.value() >= ranks)
    // Quoted as one shell word: a rank of ' 1' shows its space, which bounded() would not.
    return fail(errc::invalid_argument, r.from + " " + shell_quote(r.text) + ": expected a rank 0.." +
                                            std::to_string(ranks - 1) + " of " + bounded(file));
  return rank.value();
}

namespace {

const char* first_env(const char* a, const char* b) {
  if (const char* v = std::getenv(a)) return v;
  return std::getenv(b);
}

/// --for jaccl's device file and rank, with JACCL's own defaults (its JACCL_* name first, then
/// MLX_*; the device file's two names are the jaccl row's, stack_table.hpp). No file at all: nullopt (env
/// then says how to give one). A file without a rank, a rank that is not a number below the file's rank
/// count, or a file JACCL would refuse: an error.
result<std::optional<JacclRow>> jaccl_row(const EnvArgs& o) {
  std::optional<std::string> file = o.jaccl_devices;
  std::string from = "--jaccl-devices";
  if (!file) {
    // JACCL's row: the variable it reads first, then the one mlx.launch sets.
    const StackInfo& jaccl = stack_row(StackId::jaccl);
    for (const std::string_view var : {jaccl.launch.read_first, jaccl.launch.device})
      if (const char* v = std::getenv(std::string(var).c_str())) {
        file = v;
        from = std::string(var);
        break;
      }
  }
  if (!file) {
    if (o.rank)
      return fail(errc::invalid_argument, "env --rank: give the device file with --jaccl-devices FILE");
    return std::optional<JacclRow>();
  }
  const std::optional<RankText> given = rank_text(o.rank);
  if (!given)
    return fail(errc::invalid_argument, "env --for jaccl: " + from + " " + bounded(*file) +
                                            " needs this host's rank: give --rank R (or set " +
                                            std::string(stack_vars::kMlxRank) + ")");
  // Only this rank's row is kept (the file is checked whole, row by row): a rank that is no
  // rank keeps none, and rank_in() then names the file's count.
  std::optional<std::size_t> wanted;
  if (auto r = fleet::parse_rank(given->text)) wanted = r.value();
  GIDPOLICY_TRY(devices, fleet::read_jaccl_row(*file, wanted));
  GIDPOLICY_TRY(rank, rank_in(*given, devices.ranks, *file));
  GIDPOLICY_TRY(ring,
                devices.uses_ring(o.jaccl_ring ||
                                  first_env(std::string(stack_vars::kJacclRing).c_str(),
                                            std::string(stack_vars::kMlxJacclRing).c_str()) != nullptr));
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(*file, ec);
  if (ec) abs = *file;
  return std::optional<JacclRow>(JacclRow{.path = abs.lexically_normal().string(),
                                          .ranks = devices.ranks,
                                          .rank = rank,
                                          .ring = ring,
                                          .devices = devices.devices(ring)});
}

}  // namespace

int run_env(const EnvArgs& o) {
  auto stacks = parse_env_stacks(o.stacks);
  if (!stacks) return usage_error(stacks.error());
  auto profile = parse_profile(o.profile);
  if (!profile)
    return usage_error(
        Error(profile.error().code, "--profile " + bounded(o.profile) + ": " + profile.error().detail));
  std::optional<JacclRow> jaccl;
  // A stack that reads JACCL's device file (JACCL, exo): its rank's row is checked.
  if (std::any_of(stacks.value().begin(), stacks.value().end(), [](const std::string& name) {
        const StackInfo* row = find_stack(name);
        return row && row->env == EnvShape::jaccl_device_file;
      })) {
    auto row = jaccl_row(o);
    if (!row) return usage_error(row.error());
    jaccl = std::move(row).value();
  } else if (o.jaccl_devices || o.rank || o.jaccl_ring) {
    return usage_error("env: --jaccl-devices, --rank and --jaccl-ring are for --for jaccl (or exo)");
  }
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  auto launch_settings = read_launch_settings(!o.no_env, o.env_file);
  if (!launch_settings) return usage_error(launch_settings.error());
  EnvOptions options;
  options.settings = launch_settings.value();
  options.pin = o.pin;
  const EnvPlan plan = plan_env(stacks.value(), loaded.value().tables, profile.value(), jaccl, options);
  // The settings each stack asked for read (they decide its own choice and the ports it opens).
  std::vector<std::string> read_lines;
  Json jread = Json::array();
  for (const auto& name : stacks.value()) {
    const StackInfo* row = find_stack(name);
    if (!row) continue;
    for (const SettingReading& r : read_launch(row->id, launch_settings.value()).read) {
      read_lines.push_back(std::string(row->name) + " reads " + r.variable + "=" + r.value + " (" + r.origin +
                           "): " + r.reading + (r.applied ? "" : " [not applied]"));
      Json jr;
      jr["stack"] = std::string(row->name);
      jr["variable"] = r.variable;
      jr["value"] = r.value;
      jr["origin"] = r.origin;
      jr["reading"] = r.reading;
      jr["applied"] = r.applied;
      jread.push_back(std::move(jr));
    }
  }
  Output& out = standard_output();
  if (!plan.conflicts.empty()) {
    for (const auto& c : plan.conflicts) print_error(c);
  }
  if (o.format == "json") {
    // Version 1 (before it, unversioned: the same keys without the envelope).
    Json j = json_envelope("gidpolicy.env", 1, o.source, loaded.value());
    j["profile"] = profile.value().spec();
    Json settings = Json::object();
    for (const auto& s : plan.settings) settings[s.name] = s.value;
    j["settings"] = std::move(settings);
    j["args"] = plan.args;
    j["why"] = plan.why;
    j["conflicts"] = plan.conflicts;
    j["launch_settings"] = std::move(jread);
    print_json(j);
  } else if (o.format == "dotenv") {
    // The settings read come first among the comments, as in the sh output.
    EnvPlan shown = plan;
    shown.why.insert(shown.why.begin(), read_lines.begin(), read_lines.end());
    auto text = render_dotenv(shown);
    if (!text) return usage_error(text.error());
    out.write(text.value());
  } else {
    for (const auto& r : read_lines) out.write(comment(r));
    for (const auto& w : plan.why) out.write(comment(w));
    for (const auto& a : plan.args) out.write(comment(a));
    for (const auto& s : plan.settings)
      out.write("export " + shell_quote(s.name) + "=" + value_word(s.value) + "\n");
  }
  return plan.conflicts.empty() ? kExitOk : kExitFinding;
}

}  // namespace gidpolicy::cli
