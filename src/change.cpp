#include <gidpolicy/change.hpp>

#include <utility>

namespace gidpolicy {
namespace {

/// The other RoCE version, when the type has one.
std::optional<GidType> twin_type(GidType t) noexcept {
  if (t == GidType::roce_v1) return GidType::roce_v2;
  if (t == GidType::roce_v2) return GidType::roce_v1;
  return std::nullopt;
}

/// Where `table` holds `gid` with `type`: the entry at `hint` when it is one of several equal
/// entries, else the lowest index.
std::optional<std::uint32_t> locate(const GidTable& table, const Gid& gid, GidType type,
                                    std::optional<std::uint32_t> hint) {
  std::optional<std::uint32_t> first;
  for (const GidEntry& e : table) {
    if (!e.usable() || e.gid != gid || e.type != type) continue;
    if (hint && e.index == *hint) return e.index;
    if (!first) first = e.index;
  }
  return first;
}

bool usable(PortState s) noexcept { return s == PortState::active || s == PortState::armed; }

std::string index_text(std::optional<std::uint32_t> i) { return i ? "index " + std::to_string(*i) : "none"; }

}  // namespace

std::string_view to_string(ChangeKind k) noexcept {
  switch (k) {
    case ChangeKind::unchanged:
      return "unchanged";
    case ChangeKind::moved:
      return "moved";
    case ChangeKind::disappeared:
      return "disappeared";
    case ChangeKind::reappeared:
      return "reappeared";
    case ChangeKind::twin_changed:
      return "twin_changed";
    case ChangeKind::untracked:
      return "untracked";
  }
  return "unknown";
}

GidChange classify_change(const GidTable& before, const GidTable& after,
                          const std::optional<GidEntry>& advertised, std::string cause) {
  GidChange c;
  c.device = after.port().device;
  c.port = after.port().port;
  c.cause = std::move(cause);
  c.old_state = before.port().state;
  c.port_state = after.port().state;
  c.table = after;
  if (!advertised) {
    c.kind = ChangeKind::untracked;
    return c;
  }
  c.gid = advertised->gid;
  c.type = advertised->type;
  c.old_index = locate(before, c.gid, c.type, advertised->index);
  c.new_index = locate(after, c.gid, c.type, c.old_index ? c.old_index : std::optional(advertised->index));
  if (auto t = twin_type(c.type)) {
    c.twin_old_index = locate(before, c.gid, *t, std::nullopt);
    c.twin_new_index = locate(after, c.gid, *t, c.twin_old_index);
  }
  if (c.old_index && c.new_index) {
    if (*c.old_index != *c.new_index)
      c.kind = ChangeKind::moved;
    else
      c.kind = c.twin_old_index != c.twin_new_index ? ChangeKind::twin_changed : ChangeKind::unchanged;
  } else if (c.old_index) {
    c.kind = ChangeKind::disappeared;
  } else if (c.new_index) {
    c.kind = ChangeKind::reappeared;
  } else {
    // Gone before and still gone: only the twin can have changed.
    c.kind = c.twin_old_index != c.twin_new_index ? ChangeKind::twin_changed : ChangeKind::unchanged;
  }
  return c;
}

std::string GidChange::to_string() const {
  std::string s = port_name(device, port) + ": ";
  if (kind == ChangeKind::untracked) {
    s += "table changed, no GID followed";
  } else {
    s += gid.to_string() + " (" + std::string(gidpolicy::to_string(type)) + ") ";
    switch (kind) {
      case ChangeKind::unchanged:
        s += "unchanged at " + index_text(new_index ? new_index : old_index);
        break;
      case ChangeKind::moved:
        s += "moved from index " + std::to_string(*old_index) + " to " + std::to_string(*new_index);
        break;
      case ChangeKind::disappeared:
        s += "disappeared from index " + std::to_string(*old_index);
        break;
      case ChangeKind::reappeared:
        s += "reappeared at index " + std::to_string(*new_index);
        break;
      case ChangeKind::twin_changed:
        s += "unchanged at " + index_text(new_index) + ", its twin moved from " + index_text(twin_old_index) +
             " to " + index_text(twin_new_index);
        break;
      case ChangeKind::untracked:
        break;
    }
  }
  if (old_state != port_state)
    s += "; port " + std::string(gidpolicy::to_string(old_state)) + " -> " +
         std::string(gidpolicy::to_string(port_state));
  if (!cause.empty()) s += " [" + cause + "]";
  return s;
}

result<Replan> replan(const Profile& profile, const Plan& current, const GidChange& change,
                      SelectOptions run) {
  const GidTable& table = change.table;
  if (!usable(change.port_state))
    return fail(errc::port_not_active, port_name(change.device, change.port) + " is " +
                                           std::string(to_string(change.port_state)) +
                                           ": nothing to advertise until it is active again");
  const Gid old_gid = current.selection.entry.gid;
  Replan out;
  auto finish = [&](Plan p, bool followed, std::string why) -> result<Replan> {
    out.tell_peer = p.selection.entry.gid != old_gid;
    out.changed = out.tell_peer || p.sgid_index != current.sgid_index;
    out.followed = followed;
    out.plan = std::move(p);
    out.why = std::move(why);
    return std::move(out);
  };

  // Judged against the plan, not only against the previous snapshot: a re-plan that failed in
  // between (port down) leaves the application's plan older than the watcher's last table.
  const GidEntry& adv = current.selection.entry;
  std::optional<std::uint32_t> now;
  if (change.kind != ChangeKind::untracked) {
    for (const GidEntry& e : table)
      if (e.usable() && e.gid == old_gid && e.type == adv.type && (!now || e.index == adv.index))
        now = e.index;
  }
  if (now && *now == adv.index) {
    Plan p = current;
    p.selection.entry = *table.find(*now);
    p.agreement = check_agreement(table, old_gid, p.sgid_index);
    return finish(std::move(p), true, "the advertised entry did not change");
  }
  if (now && !profile.source.is_literal() && *now <= 255) {
    // Follow the same GID when the policy accepts its new slot (its trace marks it acceptable).
    SelectOptions traced = run;
    traced.trace = true;
    auto sel = profile.policy.select(table, traced);
    bool accepted = sel && sel.value().entry.index == *now;
    if (sel && !accepted)
      for (const auto& attempt : sel.value().trace.attempts)
        for (const auto& step : attempt.steps)
          if (step.index == *now && is_accepted(step.verdict)) accepted = true;
    if (accepted) {
      Plan p;
      p.selection = Selection(*table.find(*now));
      if (run.trace && sel) p.selection.trace = sel.value().trace;
      p.sgid_index = static_cast<std::uint8_t>(*now);
      p.agreement = check_agreement(table, old_gid, p.sgid_index);
      return finish(std::move(p), true,
                    "followed " + old_gid.to_string() + " to index " + std::to_string(*now));
    }
    GIDPOLICY_TRY(p, profile.plan(table, run));
    return finish(std::move(p), false, "the policy does not accept the moved entry: selected again");
  }
  GIDPOLICY_TRY(p, profile.plan(table, run));
  if (now) return finish(std::move(p), false, "a literal source index cannot follow: selected again");
  return finish(std::move(p), false,
                change.kind == ChangeKind::untracked ? "selected on the changed table"
                                                     : old_gid.to_string() + " is gone: selected again");
}

}  // namespace gidpolicy
