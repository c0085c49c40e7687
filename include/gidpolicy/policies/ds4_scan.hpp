// Ds4Scan: ds4 without `--rdma-gid-index` on its macOS path: the first IPv4-mapped entry.
//
// Same byte rule as JACCL (index 0 allowed, any type), but ds4 routes from the index it found,
// so unlike JACCL it agrees. Differences from JacclFirstMapped: the failure is a plain
// errc::no_ipv4_mapped_gid (ds4 has no hint), and ds4 scans only what it can address: entries
// above 255 are skipped (their index cannot be an sgid_index) rather than chosen.
//
// Example:
//   auto s = gidpolicy::Ds4Scan{}.select(table);   // spec "ds4"
#pragma once

#include <gidpolicy/policy.hpp>

#include <string>

namespace gidpolicy {

struct Ds4Scan {
  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  [[nodiscard]] std::string spec() const { return "ds4"; }
  friend bool operator==(const Ds4Scan&, const Ds4Scan&) = default;
};

}  // namespace gidpolicy
