// The benchmarks' shared table: the worst case for every scanning strategy that can succeed.
// Link-local v1/v2 pairs fill every slot except the only IPv4-mapped pair, which sits as late
// as an sgid_index can reach (the last two slots, or 252/253 in a table longer than 256).
#pragma once

#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace gidpolicy::bench {

inline GidTable worst_case_table(std::uint32_t n) {
  PortInfo p;
  p.device = "mlx5_0";
  p.link_layer = LinkLayer::ethernet();
  p.gid_tbl_len = n;
  std::vector<GidEntry> entries;
  const std::uint32_t at = n >= 2 ? std::min<std::uint32_t>(n - 2, 252) : 0;
  for (std::uint32_t i = 0; i + 1 < n; i += 2) {
    if (i == at) continue;
    Gid::Bytes b{0xfe, 0x80};
    b[14] = static_cast<std::uint8_t>(i >> 8);
    b[15] = static_cast<std::uint8_t>(i | 1);
    entries.push_back(GidEntry::valid(i, Gid(b), GidType::roce_v1, "bond0", 5));
    entries.push_back(GidEntry::valid(i + 1, Gid(b), GidType::roce_v2, "bond0", 5));
  }
  const Gid v4 = Gid::ipv4_mapped(0xc800d106u);
  entries.push_back(GidEntry::valid(at, v4, GidType::roce_v1, "bond0", 5));
  if (n >= 2) entries.push_back(GidEntry::valid(at + 1, v4, GidType::roce_v2, "bond0", 5));
  return GidTable::make(p, std::move(entries)).value();
}

/// The reference both benchmark programs compare with: JACCL's info() loop as it is written
/// (copy each GID out, memcmp the 12-byte IPv4-mapped prefix, stop at the first). Not inlined,
/// so each scan is one call, as select() is.
__attribute__((noinline)) inline int naive_jaccl_scan(const GidTable& t) {
  static const std::uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  for (const GidEntry& e : t) {
    std::uint8_t raw[16];
    e.gid.copy_to(raw);
    if (std::memcmp(raw, kPrefix, sizeof kPrefix) == 0) return static_cast<int>(e.index);
  }
  return -1;
}

/// The index of the mapped pair's RoCE v2 entry: what the explicit-index strategies are given.
inline std::uint32_t v2_index(const GidTable& t) { return Ds4Scan{}.select(t).value().entry.index + 1; }

}  // namespace gidpolicy::bench
