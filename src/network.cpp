#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/per_device.hpp>
#include <gidpolicy/policies/ranked.hpp>

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

const Route* NetworkView::route_to(const Gid& peer) const noexcept {
  for (const auto& r : routes)
    if (r.peer == peer) return &r;
  return nullptr;
}

bool NetworkView::on_netdev(const GidEntry& e, const Route& r) noexcept {
  if (!e.netdev.empty() && !r.netdev.empty()) return e.netdev == r.netdev;
  if (e.netdev.empty() && e.ifindex != 0 && r.ifindex != 0) return e.ifindex == r.ifindex;
  return false;
}

result<Route> FakeRoutes::route_to(const Gid& peer) {
  ++queries;
  for (const auto& r : routes)
    if (r.peer == peer) return r;
  for (Route r : routes)
    if (r.peer.is_zero()) {
      r.peer = peer;
      return r;
    }
  return fail_errno(ENETUNREACH, "route to " + peer.to_string());
}

result<NetworkView> observe_network(RouteSource& source, std::span<const Gid> peers) {
  constexpr std::size_t kMaxPeers = 64;
  if (peers.size() > kMaxPeers)
    return fail(errc::invalid_argument,
                std::to_string(peers.size()) + " peers to route: at most " + std::to_string(kMaxPeers));
  NetworkView v;
  GIDPOLICY_TRY(links, source.interfaces());
  v.interfaces = std::move(links);
  for (const Gid& p : peers) {
    if (v.route_to(p)) continue;
    GIDPOLICY_TRY(r, source.route_to(p));
    v.routes.push_back(std::move(r));
  }
  return v;
}

namespace {
void collect(const AnyPolicy& p, std::vector<Gid>& out, unsigned depth) {
  if (depth > 64) return;  // specs nest far less; a bound keeps a hostile value finite
  if (const auto* r = p.target<Ranked>()) {
    if (r->options.peer && std::find(out.begin(), out.end(), *r->options.peer) == out.end())
      out.push_back(*r->options.peer);
  } else if (const auto* f = p.target<FirstOf>()) {
    for (const auto& a : f->alternatives) collect(a, out, depth + 1);
  } else if (const auto* d = p.target<PerDevice>()) {
    for (const auto& [name, a] : d->by_device) collect(a, out, depth + 1);
    if (d->fallback) collect(*d->fallback, out, depth + 1);
  }
}
}  // namespace

std::vector<Gid> peers_of(const AnyPolicy& policy) {
  std::vector<Gid> out;
  collect(policy, out, 0);
  return out;
}

}  // namespace gidpolicy
