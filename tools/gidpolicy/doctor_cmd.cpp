// `gidpolicy doctor`: is this host ready for RDMA, and what to do if not (docs/cli.md,
// docs/doctor.md). Gathers what examine() (doctor.hpp) judges: the tables (live, each verbs call
// under a deadline: doctor_live.cpp; or --input/--sysfs), this namespace's interfaces
// (getifaddrs), the kernel's routes to the peers (--peer, a device file, a hostfile), the pins
// in the environment. Prints the findings, most likely first, with the commands; runs none.
#include "doctor_cmd.hpp"

#include "commands.hpp"
#include "doctor_live.hpp"
#include "env_cmd.hpp"
#include "output.hpp"
#include "render.hpp"
#include "subcommands.hpp"

#include <gidpolicy/bundle.hpp>
#include <gidpolicy/doctor.hpp>
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/host_doctor.hpp>
#include <gidpolicy/kernel_routes.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/stacks.hpp>

#include <fmt/core.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

namespace gidpolicy::cli {

DoctorCommand::DoctorCommand(CLI::App& app) {
  cmd_ = add_subcommand(app, "doctor");
  auto* g = cmd_->add_option_group("Source", "Where the GID tables come from (default: every live device)");
  device_opt_ = g->add_option("--device", device_, "Only this live device (with --input/--sysfs: a filter)");
  port_opt_ = g->add_option("--port", port_, "Only this port (1-255)")->check(CLI::Range(1, 255));
  g->add_option("--verbs", o_.source.verbs, "Live backend: dlopen (load libibverbs at run time) or linked")
      ->check(CLI::IsMember({"dlopen", "linked"}));
  input_opt_ =
      g->add_option("--input", input_,
                    "A table file (ibv_devinfo -v, show_gids, gidpolicy JSON) instead of live devices: "
                    "judged by itself, as another host's (unless --this-host)");
  sysfs_opt_ = g->add_option("--sysfs", sysfs_, "A directory laid out like /sys/class/infiniband");
  bundle_opt_ = g->add_option("--bundle", bundle_,
                              "A host bundle gidpolicy-collect wrote on a Mac or Linux host: judge that host "
                              "(its tables, interfaces, routes, RDMA switch and variables)");
  g->add_option("--max-input-bytes", o_.source.max_input_bytes, "Refuse an --input larger than this")
      ->check(CLI::Range(std::size_t{1}, kMaxInputBytesLimit));
  cmd_->add_option("--peer", o_.peers, "A peer to route to (repeatable; fe80::/10 as fe80::1%NETDEV)");
  auto* dev_file = cmd_->add_option("--jaccl-devices", o_.jaccl_devices,
                                    "JACCL's device file (or a hostfile): the devices this host's row names");
  cmd_->add_option("--hostfile", o_.hostfile,
                   "The hostfile mlx.distributed_config writes: this host's devices and its peers' addresses")
      ->excludes(dev_file);
  cmd_->add_option("--rank", o_.rank,
                   "This host's rank in the device file or hostfile (default: $" +
                       std::string(stack_vars::kJacclRank) + ", $" + std::string(stack_vars::kMlxRank) +
                       ", else the host whose address or name is this one's)");
  cmd_->add_option("--platform", o_.platform,
                   "Whose commands to print: linux or darwin (default: the tables' host's)")
      ->check(CLI::IsMember({"linux", "darwin"}));
  cmd_->add_option("--deadline", o_.deadline_s,
                   "Seconds each verbs call may take before its device is reported as not answering")
      ->check(finite_range(0.05, 600.0))
      ->capture_default_str();
  cmd_->add_flag("--this-host", o_.this_host,
                 "The --input table was taken on this host: judge it against this host's interfaces, routes "
                 "and environment too (a table alone is judged by itself)");
  cmd_->add_flag("--json", o_.json, "Print JSON (schema gidpolicy.doctor; gidpolicy(1) describes it)");
}

int DoctorCommand::run() const {
  DoctorArgs o = o_;
  if (device_opt_->count()) o.source.device = device_;
  if (port_opt_->count()) o.source.port = port_;
  if (input_opt_->count()) o.source.input = input_;
  if (sysfs_opt_->count()) o.source.sysfs = sysfs_;
  if (bundle_opt_->count()) o.source.bundle = bundle_;
  return run_doctor(o);
}

// A named namespace, not an anonymous one: unity builds put this file in one translation unit
// with the other subcommands, whose helpers have the same names.
namespace doctor_cmd_detail {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return {};
  return name;
}

/// This host's index among `hosts`: --rank, else the one holding an address of this host, else
/// the one whose ssh name is this host's name (with or without its domain).
std::optional<std::size_t> find_self(const fleet::MlxHostfile& f, const std::vector<HostInterface>& ifs,
                                     bool this_host, const std::string& me) {
  if (!this_host) return std::nullopt;  // another host's table: its addresses and name are not known
  for (std::size_t i = 0; i < f.hosts.size(); ++i)
    for (const std::string& ip : f.hosts[i].ips) {
      auto a = PeerAddress::parse(ip);
      if (!a) continue;
      for (const HostInterface& x : ifs)
        if (!x.loopback && x.holds(a.value().address)) return i;
    }
  const std::string shortme = me.substr(0, me.find('.'));
  for (std::size_t i = 0; i < f.hosts.size(); ++i) {
    const std::string& s = f.hosts[i].ssh;
    const std::string host = s.substr(s.find('@') == std::string::npos ? 0 : s.find('@') + 1);
    if (!me.empty() && (host == me || host == shortme || host.substr(0, host.find('.')) == shortme)) return i;
  }
  return std::nullopt;
}

Json finding_json(const Finding& f, std::size_t rank) {
  Json j;
  j["rank"] = rank;
  j["severity"] = std::string(to_string(f.severity));
  j["code"] = std::string(to_string(f.code));
  j["device"] = f.device.empty() ? Json(nullptr) : Json(f.device);
  j["port"] = f.port ? Json(f.port) : Json(nullptr);
  j["netdev"] = f.netdev.empty() ? Json(nullptr) : Json(f.netdev);
  j["text"] = f.text;
  j["why"] = f.why;
  j["fix"] = f.fix;
  return j;
}

/// The platform a table describes: a Thunderbolt port is a Mac's (Apple's RDMA over Thunderbolt
/// is macOS only); any other port, Linux's.
Platform platform_of(const std::vector<GidTable>& tables) {
  for (const GidTable& t : tables)
    if (t.port().link_layer.kind() == LinkLayer::Kind::thunderbolt) return Platform::darwin;
  return Platform::linux_kernel;
}

/// Whether a --sysfs directory is this host's own: under /sys, once links are resolved.
bool real_sysfs(const std::string& dir) {
  std::error_code ec;
  const std::string c = std::filesystem::canonical(dir, ec).string();
  return !ec && c.rfind("/sys/", 0) == 0;
}

/// The not-checked line's words for DoctorReport::not_checked's names, "a, b and c".
std::string not_checked_words(const std::vector<std::string>& names) {
  const std::map<std::string, std::string> words = {{"interfaces", "the interfaces"},
                                                    {"bridge_membership", "bridge membership"},
                                                    {"routes", "the routes to peers"},
                                                    {"pins", "the pins in the environment"},
                                                    {"rdma_ctl", "rdma_ctl status"}};
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto w = words.find(names[i]);
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + (w == words.end() ? names[i] : w->second);
  }
  return out;
}

void print_json_report(const DoctorReport& r, const DoctorInput& in, const std::string& source,
                       const BundleHost* bundle, bool live) {
  // Version 2: the common envelope's "host" (the bundle's host, this machine for live devices,
  // null for a table file) right after "version", and "source" moved up beside it.
  Json host = nullptr;
  if (bundle)
    host = bundle->host.empty() ? Json(nullptr) : Json(bundle->host);
  else if (live)
    host = this_host_name();
  Json j = json_envelope("gidpolicy.doctor", 2, std::move(host), source);
  j["ready"] = r.ready();
  j["platform"] = std::string(to_string(in.platform));
  j["not_checked"] = r.not_checked;
  // The host a bundle describes, and what its collector could not read (null: not a bundle).
  if (bundle) {
    Json b;
    b["host"] = bundle->host;
    b["system"] = bundle->system;
    b["tables_from"] = bundle->tables_from.empty() ? Json(nullptr) : Json(bundle->tables_from);
    b["not_collected"] = bundle->notes;
    // macOS: what the Mac's own tools said about its hardware and release (null: not said).
    b["release"] = bundle->release.empty() ? Json(nullptr) : Json(bundle->release);
    b["thunderbolt_generation"] =
        bundle->thunderbolt_generation ? Json(*bundle->thunderbolt_generation) : Json(nullptr);
    b["thunderbolt_ports"] = bundle->thunderbolt_interfaces;
    b["thunderbolt_bridge_service"] =
        bundle->thunderbolt_bridge_service ? Json(*bundle->thunderbolt_bridge_service) : Json(nullptr);
    j["bundle"] = std::move(b);
  } else {
    j["bundle"] = nullptr;
  }
  j["blockers"] = r.blockers();
  const auto count = [&](Severity s) {
    return static_cast<std::size_t>(std::count_if(r.findings.begin(), r.findings.end(),
                                                  [s](const Finding& f) { return f.severity == s; }));
  };
  j["warnings"] = count(Severity::warning);
  j["notes"] = count(Severity::note);
  Json ports = Json::array();
  for (const PortSummary& p : r.ports) {
    Json x;
    x["device"] = p.device;
    x["port"] = p.port;
    x["state"] = p.state;
    x["link_layer"] = p.link_layer;
    x["netdevs"] = p.netdevs;
    x["gids"] = p.gids;
    x["routable_gids"] = p.routable;
    ports.push_back(std::move(x));
  }
  j["ports"] = std::move(ports);
  Json findings = Json::array();
  for (std::size_t i = 0; i < r.findings.size(); ++i) findings.push_back(finding_json(r.findings[i], i + 1));
  j["findings"] = std::move(findings);
  Json stacks = Json::array();
  for (const StackLine& s : r.stacks) {
    Json x;
    x["stack"] = s.stack;
    x["device"] = s.device;
    x["port"] = s.port;
    x["index"] = s.chose ? Json(s.index) : Json(nullptr);
    x["works"] = s.works;
    x["outcome"] = s.outcome;
    stacks.push_back(std::move(x));
  }
  j["stacks"] = std::move(stacks);
  Json peers = Json::array();
  for (const PeerLine& p : r.peers) {
    Json x;
    x["peer"] = p.peer;
    x["origin"] = p.origin;
    x["routed"] = p.routed;
    x["netdev"] = p.netdev.empty() ? Json(nullptr) : Json(p.netdev);
    x["source"] = p.source.empty() ? Json(nullptr) : Json(p.source);
    x["port"] = p.port.empty() ? Json(nullptr) : Json(p.port);
    x["leaves_host"] = p.leaves_host;
    x["summary"] = p.summary;
    peers.push_back(std::move(x));
  }
  j["peers"] = std::move(peers);
  print_json(j);
}

void print_text_report(const DoctorReport& r, const DoctorInput& in, const std::string& source,
                       const BundleHost* bundle) {
  Output& out = standard_output();
  // Every text the report shows passes show_text() (quoting.hpp): a value in it (a pin, a path, an
  // error) can neither start a line of its own ("READY: 0 blockers") nor send the terminal an
  // escape sequence. The fixes are built with shell_quote(), which this leaves as they are.
  const auto shown = [](const std::string& s) { return show_text(s, std::string::npos); };
  const auto count = [&](Severity s) {
    return static_cast<std::size_t>(std::count_if(r.findings.begin(), r.findings.end(),
                                                  [s](const Finding& f) { return f.severity == s; }));
  };
  const std::size_t blockers = r.blockers(), warnings = count(Severity::warning),
                    notes = count(Severity::note);
  // Notes (what could not be read, said so) are counted only when there are some.
  const std::string noted = notes == 0 ? "" : fmt::format(", {} note{}", notes, notes == 1 ? "" : "s");
  out.print("{}: {} blocker{}, {} warning{}{} ({} commands; {})\n", r.ready() ? "READY" : "NOT READY",
            blockers, blockers == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s", noted,
            in.platform == Platform::darwin ? "macOS" : "Linux", shown(source));
  for (const PortSummary& p : r.ports) {
    std::string nd;
    for (const auto& n : p.netdevs) nd += (nd.empty() ? "" : ",") + n;
    out.print("  {} port {}: {}, {}, {}, {} GID{} ({} routable)\n", shown(p.device), p.port, p.state,
              p.link_layer, nd.empty() ? "no netdev" : shown(nd), p.gids, p.gids == 1 ? "" : "s", p.routable);
  }
  if (bundle && !bundle->notes.empty()) {
    std::string said;
    for (const std::string& n : bundle->notes) said += (said.empty() ? "" : "; ") + n;
    out.print("not in the bundle: {}\n", shown(said));
  }
  if (!r.not_checked.empty())
    out.print(
        "not checked from a table: {} of the host it was taken on (run gidpolicy doctor on that host)\n",
        not_checked_words(r.not_checked));
  std::set<FindingCode> recipe_shown;
  for (std::size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    out.print("{}. {}: {}\n", i + 1, to_string(f.severity), shown(f.text));
    out.print("   why: {}\n", shown(f.why));
    // The full recipe once per kind of cause; after that its first command (the rest is the same).
    const bool again = !recipe_shown.insert(f.code).second;
    bool first = true;
    for (const std::string& line : f.fix) {
      if (again && (line.rfind("#", 0) == 0 || !first)) continue;
      out.print("   {} {}\n", first ? "fix:" : "    ", shown(line));
      first = false;
    }
    if (again && f.fix.size() > 1) out.print("        (the rest as above)\n");
  }
  // A peer whose line is already a ranked finding (no route, a blackhole) is not said twice:
  // a 4-port host with its peers has to read in one screen. --json keeps both.
  std::set<std::string> said;
  for (const Finding& f : r.findings) said.insert(f.text);
  for (const PeerLine& p : r.peers) {
    std::string line = "peer " + p.peer + " (" + p.origin + "): " + p.summary;
    if (!said.count(line)) out.print("{}\n", shown(line));
  }
  // What each stack does here: one line per stack, its choice on every port.
  std::map<std::string, std::string> lines;
  std::vector<std::string> order;
  for (const StackLine& s : r.stacks) {
    if (!lines.count(s.stack)) order.push_back(s.stack);
    std::string& l = lines[s.stack];
    l += (l.empty() ? "" : ", ") + s.device + ":" + std::to_string(s.port) + " " +
         (s.chose ? "[" + std::to_string(s.index) + "] " : std::string()) +
         (s.works ? std::string("ok") : s.outcome.substr(0, s.outcome.find(':')));
  }
  if (!order.empty()) out.print("what each stack picks here (check --stacks for the detail):\n");
  // Stacks that pick alike on every port share a line ("nccl, nvshmem", "jaccl, exo"): the block
  // stays one screen with the Mac's stacks beside the Linux ones.
  std::vector<std::string> done;
  for (const auto& s : order) {
    if (std::find(done.begin(), done.end(), s) != done.end()) continue;
    std::string names = s;
    for (const auto& other : order)
      if (other != s && lines[other] == lines[s] &&
          std::find(done.begin(), done.end(), other) == done.end()) {
        names += ", " + other;
        done.push_back(other);
      }
    done.push_back(s);
    out.print("  {:<10} {}\n", names, shown(lines[s]));
  }
}

}  // namespace doctor_cmd_detail

int run_doctor(const DoctorArgs& o) {
  if ((o.source.input ? 1 : 0) + (o.source.sysfs ? 1 : 0) + (o.source.bundle ? 1 : 0) > 1)
    return usage_error("doctor: give one source: --input, --sysfs or --bundle, not two");
  if (o.this_host && !o.source.input)
    return usage_error("doctor --this-host: it says whose --input table this is; give --input FILE");
  DoctorInput in;
  std::string source;
  // A bundle is another host, whole: its tables, interfaces, routes, RDMA switch and variables
  // (bundle.hpp). Nothing of this machine is read for it.
  std::optional<BundleHost> bundle;
  if (o.source.bundle) {
    auto b = read_bundle_file(*o.source.bundle, o.source.max_input_bytes);
    if (!b) return usage_error(b.error());
    auto h = read_bundle_host(b.value());
    if (!h) return usage_error(h.error());
    bundle = std::move(h).value();
    in = doctor_input(*bundle);
    if (o.source.device || o.source.port) {
      std::erase_if(in.tables, [&](const GidTable& t) {
        return (o.source.device && t.port().device != *o.source.device) ||
               (o.source.port && t.port().port != *o.source.port);
      });
      if (in.tables.empty() && !bundle->tables.empty())
        return usage_error(*o.source.bundle + ": its host has no such port (--device/--port)");
    }
    source = *o.source.bundle + (bundle->host.empty() ? std::string() : ", host " + bundle->host) +
             (bundle->system.empty() ? std::string() : ", " + bundle->system);
  }
  // Whose host the tables describe: live reads and the real sysfs are this host's; a table file
  // is judged by itself unless --this-host says it was taken here. This machine's interfaces,
  // routes, environment and RDMA switch are read only for this host's tables.
  const bool this_machine = !bundle && (!(o.source.input || o.source.sysfs) || o.this_host ||
                                        (o.source.sysfs && doctor_cmd_detail::real_sysfs(*o.source.sysfs)));
  in.host_checked = bundle || this_machine;
  const std::string me = bundle ? bundle->host : doctor_cmd_detail::host_name();
  if (o.source.input || o.source.sysfs) {
    auto loaded = load_tables(o.source);
    if (!loaded) return usage_error(loaded.error());
    in.tables = std::move(loaded.value().tables);
    in.from_file = true;
    source = loaded.value().source;
  }
  // --platform wins; else this host's, or the one the table describes.
  in.platform = o.platform     ? platform_from_string(*o.platform).value_or(host_platform())
                : bundle       ? bundle->platform
                : this_machine ? host_platform()
                               : doctor_cmd_detail::platform_of(in.tables);
  std::vector<PeerAddress> peers;
  std::vector<std::string> origins;
  std::vector<bool> rdma;  // --peer: RDMA goes there; a hostfile's ips: the launcher's TCP
  for (const std::string& p : o.peers) {
    auto a = PeerAddress::parse(p);
    if (!a) return usage_error(Error(a.error().code, "--peer " + bounded(p) + ": " + a.error().detail));
    peers.push_back(a.value());
    origins.push_back("--peer");
    rdma.push_back(true);
  }
  // The interfaces of this namespace: what every GID is compared with (this host's tables only).
  if (this_machine) read_host_interfaces(in);
  // A rank is a row of a file: without one it would be ignored, so it is refused (as env's is).
  if (o.rank && !o.hostfile && !o.jaccl_devices)
    return usage_error(
        "doctor --rank: give the file it is a row of, with --hostfile FILE or --jaccl-devices FILE");
  // The device file or hostfile: this host's devices, and (hostfile) the peers' addresses.
  if (o.hostfile || o.jaccl_devices) {
    const std::string& path = o.hostfile ? *o.hostfile : *o.jaccl_devices;
    fleet::MlxHostfile f;
    if (o.hostfile) {
      auto r = fleet::read_mlx_hostfile(path);
      if (!r) return usage_error(r.error());
      f = std::move(r).value();
    }
    // The rank as env reads it (env_cmd.hpp): --rank, else JACCL's rank variable, else MLX's, digits only.
    const std::optional<RankText> given = rank_text(o.rank);
    std::optional<std::size_t> self;
    if (!o.hostfile) {
      // A device file names no addresses: only its rank's row is used, so only that row is kept
      // (read_device_file_row; the whole matrix of a 4,096-rank file is gigabytes).
      std::optional<std::size_t> wanted;
      if (given)
        if (auto r = fleet::parse_rank(given->text)) wanted = r.value();
      auto d = fleet::read_device_file_row(path, wanted);
      if (!d) return usage_error(d.error());
      // The other ranks are rows without addresses, as before, and now without their devices.
      f.hosts.resize(d.value().ranks);
      for (std::size_t i = 0; i < f.hosts.size(); ++i) f.hosts[i].ssh = "rank " + std::to_string(i);
      if (d.value().rank) f.hosts[*d.value().rank].rdma = std::move(d.value().names);
    }
    if (given) {
      auto r = rank_in(*given, f.hosts.size(), path);
      if (!r) return usage_error(r.error());
      self = r.value();
    }
    if (!self) self = doctor_cmd_detail::find_self(f, in.interfaces, in.host_checked, me);
    if (!self)
      in.unknown_rank =
          DoctorInput::UnknownRank{path, o.hostfile ? "hostfile" : "jaccl-devices", bounded(me, 64)};
    for (std::size_t i = 0; i < f.hosts.size(); ++i) {
      if (self && i == *self) {
        std::set<std::string> seen;
        for (const auto& names : f.hosts[i].rdma)
          for (const auto& n : names)
            if (seen.insert(n).second)
              in.required_devices.emplace_back(n, path + " (rank " + std::to_string(i) + ")");
        continue;
      }
      for (std::size_t k = 0; k < f.hosts[i].ips.size(); ++k) {
        auto a = PeerAddress::parse(f.hosts[i].ips[k]);
        if (!a) continue;  // the reader checked the text; a scope it cannot take is not routed
        in.peer_addresses.push_back(a.value().address);
        if (self) {  // routes only once it is known which host is this one
          peers.push_back(a.value());
          origins.push_back(fmt::format("{} hosts[{}] {}", path, i, f.hosts[i].ssh));
          rdma.push_back(false);
        }
      }
    }
  }
  // Bounded (kMaxRoutedPeers, doctor.hpp): a route lookup each, and the addresses every proposed
  // address is compared with.
  if (peers.size() > kMaxRoutedPeers)
    return usage_error(fmt::format("{} peers to route: at most {}", peers.size(), kMaxRoutedPeers));
  if (in.peer_addresses.size() > kMaxRoutedPeers)
    return usage_error(
        fmt::format("{} peer addresses in the file: at most {}", in.peer_addresses.size(), kMaxRoutedPeers));
  // The routes and the pins are this host's: another host's table is not judged by them (the
  // report's not-checked line says so).
  if (in.host_checked) {
    for (std::size_t i = 0; i < peers.size(); ++i) {
      DoctorPeer p{peers[i], origins[i]};
      p.rdma = rdma[i];
      in.peers.push_back(std::move(p));
    }
    if (bundle) {
      BundleRoutes routes(*bundle);
      route_peers(in, routes);  // the pins came with the bundle (doctor_input)
    } else {
      KernelRoutes kernel;
      route_peers(in, kernel);
      // The pins, and the device variables that say which ports each stack uses (the doctor
      // judges a pin only there: read_device_selector).
      // Every variable that steers a stack (launch_variables(): the pins, device lists and the
      // other settings), so the stacks block predicts each stack as this host launches it.
      for (auto v : launch_variables())
        if (const char* val = std::getenv(std::string(v).c_str())) in.pins.push_back({std::string(v), val});
    }
  }

  if (!(o.source.input || o.source.sysfs || o.source.bundle)) {
    const auto deadline =
        std::chrono::milliseconds(static_cast<long long>(std::llround(o.deadline_s * 1000)));
    auto live = read_live(o.source, deadline);
    if (live) {
      in.tables = std::move(live.value().tables);
      in.failures = std::move(live.value().failures);
    } else if (!read_no_device(in, live.error())) {
      return usage_error(live.error());  // fork or pipe failing: nothing was read
    }
    source = "live devices (" + o.source.verbs + ")";
    // A Mac's RDMA switch says whether an empty device list is final (the tables of a file
    // describe another moment, perhaps another host: not asked then).
    read_rdma_state(in);
  }
  const DoctorReport r = examine(in);
  if (o.json)
    doctor_cmd_detail::print_json_report(r, in, source, bundle ? &*bundle : nullptr,
                                         !(o.source.input || o.source.sysfs || o.source.bundle));
  else
    doctor_cmd_detail::print_text_report(r, in, source, bundle ? &*bundle : nullptr);
  return r.ready() ? kExitOk : kExitFinding;
}

}  // namespace gidpolicy::cli
