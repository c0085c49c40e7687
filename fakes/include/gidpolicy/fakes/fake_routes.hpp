// FakeRoutes: a RouteSource from data, the test double of KernelRoutes (kernel_routes.hpp), so
// tests of `auto:peer=ADDR` and observe_network() decide what the kernel would answer.
//
// Example:
//   gidpolicy::fakes::FakeRoutes routes;
//   routes.links = {{"eth0", 2}};
//   routes.routes = {{.peer = {}, .netdev = "eth0", .ifindex = 2}};   // a default route
//   auto peer = gidpolicy::PeerAddress::parse("10.1.0.2").value();
//   auto view = gidpolicy::observe_network(routes, std::span(&peer, 1)).value();
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/network.hpp>

#include <vector>

namespace gidpolicy::fakes {

/// `routes` are answered by exact peer (address and scope), then by the first route whose peer
/// address is zero (a default route, which also answers scoped peers when its netdev is the
/// scope); anything else fails with errc::no_route.
class FakeRoutes final : public RouteSource {
 public:
  std::vector<NetInterface> links;
  std::vector<Route> routes;
  unsigned queries = 0;  ///< route_to calls made
  result<std::vector<NetInterface>> interfaces() override { return links; }
  result<Route> route_to(const PeerAddress& peer) override;
};

}  // namespace gidpolicy::fakes
