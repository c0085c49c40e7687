// One row of `gidpolicy check`: what a profile does on one table and how its RTR would end, as
// data, so the CLI, the Python module and any other caller predict the same thing.
//
// The prediction isolates this side's choice: the peer is taken to run the same profile on a
// like table, so it advertises the GID this side advertises (same family, same RoCE version,
// same MTU). A failed RTR in a row is then this side's sgid_index choice, never a mismatch
// between two different hosts (`gidpolicy fleet` judges those).
//
// Example:
//   const auto model = gidpolicy::DriverModel::for_table(table);
//   for (const auto& profile : gidpolicy::profiles::all()) {
//     const gidpolicy::CheckRow row = gidpolicy::check_profile(table, profile, model);
//     if (row.plan) std::cout << row.profile << ": " << row.prediction->to_string(model.platform) << "\n";
//   }
#pragma once

#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/plan.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>

#include <optional>
#include <string>

namespace gidpolicy {

/// What one profile does on one table.
struct CheckRow {
  std::string profile;                      ///< the profile's spec
  std::optional<Error> error;               ///< the selection failed (no plan, no prediction)
  std::optional<Plan> plan;                 ///< what it advertises and routes from
  std::optional<RtrPrediction> prediction;  ///< the RTR towards a like peer, judged by the model
  /// The selection succeeded and its advertised GID is the one it routes from.
  [[nodiscard]] bool agrees() const noexcept { return plan && plan->agrees(); }
};

/// The peer check_profile() predicts against: it advertises what `plan` advertises (and its
/// GID type when known), with `table`'s active MTU; QPN 0x11, PSN 7.
PeerInfo like_peer(const GidTable& table, const Plan& plan);

/// Plan `profile` on `table` and predict the RTR towards like_peer() through `model` (UC, as
/// predict_rtr's default).
CheckRow check_profile(const GidTable& table, const Profile& profile, const DriverModel& model);

}  // namespace gidpolicy
