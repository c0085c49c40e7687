// `gidpolicy select`: what a policy selects on each table, with the plan's agreement, as text
// or JSON.
#include "commands.hpp"
#include "output.hpp"
#include "render.hpp"

#include <gidpolicy/kernel_routes.hpp>
#include <gidpolicy/policies/per_device.hpp>
#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/profiles.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <optional>
#include <string>

namespace gidpolicy::cli {

namespace {

// The policy that applies to one table, as printed on its line: a per-device profile names the
// device's own entry ("per-device[mlx5_0=validated:index=7]"), so output grows with the number
// of devices, not with devices times the length of the whole spec.
std::string spec_for_table(const Profile& profile, const std::string& whole, const GidTable& t) {
  const auto* per = profile.policy.target<PerDevice>();
  if (!per) return whole;
  std::string s = "per-device[";
  if (per->by_device.count(t.port().device))
    s += t.port().device + "=" + per->policy_for(t.port().device)->spec();
  else if (per->fallback)
    s += "*=" + per->fallback->spec();
  else
    s += t.port().device + ": no entry";
  s += "]";
  if (profile.source.is_literal()) s += "@sgid=" + std::to_string(profile.source.literal_index());
  return s;
}

}  // namespace

int run_select(const SelectArgs& o) {
  // --peer ADDR: checked first, then given to the spec when its registry row takes a peer
  // (spec_with_peer(): auto, rdma_cm, libfabric:ep=msg naming no address yet); any other policy
  // must name its peer itself (auto:peer=ADDR inside first()/per-device()).
  std::optional<PeerAddress> peer;
  if (o.peer) {
    auto addr = PeerAddress::parse(*o.peer);
    if (!addr)
      return usage_error(Error(addr.error().code, "--peer " + bounded(*o.peer) +
                                                      ": expected an IPv4 or IPv6 address "
                                                      "(fe80::/10 with its %NETDEV scope): " +
                                                      addr.error().detail));
    // Refused before the kernel is asked: what the address is, and what rdma_cm does with it.
    if (auto ok = check_peer(addr.value()); !ok)
      return usage_error(Error(ok.error().code, "--peer: " + ok.error().detail));
    peer = addr.value();
  }
  std::string spec_text = o.profile;
  if (peer)
    if (auto extended = spec_with_peer(o.profile, peer->to_string())) spec_text = std::move(*extended);
  auto profile = parse_profile(spec_text);
  if (!profile)
    return usage_error(
        Error(profile.error().code, "--profile " + bounded(o.profile) + ": " + profile.error().detail));
  if (peer) {
    // The policy says which peers it routes to (SelectionPolicy::peers()): none, and --peer
    // would be ignored; another, and it would route there, not to --peer. Either is said.
    const std::vector<PeerAddress> named = peers_of(profile.value().policy);
    if (named.empty())
      return usage_error("--peer needs a policy that routes to a peer (" + builtin_specs_taking_peer() +
                         ", or a spec naming auto:peer=ADDR); --profile " + bounded(o.profile) + " has none");
    if (std::find(named.begin(), named.end(), *peer) == named.end())
      return usage_error("--peer " + bounded(*o.peer) + ": --profile " + bounded(o.profile) +
                         " names its own peer (" + named.front().to_string() + "); give one of the two");
  }
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  // The caller's namespace: for live devices always (a GID whose netdev is elsewhere ranks
  // last), for table files only with peers to route to (a pasted table is another host's).
  std::optional<NetworkView> view;
  const std::vector<PeerAddress> peers = peers_of(profile.value().policy);
  const bool live = !o.source.input && !o.source.sysfs && !o.source.bundle;
  if (const auto& b = loaded.value().bundle_host; b && !peers.empty()) {
    // A bundle's peers are routed by its own routing table, not this machine's.
    BundleRoutes routes(*b);
    auto v = observe_network(routes, peers);
    if (!v) return usage_error(Error(v.error().code, *o.source.bundle + "'s routes: " + v.error().detail));
    view = std::move(v).value();
  } else if (live || !peers.empty()) {
    KernelRoutes kernel;
    auto v = observe_network(kernel, peers);
    if (!v) return usage_error(Error(v.error().code, "the kernel's routes: " + v.error().detail));
    view = std::move(v).value();
  }
  const std::string whole_spec = profile.value().spec();
  int exit_code = kExitOk;
  Json items = Json::array();
  if (view && !o.json)
    for (const Route& r : view->routes)
      standard_output().print("route to {}: dev {} (ifindex {}), src {}\n", r.peer.to_string(), r.netdev,
                              r.ifindex, r.source ? PeerAddress(*r.source).to_string() : std::string("none"));
  for (const auto& t : loaded.value().tables) {
    const std::string spec = spec_for_table(profile.value(), whole_spec, t);
    auto plan = profile.value().plan(t, {.trace = o.explain || o.json, .network = view ? &*view : nullptr});
    if (!plan || !plan.value().agrees()) exit_code = kExitFinding;
    if (o.json) {
      Json j;
      j["device"] = t.port().device;
      j["port"] = t.port().port;
      j["profile"] = spec;
      if (view && !view->routes.empty()) {
        Json routes = Json::array();
        for (const Route& r : view->routes)
          routes.push_back({{"peer", r.peer.to_string()},
                            {"netdev", r.netdev},
                            {"ifindex", r.ifindex},
                            {"source", r.source ? Json(r.source->to_string()) : Json(nullptr)}});
        j["routes"] = std::move(routes);
      }
      j["ok"] = plan.has_value();
      json_plan_keys(
          j, plan,
          {{"index", [](const Plan& p) { return Json(p.selection.entry.index); }},
           {"gid", [](const Plan& p) { return Json(p.selection.entry.gid.to_string()); }},
           {"type", [](const Plan& p) { return Json(std::string(to_string(p.selection.entry.type))); }},
           {"sgid_index", [](const Plan& p) { return Json(p.sgid_index); }},
           {"agrees", [](const Plan& p) { return Json(p.agrees()); }, false},
           {"explanation", [](const Plan& p) { return Json(p.agreement.explanation); }}});
      if (plan)
        j["trace"] = json_trace(plan.value().selection.trace);
      else
        j["trace"] = plan.error().trace ? json_trace(*plan.error().trace) : Json::array();
      items.push_back(std::move(j));
      continue;
    }
    if (!plan) {
      standard_output().print("{}: {}: FAILED: {}\n", port_name(t), spec, plan.error().what());
      if (o.explain && plan.error().trace)
        standard_output().print("{}", indent(plan.error().trace->to_string(), "    "));
      continue;
    }
    const Plan& p = plan.value();
    standard_output().print("{}: {}: {} -> sgid_index {}, {}\n",
                            entry_name(t.port(), p.selection.entry.index), spec,
                            entry_content(p.selection.entry), p.sgid_index,
                            p.agrees() ? "agrees" : "DISAGREES: " + p.agreement.explanation);
    if (o.explain) standard_output().print("{}", indent(p.selection.trace.to_string(), "    "));
    // The choice was made among the listed entries: an unknown slot could change it.
    if (auto unlisted = unlisted_slots_note(t); !unlisted.empty())
      standard_output().print("  {}\n", unlisted);
  }
  if (o.json) {
    // Version 3: one envelope (schema, version, host, source) and "ports" always an array
    // (version 2 printed one object per port, an array only for several). Version 2: the spec's
    // key is "profile" (version 1, unversioned, said "policy").
    Json doc = json_envelope("gidpolicy.select", 3, o.source, loaded.value());
    doc["ports"] = std::move(items);
    print_json(doc);
  }
  return exit_code;
}

}  // namespace gidpolicy::cli
