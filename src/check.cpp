// check_profile(): one row of `gidpolicy check` (check.hpp).
#include <gidpolicy/check.hpp>

#include <utility>

namespace gidpolicy {

PeerInfo like_peer(const GidTable& table, const Plan& plan) {
  PeerInfo peer;
  peer.qpn = 0x11;
  peer.psn = 7;
  peer.gid = plan.selection.entry.gid;
  peer.mtu = table.port().active_mtu;
  if (plan.selection.entry.type != GidType::unknown) peer.gid_type = plan.selection.entry.type;
  return peer;
}

CheckRow check_profile(const GidTable& table, const Profile& profile, const DriverModel& model) {
  CheckRow row;
  row.profile = profile.spec();
  auto plan = profile.plan(table);
  if (!plan) {
    row.error = std::move(plan).error();
    return row;
  }
  // The one path: the attributes RtrBuilder builds from the plan, judged by the driver model.
  row.prediction = predict_rtr(table, plan.value(), like_peer(table, plan.value()), model);
  row.plan = std::move(plan).value();
  return row;
}

}  // namespace gidpolicy
