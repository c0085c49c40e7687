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
#include <gidpolicy/network.hpp>
#include <gidpolicy/trace.hpp>

#include <concepts>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

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
///
/// Every policy also answers, for itself, the questions callers ask of any policy, so that no
/// caller keeps a list of policy types (a new policy that routes to a peer is then routed by
/// everything that routes peers, without an edit elsewhere):
///  * `p.peers()`: the peers whose kernel route its select() needs (SelectOptions::network):
///    auto's, rdma_cm's and libfabric MSG's peer=, the alternatives' of a combinator; {} for a
///    policy that picks from the table alone. peers_of() (network.hpp) is this.
///  * `p.picks_unchecked()`: whether select() may return a slot without checking it holds a GID
///    (the faithful reproductions of stacks that read an index unchecked: ds4's
///    --rdma-gid-index, JACCL legacy's index 1, NCCL_IB_GID_INDEX, perftest's -x, libfabric UD's
///    FI_VERBS_GID_IDX, and NCCL's and perftest's walks, which keep an empty index 0). The plan of
///    such a slot never agrees (plan.hpp); every other policy's selection holds a GID.
///
/// A policy that lacks one of these does not satisfy the concept: AnyPolicy will not hold it.
///
/// Example:
///   const gidpolicy::AnyPolicy p =
///       gidpolicy::parse_policy("first(validated:index=2|auto:peer=10.0.0.9)").value();
///   for (const gidpolicy::PeerAddress& a : p.peers()) std::cout << a.to_string() << "\n";  // 10.0.0.9
///   if (!p.picks_unchecked()) std::cout << "every slot it picks holds a GID\n";
template <class P>
concept SelectionPolicy = std::copy_constructible<P> &&
    requires(const P& p, const GidTable& table, SelectOptions options) {
  { p.select(table, options) } -> std::same_as<result<Selection>>;
  { p.spec() } -> std::convertible_to<std::string>;
  { p.peers() } -> std::same_as<std::vector<PeerAddress>>;
  { p.picks_unchecked() } -> std::same_as<bool>;
} && std::equality_comparable<P>;  // last: the members first rule out AnyPolicy's own operands

}  // namespace gidpolicy
