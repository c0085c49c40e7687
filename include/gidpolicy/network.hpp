// NetworkView: what the caller's network namespace holds (its interfaces, and the kernel's route
// to each peer), as a value policies can rank with; RouteSource: where it comes from.
//
// Hardware/kernel gotchas encoded here:
//  * A GID is bound to a netdev (ibv_gid_entry::ndev_ifindex, sysfs gid_attrs/ndevs). In a
//    container the RDMA device may list GIDs whose netdev lives in another network namespace:
//    RTR from them fails with ENODEV (kernel rdma_fill_sgid_attr). Such an entry is "invisible":
//    auto ranks it below every visible candidate and says so in the trace.
//  * rdma_cm (the kernel's connection manager) takes IP addresses, not a GID index: it asks the
//    kernel's routing table for the route to the peer (output netdev, preferred source address)
//    and then needs a GID holding exactly that source address, of the port's default RoCE type,
//    bound to exactly that netdev; none is ENODEV. RouteSource asks the kernel the same question
//    over rtnetlink (RTM_GETROUTE, what `ip route get ADDR` does) without librdmacm, and
//    auto:peer=ADDR decides as rdma_cm does (policies/ranked.hpp has the rule): the GID holding
//    the source address on the route's netdev, else another GID of the peer's family on that
//    netdev (the trace says rdma_cm would refuse it), else a refusal naming the netdev. Never a
//    GID of another netdev: RoCE sends from the GID's netdev, so it would leave by the wrong
//    interface.
//  * Peers rdma_cm would not route to a remote host are refused before the kernel is asked
//    (check_peer) or once its answer is known (check_route), each with the reason:
//      - unspecified (0.0.0.0/8, ::) and loopback (127.0.0.0/8, ::1): rdma_cm does not route
//        them at all; it binds a loopback connection to the first RDMA port that is active (its
//        GID index 0) on this host. There is no peer to choose a GID for.
//      - one of this host's own addresses (the kernel's route is `local`, through lo): rdma_cm
//        binds to the netdev holding it and connects the host to itself.
//      - multicast (224.0.0.0/4, ff00::/8), the limited broadcast 255.255.255.255 and a
//        subnet's broadcast or anycast address (routes `broadcast`/`anycast`): they name a
//        group, not one peer; rdma_cm joins multicast groups with rdma_join_multicast (UD), and
//        its listener refuses connection requests whose addresses are multicast, limited
//        broadcast, zero or loopback.
//      - blackhole, unreachable, prohibit and throw routes, and no route at all
//        (errc::no_route): the kernel's route lookup fails (EINVAL, EHOSTUNREACH, EACCES,
//        ENETUNREACH), and so would rdma_resolve_addr.
//  * IPv6 link-local peers (fe80::/10, what Thunderbolt peers are) are reachable only on one
//    link, so they need a scope: `fe80::1%eth0`. The scope names the netdev the kernel routes
//    through (RTA_OIF), as sin6_scope_id does for rdma_cm. An unscoped link-local peer is
//    refused: the kernel would pick whichever link-local route comes first.
//  * What is compared (GidEntry vs the namespace): the netdev *name* when the entry has one
//    (tables from sysfs, JSON, show_gids, and live reads through if_indextoname), else its
//    ifindex (live reads where the name could not be resolved: an ifindex from another namespace
//    has no name here). An ifindex in a table file is the ifindex on the host that wrote it and
//    is never compared when a name is present; an entry with neither is "unknown", never ranked
//    down.
//
// Example:
//   gidpolicy::KernelRoutes kernel;                                   // <gidpolicy/kernel_routes.hpp>
//   auto peer = gidpolicy::PeerAddress::parse("10.1.0.2").value();     // or "fe80::2%en3"
//   const std::vector<gidpolicy::PeerAddress> peers{peer};
//   auto view = gidpolicy::observe_network(kernel, peers).value();
//   auto plan = profile.plan(table, {.network = &view});     // profile "auto:peer=10.1.0.2"
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gidpolicy {

class AnyPolicy;

/// One network interface of the caller's namespace.
struct NetInterface {
  std::string name;
  std::uint32_t ifindex = 0;
  friend bool operator==(const NetInterface&, const NetInterface&) = default;
};

/// A peer as rdma_cm is given one: an IP address, and for an IPv6 link-local address the scope
/// (zone) naming the netdev it is reached through ("fe80::1%eth0").
struct PeerAddress {
  Gid address;        ///< IPv4 peers as ::ffff:a.b.c.d
  std::string scope;  ///< netdev name after '%'; "" = none (only link-local peers have one)

  PeerAddress() = default;
  /// An unscoped peer (implicit: every address that is not link-local is one).
  PeerAddress(const Gid& a, std::string s = {})  // NOLINT(google-explicit-constructor)
      : address(a), scope(std::move(s)) {}

  /// "10.0.0.2", "fd00::2", "::ffff:10.0.0.2", "fe80::1%eth0". Syntax only (check_peer judges
  /// the address): errc::invalid_field naming the position. A scope must be a netdev name
  /// (1..15 bytes, no '/', ':' or space) and only follows an IPv6 link-local address.
  static result<PeerAddress> parse(std::string_view text);
  /// What parse() reads back: IPv4 peers dotted, IPv6 as RFC 5952 text, then "%scope".
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const PeerAddress&, const PeerAddress&) = default;
};

/// The type of the kernel's route (rtmsg::rtm_type), as `ip route` prints it.
enum class RouteType : std::uint8_t {
  unicast,      ///< a route to a remote host (directly or through a gateway)
  local,        ///< one of this host's own addresses (delivered through lo)
  broadcast,    ///< a subnet's (or the limited) broadcast address
  anycast,      ///< an anycast address of this host (IPv6 subnet-router anycast)
  multicast,    ///< a multicast group
  blackhole,    ///< dropped silently (the kernel's lookup answers EINVAL)
  unreachable,  ///< refused with "host unreachable" (EHOSTUNREACH)
  prohibit,     ///< refused with "prohibited" (EACCES)
  throw_route,  ///< "throw": the lookup leaves this table and finds nothing (ENETUNREACH)
  other,        ///< a type gidpolicy does not know (nat, xresolve, a future one)
};
std::string_view to_string(RouteType t) noexcept;  ///< "unicast", "local", ..., "throw", "other"

/// The kernel's answer to "how would you reach `peer`": the route's type, its output netdev and
/// the source address it prefers (absent when the route names none). A route that is not
/// unicast has no netdev (blackhole, unreachable, prohibit, throw) or is refused (check_route).
struct Route {
  PeerAddress peer;
  std::string netdev;
  std::uint32_t ifindex = 0;
  std::optional<Gid> source;  ///< IPv4 sources as ::ffff:a.b.c.d, like the GIDs holding them
  RouteType type = RouteType::unicast;
  friend bool operator==(const Route&, const Route&) = default;
};

/// Whether a GID entry's netdev exists in the namespace (see the header comment for what is
/// compared).
enum class Visibility : std::uint8_t { visible, invisible, unknown };
std::string_view to_string(Visibility v) noexcept;  ///< "visible", "invisible", "unknown"

/// The caller's namespace as a value: pass it in SelectOptions::network.
struct NetworkView {
  std::vector<NetInterface> interfaces;
  std::vector<Route> routes;

  [[nodiscard]] Visibility visibility(const GidEntry& e) const noexcept;
  /// The route to `peer` (address and scope), or nullptr when it was not looked up.
  [[nodiscard]] const Route* route_to(const PeerAddress& peer) const noexcept;
  /// Whether `e` sits on the route's netdev (by name, else by ifindex; false when unknown).
  [[nodiscard]] static bool on_netdev(const GidEntry& e, const Route& r) noexcept;
  friend bool operator==(const NetworkView&, const NetworkView&) = default;
};

/// Where a NetworkView comes from: the kernel (KernelRoutes, <gidpolicy/kernel_routes.hpp>) or a
/// test's data (gidpolicy::fakes::FakeRoutes, <gidpolicy/fakes/fake_routes.hpp>).
class RouteSource {
 public:
  virtual ~RouteSource() = default;
  /// The interfaces of the caller's network namespace.
  virtual result<std::vector<NetInterface>> interfaces() = 0;
  /// The route to `peer`: whatever route covers it, of any RouteType (observe_network judges it).
  /// Errors: errc::no_route when no route covers it at all; errc::invalid_argument when the
  /// scope names no netdev here; else what the source failed with, naming the peer.
  virtual result<Route> route_to(const PeerAddress& peer) = 0;
};

/// Whether `peer` is an address rdma_cm would route to a remote host (see the header comment):
/// errc::invalid_argument, saying what the address is and what rdma_cm does with it, for the
/// unspecified and loopback addresses, multicast, the limited broadcast and an unscoped IPv6
/// link-local address.
result<void> check_peer(const PeerAddress& peer);

/// Whether the kernel's `route` lets a GID be chosen for `peer`: only a unicast route with a
/// netdev does. errc::invalid_argument for local, broadcast, anycast and multicast routes (the
/// peer is this host or a group); errc::no_route for blackhole, unreachable, prohibit, throw
/// and any other type, and for a route that names no netdev. Each names the peer and the type.
result<void> check_route(const PeerAddress& peer, const Route& route);

/// The interfaces plus the route to each of `peers` (at most 64; errc::invalid_argument beyond).
/// Every peer passes check_peer before its route is asked for and check_route after: a peer
/// refused, or without a usable route, fails the whole call (a policy asked to prefer the
/// route's GID must not silently rank without it).
result<NetworkView> observe_network(RouteSource& source, std::span<const PeerAddress> peers);

/// Every peer= address a policy (and the policies nested in first()/per-device()) names: auto's,
/// rdma_cm's and libfabric's MSG endpoints' (ep=msg,peer=), in the order they appear, once each.
/// It is `policy.peers()`: each policy answers for itself (SelectionPolicy, policy.hpp), so a
/// new policy that routes to a peer is listed here without an edit.
std::vector<PeerAddress> peers_of(const AnyPolicy& policy);

}  // namespace gidpolicy
