#include <gidpolicy/policies/ranked.hpp>

#include "common.hpp"

#include <array>

namespace gidpolicy {
namespace {

/// Rank key, lexicographic, lower is better; the order is documented in ranked.hpp.
using Key = std::array<std::uint32_t, 6>;

std::uint32_t type_rank(GidType t) noexcept {
  switch (t) {
    case GidType::roce_v2:
      return 0;
    case GidType::roce_v1:
      return 1;
    case GidType::ib:
      return 2;
    case GidType::unknown:
      break;
  }
  return 3;
}

}  // namespace

std::string Ranked::spec() const {
  std::string s = "auto";
  char sep = ':';
  auto add = [&](const std::string& opt) {
    s += sep;
    s += opt;
    sep = ',';
  };
  const RankedOptions& o = options;
  if (o.family != FamilyFilter::any) add("family=" + std::string(to_string(o.family)));
  switch (o.type) {
    case TypeFilter::roce_v2:
      add("roce=v2");
      break;
    case TypeFilter::roce_v1:
      add("roce=v1");
      break;
    case TypeFilter::ib:
      add("type=ib");
      break;
    case TypeFilter::any:
      break;
  }
  for (const auto& c : o.subnets) add("subnet=" + c.to_string());
  for (const auto& c : o.excludes) add("exclude=" + c.to_string());
  if (!o.netdev.empty()) add("netdev=" + o.netdev);
  if (o.local) add("local=" + detail::address_to_spec(*o.local));
  if (o.require_local) add("require-local");
  if (o.allow_link_local) add("allow-link-local");
  return s;
}

result<Selection> Ranked::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, true,
      [&](detail::Recorder& rec) -> result<Selection> {
        const RankedOptions& o = options;
        const std::uint32_t len = table.length();
        const LinkLayer ll = table.port().link_layer;
        const bool thunderbolt = ll.kind() == LinkLayer::Kind::thunderbolt;
        const GidEntry* best = nullptr;
        Key best_key{};
        const bool ll_unroutable = link_local_is_unroutable(ll);
        for (const GidEntry& e : table) {
          // Untraced fast path: the entries most tables are full of (empty slots, link-local pairs)
          // are dismissed with a few compares; the full checks below then give the same verdicts
          // with reasons when a trace is recorded.
          if (!rec.on()) {
            if (e.index >= len || e.index > 255) break;  // index order: nothing later can qualify
            if (e.state != EntryState::valid || e.gid.is_zero()) continue;
            if (ll_unroutable && !o.allow_link_local && e.gid.is_link_local()) continue;
          }
          const auto reject = [&](Verdict v, const char* why) {
            rec.step(e.index, v, [&] {
              std::string n = detail::note_for(e);
              if (*why) n += (n.empty() ? "" : ": ") + std::string(why);
              return n;
            });
          };
          if (e.index >= len) {
            reject(Verdict::out_of_range, "beyond gid_tbl_len");
            continue;
          }
          if (e.index > 255) {
            // Entries are in index order: nothing from here on can be an sgid_index. Without a
            // trace there is nothing left to record, so stop reading (a 1024-slot table costs what
            // a 256-slot one does).
            if (!rec.on()) break;
            reject(Verdict::index_above_255, "cannot be an sgid_index (uint8_t)");
            continue;
          }
          if (e.state == EntryState::empty) {
            reject(Verdict::empty, "");
            continue;
          }
          if (e.state == EntryState::unreadable) {
            reject(Verdict::unreadable, "");
            continue;
          }
          if (e.gid.is_zero()) {
            reject(Verdict::zero, "");
            continue;
          }
          const bool link_local = e.gid.is_link_local() && ll_unroutable;
          if (link_local && !o.allow_link_local) {
            reject(Verdict::link_local,
                   "not routed on this link layer, RTR would time out (allow-link-local to accept)");
            continue;
          }
          if (!matches(o.type, e.type)) {
            reject(Verdict::wrong_type, "type filter");
            continue;
          }
          if (!matches(o.family, e.gid)) {
            reject(Verdict::wrong_family, "family filter");
            continue;
          }
          if (!o.subnets.empty()) {
            bool inside = false;
            for (const auto& c : o.subnets) inside = inside || c.contains(e.gid);
            if (!inside) {
              reject(Verdict::outside_subnet, "outside every subnet= prefix");
              continue;
            }
          }
          bool excluded = false;
          for (const auto& c : o.excludes) excluded = excluded || c.contains(e.gid);
          if (excluded) {
            reject(Verdict::excluded_subnet, "inside an exclude= prefix");
            continue;
          }
          if (!o.netdev.empty() && e.netdev != o.netdev) {
            reject(Verdict::other_netdev, e.netdev.empty() ? "netdev unknown" : "another netdev");
            continue;
          }
          const bool is_local = o.local && e.gid == *o.local;
          if (o.require_local && !is_local) {
            reject(Verdict::not_local_address, "require-local");
            continue;
          }

          const Key key{thunderbolt && e.index == 0 ? 1u : 0u, link_local ? 1u : 0u,
                        is_local || !o.local ? 0u : 1u,        type_rank(e.type),
                        e.gid.is_ipv4_mapped() ? 0u : 1u,      e.index};
          rec.step(e.index, Verdict::candidate, [&] {
            std::string n = detail::describe(e);
            if (key[0])
              n += ": index 0 on Thunderbolt ranks last";
            else if (key[1])
              n += ": link-local ranks last";
            else if (o.local && is_local)
              n += ": the local address";
            return n;
          });
          if (!best || key < best_key) {
            best = &e;
            best_key = key;
            // Every rank component but the index is at its best, and later entries have larger
            // indices: nothing after this one can outrank it. Without a trace, stop here.
            if (!rec.on() && best_key[0] == 0 && best_key[1] == 0 && best_key[2] == 0 && best_key[3] == 0 &&
                best_key[4] == 0)
              break;
          }
        }
        if (!best) {
          std::string d = detail::where(table) + ": no entry qualifies";
          if (table.size() == 0) d += " (the table lists no entries)";
          return fail(errc::no_candidate, std::move(d));
        }
        rec.finish(best->index);
        return detail::select_entry(*best);
      });
}

}  // namespace gidpolicy
