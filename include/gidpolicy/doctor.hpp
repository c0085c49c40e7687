// The doctor: is this host ready for RDMA, and exactly what to do if not — as a pure function
// from what was read (GID tables, the devices that did not answer, the interfaces and their
// addresses, the kernel's routes to the peers, the pins in the environment) to ranked findings,
// each with its cause, which program fails how without the fix, and the commands for the
// platform. Nothing here changes the host: the commands are printed, never run.
//
// What it compares, per port (the facts behind each check are in the comments of doctor.cpp):
//  * the port's state, and whether each verbs call answered in time (DoctorInput::failures);
//  * each GID's netdev against the interfaces of this network namespace (ENODEV at RTR when the
//    netdev lives in another one), and that netdev's addresses against the GIDs: an address
//    without its GID, a GID whose address is gone;
//  * a Thunderbolt port whose interface has no IPv4 (or only a self-assigned 169.254 one), a
//    port left with link-local GIDs only, an interface that is a member of a bridge;
//  * two ports on one IPv4 subnet, a netdev MTU below the port's active MTU, the default RoCE
//    mode against the GID types present;
//  * per peer: the kernel's route, whether it leaves through one of the ports' netdevs, whether
//    the GID a program would then use can reach it;
//  * what each stack (stacks.hpp) picks on each port, and whether the pins set are stale.
//
// Example:
//   std::vector<gidpolicy::HostInterface> interfaces;  // from read_interfaces(source)
//   gidpolicy::DoctorInput in;
//   in.tables = tables;                                // snapshots of every port
//   in.interfaces = interfaces;
//   in.platform = gidpolicy::Platform::darwin;
//   const gidpolicy::DoctorReport r = gidpolicy::examine(in);
//   for (const auto& f : r.findings)
//     std::cout << f.text << (f.fix.empty() ? "" : "\n  fix: " + f.fix.front()) << "\n";
//   if (!r.ready()) std::cout << r.blockers() << " cause(s) to fix before launch\n";
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/interfaces.hpp>
#include <gidpolicy/network.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

/// A device (or one of its ports) that could not be read: a verbs call that failed, or did not
/// answer within its deadline.
struct DeviceFailure {
  std::string device;
  std::uint32_t port = 0;  ///< 0: the device as a whole (open, list)
  std::string call;        ///< "ibv_query_port", ...
  bool timed_out = false;  ///< it did not answer within `deadline_ms`
  std::uint32_t deadline_ms = 0;
  std::string detail;  ///< what it failed with (when it answered)
};

/// The most peers the doctor routes (`doctor`'s --peer and its hostfile's addresses, and the
/// Python module's DoctorInput.peers): a hostfile's 4,096 hosts (its own bound) with four
/// addresses each. Each peer costs one route lookup (one rtnetlink request) and a pass over the
/// ports, so the bound keeps a whole run to about a second; more is refused, with the count.
///
/// Example:
///   std::vector<gidpolicy::DoctorPeer> peers(3);
///   const bool routed = peers.size() <= gidpolicy::kMaxRoutedPeers;  // the CLI refuses more
inline constexpr std::size_t kMaxRoutedPeers = 16'384;

/// A peer to check: its address, and where it was named ("--peer", "hostfile hosts[2].ips[0]").
struct DoctorPeer {
  PeerAddress address;
  std::string origin;
  /// The kernel's route to it, or the error its lookup failed with (no route, a refused peer).
  result<Route> route = fail(errc::no_route, "not looked up");
  /// true: RDMA goes to this address, so its route must leave through a port's netdev, from a
  /// GID that can reach it. false: an address the launcher reaches over TCP (a hostfile's
  /// "ips": ssh and JACCL's coordinator), which need only be reachable.
  bool rdma = true;
};

/// A pinned GID index in the environment: NCCL_IB_GID_INDEX=3 and friends (stacks.hpp), or a
/// stack's device variable (NCCL_IB_HCA==mlx5_1:1, device_variables()): a pin is then judged
/// only on the ports that stack uses (read_device_selector()); or any other variable that steers a
/// stack (launch_variables(): NCCL_IB_ADDR_FAMILY...), which the stacks block predicts with.
struct DoctorPin {
  std::string variable;
  std::string value;
};

/// How much a finding matters: a blocker makes the host not ready.
enum class Severity : std::uint8_t { blocker, warning, note };
std::string_view to_string(Severity s) noexcept;  ///< "blocker", "warning", "note"

/// Every kind of finding the doctor makes, in rank order: within one severity a finding listed
/// earlier is the more likely cause and is printed first (what stops everything else first, then
/// what a program meets first when it starts).
///
/// Each code has exactly one row in the doctor's table (src/doctor_findings.hpp): its JSON name,
/// severity, fix per platform and docs line. The table is checked against this enum when the
/// library compiles (one row per code, in this order), so a new code is: its enumerator here,
/// its row there, the check in doctor.cpp that makes it, and `scripts/update-docs` (docs/doctor.md's
/// table is generated). The gotcha this encodes: the codes used to be free strings, and a
/// mistyped one was ranked last without a word.
///
/// Example:
///   const gidpolicy::FindingCode c = gidpolicy::FindingCode::no_ipv4;
///   std::cout << gidpolicy::to_string(c) << "\n";                           // no_ipv4
///   if (gidpolicy::finding_code_from_string("no_ipv4") == c &&
///       gidpolicy::severity_of(c) == gidpolicy::Severity::blocker)
///     std::cout << "a host with it is not ready\n";
enum class FindingCode : std::uint8_t {
  no_answer,
  device_error,
  verbs_library_missing,
  no_kernel_rdma_device,
  verbs_provider_missing,
  macos_without_rdma,
  rdma_disabled,
  no_rdma_device,
  device_missing,
  interfaces_unknown,
  port_not_active,
  netdev_elsewhere,
  netdev_missing,
  netdev_down,
  bridge_member,
  no_ipv4,
  no_gids,
  link_local_only,
  address_without_gid,
  stale_gid,
  peer_unreachable,
  peer_no_gid,
  link_local_source,
  peer_off_rdma,
  stale_pin,
  rank_unknown,
  stock_stack_fails,
  self_assigned,
  shared_subnet,
  mtu,
  roce_mode,
  port_down_unused,
  bridge_unknown,
  rdma_state_unknown,  // the last one: kFindingCodeCount counts to it
};

/// How many codes there are (they run 0 .. kFindingCodeCount - 1, in rank order).
inline constexpr std::size_t kFindingCodeCount =
    static_cast<std::size_t>(FindingCode::rdma_state_unknown) + 1;

/// The code's stable JSON name: "no_ipv4", "stale_gid", ... (`doctor --json`'s "code"). A value
/// outside the enum is "unknown" (never a name of a code).
std::string_view to_string(FindingCode c) noexcept;
/// The code named `name` (as to_string writes it); nullopt for any other text.
std::optional<FindingCode> finding_code_from_string(std::string_view name) noexcept;
/// The code's severity, as its row gives it (a finding examine() makes always has it).
Severity severity_of(FindingCode c) noexcept;
/// "no_answer, device_error, ...": every code's name, in rank order (for an error listing them).
std::string finding_code_names();
/// docs/doctor.md's table of the checks, as Markdown between its doctor-findings:begin and
/// doctor-findings:end marker lines, one row per code in rank order (the severity beside the
/// code when not a blocker). scripts/update-docs writes it into docs/doctor.md; DoctorDocs.*
/// fails while the page holds another.
std::string doctor_findings_table();

/// One finding: what is wrong, why it matters (which program fails how), and the commands.
struct Finding {
  Severity severity = Severity::note;
  FindingCode code = FindingCode::no_answer;  ///< to_string(code) is the stable JSON name
  std::string device;                         ///< "" when not about one device
  std::uint32_t port = 0;
  std::string netdev;
  std::string text;              ///< one line: the cause
  std::string why;               ///< which program fails how without the fix
  std::vector<std::string> fix;  ///< commands (or steps), in order; "#" lines are comments
};

/// Why a live read found no RDMA device at all, as the host layer classified it from what the
/// host shows (read_no_device(), host_doctor.hpp): examine() turns it into one blocker with the
/// commands for the platform.
struct NoDevice {
  enum class Cause : std::uint8_t {
    library_missing,   ///< the verbs library (libibverbs.so.1, librdma.dylib) cannot be loaded
    no_kernel_device,  ///< the library lists none and /sys/class/infiniband lists none either
    provider_missing,  ///< the kernel lists devices, the library none: no provider or no uverbs node
  };
  Cause cause = Cause::no_kernel_device;
  std::string detail;                       ///< what the library said
  std::vector<std::string> kernel_devices;  ///< provider_missing: what /sys/class/infiniband lists
  bool uverbs_nodes = false;                ///< provider_missing: /dev/infiniband holds uverbsN
  std::string netdev;  ///< no_kernel_device: an interface of this host for soft-RoCE ("" none)
};

/// Everything the doctor judges. Tables come from live devices or a file (`from_file`: an
/// address without its GID then most likely appeared after the table was taken).
struct DoctorInput {
  std::vector<GidTable> tables;
  std::vector<DeviceFailure> failures;
  std::vector<HostInterface> interfaces;
  bool interfaces_known = true;  ///< false: reading them failed (`interfaces_error` says how)
  std::string interfaces_error;
  std::vector<DoctorPeer> peers;
  /// Addresses the peers hold besides the routed ones (the hostfile's, a device file's hosts):
  /// an address proposal never collides with one of these.
  std::vector<Gid> peer_addresses;
  /// Devices this host must have (its row of a JACCL device file or hostfile), with the origin.
  std::vector<std::pair<std::string, std::string>> required_devices;
  std::vector<DoctorPin> pins;
  /// Findings the caller made itself, with their own text and fix: ranked with the others by
  /// their code (their severity is the caller's; severity_of() is the table's).
  std::vector<Finding> extra;
  /// The device file or hostfile that was to say which row is this host's, when none of its rows
  /// names this host (no address of it, not its name) and no rank was given: examine() reports
  /// `rank_unknown` with the command that gives the rank.
  struct UnknownRank {
    std::string file;    ///< the file, as given
    std::string option;  ///< the option that named it, without dashes: "hostfile", "jaccl-devices"
    std::string host;    ///< this host's name, as the text quotes it
  };
  std::optional<UnknownRank> unknown_rank;
  Platform platform = Platform::linux_kernel;
  bool from_file = false;
  /// macOS: what `rdma_ctl status` said (true "enabled", false "disabled"); nullopt when it was
  /// not asked (Linux, a table file) or could not be read (`rdma_state_error` says why).
  std::optional<bool> rdma_enabled;
  std::string rdma_state_error;
  /// Live reads that found no device: why (nullopt when devices were listed or not asked).
  std::optional<NoDevice> no_device;
  /// macOS, from a host bundle (bundle.hpp): the highest Thunderbolt generation system_profiler
  /// reports and its speed text ("Up to 40 Gb/s"); RDMA over Thunderbolt needs generation 5.
  /// nullopt when not known (live reads do not ask).
  std::optional<unsigned> thunderbolt_generation;
  std::string thunderbolt_speed;
  /// macOS, from a host bundle: whether its release (sw_vers, `release`) has RDMA over
  /// Thunderbolt (26.2 or later); nullopt when not known.
  std::optional<bool> rdma_release;
  std::string release;
  /// true: the tables describe the host whose interfaces, routes, pins and rdma_ctl state are in
  /// this input (live reads; the real sysfs; a table declared this host's). false: they are
  /// another host's (a pasted table): examine() judges only what the tables say themselves (a
  /// Thunderbolt port with only link-local GIDs has no IPv4 address), ignores `interfaces`,
  /// `peers` and `pins`, and lists what it could not check in DoctorReport::not_checked.
  bool host_checked = true;
};

/// One port as the report's header shows it.
struct PortSummary {
  std::string device;
  std::uint32_t port = 0;
  std::string state;
  std::string link_layer;
  std::vector<std::string> netdevs;  ///< the netdevs its GIDs are bound to
  std::size_t gids = 0;              ///< usable GIDs
  std::size_t routable = 0;          ///< usable GIDs that are not link-local
};

/// What one stack picks on one port (stacks.hpp), one line each.
struct StackLine {
  std::string stack;
  std::string device;
  std::uint32_t port = 0;
  bool chose = false;
  std::uint32_t index = 0;
  bool works = false;
  std::string outcome;
};

/// One peer's route as the report shows it.
struct PeerLine {
  std::string peer;
  std::string origin;
  bool routed = false;
  std::string netdev;  ///< the route's output netdev
  std::string source;  ///< its preferred source address ("" none)
  std::string port;    ///< "rdma_en3 port 1" when the netdev is a port's; "" otherwise
  bool leaves_host = false;
  std::string summary;
};

struct DoctorReport {
  std::vector<PortSummary> ports;
  std::vector<Finding> findings;  ///< blockers first, most likely cause first, then warnings
  std::vector<StackLine> stacks;
  std::vector<PeerLine> peers;
  /// What needed more than the tables and was not checked (DoctorInput::host_checked false), in
  /// this order: "interfaces", "bridge_membership", "routes", "pins", "rdma_ctl" (macOS).
  std::vector<std::string> not_checked;
  [[nodiscard]] bool ready() const noexcept;
  [[nodiscard]] std::size_t blockers() const noexcept;
};

/// Judge `in`. Pure and bounded by its input (tables x interfaces x peers).
DoctorReport examine(const DoctorInput& in);

/// The address the doctor proposes for the `ordinal`-th interface that needs one: a /30 in
/// 192.168.0.0/16 (as mlx.distributed_config --auto-setup uses), never 169.254/16, whose
/// subnet overlaps none of `taken` (the host's subnets and the peers' addresses, each with its
/// prefix). nullopt when every one is taken.
std::optional<IfAddress> propose_address(const std::vector<IfAddress>& taken, unsigned ordinal);

}  // namespace gidpolicy
