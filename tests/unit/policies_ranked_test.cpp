// Ranked ("auto"): filters, the documented order, and failures that list every rejection.
#include <gidpolicy/fakes/fake_routes.hpp>
#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/spec.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace gidpolicy {
namespace {

using test::gid;

static_assert(SelectionPolicy<Ranked>);

std::uint32_t ranked_picked(const result<Selection>& r) {
  EXPECT_TRUE(r) << (r ? "" : r.error().what());
  return r ? r.value().entry.index : 9999u;
}
Cidr cidr(std::string_view s) { return VALUE_OR_FAIL(Cidr::parse(s)); }

TEST(Ranked, EveryExampleTable) {
  EXPECT_EQ(ranked_picked(Ranked{}.select(test::nccl_769())), 3u);  // the v2 twin, where JACCL takes 2
  EXPECT_EQ(ranked_picked(Ranked{}.select(test::apple_ds4qa())), 1u);
  EXPECT_EQ(ranked_picked(Ranked{}.select(test::macmini())), 2u);
  EXPECT_EQ(ranked_picked(Ranked{}.select(test::ds4_linux_unit())), 2u);
  EXPECT_EQ(ranked_picked(Ranked{}.select(test::nccl_1573_pod(0))), 7u);  // the pod table starting at 4
  EXPECT_EQ(ranked_picked(Ranked{}.select(test::nccl_1573_pod(1))), 7u);
  EXPECT_EQ(ranked_picked(Ranked{}.select(test::ibm_cx6())), 5u);
  EXPECT_EQ(ranked_picked(Ranked{}.select(test::mooncake_ipv6(0))), 1u);  // the ULA, never the fe80
  EXPECT_EQ(ranked_picked(Ranked{}.select(test::mooncake_ipv6(1))), 1u);
}

TEST(Ranked, NoSilentFallbackToLinkLocal) {
  auto r = Ranked{}.select(test::mooncake_ipv6(2));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::no_candidate);
  EXPECT_NE(r.error().detail.find("[0] link_local, [1] link_local"), std::string::npos) << r.error().detail;
  ASSERT_TRUE(r.error().trace);
  const auto& steps = r.error().trace->attempts.at(0).steps;
  ASSERT_EQ(steps.size(), 2u);
  for (const auto& s : steps) {
    EXPECT_EQ(s.verdict, EntryVerdict::link_local);
    EXPECT_NE(s.note.find("fe80::7ec2:55ff:feba:ff88"), std::string::npos) << s.note;
  }
  auto tb = Ranked{}.select(test::apple_noipv4());
  EXPECT_EQ(tb.error(), errc::no_candidate);
  EXPECT_EQ(tb.error().trace->attempts.at(0).steps.at(0).verdict, EntryVerdict::link_local);
}

TEST(Ranked, AllowLinkLocalRanksItLast) {
  Ranked p{{.allow_link_local = true}};
  EXPECT_EQ(ranked_picked(p.select(test::mooncake_ipv6(2))), 1u);  // v2 over v1
  EXPECT_EQ(ranked_picked(p.select(test::nccl_769())), 3u);        // still the routable entry first
  EXPECT_EQ(ranked_picked(p.select(test::apple_noipv4())), 0u);    // the only one left
}

TEST(Ranked, ThunderboltIndex0RanksBelowEveryOtherCandidate) {
  const std::vector<GidEntry> entries{GidEntry::valid(0, gid("::ffff:10.0.0.1")),
                                      GidEntry::valid(1, gid("fd00::1"))};
  ASSERT_OK_AND_ASSIGN(auto tb,
                       GidTable::make(test::port("rdma_en1", LinkLayer::thunderbolt(), 16), entries));
  ASSERT_OK_AND_ASSIGN(auto eth, GidTable::make(test::port("eth", LinkLayer::ethernet(), 16), entries));
  EXPECT_EQ(ranked_picked(Ranked{}.select(eth)), 0u);  // IPv4 over IPv6
  auto r = Ranked{}.select(tb, {.trace = true});
  EXPECT_EQ(ranked_picked(r), 1u);
  const auto& steps = r.value().trace.attempts.at(0).steps;
  EXPECT_EQ(steps.at(0).verdict, EntryVerdict::lower_rank);
  EXPECT_NE(steps.at(0).note.find("index 0 on Thunderbolt"), std::string::npos);
  EXPECT_EQ(steps.at(1).verdict, EntryVerdict::chosen);
  // Even a link-local candidate (allowed) ranks above Thunderbolt's index 0.
  auto tb2 = VALUE_OR_FAIL(
      GidTable::make(test::port("rdma_en1", LinkLayer::thunderbolt(), 16),
                     {GidEntry::valid(0, gid("::ffff:10.0.0.1")), GidEntry::valid(3, gid("fe80::5"))}));
  EXPECT_EQ(ranked_picked(Ranked{{.allow_link_local = true}}.select(tb2)), 3u);
  EXPECT_EQ(ranked_picked(Ranked{}.select(tb2)), 0u);  // link-local refused: index 0 is all there is
}

TEST(Ranked, OrderV2OverV1OverUnknownThenIpv4ThenIndex) {
  auto t = VALUE_OR_FAIL(GidTable::make(test::port("eth", LinkLayer::ethernet(), 16),
                                        {GidEntry::valid(0, gid("::ffff:10.0.0.1"), GidType::unknown),
                                         GidEntry::valid(1, gid("::ffff:10.0.0.2"), GidType::roce_v1),
                                         GidEntry::valid(2, gid("fd00::2"), GidType::roce_v2),
                                         GidEntry::valid(3, gid("::ffff:10.0.0.3"), GidType::roce_v2),
                                         GidEntry::valid(4, gid("::ffff:10.0.0.4"), GidType::roce_v2)}));
  EXPECT_EQ(ranked_picked(Ranked{}.select(t)), 3u);
  EXPECT_EQ(ranked_picked(Ranked{{.type = TypeFilter::roce_v1}}.select(t)), 1u);
  EXPECT_EQ(ranked_picked(Ranked{{.family = FamilyFilter::ipv6}}.select(t)), 2u);
  EXPECT_EQ(ranked_picked(Ranked{{.local = gid("::ffff:10.0.0.2")}}.select(t)), 1u);  // local first, even v1
  EXPECT_EQ(ranked_picked(Ranked{{.local = gid("::ffff:10.0.0.4")}}.select(t)), 4u);
  EXPECT_EQ(ranked_picked(Ranked{{.local = gid("::ffff:10.9.9.9")}}.select(t)),
            3u);  // absent: a preference only
  auto req = Ranked{{.local = gid("::ffff:10.9.9.9"), .require_local = true}}.select(t);
  EXPECT_EQ(req.error(), errc::no_candidate);
  EXPECT_EQ(req.error().trace->attempts.at(0).steps.at(0).verdict, EntryVerdict::not_local_address);
}

TEST(Ranked, SubnetExcludeAndNetdevFilters) {
  const GidTable pod0 = test::nccl_1573_pod(0), pod1 = test::nccl_1573_pod(1);
  Ranked in4{{.subnets = {cidr("10.152.4.0/24")}}};
  EXPECT_EQ(ranked_picked(in4.select(pod1)), 7u);
  auto out = in4.select(pod0);
  EXPECT_EQ(out.error(), errc::no_candidate);
  EXPECT_NE(out.error().detail.find("[6] outside_subnet, [7] outside_subnet"), std::string::npos)
      << out.error().detail;
  Ranked ex{{.excludes = {cidr("10.152.0.0/24")}}};
  EXPECT_EQ(ex.select(pod0).error(), errc::no_candidate);
  EXPECT_EQ(ranked_picked(ex.select(pod1)), 7u);
  Ranked two{{.subnets = {cidr("10.152.0.0/24"), cidr("10.152.4.0/24")}}};
  EXPECT_EQ(ranked_picked(two.select(pod0)), 7u);
  EXPECT_EQ(ranked_picked(two.select(pod1)), 7u);
  Ranked nd{{.netdev = "net2"}};
  EXPECT_EQ(ranked_picked(nd.select(pod1)), 7u);
  auto wrong = nd.select(pod0, {.trace = true});
  EXPECT_EQ(wrong.error(), errc::no_candidate);
  EXPECT_EQ(wrong.error().trace->attempts.at(0).steps.at(3).verdict, EntryVerdict::other_netdev);
  Ranked ula{{.subnets = {cidr("fd93:16d3:59b6:10e::/64")}}};
  EXPECT_EQ(ula.select(test::mooncake_ipv6(0)).error(), errc::no_candidate);
  EXPECT_EQ(ranked_picked(ula.select(test::mooncake_ipv6(1))), 1u);
}

TEST(Ranked, NeverEmptyZeroUnreadableOrAbove255) {
  auto t = VALUE_OR_FAIL(GidTable::make(test::port("x", LinkLayer::ethernet(), 1024),
                                        {GidEntry::empty(0), GidEntry::valid(1, Gid{}, GidType::roce_v2),
                                         GidEntry::unreadable(2, std::make_error_code(std::errc::io_error)),
                                         GidEntry::valid(256, gid("::ffff:10.0.0.1"), GidType::roce_v2)}));
  auto r = Ranked{}.select(t);
  ASSERT_FALSE(r);
  const auto& steps = r.error().trace->attempts.at(0).steps;
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].verdict, EntryVerdict::empty);
  EXPECT_EQ(steps[1].verdict, EntryVerdict::zero);
  EXPECT_EQ(steps[2].verdict, EntryVerdict::unreadable);
  EXPECT_EQ(steps[3].verdict, EntryVerdict::index_above_255);
}

TEST(Ranked, InfinibandLinkLocalIsFine) {
  auto ib = VALUE_OR_FAIL(GidTable::make(test::port("mlx5_ib", LinkLayer::infiniband(), 128),
                                         {GidEntry::valid(0, gid("fe80::ac0:ebff:feda:1cfb"), GidType::ib)}));
  EXPECT_EQ(ranked_picked(Ranked{}.select(ib)), 0u);
}

TEST(Ranked, IndependentOfEntryOrder) {
  auto base = test::nccl_1573_pod(0);
  std::vector<GidEntry> entries(base.begin(), base.end());
  std::mt19937 rng(7);
  for (int i = 0; i < 10; ++i) {
    std::shuffle(entries.begin(), entries.end(), rng);
    auto t = VALUE_OR_FAIL(GidTable::make(base.port(), entries));
    EXPECT_EQ(ranked_picked(Ranked{}.select(t)), 7u);
  }
}

TEST(Ranked, SuccessWithoutTraceRecordsNothing) {
  auto r = Ranked{}.select(test::nccl_769());
  ASSERT_OK(r);
  EXPECT_TRUE(r.value().trace.attempts.empty());
  auto t = Ranked{}.select(test::nccl_769(), {.trace = true});
  ASSERT_OK(t);
  const auto& steps = t.value().trace.attempts.at(0).steps;
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].verdict, EntryVerdict::link_local);
  EXPECT_EQ(steps[1].verdict, EntryVerdict::link_local);
  EXPECT_EQ(steps[2].verdict, EntryVerdict::lower_rank);
  EXPECT_EQ(steps[3].verdict, EntryVerdict::chosen);
  EXPECT_EQ(t.value().trace.attempts.at(0).policy, "auto");
}

TEST(Ranked, Spec) {
  EXPECT_EQ(Ranked{}.spec(), "auto");
  RankedOptions o{.family = FamilyFilter::ipv4,
                  .type = TypeFilter::roce_v2,
                  .subnets = {cidr("10.0.0.0/8"), cidr("fd00::/8")},
                  .excludes = {cidr("10.1.0.0/16")},
                  .netdev = "eth0",
                  .local = gid("::ffff:10.0.0.5"),
                  .require_local = true,
                  .allow_link_local = true};
  EXPECT_EQ(Ranked{o}.spec(),
            "auto:family=ipv4,roce=v2,subnet=10.0.0.0/8,subnet=fd00::/8,exclude=10.1.0.0/16,netdev=eth0,"
            "local=10.0.0.5,require-local,allow-link-local");
  EXPECT_EQ(Ranked{{.type = TypeFilter::ib}}.spec(), "auto:type=ib");
}

}  // namespace
}  // namespace gidpolicy

// auto:peer=ADDR (the route's source GID on the route's netdev) and the namespace ranking.
// A named namespace: the unit tests are a unity build, where every file's anonymous namespace is
// one namespace.
namespace gidpolicy::ranked_peer_test {

Gid gid(const char* s) { return VALUE_OR_FAIL(Gid::parse(s)); }

PortInfo roce_port(std::uint32_t len = 16) {
  return PortInfo{"mlx5_0", 1, PortState::active, LinkLayer::ethernet(), len, Mtu::mtu_1024, 0};
}

GidTable two_netdevs() {
  return VALUE_OR_FAIL(
      GidTable::make(roce_port(), {GidEntry::valid(1, gid("::ffff:10.9.0.1"), GidType::roce_v2, "ghost0"),
                                   GidEntry::valid(2, gid("::ffff:10.1.0.1"), GidType::roce_v2, "eth0"),
                                   GidEntry::valid(3, gid("::ffff:10.1.0.5"), GidType::roce_v2, "eth0"),
                                   GidEntry::valid(4, gid("::ffff:10.2.0.1"), GidType::roce_v2, "eth1")}));
}

TEST(RankedPeer, PrefersTheRouteSourceOnTheRouteNetdevAndRoundTrips) {
  ASSERT_OK_AND_ASSIGN(const auto p, parse_policy("auto:peer=10.2.0.9"));
  EXPECT_EQ(p.spec(), "auto:peer=10.2.0.9");
  EXPECT_EQ(peers_of(p), std::vector<PeerAddress>{gid("::ffff:10.2.0.9")});
  EXPECT_EQ(peers_of(VALUE_OR_FAIL(parse_policy("first(validated:index=1|auto:peer=10.1.0.9)"))),
            std::vector<PeerAddress>{gid("::ffff:10.1.0.9")});
  const GidTable t = two_netdevs();
  NetworkView v{{{"eth0", 2}, {"eth1", 3}},
                {{gid("::ffff:10.2.0.9"), "eth1", 3, gid("::ffff:10.2.0.1")},
                 {gid("::ffff:10.1.0.9"), "eth0", 2, gid("::ffff:10.1.0.5")}}};
  EXPECT_EQ(VALUE_OR_FAIL(p.select(t, {.network = &v})).entry.index, 4u);
  // The source address decides between two GIDs on the route's netdev.
  EXPECT_EQ(VALUE_OR_FAIL(parse_policy("auto:peer=10.1.0.9")).select(t, {.network = &v}).value().entry.index,
            3u);
  // Without the kernel's route, peer= is an error, never a silent fallback.
  auto none = p.select(t);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error(), errc::invalid_argument);
  EXPECT_THAT(none.error().detail, testing::HasSubstr("needs the kernel's route"));
  EXPECT_EQ(VALUE_OR_FAIL(parse_policy("auto:peer=10.7.0.1")).select(t, {.network = &v}).error(),
            errc::invalid_argument);
  EXPECT_FALSE(parse_policy("auto:peer=banana").has_value());
}

TEST(RankedNamespace, InvisibleNetdevRanksBelowEveryVisibleCandidateWithTheReason) {
  const GidTable t = two_netdevs();
  ASSERT_OK_AND_ASSIGN(const auto automatic, parse_policy("auto"));
  EXPECT_EQ(VALUE_OR_FAIL(automatic.select(t)).entry.index, 1u);  // no view: the table order
  NetworkView v{{{"eth0", 2}, {"eth1", 3}}, {}};
  ASSERT_OK_AND_ASSIGN(auto s, automatic.select(t, {.trace = true, .network = &v}));
  EXPECT_EQ(s.entry.index, 2u);
  EXPECT_THAT(s.trace.to_string(), testing::HasSubstr("ghost0 is not in this network namespace"));
  // Only invisible candidates: still chosen (ranked, not rejected), the trace says why.
  NetworkView empty{{{"lo", 1}}, {}};
  ASSERT_OK_AND_ASSIGN(auto last, automatic.select(t, {.trace = true, .network = &empty}));
  EXPECT_EQ(last.entry.index, 1u);
  EXPECT_THAT(last.trace.to_string(), testing::HasSubstr("ranks below every visible candidate"));
}

}  // namespace gidpolicy::ranked_peer_test
