// `gidpolicy check --stacks` (what each RDMA stack will pick on each port, whether its RTR then
// works, and the setting that fixes it) and `gidpolicy check --pins` (the pinned GID indices of
// the environment or an env file, each read the way its stack reads it and judged on every port).
#include "commands.hpp"
#include "env_file.hpp"
#include "output.hpp"
#include "render.hpp"

#include <gidpolicy/profiles.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/stacks.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>

namespace gidpolicy::cli {
namespace stacks_cmd_detail {

// A stack's settings as JSON: each variable read, its value, where it came from and how read.
Json settings_json(const StackLaunch& l) {
  Json out = Json::array();
  for (const SettingReading& r : l.read) {
    Json j;
    j["variable"] = r.variable;
    j["value"] = r.value;
    j["origin"] = r.origin;
    j["reading"] = r.reading;
    j["applied"] = r.applied;
    out.push_back(std::move(j));
  }
  return out;
}

// The lines saying which settings the predictions use (nothing when none is set and the
// environment was read: the defaults, as before).
void print_settings(const std::vector<StackLaunch>& launches, bool no_env, bool env_file) {
  bool any = false;
  for (const StackLaunch& l : launches)
    for (const SettingReading& r : l.read) {
      if (!any) standard_output().print("launch settings read:\n");
      any = true;
      standard_output().print("  {} {}={} ({}): {}{}\n", stack_row(l.stack).name, show_text(r.variable, 60),
                              show_text(r.value, 40), show_text(r.origin),
                              show_text(r.reading, std::string::npos), r.applied ? "" : " [not applied]");
    }
  if (!any && (no_env || env_file))
    standard_output().print("launch settings read: none{}: each stack's defaults\n",
                            no_env ? " (--no-env: the environment is not read)" : "");
  if (any) standard_output().print("\n");
}

}  // namespace stacks_cmd_detail

std::vector<StackLaunch> read_launches(const std::vector<LaunchSetting>& settings) {
  std::vector<StackLaunch> out;
  for (const StackInfo& s : stack_catalogue()) out.push_back(read_launch(s.id, settings));
  return out;
}

int run_check_stacks(const CheckArgs& o) {
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  auto settings = read_launch_settings(!o.no_env, o.env_file);
  if (!settings) return usage_error(settings.error());
  const std::vector<StackLaunch> launches = read_launches(settings.value());
  if (!o.json) stacks_cmd_detail::print_settings(launches, o.no_env, o.env_file.has_value());
  int exit_code = kExitOk;
  Json items = Json::array();
  bool first = true;
  for (const auto& t : loaded.value().tables) {
    const DriverModel driver = driver_for(t, o.platform);
    Json jt;
    jt["device"] = t.port().device;
    jt["port"] = t.port().port;
    jt["link_layer"] = to_string(t.port().link_layer);
    jt["platform"] = std::string(to_string(driver.platform));
    Json jstacks = Json::array();
    std::vector<std::string> notes;
    if (!o.json) {
      if (!first) standard_output().print("\n");
      first = false;
      standard_output().print(
          "{} ({}, {} GIDs listed; RTR predicted for {} against a peer at gidpolicy's auto)\n", port_name(t),
          to_string(t.port().link_layer), t.size(), driver.name);
      standard_output().print("  {:<10}  {:>5}  {:<39}  {:<5}  {}\n", "STACK", "INDEX", "GID", "WORKS",
                              "OUTCOME");
    }
    std::size_t listed = 0;
    for (const StackInfo& s : stack_catalogue()) {
      // The rows that run on this port's link layer (StackInfo::runs_on): JACCL and exo on
      // Thunderbolt, NCCL and its kin on RoCE and InfiniBand, ds4 and llama.cpp on both kinds.
      if (!s.runs_on.has(t.port().link_layer)) continue;
      ++listed;
      const StackLaunch& launch = launches[static_cast<std::size_t>(s.id)];
      Json js;
      js["stack"] = std::string(s.name);
      js["version"] = std::string(s.version);
      js["settings"] = stacks_cmd_detail::settings_json(launch);
      js["used"] = launch.uses(t.port().device, t.port().port);
      if (!launch.uses(t.port().device, t.port().port)) {
        // Its device list leaves this port out: the stack never opens it, so nothing is predicted.
        const std::string outcome = "not used: " + launch.devices->variable + " leaves this port out";
        for (const char* k : {"spec", "chose", "index", "gid", "works", "errno", "fix"}) js[k] = nullptr;
        js["modelled"] = s.predicted;
        js["outcome"] = outcome;
        js["why"] = outcome;
        jstacks.push_back(std::move(js));
        if (!o.json)
          standard_output().print("  {:<10}  {:>5}  {:<39}  {:<5}  {}\n", s.name, "-", "(not used)", "-",
                                  outcome);
        continue;
      }
      if (launch.refused && s.predicted) {
        // The stack refuses its pin's text: it does not start, whatever the port holds.
        const std::string outcome = "does not start: " + launch.pin_variable + " " + *launch.refused;
        exit_code = kExitFinding;
        for (const char* k : {"chose", "index", "gid", "errno", "fix"}) js[k] = nullptr;
        js["modelled"] = true;
        js["spec"] = std::string(automatic_spec(s, t.port().link_layer));
        js["works"] = false;
        js["outcome"] = outcome;
        js["why"] = outcome;
        jstacks.push_back(std::move(js));
        if (!o.json)
          standard_output().print("  {:<10}  {:>5}  {:<39}  {:<5}  {}\n", s.name, "-", "(none)", "NO",
                                  outcome);
        continue;
      }
      if (!s.predicted) {
        // Its own choice is not modelled (llama.cpp): listed with the setting that gives it the
        // entry to use, and never counted as a failure.
        auto good = profiles::automatic().plan(t);
        const std::optional<std::string> give =
            good ? std::optional<std::string>(fix_setting(s, t, good.value().sgid_index)) : std::nullopt;
        const std::string outcome =
            launch.pinned
                ? "uses index " + std::to_string(*launch.pinned) + ", as " + launch.pin_variable +
                      " gives it: no automatic choice modelled"
                : "uses the index given: no automatic choice modelled (" + std::string(s.launch.choice) + ")";
        js["modelled"] = false;
        js["spec"] = nullptr;
        js["chose"] = nullptr;
        js["index"] = nullptr;
        js["gid"] = nullptr;
        js["works"] = nullptr;
        js["errno"] = nullptr;
        js["outcome"] = outcome;
        js["why"] = std::string(s.source);
        js["fix"] = give ? Json(*give) : Json(nullptr);
        jstacks.push_back(std::move(js));
        if (!o.json) {
          standard_output().print("  {:<10}  {:>5}  {:<39}  {:<5}  {}\n", s.name, "-", "(the index given)",
                                  "-", outcome);
          notes.push_back(std::string(s.name) + " (" + std::string(s.version) + "): " +
                          (give ? "give it " + *give + " (gidpolicy's auto)"
                                : std::string("gidpolicy's auto finds no usable entry here to give it")));
        }
        continue;
      }
      const std::string_view spec = automatic_spec(s, t.port().link_layer);
      auto own = stack_profile_for(s.id, t, launch);
      if (!own) return usage_error(own.error());  // a predicted row's choice is modelled (checked in kStacks)
      const StackPrediction p = predict_profile(own.value(), t, driver);
      std::optional<std::string> fix;
      if (!p.works && p.fix && s.launch.choice_reader == ChoiceReader::stack) {
        // Only a setting that works when applied is offered.
        StackLaunch fixed = launch;
        fixed.pinned = *p.fix;
        auto pinned_profile = stack_profile_for(s.id, t, fixed);
        if (pinned_profile && predict_profile(pinned_profile.value(), t, driver).works)
          fix = fix_setting(s, t, *p.fix);
      }
      // A stack no setting steers as it ships (JACCL, exo): what must hold on the host, and what
      // its patched fork would pick under its own variable.
      const std::optional<std::string> host = p.works ? std::nullopt : unsteerable_failure(s, t, driver);
      std::optional<std::string> patched;
      if (s.launch.choice_reader == ChoiceReader::patched_fork) {
        auto good = profiles::automatic().plan(t);
        patched = std::string(s.launch.choice) + "=" + profiles::automatic().spec() +
                  (good ? " picks index " + std::to_string(good.value().sgid_index) + " (" +
                              good.value().selection.entry.gid.to_string() + ")"
                        : std::string(" finds no usable entry")) +
                  " (patched fork only)";
      }
      if (!p.works) exit_code = kExitFinding;
      js["modelled"] = true;
      // The spec predicted: the path's own, or with the options and pin the settings give it.
      js["spec"] = launch.options.empty() && !launch.pinned ? std::string(spec) : own.value().spec();
      js["chose"] = p.chose;
      js["index"] = p.chose ? Json(p.index) : Json(nullptr);
      js["gid"] = p.chose ? Json(p.gid.to_string()) : Json(nullptr);
      js["works"] = p.works;
      js["errno"] = p.err ? Json(p.err) : Json(nullptr);
      js["outcome"] = p.outcome;
      js["why"] = p.why;
      js["fix"] = fix ? Json(*fix) : Json(nullptr);
      js["host_fix"] = host ? Json(*host) : Json(nullptr);
      js["patched_fork"] = patched ? Json(*patched) : Json(nullptr);
      const StackPath* path = automatic_path(s, t.port().link_layer);
      const std::string assumes = path ? std::string(path->assumes) : std::string();
      js["assumes"] = assumes.empty() ? Json(nullptr) : Json(assumes);
      jstacks.push_back(std::move(js));
      if (!o.json) {
        standard_output().print("  {:<10}  {:>5}  {:<39}  {:<5}  {}\n", s.name,
                                p.chose ? std::to_string(p.index) : "-",
                                p.chose ? p.gid.to_string() : "(none)", p.works ? "yes" : "NO", p.outcome);
        if (!p.works && host)  // its own reason, what must hold on the host, and the fork's pick
          notes.push_back(std::string(s.name) + ": " + *host + (patched ? "; " + *patched : std::string()));
        else if (!p.works)
          notes.push_back(std::string(s.name) + " (" + std::string(s.version) + "): " + p.why +
                          (assumes.empty() ? std::string() : " (predicted " + assumes + ")") +
                          (fix ? "; fix: " + *fix
                           : port_blocker(t).has_value()
                               ? std::string("; no setting fixes it: the port must be fixed first "
                                             "(gidpolicy doctor says how)")
                               : std::string("; no setting fixes it: gidpolicy's auto finds no usable "
                                             "entry here")) +
                          (patched ? "; " + *patched : std::string()));
      }
    }
    if (listed == 0 && !o.json)
      standard_output().print("  no stack gidpolicy knows runs on {} ports\n",
                              to_string(t.port().link_layer));
    jt["stacks"] = std::move(jstacks);
    items.push_back(std::move(jt));
    for (const auto& n : notes) standard_output().print("  {}\n", n);
  }
  if (o.json) {
    // Version 1 (before it, unversioned: one object per port, an array only for several).
    Json doc = json_envelope("gidpolicy.check.stacks", 1, o.source, loaded.value());
    doc["ports"] = std::move(items);
    print_json(doc);
  }
  return exit_code;
}

int run_check_pins(const CheckArgs& o) {
  struct Source {
    std::string origin;
    std::vector<EnvAssignment> vars;
    std::vector<LaunchSetting> launch;  ///< every launch variable it sets: the pins' other settings
  };
  std::vector<Source> sources;
  const EnvLookup lookup = [](const std::string& name) -> std::optional<std::string> {
    if (const char* v = std::getenv(name.c_str())) return std::string(v);
    return std::nullopt;
  };
  // Each source's pins, and the device variables that say which ports each stack then uses
  // (read_device_selector: what `env` writes beside a pin is read back the same way).
  const auto pin_names = pin_variables();
  const auto selectors = device_variables();
  const auto is = [](const std::vector<std::string_view>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  std::vector<std::vector<DeviceSelector>> selected;
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  {
    // A bundle's host was judged with the environment it was collected in, not this process's.
    const bool bundled = loaded.value().bundle_host.has_value();
    const std::string origin = bundled ? *o.source.bundle + "'s environment" : std::string("the environment");
    const EnvLookup host_lookup = [&](const std::string& name) -> std::optional<std::string> {
      if (!bundled) return lookup(name);
      for (const auto& [n, v] : loaded.value().bundle_environment)
        if (n == name) return v;
      return std::nullopt;
    };
    Source env{origin, {}, {}};
    std::vector<DeviceSelector> sel;
    // --no-env: the environment's pins are not judged (a bundle's recorded environment is not
    // this process's, and is still read).
    if (!o.no_env || bundled) {
      for (auto v : pin_names)
        if (auto val = host_lookup(std::string(v))) env.vars.push_back({std::string(v), *val, origin});
      for (auto v : selectors)
        if (auto val = host_lookup(std::string(v))) sel.push_back(*read_device_selector(v, *val));
      for (auto v : launch_variables())
        if (auto val = host_lookup(std::string(v))) env.launch.push_back({std::string(v), *val, origin});
    }
    sources.push_back(std::move(env));
    selected.push_back(std::move(sel));
  }
  if (o.env_file) {
    const EnvLookup file_lookup = [&](const std::string& name) -> std::optional<std::string> {
      return o.no_env ? std::nullopt : lookup(name);
    };
    auto vars = read_env_file(*o.env_file, file_lookup);
    if (!vars) return usage_error(vars.error());
    Source f{*o.env_file, {}, {}};
    const auto launch_names = launch_variables();
    std::vector<DeviceSelector> sel;
    for (auto& a : vars.value()) {
      if (is(pin_names, a.name)) f.vars.push_back(a);
      if (is(launch_names, a.name)) f.launch.push_back({a.name, a.value, a.origin});
      // The last setting of a name is the one the stack sees.
      if (is(selectors, a.name)) {
        std::erase_if(sel, [&](const DeviceSelector& d) { return d.variable == a.name; });
        sel.push_back(*read_device_selector(a.name, a.value));
      }
    }
    sources.push_back(std::move(f));
    selected.push_back(std::move(sel));
  }
  int exit_code = kExitOk;
  std::size_t pins = 0;
  Json jpins = Json::array();
  for (std::size_t si = 0; si < sources.size(); ++si) {
    const Source& src = sources[si];
    bool mc_set = false;
    for (const auto& a : src.vars) mc_set = mc_set || a.name == stack_vars::kMcGidIndex;
    for (const auto& a : src.vars) {
      ++pins;
      const std::string shown = show_text(a.name, 60) + "=" + show_text(a.value, 40);
      // Every value of these lines passes show_text() (quoting.hpp): a newline in a pin's value
      // or its file's name cannot forge a line of the report.
      if (!o.json) standard_output().print("{} ({})\n", shown, show_text(a.origin));
      // Whether every reading of this pin is redundant: the stack's own choice, under the source's
      // other settings, is the pinned index on every port it uses (deleting the pin changes nothing).
      bool all_redundant = true;
      std::size_t compared = 0;
      std::vector<std::string> own_choices;
      const std::size_t first_row = jpins.size();
      for (const auto& reading : read_pin(a.name, a.value, mc_set)) {
        if (!o.json)
          standard_output().print("  as {} reads it:\n", show_text(reading.reader, std::string::npos));
        const DeviceSelector* sel = selector_for(reading, a.name, selected[si]);
        // The stack's launch without any of its pins: its own choice under the other settings.
        std::vector<LaunchSetting> others;
        for (const LaunchSetting& l : src.launch) {
          const auto& stack_pins = stack_row(reading.stack).pins;
          if (std::none_of(stack_pins.begin(), stack_pins.end(),
                           [&](const PinVariable& pv) { return pv.name == l.variable; }))
            others.push_back(l);
        }
        const StackLaunch own_launch = read_launch(reading.stack, others);
        StackLaunch pinned_launch = own_launch;
        pinned_launch.pinned = reading.value;
        const auto same_as_own = [&](const GidTable& t) -> std::optional<std::uint32_t> {
          if (reading.refused) return std::nullopt;
          auto own = stack_profile_for(reading.stack, t, own_launch, false);
          auto pinned = stack_profile_for(reading.stack, t, pinned_launch, true);
          if (!own || !pinned) return std::nullopt;
          const DriverModel m = driver_for(t, o.platform);
          const StackPrediction po = predict_profile(own.value(), t, m);
          const StackPrediction pp = predict_profile(pinned.value(), t, m);
          if (!po.works || !pp.works || po.index != pp.index) return std::nullopt;
          return po.index;
        };
        // One JSON row per pin, reading and port, whatever the verdict.
        const auto row = [&](const GidTable& t, std::string status, Json err, Json right,
                             std::string summary) {
          Json jp;
          jp["variable"] = a.name;
          jp["value"] = a.value;
          jp["origin"] = a.origin;
          jp["reader"] = reading.reader;
          jp["device"] = t.port().device;
          jp["port"] = t.port().port;
          jp["status"] = std::move(status);
          jp["errno"] = std::move(err);
          jp["right_index"] = std::move(right);
          jp["summary"] = std::move(summary);
          jp["on_change"] = {
              {"reselects", std::string(to_string(stack_row(reading.stack).on_change.reselects))},
              {"summary", on_change_text(stack_row(reading.stack), reading.value.has_value())}};
          jpins.push_back(std::move(jp));
        };
        for (const auto& t : loaded.value().tables) {
          if (sel && !sel->selects(t.port().device, t.port().port)) {
            // A port the stack does not open: its pin does not matter there.
            const std::string why = "not used: " + sel->variable + " leaves it out";
            if (!o.json) standard_output().print("    {}: {}\n", port_name(t), why);
            row(t, "unused", nullptr, nullptr, why);
            continue;
          }
          if (const StackInfo& stack = stack_row(reading.stack); !stack.runs_on.has(t.port().link_layer)) {
            // A stack that never runs on this kind of port (NCCL on Thunderbolt): its pin is not
            // judged there.
            const std::string why = "not run here: " + std::string(stack.title) + " does not run on " +
                                    std::string(to_string(t.port().link_layer)) + " ports";
            if (!o.json) standard_output().print("    {}: {}\n", port_name(t), why);
            row(t, "unused", nullptr, nullptr, why);
            continue;
          }
          const PinJudgement j = judge_pin(reading, t, driver_for(t, o.platform));
          ++compared;
          if (const auto same = same_as_own(t))
            own_choices.push_back(std::string(stack_row(reading.stack).title) + " index " +
                                  std::to_string(*same) + " on " + port_name(t));
          else
            all_redundant = false;
          if (j.status != PinJudgement::Status::fine) exit_code = kExitFinding;
          if (!o.json)
            standard_output().print("    {}: {}\n", port_name(t), show_text(j.summary, std::string::npos));
          row(t, std::string(to_string(j.status)), j.err ? Json(j.err) : Json(nullptr),
              j.right_index ? Json(*j.right_index) : Json(nullptr), j.summary);
        }
        // What the pin does when the table changes under it: the index stays, the address may move.
        if (!o.json && !reading.refused)
          standard_output().print("    on a GID change: {}\n",
                                  on_change_text(stack_row(reading.stack), reading.value.has_value()));
      }
      const bool redundant = all_redundant && compared > 0;
      for (std::size_t r = first_row; r < jpins.size(); ++r) jpins[r]["redundant"] = redundant;
      if (redundant && !o.json) {
        std::string where;
        for (const auto& c : own_choices) where += (where.empty() ? "" : ", ") + c;
        standard_output().print(
            "  redundant: every stack reading it picks that index on its own, under the other settings, on "
            "every port it uses ({}); delete {} from {}\n",
            where, shown, show_text(a.origin));
      }
    }
  }
  if (o.json) {
    // Version 1 (before it, unversioned: a bare array of rows).
    Json doc = json_envelope("gidpolicy.check.pins", 1, o.source, loaded.value());
    doc["pins"] = std::move(jpins);
    print_json(doc);
  } else if (pins == 0) {
    std::string names;
    for (auto v : pin_variables()) names += (names.empty() ? "" : ", ") + std::string(v);
    standard_output().print("no GID index is pinned (none of {} is set{}{})\n", names,
                            o.env_file ? " in the environment or " + show_text(*o.env_file) : std::string(),
                            o.no_env ? "; --no-env: the environment is not read" : "");
  }
  return exit_code;
}

}  // namespace gidpolicy::cli
