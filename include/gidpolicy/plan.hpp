// Plan: what a behaviour does on one table snapshot, the GID it advertises and the index it
// routes from, with whether the two agree.
//
// The gotcha it carries: advertising a GID and routing from an sgid_index are two decisions
// that must name one table entry. A Plan keeps both next to their Agreement, so a plan that
// disagrees (JACCL's literal index 1 with the mapped GID at index 2, MLX PR 3389) says so
// before any RTR. Plans are made by a Profile (profiles.hpp) and consumed by RtrBuilder
// (rtr.hpp); its own header so the builder does not depend on the profiles.
//
// Example:
//   auto plan = gidpolicy::parse_profile("jaccl").value().plan(table).value();
//   plan.selection.entry.gid;   // advertise this
//   plan.sgid_index;            // route from this
//   if (!plan.agrees()) std::cerr << plan.agreement.explanation << "\n";
#pragma once

#include <gidpolicy/agreement.hpp>
#include <gidpolicy/policy.hpp>

#include <cstdint>

namespace gidpolicy {

/// What a behaviour does on one table: the GID it advertises and the index it routes from.
struct Plan {
  Selection selection;          ///< advertise selection.entry.gid
  std::uint8_t sgid_index = 0;  ///< route from this index
  Agreement agreement;          ///< check_agreement(table, advertised, sgid_index)
  [[nodiscard]] bool agrees() const noexcept { return agreement.agrees; }
};

}  // namespace gidpolicy
