// Naive reference predicates for oracle properties.
//
// Written differently from the library on purpose: everything is decided on a copied-out byte
// array (no Gid member predicates), indices are found by linear scan (no GidTable::find), and
// the documented rules are restated from docs/policies.md / the policy headers, not from the sources.
// If the library and these disagree, one of them misreads the documentation.
#pragma once

#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/policies/filters.hpp>
#include <gidpolicy/policies/ranked.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <tuple>
#include <vector>

namespace gidpolicy::test::ref {

using Raw = std::array<std::uint8_t, 16>;

inline Raw raw(const Gid& g) {
  Raw b{};
  g.copy_to(b.data());
  return b;
}
inline bool zero(const Raw& b) {
  return std::all_of(b.begin(), b.end(), [](std::uint8_t x) { return x == 0; });
}
/// ::ffff:a.b.c.d: ten zero bytes, then ff ff.
inline bool mapped(const Raw& b) {
  return std::count(b.begin(), b.begin() + 10, std::uint8_t{0}) == 10 && b[10] == 0xff && b[11] == 0xff;
}
/// fe80::/10: the first ten bits are 1111 1110 10.
inline bool link_local(const Raw& b) { return b[0] == 0xfe && (b[1] >> 6) == 2; }
/// Bit-by-bit CIDR containment.
inline bool in_prefix(const Raw& addr, const Raw& net, unsigned bits) {
  for (unsigned i = 0; i < bits && i < 128; ++i) {
    const unsigned shift = 7 - i % 8;
    if (((addr[i / 8] >> shift) & 1u) != ((net[i / 8] >> shift) & 1u)) return false;
  }
  return true;
}

/// gid_tbl_len, or one past the highest listed index when the source did not say.
inline std::uint32_t length(const GidTable& t) {
  if (t.port().gid_tbl_len.has_value()) return t.port().gid_tbl_len.value();
  std::uint32_t n = 0;
  for (const GidEntry& e : t.entries()) n = std::max(n, e.index + 1);
  return n;
}
/// The listed entry at `index`, by linear scan.
inline const GidEntry* at(const GidTable& t, std::uint32_t index) {
  for (const GidEntry& e : t.entries())
    if (e.index == index) return &e;
  return nullptr;
}
/// A slot holding a real GID: state valid and not all zeros.
inline bool holds_gid(const GidEntry* e) {
  return e != nullptr && e->state == EntryState::valid && !zero(raw(e->gid));
}
/// Link-local GIDs are routed only on InfiniBand (anything else, unknown included, is not).
inline bool routed_by_gid(const GidTable& t) {
  return t.port().link_layer.kind() != LinkLayer::Kind::infiniband;
}

inline bool type_ok(TypeFilter f, GidType t) {
  switch (f) {
    case TypeFilter::any:
      return true;
    case TypeFilter::ib:
      return t == GidType::ib;
    case TypeFilter::roce_v1:
      return t == GidType::roce_v1;
    case TypeFilter::roce_v2:
      return t == GidType::roce_v2;
  }
  return false;
}
inline bool family_ok(FamilyFilter f, const Raw& b) {
  if (f == FamilyFilter::any) return true;
  return mapped(b) == (f == FamilyFilter::ipv4);
}

/// The first IPv4-mapped entry JACCL's info() loop finds: index order, readable, below
/// gid_tbl_len, bytes ::ffff:a.b.c.d.
inline const GidEntry* first_mapped(const GidTable& t) {
  const GidEntry* best = nullptr;
  const std::uint32_t len = length(t);
  for (const GidEntry& e : t.entries())
    if (e.index < len && e.state == EntryState::valid && mapped(raw(e.gid)) &&
        (!best || e.index < best->index))
      best = &e;
  return best;
}

/// Whether jaccl() (first mapped GID advertised, RTR from the literal index 1) routes from the
/// advertised GID, derived from docs/facts.md#jaccl-current and agreement.hpp (bytes compared; a slot
/// holding no GID never agrees).
///
/// The issue states it as "iff the first IPv4-mapped entry is at index 1". Exactly: iff index 1
/// holds the first mapped entry's GID. That is the same thing except on mlx5 tables whose first
/// address pair sits at 0 (RoCE v1) and 1 (RoCE v2): JACCL advertises the v1 entry at 0 and
/// routes from its v2 twin at 1, which holds the 16 bytes the peer learned, so it agrees.
inline bool jaccl_agrees(const GidTable& t) {
  const GidEntry* m = first_mapped(t);
  if (m == nullptr || m->index > 255) return false;
  const GidEntry* one = at(t, 1);
  return length(t) > 1 && one != nullptr && one->state == EntryState::valid && raw(one->gid) == raw(m->gid);
}

/// Ranked's filters restated from docs/policies.md ("The ranked order") and ranked.hpp.
inline bool ranked_candidate(const GidTable& t, const GidEntry& e, const RankedOptions& o) {
  if (e.index >= length(t) || e.index > 255) return false;
  if (e.state != EntryState::valid) return false;
  const Raw b = raw(e.gid);
  if (zero(b)) return false;
  if (link_local(b) && routed_by_gid(t) && !o.allow_link_local) return false;
  if (!type_ok(o.type, e.type) || !family_ok(o.family, b)) return false;
  const auto inside = [&](const Cidr& c) { return in_prefix(b, raw(c.network), c.prefix_len); };
  if (!o.subnets.empty() && std::none_of(o.subnets.begin(), o.subnets.end(), inside)) return false;
  if (std::any_of(o.excludes.begin(), o.excludes.end(), inside)) return false;
  if (!o.netdev.empty() && e.netdev != o.netdev) return false;
  if (o.require_local && !(o.local && raw(*o.local) == b)) return false;
  return true;
}

/// The documented order as a sort key (smaller is better): Thunderbolt index 0 last, then
/// link-local last, the local address first, RoCE v2 > v1 > IB > unknown, IPv4-mapped before
/// IPv6, lowest index.
using RankKey = std::tuple<bool, bool, bool, int, bool, std::uint32_t>;
inline RankKey ranked_key(const GidTable& t, const GidEntry& e, const RankedOptions& o) {
  static constexpr GidType kTypeOrder[] = {GidType::roce_v2, GidType::roce_v1, GidType::ib, GidType::unknown};
  const Raw b = raw(e.gid);
  const auto type_pos = static_cast<int>(std::find(std::begin(kTypeOrder), std::end(kTypeOrder), e.type) -
                                         std::begin(kTypeOrder));
  return {t.port().link_layer == LinkLayer::thunderbolt() && e.index == 0,
          link_local(b) && routed_by_gid(t),
          o.local.has_value() && raw(*o.local) != b,
          type_pos,
          !mapped(b),
          e.index};
}

/// The naive reference ranking: collect every candidate, sort them all by the key, take the first.
inline std::optional<GidEntry> ranked(const GidTable& t, const RankedOptions& o) {
  std::vector<GidEntry> candidates;
  for (const GidEntry& e : t.entries())
    if (ranked_candidate(t, e, o)) candidates.push_back(e);
  if (candidates.empty()) return std::nullopt;
  std::sort(candidates.begin(), candidates.end(),
            [&](const GidEntry& a, const GidEntry& b) { return ranked_key(t, a, o) < ranked_key(t, b, o); });
  return candidates.front();
}

}  // namespace gidpolicy::test::ref
