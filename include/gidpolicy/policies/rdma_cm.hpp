// RdmaCm: the kernel's rdma_cm choice (drivers/infiniband/core/cma.c), for code that gives
// rdma_cm an IP address instead of a GID index. Spec "rdma_cm:local=ADDR[,mode=v2|v1]" (the
// address rdma_bind_addr/rdma_resolve_addr is given as the source) or
// "rdma_cm:peer=ADDR[%NETDEV][,mode=...]" (rdma_resolve_addr without a source: the kernel's
// route to the peer gives the netdev and the source address; SelectOptions::network needed,
// as for auto:peer=, network.hpp).
//
// The rule (docs/facts.md#rdma-cm): the source address becomes a GID (IPv4-mapped for IPv4);
// cma_validate_port then looks for the entry holding that GID value, of the port's
// default_roce_mode (RoCE v2 unless configfs says "IB/RoCE v1": `mode=v1`), on the netdev that
// owns the address (with peer=, the route's netdev; with local=, the entry's own netdev, which
// is the one the kernel added the address's GID for). None is ENODEV from rdma_resolve_addr /
// rdma_bind_addr, errc::no_candidate here with "ENODEV" in the message. InfiniBand ports
// resolve IPoIB hardware addresses instead: not modelled (errc::not_supported).
//
// One implementation: RdmaCm (and so Libfabric's MSG endpoints) chooses through rdma_cm_source()
// (rdma_cm.hpp), the function the drop-in fake librdmacm binds and resolves with. Without a
// netdev (local=, a table from a file) the netdev of the entry holding the address stands for
// the one owning it, so a table that names no netdevs (an ibv_devinfo paste) gives ENODEV.
//
// Example:
//   auto s = gidpolicy::RdmaCm{.local = gidpolicy::parse_address("10.0.0.1").value()}.select(table);
#pragma once

#include <gidpolicy/gid.hpp>
#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/spec_options.hpp>
#include <gidpolicy/policy.hpp>
#include <gidpolicy/rdma_cm.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

struct RdmaCm {
  std::optional<Gid> local;         ///< local=ADDR: the bound / given source address
  std::optional<PeerAddress> peer;  ///< peer=ADDR: the route to it decides
  bool roce_v1 = false;             ///< mode=v1: default_roce_mode "IB/RoCE v1"

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  [[nodiscard]] std::string spec() const;
  /// Its peer=, when it names one (rdma_resolve_addr routes to it; the caller asks the kernel).
  [[nodiscard]] std::vector<PeerAddress> peers() const;
  /// false: it picks only a slot it has checked holds a GID.
  [[nodiscard]] bool picks_unchecked() const noexcept { return false; }
  /// The registry row's factory (registry.hpp): reads this stack's options.
  static result<AnyPolicy> from_options(const SpecOptions& options);
  /// The registry row's answer to `select --peer ADDR` (SpecTakesPeer): rdma_cm takes it as its
  /// peer= unless it names an address itself (local= or peer=), as rdma_resolve_addr without a
  /// source address resolves to the peer.
  static bool takes_peer(const SpecOptions& options);
  /// One of local=, peer=, mode= into this (Libfabric's ep=msg reads the same options).
  result<void> read_option(const SpecOptions& options, const SpecOption& option);
  friend bool operator==(const RdmaCm&, const RdmaCm&) = default;
};

/// rdma_cm_source() on one port, as a Selection: the entry holding `source` (an address as a
/// GID) of the RoCE type `mode` on `netdev` (nullopt: the netdev of the entry holding it).
/// errc::no_candidate whose detail says ENODEV when none.
result<Selection> rdma_cm_choose(const GidTable& table, const Gid& source, GidType mode,
                                 std::optional<std::string_view> netdev, SelectOptions run = {});

}  // namespace gidpolicy
