// FakeFabric: MLX PR 3389 reproduced (a Mac mini with its IPv4-mapped GID at index 2 breaks
// every JACCL pair it is part of) and fixed (jaccl_fixed, the ranked automatic profile); ring
// topology; the Linux variant (NCCL 769's table under JACCL); a table change between selection
// and RTR, with and without preflight.
#include <gidpolicy/fakes/fake_fabric.hpp>
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/profiles.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"
#include "support/gid_literals.hpp"

#include <gtest/gtest.h>

namespace gidpolicy::fakes {
namespace {

GidTable example(const char* file) {
  auto t = formats::read_tables_file(test::example_tables_dir() / file);
  EXPECT_TRUE(t) << file << ": " << (t ? "" : t.error().what());
  return t.value().at(0);
}

/// A Mac whose Thunderbolt port has the usual layout: fe80 at 0, its IPv4-mapped GID at 1.
GidTable mac_mapped_at_1(std::string_view ipv4) {
  PortInfo p{"rdma_en1", 1, PortState::active, LinkLayer::thunderbolt(), 16, Mtu::mtu_1024, 0};
  return VALUE_OR_FAIL(GidTable::make(p, {GidEntry::valid(0, g("fe80::3c51:2eff:fe10:aa01")),
                                          GidEntry::valid(1, g("::ffff:" + std::string(ipv4)))}));
}

/// The PR 3389 mesh: mac-a (ds4 QA notes, mapped at 1), mac-b (the Mac mini, mapped at 2),
/// mac-c (mapped at 1), all running `profile`.
void three_macs(FakeFabric& fabric, const Profile& profile) {
  ASSERT_TRUE(fabric.add_host({"mac-a", example("apple-ds4qa-rdma_en1.devinfo.txt"), profile, {}}));
  ASSERT_TRUE(fabric.add_host({"mac-b", example("macmini-mapped-at-2.json"), profile, {}}));
  ASSERT_TRUE(fabric.add_host({"mac-c", mac_mapped_at_1("10.99.0.4"), profile, {}}));
}

TEST(FakeFabric, JacclMeshFailsEveryPairWithTheMacMiniWhoseMappedGidIsAtIndex2) {
  FakeFabric fabric;
  three_macs(fabric, profiles::jaccl());
  auto r = fabric.connect(Pairing::mesh);
  ASSERT_OK(r);
  const FabricReport& report = r.value();
  ASSERT_EQ(report.pairs.size(), 3u) << report.to_string();
  for (const PairResult& p : report.pairs) {
    EXPECT_EQ(p.connected(), !p.involves("mac-b")) << report.to_string();
  }
  // mac-b advertised its GID at index 2 and routed from 1: Apple's driver says errno 22.
  const PairResult* ab = report.pair("mac-a", "mac-b");
  ASSERT_NE(ab, nullptr);
  EXPECT_EQ(ab->b_advertised, g("::ffff:10.99.0.3"));
  EXPECT_EQ(ab->b_sgid_index, 1);
  EXPECT_EQ(ab->b_to_a.rtr_errno, 22);
  EXPECT_NE(ab->why().find("mac-b RTR from sgid_index 1 failed: EINVAL (22)"), std::string::npos)
      << ab->why();
  EXPECT_EQ(report.connected_count(), 1u);
  EXPECT_FALSE(report.all_connected());
  EXPECT_NE(report.to_string().find("mac-a <-> mac-c: connected"), std::string::npos) << report.to_string();
}

TEST(FakeFabric, JacclFixedAndTheRankedPolicyConnectTheWholeMesh) {
  for (const Profile& profile : {profiles::jaccl_fixed(), profiles::automatic()}) {
    SCOPED_TRACE(profile.spec());
    FakeFabric fabric;
    three_macs(fabric, profile);
    auto r = fabric.connect(Pairing::mesh);
    ASSERT_OK(r);
    EXPECT_TRUE(r.value().all_connected()) << r.value().to_string();
    EXPECT_EQ(r.value().pairs.size(), 3u);
    EXPECT_EQ(r.value().pair("mac-b", "mac-c")->a_sgid_index, 2);  // routed from where its GID is
  }
}

TEST(FakeFabric, RingConnectsNeighboursOnlyAndBreaksAtTheMacMini) {
  FakeFabric fabric;
  three_macs(fabric, profiles::jaccl());
  ASSERT_TRUE(fabric.add_host({"mac-d", mac_mapped_at_1("10.99.0.5"), profiles::jaccl(), {}}));
  auto r = fabric.connect(Pairing::ring);
  ASSERT_OK(r);
  const FabricReport& report = r.value();
  ASSERT_EQ(report.pairs.size(), 4u);  // a-b, b-c, c-d, d-a
  EXPECT_EQ(report.pair("mac-a", "mac-c"), nullptr);
  EXPECT_FALSE(report.pair("mac-a", "mac-b")->connected());
  EXPECT_FALSE(report.pair("mac-b", "mac-c")->connected());
  EXPECT_TRUE(report.pair("mac-c", "mac-d")->connected()) << report.to_string();
  EXPECT_TRUE(report.pair("mac-d", "mac-a")->connected()) << report.to_string();
}

TEST(FakeFabric, PreflightRefusesJacclsDisagreementBeforeTheDriverSeesIt) {
  FakeFabric fabric;
  three_macs(fabric, profiles::jaccl());
  FakeVerbs* macb = fabric.verbs("mac-b");
  ASSERT_NE(macb, nullptr);
  auto r = fabric.connect(Pairing::mesh, {.preflight = true});
  ASSERT_OK(r);
  EXPECT_EQ(r.value().connected_count(), 1u);
  const PairResult* bc = r.value().pair("mac-b", "mac-c");
  EXPECT_NE(bc->a_to_b.why.find("sgid_index does not hold the advertised GID"), std::string::npos)
      << bc->why();
  EXPECT_EQ(bc->a_to_b.rtr_errno, std::nullopt);  // no driver errno: the driver was not asked
  // mac-b's driver saw two INITs and no RTR at all (Apple ports reportedly wedge on failed RTRs).
  EXPECT_EQ(macb->calls(VerbsCall::modify_qp), 2u);
}

TEST(FakeFabric, LinuxJacclAdvertisesTheV1EntryAndRoutesFromTheLinkLocalOne) {
  // NCCL 769's layout on two hosts: JACCL picks index 2 (IPv4, RoCE v1) and routes from 1
  // (fe80, RoCE v2): the kernel refuses the family mismatch with EINVAL.
  const GidTable base = example("nccl-769.devinfo.txt");
  auto host = [&](std::string_view ipv4) {
    std::vector<GidEntry> e;
    for (GidEntry x : base) {
      if (x.gid.is_ipv4_mapped()) x.gid = g("::ffff:" + std::string(ipv4));
      e.push_back(x);
    }
    return VALUE_OR_FAIL(GidTable::make(base.port(), e, base.holes()));
  };
  for (const auto& [profile, connects] :
       {std::pair{profiles::jaccl(), false}, std::pair{profiles::automatic(), true}}) {
    SCOPED_TRACE(profile.spec());
    FakeFabric fabric;
    ASSERT_TRUE(fabric.add_host({"node-1", host("200.0.209.6"), profile, {}}));
    ASSERT_TRUE(fabric.add_host({"node-2", host("200.0.209.7"), profile, {}}));
    auto r = fabric.connect(Pairing::mesh);
    ASSERT_OK(r);
    ASSERT_EQ(r.value().pairs.size(), 1u);
    EXPECT_EQ(r.value().pairs[0].connected(), connects) << r.value().to_string();
    if (!connects) {
      // RtrBuilder refuses the fe80 source with an IPv4-mapped destination before the kernel
      // would (its EINVAL); the pair fails without a driver call.
      EXPECT_NE(r.value().pairs[0].why().find("families differ"), std::string::npos) << r.value().to_string();
      EXPECT_EQ(r.value().pairs[0].a_to_b.rtr_errno, std::nullopt);
    }
  }
}

TEST(FakeFabric, ATableChangeBetweenSelectionAndRtrDropsTrafficOrIsCaughtByPreflight) {
  for (bool preflight : {false, true}) {
    SCOPED_TRACE(preflight ? "preflight" : "no preflight");
    FakeFabric fabric;
    three_macs(fabric, profiles::automatic());
    // mac-c's address changes after it advertised ::ffff:10.99.0.4 (at its first create_qp).
    ASSERT_TRUE(fabric.verbs("mac-c")->mutate_at(
        VerbsCall::create_qp, 1, TableMutation::stale_entry("rdma_en1", 1, 1, g("::ffff:10.99.0.44"))));
    auto r = fabric.connect(Pairing::mesh, {.preflight = preflight});
    ASSERT_OK(r);
    EXPECT_TRUE(r.value().pair("mac-a", "mac-b")->connected());
    const PairResult* ac = r.value().pair("mac-a", "mac-c");
    EXPECT_FALSE(ac->connected());
    if (preflight) {
      EXPECT_NE(ac->b_to_a.why.find("GID at sgid_index changed"), std::string::npos) << ac->why();
    } else {
      EXPECT_NE(ac->b_to_a.why.find("sends from ::ffff:10.99.0.44"), std::string::npos) << ac->why();
      EXPECT_TRUE(ac->a_to_b.delivered) << ac->why();  // the other direction still arrives
    }
  }
}

TEST(FakeFabric, HostsThatSelectNothingFailTheirPairsWithTheReason) {
  FakeFabric fabric;
  ASSERT_TRUE(fabric.add_host({"mac-a", mac_mapped_at_1("10.99.0.2"), profiles::jaccl(), {}}));
  ASSERT_TRUE(fabric.add_host(
      {"mac-x", example("apple-mlx4191-rdma_en3-noipv4.devinfo.txt"), profiles::jaccl(), {}}));
  auto r = fabric.connect(Pairing::mesh);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r.value().pairs[0].connected());
  EXPECT_NE(r.value().pairs[0].why().find("mac-x (jaccl) selects nothing"), std::string::npos)
      << r.value().to_string();
  EXPECT_EQ(fabric.add_host({"mac-a", mac_mapped_at_1("10.99.0.9"), profiles::jaccl(), {}}).error(),
            errc::invalid_argument);
  FakeFabric lonely;
  ASSERT_TRUE(lonely.add_host({"solo", mac_mapped_at_1("10.99.0.2"), profiles::jaccl(), {}}));
  EXPECT_EQ(lonely.connect(Pairing::mesh).error(), errc::invalid_argument);
}

}  // namespace
}  // namespace gidpolicy::fakes
