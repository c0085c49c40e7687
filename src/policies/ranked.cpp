#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/ranked.hpp>

#include "common.hpp"

#include <span>

namespace gidpolicy {
namespace {

/// Rank key, lower is better; the order is documented in ranked.hpp. One integer whose fields,
/// most significant first, are the rank components: comparing two keys is comparing the tuples
/// (a candidate's index is at most 255, so it fits the low 8 bits).
using Key = std::uint32_t;
constexpr unsigned kIndexBits = 8;

constexpr Key make_key(bool thunderbolt_index0, bool link_local, bool not_local, std::uint32_t type_rank,
                       bool not_mapped, std::uint32_t index, bool invisible = false,
                       std::uint32_t route_rank = 0) noexcept {
  return (Key{invisible} << 16) | (Key{thunderbolt_index0} << 15) | (Key{link_local} << 14) |
         (route_rank << 12) | (Key{not_local} << 11) | (type_rank << 9) | (Key{not_mapped} << kIndexBits) |
         index;
}
/// Every component but the index at its best: no later (higher-index) entry can outrank it.
constexpr bool unbeatable(Key k) noexcept { return (k >> kIndexBits) == 0; }
static_assert(make_key(false, false, false, 0, false, 255) < make_key(false, false, false, 0, true, 0));
static_assert(make_key(false, false, false, 3, true, 255) < make_key(false, false, true, 0, false, 0));
static_assert(make_key(false, true, true, 3, true, 255) < make_key(true, false, false, 0, false, 1));
static_assert(make_key(true, true, true, 3, true, 255, false, 2) <
              make_key(false, false, false, 0, false, 0, true));
static_assert(make_key(false, false, true, 3, true, 255, false, 0) <
              make_key(false, false, false, 0, false, 0, false, 1));

/// The untraced scan's skip loop: the first entry from `p` on that holds a non-zero GID and,
/// with `SkipLinkLocal`, is not link-local. (A template so that the per-entry loop carries no
/// test of the option.)
template <bool SkipLinkLocal>
const GidEntry* next_plausible(const GidEntry* p, const GidEntry* end) noexcept {
  for (; p != end; ++p) {
    if (SkipLinkLocal && p->gid.is_link_local()) continue;
    if (p->state == EntryState::valid && !p->gid.is_zero()) return p;
  }
  return end;
}

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
  if (o.peer) add("peer=" + detail::address_to_spec(*o.peer));
  if (o.require_local) add("require-local");
  if (o.allow_link_local) add("allow-link-local");
  return s;
}

result<Selection> Ranked::select(const GidTable& table, SelectOptions run) const {
  return detail::traced(
      [this] { return spec(); }, run, true,
      [&](detail::Recorder& rec) -> result<Selection> {
        const RankedOptions& o = options;
        const LinkLayer ll = table.port().link_layer;
        const bool thunderbolt = ll.kind() == LinkLayer::Kind::thunderbolt;
        const GidEntry* best = nullptr;
        Key best_key{};
        const bool ll_unroutable = link_local_is_unroutable(ll);
        const bool skip_link_local = ll_unroutable && !o.allow_link_local;
        const bool tracing = rec.on();
        const NetworkView* net = run.network;
        const Route* route = nullptr;
        if (o.peer) {
          route = net ? net->route_to(*o.peer) : nullptr;
          if (!route)
            return fail(
                errc::invalid_argument,
                detail::where(table) + ": peer=" + o.peer->to_string() +
                    " needs the kernel's route to the peer (SelectOptions::network from observe_network(); "
                    "gidpolicy select --peer does this)" +
                    (net ? ": the network view has no route to it" : ": none was given"));
        }
        // Untraced, only the entries an sgid_index can name are read (a 1024-slot table costs what
        // a 256-slot one does), and the entries most tables are full of (link-local pairs, empty
        // slots) are skipped by a tight loop of word compares; the full checks below then give the
        // same verdicts with reasons when a trace is recorded, for every entry.
        const std::span<const GidEntry> scan = tracing ? table.entries() : table.sgid_entries();
        const GidEntry* const end = scan.data() + scan.size();
        const auto next = [&](const GidEntry* p) {
          if (tracing) return p;
          return skip_link_local ? next_plausible<true>(p, end) : next_plausible<false>(p, end);
        };
        for (const GidEntry* p = next(scan.data()); p != end; p = next(p + 1)) {
          const GidEntry& e = *p;
          const auto reject = [&](Verdict v, const char* why) {
            rec.step(e.index, v, [&] {
              std::string n = detail::note_for(e);
              if (*why) n += (n.empty() ? "" : ": ") + std::string(why);
              return n;
            });
          };
          if (e.index > 255) {
            // (Only reached when tracing: the untraced scan stops at table.sgid_entries().)
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

          const bool tb_index0 = thunderbolt && e.index == 0;
          const bool invisible = net && net->visibility(e) == Visibility::invisible;
          const bool on_route_netdev = route && NetworkView::on_netdev(e, *route);
          // rdma_cm's match: the route's source address, on the route's netdev (an entry whose
          // netdev is unknown matches by address alone).
          const bool route_source = route && route->source && e.gid == *route->source &&
                                    (on_route_netdev || (e.netdev.empty() && e.ifindex == 0));
          const std::uint32_t route_rank = !route ? 0u : route_source ? 0u : on_route_netdev ? 1u : 2u;
          const Key key = make_key(tb_index0, link_local, o.local && !is_local, type_rank(e.type),
                                   !e.gid.is_ipv4_mapped(), e.index, invisible, route_rank);
          rec.step(e.index, Verdict::candidate, [&] {
            std::string n = detail::describe(e);
            if (invisible)
              n += ": netdev " + (e.netdev.empty() ? "ifindex " + std::to_string(e.ifindex) : e.netdev) +
                   " is not in this network namespace, ranks below every visible candidate (RTR would fail "
                   "with ENODEV)";
            else if (route_source)
              n += ": holds the source address of the route to " + o.peer->to_string() + " on " +
                   route->netdev;
            else if (on_route_netdev)
              n += ": on " + route->netdev + ", the netdev of the route to " + o.peer->to_string();
            else if (route)
              n += ": not on " + route->netdev + ", the netdev of the route to " + o.peer->to_string();
            else if (tb_index0)
              n += ": index 0 on Thunderbolt ranks last";
            else if (link_local)
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
            if (!tracing && unbeatable(best_key)) break;
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
