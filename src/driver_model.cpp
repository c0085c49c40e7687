#include <gidpolicy/driver_model.hpp>

#include <cctype>
#include <cerrno>

namespace gidpolicy {

#if defined(__linux__) || defined(__APPLE__)
// The hand-written tables must be this host's <cerrno>: a live call's errno is judged with
// Errnos::of(host_platform()). Checked where the compiler knows both (Linux, macOS).
namespace {
constexpr Errnos kHost = Errnos::of(host_platform());
static_assert(kHost.einval == EINVAL && kHost.enodata == ENODATA && kHost.enodev == ENODEV);
static_assert(kHost.enetunreach == ENETUNREACH && kHost.etimedout == ETIMEDOUT && kHost.ebusy == EBUSY);
static_assert(kHost.eopnotsupp == EOPNOTSUPP && kHost.econnrefused == ECONNREFUSED);
}  // namespace
#endif

std::string_view to_string(Platform p) noexcept { return p == Platform::darwin ? "darwin" : "linux"; }

std::optional<Platform> platform_from_string(std::string_view s) noexcept {
  if (s == "linux") return Platform::linux_kernel;
  if (s == "darwin" || s == "macos" || s == "apple") return Platform::darwin;
  return std::nullopt;
}

std::string errno_name(Platform p, int err) {
  const Errnos e = Errnos::of(p);
  const char* name = nullptr;
  if (err == e.einval)
    name = "EINVAL";
  else if (err == e.enodata)
    name = "ENODATA";
  else if (err == e.enodev)
    name = "ENODEV";
  else if (err == e.enetunreach)
    name = "ENETUNREACH";
  else if (err == e.etimedout)
    name = "ETIMEDOUT";
  else if (err == e.ebusy)
    name = "EBUSY";
  else if (err == e.eopnotsupp)
    name = "EOPNOTSUPP";
  else if (err == e.econnrefused)
    name = "ECONNREFUSED";
  else if (err == ENOMEM)  // 12 on Linux and Darwin alike: a device out of resources
    name = "ENOMEM";
  if (name) return name;
  return "errno " + std::to_string(err);
}

std::string_view to_string(RtrOutcome o) noexcept {
  switch (o) {
    case RtrOutcome::ok:
      return "ok";
    case RtrOutcome::error:
      return "error";
    case RtrOutcome::times_out:
      return "times_out";
    case RtrOutcome::unknown:
      return "unknown";
  }
  return "unknown";
}

DriverModel DriverModel::linux_kernel() {
  DriverModel p;
  p.name = "linux";
  p.platform = Platform::linux_kernel;
  return p;
}

DriverModel DriverModel::apple_thunderbolt() {
  DriverModel p;
  p.name = "apple_thunderbolt";
  p.platform = Platform::darwin;
  p.enodata_for_empty_slot = false;
  p.grh_required_on_roce = false;
  p.family_mismatch_is_einval = false;
  p.link_local_source_times_out = false;  // index 0 (the fe80) is its own rule below
  p.roce_version_mismatch_times_out = false;
  p.uc_only = true;                     // RC create: errno 102 (docs/facts.md#apple-thunderbolt)
  p.max_qps_per_device = 10;            // the 11th QP: errno 16 EBUSY
  p.index0_times_out = true;            // PR 3468, tmc/apple: errno 60
  p.source_must_be_ipv4_mapped = true;  // exo 1390, MLX 3467, PR 4191, PR 3389: errno 22
  p.absent_source_is_einval = true;
  p.grh_required = true;          // not reported either way; JACCL always sets a GRH on Thunderbolt
  p.uc_waits_for_receive = true;  // JACCL's credit-less collectives work on real clusters
  return p;
}

std::optional<DriverModel> DriverModel::by_name(std::string_view name) {
  if (name == "linux") return linux_kernel();
  if (name == "apple_thunderbolt" || name == "apple-thunderbolt" || name == "apple" || name == "darwin" ||
      name == "thunderbolt")
    return apple_thunderbolt();
  return std::nullopt;
}

DriverModel DriverModel::for_link_layer(LinkLayer l) {
  return l.kind() == LinkLayer::Kind::thunderbolt ? apple_thunderbolt() : linux_kernel();
}

DriverModel DriverModel::for_platform(Platform p) {
  return p == Platform::darwin ? apple_thunderbolt() : linux_kernel();
}

DriverModel DriverModel::for_table(const GidTable& table, std::optional<Platform> platform) {
  return platform ? for_platform(*platform) : for_link_layer(table.port().link_layer);
}

std::string RtrVerdict::to_string(Platform p) const {
  switch (outcome) {
    case RtrOutcome::ok:
      return reason.empty() ? "ok" : "ok: " + reason;
    case RtrOutcome::error:
      return errno_name(p, err) + " (" + std::to_string(err) + "): " + reason;
    case RtrOutcome::times_out:
      return "times out (" + errno_name(p, err) + " " + std::to_string(err) + "): " + reason;
    case RtrOutcome::unknown:
      return "unknown: " + reason;
  }
  return reason;
}

std::string_view to_string(RtrRule r) noexcept {
  switch (r) {
    case RtrRule::none:
      return "none";
    case RtrRule::qp_type:
      return "qp_type";
    case RtrRule::no_grh:
      return "no_grh";
    case RtrRule::dgid_zero:
      return "dgid_zero";
    case RtrRule::index_out_of_range:
      return "index_out_of_range";
    case RtrRule::not_shown:
      return "not_shown";
    case RtrRule::empty_slot:
      return "empty_slot";
    case RtrRule::unreadable:
      return "unreadable";
    case RtrRule::index_0:
      return "index_0";
    case RtrRule::source_not_mapped:
      return "source_not_mapped";
    case RtrRule::netdev_gone:
      return "netdev_gone";
    case RtrRule::family_mismatch:
      return "family_mismatch";
    case RtrRule::link_local_source:
      return "link_local_source";
    case RtrRule::roce_version_mismatch:
      return "roce_version_mismatch";
    case RtrRule::qp_limit:
      return "qp_limit";
  }
  return "none";
}

namespace {

std::string describe(const GidEntry& e) {
  std::string s = e.gid.to_string();
  if (e.type != GidType::unknown) s += " (" + std::string(to_string(e.type)) + ")";
  return s;
}

}  // namespace

RtrVerdict judge_rtr(const GidTable& table, const RtrRequest& req, const DriverModel& model) {
  const Errnos E = Errnos::of(model.platform);
  const bool roce = table.port().link_layer.kind() == LinkLayer::Kind::ethernet;
  std::string wrap;
  // The driver only ever sees the low 8 bits (grh.sgid_index is a uint8_t).
  const std::uint32_t idx = req.sgid_index & 0xffu;
  if (req.sgid_index > 0xffu)
    wrap = "index " + std::to_string(req.sgid_index) + " wrapped to " + std::to_string(idx) + " (uint8_t); ";
  const std::string at = wrap + "sgid_index " + std::to_string(idx);

  // Each rule either decides (the verdict names it) or is recorded as passed.
  std::uint32_t passed = 0;
  const auto pass = [&](RtrRule r) { passed |= rule_bit(r); };
  const auto decide = [&](RtrRule r, RtrOutcome o, int err, std::string reason) {
    return RtrVerdict{o, err, std::move(reason), r, passed};
  };
  const auto error = [&](RtrRule r, int err, std::string reason) {
    return decide(r, RtrOutcome::error, err, std::move(reason));
  };

  if (model.uc_only && req.qp_type == QpKind::rc)
    return error(RtrRule::qp_type, E.eopnotsupp, "RC queue pairs are not supported (UC only)");
  if (model.uc_only) pass(RtrRule::qp_type);
  if (!req.is_global) {
    if ((roce && model.grh_required_on_roce) || model.grh_required)
      return error(RtrRule::no_grh, E.einval,
                   "no GRH (is_global = 0): RoCE and Thunderbolt route by GID and need one");
    pass(RtrRule::no_grh);
    return decide(RtrRule::none, RtrOutcome::ok, 0, "LID-routed, no GRH");
  }
  pass(RtrRule::no_grh);
  // The source slot before the destination: Linux's _ib_modify_qp resolves the sgid attribute
  // first (rdma_fill_sgid_attr -> rdma_get_gid_attr: EINVAL out of range, ENODATA for an empty
  // slot) and only then the destination (ib_resolve_eth_dmac), so an empty slot with a zero dgid
  // (both sides pinned empty slots and advertised zeros) is ENODATA, not EINVAL.
  if (idx >= table.length() && table.port().gid_tbl_len)
    return error(RtrRule::index_out_of_range, E.einval,
                 at + " is not below gid_tbl_len " + std::to_string(table.length()));
  pass(RtrRule::index_out_of_range);

  const GidEntry* e = table.find(idx);
  if (!e && table.holes() == Holes::not_shown)
    return decide(RtrRule::not_shown, RtrOutcome::unknown, 0,
                  at + " was not shown by the source (ibv_devinfo hides GIDs with a zero interface id; "
                       "show_gids rows pasted without their header and footer may have been cut)");
  pass(RtrRule::not_shown);
  if (!e || e->state == EntryState::empty || (e->state == EntryState::valid && e->gid.is_zero())) {
    if (model.absent_source_is_einval || !model.enodata_for_empty_slot)
      return error(RtrRule::empty_slot, E.einval, at + " is empty");
    return error(RtrRule::empty_slot, E.enodata, at + " is empty");
  }
  pass(RtrRule::empty_slot);
  if (req.dgid.is_zero()) return error(RtrRule::dgid_zero, E.einval, "the destination GID is zero");
  pass(RtrRule::dgid_zero);
  if (e->state == EntryState::unreadable)
    return error(RtrRule::unreadable, E.einval, at + " could not be read (" + e->read_error.message() + ")");
  pass(RtrRule::unreadable);
  if (model.index0_times_out) {
    if (idx == 0)
      return error(RtrRule::index_0, E.etimedout,
                   at + " holds " + describe(*e) + "; routing from index 0 times out on this driver");
    pass(RtrRule::index_0);
  }
  if (model.source_must_be_ipv4_mapped) {
    if (!e->gid.is_ipv4_mapped())
      return error(RtrRule::source_not_mapped, E.einval,
                   at + " holds " + describe(*e) + ", not an IPv4-mapped GID");
    pass(RtrRule::source_not_mapped);
  }
  if (!req.source_netdev_present)
    return error(RtrRule::netdev_gone, E.enodev,
                 at + " holds " + describe(*e) + " but its netdev is gone or in another namespace");
  pass(RtrRule::netdev_gone);
  if (roce && model.family_mismatch_is_einval) {
    if (e->gid.is_ipv4_mapped() != req.dgid.is_ipv4_mapped())
      return error(RtrRule::family_mismatch, E.einval,
                   at + " holds " + describe(*e) + " but the destination " + req.dgid.to_string() +
                       " is of the other address family");
    pass(RtrRule::family_mismatch);
  }
  if (roce && model.link_local_source_times_out) {
    if (e->gid.is_link_local() && !req.dgid.is_link_local())
      return decide(RtrRule::link_local_source, RtrOutcome::times_out, E.etimedout,
                    at + " holds the link-local " + describe(*e) + ": not routed, traffic times out");
    pass(RtrRule::link_local_source);
  }
  if (roce && model.roce_version_mismatch_times_out && req.peer_gid_type &&
      (e->type == GidType::roce_v1 || e->type == GidType::roce_v2) &&
      (*req.peer_gid_type == GidType::roce_v1 || *req.peer_gid_type == GidType::roce_v2)) {
    if (e->type != *req.peer_gid_type)
      return decide(RtrRule::roce_version_mismatch, RtrOutcome::times_out, E.etimedout,
                    at + " is " + std::string(to_string(e->type)) + " but the peer uses " +
                        std::string(to_string(*req.peer_gid_type)) +
                        ": packets are dropped, traffic times out");
    pass(RtrRule::roce_version_mismatch);
  }
  return decide(RtrRule::none, RtrOutcome::ok, 0,
                wrap.empty() ? std::string() : wrap + "routing from " + describe(*e));
}

RtrVerdict judge_create_qp(QpKind type, unsigned existing_qps, const DriverModel& model) {
  const Errnos E = Errnos::of(model.platform);
  if (model.uc_only && type == QpKind::rc)
    return {RtrOutcome::error, E.eopnotsupp, "RC queue pairs are not supported (UC only)", RtrRule::qp_type,
            0};
  const std::uint32_t passed = model.uc_only ? rule_bit(RtrRule::qp_type) : 0u;
  if (model.max_qps_per_device != 0 && existing_qps >= model.max_qps_per_device)
    return {RtrOutcome::error, E.ebusy,
            "the device allows " + std::to_string(model.max_qps_per_device) + " queue pairs",
            RtrRule::qp_limit, passed};
  return {RtrOutcome::ok,
          0,
          {},
          RtrRule::none,
          passed | (model.max_qps_per_device != 0 ? rule_bit(RtrRule::qp_limit) : 0u)};
}

}  // namespace gidpolicy
