// Profiles: a whole behaviour, policy plus source-index rule, as one named value.
//
// A spec string names a behaviour, not just a choice: `jaccl` is JACCL as it ships (advertise
// the first IPv4-mapped GID, route from the literal index 1, so it can disagree), `jaccl-fixed`
// routes from the index it found, and every other spec routes from its own pick. The CLI
// (`gidpolicy check`, `select --policy`), the C API and the fake fabric all parse with
// parse_profile(), so a spec means the same thing everywhere.
//
// Example:
//   auto prof = gidpolicy::parse_profile("jaccl").value();
//   auto plan = prof.plan(table).value();
//   plan.selection.entry.gid;   // what JACCL advertises (index 2 on a Mac mini, PR 3389)
//   plan.sgid_index;            // 1: what it routes from
//   plan.agrees();              // false; plan.agreement.explanation says why
#pragma once

#include <gidpolicy/agreement.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/plan.hpp>
#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/filters.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policy.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

/// A policy and the rule that turns its selection into an sgid_index.
struct Profile {
  AnyPolicy policy;
  SourceIndex source = SourceIndex::selected();

  /// Select on `table` and resolve the routed index. Fails only when the policy fails; a
  /// disagreement is reported in Plan::agreement, not as an error (reproducing it is the point
  /// of a literal source index).
  [[nodiscard]] result<Plan> plan(const GidTable& table, SelectOptions run = {}) const;
  /// The spec parse_profile() reads back: "jaccl" for JacclFirstMapped + literal(1),
  /// policy.spec() for a selected source, otherwise policy.spec() + "@sgid=N".
  [[nodiscard]] std::string spec() const;
  friend bool operator==(const Profile&, const Profile&) = default;
};

/// Parse a behaviour spec (grammar in policies/spec.hpp): a policy spec optionally followed by
/// "@sgid=N" (route from the literal N: only for reproducing bugs). Errors as parse_policy().
result<Profile> parse_profile(std::string_view spec);

/// The named behaviours of the seed systems and the recommended one.
namespace profiles {

/// JACCL today: first IPv4-mapped GID advertised, RTR from the literal index 1 (can disagree).
Profile jaccl();
/// JACCL before April 2026: index 1 advertised and routed from (consistent, but blind).
Profile jaccl_legacy();
/// JACCL fixed: first IPv4-mapped GID, routed from the index where it was found.
Profile jaccl_fixed();
/// ds4 on macOS: `--rdma-gid-index N` when given, otherwise the first IPv4-mapped GID.
Profile ds4(std::optional<std::uint32_t> index = std::nullopt);
/// ds4 on Linux (tp_rdma_linux_gid): RoCE v2, non-zero, the control socket's address first.
Profile ds4_linux(std::optional<Gid> local = std::nullopt, std::optional<std::int32_t> index = std::nullopt);
/// The recommended automatic behaviour: Ranked with `options`, routed from its pick.
Profile automatic(RankedOptions options = {});

/// Every named profile with default arguments, in the order `gidpolicy check` shows them:
/// jaccl, jaccl-legacy, jaccl-fixed, ds4, ds4-linux, auto.
std::vector<Profile> all();

}  // namespace profiles

}  // namespace gidpolicy
