#include <gidpolicy/driver_profile.hpp>

#include <cctype>

namespace gidpolicy {

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
  if (name) return name;
  return "errno " + std::to_string(err);
}

std::string_view to_string(QpKind k) noexcept {
  switch (k) {
    case QpKind::rc:
      return "rc";
    case QpKind::uc:
      return "uc";
    case QpKind::ud:
      return "ud";
  }
  return "uc";
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

DriverProfile DriverProfile::linux_kernel() {
  DriverProfile p;
  p.name = "linux";
  p.platform = Platform::linux_kernel;
  return p;
}

DriverProfile DriverProfile::apple_thunderbolt() {
  DriverProfile p;
  p.name = "apple_thunderbolt";
  p.platform = Platform::darwin;
  p.enodata_for_empty_slot = false;
  p.grh_required_on_roce = false;
  p.family_mismatch_is_einval = false;
  p.link_local_source_times_out = false;  // index 0 (the fe80) is its own rule below
  p.roce_version_mismatch_times_out = false;
  p.uc_only = true;                     // RC create: errno 102 (FACTS.md 5)
  p.max_qps_per_device = 10;            // the 11th QP: errno 16 EBUSY
  p.index0_times_out = true;            // PR 3468, tmc/apple: errno 60
  p.source_must_be_ipv4_mapped = true;  // exo 1390, MLX 3467, PR 4191, PR 3389: errno 22
  p.absent_source_is_einval = true;
  p.grh_required = true;          // not reported either way; JACCL always sets a GRH on Thunderbolt
  p.uc_waits_for_receive = true;  // JACCL's credit-less collectives work on real clusters
  return p;
}

std::optional<DriverProfile> DriverProfile::by_name(std::string_view name) {
  if (name == "linux") return linux_kernel();
  if (name == "apple_thunderbolt" || name == "apple-thunderbolt" || name == "apple" || name == "darwin" ||
      name == "thunderbolt")
    return apple_thunderbolt();
  return std::nullopt;
}

DriverProfile DriverProfile::for_link_layer(LinkLayer l) {
  return l.kind() == LinkLayer::Kind::thunderbolt ? apple_thunderbolt() : linux_kernel();
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

namespace {

RtrVerdict error(int err, std::string reason) { return {RtrOutcome::error, err, std::move(reason)}; }

std::string describe(const GidEntry& e) {
  std::string s = e.gid.to_string();
  if (e.type != GidType::unknown) s += " (" + std::string(to_string(e.type)) + ")";
  return s;
}

}  // namespace

RtrVerdict judge_rtr(const GidTable& table, const RtrRequest& req, const DriverProfile& prof) {
  const Errnos E = Errnos::of(prof.platform);
  const bool roce = table.port().link_layer.kind() == LinkLayer::Kind::ethernet;
  std::string wrap;
  // The driver only ever sees the low 8 bits (grh.sgid_index is a uint8_t).
  const std::uint32_t idx = req.sgid_index & 0xffu;
  if (req.sgid_index > 0xffu)
    wrap = "index " + std::to_string(req.sgid_index) + " wrapped to " + std::to_string(idx) + " (uint8_t); ";
  const std::string at = wrap + "sgid_index " + std::to_string(idx);

  if (prof.uc_only && req.qp_type == QpKind::rc)
    return error(E.eopnotsupp, "RC queue pairs are not supported (UC only)");
  if (!req.is_global) {
    if ((roce && prof.grh_required_on_roce) || prof.grh_required)
      return error(E.einval, "no GRH (is_global = 0): RoCE and Thunderbolt route by GID and need one");
    return {RtrOutcome::ok, 0, "LID-routed, no GRH"};
  }
  if (req.dgid.is_zero()) return error(E.einval, "the destination GID is zero");
  if (idx >= table.length() && table.port().gid_tbl_len)
    return error(E.einval, at + " is not below gid_tbl_len " + std::to_string(table.length()));

  const GidEntry* e = table.find(idx);
  if (!e && table.holes() == Holes::not_shown)
    return {RtrOutcome::unknown, 0,
            at + " was not shown by the source (ibv_devinfo hides GIDs with a zero interface id)"};
  if (!e || e->state == EntryState::empty || (e->state == EntryState::valid && e->gid.is_zero())) {
    if (prof.absent_source_is_einval || !prof.enodata_for_empty_slot)
      return error(E.einval, at + " is empty");
    return error(E.enodata, at + " is empty");
  }
  if (e->state == EntryState::unreadable)
    return error(E.einval, at + " could not be read (" + e->read_error.message() + ")");
  if (idx == 0 && prof.index0_times_out)
    return error(E.etimedout,
                 at + " holds " + describe(*e) + "; routing from index 0 times out on this driver");
  if (prof.source_must_be_ipv4_mapped && !e->gid.is_ipv4_mapped())
    return error(E.einval, at + " holds " + describe(*e) + ", not an IPv4-mapped GID");
  if (!req.source_netdev_present)
    return error(E.enodev, at + " holds " + describe(*e) + " but its netdev is gone or in another namespace");
  if (roce && prof.family_mismatch_is_einval && e->gid.is_ipv4_mapped() != req.dgid.is_ipv4_mapped())
    return error(E.einval, at + " holds " + describe(*e) + " but the destination " + req.dgid.to_string() +
                               " is of the other address family");
  if (roce && prof.link_local_source_times_out && e->gid.is_link_local() && !req.dgid.is_link_local())
    return {RtrOutcome::times_out, E.etimedout,
            at + " holds the link-local " + describe(*e) + ": not routed, traffic times out"};
  if (roce && prof.roce_version_mismatch_times_out && req.peer_gid_type &&
      (e->type == GidType::roce_v1 || e->type == GidType::roce_v2) &&
      (*req.peer_gid_type == GidType::roce_v1 || *req.peer_gid_type == GidType::roce_v2) &&
      e->type != *req.peer_gid_type)
    return {RtrOutcome::times_out, E.etimedout,
            at + " is " + std::string(to_string(e->type)) + " but the peer uses " +
                std::string(to_string(*req.peer_gid_type)) + ": packets are dropped, traffic times out"};
  return {RtrOutcome::ok, 0, wrap.empty() ? std::string() : wrap + "routing from " + describe(*e)};
}

RtrVerdict judge_create_qp(QpKind type, unsigned existing_qps, const DriverProfile& prof) {
  const Errnos E = Errnos::of(prof.platform);
  if (prof.uc_only && type == QpKind::rc)
    return error(E.eopnotsupp, "RC queue pairs are not supported (UC only)");
  if (prof.max_qps_per_device != 0 && existing_qps >= prof.max_qps_per_device)
    return error(E.ebusy, "the device allows " + std::to_string(prof.max_qps_per_device) + " queue pairs");
  return {};
}

}  // namespace gidpolicy
