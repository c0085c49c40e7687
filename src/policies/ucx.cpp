#include <gidpolicy/policies/ucx.hpp>
#include <gidpolicy/stack_table.hpp>

#include "stack_common.hpp"

#include <array>
#include <span>

namespace gidpolicy {

std::string Ucx::spec() const {
  std::string opts;
  const auto add = [&](const std::string& o) { opts += (opts.empty() ? "" : ",") + o; };
  if (gid_index) add("gid_index=" + std::to_string(*gid_index));
  if (pr10939) add("rule=pr10939");
  return opts.empty() ? "ucx" : "ucx:" + opts;
}

result<AnyPolicy> Ucx::from_options(const SpecOptions& opts) {
  Ucx u;
  for (const SpecOption& o : opts) {
    if (o.key == "gid_index") {
      GIDPOLICY_TRY(v, opts.integer(o, 0, 255, "an index"));
      u.gid_index = static_cast<std::uint32_t>(v);
    } else {
      GIDPOLICY_TRY(v, opts.value(o, "1.13 or pr10939"));
      if (v != "1.13" && v != "pr10939") return fail(opts.bad_value(o, "1.13 or pr10939"));
      u.pr10939 = v == "pr10939";
    }
  }
  return AnyPolicy(u);
}

result<Selection> Ucx::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, false,
      [&](detail::Recorder& rec) -> result<Selection> {
        const std::uint32_t len = std::min<std::uint32_t>(table.length(), 256);
        const bool ib = table.port().link_layer.kind() == LinkLayer::Kind::infiniband;
        const std::uint32_t checked = gid_index.value_or(0);
        // uct_ib_device_port_check.
        if (checked >= table.length()) {
          rec.step(checked, EntryVerdict::out_of_range, [] { return std::string("beyond the table"); });
          return fail(errc::index_out_of_range,
                      detail::where(table) + ": UCX rejects the port: " +
                          std::string(stack_vars::kUcxGidIndex) + "=" + std::to_string(checked) +
                          " is not below the table length " + std::to_string(table.length()));
        }
        const GidEntry* first = table.find(checked);
        if (!first && table.holes() == Holes::not_shown) {
          rec.step(checked, EntryVerdict::not_shown, [] { return std::string("not printed by the source"); });
          return fail(errc::entry_not_shown, detail::where(table) + ": UCX's port check reads gid[" +
                                                 std::to_string(checked) +
                                                 "], which the source did not print");
        }
        if (!first || !first->usable()) {
          rec.step(checked, EntryVerdict::empty, [&] {
            return "gid[" + std::to_string(checked) + "] is all zeros: UCX rejects the whole port";
          });
          return fail(errc::no_candidate,
                      detail::where(table) + ": UCX rejects the port (\"invalid gid[" +
                          std::to_string(checked) + "] on " + table.port().device + ":" +
                          std::to_string(table.port().port) +
                          "\"): the slot is empty, so rc_verbs/ud_verbs are not offered there" +
                          (gid_index ? std::string()
                                     : "; " + std::string(stack_vars::kUcxGidIndex) +
                                           "=N with a non-empty slot N passes the check"));
        }
        if (gid_index) {
          rec.step(checked, EntryVerdict::chosen,
                   [&] { return detail::describe(*first) + ": " + std::string(stack_vars::kUcxGidIndex); });
          return detail::select_entry(*first);
        }
        if (ib) {
          rec.step(0, EntryVerdict::chosen,
                   [&] { return detail::describe(*first) + ": InfiniBand port: index 0"; });
          return detail::select_entry(*first);
        }
        struct Priority {
          int version;
          bool ipv4;
          int link_local;  // -1 any (1.13), 0 only non-link-local, 1 only link-local (pr10939)
        };
        static constexpr std::array<Priority, 4> k113{
            {{2, true, -1}, {2, false, -1}, {1, true, -1}, {1, false, -1}}};
        static constexpr std::array<Priority, 8> kPr10939{{{2, true, 0},
                                                           {2, false, 0},
                                                           {1, true, 0},
                                                           {1, false, 0},
                                                           {2, true, 1},
                                                           {2, false, 1},
                                                           {1, true, 1},
                                                           {1, false, 1}}};
        const std::span<const Priority> order =
            pr10939 ? std::span<const Priority>(kPr10939) : std::span<const Priority>(k113);
        // sysfs types/<i>: "RoCE v2" is v2, anything else (or unreadable, or an empty slot) v1.
        const auto version = [](const GidEntry* e) {
          return e && e->state == EntryState::valid && e->type == GidType::roce_v2 ? 2 : 1;
        };
        static const Gid kZero{};
        for (const Priority& p : order) {
          const auto prio = [&] {
            return "(RoCE v" + std::to_string(p.version) + ", " + (p.ipv4 ? "IPv4" : "IPv6") +
                   (p.link_local == 0   ? ", not link-local"
                    : p.link_local == 1 ? ", link-local"
                                        : "") +
                   ")";
          };
          for (std::uint32_t i = 0; i < len; ++i) {
            const GidEntry* e = table.find(i);
            const Gid& g = e ? e->gid : kZero;
            if (version(e) != p.version || detail::stack_ipv4(g) != p.ipv4) continue;
            if (p.link_local >= 0 && (g.is_link_local() ? 1 : 0) != p.link_local) continue;
            if (!e && table.holes() == Holes::not_shown) {
              rec.step(i, EntryVerdict::not_shown,
                       [&] { return "matches " + prio() + " but was not printed by the source"; });
              continue;
            }
            if (!e || !e->usable()) {
              rec.step(i, EntryVerdict::empty,
                       [&] { return "matches " + prio() + ": ibv_create_ah from an empty slot fails"; });
              continue;
            }
            rec.step(i, EntryVerdict::chosen, [&] {
              return detail::describe(*e) + ": first of priority " + prio() +
                     " whose address handle is created" +
                     (e->gid.is_link_local() && !pr10939 ? " (UCX 1.13 has no link-local preference)" : "");
            });
            return detail::select_entry(*e);
          }
        }
        rec.step(0, EntryVerdict::chosen,
                 [&] { return detail::describe(*first) + ": no priority matched: index 0 as RoCE v1"; });
        return detail::select_entry(*first);
      });
}

}  // namespace gidpolicy
