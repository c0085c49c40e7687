// JacclLegacyIndex1: JACCL from December 2025 to April 2026: advertise index 1, whatever it is.
//
// Consistent (it routes from the index it advertises) but blind: it advertises whatever sits at
// index 1, including the all-zero GID of an empty slot (an ibv_query_gid of an empty in-range
// slot succeeds and reads zeros) or a link-local GID. Reproduced faithfully: an empty slot is
// "selected" with the zero GID, and the trace says so.
//
// Failure: errc::index_out_of_range when gid_tbl_len <= 1 (the read fails),
// errc::entry_unreadable, errc::entry_not_shown (ibv_devinfo did not print index 1).
//
// Example:
//   auto s = gidpolicy::JacclLegacyIndex1{}.select(table);   // s.value().entry.index == 1
#pragma once

#include <gidpolicy/policy.hpp>

#include <string>
#include <vector>

namespace gidpolicy {

struct JacclLegacyIndex1 {
  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  [[nodiscard]] std::string spec() const { return "jaccl-legacy"; }
  /// Names no peer: it picks from the table alone.
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  /// true: index 1 is taken whatever it holds (an empty slot advertises zeros), as JACCL did.
  [[nodiscard]] bool picks_unchecked() const noexcept { return true; }
  friend bool operator==(const JacclLegacyIndex1&, const JacclLegacyIndex1&) = default;
};

}  // namespace gidpolicy
