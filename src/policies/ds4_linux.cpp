#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/spec_options.hpp>
#include <gidpolicy/stack_table.hpp>

#include "common.hpp"

#include <algorithm>
#include <limits>

namespace gidpolicy {

result<AnyPolicy> Ds4Linux::from_options(const SpecOptions& opts) {
  Ds4Linux p;
  for (const SpecOption& o : opts) {
    if (o.key == "local") {
      GIDPOLICY_TRY(g, opts.address(o));
      p.local = g;
    } else {
      GIDPOLICY_TRY(v, opts.integer(o, std::numeric_limits<std::int32_t>::min(),
                                    std::numeric_limits<std::int32_t>::max(), "an int"));
      p.index = static_cast<std::int32_t>(v);
    }
  }
  return AnyPolicy(p);
}

std::string Ds4Linux::spec() const {
  std::string s = "ds4-linux";
  char sep = ':';
  if (local) {
    s += sep;
    s += "local=" + detail::address_to_spec(*local);
    sep = ',';
  }
  if (index) {
    s += sep;
    s += "index=" + std::to_string(*index);
  }
  return s;
}

result<Selection> Ds4Linux::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, !index.has_value(),
      [&](detail::Recorder& rec) -> result<Selection> {
        const std::uint32_t len = table.length();
        const auto at = [&] { return detail::where(table) + ": "; };  // built only on a failure
        if (index) {
          const std::int32_t i = *index;
          // ds4: `if (idx < 0 || idx >= gid_tbl_len || idx > 255)` then query_gid_ex, type, zero.
          if (i < 0 || static_cast<std::uint32_t>(i) >= len) {
            rec.step(i < 0 ? 0u : static_cast<std::uint32_t>(i), EntryVerdict::out_of_range,
                     [&] { return "forced index " + std::to_string(i); });
            return fail(errc::index_out_of_range, at() + "forced index " + std::to_string(i) +
                                                      " is not in [0, " + std::to_string(len) + ")");
          }
          const auto u = static_cast<std::uint32_t>(i);
          if (u > 255) {
            rec.step(u, EntryVerdict::index_above_255, [] { return std::string("forced"); });
            return fail(errc::index_exceeds_uint8,
                        at() + "forced index " + std::to_string(u) + " is above 255");
          }
          const GidEntry* e = table.find(u);
          if (!e && table.holes() == Holes::not_shown) {
            rec.step(u, EntryVerdict::not_shown, [] { return std::string("not printed by the source"); });
            return fail(errc::entry_not_shown,
                        at() + "forced index " + std::to_string(u) + " was not printed by the source");
          }
          if (!e || e->state == EntryState::empty) {
            rec.step(u, EntryVerdict::empty, [] { return std::string("ENODATA from ibv_query_gid_ex"); });
            return fail(errc::entry_empty,
                        at() + "forced index " + std::to_string(u) + " is empty (ENODATA)");
          }
          if (e->state == EntryState::unreadable) {
            rec.step(u, EntryVerdict::unreadable, [&] { return detail::describe(*e); });
            return fail(errc::entry_unreadable, at() + "forced " + detail::holds(*e));
          }
          if (e->type != GidType::roce_v2) {
            rec.step(u, EntryVerdict::wrong_type, [&] { return detail::describe(*e) + ": not RoCE v2"; });
            return fail(errc::wrong_gid_type, at() + "forced " + detail::holds(*e) + ", not RoCE v2");
          }
          if (e->gid.is_zero()) {
            rec.step(u, EntryVerdict::zero, [&] { return detail::describe(*e); });
            return fail(errc::entry_zero, at() + "forced index " + std::to_string(u) + " holds the zero GID");
          }
          rec.step(u, EntryVerdict::chosen, [&] { return detail::describe(*e) + ": forced"; });
          return detail::select_entry(*e);
        }

        const std::uint32_t limit = std::min<std::uint32_t>(len, 256);
        const GidEntry* best = nullptr;
        int best_score = 0;
        const bool tracing = rec.on();
        // Untraced, only [0, 256) is read (what ds4 scans), entries that are not RoCE v2 are
        // dismissed by one compare, and the scan stops at the first entry no later one can beat.
        for (const GidEntry& e : tracing ? table.entries() : table.sgid_entries()) {
          if (!tracing && (e.type != GidType::roce_v2 || e.state != EntryState::valid)) continue;
          if (e.index >= limit) {
            rec.step(e.index, e.index >= len ? EntryVerdict::out_of_range : EntryVerdict::index_above_255,
                     [&] { return detail::describe(e) + ": ds4 scans [0, 256) only"; });
            continue;
          }
          if (e.state == EntryState::empty) {
            rec.step(e.index, EntryVerdict::empty, [] { return std::string("ENODATA"); });
            continue;
          }
          if (e.state == EntryState::unreadable) {
            rec.step(e.index, EntryVerdict::unreadable, [&] { return detail::describe(e); });
            continue;
          }
          if (e.type != GidType::roce_v2) {
            rec.step(e.index, EntryVerdict::wrong_type,
                     [&] { return detail::describe(e) + ": not RoCE v2"; });
            continue;
          }
          if (e.gid.is_zero()) {
            rec.step(e.index, EntryVerdict::zero, [] { return std::string("the zero GID"); });
            continue;
          }
          const int score = (local && e.gid == *local) ? 2 : 1;
          rec.step(e.index, EntryVerdict::candidate, [&] {
            return detail::describe(e) + ": score " + std::to_string(score) +
                   (score == 2 ? " (the local address)" : "");
          });
          if (score > best_score) {  // strictly greater: the first best wins
            best = &e;
            best_score = score;
            // The top score (the local address, or any candidate when no local address is
            // given) cannot be beaten by a later entry.
            if (!tracing && (score == 2 || !local)) break;
          }
        }
        if (!best)
          return fail(errc::no_candidate,
                      at() + "no non-zero RoCE v2 GID in [0, " + std::to_string(limit) + ")");
        rec.finish(best->index);
        return detail::select_entry(*best);
      });
}

result<Ds4LinuxPort> choose_port(const Ds4Linux& policy, const std::vector<GidTable>& tables,
                                 SelectOptions run) {
  std::optional<Ds4LinuxPort> first, match;
  std::vector<std::string> candidates;
  std::optional<Error> last_error;
  for (std::size_t k = 0; k < tables.size(); ++k) {
    const GidTable& t = tables[k];
    const PortState st = t.port().state;
    if (st != PortState::active && st != PortState::armed && st != PortState::active_defer) continue;
    auto sel = policy.select(t, run);
    if (!sel) {
      last_error = sel.error();
      continue;
    }
    candidates.push_back(detail::where(t));
    const bool holds_local = policy.local && sel.value().entry.gid == *policy.local;
    if (holds_local && !match) match = Ds4LinuxPort{k, sel.value()};
    if (!first) first = Ds4LinuxPort{k, std::move(sel).value()};
  }
  if (match) return std::move(*match);
  if (candidates.size() == 1) return std::move(*first);
  if (candidates.empty()) {
    if (last_error) return fail(std::move(*last_error));
    return fail(errc::no_candidate, "no active port among the " + std::to_string(tables.size()) + " given");
  }
  std::string list;
  for (const auto& c : candidates) list += (list.empty() ? "" : ", ") + c;
  return fail(errc::no_candidate,
              "no active RoCEv2 GID for the requested device/index: " + std::to_string(candidates.size()) +
                  " ports tie (" + list + ") and none holds the control address" +
                  (policy.local ? " " + policy.local->to_string() : std::string()) +
                  "; use the direct RoCE address for --coordinator, or select " +
                  std::string(stack_vars::kDs4Device) + " and " + std::string(stack_vars::kDs4GidIndex));
}

}  // namespace gidpolicy
