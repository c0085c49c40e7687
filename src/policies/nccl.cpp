#include <gidpolicy/policies/nccl.hpp>

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
      [this] { return spec(); }, run, false, [&](detail::Recorder& rec) -> result<Selection> {
        const std::uint32_t len = std::min<std::uint32_t>(table.length(), 256);
        const auto slot = [&](std::uint32_t i) -> GidEntry {
          if (const GidEntry* e = table.find(i)) return *e;
          return GidEntry::empty(i);
        };
        if (table.port().link_layer.kind() == LinkLayer::Kind::infiniband) {
          // ncclIbRoutableFlidGidIndex: index 1 when its GID carries a FLID, else 0.
          const GidEntry one = slot(1);
          const bool flid = one.usable() && (one.gid[4] != 0 || one.gid[5] != 0);
          const GidEntry chosen = flid ? one : slot(0);
          rec.step(chosen.index, Verdict::chosen, [&] {
            return detail::note_for(chosen) +
                   (flid ? ": InfiniBand, index 1 has a non-zero FLID (NCCL_IB_ROUTABLE_FLID_GID_INDEX)"
                         : ": InfiniBand: index 0 (no FLID at index 1); NCCL_IB_GID_INDEX is not read on IB");
          });
          if (chosen.state == EntryState::empty && table.holes() == Holes::not_shown)
            return fail(errc::entry_not_shown, detail::where(table) + ": NCCL uses index " +
                                                   std::to_string(chosen.index) + ", which the source did not print");
          return detail::select_entry(chosen);
        }
        if (gid_index >= 0)
          return detail::pinned_index(table, static_cast<std::uint32_t>(gid_index), rec,
                                      "NCCL_IB_GID_INDEX=" + std::to_string(gid_index));
        if (len == 0) return fail(errc::no_candidate, detail::where(table) + ": an empty GID table");
        const bool want_inet = !inet6;
        // A range of the other family does not parse in NCCL (inet_pton with the user's family):
        // NCCL ignores it, so it matches everything.
        const bool range_applies = range && (range->network.is_ipv4_mapped() == want_inet);
        const auto in_range = [&](const Gid& g) {
          if (!range_applies) return true;
          return range->contains(g);
        };
        std::uint32_t pick = 0;
        GidEntry cur = slot(0);
        rec.step(0, Verdict::candidate, [&] { return detail::note_for(cur) + ": NCCL starts at index 0"; });
        for (std::uint32_t i = 1; i < len; ++i) {
          const GidEntry cand = slot(i);
          if (cand.state == EntryState::empty && table.holes() == Holes::not_shown) {
            rec.step(i, Verdict::not_shown, [] { return std::string("not printed by the source"); });
            continue;
          }
          const bool cand_inet = nccl_inet(cand.gid);
          const bool cand_match = in_range(cand.gid);
          if (cand_inet != nccl_inet(cur.gid) && cand_inet == want_inet && cand_match) {
            rec.step(i, Verdict::candidate, [&] {
              return detail::note_for(cand) + ": of NCCL_IB_ADDR_FAMILY where index " + std::to_string(pick) +
                     " is not: taken";
            });
            pick = i;
            cur = cand;
            continue;
          }
          if (cand_inet != want_inet) {
            rec.step(i, Verdict::wrong_family, [&] {
              return detail::note_for(cand) + ": not of NCCL_IB_ADDR_FAMILY (" + (want_inet ? "AF_INET" : "AF_INET6") + ")";
            });
            continue;
          }
          if (!nccl_valid(cand.gid)) {
            rec.step(i, cand.gid.is_zero() ? Verdict::empty : Verdict::link_local,
                     [&] { return detail::note_for(cand) + ": not a valid GID to NCCL (::, fe80::/64)"; });
            continue;
          }
          if (!cand_match) {
            rec.step(i, Verdict::outside_subnet,
                     [&] { return detail::note_for(cand) + ": outside NCCL_IB_ADDR_RANGE " + range->to_string(); });
            continue;
          }
          const auto vc = nccl_version(&cand);
          const auto vp = nccl_version(cur.state == EntryState::valid ? &cur : nullptr);
          if (!vc || (!vp && nccl_valid(cur.gid))) {
            // (NCCL >= 2.26.2 moves on when a types read fails with EINVAL; older NCCL aborts.)
            rec.step(i, Verdict::unreadable, [&] {
              return detail::note_for(cand) + ": a RoCE version NCCL cannot read from sysfs: passed over (NCCL >= 2.26.2)";
            });
            continue;
          }
          if ((vp != vc || !nccl_valid(cur.gid)) && *vc == roce_version) {
            rec.step(i, Verdict::candidate, [&] {
              return detail::note_for(cand) + ": RoCE v" + std::to_string(*vc) +
                     " = NCCL_IB_ROCE_VERSION_NUM, over index " + std::to_string(pick) + ": taken";
            });
            pick = i;
            cur = cand;
            continue;
          }
          rec.step(i, Verdict::wrong_type, [&] {
            return detail::note_for(cand) + ": does not beat index " + std::to_string(pick) + " (RoCE v" +
                   std::to_string(*vc) + ")";
          });
        }
        rec.finish(pick);
        if (cur.state == EntryState::empty && table.holes() == Holes::not_shown)
          return fail(errc::entry_not_shown,
                      detail::where(table) + ": NCCL keeps index 0, which the source did not print");
        return detail::select_entry(cur);
      });
}

}  // namespace gidpolicy
