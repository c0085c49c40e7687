// network.hpp's peer rules over the route seam (fakes::FakeRoutes): which peers are refused and why
// (check_peer, check_route, observe_network), scoped link-local peers, and auto:peer=ADDR
// deciding as rdma_cm does: the route's source GID on the route's netdev, else another GID of
// the peer's family on that netdev (said in the trace), else a refusal naming the netdev; never
// a GID of another netdev.
#include <gidpolicy/fakes/fake_routes.hpp>
#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/spec.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "support/assert_ok.hpp"

namespace gidpolicy {
namespace {

using testing::HasSubstr;
using testing::Not;

Gid gid(const char* s) { return VALUE_OR_FAIL(Gid::parse(s)); }
PeerAddress peer(const char* s) { return VALUE_OR_FAIL(PeerAddress::parse(s)); }

PortInfo port() {
  return PortInfo{"mlx5_0", 1, PortState::active, LinkLayer::ethernet(), 16, Mtu::mtu_1024, 0};
}

/// A host with eth0 (10.1.0.1, 10.1.0.5, fd00:1::1, fe80::a0), eth1 (10.2.0.1) and eth2, a
/// netdev that holds no GID.
GidTable host_table() {
  return VALUE_OR_FAIL(
      GidTable::make(port(), {GidEntry::valid(0, gid("fe80::a0"), GidType::roce_v2, "eth0"),
                              GidEntry::valid(1, gid("::ffff:10.2.0.1"), GidType::roce_v2, "eth1"),
                              GidEntry::valid(2, gid("::ffff:10.1.0.1"), GidType::roce_v2, "eth0"),
                              GidEntry::valid(3, gid("::ffff:10.1.0.5"), GidType::roce_v2, "eth0"),
                              GidEntry::valid(4, gid("fd00:1::1"), GidType::roce_v2, "eth0"),
                              GidEntry::valid(5, gid("fe80::b1"), GidType::roce_v2, "eth1")}));
}

fakes::FakeRoutes host_routes() {
  fakes::FakeRoutes r;
  r.links = {{"lo", 1}, {"eth0", 2}, {"eth1", 3}, {"eth2", 4}};
  r.routes = {{peer("10.1.0.9"), "eth0", 2, gid("::ffff:10.1.0.5")},
              {peer("10.3.0.9"), "eth2", 4, gid("::ffff:10.3.0.1")},
              {peer("10.1.0.7"), "eth0", 2, gid("::ffff:10.1.0.77")},  // a source no GID holds
              {peer("fd00:1::9"), "eth0", 2, gid("fd00:1::1")},
              {peer("fe80::9%eth0"), "eth0", 2, gid("fe80::a0")},
              {peer("fe80::9%eth1"), "eth1", 3, gid("fe80::b1")},
              {peer("10.2.0.9"), "eth1", 3, gid("::ffff:10.2.0.1")}};
  return r;
}

result<Selection> select_for(const char* p, bool trace = true) {
  fakes::FakeRoutes routes = host_routes();
  const PeerAddress a = peer(p);
  auto view = observe_network(routes, std::span<const PeerAddress>(&a, 1));
  if (!view) return fail(view.error());
  Ranked r{.options = {.peer = a}};
  return r.select(host_table(), {.trace = trace, .network = &view.value()});
}

// ---- peers: parse, scope ---------------------------------------------------------------------

TEST(PeerAddress, ScopedLinkLocalIsAcceptedAndRoundTripsThroughTheSpec) {
  const PeerAddress p = peer("fe80::1%en3");
  EXPECT_EQ(p.address, gid("fe80::1"));
  EXPECT_EQ(p.scope, "en3");
  EXPECT_EQ(p.to_string(), "fe80::1%en3");
  EXPECT_EQ(peer("10.0.0.2").to_string(), "10.0.0.2");
  EXPECT_EQ(peer("::ffff:10.0.0.2"), peer("10.0.0.2"));
  ASSERT_OK_AND_ASSIGN(const auto policy, parse_policy("auto:peer=fe80::1%en3,family=ipv6"));
  EXPECT_EQ(policy.spec(), "auto:family=ipv6,peer=fe80::1%en3");
  EXPECT_EQ(peers_of(policy), std::vector<PeerAddress>{p});
  EXPECT_NE(peer("fe80::1%en3"), peer("fe80::1%en4"));
}

// rdma_cm:peer= and libfabric's MSG endpoints route to their peer as auto:peer= does: the
// caller asks the kernel for the routes peers_of() lists, and without one their select() refuses.
TEST(PeerAddress, PeersOfListsRdmaCmAndLibfabricMsgPeers) {
  ASSERT_OK_AND_ASSIGN(const auto cm, parse_policy("rdma_cm:peer=10.1.0.9,mode=v1"));
  EXPECT_EQ(peers_of(cm), std::vector<PeerAddress>{peer("10.1.0.9")});
  ASSERT_OK_AND_ASSIGN(const auto lf, parse_policy("libfabric:ep=msg,peer=fe80::1%en3"));
  EXPECT_EQ(peers_of(lf), std::vector<PeerAddress>{peer("fe80::1%en3")});
  ASSERT_OK_AND_ASSIGN(const auto nested,
                       parse_policy("first(rdma_cm:peer=10.2.0.9|auto:peer=10.1.0.9|rdma_cm:peer=10.2.0.9)"));
  EXPECT_EQ(peers_of(nested), (std::vector<PeerAddress>{peer("10.2.0.9"), peer("10.1.0.9")}));
  // Addresses of this host are not peers: nothing to route.
  EXPECT_TRUE(peers_of(VALUE_OR_FAIL(parse_policy("rdma_cm:local=10.1.0.1"))).empty());
  EXPECT_TRUE(peers_of(VALUE_OR_FAIL(parse_policy("libfabric:ep=msg,local=10.1.0.1"))).empty());
  EXPECT_TRUE(peers_of(VALUE_OR_FAIL(parse_policy("libfabric"))).empty());
}

TEST(PeerAddress, AScopeOnlyFollowsALinkLocalAddressAndMustBeANetdevName) {
  for (const char* bad : {"10.0.0.2%eth0", "fd00::1%eth0", "fe80::1%", "fe80::1%a/b", "fe80::1%a b",
                          "fe80::1%0123456789abcdef", "fe80::1%..", "fe80::1%e:1", "banana%eth0"}) {
    auto p = PeerAddress::parse(bad);
    ASSERT_FALSE(p.has_value()) << bad;
    EXPECT_EQ(p.error(), errc::invalid_field) << bad;
  }
  EXPECT_THAT(PeerAddress::parse("fd00::1%eth0").error().detail, HasSubstr("not one"));
  EXPECT_FALSE(parse_policy("auto:peer=10.0.0.2%eth0").has_value());
}

// ---- check_peer: refused before the kernel is asked --------------------------------------------

TEST(CheckPeer, UnspecifiedAndLoopbackAreRefusedSayingRdmaCmBindsALoopbackConnection) {
  for (const char* p : {"0.0.0.0", "0.1.2.3", "::", "::ffff:0.0.0.0"}) {
    auto r = check_peer(peer(p));
    ASSERT_FALSE(r.has_value()) << p;
    EXPECT_EQ(r.error(), errc::invalid_argument);
    EXPECT_THAT(r.error().detail, HasSubstr("unspecified address")) << p;
    EXPECT_THAT(r.error().detail, HasSubstr("loopback connection")) << p;
  }
  for (const char* p : {"127.0.0.1", "127.9.8.7", "::1"}) {
    auto r = check_peer(peer(p));
    ASSERT_FALSE(r.has_value()) << p;
    EXPECT_EQ(r.error(), errc::invalid_argument);
    EXPECT_THAT(r.error().detail, HasSubstr("is a loopback address")) << p;
  }
}

TEST(CheckPeer, MulticastAndTheLimitedBroadcastAreRefusedAsNotOnePeer) {
  for (const char* p : {"224.0.0.1", "239.255.255.250", "ff02::1", "ff0e::1"}) {
    auto r = check_peer(peer(p));
    ASSERT_FALSE(r.has_value()) << p;
    EXPECT_THAT(r.error().detail, HasSubstr("multicast group")) << p;
    EXPECT_THAT(r.error().detail, HasSubstr(peer(p).to_string())) << p;
  }
  auto b = check_peer(peer("255.255.255.255"));
  ASSERT_FALSE(b.has_value());
  EXPECT_THAT(b.error().detail, HasSubstr("limited broadcast"));
}

TEST(CheckPeer, AnUnscopedLinkLocalPeerIsRefusedAskingForItsScope) {
  auto r = check_peer(peer("fe80::1"));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), errc::invalid_argument);
  EXPECT_THAT(r.error().detail, HasSubstr("fe80::1%eth0"));
  for (const char* ok : {"fe80::1%eth0", "10.1.0.9", "169.254.3.4", "fd00:1::9", "2001:db8::1", "10.1.0.255"})
    EXPECT_TRUE(check_peer(peer(ok)).has_value()) << ok;
}

// ---- check_route: the kernel's answer ---------------------------------------------------------

result<NetworkView> observe_with(RouteType type, const char* p, std::string netdev = "eth0") {
  fakes::FakeRoutes routes;
  routes.links = {{"lo", 1}, {"eth0", 2}};
  routes.routes = {{peer(p), std::move(netdev), 2, std::nullopt, type}};
  const PeerAddress a = peer(p);
  return observe_network(routes, std::span<const PeerAddress>(&a, 1));
}

TEST(CheckRoute, OneOfThisHostsAddressesIsRefusedSayingRdmaCmWouldConnectToItself) {
  auto v = observe_with(RouteType::local, "10.1.0.1", "lo");
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error(), errc::invalid_argument);
  EXPECT_THAT(v.error().detail, HasSubstr("peer 10.1.0.1 is an address of this host"));
  EXPECT_THAT(v.error().detail, HasSubstr("'local'"));
}

TEST(CheckRoute, BroadcastAnycastAndMulticastRoutesAreRefusedNamingTheType) {
  for (auto [type, word] :
       {std::pair{RouteType::broadcast, "'broadcast'"}, std::pair{RouteType::anycast, "'anycast'"},
        std::pair{RouteType::multicast, "'multicast'"}}) {
    auto v = observe_with(type, "10.1.0.255");
    ASSERT_FALSE(v.has_value()) << word;
    EXPECT_EQ(v.error(), errc::invalid_argument) << word;
    EXPECT_THAT(v.error().detail, HasSubstr(word));
    EXPECT_THAT(v.error().detail, HasSubstr("10.1.0.255"));
  }
}

TEST(CheckRoute, BlackholeUnreachableProhibitAndThrowAreNoRouteInTheToolsWords) {
  for (auto [type, word] :
       {std::pair{RouteType::blackhole, "blackhole route"},
        std::pair{RouteType::unreachable, "unreachable route"},
        std::pair{RouteType::prohibit, "prohibit route"}, std::pair{RouteType::throw_route, "throw route"},
        std::pair{RouteType::other, "of a type (other)"}}) {
    auto v = observe_with(type, "198.51.100.1", "");
    ASSERT_FALSE(v.has_value()) << word;
    EXPECT_EQ(v.error(), errc::no_route) << word;
    EXPECT_EQ(v.error(), std::errc::network_unreachable) << word;
    EXPECT_THAT(v.error().what(), HasSubstr(word));
    EXPECT_THAT(v.error().what(), HasSubstr("198.51.100.1"));
    EXPECT_THAT(v.error().what(), Not(HasSubstr("Invalid argument")));
    EXPECT_THAT(v.error().what(), Not(HasSubstr("Permission denied")));
  }
  // No route at all.
  fakes::FakeRoutes none;
  const PeerAddress a = peer("192.0.2.1");
  auto v = observe_network(none, std::span<const PeerAddress>(&a, 1));
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error(), errc::no_route);
  EXPECT_THAT(v.error().detail, HasSubstr("no route to 192.0.2.1"));
}

TEST(ObserveNetwork, RefusedPeersAreNeverRoutedAndAScopeMustNameANetdevHere) {
  fakes::FakeRoutes routes = host_routes();
  routes.routes.push_back({PeerAddress{}, "eth1", 3, gid("::ffff:10.2.0.1")});  // a default route
  const std::vector<PeerAddress> bad{peer("10.1.0.9"), peer("127.0.0.1")};
  auto v = observe_network(routes, bad);
  ASSERT_FALSE(v.has_value());
  EXPECT_THAT(v.error().detail, HasSubstr("loopback"));
  EXPECT_EQ(routes.queries, 0u);  // checked before any route is asked for
  const PeerAddress ghost = peer("fe80::9%eth7");
  auto g = observe_network(routes, std::span<const PeerAddress>(&ghost, 1));
  ASSERT_FALSE(g.has_value());
  EXPECT_EQ(g.error(), errc::invalid_argument);
  EXPECT_THAT(g.error().detail, HasSubstr("the scope eth7 names no netdev"));
}

// ---- auto:peer=ADDR, rdma_cm's rule -------------------------------------------------------------

TEST(RankedRoute, TheGidHoldingTheRouteSourceOnTheRouteNetdevIsChosen) {
  ASSERT_OK_AND_ASSIGN(auto s, select_for("10.1.0.9"));
  EXPECT_EQ(s.entry.index, 3u);  // 10.1.0.5 on eth0, not the lower-indexed 10.1.0.1
  EXPECT_THAT(s.trace.to_string(), HasSubstr("rdma_cm's choice"));
  ASSERT_OK_AND_ASSIGN(auto untraced, select_for("10.1.0.9", false));
  EXPECT_EQ(untraced.entry.index, 3u);
}

TEST(RankedRoute, ANetdevWithoutAGidIsRefusedNamingItNeverAnotherNetdevsGid) {
  for (bool trace : {true, false}) {
    auto s = select_for("10.3.0.9", trace);
    ASSERT_FALSE(s.has_value()) << "chose index " << s.value().entry.index;
    EXPECT_EQ(s.error(), errc::no_candidate);
    EXPECT_THAT(s.error().detail, HasSubstr("routes it through eth2"));
    EXPECT_THAT(s.error().detail, HasSubstr("no GID of this port is on eth2"));
    EXPECT_THAT(s.error().detail, HasSubstr("ENODEV"));
  }
  auto s = select_for("10.3.0.9");
  ASSERT_NE(s.error().trace, nullptr);
  EXPECT_THAT(s.error().trace->to_string(), HasSubstr("not on eth2, the netdev of the route to 10.3.0.9"));
}

TEST(RankedRoute, WithoutTheSourceGidAnotherGidOnTheRouteNetdevIsTakenAndTheTraceSaysSo) {
  ASSERT_OK_AND_ASSIGN(auto s, select_for("10.1.0.7"));  // source 10.1.0.77: no GID holds it
  EXPECT_EQ(s.entry.netdev, "eth0");
  EXPECT_EQ(s.entry.index, 2u);  // the first IPv4 GID of eth0
  EXPECT_THAT(s.trace.to_string(),
              HasSubstr("on eth0, the netdev of the route to 10.1.0.7, but not its source address 10.1.0.77 "
                        "(rdma_cm would refuse: ENODEV)"));
  EXPECT_THAT(s.trace.to_string(), HasSubstr("[1] other_netdev"));  // 10.2.0.1 on eth1 is not ranked
}

TEST(RankedRoute, AnIpv6PeerChoosesAnIpv6Gid) {
  ASSERT_OK_AND_ASSIGN(auto s, select_for("fd00:1::9"));
  EXPECT_EQ(s.entry.index, 4u);
  EXPECT_EQ(s.entry.gid, gid("fd00:1::1"));
  EXPECT_THAT(s.trace.to_string(), HasSubstr("[2] wrong_family"));
  // No IPv6 GID on the route's netdev: refused, not an IPv4-mapped one.
  fakes::FakeRoutes routes = host_routes();
  routes.routes = {{peer("fd00:2::9"), "eth1", 3, gid("fd00:2::1")}};
  const PeerAddress a = peer("fd00:2::9");
  ASSERT_OK_AND_ASSIGN(auto v, observe_network(routes, std::span<const PeerAddress>(&a, 1)));
  auto none = Ranked{.options = {.peer = a}}.select(host_table(), {.network = &v});
  ASSERT_FALSE(none.has_value());
  EXPECT_THAT(none.error().detail, HasSubstr("none of the 2 GID(s) of this port on eth1 qualifies"));
}

TEST(RankedRoute, AScopedLinkLocalPeerChoosesTheLinkLocalGidOfItsScope) {
  for (bool trace : {true, false}) {
    ASSERT_OK_AND_ASSIGN(auto s0, select_for("fe80::9%eth0", trace));
    EXPECT_EQ(s0.entry.gid, gid("fe80::a0"));
    ASSERT_OK_AND_ASSIGN(auto s1, select_for("fe80::9%eth1", trace));
    EXPECT_EQ(s1.entry.index, 5u);
    EXPECT_EQ(s1.entry.netdev, "eth1");
  }
}

TEST(RankedRoute, AnEntryWithAnUnknownNetdevQualifiesOnlyByHoldingTheSource) {
  const GidTable t = VALUE_OR_FAIL(GidTable::make(
      port(), {GidEntry::valid(1, gid("::ffff:10.9.0.1")), GidEntry::valid(2, gid("::ffff:10.1.0.5"))}));
  fakes::FakeRoutes routes = host_routes();
  for (auto [p, want] : {std::pair{"10.1.0.9", 2u}}) {
    const PeerAddress a = peer(p);
    ASSERT_OK_AND_ASSIGN(auto v, observe_network(routes, std::span<const PeerAddress>(&a, 1)));
    ASSERT_OK_AND_ASSIGN(auto s, (Ranked{.options = {.peer = a}}.select(t, {.trace = true, .network = &v})));
    EXPECT_EQ(s.entry.index, want);
    EXPECT_THAT(s.trace.to_string(), HasSubstr("netdev unknown and not the route's source address"));
  }
  const PeerAddress other = peer("10.2.0.9");
  ASSERT_OK_AND_ASSIGN(auto v, observe_network(routes, std::span<const PeerAddress>(&other, 1)));
  EXPECT_EQ(Ranked{.options = {.peer = other}}.select(t, {.network = &v}).error(), errc::no_candidate);
}

TEST(RankedRoute, AViewBuiltByHandGetsTheSameChecks) {
  const GidTable t = host_table();
  NetworkView local{{{"lo", 1}, {"eth0", 2}},
                    {{peer("10.1.0.1"), "lo", 1, gid("::ffff:10.1.0.1"), RouteType::local}}};
  auto s = Ranked{.options = {.peer = peer("10.1.0.1")}}.select(t, {.network = &local});
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error(), errc::invalid_argument);
  EXPECT_THAT(s.error().detail, HasSubstr("an address of this host"));
  NetworkView loop{{{"lo", 1}}, {{peer("127.0.0.1"), "lo", 1, gid("::ffff:127.0.0.1")}}};
  auto l = Ranked{.options = {.peer = peer("127.0.0.1")}}.select(t, {.network = &loop});
  ASSERT_FALSE(l.has_value());
  EXPECT_THAT(l.error().detail, HasSubstr("loopback"));
  NetworkView hole{{{"lo", 1}}, {{peer("198.51.100.1"), "", 0, std::nullopt, RouteType::blackhole}}};
  EXPECT_EQ(Ranked{.options = {.peer = peer("198.51.100.1")}}.select(t, {.network = &hole}).error(),
            errc::no_route);
}

}  // namespace
}  // namespace gidpolicy

// NetworkView: netdev visibility by name then ifindex, and observe_network over a fake route source.
// A named namespace: the unit tests are a unity build, where every file's anonymous namespace is
// one namespace.
namespace gidpolicy::network_view_test {

Gid gid(const char* s) { return VALUE_OR_FAIL(Gid::parse(s)); }

PortInfo roce_port(std::uint32_t len = 16) {
  return PortInfo{"mlx5_0", 1, PortState::active, LinkLayer::ethernet(), len, Mtu::mtu_1024, 0};
}

// ---- network view, peer routes, namespaces ------------------------------------------------

TEST(NetworkView, ComparesNamesFirstThenIfindexesAndKnowsUnknown) {
  NetworkView v{{{"eth0", 2}, {"eth1", 3}}, {}};
  EXPECT_EQ(v.visibility(GidEntry::valid(0, gid("::ffff:10.0.0.1"), GidType::roce_v2, "eth1", 99)),
            Visibility::visible);  // the name wins over a file's foreign ifindex
  EXPECT_EQ(v.visibility(GidEntry::valid(0, gid("::ffff:10.0.0.1"), GidType::roce_v2, "eth9", 3)),
            Visibility::invisible);
  EXPECT_EQ(v.visibility(GidEntry::valid(0, gid("::ffff:10.0.0.1"), GidType::roce_v2, "", 3)),
            Visibility::visible);
  EXPECT_EQ(v.visibility(GidEntry::valid(0, gid("::ffff:10.0.0.1"), GidType::roce_v2, "", 7)),
            Visibility::invisible);
  EXPECT_EQ(v.visibility(GidEntry::valid(0, gid("::ffff:10.0.0.1"))), Visibility::unknown);
}

TEST(NetworkView, ObserveAsksEachPeerOnceAndFailsOnAnUnroutablePeer) {
  fakes::FakeRoutes routes;
  routes.links = {{"eth0", 2}, {"eth1", 3}};
  routes.routes = {{gid("::ffff:10.1.0.9"), "eth0", 2, gid("::ffff:10.1.0.1")},
                   {Gid{}, "eth1", 3, gid("::ffff:10.2.0.1")}};  // default route
  const std::vector<PeerAddress> peers{gid("::ffff:10.1.0.9"), gid("::ffff:192.0.2.1"),
                                       gid("::ffff:10.1.0.9")};
  ASSERT_OK_AND_ASSIGN(auto v, observe_network(routes, peers));
  EXPECT_EQ(routes.queries, 2u);
  ASSERT_NE(v.route_to(gid("::ffff:192.0.2.1")), nullptr);
  EXPECT_EQ(v.route_to(gid("::ffff:192.0.2.1"))->netdev, "eth1");
  routes.routes.pop_back();
  auto bad = observe_network(routes, std::vector<PeerAddress>{gid("::ffff:192.0.2.1")});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error(), std::errc::network_unreachable);
  EXPECT_THAT(bad.error().detail, testing::HasSubstr("192.0.2.1"));
  std::vector<PeerAddress> many(65, gid("::ffff:10.1.0.9"));
  EXPECT_EQ(observe_network(routes, many).error(), errc::invalid_argument);
}

}  // namespace gidpolicy::network_view_test
