// Ds4Scan: ds4 without `--rdma-gid-index` on its macOS path: the first IPv4-mapped entry.
//
// Same byte rule as JACCL (index 0 allowed, any type), but ds4 routes from the index it found,
// so unlike JACCL it agrees. Faithful to ds4, a first mapped entry above 255 is still the one
// ds4 takes, and routing from `(uint8_t)index` would wrap: gidpolicy reports that as
// errc::index_exceeds_uint8 (naming the wrap) instead of returning it. No mapped entry at all:
// errc::no_ipv4_mapped_gid.
//
// Example:
//   auto s = gidpolicy::Ds4Scan{}.select(table);   // spec "ds4"
#pragma once

#include <gidpolicy/policy.hpp>

#include <string>
#include <vector>

namespace gidpolicy {

class AnyPolicy;    // any_policy.hpp
class SpecOptions;  // spec_options.hpp

struct Ds4Scan {
  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  [[nodiscard]] std::string spec() const { return "ds4"; }
  /// Names no peer: it picks from the table alone.
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  /// false: it picks only a slot it has checked holds a GID.
  [[nodiscard]] bool picks_unchecked() const noexcept { return false; }
  /// Reads the spec's options (registry.hpp's row for "ds4"; SpecOptions in spec_options.hpp).
  static result<AnyPolicy> from_options(const SpecOptions& options);
  friend bool operator==(const Ds4Scan&, const Ds4Scan&) = default;
};

}  // namespace gidpolicy
