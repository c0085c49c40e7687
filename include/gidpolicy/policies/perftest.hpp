// Perftest: perftest's GID choice (get_best_gid_index in src/perftest_resources.c), perftest 4.5
// as Debian ships it (4.5+0.17). Spec "perftest[:x=N,ipv6]": `x` is `-x N`, `ipv6` is `--ipv6`.
//
// The rule (docs/facts.md#perftest), a pairwise walk, exactly as written:
//  * with -x N the slot is used unchecked (perftest only calls ibv_query_gid on it);
//  * otherwise on Ethernet: start at 0 and, for each later index, compare it with the current
//    pick on the raw bytes: an IPv4 candidate replaces a non-IPv4 pick (an IPv6 one an IPv4
//    pick with --ipv6); in every other case both RoCE versions are read with
//    ibv_query_gid_ex (a failure, as on an empty slot, passes the candidate over) and a RoCE v2
//    candidate replaces a v1 pick. It never looks at link-local: on an IPv6-only port it keeps
//    fe80::... at index 0. (The walk is not a ranking: an IPv6 v2 entry after an IPv4 v1 pick
//    replaces it.)
//  * InfiniBand: no GRH, so no GID is routed from; index 0 names the port's GID.
// Newer perftest (2026) scores entries instead; that rule is not this profile.
//
// Example:
//   auto s = gidpolicy::Perftest{}.select(table);   // what ib_send_bw picks without -x
#pragma once

#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/spec_options.hpp>
#include <gidpolicy/policy.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

struct Perftest {
  std::optional<std::uint32_t> x;  ///< -x N
  bool ipv6 = false;               ///< --ipv6

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  [[nodiscard]] std::string spec() const;
  /// Names no peer: it picks from the table alone.
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  /// true: -x is read unchecked, and its pairwise walk keeps an empty index 0 when nothing beats it.
  [[nodiscard]] bool picks_unchecked() const noexcept { return true; }
  /// The registry row's factory (registry.hpp): reads this stack's options.
  static result<AnyPolicy> from_options(const SpecOptions& options);
  friend bool operator==(const Perftest&, const Perftest&) = default;
};

}  // namespace gidpolicy
