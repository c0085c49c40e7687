// Ucx: UCX's GID choice for its verbs transports (uct_ib_device_port_check, then
// uct_ib_device_select_gid), UCX 1.13.1 as Debian ships it. Spec
// "ucx[:gid_index=N,rule=1.13|pr10939]", gid_index being UCX_IB_GID_INDEX (default auto).
//
// The rule (docs/facts.md#ucx):
//  * the port check comes first: UCX reads the GID at UCX_IB_GID_INDEX (index 0 when auto) and
//    rejects the whole port when it is all zeros ("invalid gid[0] on dev:port"): rc_verbs and
//    ud_verbs are then not offered on it at all. An explicit index beyond the table also
//    rejects the port. InfiniBand ports use index 0.
//  * with auto, four priorities in order, (RoCE v2, IPv4), (v2, IPv6), (v1, IPv4), (v1, IPv6);
//    for each, the lowest index whose sysfs type (unreadable: v1) and family (IPv4-mapped or
//    IPv4-multicast: IPv4; anything else, an empty slot too: IPv6) match, and for which
//    ibv_create_ah to that GID from that index succeeds (an empty slot fails it). Nothing: 0.
//  * 1.13 has no link-local preference: on an IPv6-only port it takes fe80::... at index 0.
//    `rule=pr10939` models UCX master after PR 10939 (2025): within each priority the
//    non-link-local GIDs come first. Which release first ships it, and whether the link-local
//    rows follow each priority or all four, is not certain; the trace says which rule ran.
//
// Example:
//   auto s = gidpolicy::Ucx{}.select(table);   // errc::no_candidate "rejects the port" when gid[0] is empty
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

struct Ucx {
  std::optional<std::uint32_t> gid_index;  ///< UCX_IB_GID_INDEX; nullopt = auto
  bool pr10939 = false;                    ///< rule=pr10939: non-link-local first (UCX master, 2025)

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  [[nodiscard]] std::string spec() const;
  /// Names no peer: it picks from the table alone.
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  /// false: it picks only a slot it has checked holds a GID.
  [[nodiscard]] bool picks_unchecked() const noexcept { return false; }
  /// The registry row's factory (registry.hpp): reads this stack's options.
  static result<AnyPolicy> from_options(const SpecOptions& options);
  friend bool operator==(const Ucx&, const Ucx&) = default;
};

}  // namespace gidpolicy
