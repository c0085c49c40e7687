// FirstOf: try policies in order; the first that succeeds wins.
//
// The honest form of a fallback: "the GID I configured, else the automatic choice" is written
// down (`first(validated:index=3|auto)`) instead of happening silently the way NCCL falls back
// to index 0. The trace keeps one Attempt per alternative tried, with each failure's reason, so
// a caller can see that index 3 was refused and why before auto picked something else.
//
// Failure: errc::no_candidate naming every alternative's error; the Trace holds every attempt.
//
// Example:
//   FirstOf p{{ValidatedExplicit{.index = 3}, Ranked{}}};   // spec "first(validated:index=3|auto)"
#pragma once

#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policy.hpp>

#include <string>
#include <vector>

namespace gidpolicy {

struct FirstOf {
  std::vector<AnyPolicy> alternatives;

  /// Every alternative tried until one succeeds. With SelectOptions::trace the Selection's trace
  /// has one Attempt per alternative tried (the failed ones, then the winner).
  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const;
  /// "first(A|B|...)".
  [[nodiscard]] std::string spec() const;
  /// Every alternative's peers, in order, once each.
  [[nodiscard]] std::vector<PeerAddress> peers() const;
  /// Whether any alternative does.
  [[nodiscard]] bool picks_unchecked() const noexcept;
  friend bool operator==(const FirstOf&, const FirstOf&) = default;
};

}  // namespace gidpolicy
