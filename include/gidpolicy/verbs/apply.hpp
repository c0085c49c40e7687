// preflight() and apply_rtr(): the last check before INIT->RTR, and the RTR itself.
//
// Hardware gotchas encoded here:
//  * GID tables change under running jobs: after a port flap or an address change the kernel
//    reallocates first-free slots, so the entry at the sgid_index chosen minutes ago may now
//    hold another GID, or none (NCCL 2157, 1819). preflight() re-reads that one entry right
//    before modify_qp and refuses with errc::gid_changed, naming what the slot holds now and
//    where the advertised GID went (find_current_index()).
//  * Apple's Thunderbolt driver reportedly wedges the port after repeated failed RTRs: fail
//    before modify_qp, not in it. Attributes that already disagree with the advertised GID
//    (JACCL's literal index 1 reproduced on purpose) are refused with errc::disagreement
//    without a driver call.
//  * When the driver does fail, its bare errno ("errno 22") is what users trade in issues:
//    apply_rtr() keeps the errno as the error code and puts diagnose()'s ranked causes, computed
//    on a fresh snapshot of the table, in the detail. Errno numbering is per platform (Darwin's
//    ETIMEDOUT is 60): a Thunderbolt port is judged with Darwin numbers.
//
// Example:
//   auto rtr = gidpolicy::RtrBuilder(QpKind::uc, table, selection).remote(peer).build().value();
//   auto qp = api.create_qp(dev, gidpolicy::QpKind::uc).value();
//   auto r = gidpolicy::verbs::apply_rtr(api, qp, dev, 1, rtr);
//   if (!r) std::cerr << r.error().what() << "\n";  // gid_changed, or the errno + likely causes
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/snapshot.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <cstdint>
#include <optional>

namespace gidpolicy::verbs {

/// A port's table and what a profile makes of it: advertise plan.selection.entry.gid, build the
/// RTR with RtrBuilder(type, table, plan).
struct PlannedPort {
  GidTable table;
  Plan plan;
};

/// Snapshot `port` (see snapshot()) and run `profile` on it. A failed selection is returned as
/// is (its trace says why each entry was rejected): nothing is advertised and no QP is touched.
/// Example: `auto pp = plan_port(api, dev, 1, gidpolicy::profiles::automatic());`
result<PlannedPort> plan_port(VerbsApi& api, DeviceHandle device, std::uint32_t port, const Profile& profile,
                              const SnapshotOptions& options = {});

/// Re-read the entry at `sgid_index` and check it still holds `advertised`.
/// Errors: errc::gid_changed (the slot is empty or holds another GID: the detail says what and
/// where the advertised GID is now); the read's errno when the slot cannot be read at all;
/// errc::index_exceeds_uint8 for an index above 255.
/// `type`, when known (the type of the entry that was selected), must match too when the slot
/// reports one (the same GID as the other RoCE version is gid_changed), and names where the GID
/// went (find_current_index()).
result<void> preflight(VerbsApi& api, DeviceHandle device, std::uint32_t port, std::uint32_t sgid_index,
                       const Gid& advertised, std::optional<GidType> type = std::nullopt);
/// preflight() for built attributes: their sgid_index against the GID they were built to
/// advertise (rtr.agreement.advertised). Attributes that already disagree fail with
/// errc::disagreement and no driver call. The selected entry's type (rtr.agreement.at_index)
/// is used to follow the GID.
result<void> preflight(VerbsApi& api, DeviceHandle device, std::uint32_t port, const RtrAttributes& rtr);

/// How apply_rtr() runs.
struct ApplyOptions {
  bool preflight = true;  ///< re-read the source entry first (turn off only to reproduce bugs)
  /// Errno numbering for diagnose(); default: Darwin for a Thunderbolt port, else this host's.
  std::optional<Platform> platform;
  /// The caller's network namespace, for diagnose() (ENODEV: is the slot's netdev here?).
  const NetworkView* network = nullptr;
};

/// preflight(), then modify_qp(qp, rtr.attr, rtr.mask). On a driver error the code is the
/// driver's errno and the detail carries diagnose()'s explanation.
result<void> apply_rtr(VerbsApi& api, QpHandle qp, DeviceHandle device, std::uint32_t port,
                       const RtrAttributes& rtr, const ApplyOptions& options = {});

}  // namespace gidpolicy::verbs
