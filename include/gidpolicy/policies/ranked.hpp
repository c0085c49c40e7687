// Ranked: the automatic policy ("auto"), the one to recommend.
//
// Filters first; an entry failing any filter is rejected with the reason in the trace:
//   * never empty, unreadable, unlisted (not shown) or zero;
//   * never an index above 255 (sgid_index is a uint8_t) or at/after gid_tbl_len;
//   * link-local (fe80::/10) rejected on Ethernet and Thunderbolt unless allow_link_local:
//     not routed, the RTR passes and traffic times out (NCCL 769, Mooncake 2747); on
//     InfiniBand the fe80::GUID GID is the normal one and passes;
//   * `type` (RoCE v2 / v1 / IB), `family` (IPv4-mapped or IPv6);
//   * `subnets`: when non-empty the GID must lie in one of them (allow list); `excludes`: it
//     must lie in none (deny list); IPv4 CIDRs apply to IPv4-mapped GIDs;
//   * `netdev`: when set, the entry must be bound to that netdev;
//   * `local` with `require_local`: the GID must equal the local address;
//   * `peer` (rdma_cm's rule, network.hpp): the kernel's route to the peer
//     (SelectOptions::network, required then) must be a unicast route (check_peer/check_route
//     refuse the rest with the reason), and only GIDs of the peer's family (IPv4-mapped for an
//     IPv4 peer, IPv6 for an IPv6 one) on the route's netdev qualify: a GID of another netdev
//     is rejected, never ranked lower, because RoCE sends from the GID's own netdev. An entry
//     whose netdev is unknown qualifies only by holding the route's source address. A
//     link-local peer (fe80::1%eth0) makes link-local GIDs acceptable: it is reached from the
//     link's link-local address. Nothing qualifying is errc::no_candidate naming the netdev.
// Then the order, best first (each key breaks ties of the one before):
//   0. the entry's netdev exists in the caller's network namespace (only when
//      SelectOptions::network is given; network.hpp says what is compared): a GID whose netdev is
//      elsewhere fails its RTR with ENODEV, so it ranks below every visible candidate;
//   0b. with `peer`: the GID holding the route's source address (rdma_cm's own choice) before
//      the other GIDs of that netdev. Those are what rdma_cm would refuse (ENODEV: it needs the
//      source address exactly); auto takes one, and the trace says that it is not the source
//      address. (A route naming no source address leaves only these.)
//   1. not index 0 of a Thunderbolt port: routing from it is reported to time out (errno 60,
//      MLX PR 3468, tmc/apple), so it ranks below every other valid candidate;
//   2. not link-local (only reachable with allow_link_local: link-local GIDs rank last);
//   3. equal to `local` when given (the address the control connection uses: rdma_cm's rule);
//   4. RoCE v2 over RoCE v1 over IB over unknown (v2 is routable UDP/IP; v1 is L2-only);
//   5. IPv4-mapped over IPv6 global/ULA (the family peers most often share; UCX's order);
//   6. lowest index.
// It never falls back silently: when nothing qualifies the failure is errc::no_candidate and
// the attached Trace lists every entry with why it was rejected.
//
// Example:
//   Ranked p{.options = {.family = FamilyFilter::ipv4}};   // spec "auto:family=ipv4"
//   auto s = p.select(table, {.trace = true});
#pragma once

#include <gidpolicy/gid.hpp>
#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/filters.hpp>
#include <gidpolicy/policy.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gidpolicy {

/// The filters and preferences of Ranked; every field is a spec option of "auto".
struct RankedOptions {
  FamilyFilter family = FamilyFilter::any;  ///< family=ipv4|ipv6|any
  TypeFilter type = TypeFilter::any;        ///< roce=v2|v1|any, or type=ib
  std::vector<Cidr> subnets;                ///< subnet=CIDR (repeatable): allow list
  std::vector<Cidr> excludes;               ///< exclude=CIDR (repeatable): deny list
  std::string netdev;                       ///< netdev=NAME; "" = any
  std::optional<Gid> local;                 ///< local=ADDR: ranked first when present
  std::optional<PeerAddress> peer;          ///< peer=ADDR[%NETDEV]: the GID of the route to it
  bool require_local = false;               ///< require-local: only `local` qualifies
  bool allow_link_local = false;            ///< allow-link-local: link-local ranks last
  friend bool operator==(const RankedOptions&, const RankedOptions&) = default;
};

class AnyPolicy;    // any_policy.hpp
class SpecOptions;  // spec_options.hpp

struct Ranked {
  RankedOptions options;

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  /// "auto" plus every option that differs from its default, in a fixed order.
  [[nodiscard]] std::string spec() const;
  /// Its peer=, when it names one: the caller asks the kernel for that route (peers_of()).
  [[nodiscard]] std::vector<PeerAddress> peers() const;
  /// false: it picks only a slot it has checked holds a GID.
  [[nodiscard]] bool picks_unchecked() const noexcept { return false; }
  /// Reads the spec's options (registry.hpp's row for "auto"; SpecOptions in spec_options.hpp).
  static result<AnyPolicy> from_options(const SpecOptions& options);
  /// The registry row's answer to `select --peer ADDR` (SpecTakesPeer): auto takes it as its
  /// peer= unless it names a peer= itself.
  static bool takes_peer(const SpecOptions& options);
  friend bool operator==(const Ranked&, const Ranked&) = default;
};

}  // namespace gidpolicy
