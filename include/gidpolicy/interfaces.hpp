// Interfaces and their addresses, as getifaddrs() reports them on Linux and on macOS, turned into
// values `gidpolicy doctor` (doctor.hpp) compares with the GID tables; and the seam they come
// through (InterfaceSource), so that a test can hand in Darwin's records on a Linux machine.
//
// Why a seam of raw records rather than of finished values: what differs between the platforms
// is numbers (AF_INET6 is 10 on Linux and 30 on Darwin, AF_LINK/AF_PACKET, the errno a route
// lookup fails with), and a test that feeds Darwin's numbers through the same conversion the
// live macOS source uses checks that conversion, not a copy of it. The live source
// (SystemInterfaces, <gidpolicy/system_interfaces.hpp>) is in the `host` layer; everything here
// is pure.
//
// Hardware/OS facts encoded here:
//  * A RoCE or Thunderbolt port's IP-based GIDs follow its netdev's addresses: the kernel (and
//    Apple's driver) adds ::ffff:a.b.c.d for each IPv4 address and one GID per IPv6 address,
//    and removes them with the address. An interface without IPv4 has no IPv4-mapped GID.
//  * macOS self-assigns 169.254/16 (IPv4 link-local, RFC 3927) to an interface set to DHCP that
//    gets no answer: it arrives seconds to minutes after the link and may differ after a
//    reboot, so a GID made from it is not one to rely on.
//  * Apple's Thunderbolt Bridge (bridge0) takes Thunderbolt interfaces as members; a member
//    carries the bridge's traffic, not its own addresses.
//
// Example:
//   std::vector<gidpolicy::IfAddrRecord> recs(1);   // what getifaddrs() listed
//   recs[0].name = "en3";
//   recs[0].family = 2;                              // AF_INET (the same number on both)
//   recs[0].address = {10, 0, 0, 7};
//   recs[0].netmask = {255, 255, 255, 0};
//   auto ifs = gidpolicy::interfaces_from_ifaddrs(recs, gidpolicy::Platform::darwin);
//   if (!ifs) return ifs.error();
//   for (const auto& i : ifs.value()) std::cout << i.name << (i.has_ipv4() ? " has IPv4\n" : "\n");
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/network.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gidpolicy {

/// One address of an interface: IPv4 as ::ffff:a.b.c.d, with its prefix length in its own
/// family's bits (24 for a /24 IPv4 address, 64 for an IPv6 /64).
struct IfAddress {
  Gid address;
  unsigned prefix = 0;
  friend bool operator==(const IfAddress&, const IfAddress&) = default;
};

/// One interface and what the doctor compares: flags, MTU, bridge membership, addresses.
struct HostInterface {
  std::string name;
  std::uint32_t ifindex = 0;  ///< 0 when the source did not say
  bool up = false;            ///< IFF_UP: configured up
  bool running = false;       ///< IFF_RUNNING: the link is there (cable, peer)
  bool loopback = false;
  std::uint32_t mtu = 0;  ///< bytes; 0 when unknown
  std::string bridge;     ///< the bridge it is a member of ("bridge0"); "" for none or unknown
  /// Why membership is unknown ("" when the source could tell): another namespace's sysfs, an
  /// `ifconfig` that failed. The doctor says so instead of reading "" as "no bridge".
  std::string bridge_unknown;
  std::vector<IfAddress> addresses;

  /// Holds an IPv4 address (of any kind, 169.254/16 included).
  [[nodiscard]] bool has_ipv4() const noexcept;
  /// Holds an IPv4 address outside 169.254/16 (one an operator or DHCP gave it).
  [[nodiscard]] bool has_assigned_ipv4() const noexcept;
  /// Holds `a` (compared as a GID: IPv4 as ::ffff:a.b.c.d).
  [[nodiscard]] bool holds(const Gid& a) const noexcept;
  friend bool operator==(const HostInterface&, const HostInterface&) = default;
};

/// One record as getifaddrs() lists it (one per interface and address family), with the
/// platform's own numbers: the address family (ifa_addr->sa_family), the interface flags
/// (ifa_flags) and the address and netmask bytes (4 for AF_INET, 16 for AF_INET6, empty for the
/// link-level record). mtu and ifindex are what the source learnt besides (SIOCGIFMTU,
/// if_nametoindex); bridge the bridge the interface is a member of, when the source knows.
struct IfAddrRecord {
  std::string name;
  std::uint32_t flags = 0;
  int family = 0;
  std::vector<std::uint8_t> address;
  std::vector<std::uint8_t> netmask;
  std::uint32_t mtu = 0;
  std::uint32_t ifindex = 0;
  std::string bridge;
  std::string bridge_unknown;  ///< why the source could not tell membership ("" when it could)
};

/// The numbers of a platform's <sys/socket.h> and <net/if.h> the conversion reads.
struct IfaddrsNumbers {
  int af_inet = 2;
  int af_inet6 = 0;
  std::uint32_t iff_up = 0x1, iff_loopback = 0x8, iff_running = 0x40;
  /// Linux: AF_INET6 10 (AF_PACKET 17 is the link-level record). Darwin: AF_INET6 30 (AF_LINK
  /// 18). IFF_UP, IFF_LOOPBACK and IFF_RUNNING have the same values on both.
  static IfaddrsNumbers for_platform(Platform p) noexcept;
};

/// Bounds on what interfaces_from_ifaddrs() accepts (a host has tens of records, a switch-like
/// box a few thousand).
inline constexpr std::size_t kMaxIfAddrRecords = 16384;
inline constexpr std::size_t kMaxInterfaces = 4096;
inline constexpr std::size_t kMaxAddressesPerInterface = 256;

/// The interfaces of `records`, in first-seen order, numbers read as `platform` defines them.
/// Records of other families (link-level) contribute flags, MTU and bridge only. Errors
/// (errc::invalid_argument, naming the record): more records, interfaces or addresses than the
/// bounds above; a name that breaks the netdev name rule (names.hpp); an address whose length
/// is not its family's; a netmask that is not a prefix (1s then 0s).
result<std::vector<HostInterface>> interfaces_from_ifaddrs(std::span<const IfAddrRecord> records,
                                                           Platform platform);

/// The kernel's answer to a route lookup that failed, read with `platform`'s errno numbers, as
/// network.hpp's RouteType (Linux's rtnetlink: EINVAL blackhole, EHOSTUNREACH unreachable,
/// EACCES prohibit; Darwin's routing socket: ESRCH "not in table", EHOSTUNREACH (65) for a
/// reject route, ENETUNREACH (51)). errc::no_route when the answer is "no route at all";
/// another errno is returned as the error it is, its name in the platform's numbering.
result<Route> route_from_errno(Platform platform, const PeerAddress& peer, int err);

/// Where interfaces come from: this host (SystemInterfaces) or a test's records.
class InterfaceSource {
 public:
  virtual ~InterfaceSource() = default;
  /// The platform whose numbers the records carry.
  [[nodiscard]] virtual Platform platform() const = 0;
  /// What getifaddrs() lists. Errors: what the source failed with, naming the call.
  virtual result<std::vector<IfAddrRecord>> records() = 0;
};

/// records() through interfaces_from_ifaddrs() with the source's platform.
result<std::vector<HostInterface>> read_interfaces(InterfaceSource& source);

}  // namespace gidpolicy
