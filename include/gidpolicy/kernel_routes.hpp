// KernelRoutes: the RouteSource that asks this host's kernel (rtnetlink; macOS: the routing socket)
// for the route to a peer, what `ip route get ADDR` asks; network.hpp has the rules a view is judged by.
//
// A header of its own, in the `host` layer (docs/concepts.md, "Layers"): the selection layer
// that ranks with a NetworkView stays free of sockets and system calls, and only code that asks
// the live host (the CLI's select and explain-errno, a program's own startup) includes this.
//
// Example:
//   gidpolicy::KernelRoutes kernel;
//   auto peer = gidpolicy::PeerAddress::parse("10.1.0.2").value();
//   const std::vector<gidpolicy::PeerAddress> peers{peer};
//   auto view = gidpolicy::observe_network(kernel, peers);   // errc::no_route, not_supported, ...
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/network.hpp>

#include <vector>

namespace gidpolicy {

/// The kernel's routing table over rtnetlink (a plain NETLINK_ROUTE socket, no library),
/// interfaces from if_nameindex(). Each query waits at most 2 s for the kernel's answer. The
/// kernel answers a blackhole/unreachable/prohibit route with its errno (its fib_props table:
/// EINVAL, EHOSTUNREACH, EACCES), which route_to() turns back into that RouteType; ENETUNREACH
/// (no route, or a throw route leaving every table) is errc::no_route.
/// On macOS route_to() asks the routing socket instead (PF_ROUTE RTM_GET, as `route -n get`;
/// darwin.hpp reads the reply): a reject route is RouteType::unreachable, a blackhole one
/// blackhole, "not in table" (ESRCH) errc::no_route. Elsewhere route_to() fails with
/// errc::not_supported (interfaces() works on any POSIX system).
class KernelRoutes final : public RouteSource {
 public:
  result<std::vector<NetInterface>> interfaces() override;
  result<Route> route_to(const PeerAddress& peer) override;
};

}  // namespace gidpolicy
