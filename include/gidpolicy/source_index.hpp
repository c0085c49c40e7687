// SourceIndex: the rule that turns a selection into the sgid_index an RTR routes from.
//
// The gotcha it names: JACCL advertises the first IPv4-mapped GID but routes from the literal
// sgid_index 1, which holds that GID only on some machines (MLX PR 3389). `selected()` routes
// from the selection's own index, so the routed entry is the advertised one by construction;
// `literal(n)` is the one, named, way to route from somewhere else, kept to reproduce JACCL.
// Its own header because the plan (plan.hpp), the profile parser and the RTR builder all take
// one, and none of them should include the others for it.
//
// Example:
//   auto rule = gidpolicy::SourceIndex::literal(1);   // JACCL's `sgid_index = 1`
//   std::uint8_t routed = rule.resolve(selection);   // 1, whatever was selected
#pragma once

#include <gidpolicy/policy.hpp>

#include <cstdint>
#include <string>

namespace gidpolicy {

/// The rule that decides which sgid_index an RTR routes from.
///
/// `selected()` (the default everywhere) routes from the index the policy chose, so the routed
/// entry is the advertised entry. `literal(n)` routes from n whatever was chosen: it exists to
/// reproduce JACCL (`literal(1)`) and every result built with it reports whether it agrees.
class SourceIndex {
 public:
  /// Route from the selection's own index (agreement by construction).
  static constexpr SourceIndex selected() noexcept { return SourceIndex(false, 0); }
  /// Route from index n regardless of the selection (JACCL's `sgid_index = 1`).
  static constexpr SourceIndex literal(std::uint8_t n) noexcept { return SourceIndex(true, n); }

  [[nodiscard]] constexpr bool is_literal() const noexcept { return literal_; }
  /// The literal index; 0 for selected().
  [[nodiscard]] constexpr std::uint8_t literal_index() const noexcept { return index_; }
  /// The sgid_index this rule yields for a selection.
  [[nodiscard]] constexpr std::uint8_t resolve(const Selection& s) const noexcept {
    return literal_ ? index_ : s.sgid_index();
  }
  /// "selected" or "literal(N)".
  [[nodiscard]] std::string to_string() const;

  friend constexpr bool operator==(const SourceIndex&, const SourceIndex&) noexcept = default;

 private:
  constexpr SourceIndex(bool literal, std::uint8_t index) noexcept : literal_(literal), index_(index) {}
  bool literal_ = false;
  std::uint8_t index_ = 0;
};

}  // namespace gidpolicy
