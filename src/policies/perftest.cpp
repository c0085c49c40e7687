#include <gidpolicy/policies/perftest.hpp>

#include "stack_common.hpp"

namespace gidpolicy {

std::string Perftest::spec() const {
  std::string opts;
  const auto add = [&](const std::string& o) { opts += (opts.empty() ? "" : ",") + o; };
  if (x) add("x=" + std::to_string(*x));
  if (ipv6) add("ipv6");
  return opts.empty() ? "perftest" : "perftest:" + opts;
}

result<AnyPolicy> Perftest::from_options(const SpecOptions& opts) {
  Perftest p;
  for (const SpecOption& o : opts) {
    if (o.key == "x") {
      GIDPOLICY_TRY(v, opts.integer(o, 0, 255, "an index"));
      p.x = static_cast<std::uint32_t>(v);
    } else {
      GIDPOLICY_TRYV(opts.flag(o));
      p.ipv6 = true;
    }
  }
  return AnyPolicy(p);
}

result<Selection> Perftest::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, false, [&](detail::Recorder& rec) -> result<Selection> {
        if (x) return detail::pinned_index(table, *x, rec, "-x " + std::to_string(*x));
        const auto slot = [&](std::uint32_t i) -> GidEntry {
          if (const GidEntry* e = table.find(i)) return *e;
          return GidEntry::empty(i);
        };
        if (table.port().link_layer.kind() == LinkLayer::Kind::infiniband) {
          const GidEntry e = slot(0);
          rec.step(0, Verdict::chosen, [] { return std::string("InfiniBand: perftest sends no GRH; index 0"); });
          return detail::select_entry(e);
        }
        const std::uint32_t len = std::min<std::uint32_t>(table.length(), 256);
        if (len == 0) return fail(errc::no_candidate, detail::where(table) + ": an empty GID table");
        std::uint32_t pick = 0;
        GidEntry cur = slot(0);
        rec.step(0, Verdict::candidate, [&] { return detail::note_for(cur) + ": perftest starts at index 0"; });
        // ibv_query_gid_ex's RoCE version: fails (ENODATA) on an empty slot.
        const auto version = [](const GidEntry& e) -> std::optional<int> {
          if (e.state != EntryState::valid) return std::nullopt;
          if (e.type == GidType::roce_v2) return 2;
          if (e.type == GidType::roce_v1) return 1;
          return 0;  // IB or unknown: neither in perftest's table of versions
        };
        for (std::uint32_t i = 1; i < len; ++i) {
          const GidEntry cand = slot(i);
          if (cand.state == EntryState::empty && table.holes() == Holes::not_shown) {
            rec.step(i, Verdict::not_shown, [] { return std::string("not printed by the source"); });
            continue;
          }
          const bool v4 = detail::stack_ipv4(cur.gid);
          const bool v4c = detail::stack_ipv4(cand.gid);
          if (v4c && !v4 && !ipv6) {
            rec.step(i, Verdict::candidate, [&] { return detail::note_for(cand) + ": IPv4 over the non-IPv4 pick"; });
            pick = i;
            cur = cand;
            continue;
          }
          if (!v4c && v4 && ipv6) {
            rec.step(i, Verdict::candidate, [&] { return detail::note_for(cand) + ": non-IPv4 over the IPv4 pick (--ipv6)"; });
            pick = i;
            cur = cand;
            continue;
          }
          const auto vp = version(cur);
          const auto vc = version(cand);
          if (!vp || !vc) {
            rec.step(i, cand.state == EntryState::empty ? Verdict::empty : Verdict::unreadable,
                     [&] { return std::string("ibv_query_gid_ex fails on the pick or this slot: passed over"); });
            continue;
          }
          // check_better_roce_version: v2 (rate 2) beats v1 (rate 1); other types rate -1.
          const int rp = *vp == 0 ? -1 : *vp;
          const int rc = *vc == 0 ? -1 : *vc;
          if (rp < rc) {
            rec.step(i, Verdict::candidate, [&] {
              return detail::note_for(cand) + ": a higher RoCE version than index " + std::to_string(pick);
            });
            pick = i;
            cur = cand;
            continue;
          }
          rec.step(i, Verdict::wrong_type, [&] { return detail::note_for(cand) + ": does not beat index " + std::to_string(pick); });
        }
        rec.finish(pick);
        if (cur.state == EntryState::empty && table.holes() == Holes::not_shown)
          return fail(errc::entry_not_shown, detail::where(table) + ": perftest keeps index 0, which the source did not print");
        return detail::select_entry(cur);
      });
}

}  // namespace gidpolicy
