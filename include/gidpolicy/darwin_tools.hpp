// What a Mac's own command-line tools print, read as values on any machine: `ifconfig -a`,
// `networksetup -listallhardwareports` and `-listnetworkserviceorder`, `netstat -rn -f inet`,
// `system_profiler SPThunderboltDataType` and `sw_vers`. A host bundle (docs/bundle.md) carries
// these outputs from a Mac; these pure readers turn them into the values the doctor judges, so
// a Mac is judged on Linux from its text. Each reader bounds its input (kMaxToolOutputBytes,
// darwin.hpp), refuses a malformed field of a line it reads with the line (1-based, counted in
// the text given) and the field, and passes over lines it knows to be irrelevant; what each one
// reads and skips is said at its declaration.
//
// Hardware/OS facts encoded here:
//  * `ifconfig` leaves RUNNING among the flags of a Thunderbolt port with no cable: its
//    "status: inactive" line is what says the link is not there (a HostInterface read here is
//    running only when both agree).
//  * A Thunderbolt Bridge member (bridge0's "member: en2 ..." line) carries the bridge's
//    traffic: its own addresses are not used, and Apple's driver gives its RDMA port no
//    IPv4-mapped GID.
//  * `networksetup` names a Mac's Thunderbolt ports "Thunderbolt 1", "Thunderbolt 2"... (one
//    enN each) and the bridge over them "Thunderbolt Bridge" (bridge0); a disabled network
//    service is listed as "(*) Name", with no order number.
//  * `netstat -rn` abbreviates destinations as BSD's netstat always has (netname()/domask() in
//    its route.c): trailing zero octets are dropped down to the address's class, and "/N" is
//    printed only when the mask is not the classful one, so "169.254" is 169.254/16, "127" is
//    127/8, "192.168.3" is 192.168.3/24 and "10/24" is 10.0.0.0/24. Host routes (flag H) print
//    the whole address.
//  * `system_profiler SPThunderboltDataType` prints, per bus, "Speed: Up to N Gb/s" for an idle
//    port (what the port can do: 40 on Thunderbolt 3/4 Macs, 120 on Thunderbolt 5 Macs) and
//    "Speed: N Gb/s" for a linked one (what the link negotiated: 80 between Thunderbolt 5 Macs,
//    40 when the peer or cable is Thunderbolt 3/4). RDMA over Thunderbolt needs Thunderbolt 5
//    (M4 Pro/Max, M5 Pro/Max, M3 Ultra); a Thunderbolt 4 Mac with RDMA enabled lists no RDMA device.
//  * RDMA over Thunderbolt arrived in macOS 26.2: `sw_vers` says which release a Mac runs.
//
// Example:
//   auto ifs = gidpolicy::darwin::ifconfig_interfaces(
//       "en2: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
//       "\tinet 192.168.200.1 netmask 0xfffffffc broadcast 192.168.200.3\n"
//       "\tstatus: active\n");
//   if (!ifs) return ifs.error();        // names the line and the field
//   bool v4 = ifs.value()[0].has_ipv4(); // true: ::ffff:192.168.200.1/30
//   auto v = gidpolicy::darwin::mac_version("ProductName:\t\tmacOS\nProductVersion:\t\t26.2\n"
//                                           "BuildVersion:\t\t25C56\n");
//   bool rdma_os = v && gidpolicy::darwin::rdma_release(v.value());   // true
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/interfaces.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::darwin {

/// The interfaces `ifconfig -a` lists, in its order. Read: each block's first line
/// ("en2: flags=8863<UP,...,RUNNING,...> mtu 1500", with " index N" on recent releases): up,
/// running and loopback from the flag names, the MTU, the index; "inet A netmask 0xffffff00
/// [broadcast B | --> P]" (IPv4 as ::ffff:A, the prefix from the hex mask); "inet6 ADDR[%SCOPE]
/// prefixlen N ... scopeid 0xI" (the scope suffix dropped; the scope id, KAME's interface index,
/// is the index when the first line gave none); "status: inactive" (clears running: macOS keeps
/// RUNNING on a port with no link); bridge membership from "member: enN" lines (bridge_members(),
/// darwin.hpp). Every other indented line (options, ether, media, nd6...) is skipped.
/// Errors (errc::invalid_argument, naming the line and field): more than kMaxToolOutputBytes,
/// kMaxInterfaces or kMaxAddressesPerInterface; an unindented line that is not an interface's
/// first line; an indented line before any interface; a name that breaks the netdev name rule;
/// an interface listed twice; a malformed flags, mtu, address, prefix length, scope id or
/// netmask; a netmask that is not a prefix (1s then 0s); a scope id other than the index.
result<std::vector<HostInterface>> ifconfig_interfaces(std::string_view ifconfig_a);

/// One entry of `networksetup -listallhardwareports`.
struct HardwarePort {
  std::string port;     ///< "Thunderbolt 1", "Thunderbolt Bridge", "Wi-Fi"
  std::string device;   ///< "en2", "bridge0"
  std::string address;  ///< the "Ethernet Address" as printed ("36:d9:a8:3e:97:00", "N/A")
  friend bool operator==(const HardwarePort&, const HardwarePort&) = default;
};

/// The hardware ports `networksetup -listallhardwareports` lists, in its order: blocks of
/// "Hardware Port: NAME", "Device: enN", "Ethernet Address: ADDR". The "VLAN Configurations"
/// tail and everything after it is not read (VLANs are not RDMA ports); another "Key: value"
/// line is skipped. Errors (errc::invalid_argument, naming the line): more than
/// kMaxToolOutputBytes or kMaxInterfaces ports; a line that is no "Key: value"; a Device or
/// Ethernet Address line before any Hardware Port line, or given twice; a port without a
/// Device line; a port name that breaks the host name rule (names.hpp), a device that breaks the
/// netdev name rule, an address that is neither six hex bytes nor "N/A".
result<std::vector<HardwarePort>> hardware_ports(std::string_view listallhardwareports);

/// Whether `p` is one of the Mac's Thunderbolt ports, "Thunderbolt N" (an enN with an RDMA
/// device rdma_enN on a Thunderbolt 5 Mac), not the "Thunderbolt Bridge" over them nor an
/// adapter's "Thunderbolt Ethernet Slot N".
bool is_thunderbolt_port(const HardwarePort& p) noexcept;

/// One entry of `networksetup -listnetworkserviceorder`.
struct NetworkService {
  unsigned order = 0;   ///< the "(N)" it is listed with; 0 for a disabled service ("(*)")
  std::string name;     ///< the service's name ("Thunderbolt Bridge", "USB 10/100/1000 LAN 2")
  bool enabled = true;  ///< false for "(*) Name"
  std::string port;     ///< its hardware port ("Thunderbolt Bridge")
  std::string device;   ///< its device ("bridge0"); "" when it has none (a VPN)
  friend bool operator==(const NetworkService&, const NetworkService&) = default;
};

/// The services `networksetup -listnetworkserviceorder` lists, in its order: "(N) Name" or
/// "(*) Name", then "(Hardware Port: PORT, Device: DEV)". Its header line ("An asterisk (*)
/// denotes that a network service is disabled.") and blank lines are skipped. Errors
/// (errc::invalid_argument, naming the line): more than kMaxToolOutputBytes or kMaxInterfaces
/// services; any other line; a Hardware Port line without a service line before it, or a service
/// without one; a number that is not 1-999, a name breaking the host name rule, a device breaking
/// the netdev name rule.
result<std::vector<NetworkService>> network_services(std::string_view listnetworkserviceorder);

/// One route of `netstat -rn -f inet`.
struct RouteLine {
  IfAddress destination;  ///< ::ffff:a.b.c.d with the IPv4 prefix length (0 for default)
  bool is_default = false;
  std::string gateway;  ///< as printed: "192.168.1.1", "link#9", "a4:9b:4e:9f:ea:18", "utun0"
  std::string flags;    ///< as printed: "UGScg", "UHLWIi"
  std::string netif;    ///< "en2"
  friend bool operator==(const RouteLine&, const RouteLine&) = default;
};

/// The IPv4 routes of `netstat -rn -f inet` (or of `netstat -rn`: its "Internet6:" part is not
/// read). Read: the rows after the "Internet:" line and the column header ("Destination Gateway
/// Flags Netif Expire", or with "Refs Use" before Netif as releases before 10.15 print it),
/// each "DEST GATEWAY FLAGS [REFS USE] NETIF [EXPIRE]"; DEST as netstat abbreviates it ("default",
/// "127", "169.254", "10/8", "192.168.200/30", "192.168.1.255/32", a host route's whole address
/// under flag H). The Expire column (seconds or "!") is not read; "Routing tables" and blank
/// lines are skipped. Errors (errc::invalid_argument, naming the line and field): more than
/// kMaxToolOutputBytes or kMaxInterfaces * 64 routes; a row before the column header; a row with
/// too few or too many columns; a destination that is not an abbreviation netstat prints (an
/// octet above 255, fewer octets than its class prints, a mask "&0x..." that is no prefix, set
/// bits past the prefix, a host route that is not four octets); flags that are not letters and
/// digits; an interface that breaks the netdev name rule; a gateway of control characters.
result<std::vector<RouteLine>> netstat_routes(std::string_view netstat_rn);

/// One port a Thunderbolt bus lists (the Mac's own receptacle, not the ports of devices down
/// the chain).
struct ThunderboltPort {
  std::string status;       ///< "Device connected", "No device connected"
  std::string speed;        ///< the Speed line as printed: "Up to 40 Gb/s x1", "80 Gb/s"
  unsigned gbps = 0;        ///< its number: 40, 80, 120 (0 when the port printed no Speed line)
  unsigned lanes = 1;       ///< the "xN" after it (1 when none)
  bool capability = false;  ///< "Up to": what the idle port can do, not a link's negotiated speed
  unsigned receptacle = 0;  ///< "Receptacle: N" (0 when not printed)
  friend bool operator==(const ThunderboltPort&, const ThunderboltPort&) = default;
};

/// One Thunderbolt bus of `system_profiler SPThunderboltDataType`.
struct ThunderboltBus {
  std::string name;                    ///< "Thunderbolt/USB4 Bus 1" (Intel Macs: "Thunderbolt Bus 0")
  std::string device_name;             ///< the bus's "Device Name" ("Mac mini"), "" when not printed
  std::vector<ThunderboltPort> ports;  ///< the bus's own "Port:" blocks
  std::string connected;               ///< the first device down the chain ("Mac Studio"), "" for none
  friend bool operator==(const ThunderboltBus&, const ThunderboltBus&) = default;
};

/// What `system_profiler SPThunderboltDataType` says about a Mac's Thunderbolt buses.
struct ThunderboltInfo {
  std::vector<ThunderboltBus> buses;
  friend bool operator==(const ThunderboltInfo&, const ThunderboltInfo&) = default;
};

/// The buses of `system_profiler SPThunderboltDataType` text output: each "... Bus N:" heading,
/// its "Device Name", the "Port:" blocks at its own indentation ("Status", "Speed", "Receptacle")
/// and the first heading below them (the connected device). Other keys (UID, Link Status,
/// firmware versions...) and everything below a connected device (its ports and services) are
/// skipped. Errors (errc::invalid_argument, naming the line): more than kMaxToolOutputBytes,
/// 64 buses or 64 ports a bus; a line without a colon; a tab in the indentation; a Port heading
/// outside a bus; a Speed that is not "[Up to ]N Gb/s[ xL]", a Receptacle that is not a number.
result<ThunderboltInfo> thunderbolt_info(std::string_view system_profiler_output);

/// Which Thunderbolt generation the buses show: 5 when any of the Mac's own ports reports 80
/// Gb/s or more (idle TB5 ports say "Up to 120 Gb/s", linked ones "80 Gb/s"); 4 when none does
/// and an idle port says what it can do ("Up to 40 Gb/s": Thunderbolt 3 and 4 Macs both say
/// 40, and neither has RDMA, so both read as 4); nullopt when it cannot tell: no bus, no Speed,
/// or only linked ports at 40 Gb/s or less (a Thunderbolt 5 port linked to a Thunderbolt 4 peer
/// or cable says "40 Gb/s" too).
std::optional<unsigned> thunderbolt_generation(const ThunderboltInfo& info) noexcept;

/// What `sw_vers` says.
struct MacVersion {
  std::string product;  ///< "macOS" ("Mac OS X" on old releases)
  std::string version;  ///< "26.2", "15.7.1"
  std::string build;    ///< "25C56"
  friend bool operator==(const MacVersion&, const MacVersion&) = default;
};

/// `sw_vers` output: its ProductName, ProductVersion and BuildVersion lines ("Key:<tabs>value").
/// Other keys (ProductVersionExtra) are skipped. Errors (errc::invalid_argument, naming the
/// line): more than kMaxToolOutputBytes; a line that is no "Key: value"; a key given twice; no
/// ProductVersion line; a version that is not 1-3 dot-separated numbers of at most 5 digits; a
/// name or build that breaks the host name rule.
result<MacVersion> mac_version(std::string_view sw_vers);

/// Whether `v` is a release with RDMA over Thunderbolt: 26.2 or later, compared number by number
/// (26.10 is later than 26.2; 27.0 is later). false for a version mac_version() would refuse.
bool rdma_release(const MacVersion& v) noexcept;

}  // namespace gidpolicy::darwin
