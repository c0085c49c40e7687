// GidChange and replan(): what a GID table change means for one plan, and the plan after it.
//
// Hardware gotchas encoded here:
//  * The kernel allocates GID slots first-free: after a link renegotiation or a bond failover
//    the same address comes back at another index (NCCL 2157), and a Thunderbolt port loses
//    its self-assigned IPv4 GID for minutes and gets it back elsewhere. A GID is followed by
//    value (and type), never by index.
//  * mlx5 stores each address twice, RoCE v1 then v2. The "twin" of the advertised entry (same
//    GID, the other RoCE version) changing does not move the advertised entry and does not
//    require telling the peer anything; it is reported apart so an application can log it.
//  * A port that went down has no IP-based GIDs worth advertising: replan() refuses until the
//    port is active again rather than pick whatever the half-torn-down table still lists.
//
// Both functions are pure: the verbs-side watcher (verbs/watch.hpp) produces GidChange values
// from async events and fresh snapshots; tests build them from two tables.
//
// Example:
//   auto c = gidpolicy::classify_change(before, after, plan.selection.entry);
//   if (c.kind != gidpolicy::ChangeKind::unchanged) {
//     auto next = gidpolicy::replan(profile, plan, c);
//     if (next && next.value().tell_peer) send_to_peer(next.value().plan.selection.entry.gid);
//   }
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/profiles.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gidpolicy {

/// What happened to the advertised GID between two snapshots of its port.
enum class ChangeKind : std::uint8_t {
  unchanged,     ///< the advertised entry is where it was: nothing this plan depends on changed
  moved,         ///< the same GID and type now sit at another index (new_index)
  disappeared,   ///< no entry holds the GID with its type any more (address removed, port down)
  reappeared,    ///< it was gone and is back, at new_index (maybe not the old one)
  twin_changed,  ///< the advertised entry is unchanged; its other-RoCE-version twin came, went or moved
  untracked,     ///< the port changed, and no GID is followed on it (no plan yet)
};
/// "unchanged", "moved", "disappeared", "reappeared", "twin_changed", "untracked".
std::string_view to_string(ChangeKind k) noexcept;

/// One port's change, relative to the GID a plan advertises.
struct GidChange {
  ChangeKind kind = ChangeKind::unchanged;
  std::string device;
  std::uint32_t port = 1;
  std::string cause;  ///< what triggered the re-read: "gid_change", "port_error, gid_change"...
  Gid gid;            ///< the GID followed (zero when untracked)
  GidType type = GidType::unknown;
  std::optional<std::uint32_t> old_index;                       ///< where it was in the previous snapshot
  std::optional<std::uint32_t> new_index;                       ///< where it is now
  std::optional<std::uint32_t> twin_old_index, twin_new_index;  ///< the other RoCE version's entry
  PortState old_state = PortState::active;
  PortState port_state = PortState::active;  ///< the port's state now
  GidTable table;                            ///< the port as re-read

  /// One line: "rdma_en2 port 1: ::ffff:169.254.10.2 (roce_v2) moved from index 1 to 2 [gid_change]".
  [[nodiscard]] std::string to_string() const;
};

/// Compare two snapshots of the same port for the entry `advertised` (followed by GID and
/// type; its index is only a hint for which of several equal entries it was). `advertised`
/// nullopt: kind untracked.
GidChange classify_change(const GidTable& before, const GidTable& after,
                          const std::optional<GidEntry>& advertised, std::string cause = {});

/// The plan after a change, and what the application must do about it.
struct Replan {
  Plan plan;
  bool tell_peer = false;  ///< the advertised GID differs from the old plan's: send it again
  bool followed = false;   ///< the same GID was followed to its new index (no re-selection)
  bool changed = false;    ///< plan.sgid_index or the advertised GID differ from the old plan
  std::string why;         ///< one sentence for logs
};

/// Re-plan after `change`:
///  * unchanged / twin_changed: the old plan, re-checked against the new table (when the
///    advertised GID is still gone, as after a failed re-plan: select again);
///  * moved / reappeared: follow the same GID to its new index when the profile's policy accepts
///    that entry (its trace marks it a candidate) and the profile routes from its selection;
///    otherwise select again;
///  * disappeared / untracked: select again (tell_peer when the GID differs).
/// Errors: errc::port_not_active when the port is not active/armed; the policy's own error
/// (errc::no_candidate with its trace) when nothing qualifies: advertise nothing, RTR nothing.
/// Example:
///   if (auto r = replan(profile, plan, change); r && r.value().tell_peer)
///     send_to_peer(r.value().plan.selection.entry.gid);
result<Replan> replan(const Profile& profile, const Plan& current, const GidChange& change,
                      SelectOptions run = {});

}  // namespace gidpolicy
