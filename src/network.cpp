#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/any_policy.hpp>

#include <algorithm>
#include <cerrno>

namespace gidpolicy {

std::string_view to_string(Visibility v) noexcept {
  switch (v) {
    case Visibility::visible:
      return "visible";
    case Visibility::invisible:
      return "invisible";
    case Visibility::unknown:
      break;
  }
  return "unknown";
}

Visibility NetworkView::visibility(const GidEntry& e) const noexcept {
  if (!e.netdev.empty()) {
    for (const auto& i : interfaces)
      if (i.name == e.netdev) return Visibility::visible;
    return Visibility::invisible;
  }
  if (e.ifindex != 0) {
    for (const auto& i : interfaces)
      if (i.ifindex == e.ifindex) return Visibility::visible;
    return Visibility::invisible;
  }
  return Visibility::unknown;
}

const Route* NetworkView::route_to(const PeerAddress& peer) const noexcept {
  for (const auto& r : routes)
    if (r.peer == peer) return &r;
  return nullptr;
}

bool NetworkView::on_netdev(const GidEntry& e, const Route& r) noexcept {
  if (!e.netdev.empty() && !r.netdev.empty()) return e.netdev == r.netdev;
  if (e.netdev.empty() && e.ifindex != 0 && r.ifindex != 0) return e.ifindex == r.ifindex;
  return false;
}

std::string_view to_string(RouteType t) noexcept {
  switch (t) {
    case RouteType::unicast:
      return "unicast";
    case RouteType::local:
      return "local";
    case RouteType::broadcast:
      return "broadcast";
    case RouteType::anycast:
      return "anycast";
    case RouteType::multicast:
      return "multicast";
    case RouteType::blackhole:
      return "blackhole";
    case RouteType::unreachable:
      return "unreachable";
    case RouteType::prohibit:
      return "prohibit";
    case RouteType::throw_route:
      return "throw";
    case RouteType::other:
      break;
  }
  return "other";
}

namespace {

/// Linux's rule for a netdev name (dev_valid_name): 1..15 bytes, not "." or "..", no '/', ':'
/// or white space. Control bytes are refused too: the name reaches messages and JSON.
bool valid_netdev_name(std::string_view n) noexcept {
  if (n.empty() || n.size() > 15 || n == "." || n == "..") return false;
  for (char c : n) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || c == ':' || u <= 0x20 || u == 0x7f) return false;
  }
  return true;
}

/// The text of `g` as a person writes a peer: dotted IPv4, else IPv6.
std::string address_text(const Gid& g) { return g.is_ipv4_mapped() ? g.ipv4_string() : g.to_string(); }

bool ipv4_in(const Gid& g, std::uint32_t net, unsigned len) {
  return g.in_prefix(Gid::ipv4_mapped(net), 96 + len);
}

}  // namespace

result<PeerAddress> PeerAddress::parse(std::string_view text) {
  const std::size_t pct = text.find('%');
  const std::string_view addr = text.substr(0, pct);
  auto g = parse_address(addr);
  if (!g) return fail(errc::invalid_field, "peer address: " + g.error().detail);
  PeerAddress p{g.value()};
  if (pct == std::string_view::npos) return p;
  const std::string_view scope = text.substr(pct + 1);
  const std::string at =
      "peer address '" + address_text(p.address) + "%...' at position " + std::to_string(pct);
  if (p.address.is_ipv4_mapped() || !p.address.is_link_local())
    return fail(errc::invalid_field,
                at + ": a scope ('%NETDEV') names the link of an IPv6 link-local (fe80::/10) address, and " +
                    address_text(p.address) + " is not one");
  if (!valid_netdev_name(scope))
    return fail(errc::invalid_field,
                at + ": the scope after '%' must be a netdev name (1 to 15 bytes, no '/', ':', "
                     "space or control byte)");
  p.scope = std::string(scope);
  return p;
}

std::string PeerAddress::to_string() const {
  std::string s = address_text(address);
  if (!scope.empty()) s += "%" + scope;
  return s;
}

result<void> check_peer(const PeerAddress& peer) {
  const Gid& a = peer.address;
  const std::string p = "peer " + peer.to_string();
  constexpr const char* kNotAPeer =
      ": give the address of the remote host (local=ADDR names this host's own)";
  const bool v4 = a.is_ipv4_mapped();
  if (a.is_zero() || (v4 && ipv4_in(a, 0, 8)))
    return fail(errc::invalid_argument,
                p +
                    " is the unspecified address: rdma_cm routes no such destination; it binds a loopback "
                    "connection to this host's first active RDMA port (GID index 0)" +
                    kNotAPeer);
  const Gid loopback6 = Gid::parse("::1").value();
  if (a == loopback6 || (v4 && ipv4_in(a, 0x7f000000u, 8)))
    return fail(
        errc::invalid_argument,
        p +
            " is a loopback address: rdma_cm routes no such destination; it binds a loopback connection "
            "to this host's first active RDMA port (GID index 0)" +
            kNotAPeer);
  if ((v4 && ipv4_in(a, 0xe0000000u, 4)) || (!v4 && a.bytes()[0] == 0xff))
    return fail(errc::invalid_argument,
                p + " is a multicast group, not one peer: rdma_cm joins groups with rdma_join_multicast (UD "
                    "queue pairs) and its listener refuses connection requests from multicast addresses");
  if (v4 && a.ipv4() == 0xffffffffu)
    return fail(errc::invalid_argument,
                p + " is the limited broadcast address (every host on the link), not one peer: rdma_cm's "
                    "listener refuses connection requests from it");
  if (!v4 && a.is_link_local() && peer.scope.empty())
    return fail(errc::invalid_argument,
                p +
                    " is IPv6 link-local: it is reachable on one link only and names none; write it with the "
                    "netdev of that link as its scope, e.g. " +
                    address_text(a) +
                    "%eth0 (without one the kernel "
                    "takes the first link-local route it has)");
  return success();
}

result<void> check_route(const PeerAddress& peer, const Route& route) {
  const std::string p = peer.to_string();
  const std::string type(to_string(route.type));
  switch (route.type) {
    case RouteType::unicast:
      if (route.netdev.empty() && route.ifindex == 0)
        return fail(errc::no_route,
                    "the kernel's route to " + p + " names no netdev: no GID can be chosen for it");
      return success();
    case RouteType::local:
      return fail(
          errc::invalid_argument,
          "peer " + p + " is an address of this host (the kernel's route to it is 'local', through " +
              (route.netdev.empty() ? std::string("lo") : route.netdev) +
              "): rdma_cm would bind to the netdev holding it and connect this host to itself; give the "
              "address of the remote host (local=ADDR names this host's own)");
    case RouteType::broadcast:
      return fail(errc::invalid_argument,
                  "peer " + p + " is a broadcast address (the kernel's route to it is 'broadcast'" +
                      (route.netdev.empty() ? std::string() : " on " + route.netdev) +
                      "): it names every host of the subnet, not one peer");
    case RouteType::anycast:
      return fail(errc::invalid_argument,
                  "peer " + p +
                      " is an anycast address of this host (the kernel's route to it is "
                      "'anycast', delivered locally), not one remote peer");
    case RouteType::multicast:
      return fail(errc::invalid_argument,
                  "peer " + p +
                      " is a multicast group (the kernel's route to it is 'multicast'), not "
                      "one peer: rdma_cm joins groups with rdma_join_multicast");
    case RouteType::blackhole:
      return fail(errc::no_route,
                  "no route to " + p +
                      ": the kernel's route to it is a blackhole route (what is sent there is "
                      "dropped; the route lookup, and rdma_resolve_addr with it, fails with EINVAL)");
    case RouteType::unreachable:
      return fail(errc::no_route,
                  "no route to " + p +
                      ": the kernel's route to it is an unreachable route (the route lookup, and "
                      "rdma_resolve_addr with it, fails with EHOSTUNREACH)");
    case RouteType::prohibit:
      return fail(errc::no_route, "no route to " + p +
                                      ": the kernel's route to it is a prohibit route (the route lookup, and "
                                      "rdma_resolve_addr with it, fails with EACCES)");
    case RouteType::throw_route:
      return fail(errc::no_route,
                  "no route to " + p +
                      ": the kernel's route to it is a throw route and no other table has one "
                      "(ENETUNREACH)");
    case RouteType::other:
      break;
  }
  return fail(errc::no_route, "no route to " + p + ": the kernel's route to it is of a type (" + type +
                                  ") that sends nothing to a remote host");
}

result<NetworkView> observe_network(RouteSource& source, std::span<const PeerAddress> peers) {
  constexpr std::size_t kMaxPeers = 64;
  if (peers.size() > kMaxPeers)
    return fail(errc::invalid_argument,
                std::to_string(peers.size()) + " peers to route: at most " + std::to_string(kMaxPeers));
  for (const PeerAddress& p : peers) GIDPOLICY_TRYV(check_peer(p));
  NetworkView v;
  GIDPOLICY_TRY(links, source.interfaces());
  v.interfaces = std::move(links);
  for (const PeerAddress& p : peers) {
    if (v.route_to(p)) continue;
    if (!p.scope.empty() && std::none_of(v.interfaces.begin(), v.interfaces.end(),
                                         [&](const NetInterface& i) { return i.name == p.scope; }))
      return fail(errc::invalid_argument, "peer " + p.to_string() + ": the scope " + p.scope +
                                              " names no netdev of this network namespace");
    GIDPOLICY_TRY(r, source.route_to(p));
    GIDPOLICY_TRYV(check_route(p, r));
    v.routes.push_back(std::move(r));
  }
  return v;
}

// Each policy answers for itself (SelectionPolicy::peers(), policy.hpp): a new policy that routes
// to a peer is routed here without an edit.
std::vector<PeerAddress> peers_of(const AnyPolicy& policy) { return policy.peers(); }

}  // namespace gidpolicy
