#include <gidpolicy/policies/rdma_cm.hpp>

#include "stack_common.hpp"

#include <algorithm>

namespace gidpolicy {

std::string RdmaCm::spec() const {
  std::string s = "rdma_cm:";
  if (local) s += "local=" + detail::address_to_spec(*local);
  if (peer) s += std::string(local ? "," : "") + "peer=" + peer->to_string();
  if (roce_v1) s += ",mode=v1";
  return s;
}

result<void> RdmaCm::read_option(const SpecOptions& opts, const SpecOption& o) {
  if (o.key == "local") {
    GIDPOLICY_TRY(g, opts.address(o));
    local = g;
  } else if (o.key == "peer") {
    GIDPOLICY_TRY(v, opts.value(o, "an IPv4 or IPv6 address (fe80::/10 with %NETDEV)"));
    auto p = PeerAddress::parse(v);
    if (!p || p.value().address.is_zero())
      return fail(opts.bad_value(o, "an IPv4 or IPv6 address, not zero (fe80::/10 with %NETDEV)"));
    peer = std::move(p).value();
  } else {
    GIDPOLICY_TRY(v, opts.value(o, "v2 or v1"));
    if (v != "v2" && v != "v1") return fail(opts.bad_value(o, "v2 or v1"));
    roce_v1 = v == "v1";
  }
  return success();
}

result<AnyPolicy> RdmaCm::from_options(const SpecOptions& opts) {
  RdmaCm r;
  for (const SpecOption& o : opts) GIDPOLICY_TRYV(r.read_option(opts, o));
  if (r.local.has_value() == r.peer.has_value())
    return fail(opts.missing("exactly one of 'local=ADDR' or 'peer=ADDR' (rdma_cm needs an address)"));
  return AnyPolicy(r);
}

result<Selection> rdma_cm_choose(const GidTable& table, const Gid& source, GidType mode,
                                 std::optional<std::string_view> netdev, SelectOptions run) {
  const auto spec = [&] { return "rdma_cm:local=" + detail::address_to_spec(source); };
  return detail::traced(spec, run, false, [&](detail::Recorder& rec) -> result<Selection> {
    const RoceModeSetting setting{table.port().device, table.port().port, mode};
    auto chosen = rdma_cm_source(std::span<const GidTable>(&table, 1), source, netdev,
                                 std::span<const RoceModeSetting>(&setting, 1));
    // The trace: why each entry holding the address is or is not the kernel's.
    for (const GidEntry& e : table.sgid_entries()) {
      if (!e.usable() || e.gid != source) continue;
      const bool it = chosen && chosen.value().entry == &e;
      rec.step(e.index,
               it ? EntryVerdict::chosen
                  : (e.type != mode ? EntryVerdict::wrong_type : EntryVerdict::other_netdev),
               [&] {
                 return detail::describe(e) + (it ? ": the source address's GID, of default_roce_mode " +
                                                        std::string(to_string(mode)) + ", on its netdev"
                                               : e.type != mode ? ": not of default_roce_mode (" +
                                                                      std::string(to_string(mode)) + ")"
                                                                : ": not on the netdev owning the address");
               });
    }
    if (!chosen)
      return fail(errc::no_candidate, detail::where(table) + ": rdma_cm fails with " + chosen.error().detail);
    return detail::select_entry(*chosen.value().entry);
  });
}

result<Selection> RdmaCm::select(const GidTable& table, SelectOptions run) const {
  // A failure before the match still carries a trace (every failure does, policy.hpp).
  const auto refuse = [&](const Error& e) {
    return detail::traced([this] { return spec(); }, run, false,
                          [&](detail::Recorder&) -> result<Selection> { return fail(e); });
  };
  if (table.port().link_layer.kind() == LinkLayer::Kind::infiniband)
    return refuse(
        Error(errc::not_supported, detail::where(table) +
                                       ": rdma_cm on InfiniBand resolves IPoIB hardware addresses, which a "
                                       "GID table does not hold: not modelled"));
  const GidType mode = roce_v1 ? GidType::roce_v1 : GidType::roce_v2;
  if (local) return rdma_cm_choose(table, *local, mode, std::nullopt, run);
  const Route* route = run.network ? run.network->route_to(*peer) : nullptr;
  if (!route)
    return refuse(
        Error(errc::invalid_argument, detail::where(table) + ": rdma_cm:peer=" + peer->to_string() +
                                          " needs the kernel's route to the peer (SelectOptions::network "
                                          "from observe_network())"));
  if (auto ok = check_peer(*peer); !ok) return refuse(std::move(ok).error());
  if (auto ok = check_route(*peer, *route); !ok) return refuse(std::move(ok).error());
  if (!route->source)
    return refuse(
        Error(errc::no_route, detail::where(table) + ": the route to " + peer->to_string() + " through " +
                                  route->netdev +
                                  " names no source address: the kernel takes the netdev's primary one, "
                                  "which a route alone does not say"));
  return rdma_cm_choose(table, *route->source, mode, std::string_view(route->netdev), run);
}

std::vector<PeerAddress> RdmaCm::peers() const {
  if (peer) return {*peer};
  return {};
}

bool RdmaCm::takes_peer(const SpecOptions& options) {
  return std::none_of(options.begin(), options.end(),
                      [](const SpecOption& o) { return o.key == "local" || o.key == "peer"; });
}

}  // namespace gidpolicy
