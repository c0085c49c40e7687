// Agreement between the GID a side advertises and the index it routes from.
//
// The bug this header exists for: JACCL advertises the first IPv4-mapped GID but routes from
// the literal sgid_index 1; the two name the same table entry only when that GID sits at index
// 1 (MLX PR 3389: a Mac mini with it at index 2 fails RTR with errno 22). gidpolicy derives the
// routed index from the selection, so agreement holds by construction; SourceIndex::literal()
// is the one, named, way to ask for a different index, and check_agreement() says whether the
// pair still agrees.
//
// Example:
//   auto a = gidpolicy::check_agreement(table, advertised_gid, 1);
//   if (!a.agrees) std::cerr << a.explanation << "\n";
//   // "sgid_index 1 is empty; the advertised GID ::ffff:10.99.0.3 is at index 2"
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/policy.hpp>
#include <gidpolicy/source_index.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace gidpolicy {

/// Whether the entry at an sgid_index holds the advertised GID, and if not, what it holds and
/// where the advertised GID really is.
struct Agreement {
  bool agrees = false;
  std::uint32_t sgid_index = 0;  ///< as asked; an index above 255 never agrees (uint8_t field)
  Gid advertised;
  /// What the table holds at sgid_index: nullopt for an index outside the table or a slot the
  /// source did not list (see GidTable::holes()).
  std::optional<GidEntry> at_index;
  /// The lowest index holding the advertised GID, if any entry does.
  std::optional<std::uint32_t> advertised_at;
  /// One line for people: "sgid_index 1 is empty; the advertised GID ::ffff:10.99.0.3 is at
  /// index 2", or "sgid_index 3 holds the advertised GID ::ffff:200.0.209.6 (roce_v2)".
  std::string explanation;

  /// errc::disagreement with the explanation, or success.
  [[nodiscard]] result<void> to_result() const;
};

/// Does the entry at `sgid_index` hold `advertised`?
///
/// Compares the 16 bytes only (the peer learns bytes, not the GID type). An empty, unreadable,
/// unlisted or out-of-range slot never agrees, not even with an advertised zero GID: a slot
/// that holds no GID cannot be routed from (Linux returns ENODATA or EINVAL at RTR). Nor does
/// an index above 255: `grh.sgid_index` would wrap to another entry.
Agreement check_agreement(const GidTable& table, const Gid& advertised, std::uint32_t sgid_index);

}  // namespace gidpolicy
