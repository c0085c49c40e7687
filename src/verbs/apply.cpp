#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/verbs/apply.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

namespace gidpolicy::verbs {
namespace {

std::string describe(const GidEntry& e) {
  switch (e.state) {
    case EntryState::empty:
      return "is empty";
    case EntryState::unreadable:
      return "cannot be read (" + e.read_error.message() + ")";
    case EntryState::valid:
      break;
  }
  std::string s = "holds " + e.gid.to_string();
  if (e.type != GidType::unknown) s += " (" + std::string(to_string(e.type)) + ")";
  return s;
}

}  // namespace

result<PlannedPort> plan_port(VerbsApi& api, DeviceHandle device, std::uint32_t port, const Profile& profile,
                              const SnapshotOptions& options) {
  GIDPOLICY_TRY(table, snapshot(api, device, port, options));
  GIDPOLICY_TRY(plan, profile.plan(table));
  return PlannedPort{std::move(table), std::move(plan)};
}

result<void> preflight(VerbsApi& api, DeviceHandle device, std::uint32_t port, std::uint32_t sgid_index,
                       const Gid& advertised, std::optional<GidType> type) {
  if (sgid_index > 0xffu)
    return fail(errc::index_exceeds_uint8, "sgid_index " + std::to_string(sgid_index) + " would wrap to " +
                                               std::to_string(sgid_index & 0xffu));
  GIDPOLICY_TRY(name, api.device_name(device));
  const std::string at = entry_name(name, port, sgid_index);
  GIDPOLICY_TRY(now, read_entry(api, device, port, sgid_index));
  if (now.state == EntryState::unreadable)
    return fail(Error(now.read_error, "preflight: " + at + " cannot be re-read; refusing to modify_qp"));
  // Same bytes as another RoCE version is another entry: after a port flap an address's v1 twin
  // can land where its v2 entry was, and routing from it passes RTR and then times out.
  const bool same_gid = now.state == EntryState::valid && now.gid == advertised;
  const bool same_type = !type || now.type == GidType::unknown || now.type == *type;
  if (same_gid && same_type) return success();
  std::string expected = advertised.to_string();
  if (same_gid) expected += " (" + std::string(to_string(*type)) + ")";
  std::string where;
  auto moved = find_current_index(api, device, port, advertised, type);
  if (moved)
    where = "; the advertised GID is now at index " + std::to_string(moved.value());
  else if (moved.error() == errc::gid_changed)
    where = "; the advertised GID is no longer in the table";
  return fail(errc::gid_changed, at + " " + describe(now) + ", not the advertised " + expected + where +
                                     ": select again and re-exchange with the peer");
}

result<void> preflight(VerbsApi& api, DeviceHandle device, std::uint32_t port, const RtrAttributes& rtr) {
  if (!rtr.agrees())
    return fail(errc::disagreement, rtr.agreement.explanation + " (refused before modify_qp)");
  std::optional<GidType> type;
  if (rtr.agreement.at_index && rtr.agreement.at_index->type != GidType::unknown)
    type = rtr.agreement.at_index->type;
  return preflight(api, device, port, rtr.sgid_index(), rtr.agreement.advertised, type);
}

result<void> apply_rtr(VerbsApi& api, QpHandle qp, DeviceHandle device, std::uint32_t port,
                       const RtrAttributes& rtr, const ApplyOptions& options) {
  if (options.preflight) GIDPOLICY_TRYV(preflight(api, device, port, rtr));
  auto r = api.modify_qp(qp, rtr.attr, rtr.mask);
  if (r) return r;
  Error e = r.error();
  if (e.code.category() != std::generic_category()) return r;  // not a driver errno: nothing to diagnose
  // The failure path may afford a fresh snapshot: it is what diagnose() ranks causes with.
  SnapshotOptions so;
  so.allow_inactive = true;
  auto table = snapshot(api, device, port, so);
  DiagnoseContext ctx;
  if (table) ctx.table = &table.value();
  ctx.sgid_index = rtr.sgid_index();
  ctx.advertised = rtr.agreement.advertised;
  if (rtr.is_global()) ctx.peer_gid = rtr.dgid();
  ctx.peer_gid_type = rtr.peer_gid_type;
  ctx.qp_type = rtr.qp_type;
  ctx.network = options.network;
  Platform platform = host_platform();
  if (options.platform)
    platform = *options.platform;
  else if (table && table.value().port().link_layer.kind() == LinkLayer::Kind::thunderbolt)
    platform = Platform::darwin;
  const Diagnosis d = diagnose(e.code.value(), platform, ctx);
  e.detail += "\n" + d.to_string();
  return fail(std::move(e));
}

}  // namespace gidpolicy::verbs
