// `gidpolicy check`: every named profile (or the ones given) on each table, with the RTR outcome
// predicted for the attributes RtrBuilder builds, as text or JSON.
#include "commands.hpp"
#include "output.hpp"
#include "render.hpp"

#include <gidpolicy/check.hpp>
#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/stacks.hpp>

#include <fmt/core.h>

#include <optional>

namespace gidpolicy::cli {

int run_check(const CheckArgs& o) {
  // Options a mode cannot use are refused, never ignored: --stacks and --pins predict each stack's
  // own profile, under the launch's settings; --env-file and --no-env name those settings.
  if ((o.stacks || o.pins) && !o.profiles.empty())
    return usage_error(
        std::string("check ") + (o.stacks ? "--stacks" : "--pins") +
        ": --profile is not used there (each stack is predicted with its own profile under the "
        "launch's settings: set them in the environment or --env-file); `check --profile SPEC` "
        "checks a profile");
  if (!o.stacks && !o.pins && (o.env_file || o.no_env))
    return usage_error("check: --env-file and --no-env are for --stacks or --pins");
  if (o.stacks) return run_check_stacks(o);
  if (o.pins) return run_check_pins(o);
  std::vector<Profile> profiles;
  // `--profile all`: every named profile on every port, the ones of stacks that never run on
  // the port's link layer too (the full grid; without --profile those are left out).
  const bool all = o.profiles.size() == 1 && o.profiles.front() == "all";
  if (o.profiles.empty() || all) {
    profiles = profiles::all();
  } else {
    for (const auto& s : o.profiles) {
      auto p = parse_profile(s);
      if (!p) return usage_error(Error(p.error().code, "--profile " + bounded(s) + ": " + p.error().detail));
      profiles.push_back(std::move(p).value());
    }
  }
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
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
    jt["driver"] = driver.name;
    Json jprofiles = Json::array();
    std::vector<std::string> notes;
    if (!o.json) {
      if (!first) standard_output().print("\n");
      first = false;
      standard_output().print("{} ({}, {}, {} GIDs listed; RTR predicted for {}{})\n", port_name(t),
                              to_string(t.port().link_layer), to_string(t.port().state), t.size(),
                              driver.name, o.platform ? ", from --platform" : "");
      standard_output().print("  {:<14}  {:>5}  {:<39}  {:>4}  {:<6}  {}\n", "PROFILE", "INDEX",
                              "ADVERTISED GID", "SGID", "AGREES", "PREDICTED RTR");
    }
    std::vector<std::string> not_run;
    for (const auto& prof : profiles) {
      const std::string name = prof.spec();
      // The named profiles of a stack that never runs on this link layer (JACCL's on a RoCE
      // port) neither print nor count; profiles given with --profile are checked as asked.
      if (o.profiles.empty() && !all && !profile_runs_on(name, t.port().link_layer)) {
        not_run.push_back(name);
        continue;
      }
      // The library's row (check.hpp): the plan, and the RTR towards a peer that runs the same
      // profile on a like table, so the prediction isolates this side's sgid_index choice.
      CheckRow row = check_profile(t, prof, driver);
      const result<Plan> plan =
          row.plan ? result<Plan>(std::move(*row.plan)) : result<Plan>(fail(*row.error));
      const std::optional<RtrPrediction>& v = row.prediction;
      Json jp;
      jp["profile"] = name;
      jp["ok"] = plan.has_value();
      json_plan_keys(
          jp, plan,
          {{"advertised_index", [](const Plan& p) { return Json(p.selection.entry.index); }},
           {"advertised_gid", [](const Plan& p) { return Json(p.selection.entry.gid.to_string()); }},
           {"sgid_index", [](const Plan& p) { return Json(p.sgid_index); }},
           {"agrees", [](const Plan& p) { return Json(p.agrees()); }, false},
           {"predicted_rtr", [&](const Plan&) { return json_prediction(*v, driver.platform); }},
           {"explanation", [](const Plan& p) { return Json(p.agreement.explanation); }}});
      if (!plan) {
        exit_code = kExitFinding;
        if (!o.json) {
          standard_output().print("  {:<14}  {:>5}  {:<39}  {:>4}  {:<6}  {}\n", name, "-",
                                  "(no GID selected)", "-", "-", "not attempted: the selection failed");
          notes.push_back(name + ": " + plan.error().what());
        }
      } else {
        const Plan& p = plan.value();
        if (!p.agrees()) exit_code = kExitFinding;
        if (!o.json) {
          standard_output().print("  {:<14}  {:>5}  {:<39}  {:>4}  {:<6}  {}\n", name,
                                  p.selection.entry.index, p.selection.entry.gid.to_string(), p.sgid_index,
                                  p.agrees() ? "yes" : "NO", v->to_string(driver.platform));
          if (!p.agrees()) notes.push_back(name + ": " + p.agreement.explanation);
        }
      }
      jprofiles.push_back(std::move(jp));
    }
    jt["profiles"] = std::move(jprofiles);
    jt["not_run"] = not_run;
    if (!not_run.empty() && !o.json) {
      std::string names;
      for (const auto& n : not_run) names += (names.empty() ? "" : ", ") + n;
      notes.push_back("not run on " + std::string(to_string(t.port().link_layer)) +
                      " ports (not checked): " + names);
    }
    // Each row chose among the listed entries: where the source hid slots, say so once per port.
    if (auto unlisted = unlisted_slots_note(t); !o.json && !unlisted.empty())
      notes.push_back(std::move(unlisted));
    items.push_back(std::move(jt));
    for (const auto& n : notes) standard_output().print("  {}\n", n);
  }
  if (o.json) {
    // Version 3: one envelope (schema, version, host, source) and "ports" always an array
    // (version 2 printed one object per port, an array only for several). Version 2: each
    // profile's spec is under "profile" (version 1, unversioned, said "name").
    Json doc = json_envelope("gidpolicy.check", 3, o.source, loaded.value());
    doc["ports"] = std::move(items);
    print_json(doc);
  }
  return exit_code;
}

}  // namespace gidpolicy::cli
