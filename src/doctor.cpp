// examine() (doctor.hpp): the checks, each with the fact it rests on, and the fixes per platform.
#include <gidpolicy/doctor.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/stacks.hpp>

#include "doctor_findings.hpp"
#include "doctor_fixes.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace gidpolicy {

std::string_view to_string(Severity s) noexcept {
  switch (s) {
    case Severity::blocker:
      return "blocker";
    case Severity::warning:
      return "warning";
    case Severity::note:
      break;
  }
  return "note";
}

bool DoctorReport::ready() const noexcept { return blockers() == 0; }

std::size_t DoctorReport::blockers() const noexcept {
  return static_cast<std::size_t>(std::count_if(
      findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::blocker; }));
}

std::optional<IfAddress> propose_address(const std::vector<IfAddress>& taken, unsigned ordinal) {
  // /30s from 192.168.200.0 upwards, then the rest of 192.168/16: one subnet per cable, the
  // two ends .1 and .2, as mlx.distributed_config --auto-setup gives each cable its own /30.
  unsigned seen = 0;
  for (std::uint32_t k = 0; k < 16384; ++k) {
    const std::uint32_t net = 0xc0a80000u + (((200u * 64u) + k) % 16384u) * 4u;  // 192.168.x.y/30
    const Gid subnet = Gid::ipv4_mapped(net);
    bool clash = false;
    for (const IfAddress& t : taken) {
      if (!t.address.is_ipv4_mapped()) continue;
      const unsigned p = std::min(t.prefix, 32u);
      // Overlap: either prefix holds the other's network.
      if (t.address.in_prefix(subnet, 96 + 30) || subnet.in_prefix(t.address, 96 + p)) clash = true;
    }
    if (clash) continue;
    if (seen++ == ordinal) return IfAddress{Gid::ipv4_mapped(net + 1), 30};
  }
  return std::nullopt;
}

std::string_view to_string(FindingCode c) noexcept {
  if (static_cast<std::size_t>(c) >= kFindingCodeCount) return "unknown";
  return doctor_detail::row_of(c).name;
}

std::optional<FindingCode> finding_code_from_string(std::string_view name) noexcept {
  for (const doctor_detail::FindingRow& r : doctor_detail::kFindingRows)
    if (r.name == name) return r.code;
  return std::nullopt;
}

Severity severity_of(FindingCode c) noexcept {
  // A value outside the enum blocks: a finding nobody can name must not let a host pass.
  if (static_cast<std::size_t>(c) >= kFindingCodeCount) return Severity::blocker;
  return doctor_detail::row_of(c).severity;
}

std::string finding_code_names() {
  std::string out;
  for (const doctor_detail::FindingRow& r : doctor_detail::kFindingRows) {
    if (!out.empty()) out += ", ";
    out += r.name;
  }
  return out;
}

std::string doctor_findings_table() {
  std::string out =
      "<!-- doctor-findings:begin (generated from src/doctor_findings.hpp by scripts/update-docs: edit the "
      "table, not this copy) -->\n"
      "| code | what | why it matters |\n"
      "|---|---|---|\n";
  // A '|' inside a cell is written "\|" (GitHub reads it as the character, in code spans too).
  const auto cell = [](std::string_view text) {
    std::string c;
    for (char ch : text) c += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return c;
  };
  for (const doctor_detail::FindingRow& r : doctor_detail::kFindingRows) {
    out += "| `" + std::string(r.name) + "`";
    if (r.severity != Severity::blocker) out += " (" + std::string(to_string(r.severity)) + ")";
    out += " | " + cell(r.what) + " | " + cell(r.why) + " |\n";
  }
  return out + "<!-- doctor-findings:end -->\n";
}

namespace {

using doctor_detail::FixArgs;
using doctor_detail::Fixes;
using doctor_detail::row_of;

/// The order causes are listed in within a severity: the table's (the enum's) order.
std::size_t rank_of(FindingCode code) { return static_cast<std::size_t>(code); }

std::string text_of(const Gid& g) { return g.is_ipv4_mapped() ? g.ipv4_string() : g.to_string(); }

class Examiner {
 public:
  explicit Examiner(const DoctorInput& in) : in_(in), fixes_(in.platform) {
    for (const HostInterface& i : in.interfaces)
      for (const IfAddress& a : i.addresses) taken_.push_back(a);
    for (const Gid& g : in.peer_addresses) taken_.push_back({g, g.is_ipv4_mapped() ? 32u : 128u});
    for (const DoctorPeer& p : in.peers) taken_.push_back({p.address.address, 32});
  }

  DoctorReport run() {
    failures();
    no_device();
    rdma_state();
    if (in_.host_checked && !in_.interfaces_known)
      add(FindingCode::interfaces_unknown, "", 0, "",
          "this host's interfaces could not be read: " + show_text(in_.interfaces_error),
          "without them no GID can be compared with its netdev's addresses", {});
    required_devices();
    for (const GidTable& t : in_.tables) port(t);
    bridge_unknown();
    shared_subnets();
    if (in_.host_checked) peers();
    stacks_and_pins();
    // What only the tables' own host can say: its interfaces (addresses, state, MTU), bridges,
    // routes, environment and RDMA switch. Said, not guessed: this machine's are not that host's.
    if (!in_.host_checked) {
      r_.not_checked = {"interfaces", "bridge_membership", "routes", "pins"};
      if (in_.platform == Platform::darwin) r_.not_checked.push_back("rdma_ctl");
    }
    if (const auto& u = in_.unknown_rank)
      add(FindingCode::rank_unknown, "", 0, "",
          show_text(u->file) + " names none of this host's addresses or its name (" + show_text(u->host) +
              "): its devices and peers are not checked",
          "a launcher that runs this host with another rank's row opens devices it may not have",
          {.file = u->file, .option = u->option});
    for (const Finding& f : in_.extra) r_.findings.push_back(f);
    std::stable_sort(r_.findings.begin(), r_.findings.end(), [](const Finding& a, const Finding& b) {
      if (a.severity != b.severity) return a.severity < b.severity;
      return rank_of(a.code) < rank_of(b.code);
    });
    return std::move(r_);
  }

 private:
  /// A finding of `code`: its severity and its commands (for this platform, from `fix`) are the
  /// row's (doctor_findings.hpp).
  void add(FindingCode code, std::string device, std::uint32_t port, std::string netdev, std::string text,
           std::string why, const FixArgs& fix) {
    const doctor_detail::FindingRow& row = row_of(code);
    r_.findings.push_back(Finding{row.severity, code, std::move(device), port, std::move(netdev),
                                  std::move(text), std::move(why), row.fix(fixes_, fix)});
  }

  const HostInterface* iface(std::string_view name) const {
    for (const HostInterface& i : in_.interfaces)
      if (i.name == name) return &i;
    return nullptr;
  }

  /// The netdev of an entry: its own, else the port's interface by Apple's naming (rdma_enN's
  /// interface is enN: Apple's tables name no netdev).
  std::string netdev_of(const GidTable& t, const GidEntry& e) const {
    if (!e.netdev.empty()) return e.netdev;
    const std::string& d = t.port().device;
    if (d.rfind("rdma_", 0) == 0) return d.substr(5);
    return {};
  }

  /// An address for an interface that needs one (never a peer's, never 169.254/16): one per
  /// interface per report, whichever findings ask (self_assigned and link_local_only on one
  /// port used to propose two), so the far end's `.2` always matches this end's `.1`.
  std::optional<IfAddress> next_address(const std::string& netdev) {
    if (!netdev.empty())
      if (const auto it = proposed_.find(netdev); it != proposed_.end()) return it->second;
    auto a = propose_address(taken_, 0);
    if (a) taken_.push_back(*a);
    if (!netdev.empty()) proposed_.emplace(netdev, a);
    return a;
  }

  void failures() {
    for (const DeviceFailure& f : in_.failures) {
      const std::string what = f.port ? port_name(f.device, f.port) : f.device;
      if (f.timed_out) {
        const std::string secs = f.deadline_ms % 1000 == 0 ? std::to_string(f.deadline_ms / 1000) + " s"
                                                           : std::to_string(f.deadline_ms) + " ms";
        add(FindingCode::no_answer, f.device, f.port, "",
            f.device + " did not answer " + f.call + " within " + secs +
                ": the port may be wedged; replug the cable or reboot",
            "every program that opens " + f.device + " (ibv_devinfo included) hangs in the same call",
            {.device = f.device});
      } else {
        add(FindingCode::device_error, f.device, f.port, "",
            what + ": " + f.call + " failed: " + show_text(f.detail),
            "programs that use " + what + " fail the same way", {});
      }
    }
  }

  /// Live reads that listed no device at all: the cause the host layer found, with its fix.
  void no_device() {
    if (!in_.no_device) return;
    const NoDevice& d = *in_.no_device;
    const std::string said = d.detail.empty() ? std::string() : " (" + show_text(d.detail) + ")";
    switch (d.cause) {
      case NoDevice::Cause::library_missing:
        add(FindingCode::verbs_library_missing, "", 0, "",
            "the verbs library cannot be loaded, so no RDMA device can be listed" + said,
            "every RDMA program (NCCL, UCX, JACCL, ibv_devinfo) loads it first: none finds a device", {});
        return;
      case NoDevice::Cause::no_kernel_device:
        add(FindingCode::no_kernel_rdma_device, "", 0, "",
            "no RDMA device: the verbs library lists none and the kernel has none (/sys/class/infiniband "
            "is absent or empty)" +
                said,
            "no RDMA NIC, or its RDMA driver is not loaded: every RDMA program finds no device and exits",
            {.netdev = d.netdev});
        return;
      case NoDevice::Cause::provider_missing: {
        std::string names;
        for (const std::string& n : d.kernel_devices) names += (names.empty() ? "" : ", ") + show_text(n);
        add(FindingCode::verbs_provider_missing, "", 0, "",
            "the kernel has RDMA devices (" + names + ") but the verbs library lists none: " +
                (d.uverbs_nodes ? "its user-space provider is missing"
                                : "/dev/infiniband holds no uverbs node (ib_uverbs is not loaded)") +
                said,
            "programs open a device through its provider and its /dev/infiniband/uverbsN node: they find "
            "none",
            {.devices = d.kernel_devices, .uverbs_nodes = d.uverbs_nodes});
        return;
      }
    }
  }

  /// macOS: RDMA over Thunderbolt is off until `rdma_ctl enable` (from Recovery); and "enabled"
  /// with no device at all is a Thunderbolt 4 Mac, whose hardware has none.
  void rdma_state() {
    const bool none = in_.tables.empty() && in_.failures.empty() && !in_.from_file;
    // What a host bundle's system_profiler said about the hardware, for the no-device lines.
    const std::string hardware =
        in_.thunderbolt_generation
            ? "system_profiler reports Thunderbolt " + std::to_string(*in_.thunderbolt_generation) +
                  (in_.thunderbolt_speed.empty() ? std::string()
                                                 : " (" + show_text(in_.thunderbolt_speed) + ")")
            : std::string();
    if (in_.rdma_release == false) {
      add(FindingCode::macos_without_rdma, "", 0, "",
          "macOS " + show_text(in_.release) + " has no RDMA over Thunderbolt: it came with macOS 26.2",
          "no rdma_en device and no rdma_ctl: JACCL and ds4 find no device and exit", {});
    } else if (in_.rdma_enabled == false) {
      add(FindingCode::rdma_disabled, "", 0, "",
          "RDMA over Thunderbolt is disabled (rdma_ctl status: disabled)",
          "no rdma_en device is listed: JACCL and ds4 find no device and exit", {});
    } else if (none && in_.thunderbolt_generation && *in_.thunderbolt_generation < 5) {
      // Final whatever rdma_ctl says: the hardware has no RDMA.
      add(FindingCode::no_rdma_device, "", 0, "",
          "no RDMA device is listed, and " + hardware + ": this Mac has no RDMA over Thunderbolt",
          "RDMA over Thunderbolt needs Thunderbolt 5 hardware at both ends (an M4 Pro or M4 Max Mac mini, a "
          "Mac "
          "Studio with M3 Ultra or M4 Max, ...); JACCL finds no device",
          {});
    } else if (in_.rdma_enabled == true && none) {
      add(FindingCode::no_rdma_device, "", 0, "",
          "rdma_ctl status says enabled, but no RDMA device is listed" +
              (hardware.empty() ? "" : " (" + hardware + ")"),
          "on a Mac with Thunderbolt 4 (or a port without RDMA) this is final: RDMA over Thunderbolt needs "
          "Thunderbolt 5 at both ends; JACCL finds no device",
          {});
    } else if (!in_.rdma_state_error.empty()) {
      add(FindingCode::rdma_state_unknown, "", 0, "",
          "whether RDMA is enabled could not be read: " + show_text(in_.rdma_state_error),
          "RDMA over Thunderbolt works only once `rdma_ctl enable` was run from macOS Recovery", {});
    }
  }

  /// One note for every port netdev whose bridge membership could not be read (the reason is
  /// usually the host's, the same for all: another namespace's sysfs, an ifconfig that failed).
  void bridge_unknown() {
    if (bridge_unknown_.empty()) return;
    std::string names;
    for (const HostInterface* i : bridge_unknown_) names += (names.empty() ? "" : ", ") + i->name;
    const bool one = bridge_unknown_.size() == 1;
    add(FindingCode::bridge_unknown, "", 0, one ? bridge_unknown_.front()->name : "",
        "whether " + names + (one ? " is" : " are") +
            " a bridge member could not be read: " + bridge_unknown_.front()->bridge_unknown,
        "a bridge member's own address (and its GID) is not what the peer reaches; check by hand", {});
  }

  void required_devices() {
    for (const auto& required : in_.required_devices) {
      // Not a structured binding: Clang 14 cannot capture one in the lambdas below.
      const std::string& dev = required.first;
      const std::string& origin = required.second;
      const bool have = std::any_of(in_.tables.begin(), in_.tables.end(),
                                    [&](const GidTable& t) { return t.port().device == dev; }) ||
                        std::any_of(in_.failures.begin(), in_.failures.end(),
                                    [&](const DeviceFailure& f) { return f.device == dev; });
      if (!have)
        add(FindingCode::device_missing, dev, 0, "",
            show_text(origin) + " names " + show_text(dev) + ", which this host does not have",
            "JACCL opens the devices of its rank's row: ibv_open_device finds none and the rank exits",
            {.device = dev});
    }
  }

  void port(const GidTable& t) {
    const std::string dev = t.port().device;
    const std::uint32_t pn = t.port().port;
    const std::string pname = port_name(t);
    PortSummary s{dev, pn, std::string(to_string(t.port().state)), to_string(t.port().link_layer), {}, 0, 0};
    std::vector<std::string> netdevs;
    for (const GidEntry& e : t) {
      if (!e.usable()) continue;
      ++s.gids;
      if (!e.gid.is_link_local() && !e.gid.is_ipv4_link_local()) ++s.routable;  // only_link_local_gids()
      const std::string n = netdev_of(t, e);
      if (!n.empty() && std::find(netdevs.begin(), netdevs.end(), n) == netdevs.end()) netdevs.push_back(n);
    }
    // A port whose GIDs name no netdev still has one on a Mac (rdma_enN -> enN).
    if (netdevs.empty() && dev.rfind("rdma_", 0) == 0) netdevs.push_back(dev.substr(5));
    s.netdevs = netdevs;
    r_.ports.push_back(s);
    port_netdevs_.emplace_back(&t, netdevs);

    const bool tb = t.port().link_layer.kind() == LinkLayer::Kind::thunderbolt;
    if (t.port().state != PortState::active) {
      const HostInterface* i = netdevs.empty() ? nullptr : iface(netdevs.front());
      // A port without a link beside one that has it, and that no device file or hostfile asks
      // for, is a port nobody cabled (a Mac lists every Thunderbolt port, cabled or not): a note,
      // and its netdev's checks (no IPv4, no GID, bridge membership) are skipped, since they are
      // what an unused port looks like. A required port, or a host with no active port, is a
      // blocker.
      const bool required = std::any_of(in_.required_devices.begin(), in_.required_devices.end(),
                                        [&](const auto& r) { return r.first == dev; });
      const bool another_active = std::any_of(in_.tables.begin(), in_.tables.end(), [](const GidTable& x) {
        return x.port().state == PortState::active;
      });
      if (!required && another_active) {
        add(FindingCode::port_down_unused, dev, pn, netdevs.empty() ? "" : netdevs.front(),
            pname + " is " + std::string(to_string(t.port().state)) +
                ": no link (no cable?); not used, and not checked further",
            "programs use the active ports; JACCL opens only the devices its device file names, so name "
            "cabled ones there",
            {.device = dev,
             .port = pn,
             .netdev = netdevs.empty() ? "" : netdevs.front(),
             .netdev_down = i && !i->up,
             .thunderbolt = tb});
        unused_.push_back(&t);
        port_netdevs_.pop_back();
        return;
      }
      add(FindingCode::port_not_active, dev, pn, netdevs.empty() ? "" : netdevs.front(),
          pname + " is " + std::string(to_string(t.port().state)) + ", not active",
          "QPs on it cannot reach RTR; JACCL and ds4 stop at the port check",
          {.device = dev,
           .port = pn,
           .netdev = netdevs.empty() ? "" : netdevs.front(),
           .netdev_down = i && !i->up,
           .thunderbolt = tb});
    }
    if (!in_.host_checked) {
      table_only(t, s, netdevs, tb);
      return;
    }
    if (!in_.interfaces_known) return;
    bool missing_any = false;
    for (const std::string& n : netdevs) {
      const HostInterface* i = iface(n);
      const bool named =
          std::any_of(t.begin(), t.end(), [&](const GidEntry& e) { return e.usable() && e.netdev == n; });
      if (!i) {
        missing_any = true;
        if (named)
          add(FindingCode::netdev_elsewhere, dev, pn, n,
              pname + ": its GIDs are bound to " + n + ", which is not in this network namespace",
              "RTR from those GIDs fails with ENODEV (19): the kernel looks the GID's netdev up in the "
              "caller's "
              "namespace",
              {.netdev = n});
        else
          add(FindingCode::netdev_missing, dev, pn, n, pname + ": its interface " + n + " is not there",
              "without the interface the port has no address and no IP-based GID", {.netdev = n});
        continue;
      }
      netdev_checks(t, n, *i, tb);
    }
    if (missing_any) return;
    if (s.gids == 0) {
      add(FindingCode::no_gids, dev, pn, netdevs.empty() ? "" : netdevs.front(), pname + " lists no GID",
          "no program can advertise or route from this port", {});
    } else if (s.routable == 0 && !(tb && no_ipv4_said_)) {
      auto a = next_address(netdevs.empty() ? "" : netdevs.front());
      add(FindingCode::link_local_only, dev, pn, netdevs.empty() ? "" : netdevs.front(),
          pname + ": only link-local GIDs (" + std::to_string(s.gids) + "): none reaches past the link",
          "a stack that takes a link-local GID passes RTR and then times out: routers drop link-local "
          "sources",
          {.netdev = netdevs.empty() ? "" : netdevs.front(), .address = a});
    }
    no_ipv4_said_ = false;
    roce_mode(t);
  }

  /// Another host's table: what its own GIDs say. The IPv4-mapped GID of a Thunderbolt port
  /// appears only once the port's interface holds an IPv4 address, so a port listing link-local
  /// GIDs only has none (or only a self-assigned 169.254 one, whose GID is ::ffff:169.254.x.y).
  void table_only(const GidTable& t, const PortSummary& s, const std::vector<std::string>& netdevs, bool tb) {
    const std::string dev = t.port().device;
    const std::uint32_t pn = t.port().port;
    const std::string pname = port_name(t);
    const std::string n = netdevs.empty() ? "" : netdevs.front();
    const bool mapped = std::any_of(t.begin(), t.end(),
                                    [](const GidEntry& e) { return e.usable() && e.gid.is_ipv4_mapped(); });
    if (s.gids == 0) {
      add(FindingCode::no_gids, dev, pn, n, pname + " lists no GID",
          "no program can advertise or route from this port", {});
    } else if (s.routable == 0 && tb && !mapped && !n.empty()) {
      auto a = next_address(n);
      add(FindingCode::no_ipv4, dev, pn, n,
          pname + ": its interface " + n +
              " has no IPv4 address (the table lists only link-local GIDs), so the port has no "
              "::ffff:a.b.c.d GID",
          "JACCL and ds4 route from the first IPv4-mapped GID: without one their RTR fails with EINVAL (22)",
          {.netdev = n, .address = a});
    } else if (s.routable == 0) {
      if (tb && mapped && !n.empty()) {
        auto a = next_address(n);
        add(FindingCode::self_assigned, dev, pn, n,
            pname + ": " + n +
                " has only a self-assigned 169.254 address (its only IPv4-mapped GIDs are "
                "169.254/16)",
            "it arrives seconds to minutes after the link and may differ after a reboot: a device file or "
            "peer list written today names a GID that is gone tomorrow",
            {.netdev = n, .address = a});
      }
      auto a = next_address(n);
      add(FindingCode::link_local_only, dev, pn, n,
          pname + ": only link-local GIDs (" + std::to_string(s.gids) + "): none reaches past the link",
          "a stack that takes a link-local GID passes RTR and then times out: routers drop link-local "
          "sources",
          {.netdev = n, .address = a});
    }
    roce_mode(t);
  }

  void netdev_checks(const GidTable& t, const std::string& n, const HostInterface& i, bool tb) {
    const std::string dev = t.port().device;
    const std::uint32_t pn = t.port().port;
    const std::string pname = port_name(t);
    if (!i.up)
      add(FindingCode::netdev_down, dev, pn, n, pname + ": " + n + " is down",
          "the kernel drops a down netdev's IP-based GIDs and the port goes down with it", {.netdev = n});
    if (!i.bridge.empty())
      add(FindingCode::bridge_member, dev, pn, n, n + " is a member of " + i.bridge,
          "a bridge member carries the bridge's traffic: " + n +
              "'s own address (and its GID) is not what the peer reaches; JACCL's RTR or its first send "
              "fails",
          {.netdev = n, .bridge = i.bridge});
    else if (!i.bridge_unknown.empty() &&
             std::find(bridge_unknown_.begin(), bridge_unknown_.end(), &i) == bridge_unknown_.end())
      bridge_unknown_.push_back(&i);
    if (tb && !i.has_ipv4()) {
      auto a = next_address(n);
      no_ipv4_said_ = true;
      add(FindingCode::no_ipv4, dev, pn, n,
          pname + ": " + n + " has no IPv4 address, so the port has no ::ffff:a.b.c.d GID",
          "JACCL and ds4 route from the first IPv4-mapped GID: without one their RTR fails with EINVAL (22)",
          {.netdev = n, .address = a});
    } else if (tb && !i.has_assigned_ipv4()) {
      auto a = next_address(n);
      add(FindingCode::self_assigned, dev, pn, n,
          pname + ": " + n + " has only a self-assigned 169.254 address",
          "it arrives seconds to minutes after the link and may differ after a reboot: a device file or "
          "peer list written today names a GID that is gone tomorrow",
          {.netdev = n, .address = a});
    }
    if (i.mtu && i.mtu < mtu_bytes(t.port().active_mtu))
      add(FindingCode::mtu, dev, pn, n,
          pname + ": " + n + "'s MTU " + std::to_string(i.mtu) + " is below the port's active MTU " +
              std::to_string(mtu_bytes(t.port().active_mtu)),
          "packets of the port's MTU do not fit the netdev: large messages stall or are dropped",
          {.netdev = n, .mtu = mtu_bytes(t.port().active_mtu) + 96});
    // Addresses against GIDs. Link-local IPv6 is left out: its GID comes from the MAC, with or
    // without the address.
    for (const IfAddress& a : i.addresses) {
      if (a.address.is_link_local() && !a.address.is_ipv4_mapped()) continue;
      const bool has = std::any_of(t.begin(), t.end(), [&](const GidEntry& e) {
        return e.usable() && e.gid == a.address && netdev_of(t, e) == n;
      });
      if (has) continue;
      const std::string at = text_of(a.address) + "/" + std::to_string(a.prefix);
      std::string likely;
      if (in_.from_file)
        likely =
            "not there yet: the table was read from a file, taken before the address was added; take it "
            "again";
      else if (!i.up || !i.running)
        likely = "never while " + n + " is " + (i.up ? "without a link" : "down");
      else
        likely = "the kernel adds a GID within a moment of its address: if it stays missing, " + n +
                 " is not this port's netdev (never)";
      add(FindingCode::address_without_gid, dev, pn, n,
          pname + ": " + n + " holds " + at + " but no GID does (" + likely + ")",
          "rdma_cm binds " + text_of(a.address) +
              " to a GID holding it: none, so rdma_resolve_addr fails with ENODEV (19)",
          {.netdev = n, .address = a, .from_file = in_.from_file});
    }
    // One finding per address, naming every index that holds it (mlx5 keeps a RoCE v1 and a v2
    // entry per address).
    std::vector<std::pair<Gid, std::string>> stale;
    for (const GidEntry& e : t) {
      if (!e.usable() || netdev_of(t, e) != n) continue;
      if (e.gid.is_link_local() && !e.gid.is_ipv4_mapped()) continue;
      if (i.holds(e.gid)) continue;
      auto it = std::find_if(stale.begin(), stale.end(), [&](const auto& x) { return x.first == e.gid; });
      if (it == stale.end())
        stale.emplace_back(e.gid, "[" + std::to_string(e.index) + "]");
      else
        it->second += ", [" + std::to_string(e.index) + "]";
    }
    for (const auto& [gid, indices] : stale)
      add(FindingCode::stale_gid, dev, pn, n,
          pname +
              (indices.find(',') == std::string::npos
                   ? ": GID " + indices + " " + text_of(gid) + " is on "
                   : ": GIDs " + indices + " (" + text_of(gid) + ") are on ") +
              n + ", which no longer holds that address (stale)",
          "a program that advertises it gets nothing back: the peer's packets to " + text_of(gid) +
              " are not delivered to this host",
          {.netdev = n, .gid = gid, .from_file = in_.from_file});
  }

  void roce_mode(const GidTable& t) {
    if (in_.platform != Platform::linux_kernel || t.port().link_layer.kind() != LinkLayer::Kind::ethernet)
      return;
    bool v1 = false, v2 = false;
    for (const GidEntry& e : t) {
      if (!e.usable() || e.gid.is_link_local()) continue;
      v1 = v1 || e.type == GidType::roce_v1;
      v2 = v2 || e.type == GidType::roce_v2;
    }
    if (v1 && !v2)
      add(FindingCode::roce_mode, t.port().device, t.port().port, "",
          port_name(t) + ": its address GIDs are RoCE v1 only, and rdma_cm's default RoCE mode is RoCE v2",
          "rdma_cm looks for a GID of the default mode holding the address: none, ENODEV (19)",
          {.device = t.port().device, .port = t.port().port});
  }

  void shared_subnets() {
    // Two ports whose netdevs hold IPv4 addresses of one subnet: the kernel has two routes to it
    // and uses the first; ds4 refuses such a host, JACCL's traffic may leave by the other cable.
    struct Net {
      std::string port, netdev;
      IfAddress a;
    };
    std::vector<Net> nets;
    for (const auto& [t, netdevs] : port_netdevs_)
      for (const std::string& n : netdevs)
        if (const HostInterface* i = iface(n))
          for (const IfAddress& a : i->addresses)
            if (a.address.is_ipv4_mapped() && !a.address.is_ipv4_link_local() && a.prefix < 32)
              nets.push_back({port_name(*t), n, a});
    std::set<std::pair<std::string, std::string>> said;
    for (std::size_t x = 0; x < nets.size(); ++x)
      for (std::size_t y = x + 1; y < nets.size(); ++y) {
        if (nets[x].netdev == nets[y].netdev) continue;
        const unsigned p = std::min(nets[x].a.prefix, nets[y].a.prefix);
        if (!nets[x].a.address.in_prefix(nets[y].a.address, 96 + p)) continue;
        if (!said.insert({nets[x].netdev, nets[y].netdev}).second) continue;
        auto a = next_address(nets[y].netdev);
        add(FindingCode::shared_subnet, "", 0, nets[y].netdev,
            nets[x].port + " (" + nets[x].netdev + ") and " + nets[y].port + " (" + nets[y].netdev +
                ") are on one subnet (" + text_of(nets[x].a.address) + "/" +
                std::to_string(nets[x].a.prefix) + ", " + text_of(nets[y].a.address) + "/" +
                std::to_string(nets[y].a.prefix) + ")",
            "ds4 refuses two ports on one subnet; the kernel routes the whole subnet through one of them, so "
            "JACCL's traffic for the other cable leaves by the wrong one",
            {.netdev = nets[y].netdev, .address = a, .old = nets[y].a});
      }
  }

  /// The port whose netdevs include `netdev`, or nullptr.
  const GidTable* port_of(const std::string& netdev) const {
    for (const auto& [t, netdevs] : port_netdevs_)
      if (std::find(netdevs.begin(), netdevs.end(), netdev) != netdevs.end()) return t;
    return nullptr;
  }

  void peers() {
    for (const DoctorPeer& p : in_.peers) {
      PeerLine l;
      l.peer = p.address.to_string();
      l.origin = p.origin;
      if (!p.route) {
        l.summary = p.route.error().detail;
        r_.peers.push_back(l);
        add(FindingCode::peer_unreachable, "", 0, "", "peer " + l.peer + " (" + p.origin + "): " + l.summary,
            "rdma_resolve_addr fails the same way, and a stack given a GID for it sends into nothing",
            {.peer = p.address});
        continue;
      }
      const Route& r = p.route.value();
      l.netdev = r.netdev;
      l.source = r.source ? text_of(*r.source) : "";
      if (auto ok = check_route(p.address, r); !ok) {
        l.summary = ok.error().detail;
        r_.peers.push_back(l);
        add(FindingCode::peer_unreachable, "", 0, r.netdev,
            "peer " + l.peer + " (" + p.origin + "): " + l.summary, "rdma_resolve_addr fails the same way",
            {.peer = p.address});
        continue;
      }
      l.routed = true;
      l.leaves_host = r.type == RouteType::unicast && r.netdev != "lo";
      const GidTable* t = port_of(r.netdev);
      if (!p.rdma) {
        l.port = t ? port_name(*t) : "";
        l.summary = "reachable through " + r.netdev + (t ? " (" + l.port + ")" : std::string()) +
                    (l.source.empty() ? std::string() : ", from " + l.source) +
                    " (the launcher's TCP: ssh and the coordinator; RDMA goes over the ports)";
        r_.peers.push_back(l);
        continue;
      }
      if (!t) {
        l.summary = "leaves through " + r.netdev + ", which is no RDMA port's netdev";
        r_.peers.push_back(l);
        add(FindingCode::peer_off_rdma, "", 0, r.netdev,
            "peer " + l.peer + ": the kernel's route leaves through " + r.netdev +
                ", which no RDMA port uses",
            "rdma_cm binds to " + r.netdev +
                " and finds no GID on it (ENODEV); RDMA to this peer would not use the cable",
            {.netdev = port_netdevs_.size() == 1 && port_netdevs_.front().second.size() == 1
                           ? port_netdevs_.front().second.front()
                           : std::string(),
             .peer = p.address});
        continue;
      }
      l.port = port_name(*t);
      const GidEntry* src = nullptr;
      if (r.source)
        for (const GidEntry& e : *t)
          if (e.usable() && e.gid == *r.source && netdev_of(*t, e) == r.netdev) {
            src = &e;
            break;
          }
      if (!src) {
        l.summary = "through " + r.netdev + " (" + l.port + "), but no GID holds its source " +
                    (l.source.empty() ? std::string("(none)") : l.source);
        r_.peers.push_back(l);
        add(FindingCode::peer_no_gid, t->port().device, t->port().port, r.netdev,
            "peer " + l.peer + ": " + l.summary, "rdma_cm finds no GID for the route's source: ENODEV (19)",
            {});
        continue;
      }
      const bool ll_src =
          src->gid.is_ipv4_link_local() || (!src->gid.is_ipv4_mapped() && src->gid.is_link_local());
      const bool ll_peer = p.address.address.is_ipv4_link_local() ||
                           (!p.address.address.is_ipv4_mapped() && p.address.address.is_link_local());
      l.summary = "through " + r.netdev + " (" + l.port + "), source GID [" + std::to_string(src->index) +
                  "] " + text_of(src->gid);
      r_.peers.push_back(l);
      if (ll_src && !ll_peer)
        add(FindingCode::link_local_source, t->port().device, t->port().port, r.netdev,
            "peer " + l.peer + ": the route's source " + text_of(src->gid) +
                " is link-local and the peer is not",
            "RTR passes and the QP times out: a link-local source reaches nothing past its link",
            {.netdev = r.netdev, .address = next_address(r.netdev)});
    }
  }

  void stacks_and_pins() {
    bool mc_set = false;
    for (const DoctorPin& p : in_.pins) mc_set = mc_set || p.variable == stack_vars::kMcGidIndex;
    // Every stack variable among them, for the stacks block's predictions (read_launch()).
    std::vector<LaunchSetting> launch_settings;
    for (const DoctorPin& p : in_.pins) launch_settings.push_back({p.variable, p.value, "the environment"});
    // The device variables among the pins (the last setting of each), read as each stack reads it.
    std::vector<DeviceSelector> selectors;
    for (const DoctorPin& p : in_.pins)
      if (auto sel = read_device_selector(p.variable, p.value)) {
        std::erase_if(selectors, [&](const DeviceSelector& d) { return d.variable == sel->variable; });
        selectors.push_back(std::move(*sel));
      }
    for (const GidTable& t : in_.tables) {
      // An unused port (port_down_unused) is in no stack's run: no stack line, no pin judged.
      if (std::find(unused_.begin(), unused_.end(), &t) != unused_.end()) continue;
      const DriverModel model = DriverModel::for_table(t, in_.platform);
      // The stacks no setting steers as they ship (JACCL, exo) that fail here: one warning per
      // port and cause, naming them all, with what must hold on the host.
      std::map<std::string, std::vector<std::string>> stock_failures;
      for (const StackInfo& s : stack_catalogue())
        if (s.runs_on.has(t.port().link_layer))
          if (auto why = unsteerable_failure(s, t, model)) {
            // "JACCL as it ships on rdma_en2 port 1: EINVAL (22): ...": the cause after the port,
            // the same for every stack that runs JACCL.
            const std::size_t on = why->find(" as it ships on ");
            const std::size_t colon = on == std::string::npos ? on : why->find(": ", on);
            stock_failures[colon == std::string::npos ? *why : why->substr(colon + 2)].push_back(
                std::string(s.title));
          }
      for (const StackInfo& s : stack_catalogue()) {
        // The rows `check --stacks` lists for this port (those that run on its link layer); one
        // whose choice is not modelled (llama.cpp) says it uses the index it is given.
        if (!s.runs_on.has(t.port().link_layer)) continue;
        // The stack as this host launches it (its settings among the environment's variables,
        // read only for the host's own tables, as its pins are): its device list, family, range.
        const StackLaunch launch = in_.host_checked ? read_launch(s.id, launch_settings) : StackLaunch{s.id};
        if (!launch.uses(t.port().device, t.port().port)) {
          r_.stacks.push_back(StackLine{std::string(s.name), t.port().device, t.port().port, false, 0, false,
                                        "not used: " + launch.devices->variable + " leaves this port out"});
          continue;
        }
        if (!s.predicted) {
          r_.stacks.push_back(StackLine{
              std::string(s.name), t.port().device, t.port().port, false, 0, false,
              "index given: no automatic choice modelled, it uses its " + std::string(s.launch.choice)});
          continue;
        }
        auto own = stack_profile_for(s.id, t, launch);
        if (!own)
          continue;  // not reached: a predicted row's choice is modelled where it runs (kStacks' checks)
        const StackPrediction p = predict_profile(own.value(), t, model);
        // The settings the prediction used, named beside its outcome.
        std::string under;
        for (const SettingReading& r : launch.read)
          if (r.applied)
            under += (under.empty() ? "" : ", ") + show_text(r.variable, 60) + "=" + show_text(r.value, 40);
        r_.stacks.push_back(StackLine{std::string(s.name), t.port().device, t.port().port, p.chose, p.index,
                                      p.works,
                                      p.outcome + (under.empty() ? "" : " (launched with " + under + ")")});
      }
      // Said only where the port itself works for a stack (ds4, say): where none works, the
      // port's own cause (no IPv4, no GID) is the finding, and this would repeat it.
      const bool port_works = std::any_of(r_.stacks.begin(), r_.stacks.end(), [&](const StackLine& l) {
        return l.device == t.port().device && l.port == t.port().port && l.works;
      });
      if (port_works)
        for (const auto& [why, names] : stock_failures) {
          std::string who;
          for (std::size_t i = 0; i < names.size(); ++i)
            who += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
          add(FindingCode::stock_stack_fails, t.port().device, t.port().port, "",
              who + (names.size() == 1 ? " as it ships fails on " : " as they ship fail on ") + port_name(t) +
                  ": " + why,
              "the shipped program's RTR fails on this port; ds4 and the patched JACCL advertise and route "
              "from one index",
              {.device = t.port().device, .port = t.port().port});
        }
      // The pins are this machine's environment: judged against its own tables only.
      if (!in_.host_checked) continue;
      for (const DoctorPin& pin : in_.pins)
        for (const PinReading& reading : read_pin(pin.variable, pin.value, mc_set)) {
          // A port the stack leaves out (its device variable, among the pins) is not judged:
          // `env`'s own pin is wrong on exactly the ports its selector leaves out.
          if (const DeviceSelector* sel = selector_for(reading, pin.variable, selectors);
              sel && !sel->selects(t.port().device, t.port().port))
            continue;
          // Nor a port its stack never runs on (NCCL's pin on a Thunderbolt port).
          if (!stack_row(reading.stack).runs_on.has(t.port().link_layer)) continue;
          const PinJudgement j = judge_pin(reading, t, model);
          if (j.status == PinJudgement::Status::fine) continue;
          add(FindingCode::stale_pin, t.port().device, t.port().port, "",
              show_text(pin.variable, 60) + "=" + show_text(pin.value, 60) + " as " + reading.reader +
                  " reads it: " + j.summary,
              "the stack routes from that index on " + port_name(t) + ", not from the entry to use",
              {.variable = pin.variable, .index = j.right_index, .port_name = port_name(t)});
        }
    }
  }

  const DoctorInput& in_;
  Fixes fixes_;
  DoctorReport r_;
  std::vector<IfAddress> taken_;
  std::map<std::string, std::optional<IfAddress>> proposed_;  // next_address(): one per interface
  std::vector<std::pair<const GidTable*, std::vector<std::string>>> port_netdevs_;
  std::vector<const GidTable*> unused_;               ///< ports reported port_down_unused: no further checks
  std::vector<const HostInterface*> bridge_unknown_;  // port netdevs whose membership is unknown
  bool no_ipv4_said_ = false;
};

}  // namespace

DoctorReport examine(const DoctorInput& in) { return Examiner(in).run(); }

}  // namespace gidpolicy
