// The stacks' own choices (policies/nccl.hpp, ucx.hpp, perftest.hpp, mooncake.hpp, libfabric.hpp,
// rdma_cm.hpp) on every example table, from the rules their sources implement (docs/facts.md).
#include <gidpolicy/policies/libfabric.hpp>
#include <gidpolicy/policies/mooncake.hpp>
#include <gidpolicy/policies/nccl.hpp>
#include <gidpolicy/policies/perftest.hpp>
#include <gidpolicy/policies/rdma_cm.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/policies/ucx.hpp>
#include <gidpolicy/profiles.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

namespace gidpolicy {
namespace {

using test::gid;

static_assert(SelectionPolicy<Nccl>);
static_assert(SelectionPolicy<Ucx>);
static_assert(SelectionPolicy<Perftest>);
static_assert(SelectionPolicy<Mooncake>);
static_assert(SelectionPolicy<Libfabric>);
static_assert(SelectionPolicy<RdmaCm>);

template <class P>
std::uint32_t picked(const P& p, const GidTable& t) {
  return VALUE_OR_FAIL(p.select(t)).entry.index;
}

AnyPolicy spec(std::string_view s) { return VALUE_OR_FAIL(parse_policy(s)); }

TEST(Nccl, AutoTakesTheLowestIpv4RoceV2EntryAndKeepsIndex0WithoutIpv4) {
  EXPECT_EQ(picked(Nccl{}, test::nccl_769()), 3u);
  EXPECT_EQ(picked(Nccl{}, test::nccl_1573_pod(0)), 7u);
  EXPECT_EQ(picked(Nccl{}, test::nccl_1573_pod(1)), 7u);
  EXPECT_EQ(picked(Nccl{}, test::ibm_cx6()), 5u);
  EXPECT_EQ(picked(Nccl{}, test::ds4_linux_unit()), 2u);  // first v2 beats the v1 pick; 3 does not beat 2
  for (int d = 0; d < 3; ++d) EXPECT_EQ(picked(Nccl{}, test::mooncake_ipv6(d)), 0u) << d;  // fe80 stays
}

TEST(Nccl, Inet6FamilyLeavesTheLinkLocalPickForAValidV2Gid) {
  EXPECT_EQ(picked(spec("nccl:family=AF_INET6"), test::mooncake_ipv6(0)), 1u);
  EXPECT_EQ(picked(spec("nccl:family=AF_INET6"), test::mooncake_ipv6(2)), 0u);  // only fe80: nothing valid
}

TEST(Nccl, RangeAndRoceVersionSteerTheWalk) {
  // Nothing in 10.152.4.0/24 on mlx5_0: index 0, an empty slot, stays.
  auto r = VALUE_OR_FAIL(spec("nccl:range=10.152.4.0/24").select(test::nccl_1573_pod(0)));
  EXPECT_EQ(r.entry.index, 0u);
  EXPECT_EQ(r.entry.state, EntryState::empty);
  EXPECT_EQ(picked(spec("nccl:range=10.152.4.0/24"), test::nccl_1573_pod(1)), 7u);
  EXPECT_EQ(picked(spec("nccl:roce_version=1"), test::nccl_769()), 2u);
}

TEST(Nccl, APinnedIndexIsUsedUncheckedEvenAnEmptySlot) {
  auto r = VALUE_OR_FAIL(spec("nccl:gid_index=3").select(test::nccl_1573_pod(0), {.trace = true}));
  EXPECT_EQ(r.entry.index, 3u);
  EXPECT_EQ(r.entry.state, EntryState::empty);
  EXPECT_NE(r.trace.to_string().find("NCCL_IB_GID_INDEX=3"), std::string::npos) << r.trace.to_string();
  EXPECT_EQ(spec("nccl:gid_index=300").select(test::nccl_769()).error(), errc::index_out_of_range);
}

TEST(Nccl, InfinibandUsesTheFlidIndexOnlyWhenItsGidCarriesAFlid) {
  PortInfo ib = test::port("mlx5_4", LinkLayer::infiniband(), 128);
  auto with = VALUE_OR_FAIL(GidTable::make(ib, {GidEntry::valid(0, gid("fe80::1"), GidType::ib),
                                                GidEntry::valid(1, gid("fe80:0:12::1"), GidType::ib)}));
  auto without = VALUE_OR_FAIL(GidTable::make(ib, {GidEntry::valid(0, gid("fe80::1"), GidType::ib),
                                                   GidEntry::valid(1, gid("fe80::2"), GidType::ib)}));
  EXPECT_EQ(picked(Nccl{}, with), 1u);
  EXPECT_EQ(picked(Nccl{}, without), 0u);
  EXPECT_EQ(picked(spec("nccl:gid_index=5"), without), 0u);  // not read on IB
}

TEST(Ucx, RejectsAPortWhoseGid0IsEmptyAndAPinPassesTheCheck) {
  auto r = Ucx{}.select(test::nccl_1573_pod(0));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::no_candidate);
  EXPECT_NE(r.error().detail.find("rejects the port"), std::string::npos) << r.error().detail;
  EXPECT_NE(r.error().detail.find("invalid gid[0] on mlx5_0:1"), std::string::npos) << r.error().detail;
  EXPECT_EQ(picked(spec("ucx:gid_index=7"), test::nccl_1573_pod(0)), 7u);
  EXPECT_FALSE(spec("ucx:gid_index=3").select(test::nccl_1573_pod(0)));  // its check reads gid[3]
}

TEST(Ucx, FourPrioritiesWithoutALinkLocalPreferenceIn113) {
  EXPECT_EQ(picked(Ucx{}, test::nccl_769()), 3u);
  EXPECT_EQ(picked(Ucx{}, test::ibm_cx6()), 5u);
  EXPECT_EQ(picked(Ucx{}, test::ds4_linux_unit()), 2u);
  EXPECT_EQ(picked(Ucx{}, test::mooncake_ipv6(0)), 0u);  // fe80 v2 is (v2, IPv6) first
  EXPECT_EQ(picked(Ucx{}, test::mooncake_ipv6(2)), 1u);
  EXPECT_EQ(picked(spec("ucx:rule=pr10939"), test::mooncake_ipv6(0)), 1u);
  EXPECT_EQ(picked(spec("ucx:rule=pr10939"), test::mooncake_ipv6(2)), 1u);
}

TEST(Perftest, ThePairwiseWalkOf45) {
  EXPECT_EQ(picked(Perftest{}, test::nccl_769()), 3u);
  EXPECT_EQ(picked(Perftest{}, test::nccl_1573_pod(0)), 7u);
  EXPECT_EQ(picked(Perftest{}, test::ibm_cx6()), 5u);
  EXPECT_EQ(picked(Perftest{}, test::mooncake_ipv6(0)), 0u);
  EXPECT_EQ(picked(Perftest{}, test::mooncake_ipv6(2)), 1u);
  EXPECT_EQ(picked(spec("perftest:x=2"), test::nccl_769()), 2u);
  // Not a ranking: an IPv6 RoCE v2 entry after an IPv4 v1 pick replaces it.
  auto t = VALUE_OR_FAIL(GidTable::make(test::port("mlx5_9", LinkLayer::ethernet(), 4),
                                        {GidEntry::valid(0, gid("::ffff:10.0.0.1"), GidType::roce_v1),
                                         GidEntry::valid(1, gid("fd00::1"), GidType::roce_v2)}));
  EXPECT_EQ(picked(Perftest{}, t), 1u);
  EXPECT_EQ(picked(Nccl{}, t), 0u);
}

TEST(Mooncake, ClassesAndTheNullGidCheck) {
  EXPECT_EQ(picked(Mooncake{}, test::nccl_1573_pod(0)), 7u);  // network-private-v4 over network-degraded
  EXPECT_EQ(picked(Mooncake{}, test::mooncake_ipv6(0)), 1u);  // network-routable ULA over fe80
  EXPECT_EQ(picked(Mooncake{}, test::mooncake_ipv6(2)), 1u);  // only v2 is classified
  EXPECT_EQ(picked(Mooncake{}, test::nccl_769()), 3u);
  EXPECT_EQ(picked(Mooncake{}, test::ibm_cx6()), 5u);
  auto null = spec("mooncake:gid_index=3").select(test::nccl_1573_pod(0));
  ASSERT_FALSE(null);
  EXPECT_EQ(null.error(), errc::entry_zero);
  EXPECT_NE(null.error().detail.find("GID is NULL"), std::string::npos);
  EXPECT_EQ(picked(spec("mooncake:gid_index=300"), test::nccl_1573_pod(0)), 7u);  // ignored: auto
  EXPECT_EQ(mooncake_gid_setting("", nullptr), 0);
  EXPECT_EQ(mooncake_gid_setting(nullptr, "5"), 5);
  EXPECT_EQ(mooncake_gid_setting("2", "5"), 2);
  EXPECT_FALSE(mooncake_gid_setting(nullptr, nullptr));
}

TEST(Libfabric, UdRoutesFromIndex0UnlessToldAndMsgIsRdmaCm) {
  EXPECT_EQ(picked(Libfabric{}, test::nccl_769()), 0u);
  EXPECT_EQ(picked(spec("libfabric:gid_idx=3"), test::nccl_769()), 3u);
  EXPECT_EQ(picked(spec("libfabric:ep=msg,local=10.152.0.12"), test::nccl_1573_pod(0)), 7u);
  EXPECT_FALSE(parse_policy("libfabric:local=200.0.209.6"));
  EXPECT_FALSE(parse_policy("libfabric:ep=msg,gid_idx=1,local=200.0.209.6"));
}

TEST(RdmaCm, TheKernelsMatchOfAddressTypeAndNetdev) {
  EXPECT_EQ(picked(spec("rdma_cm:local=10.152.0.12"), test::nccl_1573_pod(0)), 7u);
  EXPECT_EQ(picked(spec("rdma_cm:local=10.152.0.12,mode=v1"), test::nccl_1573_pod(0)), 6u);
  // ibv_devinfo names no netdevs: the entry's netdev cannot stand for the address's owner.
  EXPECT_FALSE(spec("rdma_cm:local=200.0.209.6").select(test::nccl_769()));
  auto none = spec("rdma_cm:local=10.0.0.1").select(test::nccl_1573_pod(0));
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().detail.find("ENODEV"), std::string::npos);

  NetworkView net;
  Route r;
  r.peer = PeerAddress(gid("::ffff:10.152.0.99"));
  r.netdev = "net1";
  r.source = gid("::ffff:10.152.0.12");
  net.routes.push_back(r);
  EXPECT_EQ(VALUE_OR_FAIL(spec("rdma_cm:peer=10.152.0.99").select(test::nccl_1573_pod(0), {.network = &net}))
                .entry.index,
            7u);
  net.routes[0].netdev = "net2";
  EXPECT_FALSE(spec("rdma_cm:peer=10.152.0.99").select(test::nccl_1573_pod(0), {.network = &net}));
  EXPECT_FALSE(spec("rdma_cm:peer=10.152.0.99").select(test::nccl_1573_pod(0)));  // no route known
  // rdma_cm_choose: rdma_cm_source() (rdma_cm.hpp, the fake librdmacm's rule) on one port.
  EXPECT_EQ(VALUE_OR_FAIL(rdma_cm_choose(test::nccl_1573_pod(1), gid("::ffff:10.152.4.12"), GidType::roce_v2,
                                         std::string_view("net2")))
                .entry.index,
            7u);
}

TEST(StackSpecs, RoundTripAndErrorsNameThePosition) {
  for (const char* s :
       {"nccl", "nccl:gid_index=3", "nccl:family=AF_INET6,range=10.0.0.0/8,roce_version=1", "ucx",
        "ucx:gid_index=7", "ucx:rule=pr10939", "perftest", "perftest:x=3,ipv6", "mooncake",
        "mooncake:gid_index=1", "libfabric", "libfabric:gid_idx=2", "libfabric:ep=msg,local=10.0.0.1",
        "rdma_cm:local=10.0.0.1", "rdma_cm:peer=fe80::1%eth0,mode=v1", "first(ucx|nccl)",
        "per-device(mlx5_0=ucx:gid_index=7;*=nccl)"}) {
    const AnyPolicy p = spec(s);
    EXPECT_EQ(p.spec(), s);
    EXPECT_EQ(VALUE_OR_FAIL(parse_policy(p.spec())), p) << s;
  }
  auto bad = parse_policy("nccl:family=AF_INET7");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().detail.find("at position 12"), std::string::npos) << bad.error().detail;
  EXPECT_NE(bad.error().detail.find("silently"), std::string::npos) << bad.error().detail;
  auto unknown = parse_policy("first(auto|ucx:gid=1)");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().detail.find("at position 15"), std::string::npos) << unknown.error().detail;
  EXPECT_FALSE(parse_policy("rdma_cm"));
  EXPECT_FALSE(parse_policy("nccl:gid_index=1,gid_index=2"));
}

}  // namespace
}  // namespace gidpolicy
