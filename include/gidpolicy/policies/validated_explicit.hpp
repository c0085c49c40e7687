// ValidatedExplicit: an explicit index, checked before anything is advertised or routed.
//
// What NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX, perftest -x and ds4 --rdma-gid-index should have
// done: the index must be in range, <= 255 (sgid_index is a uint8_t), readable, non-empty,
// non-zero and meet the stated requirements (default: an IPv4-mapped GID of any type; a
// link-local GID is refused on Ethernet and Thunderbolt unless allowed). Each failure has its
// own errc and a message naming the index and what it holds, e.g.
// "index 1 holds fe80::ac0:ebff:feda:1cfb (roce_v2), a link-local GID: not routed on ethernet".
//
// Checks, in this order: errc::index_out_of_range, errc::index_exceeds_uint8,
// errc::entry_not_shown, errc::entry_empty, errc::entry_unreadable, errc::entry_zero,
// errc::wrong_gid_type, errc::wrong_family, errc::link_local_rejected.
//
// Example:
//   ValidatedExplicit p{.index = 3, .type = TypeFilter::roce_v2};   // "validated:index=3,type=roce_v2"
#pragma once

#include <gidpolicy/policies/filters.hpp>
#include <gidpolicy/policy.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gidpolicy {

class AnyPolicy;    // any_policy.hpp
class SpecOptions;  // spec_options.hpp

struct ValidatedExplicit {
  std::uint32_t index = 0;
  TypeFilter type = TypeFilter::any;
  FamilyFilter family = FamilyFilter::ipv4;
  bool allow_link_local = false;

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  /// "validated:index=N" plus every option that differs from its default.
  [[nodiscard]] std::string spec() const;
  /// Names no peer: it picks from the table alone.
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  /// false: it picks only a slot it has checked holds a GID.
  [[nodiscard]] bool picks_unchecked() const noexcept { return false; }
  /// Reads the spec's options (registry.hpp's row for "validated"; SpecOptions in spec_options.hpp).
  static result<AnyPolicy> from_options(const SpecOptions& options);
  friend bool operator==(const ValidatedExplicit&, const ValidatedExplicit&) = default;
};

}  // namespace gidpolicy
