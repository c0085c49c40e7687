#include <gidpolicy/fakes/fake_routes.hpp>

#include <string>

namespace gidpolicy::fakes {

result<Route> FakeRoutes::route_to(const PeerAddress& peer) {
  ++queries;
  for (const auto& r : routes)
    if (r.peer == peer) return r;
  for (Route r : routes)
    if (r.peer.address.is_zero() && (peer.scope.empty() || peer.scope == r.netdev)) {
      r.peer = peer;
      return r;
    }
  return fail(errc::no_route,
              "no route to " + peer.to_string() + ": the routing table has none, not even a default route");
}

}  // namespace gidpolicy::fakes
