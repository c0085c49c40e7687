// Entry filters shared by the validating policies (ValidatedExplicit, Ranked).
//
// Hardware gotcha encoded here: "family" is decided on the GID bytes, the way the kernel
// decides whether a RoCE v2 GID carries IPv4 or IPv6 packets: IPv4-mapped (::ffff:a.b.c.d) is
// IPv4, everything else (link-local, ULA, global, InfiniBand GUID-based) is IPv6. Mixing the
// two across one connection is an EINVAL on Linux.
//
// Example:
//   FamilyFilter f = family_filter_from_string("ipv4").value();
//   matches(f, gid);   // gid.is_ipv4_mapped()
#pragma once

#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace gidpolicy {

/// Which address family a GID must carry.
enum class FamilyFilter : std::uint8_t { any, ipv4, ipv6 };
/// "any", "ipv4", "ipv6".
std::string_view to_string(FamilyFilter f) noexcept;
/// Accepts "any", "ipv4", "ipv6" (also "4", "6", "inet", "inet6", any case).
std::optional<FamilyFilter> family_filter_from_string(std::string_view s) noexcept;
/// Whether `g` is of family `f` (IPv4 = IPv4-mapped; IPv6 = anything else).
constexpr bool matches(FamilyFilter f, const Gid& g) noexcept {
  switch (f) {
    case FamilyFilter::ipv4:
      return g.is_ipv4_mapped();
    case FamilyFilter::ipv6:
      return !g.is_ipv4_mapped();
    case FamilyFilter::any:
      break;
  }
  return true;
}

/// Which GID type an entry must have. `roce_v2` rejects `unknown`: a type filter is a demand,
/// and an entry whose type the source did not report cannot be shown to meet it.
enum class TypeFilter : std::uint8_t { any, ib, roce_v1, roce_v2 };
/// "any", "ib", "roce_v1", "roce_v2".
std::string_view to_string(TypeFilter t) noexcept;
/// Accepts the names above, "v1"/"v2", "RoCE v1"/"RoCE v2", "IB" (any case).
std::optional<TypeFilter> type_filter_from_string(std::string_view s) noexcept;
constexpr bool matches(TypeFilter f, GidType t) noexcept {
  switch (f) {
    case TypeFilter::ib:
      return t == GidType::ib;
    case TypeFilter::roce_v1:
      return t == GidType::roce_v1;
    case TypeFilter::roce_v2:
      return t == GidType::roce_v2;
    case TypeFilter::any:
      break;
  }
  return true;
}

/// Link-local GIDs (fe80::/10) are not routed on Ethernet and Thunderbolt: an RTR from one
/// passes and then times out (NCCL 769, Mooncake 2747). On InfiniBand the fe80::GUID GID is the
/// normal subnet-local GID and is fine. A link layer gidpolicy does not know is treated as
/// routed: refusing a link-local GID there is the safe error.
constexpr bool link_local_is_unroutable(LinkLayer l) noexcept {
  return l.kind() != LinkLayer::Kind::infiniband;
}

}  // namespace gidpolicy
