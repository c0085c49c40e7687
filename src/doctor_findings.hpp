// The doctor's one table of findings (internal to doctor.cpp): per FindingCode (doctor.hpp) its
// JSON name, severity, docs line (what / why it matters) and fix per platform. The rank is the
// row's position, which is the enum's order: there is no second list to keep in step.
//
// Checked when this compiles: one row per code (the table's size against kFindingCodeCount), in
// the enum's order (rows_in_enum_order()), names non-empty and distinct. A row that leaves out a
// field does not compile: FindingRow has no default member initializers and the rows are under
// -Wmissing-field-initializers as an error, as rdma-core's libibverbs/dummy_ops.c does on purpose.
//
// A fix is a function of the finding's particulars (FixArgs: its netdev, the address proposed,
// the peer, ...) and the platform (Fixes: iproute2/netplan/NetworkManager on Linux,
// ifconfig/networksetup on macOS). A row whose finding has no command to offer returns none.
#pragma once

#include "doctor_fixes.hpp"

#include <gidpolicy/doctor.hpp>
#include <gidpolicy/stack_table.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

namespace gidpolicy::doctor_detail {

/// What a fix is written from: only the fields its row reads are set.
struct FixArgs {
  std::string device;
  std::uint32_t port = 0;
  std::string netdev;                  ///< the interface the commands change
  std::string bridge;                  ///< bridge_member: the bridge it is in
  std::optional<IfAddress> address;    ///< an address proposed for the netdev, or the one to re-add
  std::optional<IfAddress> old;        ///< shared_subnet: the address that moves off the subnet
  Gid gid;                             ///< stale_gid: the GID whose address is gone
  std::optional<PeerAddress> peer;     ///< the peer whose route the commands look up or pin
  std::string variable;                ///< stale_pin: the environment variable
  std::optional<std::uint32_t> index;  ///< stale_pin: the index auto picks there
  std::string port_name;               ///< stale_pin: "mlx5_0 port 1"
  std::string file;                    ///< rank_unknown: the device file or hostfile
  std::string option;                  ///< rank_unknown: "hostfile", "jaccl-devices"
  unsigned mtu = 0;                    ///< mtu: the MTU to set
  bool from_file = false;              ///< the tables came from a file, not live devices
  bool netdev_down = false;            ///< port_not_active: its netdev is down too
  bool thunderbolt = false;            ///< port_not_active: a Thunderbolt port
  std::vector<std::string> devices;    ///< verbs_provider_missing: the kernel's devices
  bool uverbs_nodes = false;           ///< verbs_provider_missing: /dev/infiniband has uverbsN
};

using FixFn = Fixes::Lines (*)(const Fixes& on, const FixArgs& a);

/// One row: everything the doctor and its docs say about one kind of finding.
struct FindingRow {
  FindingCode code;
  std::string_view name;  ///< the JSON "code"; stable (a contract: docs/cli.md)
  Severity severity;
  std::string_view what;  ///< docs/doctor.md: what was found
  std::string_view why;   ///< docs/doctor.md: why it matters
  FixFn fix;              ///< the commands, for the platform `on` writes for
};

// The rows name every field: a row without one is an error, for every compiler that reads this
// (GCC and Clang both honour the pragma), whatever the including target's warning flags.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wmissing-field-initializers"
inline constexpr FindingRow kFindingRows[] = {
    {FindingCode::no_answer, "no_answer", Severity::blocker,
     "a device did not answer a verbs call within the deadline",
     "every program that opens it hangs in the same call",
     [](const Fixes& on, const FixArgs& a) { return on.wedged(a.device); }},
    {FindingCode::device_error, "device_error", Severity::blocker, "a verbs call failed",
     "programs using the device fail the same way",
     [](const Fixes&, const FixArgs&) { return Fixes::Lines{}; }},
    {FindingCode::verbs_library_missing, "verbs_library_missing", Severity::blocker,
     "live reads: the verbs library (`libibverbs.so.1`; macOS: `librdma.dylib`) cannot be loaded",
     "every RDMA program loads it first: none starts",
     [](const Fixes& on, const FixArgs&) { return on.install_verbs(); }},
    {FindingCode::no_kernel_rdma_device, "no_kernel_rdma_device", Severity::blocker,
     "live reads: the library lists no device and the kernel has none (`/sys/class/infiniband` absent or "
     "empty)",
     "no RDMA NIC, or its RDMA driver is not loaded: every program finds no device",
     [](const Fixes& on, const FixArgs& a) { return on.no_kernel_device(a.netdev); }},
    {FindingCode::verbs_provider_missing, "verbs_provider_missing", Severity::blocker,
     "live reads: the kernel lists devices under `/sys/class/infiniband`, the library none",
     "the user-space provider of the device's driver is missing, or `/dev/infiniband/uverbsN` is absent: "
     "programs find no device",
     [](const Fixes& on, const FixArgs& a) { return on.provider_missing(a.devices, a.uverbs_nodes); }},
    {FindingCode::macos_without_rdma, "macos_without_rdma", Severity::blocker,
     "macOS: the release (`sw_vers`) is older than 26.2, which brought RDMA over Thunderbolt (host bundles)",
     "no `rdma_en` device, no `rdma_ctl`: JACCL and ds4 find no device",
     [](const Fixes&, const FixArgs&) { return Fixes::update_macos(); }},
    {FindingCode::rdma_disabled, "rdma_disabled", Severity::blocker, "macOS: `rdma_ctl status` says disabled",
     "no `rdma_en` device is listed; `rdma_ctl enable` works only from Recovery",
     [](const Fixes&, const FixArgs&) { return Fixes::enable_rdma(); }},
    {FindingCode::no_rdma_device, "no_rdma_device", Severity::blocker,
     "macOS: `rdma_ctl status` says enabled (or Thunderbolt 4 hardware, from a host bundle) and no device is "
     "listed",
     "a Thunderbolt 4 Mac's final state: RDMA needs Thunderbolt 5 at both ends",
     [](const Fixes& on, const FixArgs&) { return on.device_missing("rdma_en<N>"); }},
    {FindingCode::device_missing, "device_missing", Severity::blocker,
     "the device file's / hostfile's row for this host names a device it does not have",
     "JACCL's rank cannot open it",
     [](const Fixes& on, const FixArgs& a) { return on.device_missing(a.device); }},
    {FindingCode::interfaces_unknown, "interfaces_unknown", Severity::blocker,
     "the interfaces could not be read", "nothing can be compared",
     [](const Fixes&, const FixArgs&) { return Fixes::Lines{}; }},
    {FindingCode::port_not_active, "port_not_active", Severity::blocker, "the port is not ACTIVE",
     "no QP on it reaches RTR",
     [](const Fixes& on, const FixArgs& a) {
       return on.port_down(a.device, a.port, a.netdev, a.netdev_down, a.thunderbolt);
     }},
    {FindingCode::netdev_elsewhere, "netdev_elsewhere", Severity::blocker,
     "a GID's netdev is not in this network namespace", "RTR from it fails with ENODEV (19)",
     [](const Fixes& on, const FixArgs& a) { return on.netdev_elsewhere(a.netdev); }},
    {FindingCode::netdev_missing, "netdev_missing", Severity::blocker, "a port's interface is not there",
     "no address, no IP-based GID",
     [](const Fixes& on, const FixArgs& a) { return on.netdev_missing(a.netdev); }},
    {FindingCode::netdev_down, "netdev_down", Severity::blocker, "the netdev is down",
     "the kernel drops its GIDs", [](const Fixes& on, const FixArgs& a) { return on.netdev_up(a.netdev); }},
    {FindingCode::bridge_member, "bridge_member", Severity::blocker,
     "the interface is a member of a bridge (`bridge0`, Apple's Thunderbolt Bridge)",
     "its own address is not what the peer reaches",
     [](const Fixes& on, const FixArgs& a) { return on.leave_bridge(a.netdev, a.bridge); }},
    {FindingCode::no_ipv4, "no_ipv4", Severity::blocker, "a Thunderbolt port's interface has no IPv4 address",
     "no `::ffff:a.b.c.d` GID: JACCL and ds4 fail RTR with EINVAL (22)",
     [](const Fixes& on, const FixArgs& a) { return on.add_address_or_none(a.netdev, a.address); }},
    {FindingCode::no_gids, "no_gids", Severity::blocker, "the port lists no GID", "nothing to advertise",
     [](const Fixes&, const FixArgs&) { return Fixes::Lines{}; }},
    {FindingCode::link_local_only, "link_local_only", Severity::blocker, "only link-local GIDs",
     "RTR passes, the QP times out",
     [](const Fixes& on, const FixArgs& a) {
       return a.netdev.empty() ? Fixes::Lines{} : on.add_address_or_none(a.netdev, a.address);
     }},
    {FindingCode::address_without_gid, "address_without_gid", Severity::blocker,
     "the netdev holds an address no GID holds: *not there yet* (the table was read from a file taken before "
     "the address was added), *never while down*, or *never* (the netdev is not this port's)",
     "rdma_cm binds the address to a GID holding it: ENODEV",
     [](const Fixes& on, const FixArgs& a) {
       return a.address ? on.readd_address(a.netdev, *a.address, a.from_file) : Fixes::Lines{};
     }},
    {FindingCode::stale_gid, "stale_gid", Severity::blocker, "a GID whose address the netdev no longer holds",
     "nothing comes back to it",
     [](const Fixes& on, const FixArgs& a) { return on.stale_gid(a.netdev, a.gid, a.from_file); }},
    {FindingCode::peer_unreachable, "peer_unreachable", Severity::blocker,
     "no route to the peer (none, blackhole, unreachable, prohibit; a refused address)",
     "rdma_resolve_addr fails the same way",
     [](const Fixes& on, const FixArgs& a) { return a.peer ? on.route(*a.peer) : Fixes::Lines{}; }},
    {FindingCode::peer_no_gid, "peer_no_gid", Severity::blocker,
     "the route leaves through a port's netdev, but no GID holds its source", "rdma_cm: ENODEV",
     [](const Fixes&, const FixArgs&) { return Fixes::Lines{}; }},
    {FindingCode::link_local_source, "link_local_source", Severity::blocker,
     "the route's source GID is link-local and the peer is not", "the QP times out",
     [](const Fixes& on, const FixArgs& a) { return on.add_address_or_none(a.netdev, a.address); }},
    {FindingCode::peer_off_rdma, "peer_off_rdma", Severity::warning,
     "the route leaves through a netdev no RDMA port uses", "RDMA to that peer would not use the cable",
     // `netdev`: the one port netdev the route should take, "" when the host has several.
     [](const Fixes& on, const FixArgs& a) {
       return a.peer ? on.pin_route(*a.peer, a.netdev) : Fixes::Lines{};
     }},
    {FindingCode::stale_pin, "stale_pin", Severity::blocker,
     "a pinned index is not the entry to use on a port", "the stack routes from the wrong entry",
     [](const Fixes&, const FixArgs& a) {
       Fixes::Lines fix;
       if (a.index)
         fix.push_back("export " + Fixes::q(a.variable) + "=" + std::to_string(*a.index) +
                       "   # what gidpolicy's auto picks on " + show_text(a.port_name));
       fix.push_back("# or unset " + Fixes::q(a.variable) +
                     " and let the stack choose (gidpolicy check --stacks says what it picks)");
       return fix;
     }},
    {FindingCode::rank_unknown, "rank_unknown", Severity::warning,
     "the device file or hostfile names none of this host's addresses or its name, and no "
     "`--rank` (or the rank variable JACCL's launcher sets) says which row is this host's",
     "its devices and peers are not checked",
     [](const Fixes&, const FixArgs& a) {
       return Fixes::Lines{"gidpolicy doctor --" + a.option + " " + Fixes::q(a.file) +
                           " --rank N   # N: this host's rank (or set " + std::string(stack_vars::kMlxRank) +
                           ")"};
     }},
    {FindingCode::stock_stack_fails, "stock_stack_fails", Severity::warning,
     "a stack that no setting steers as it ships (JACCL, and exo, which runs it) fails on a port: what "
     "must hold on the host for it to work",
     "the shipped program's RTR fails (JACCL: EINVAL (22) when index 1 is not the GID it advertises); "
     "ds4 and the patched JACCL may still work, so the host is not called not ready for it",
     [](const Fixes& on, const FixArgs& a) { return on.stock_stack(a.device, a.port); }},
    {FindingCode::self_assigned, "self_assigned", Severity::warning, "only a self-assigned 169.254 address",
     "it arrives late and may change: device files and peer lists go stale",
     [](const Fixes& on, const FixArgs& a) { return on.add_address_or_none(a.netdev, a.address); }},
    {FindingCode::shared_subnet, "shared_subnet", Severity::warning, "two ports' netdevs on one IPv4 subnet",
     "ds4 refuses it; the kernel routes the subnet through one of them",
     [](const Fixes& on, const FixArgs& a) {
       return a.address && a.old ? on.move_subnet(a.netdev, *a.old, *a.address) : Fixes::Lines{};
     }},
    {FindingCode::mtu, "mtu", Severity::warning, "the netdev's MTU is below the port's active MTU",
     "large messages stall", [](const Fixes& on, const FixArgs& a) { return on.mtu(a.netdev, a.mtu); }},
    {FindingCode::roce_mode, "roce_mode", Severity::warning,
     "address GIDs are RoCE v1 only, rdma_cm defaults to RoCE v2", "rdma_cm finds no GID: ENODEV",
     [](const Fixes& on, const FixArgs& a) { return on.roce_mode(a.device, a.port); }},
    {FindingCode::port_down_unused, "port_down_unused", Severity::note,
     "a port is not active while another is, and no device file or hostfile names its device: no cable "
     "(a Mac's unused Thunderbolt ports, a NIC's second port); its other checks are skipped",
     "programs use the active ports (NCCL and UCX skip a port that is down; JACCL opens the devices its "
     "device file names)",
     [](const Fixes& on, const FixArgs& a) {
       return on.port_down(a.device, a.port, a.netdev, a.netdev_down, a.thunderbolt);
     }},
    {FindingCode::bridge_unknown, "bridge_unknown", Severity::note,
     "whether port netdevs are bridge members could not be read (another namespace's sysfs; `ifconfig` "
     "failed): one note naming them",
     "check by hand (`bridge link show`, `ifconfig -a | grep member:`)",
     [](const Fixes& on, const FixArgs&) { return on.check_bridges(); }},
    {FindingCode::rdma_state_unknown, "rdma_state_unknown", Severity::note,
     "macOS: `rdma_ctl status` did not answer (2 s), failed, or said something else",
     "whether RDMA is enabled is not known",
     [](const Fixes&, const FixArgs&) { return Fixes::Lines{"rdma_ctl status"}; }},
};
#pragma GCC diagnostic pop

/// Row i is the code whose value is i, and every name is non-empty and unlike the others: what
/// lets the doctor index the table by code and rank by position.
consteval bool rows_in_enum_order() {
  for (std::size_t i = 0; i < std::size(kFindingRows); ++i) {
    if (static_cast<std::size_t>(kFindingRows[i].code) != i || kFindingRows[i].name.empty()) return false;
    for (std::size_t k = 0; k < i; ++k)
      if (kFindingRows[k].name == kFindingRows[i].name) return false;
  }
  return true;
}
// Every enumerator, once: a code added to the enum and not here fails this switch (-Wswitch-enum
// made an error, no default), and a code added after the last one without kFindingCodeCount
// following it makes the static_assert below fail, since FindingCode(kFindingCodeCount) is then
// a code.
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
#pragma GCC diagnostic error "-Wswitch-enum"
constexpr bool is_finding_code(FindingCode c) noexcept {
  switch (c) {
    case FindingCode::no_answer:
    case FindingCode::device_error:
    case FindingCode::verbs_library_missing:
    case FindingCode::no_kernel_rdma_device:
    case FindingCode::verbs_provider_missing:
    case FindingCode::macos_without_rdma:
    case FindingCode::rdma_disabled:
    case FindingCode::no_rdma_device:
    case FindingCode::device_missing:
    case FindingCode::interfaces_unknown:
    case FindingCode::port_not_active:
    case FindingCode::netdev_elsewhere:
    case FindingCode::netdev_missing:
    case FindingCode::netdev_down:
    case FindingCode::bridge_member:
    case FindingCode::no_ipv4:
    case FindingCode::no_gids:
    case FindingCode::link_local_only:
    case FindingCode::address_without_gid:
    case FindingCode::stale_gid:
    case FindingCode::peer_unreachable:
    case FindingCode::peer_no_gid:
    case FindingCode::link_local_source:
    case FindingCode::peer_off_rdma:
    case FindingCode::stale_pin:
    case FindingCode::rank_unknown:
    case FindingCode::stock_stack_fails:
    case FindingCode::self_assigned:
    case FindingCode::shared_subnet:
    case FindingCode::mtu:
    case FindingCode::roce_mode:
    case FindingCode::port_down_unused:
    case FindingCode::bridge_unknown:
    case FindingCode::rdma_state_unknown:
      return true;
  }
  return false;
}
#pragma GCC diagnostic pop
consteval bool codes_counted() {
  for (std::size_t i = 0; i < kFindingCodeCount; ++i)
    if (!is_finding_code(static_cast<FindingCode>(i))) return false;
  return !is_finding_code(static_cast<FindingCode>(kFindingCodeCount));
}
static_assert(codes_counted(), "kFindingCodeCount must count to the last FindingCode (doctor.hpp)");
static_assert(std::size(kFindingRows) == kFindingCodeCount,
              "one row per FindingCode: a code was added or removed without its row (or the other way)");
static_assert(
    rows_in_enum_order(),
    "kFindingRows: row i must be the code of value i (the enum's order is the rank), names distinct");

/// The row of `c` (c is a FindingCode, so in range: the static_asserts above hold).
inline const FindingRow& row_of(FindingCode c) noexcept { return kFindingRows[static_cast<std::size_t>(c)]; }

}  // namespace gidpolicy::doctor_detail
