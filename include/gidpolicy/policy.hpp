// The SelectionPolicy concept and its result, Selection.
//
// A policy is a small value type: given a GidTable snapshot it picks the one entry this side
// will both advertise to its peer and route from (sgid_index). Policies are pure: no verbs
// calls, no globals, no allocation per entry unless a trace is requested.
//
// Invariants every policy keeps (checked by the property suite):
//  * it never reads an index outside [0, table.length());
//  * it never returns an index above 255: `ibv_ah_attr::grh.sgid_index` is a uint8_t and a
//    larger index would silently wrap to another entry (ds4's bug);
//  * a failure carries a Trace saying why each candidate was rejected.
//
// Example:
//   gidpolicy::Selection s = policy.select(table, {.trace = true}).value();
//   s.entry.gid;           // advertise this
//   s.sgid_index();        // route from this
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/trace.hpp>

#include <concepts>
#include <cstdint>
#include <string>
#include <utility>

namespace gidpolicy {

struct NetworkView;  // network.hpp

/// How select() should run.
struct SelectOptions {
  bool trace = false;  ///< record a TraceStep per entry looked at (failures always carry one)
  /// The caller's network namespace and routes (network.hpp), when known: auto ranks GIDs whose
  /// netdev is not in it last, and needs it for peer=ADDR. Not kept after select() returns.
  const NetworkView* network = nullptr;
};

/// The entry a policy chose, and optionally why.
struct Selection {
  GidEntry entry;  ///< the chosen slot: its gid is what this side advertises
  Trace trace;     ///< empty unless SelectOptions::trace was set

  Selection() = default;
  /// (A constructor rather than aggregate init so a result<Selection> can be built in place:
  /// the untraced path copies the chosen entry once.)
  explicit Selection(const GidEntry& chosen) : entry(chosen) {}
  Selection(GidEntry&& chosen, Trace&& why) noexcept : entry(std::move(chosen)), trace(std::move(why)) {}

  /// The source GID index for RTR. Policies guarantee entry.index <= 255.
  [[nodiscard]] std::uint8_t sgid_index() const noexcept { return static_cast<std::uint8_t>(entry.index); }
};

/// A selection strategy: `p.select(table, options)` -> result<Selection>, and `p.spec()`
/// giving the spec string that parse_policy() turns back into an equal policy. Equality
/// compares options (the round trip `parse_policy(p.spec()).value() == p` needs it, and
/// AnyPolicy compares the policies it holds).
template <class P>
concept SelectionPolicy = std::copy_constructible<P> &&
    requires(const P& p, const GidTable& table, SelectOptions options) {
  { p.select(table, options) } -> std::same_as<result<Selection>>;
  { p.spec() } -> std::convertible_to<std::string>;
} && std::equality_comparable<P>;  // last: the members first rule out AnyPolicy's own operands

}  // namespace gidpolicy
