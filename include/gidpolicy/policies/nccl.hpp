// Nccl: NCCL's own GID choice (net_ib, ncclIbGetGidIndex / ncclUpdateGidIndex), NCCL >= 2.21.5,
// reproduced on a table. Spec "nccl[:gid_index=N,family=AF_INET|AF_INET6,range=CIDR,roce_version=1|2]",
// the options being NCCL_IB_GID_INDEX, NCCL_IB_ADDR_FAMILY, NCCL_IB_ADDR_RANGE and
// NCCL_IB_ROCE_VERSION_NUM. NVSHMEM 3.x carries the same code under NVSHMEM_IB_*.
//
// The rule (docs/facts.md#nccl):
//  * gid_index >= 0 is used unchecked: not against the table length's meaning, an empty slot or
//    its type (so NCCL_IB_GID_INDEX=3 on a table whose slot 3 is empty gets ENODATA at RTR);
//  * otherwise (the default, -1, since 2.21.5; before it the default was 0) start at index 0 and
//    compare each later index with the current pick: a candidate of another family than the
//    pick's that is of the wanted family and inside the range is taken; else a candidate that is
//    of the wanted family, "valid" (not ::, not in fe80::/64) and inside the range is taken when
//    the two RoCE versions (sysfs types) differ or the pick is not valid, and the candidate's
//    version is roce_version. Net effect: the lowest IPv4 RoCE v2 entry; with no IPv4 entry at
//    all index 0 stays, whatever it holds. 169.254/16 is not link-local to NCCL.
//  * InfiniBand ports: index 1 (NCCL_IB_ROUTABLE_FLID_GID_INDEX) when its GID carries a
//    non-zero FLID (bytes 4-5), else 0; NCCL_IB_GID_INDEX is not read there.
// Uncertain, and said so in the trace: a type read failing on an empty slot (NCCL >= 2.26.2 moves
// on, older NCCL aborts); a range of the other family (NCCL's parse fails and it is ignored).
// The chosen index is one per process for every HCA it uses (NCCL's parameter is global).
//
// Example:
//   auto s = gidpolicy::Nccl{}.select(table);          // NCCL's auto
//   auto pinned = gidpolicy::Nccl{.gid_index = 3};      // NCCL_IB_GID_INDEX=3
#pragma once

#include <gidpolicy/gid.hpp>
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

struct Nccl {
  /// NCCL_IB_GID_INDEX: -1 is NCCL's auto (its default since 2.21.5).
  std::int64_t gid_index = -1;
  /// NCCL_IB_ADDR_FAMILY: true for AF_INET6 (NCCL reads any other string as AF_INET).
  bool inet6 = false;
  /// NCCL_IB_ADDR_RANGE: unset = any address.
  std::optional<Cidr> range;
  /// NCCL_IB_ROCE_VERSION_NUM (2 by default).
  int roce_version = 2;

  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  /// "nccl" plus every option that differs from NCCL's default.
  [[nodiscard]] std::string spec() const;
  /// Names no peer: it picks from the table alone.
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  /// true: NCCL_IB_GID_INDEX is read unchecked, and its walk keeps an empty index 0 when nothing
  /// beats it.
  [[nodiscard]] bool picks_unchecked() const noexcept { return true; }
  /// The registry row's factory (registry.hpp): reads this stack's options.
  static result<AnyPolicy> from_options(const SpecOptions& options);
  friend bool operator==(const Nccl&, const Nccl&) = default;
};

}  // namespace gidpolicy
