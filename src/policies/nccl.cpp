#include <gidpolicy/policies/nccl.hpp>
#include <gidpolicy/stack_table.hpp>

#include "stack_common.hpp"

namespace gidpolicy {
namespace {

// NCCL's validGid: not ::, not exactly fe80::, not in fe80::/64.
bool nccl_valid(const Gid& g) {
  if (g.is_zero()) return false;
  const auto& b = g.bytes();
  if (b[0] == 0xfe && b[1] == 0x80) {
    for (std::size_t i = 2; i < 8; ++i)
      if (b[i] != 0) return true;
    return false;
  }
  return true;
}

// The family NCCL reads from the bytes: IPv4-mapped is AF_INET, anything else AF_INET6.
bool nccl_inet(const Gid& g) { return g.is_ipv4_mapped(); }

// The sysfs type as NCCL reads it (types/<i>): "RoCE v2" is 2, "IB/RoCE v1" is 1; an empty slot's
// read fails (EINVAL), which is nullopt.
std::optional<int> nccl_version(const GidEntry* e) {
  if (!e || e->state != EntryState::valid) return std::nullopt;
  if (e->type == GidType::roce_v2) return 2;
  if (e->type == GidType::roce_v1 || e->type == GidType::ib) return 1;
  return std::nullopt;
}

}  // namespace

std::string Nccl::spec() const {
  std::string s = "nccl";
  std::string opts;
  const auto add = [&](const std::string& o) { opts += (opts.empty() ? "" : ",") + o; };
  if (gid_index != -1) add("gid_index=" + std::to_string(gid_index));
  if (inet6) add("family=AF_INET6");
  if (range) add("range=" + range->to_string());
  if (roce_version != 2) add("roce_version=" + std::to_string(roce_version));
  return opts.empty() ? s : s + ":" + opts;
}

result<AnyPolicy> Nccl::from_options(const SpecOptions& opts) {
  Nccl n;
  for (const SpecOption& o : opts) {
    if (o.key == "gid_index") {
      GIDPOLICY_TRY(v, opts.integer(o, -1, 0xffffffffLL, "an index (-1: auto)"));
      n.gid_index = v;
    } else if (o.key == "family") {
      GIDPOLICY_TRY(v, opts.value(o, "AF_INET or AF_INET6"));
      // NCCL itself reads any other string as AF_INET without a word; a spec says what it means.
      if (v != "AF_INET" && v != "AF_INET6")
        return fail(opts.bad_value(o, "AF_INET or AF_INET6 (NCCL silently reads anything else as AF_INET)"));
      n.inet6 = v == "AF_INET6";
    } else if (o.key == "range") {
      GIDPOLICY_TRY(c, opts.cidr(o));
      n.range = c;
    } else {
      GIDPOLICY_TRY(v, opts.integer(o, 1, 2, "a RoCE version"));
      n.roce_version = static_cast<int>(v);
    }
  }
  return AnyPolicy(n);
}

result<Selection> Nccl::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, false,
      [&](detail::Recorder& rec) -> result<Selection> {
        // Entries by pointer (nullptr: an empty slot, zeros through ibv_query_gid): no copy, so an
        // untraced success allocates nothing.
        static const Gid kZero{};
        const auto gid_of = [](const GidEntry* e) -> const Gid& { return e ? e->gid : kZero; };
        const auto note = [](const GidEntry* e) {
          return e ? detail::note_for(*e) : std::string("empty slot");
        };
        const auto chosen = [&](std::uint32_t i, const GidEntry* e) -> result<Selection> {
          if (!e && table.holes() == Holes::not_shown)
            return fail(errc::entry_not_shown, detail::where(table) + ": NCCL uses index " +
                                                   std::to_string(i) + ", which the source did not print");
          return detail::select_entry(e ? *e : GidEntry::empty(i));
        };
        if (table.port().link_layer.kind() == LinkLayer::Kind::infiniband) {
          // ncclIbRoutableFlidGidIndex: index 1 when its GID carries a FLID, else 0.
          const GidEntry* one = table.find(1);
          const bool flid = one && one->usable() && (one->gid[4] != 0 || one->gid[5] != 0);
          const std::uint32_t i = flid ? 1 : 0;
          const GidEntry* e = table.find(i);
          rec.step(i, EntryVerdict::chosen, [&] {
            return note(e) +
                   (flid ? ": InfiniBand, index 1 has a non-zero FLID (NCCL_IB_ROUTABLE_FLID_GID_INDEX)"
                         : ": InfiniBand: index 0 (no FLID at index 1); " +
                               std::string(stack_vars::kNcclGidIndex) + " is not read on IB");
          });
          return chosen(i, e);
        }
        if (gid_index >= 0)
          return detail::pinned_index(table, static_cast<std::uint32_t>(gid_index), rec, [this] {
            return std::string(stack_vars::kNcclGidIndex) + "=" + std::to_string(gid_index);
          });
        const std::uint32_t len = std::min<std::uint32_t>(table.length(), 256);
        if (len == 0) return fail(errc::no_candidate, detail::where(table) + ": an empty GID table");
        const bool want_inet = !inet6;
        // A range of the other family does not parse in NCCL (inet_pton with the user's family):
        // NCCL ignores it, so it matches everything.
        const bool range_applies = range && (range->network.is_ipv4_mapped() == want_inet);
        const auto in_range = [&](const Gid& g) { return !range_applies || range->contains(g); };
        std::uint32_t pick = 0;
        const GidEntry* cur = table.find(0);
        rec.step(0, EntryVerdict::candidate, [&] { return note(cur) + ": NCCL starts at index 0"; });
        for (std::uint32_t i = 1; i < len; ++i) {
          const GidEntry* cand = table.find(i);
          if (!cand && table.holes() == Holes::not_shown) {
            rec.step(i, EntryVerdict::not_shown, [] { return std::string("not printed by the source"); });
            continue;
          }
          if (cand && cand->state == EntryState::unreadable) {
            rec.step(i, EntryVerdict::unreadable, [&] { return note(cand); });
            continue;
          }
          const Gid& cg = gid_of(cand);
          const bool cand_inet = nccl_inet(cg);
          const bool cand_match = in_range(cg);
          if (cand_inet != nccl_inet(gid_of(cur)) && cand_inet == want_inet && cand_match) {
            rec.step(i, EntryVerdict::candidate, [&] {
              return note(cand) + ": of " + std::string(stack_vars::kNcclAddrFamily) + " where index " +
                     std::to_string(pick) + " is not: taken";
            });
            pick = i;
            cur = cand;
            continue;
          }
          if (cand_inet != want_inet) {
            rec.step(i, EntryVerdict::wrong_family, [&] {
              return note(cand) + ": not of " + std::string(stack_vars::kNcclAddrFamily) + " (" +
                     (want_inet ? "AF_INET" : "AF_INET6") + ")";
            });
            continue;
          }
          if (!nccl_valid(cg)) {
            rec.step(i, cg.is_zero() ? EntryVerdict::empty : EntryVerdict::link_local,
                     [&] { return note(cand) + ": not a valid GID to NCCL (::, fe80::/64)"; });
            continue;
          }
          if (!cand_match) {
            rec.step(i, EntryVerdict::outside_subnet, [&] {
              return note(cand) + ": outside " + std::string(stack_vars::kNcclAddrRange) + " " +
                     range->to_string();
            });
            continue;
          }
          const auto vc = nccl_version(cand);
          const auto vp = nccl_version(cur);
          if (!vc || (!vp && nccl_valid(gid_of(cur)))) {
            // (NCCL >= 2.26.2 moves on when a types read fails with EINVAL; older NCCL aborts.)
            rec.step(i, EntryVerdict::unreadable, [&] {
              return note(cand) +
                     ": a RoCE version NCCL cannot read from sysfs: passed over (NCCL >= 2.26.2)";
            });
            continue;
          }
          if ((vp != vc || !nccl_valid(gid_of(cur))) && *vc == roce_version) {
            rec.step(i, EntryVerdict::candidate, [&] {
              return note(cand) + ": RoCE v" + std::to_string(*vc) + " = " +
                     std::string(stack_vars::kNcclRoceVersion) + ", over index " + std::to_string(pick) +
                     ": taken";
            });
            pick = i;
            cur = cand;
            continue;
          }
          rec.step(i, EntryVerdict::wrong_type, [&] {
            return note(cand) + ": does not beat index " + std::to_string(pick) + " (RoCE v" +
                   std::to_string(*vc) + ")";
          });
        }
        rec.finish(pick);
        return chosen(pick, cur);
      });
}

}  // namespace gidpolicy
