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
      [this] { return spec(); }, run, false,
      [&](detail::Recorder& rec) -> result<Selection> {
        if (x) return detail::pinned_index(table, *x, rec, [this] { return "-x " + std::to_string(*x); });
        // Entries by pointer (nullptr: an empty slot): no copies on the untraced path.
        static const Gid kZero{};
        const auto gid_of = [](const GidEntry* e) -> const Gid& { return e ? e->gid : kZero; };
        const auto note = [](const GidEntry* e) {
          return e ? detail::note_for(*e) : std::string("empty slot");
        };
        const auto chosen = [&](std::uint32_t i, const GidEntry* e) -> result<Selection> {
          if (!e && table.holes() == Holes::not_shown)
            return fail(errc::entry_not_shown, detail::where(table) + ": perftest uses index " +
                                                   std::to_string(i) + ", which the source did not print");
          return detail::select_entry(e ? *e : GidEntry::empty(i));
        };
        if (table.port().link_layer.kind() == LinkLayer::Kind::infiniband) {
          rec.step(0, EntryVerdict::chosen,
                   [] { return std::string("InfiniBand: perftest sends no GRH; index 0"); });
          return chosen(0, table.find(0));
        }
        const std::uint32_t len = std::min<std::uint32_t>(table.length(), 256);
        if (len == 0) return fail(errc::no_candidate, detail::where(table) + ": an empty GID table");
        std::uint32_t pick = 0;
        const GidEntry* cur = table.find(0);
        rec.step(0, EntryVerdict::candidate, [&] { return note(cur) + ": perftest starts at index 0"; });
        // ibv_query_gid_ex's RoCE version: fails (ENODATA) on an empty slot. check_better_roce_version
        // rates v2 2, v1 1 and any other type -1.
        const auto rate = [](const GidEntry* e) -> std::optional<int> {
          if (!e || e->state != EntryState::valid) return std::nullopt;
          if (e->type == GidType::roce_v2) return 2;
          if (e->type == GidType::roce_v1) return 1;
          return -1;
        };
        for (std::uint32_t i = 1; i < len; ++i) {
          const GidEntry* cand = table.find(i);
          if (!cand && table.holes() == Holes::not_shown) {
            rec.step(i, EntryVerdict::not_shown, [] { return std::string("not printed by the source"); });
            continue;
          }
          const bool v4 = detail::stack_ipv4(gid_of(cur));
          const bool v4c = detail::stack_ipv4(gid_of(cand));
          if (v4c && !v4 && !ipv6) {
            rec.step(i, EntryVerdict::candidate,
                     [&] { return note(cand) + ": IPv4 over the non-IPv4 pick"; });
            pick = i;
            cur = cand;
            continue;
          }
          if (!v4c && v4 && ipv6) {
            rec.step(i, EntryVerdict::candidate,
                     [&] { return note(cand) + ": non-IPv4 over the IPv4 pick (--ipv6)"; });
            pick = i;
            cur = cand;
            continue;
          }
          const auto rp = rate(cur);
          const auto rc = rate(cand);
          if (!rp || !rc) {
            rec.step(i, cand ? EntryVerdict::unreadable : EntryVerdict::empty, [] {
              return std::string("ibv_query_gid_ex fails on the pick or this slot: passed over");
            });
            continue;
          }
          if (*rp < *rc) {
            rec.step(i, EntryVerdict::candidate, [&] {
              return note(cand) + ": a higher RoCE version than index " + std::to_string(pick);
            });
            pick = i;
            cur = cand;
            continue;
          }
          rec.step(i, EntryVerdict::wrong_type,
                   [&] { return note(cand) + ": does not beat index " + std::to_string(pick); });
        }
        rec.finish(pick);
        return chosen(pick, cur);
      });
}

}  // namespace gidpolicy
