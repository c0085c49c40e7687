#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/spec_options.hpp>

#include "common.hpp"

#include <algorithm>
#include <span>

namespace gidpolicy {

result<AnyPolicy> Ranked::from_options(const SpecOptions& opts) {
  RankedOptions r;
  bool typed = false;
  for (const SpecOption& o : opts) {
    if (o.key == "family") {
      GIDPOLICY_TRY(t, opts.value(o, "a family (ipv4, ipv6, any)"));
      auto f = family_filter_from_string(t);
      if (!f) return fail(opts.bad_value(o, "a family (ipv4, ipv6, any)"));
      r.family = *f;
    } else if (o.key == "roce" || o.key == "type") {
      if (typed) return fail(opts.bad_key(o, "one of 'roce' or 'type', once"));
      typed = true;
      const bool roce = o.key == "roce";
      const char* what = roce ? "a RoCE version (v2, v1, any)" : "a type (roce_v2, roce_v1, ib, any)";
      GIDPOLICY_TRY(t, opts.value(o, what));
      auto f = type_filter_from_string(t);
      if (!f || (roce && *f == TypeFilter::ib)) return fail(opts.bad_value(o, what));
      r.type = *f;
    } else if (o.key == "subnet") {
      GIDPOLICY_TRY(c, opts.cidr(o));
      r.subnets.push_back(c);
    } else if (o.key == "exclude") {
      GIDPOLICY_TRY(c, opts.cidr(o));
      r.excludes.push_back(c);
    } else if (o.key == "netdev") {
      GIDPOLICY_TRY(t, opts.value(o, "a netdev name"));
      r.netdev = std::string(t);
    } else if (o.key == "local") {
      GIDPOLICY_TRY(g, opts.address(o));
      r.local = g;
    } else if (o.key == "peer") {
      GIDPOLICY_TRY(text, opts.value(o, "an IPv4 or IPv6 address (fe80::/10 with its %NETDEV scope)"));
      auto peer = PeerAddress::parse(text);
      if (!peer || peer.value().address.is_zero())
        return fail(
            opts.bad_value(o, "an IPv4 or IPv6 address, not zero (fe80::/10 with its %NETDEV scope)"));
      r.peer = std::move(peer).value();
    } else if (o.key == "require-local") {
      GIDPOLICY_TRYV(opts.flag(o));
      r.require_local = true;
    } else {
      GIDPOLICY_TRYV(opts.flag(o));
      r.allow_link_local = true;
    }
  }
  if (r.require_local && !r.local)
    return fail(opts.missing("the option 'local=ADDR' (require-local needs it)"));
  return AnyPolicy(Ranked{std::move(r)});
}
namespace {

/// Rank key, lower is better; the order is documented in ranked.hpp. One integer whose fields,
/// most significant first, are the rank components: comparing two keys is comparing the tuples
/// (a candidate's index is at most 255, so it fits the low 8 bits).
using Key = std::uint32_t;
constexpr unsigned kIndexBits = 8;

constexpr Key make_key(bool thunderbolt_index0, bool link_local, bool not_local, std::uint32_t type_rank,
                       bool not_mapped, std::uint32_t index, bool invisible = false,
                       bool not_route_source = false) noexcept {
  return (Key{invisible} << 15) | (Key{not_route_source} << 14) | (Key{thunderbolt_index0} << 13) |
         (Key{link_local} << 12) | (Key{not_local} << 11) | (type_rank << 9) |
         (Key{not_mapped} << kIndexBits) | index;
}
/// Every component but the index at its best: no later (higher-index) entry can outrank it.
constexpr bool unbeatable(Key k) noexcept { return (k >> kIndexBits) == 0; }
static_assert(make_key(false, false, false, 0, false, 255) < make_key(false, false, false, 0, true, 0));
static_assert(make_key(false, false, false, 3, true, 255) < make_key(false, false, true, 0, false, 0));
static_assert(make_key(false, true, true, 3, true, 255) < make_key(true, false, false, 0, false, 1));
static_assert(make_key(true, true, true, 3, true, 255, false, true) <
              make_key(false, false, false, 0, false, 0, true));
// The GID holding the route's source address outranks every other key but visibility.
static_assert(make_key(true, true, true, 3, true, 255, false, false) <
              make_key(false, false, false, 0, false, 0, false, true));

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
  if (o.peer) add("peer=" + o.peer->to_string());
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
        const bool skip_link_local =
            ll_unroutable && !o.allow_link_local &&
            !(o.peer && !o.peer->address.is_ipv4_mapped() && o.peer->address.is_link_local());
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
          // A view built by hand gets the checks observe_network() makes.
          if (auto ok = check_peer(*o.peer); !ok)
            return fail(Error(ok.error().code, detail::where(table) + ": " + ok.error().detail));
          if (auto ok = check_route(*o.peer, *route); !ok)
            return fail(Error(ok.error().code, detail::where(table) + ": " + ok.error().detail));
        }
        // rdma_cm's rule (ranked.hpp): with a route, only GIDs of the peer's family on the route's
        // netdev qualify. A link-local peer is reached from its link's link-local address, so
        // link-local GIDs are not rejected then.
        const bool peer_v4 = route && o.peer->address.is_ipv4_mapped();
        const bool peer_link_local = route && !peer_v4 && o.peer->address.is_link_local();
        const std::string peer_text = o.peer ? o.peer->to_string() : std::string();
        const std::string route_netdev = !route ? std::string()
                                         : !route->netdev.empty()
                                             ? route->netdev
                                             : "ifindex " + std::to_string(route->ifindex);
        const std::string route_source = route && route->source
                                             ? (route->source->is_ipv4_mapped() ? route->source->ipv4_string()
                                                                                : route->source->to_string())
                                             : std::string();
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
          const auto reject = [&](EntryVerdict v, const char* why) {
            rec.step(e.index, v, [&] {
              std::string n = detail::note_for(e);
              if (*why) n += (n.empty() ? "" : ": ") + std::string(why);
              return n;
            });
          };
          // As reject(), the reason built only when a trace records it.
          const auto reject_because = [&](EntryVerdict v, const auto& why) {
            rec.step(e.index, v, [&] { return detail::note_for(e) + ": " + why(); });
          };
          if (e.index > 255) {
            // (Only reached when tracing: the untraced scan stops at table.sgid_entries().)
            reject(EntryVerdict::index_above_255, "cannot be an sgid_index (uint8_t)");
            continue;
          }
          if (e.state == EntryState::empty) {
            reject(EntryVerdict::empty, "");
            continue;
          }
          if (e.state == EntryState::unreadable) {
            reject(EntryVerdict::unreadable, "");
            continue;
          }
          if (e.gid.is_zero()) {
            reject(EntryVerdict::zero, "");
            continue;
          }
          bool route_source_entry = false;
          if (route) {
            const bool on_netdev = NetworkView::on_netdev(e, *route);
            if (e.gid.is_ipv4_mapped() != peer_v4) {
              reject(
                  EntryVerdict::wrong_family,
                  peer_v4
                      ? "the peer is IPv4: only an IPv4-mapped GID can reach it"
                      : "the peer is IPv6: an IPv4-mapped GID cannot reach it (the RTR fails with EINVAL)");
              continue;
            }
            const bool netdev_unknown = e.netdev.empty() && e.ifindex == 0;
            // An entry whose netdev is unknown (a table that does not say) qualifies only by holding
            // the source address itself: nothing else ties it to the route's netdev.
            route_source_entry = route->source && e.gid == *route->source && (on_netdev || netdev_unknown);
            if (!on_netdev && !route_source_entry) {
              reject_because(EntryVerdict::other_netdev, [&] {
                return netdev_unknown
                           ? "netdev unknown and not the route's source address: cannot be shown to be "
                             "on " +
                                 route_netdev + ", the netdev of the route to " + peer_text
                           : "not on " + route_netdev + ", the netdev of the route to " + peer_text +
                                 ": RoCE sends from a GID's own netdev, and rdma_cm never uses another "
                                 "netdev's GID";
              });
              continue;
            }
          }
          const bool link_local = e.gid.is_link_local() && ll_unroutable && !peer_link_local;
          if (link_local && !o.allow_link_local) {
            reject(EntryVerdict::link_local,
                   "not routed on this link layer, RTR would time out (allow-link-local to accept)");
            continue;
          }
          if (!matches(o.type, e.type)) {
            reject(EntryVerdict::wrong_type, "type filter");
            continue;
          }
          if (!matches(o.family, e.gid)) {
            reject(EntryVerdict::wrong_family, "family filter");
            continue;
          }
          if (!o.subnets.empty()) {
            bool inside = false;
            for (const auto& c : o.subnets) inside = inside || c.contains(e.gid);
            if (!inside) {
              reject(EntryVerdict::outside_subnet, "outside every subnet= prefix");
              continue;
            }
          }
          bool excluded = false;
          for (const auto& c : o.excludes) excluded = excluded || c.contains(e.gid);
          if (excluded) {
            reject(EntryVerdict::excluded_subnet, "inside an exclude= prefix");
            continue;
          }
          if (!o.netdev.empty() && e.netdev != o.netdev) {
            reject(EntryVerdict::other_netdev, e.netdev.empty() ? "netdev unknown" : "another netdev");
            continue;
          }
          const bool is_local = o.local && e.gid == *o.local;
          if (o.require_local && !is_local) {
            reject(EntryVerdict::not_local_address, "require-local");
            continue;
          }

          const bool tb_index0 = thunderbolt && e.index == 0;
          const bool invisible = net && net->visibility(e) == Visibility::invisible;
          const Key key = make_key(tb_index0, link_local, o.local && !is_local, type_rank(e.type),
                                   !e.gid.is_ipv4_mapped(), e.index, invisible, route && !route_source_entry);
          rec.step(e.index, EntryVerdict::candidate, [&] {
            std::string n = detail::describe(e);
            if (invisible)
              n += ": netdev " + (e.netdev.empty() ? "ifindex " + std::to_string(e.ifindex) : e.netdev) +
                   " is not in this network namespace, ranks below every visible candidate (RTR would fail "
                   "with ENODEV)";
            else if (route_source_entry)
              n += ": holds " + route_source + ", the source address of the route to " + peer_text + " on " +
                   route_netdev + " (rdma_cm's choice)";
            else if (route)
              n += ": on " + route_netdev + ", the netdev of the route to " + peer_text +
                   ", but not its source address" +
                   (route_source.empty() ? std::string(" (the route names none)")
                                         : " " + route_source + " (rdma_cm would refuse: ENODEV)");
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
        if (!best && route) {
          // Counted over the whole table here, not in the scan: the untraced scan skips entries the
          // traced one looks at, and the message must not depend on tracing.
          std::size_t on_route_netdev_seen = 0;
          for (const GidEntry& e : table.entries())
            if (e.state == EntryState::valid && !e.gid.is_zero() && NetworkView::on_netdev(e, *route))
              ++on_route_netdev_seen;
          std::string d = detail::where(table) + ": peer=" + peer_text + ": the kernel routes it through " +
                          route_netdev +
                          (route_source.empty() ? "" : " (source address " + route_source + ")");
          if (on_route_netdev_seen == 0)
            d += ", and no GID of this port is on " + route_netdev;
          else
            d += ", and none of the " + std::to_string(on_route_netdev_seen) + " GID(s) of this port on " +
                 route_netdev + " qualifies (the trace says why)";
          d +=
              ": rdma_cm would fail with ENODEV; a GID of another netdev would send from the wrong interface";
          return fail(errc::no_candidate, std::move(d));
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

std::vector<PeerAddress> Ranked::peers() const {
  if (options.peer) return {*options.peer};
  return {};
}

bool Ranked::takes_peer(const SpecOptions& options) {
  return std::none_of(options.begin(), options.end(), [](const SpecOption& o) { return o.key == "peer"; });
}

}  // namespace gidpolicy
