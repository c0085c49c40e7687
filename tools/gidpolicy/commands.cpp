#include "commands.hpp"

#include "json_out.hpp"

#include <gidpolicy/agreement.hpp>
#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/driver_profile.hpp>
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/formats/show_gids.hpp>
#include <gidpolicy/formats/sysfs.hpp>
#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/per_device.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#if GIDPOLICY_CLI_HAVE_FAKES
#include <gidpolicy/fakes/fake_fabric.hpp>
#endif

#include <fmt/core.h>

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

namespace gidpolicy::cli {
namespace {

namespace fs = std::filesystem;

// Every error line starts with the program name so it reads well in a script's log.
void print_error(const std::string& line) { std::cerr << "gidpolicy: " << line << "\n"; }

std::string hint_for(const Error& e) {
  if (e == errc::no_devices || e == errc::library_unavailable)
    return "; give a table instead: --input FILE (ibv_devinfo -v, show_gids or gidpolicy JSON; - reads "
           "stdin) "
           "or --sysfs DIR";
  if (e == errc::unknown_format)
    return "; paste ibv_devinfo -v or show_gids output, or force one with --input-format";
  if (e == errc::invalid_policy_spec)
    return "; specs: jaccl, jaccl-fixed, jaccl-legacy, ds4[:index=N], ds4-linux, "
           "auto[:family=ipv4,...], validated:index=N, first(a|b), per-device(DEV=a;*=b)";
  return {};
}

std::string indent(const std::string& text, const std::string& by) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out += by + line + "\n";
  return out;
}

std::string entry_summary(const GidEntry& e) {
  std::string s = fmt::format("index {} {}", e.index, e.gid.to_string());
  std::string details = std::string(to_string(e.type));
  if (!e.netdev.empty()) details += ", " + e.netdev;
  return s + " (" + details + ")";
}

// The driver whose RTR is predicted: Apple's for Thunderbolt ports, Linux otherwise, unless
// --platform says which machine the table is from.
DriverProfile driver_for(const GidTable& t, const std::optional<std::string>& platform) {
  if (platform)
    return *platform == "darwin" ? DriverProfile::apple_thunderbolt() : DriverProfile::linux_kernel();
  return DriverProfile::for_link_layer(t.port().link_layer);
}

std::string holes_note(const GidTable& t) {
  if (t.holes() == Holes::not_shown)
    return "indices not listed were not printed by the source (ibv_devinfo hides GIDs whose interface id is "
           "zero): "
           "they may hold GIDs";
  if (!t.port().gid_tbl_len)
    return "table length unknown (show_gids does not print it); indices not listed are empty";
  return "indices not listed are empty";
}

void print_show_table(const GidTable& t) {
  const PortInfo& p = t.port();
  fmt::print("{}: {}, {}, gid_tbl_len {}, active_mtu {}\n", port_name(t), to_string(p.link_layer),
             to_string(p.state), p.gid_tbl_len ? std::to_string(*p.gid_tbl_len) : std::string("unknown"),
             mtu_bytes(p.active_mtu));
  fmt::print("  {:>5}  {:<39}  {:<8}  {:<15}  {:<15}  {}\n", "INDEX", "GID", "TYPE", "IPv4", "NETDEV",
             "FLAGS");
  for (const auto& e : t) {
    std::string flags;
    for (const auto& f : entry_flags(e)) flags += (flags.empty() ? "" : ",") + f;
    if (e.state == EntryState::unreadable) flags += fmt::format(" (errno {})", e.read_error.value());
    const bool valid = e.state == EntryState::valid;
    fmt::print("  {:>5}  {:<39}  {:<8}  {:<15}  {:<15}  {}\n", e.index, valid ? e.gid.to_string() : "-",
               valid ? std::string(to_string(e.type)) : "-", valid ? e.gid.ipv4_string() : "",
               e.netdev.empty() ? "" : e.netdev, flags);
  }
  if (t.size() == 0) fmt::print("  (no GID listed)\n");
  fmt::print("  {}\n", holes_note(t));
}

void print_json(const Json& j) { std::cout << j.dump(2) << "\n"; }

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

/// At most `max` bytes of a user-given spec for an error prefix (the parser's own message
/// quotes the part around the position).
std::string bounded(const std::string& s, std::size_t max = 60) {
  return s.size() <= max ? s : s.substr(0, max) + "...";
}

}  // namespace

int usage_error(const Error& e) {
  print_error(e.what() + hint_for(e));
  return kExitUsage;
}

int usage_error(const std::string& message) {
  print_error(message);
  return kExitUsage;
}

// ---------------------------------------------------------------------------------------------
int run_show(const ShowOptions& o) {
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  const auto& tables = loaded.value().tables;
  if (o.json) {
    // "host" names the machine for `gidpolicy fleet`: a pasted or converted table may come
    // from anywhere, so only live devices default to this machine's name.
    Json host = nullptr;
    if (o.host) {
      host = *o.host;
    } else if (!o.source.input && !o.source.sysfs) {
      char name[256] = {};
      if (::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') host = std::string(name);
    }
    std::vector<Json> items;
    items.reserve(tables.size());
    for (const auto& t : tables) {
      Json j;
      j["host"] = host;
      j.update(json_show_table(t));
      items.push_back(std::move(j));
    }
    print_json(one_or_array(std::move(items)));
    return kExitOk;
  }
  for (std::size_t k = 0; k < tables.size(); ++k) {
    if (k) fmt::print("\n");
    print_show_table(tables[k]);
  }
  return kExitOk;
}

// ---------------------------------------------------------------------------------------------
int run_select(const SelectOptions& o) {
  auto profile = parse_profile(o.policy);
  if (!profile)
    return usage_error(
        Error(profile.error().code, "--policy " + bounded(o.policy) + ": " + profile.error().detail));
  if (o.peer) {
    // --peer ADDR: auto (at the top of the spec) gets peer=ADDR; any other policy must name its
    // peer itself (auto:peer=ADDR inside first()/per-device()).
    auto addr = parse_address(*o.peer);
    if (!addr || addr.value().is_zero())
      return usage_error("--peer " + *o.peer + ": expected an IPv4 or IPv6 address");
    const auto* ranked = profile.value().policy.target<Ranked>();
    if (!ranked && peers_of(profile.value().policy).empty())
      return usage_error("--peer needs an auto policy (or a spec naming auto:peer=ADDR); --policy " +
                         bounded(o.policy) + " has none");
    if (ranked && !ranked->options.peer) {
      Ranked with_peer = *ranked;
      with_peer.options.peer = addr.value();
      profile.value().policy = AnyPolicy(std::move(with_peer));
    }
  }
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  // The caller's namespace: for live devices always (a GID whose netdev is elsewhere ranks
  // last), for table files only with peers to route to (a pasted table is another host's).
  std::optional<NetworkView> view;
  const std::vector<Gid> peers = peers_of(profile.value().policy);
  const bool live = !o.source.input && !o.source.sysfs;
  if (live || !peers.empty()) {
    KernelRoutes kernel;
    auto v = observe_network(kernel, peers);
    if (!v) return usage_error(Error(v.error().code, "the kernel's routes: " + v.error().what()));
    view = std::move(v).value();
  }
  const std::string whole_spec = profile.value().spec();
  int exit_code = kExitOk;
  std::vector<Json> items;
  if (view && !o.json)
    for (const Route& r : view->routes)
      fmt::print("route to {}: dev {} (ifindex {}), src {}\n", r.peer.to_string(), r.netdev, r.ifindex,
                 r.source ? r.source->to_string() : std::string("none"));
  for (const auto& t : loaded.value().tables) {
    const std::string spec = spec_for_table(profile.value(), whole_spec, t);
    auto plan = profile.value().plan(t, {.trace = o.explain || o.json, .network = view ? &*view : nullptr});
    if (!plan || !plan.value().agrees()) exit_code = kExitFinding;
    if (o.json) {
      Json j;
      j["device"] = t.port().device;
      j["port"] = t.port().port;
      j["policy"] = spec;
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
      if (plan) {
        const Plan& p = plan.value();
        j["index"] = p.selection.entry.index;
        j["gid"] = p.selection.entry.gid.to_string();
        j["type"] = std::string(to_string(p.selection.entry.type));
        j["sgid_index"] = p.sgid_index;
        j["agrees"] = p.agrees();
        j["explanation"] = p.agreement.explanation;
        j["error"] = nullptr;
        j["trace"] = json_trace(p.selection.trace);
      } else {
        j["index"] = nullptr;
        j["gid"] = nullptr;
        j["type"] = nullptr;
        j["sgid_index"] = nullptr;
        j["agrees"] = false;
        j["explanation"] = nullptr;
        j["error"] = json_error(plan.error());
        j["trace"] = plan.error().trace ? json_trace(*plan.error().trace) : Json::array();
      }
      items.push_back(std::move(j));
      continue;
    }
    if (!plan) {
      fmt::print("{}: {}: FAILED: {}\n", port_name(t), spec, plan.error().what());
      if (o.explain && plan.error().trace) fmt::print("{}", indent(plan.error().trace->to_string(), "    "));
      continue;
    }
    const Plan& p = plan.value();
    fmt::print("{}: {}: {} -> sgid_index {}, {}\n", port_name(t), spec, entry_summary(p.selection.entry),
               p.sgid_index, p.agrees() ? "agrees" : "DISAGREES: " + p.agreement.explanation);
    if (o.explain) fmt::print("{}", indent(p.selection.trace.to_string(), "    "));
  }
  if (o.json) print_json(one_or_array(std::move(items)));
  return exit_code;
}

// ---------------------------------------------------------------------------------------------
int run_check(const CheckOptions& o) {
  std::vector<Profile> profiles;
  if (o.profiles.empty()) {
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
  std::vector<Json> items;
  bool first = true;
  for (const auto& t : loaded.value().tables) {
    const DriverProfile driver = driver_for(t, o.platform);
    Json jt;
    jt["device"] = t.port().device;
    jt["port"] = t.port().port;
    jt["link_layer"] = to_string(t.port().link_layer);
    jt["platform"] = std::string(to_string(driver.platform));
    jt["driver"] = driver.name;
    Json jprofiles = Json::array();
    std::vector<std::string> notes;
    if (!o.json) {
      if (!first) fmt::print("\n");
      first = false;
      fmt::print("{} ({}, {}, {} GIDs listed; RTR predicted for {}{})\n", port_name(t),
                 to_string(t.port().link_layer), to_string(t.port().state), t.size(), driver.name,
                 o.platform ? ", from --platform" : "");
      fmt::print("  {:<14}  {:>5}  {:<39}  {:>4}  {:<6}  {}\n", "PROFILE", "INDEX", "ADVERTISED GID", "SGID",
                 "AGREES", "PREDICTED RTR");
    }
    for (const auto& prof : profiles) {
      const std::string name = prof.spec();
      auto plan = prof.plan(t);
      Json jp;
      jp["name"] = name;
      jp["ok"] = plan.has_value();
      if (!plan) {
        exit_code = kExitFinding;
        jp["advertised_index"] = nullptr;
        jp["advertised_gid"] = nullptr;
        jp["sgid_index"] = nullptr;
        jp["agrees"] = false;
        jp["predicted_rtr"] = nullptr;
        jp["explanation"] = nullptr;
        jp["error"] = json_error(plan.error());
        if (!o.json) {
          fmt::print("  {:<14}  {:>5}  {:<39}  {:>4}  {:<6}  {}\n", name, "-", "(no GID selected)", "-", "-",
                     "not attempted: the selection failed");
          notes.push_back(name + ": " + plan.error().what());
        }
      } else {
        const Plan& p = plan.value();
        if (!p.agrees()) exit_code = kExitFinding;
        // The peer runs the same profile on a like table: it advertises a GID of the same
        // family and RoCE version, so the prediction isolates this side's sgid_index choice.
        PeerInfo peer;
        peer.qpn = 0x11;
        peer.psn = 7;
        peer.gid = p.selection.entry.gid;
        peer.mtu = t.port().active_mtu;
        if (p.selection.entry.type != GidType::unknown) peer.gid_type = p.selection.entry.type;
        // The one path: the attributes RtrBuilder builds from the plan, judged by the driver model.
        const RtrPrediction v = predict_rtr(t, p, peer, driver);
        jp["advertised_index"] = p.selection.entry.index;
        jp["advertised_gid"] = p.selection.entry.gid.to_string();
        jp["sgid_index"] = p.sgid_index;
        jp["agrees"] = p.agrees();
        jp["predicted_rtr"] = json_prediction(v, driver.platform);
        jp["explanation"] = p.agreement.explanation;
        jp["error"] = nullptr;
        if (!o.json) {
          fmt::print("  {:<14}  {:>5}  {:<39}  {:>4}  {:<6}  {}\n", name, p.selection.entry.index,
                     p.selection.entry.gid.to_string(), p.sgid_index, p.agrees() ? "yes" : "NO",
                     v.to_string(driver.platform));
          if (!p.agrees()) notes.push_back(name + ": " + p.agreement.explanation);
        }
      }
      jprofiles.push_back(std::move(jp));
    }
    jt["profiles"] = std::move(jprofiles);
    items.push_back(std::move(jt));
    for (const auto& n : notes) fmt::print("  {}\n", n);
  }
  if (o.json) print_json(one_or_array(std::move(items)));
  return exit_code;
}

// ---------------------------------------------------------------------------------------------
namespace {

std::optional<int> parse_errno(const std::string& s, Platform p) {
  if (s.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(s[0]))) {
    char* end = nullptr;
    long v = std::strtol(s.c_str(), &end, 10);
    if (*end != '\0' || v <= 0 || v > 4095) return std::nullopt;
    return static_cast<int>(v);
  }
  std::string upper = s;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (int n = 1; n < 256; ++n)
    if (errno_name(p, n) == upper) return n;
  return std::nullopt;
}

}  // namespace

int run_explain(const ExplainOptions& o) {
  std::optional<Gid> advertised, peer;
  if (o.advertised) {
    auto g = parse_address(*o.advertised);
    if (!g)
      return usage_error(Error(g.error().code, "--advertised " + *o.advertised + ": " + g.error().detail));
    advertised = g.value();
  }
  if (o.peer) {
    auto g = parse_address(*o.peer);
    if (!g) return usage_error(Error(g.error().code, "--peer " + *o.peer + ": " + g.error().detail));
    peer = g.value();
  }
  auto platform_of = [&](const GidTable* t) {
    if (o.platform) return platform_from_string(*o.platform).value_or(Platform::linux_kernel);
    return t ? DriverProfile::for_link_layer(t->port().link_layer).platform : host_platform();
  };
  // A live table was read in this namespace: its netdevs can be checked against it (ENODEV).
  std::optional<NetworkView> view;
  if (o.has_source && !o.source.input && !o.source.sysfs) {
    KernelRoutes kernel;
    if (auto v = observe_network(kernel, {})) view = std::move(v).value();
  }
  auto context = [&](const GidTable* t) {
    DiagnoseContext c;
    c.network = view ? &*view : nullptr;
    c.table = t;
    c.sgid_index = o.sgid_index;
    c.advertised = advertised;
    c.peer_gid = peer;
    return c;
  };
  if (!o.has_source) {
    const Platform p = platform_of(nullptr);
    auto err = parse_errno(o.err, p);
    if (!err)
      return usage_error("explain-errno: expected an errno number or name such as 22 or EINVAL, found '" +
                         o.err + "'");
    fmt::print("{}", diagnose(*err, p, context(nullptr)).to_string());
    return kExitOk;
  }
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  bool first = true;
  for (const auto& t : loaded.value().tables) {
    const Platform p = platform_of(&t);
    auto err = parse_errno(o.err, p);
    if (!err)
      return usage_error("explain-errno: expected an errno number or name such as 22 or EINVAL, found '" +
                         o.err + "'");
    if (!first) fmt::print("\n");
    first = false;
    fmt::print("{}:\n{}", port_name(t), indent(diagnose(*err, p, context(&t)).to_string(), "  "));
  }
  return kExitOk;
}

// ---------------------------------------------------------------------------------------------
namespace {

// What a conversion loses, by comparing the tables with what the target format can hold.
std::string describe_loss(const std::vector<GidTable>& before, const std::vector<GidTable>& after) {
  std::size_t n_before = 0, n_after = 0;
  bool len = false, netdev = false, type = false, port_attrs = false, link = false, holes = false,
       ports = false;
  for (const auto& t : before) {
    // An explicitly empty slot and an unlisted one mean the same: count only what holds something.
    for (const auto& e : t) n_before += e.state != EntryState::empty;
    const GidTable* k = nullptr;
    for (const auto& a : after)
      if (a.port().device == t.port().device && a.port().port == t.port().port) k = &a;
    if (!k) {
      ports = true;
      continue;
    }
    len = len || (t.port().gid_tbl_len != k->port().gid_tbl_len);
    port_attrs = port_attrs || t.port().state != k->port().state ||
                 t.port().active_mtu != k->port().active_mtu || t.port().lid != k->port().lid;
    link = link || t.port().link_layer != k->port().link_layer;
    holes = holes || t.holes() != k->holes();
    for (const auto& e : t) {
      const GidEntry* ke = k->find(e.index);
      if (!ke) continue;
      netdev = netdev || (!e.netdev.empty() && ke->netdev != e.netdev) || e.ifindex != ke->ifindex;
      type = type || e.type != ke->type;
    }
  }
  for (const auto& a : after)
    for (const auto& e : a) n_after += e.state != EntryState::empty;
  std::vector<std::string> lost;
  if (n_after != n_before) lost.push_back(fmt::format("{} of {} entries kept", n_after, n_before));
  if (ports) lost.emplace_back("ports without a listed GID dropped");
  if (len) lost.emplace_back("gid_tbl_len changed or unknown");
  if (port_attrs) lost.emplace_back("port state/MTU/LID not kept");
  if (link) lost.emplace_back("link layer not kept");
  if (type) lost.emplace_back("GID types changed");
  if (netdev) lost.emplace_back("netdevs/ifindexes not kept");
  if (holes) lost.emplace_back("unlisted slots change meaning (empty vs not shown)");
  std::string out;
  for (const auto& l : lost) out += (out.empty() ? "" : "; ") + l;
  return out;
}

// A name next to `target` for a temporary file or tree: same directory, so rename() is atomic.
fs::path sibling(const fs::path& target, const char* what) {
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  return dir / ("." + target.filename().string() + ".gidpolicy-" + what + "-" + std::to_string(::getpid()));
}

// `target` without a trailing separator ("out/" names the directory "out").
fs::path output_path(const std::string& given) {
  fs::path p = fs::path(given).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p;
}

// Text to a temporary file, then rename over `target`: a failed or interrupted write leaves
// `target` as it was.
result<void> write_text_atomically(const fs::path& target, const std::string& text) {
  const fs::path tmp = sibling(target, "tmp");
  errno = 0;
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  std::error_code ec;
  if (!out) {
    const int err = errno ? errno : EIO;
    fs::remove(tmp, ec);
    return fail_errno(err, target.string() + ": cannot write");
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return fail(Error(ec, target.string() + ": cannot write (rename from " + tmp.string() + ")"));
  }
  return success();
}

// A sysfs tree into a fresh temporary directory, renamed into place when complete. An existing
// non-empty `target` is refused unless `replace`: merging would keep stale GIDs from an
// earlier tree.
result<void> write_tree_atomically(const std::vector<GidTable>& tables, const fs::path& target,
                                   bool replace) {
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(target, ec));
  if (exists) {
    if (!fs::is_directory(fs::symlink_status(target, ec)))
      return fail(errc::invalid_argument, target.string() + " exists and is not a directory");
    if (!fs::is_empty(target, ec) && !replace)
      return fail(
          errc::invalid_argument,
          target.string() +
              " is not empty: writing into it would keep GIDs from what is there; give a new or empty "
              "directory, or --replace to replace it");
  }
  const fs::path tmp = sibling(target, "tmp");
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec) || ec)
    return fail(Error(ec ? ec : std::make_error_code(std::errc::io_error), tmp.string() + ": cannot create"));
  if (auto r = formats::write_sysfs(tables, tmp); !r) {
    fs::remove_all(tmp, ec);
    return r;
  }
  fs::path old;
  if (exists) {
    old = sibling(target, "old");
    fs::rename(target, old, ec);
    if (ec) {
      std::error_code ignored;
      fs::remove_all(tmp, ignored);
      return fail(Error(ec, target.string() + ": cannot move aside to replace it"));
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    if (!old.empty()) fs::rename(old, target, ignored);
    fs::remove_all(tmp, ignored);
    return fail(Error(ec, target.string() + ": cannot write (rename from " + tmp.string() + ")"));
  }
  if (!old.empty()) fs::remove_all(old, ec);
  return success();
}

}  // namespace

int run_convert(const ConvertOptions& o) {
  auto format = formats::format_from_string(o.to);
  if (!format) return usage_error("--to " + o.to + ": expected json, devinfo, show_gids or sysfs");
  if (*format == formats::Format::sysfs && !o.output)
    return usage_error("--to sysfs writes a directory tree: give it with --output DIR");
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  const auto& tables = loaded.value().tables;
  // Say what the target cannot hold rather than dropping it silently.
  std::vector<GidTable> kept = tables;
  if (*format == formats::Format::devinfo) kept = formats::devinfo_view(tables);
  if (*format == formats::Format::show_gids) kept = formats::show_gids_view(tables);
  if (*format == formats::Format::sysfs) kept = formats::sysfs_view(tables);
  if (std::string loss = describe_loss(tables, kept); !loss.empty())
    print_error(fmt::format("note: {} cannot hold all of {}: {}", o.to, loaded.value().source, loss));
  if (*format == formats::Format::sysfs) {
    auto r = write_tree_atomically(tables, output_path(*o.output), o.replace);
    if (!r) return usage_error(r.error());
    return kExitOk;
  }
  std::string text = formats::write_tables(tables, *format).value();
  if (!o.output || *o.output == "-") {
    std::cout << text;
    return kExitOk;
  }
  if (auto r = write_text_atomically(output_path(*o.output), text); !r) return usage_error(r.error());
  return kExitOk;
}

// ---------------------------------------------------------------------------------------------
int run_simulate(const SimulateOptions& o) {
#if GIDPOLICY_CLI_HAVE_FAKES
  if (o.tables.size() < 2) return usage_error("simulate: give at least two tables (one host each)");
  auto profile = parse_profile(o.profile);
  if (!profile)
    return usage_error(
        Error(profile.error().code, "--profile " + bounded(o.profile) + ": " + profile.error().detail));
  const auto topology = o.topology == "ring" ? fakes::Topology::ring : fakes::Topology::mesh;
  fakes::FakeFabric fabric;
  std::set<std::string> names;
  for (const auto& spec : o.tables) {
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
  fmt::print("{} of {} hosts, profile {}{}\n", to_string(topology), names.size(), profile.value().spec(),
             o.preflight ? ", with preflight" : "");
  fmt::print("{}", r.to_string());
  fmt::print("{} of {} pairs connected\n", r.connected_count(), r.pairs.size());
  return r.all_connected() ? kExitOk : kExitFinding;
#else
  (void)o;
  return usage_error("simulate: this gidpolicy was built without the fakes (GIDPOLICY_BUILD_FAKES=OFF)");
#endif
}

}  // namespace gidpolicy::cli
