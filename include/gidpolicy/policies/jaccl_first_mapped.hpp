// JacclFirstMapped: JACCL's info() since MLX PR 3412 (April 2026), reproduced exactly.
//
// JACCL scans [0, gid_tbl_len) and advertises the first entry whose bytes are ::ffff:a.b.c.d
// (bytes 0-9 zero, 10-11 ff ff), whatever its type and including index 0. It keeps no index:
// its RTR routes from the literal 1 (see profiles::jaccl()). On an mlx5 port this picks the
// RoCE v1 twin of an IPv4 address (NCCL 769 layout: index 2, not 3); on a Thunderbolt port whose
// interface has no IPv4 address there is nothing to pick (MLX PR 4191).
//
// Failure: errc::no_ipv4_mapped_gid with JACCL's actionable hint (give the port's own interface,
// enN rather than bridge0, an IPv4 address); errc::index_exceeds_uint8 when the first mapped GID
// sits above 255 (advertisable, but no sgid_index can name it).
//
// Example:
//   auto s = gidpolicy::JacclFirstMapped{}.select(table);   // spec "jaccl-fixed"
#pragma once

#include <gidpolicy/policy.hpp>

#include <string>
#include <vector>

namespace gidpolicy {

struct JacclFirstMapped {
  /// A table holding no IPv4-mapped GID at all is the common case on a Thunderbolt port whose
  /// interface has no IPv4 address, so the failure carries what to do about it.
  static constexpr const char* kNoMappedHint =
      "assign an IPv4 address to the interface of this RDMA port itself (enN for rdma_enN, not "
      "bridge0) so it gets an ::ffff:a.b.c.d GID; a fixed one: any address works, 169.254.x.y too, "
      "but a self-assigned one arrives late and may change (docs/facts.md#link-local-ipv4)";

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  /// "jaccl-fixed": as a policy it routes from its own pick. The shipping JACCL behaviour
  /// (routed from literal 1) is the profile "jaccl".
  [[nodiscard]] std::string spec() const { return "jaccl-fixed"; }
  /// Names no peer: it picks from the table alone.
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  /// false: it picks only a slot it has checked holds a GID.
  [[nodiscard]] bool picks_unchecked() const noexcept { return false; }
  friend bool operator==(const JacclFirstMapped&, const JacclFirstMapped&) = default;
};

}  // namespace gidpolicy
