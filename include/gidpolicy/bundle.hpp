// A host bundle: what `gidpolicy-collect` (a POSIX sh script, tools/collect/) wrote on a Mac or a
// Linux host: its own tools' outputs, each in a delimited part with its exit status. Read here
// into the values the doctor judges (doctor.hpp), so that `gidpolicy doctor --bundle FILE`
// judges *that* host on any machine: its RDMA ports, interfaces and addresses, bridge
// membership, routes, RDMA switch, Thunderbolt generation and RDMA variables. docs/bundle.md
// has the format and every tool's output format, with public examples.
//
// Hardware/OS facts encoded here:
//  * A bundle is one moment of one host: its GID tables and its interfaces were read together,
//    so an address without its GID is not explained away as "the table is older".
//  * A missing tool is not an error: a part that exited non-zero (127: not installed) is what
//    the host could not tell, said as such (a note, or the finding it leaves unchecked). A part
//    whose command succeeded but whose output is malformed is an error naming the part and line.
//  * On a Mac, rdma_enN is the port of interface enN; the IPv4-mapped GID appears only once enN
//    itself (not bridge0) holds an IPv4 address. `rdma_ctl status` says whether RDMA is on;
//    `system_profiler SPThunderboltDataType` says the Thunderbolt generation (RDMA needs 5).
//  * On Linux, the sysfs GID files name each GID's netdev (ibv_devinfo does not), so they are
//    preferred; the kernel listing devices that libibverbs does not is a missing provider.
//
// Example:
//   auto bundle = gidpolicy::parse_bundle("# gidpolicy-collect 1\n# system: Darwin 25.2.0 arm64\n"
//                                         "=== begin rdma_ctl: rdma_ctl status\ndisabled\n"
//                                         "=== end rdma_ctl: exit 0\n",
//                                         "mac.bundle");
//   if (!bundle) return bundle.error();
//   auto host = gidpolicy::read_bundle_host(bundle.value());
//   if (!host) return host.error();
//   gidpolicy::DoctorInput in = gidpolicy::doctor_input(host.value());
//   const gidpolicy::DoctorReport r = gidpolicy::examine(in);   // rdma_disabled: not ready
//   std::cout << (r.ready() ? "ready\n" : "not ready\n");
#pragma once

#include <gidpolicy/doctor.hpp>
#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/interfaces.hpp>
#include <gidpolicy/network.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gidpolicy {

/// The bundle format version this library writes and reads ("# gidpolicy-collect 1").
inline constexpr unsigned kBundleVersion = 1;
/// The most bytes of bundle read (a Linux host with 16 ports is about 1 MB).
inline constexpr std::size_t kMaxBundleBytes = std::size_t{16} << 20;
/// The most parts a bundle holds (the collector writes at most a dozen).
inline constexpr std::size_t kMaxBundleParts = 64;

/// One part: one command's output, as the collector framed it.
struct BundlePart {
  std::string name;      ///< "ifconfig", "ip_addr", ...: [a-z0-9_], unique in the bundle
  std::string command;   ///< what ran, as the begin line says ("ifconfig -a")
  std::size_t line = 0;  ///< the bundle line of its begin line (output line k is line + k)
  std::string output;    ///< its standard output, each line ending in '\n'
  std::string errors;    ///< its standard error
  int exit_status = 0;   ///< 127: the tool is not installed
  /// The output, when the command succeeded: exit 0.
  [[nodiscard]] bool ran() const noexcept { return exit_status == 0; }
  /// "exit 127: sh: rdma_ctl: not found", for a note on what the host could not tell.
  [[nodiscard]] std::string failure() const;
};

/// A bundle as framed: its header lines and its parts, nothing read yet.
struct Bundle {
  unsigned version = kBundleVersion;
  std::string source;  ///< the file it came from, as errors name it
  std::string host;    ///< "# host:" ("" when absent)
  std::string system;  ///< "# system:" (uname -srm: "Darwin 25.2.0 arm64")
  std::string date;    ///< "# date:"
  std::vector<BundlePart> parts;
  /// The part named `name`, or nullptr.
  [[nodiscard]] const BundlePart* part(std::string_view name) const noexcept;
  /// The platform the system line names (Darwin: macOS; Linux), else the one its parts are
  /// from (ifconfig or rdma_ctl: macOS; ip_addr or sysfs_gids: Linux); nullopt when neither says.
  [[nodiscard]] std::optional<Platform> platform() const noexcept;
};

/// Frame `text` (a bundle file's contents; `source` names it in errors). The first line that is
/// neither blank nor a Markdown fence (a bundle pasted into an issue keeps its ``` lines) must be
/// "# gidpolicy-collect N" with N at most kBundleVersion; "#" lines outside parts are header
/// lines or comments; each part is "=== begin NAME: COMMAND", its output, optionally
/// "=== stderr NAME" and its error lines, then "=== end NAME: exit N". An output line that
/// starts with spaces and "===" had one space added by the collector, which is taken off.
/// Errors (errc::parse_error, naming the line): another first line, a newer version, text
/// outside a part, a part left open, a mismatched or repeated name, a bad exit status, more
/// than kMaxBundleParts parts or kMaxBundleBytes bytes, a NUL byte.
result<Bundle> parse_bundle(std::string_view text, std::string source);

/// parse_bundle() of a file, read bounded by `max_bytes` (a regular file only).
result<Bundle> read_bundle_file(const std::string& path, std::size_t max_bytes = kMaxBundleBytes);

/// A route of the host's routing table, as `ip -j route` or `netstat -rn -f inet` lists it.
struct BundleRoute {
  /// "default" is 0.0.0.0/0 (::/0); IPv4 as ::ffff:a.b.c.d with its prefix in IPv4 bits (as
  /// IfAddress: 24 for a /24).
  IfAddress destination;
  bool ipv4 = true;
  std::string netdev;         ///< "" for a route through no interface (a blackhole)
  std::optional<Gid> source;  ///< its preferred source (Linux "prefsrc"), when the listing says
  std::optional<Gid> gateway;
  RouteType type = RouteType::unicast;
};

/// What a bundle says about its host, read from its parts.
struct BundleHost {
  Platform platform = Platform::linux_kernel;
  std::string host;    ///< its name
  std::string system;  ///< "macOS 26.2 (25C56)", "Debian GNU/Linux 12 (bookworm)"; else the uname line
  std::vector<GidTable> tables;
  std::string tables_from;            ///< the part the tables came from ("" when none)
  std::optional<NoDevice> no_device;  ///< Linux: why no device is listed (as read_no_device says live)
  std::vector<HostInterface> interfaces;
  bool interfaces_known = false;
  std::string interfaces_error;  ///< why not ("part ifconfig: exit 127: ...")
  std::vector<BundleRoute> routes;
  bool routes_known = false;
  std::optional<bool> rdma_enabled;  ///< macOS: rdma_ctl status
  std::string rdma_state_error;
  /// macOS: the highest Thunderbolt generation system_profiler reports (5: RDMA capable).
  std::optional<unsigned> thunderbolt_generation;
  std::string thunderbolt_speed;  ///< its speed text, as shown ("Up to 40 Gb/s")
  /// macOS: whether its release can do RDMA over Thunderbolt (26.2 or later); nullopt: unknown.
  std::optional<bool> rdma_release;
  std::string release;  ///< macOS: sw_vers' ProductVersion ("26.2")
  /// macOS: the interfaces `networksetup -listallhardwareports` names "Thunderbolt N" (each with
  /// an rdma_enN device on a Thunderbolt 5 Mac with RDMA enabled).
  std::vector<std::string> thunderbolt_interfaces;
  /// macOS: whether the "Thunderbolt Bridge" network service is enabled (it takes the
  /// Thunderbolt interfaces into bridge0); nullopt when the bundle does not say.
  std::optional<bool> thunderbolt_bridge_service;
  /// The RDMA variables of its environment (NCCL_, UCX_, MC_, FI_, JACCL_, MLX_, GGML_, NVSHMEM_,
  /// DS4_), in the order listed.
  std::vector<std::pair<std::string, std::string>> environment;
  /// What the bundle could not tell, one line each ("rdma_ctl: exit 127: ...").
  std::vector<std::string> notes;
};

/// Read every part a platform's collector writes. Parts that did not run are notes (and leave
/// their facts unknown); parts that ran are read by their tool's reader (darwin_tools.hpp,
/// formats/) and an error in one is an error here: errc::parse_error/invalid_field naming
/// the bundle, the part, the bundle line of the part and the reader's own detail.
result<BundleHost> read_bundle_host(const Bundle& bundle);

/// The doctor's input for that host: its tables, interfaces, RDMA switch, Thunderbolt
/// generation and release, the pins and device variables of its environment
/// (pin_variables(), device_variables()); judged as that host's (host_checked), one moment
/// (not from_file). Peers are the caller's: route them with BundleRoutes.
DoctorInput doctor_input(const BundleHost& host);

/// The bundle's routing table as a RouteSource: the longest prefix that covers the peer, of its
/// family (the kernel's rule without policy routing, metrics or multipath; docs/bundle.md).
///
/// Example:
///   gidpolicy::BundleHost host;  // from read_bundle_host()
///   gidpolicy::BundleRoutes routes(host);
///   auto r = routes.route_to(gidpolicy::PeerAddress::parse("192.168.200.2").value());
class BundleRoutes final : public RouteSource {
 public:
  explicit BundleRoutes(const BundleHost& host) : host_(host) {}
  result<std::vector<NetInterface>> interfaces() override;
  result<Route> route_to(const PeerAddress& peer) override;

 private:
  const BundleHost& host_;
};

}  // namespace gidpolicy
