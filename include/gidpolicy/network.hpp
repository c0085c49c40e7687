// NetworkView: what the caller's network namespace holds (its interfaces, and the kernel's route
// to each peer), as a value policies can rank with; RouteSource: where it comes from.
//
// Hardware/kernel gotchas encoded here:
//  * A GID is bound to a netdev (ibv_gid_entry::ndev_ifindex, sysfs gid_attrs/ndevs). In a
//    container the RDMA device may list GIDs whose netdev lives in another network namespace:
//    RTR from them fails with ENODEV (kernel rdma_fill_sgid_attr). Such an entry is "invisible":
//    auto ranks it below every visible candidate and says so in the trace.
//  * rdma_cm picks the source GID from the route to the peer (the kernel's fib lookup: output
//    netdev and preferred source address). RouteSource asks the kernel the same question over
//    rtnetlink (RTM_GETROUTE, what `ip route get ADDR` does) without librdmacm; auto:peer=ADDR
//    then prefers the GID holding that source address on that netdev.
//  * What is compared (GidEntry vs the namespace): the netdev *name* when the entry has one
//    (tables from sysfs, JSON, show_gids, and live reads through if_indextoname), else its
//    ifindex (live reads where the name could not be resolved: an ifindex from another namespace
//    has no name here). An ifindex in a table file is the ifindex on the host that wrote it and
//    is never compared when a name is present; an entry with neither is "unknown", never ranked
//    down.
//
// Example:
//   gidpolicy::KernelRoutes kernel;
//   auto peer = gidpolicy::parse_address("10.1.0.2").value();
//   auto view = gidpolicy::observe_network(kernel, {peer}).value();
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
#include <vector>

namespace gidpolicy {

class AnyPolicy;

/// One network interface of the caller's namespace.
struct NetInterface {
  std::string name;
  std::uint32_t ifindex = 0;
  friend bool operator==(const NetInterface&, const NetInterface&) = default;
};

/// The kernel's answer to "how would you reach `peer`": the output netdev and the source
/// address it prefers (absent when the route names none).
struct Route {
  Gid peer;  ///< IPv4 peers as ::ffff:a.b.c.d
  std::string netdev;
  std::uint32_t ifindex = 0;
  std::optional<Gid> source;  ///< IPv4 sources as ::ffff:a.b.c.d, like the GIDs holding them
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
  /// The route to `peer`, or nullptr when it was not looked up (or there is none).
  [[nodiscard]] const Route* route_to(const Gid& peer) const noexcept;
  /// Whether `e` sits on the route's netdev (by name, else by ifindex; false when unknown).
  [[nodiscard]] static bool on_netdev(const GidEntry& e, const Route& r) noexcept;
  friend bool operator==(const NetworkView&, const NetworkView&) = default;
};

/// Where a NetworkView comes from: the kernel (KernelRoutes) or a test's fake (FakeRoutes).
class RouteSource {
 public:
  virtual ~RouteSource() = default;
  /// The interfaces of the caller's network namespace.
  virtual result<std::vector<NetInterface>> interfaces() = 0;
  /// The route to `peer`. Errors: the kernel's errno (ENETUNREACH: no route), naming the peer.
  virtual result<Route> route_to(const Gid& peer) = 0;
};

/// The kernel's routing table over rtnetlink (a plain NETLINK_ROUTE socket, no library),
/// interfaces from if_nameindex(). Each query waits at most 2 s for the kernel's answer.
/// Linux only for routes: elsewhere route_to() fails with errc::not_supported (interfaces()
/// works on any POSIX system).
class KernelRoutes final : public RouteSource {
 public:
  result<std::vector<NetInterface>> interfaces() override;
  result<Route> route_to(const Gid& peer) override;
};

/// A RouteSource from data, for tests: `routes` are answered by exact peer, then by the first
/// route whose `peer` is zero (a default route); anything else fails with ENETUNREACH.
class FakeRoutes final : public RouteSource {
 public:
  std::vector<NetInterface> links;
  std::vector<Route> routes;
  unsigned queries = 0;  ///< route_to calls made
  result<std::vector<NetInterface>> interfaces() override { return links; }
  result<Route> route_to(const Gid& peer) override;
};

/// The interfaces plus the route to each of `peers` (at most 64; errc::invalid_argument beyond).
/// A peer without a route fails the whole call: a policy asked to prefer the route's GID must
/// not silently rank without it.
result<NetworkView> observe_network(RouteSource& source, std::span<const Gid> peers);

/// Every peer= address a policy (and the policies nested in first()/per-device()) names.
std::vector<Gid> peers_of(const AnyPolicy& policy);

}  // namespace gidpolicy
