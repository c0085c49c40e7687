// The link judgment (link.hpp): each side's RTR through the builder and its driver model, the
// delivery rule, and the order a direction names failures in; and the fake fabric, which runs
// the same steps through the fake verbs, ending each direction the same way.
#include <gidpolicy/fakes/fake_fabric.hpp>
#include <gidpolicy/link.hpp>
#include <gidpolicy/profiles.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

namespace gidpolicy {
namespace {

using test::gid;

/// A plan that advertises the entry at `advertise` and routes from `route` (JACCL's bug when
/// they differ), made by hand so the test depends on no spec.
Plan plan_of(const GidTable& t, std::uint32_t advertise, std::uint8_t route) {
  Plan p;
  p.selection.entry = *t.find(advertise);
  p.sgid_index = route;
  p.agreement = check_agreement(t, p.selection.entry.gid, route);
  return p;
}

/// Linux RoCE v2: fe80 at 0, two IPv4-mapped GIDs at 1 and 2, a global IPv6 at 3.
GidTable roce(const std::string& device, std::uint8_t host) {
  const std::string h = std::to_string(host);
  return VALUE_OR_FAIL(
      GidTable::make(test::port(device, LinkLayer::ethernet(), 16),
                     {GidEntry::valid(0, gid("fe80::" + h), GidType::roce_v2),
                      GidEntry::valid(1, gid("::ffff:10.0.0." + h), GidType::roce_v2),
                      GidEntry::valid(2, gid("::ffff:10.0.1." + h), GidType::roce_v2),
                      GidEntry::valid(3, gid("2001:db8::" + h), GidType::roce_v2), GidEntry::empty(4)}));
}

/// An mlx5 port as Linux fills it, v1 then v2 per address (NVIDIA/nccl#769's layout): fe80 v1
/// at 0 and v2 at 1, the host's IPv4 address as v1 at 2 and v2 at 3.
GidTable v1v2(std::uint8_t host) {
  const std::string h = std::to_string(host);
  return VALUE_OR_FAIL(GidTable::make(test::port("mlx5_0", LinkLayer::ethernet(), 16),
                                      {GidEntry::valid(0, gid("fe80::" + h), GidType::roce_v1),
                                       GidEntry::valid(1, gid("fe80::" + h), GidType::roce_v2),
                                       GidEntry::valid(2, gid("::ffff:10.0.0." + h), GidType::roce_v1),
                                       GidEntry::valid(3, gid("::ffff:10.0.0." + h), GidType::roce_v2)}));
}

/// An InfiniBand port: its one GID of type IB, a LID.
GidTable ib_port() {
  PortInfo p = test::port("mlx5_ib", LinkLayer::infiniband(), 16);
  p.lid = 7;
  return VALUE_OR_FAIL(GidTable::make(p, {GidEntry::valid(0, gid("fe80::7"), GidType::ib)}));
}

TEST(Link, BothSidesAgreeingConnect) {
  const GidTable a = roce("mlx5_0", 1), b = roce("mlx5_0", 2);
  const Plan pa = plan_of(a, 1, 1), pb = plan_of(b, 2, 2);
  const DriverModel linux_model = DriverModel::linux_kernel();
  const LinkJudgment j = judge_link({&a, &pa, &linux_model}, {&b, &pb, &linux_model});
  EXPECT_TRUE(j.connected()) << j.a_to_b.text << " / " << j.b_to_a.text;
  EXPECT_TRUE(j.a_to_b.text.empty());
}

TEST(Link, EachSidesRtrIsItsOwnAndTheReceiversFailureEndsTheOtherDirection) {
  // JACCL's MLX PR 3389: the Mac mini advertises its mapped GID at 2 and routes from the
  // literal 1, which is empty; Apple's driver refuses that RTR with errno 22.
  const GidTable a = test::apple_ds4qa(), b = test::macmini();
  const Plan pa = plan_of(a, 1, 1), pb = plan_of(b, 2, 1);
  const DriverModel apple = DriverModel::apple_thunderbolt();
  const LinkJudgment j = judge_link({&a, &pa, &apple}, {&b, &pb, &apple});
  EXPECT_FALSE(j.connected());
  // b -> a: the Mac mini's own RTR.
  EXPECT_EQ(j.b_to_a.outcome, LinkOutcome::rtr_error);
  EXPECT_TRUE(j.b_to_a.sender_at_fault);
  EXPECT_EQ(j.b_to_a.err, 22);
  EXPECT_EQ(j.b_to_a.text.rfind("RTR from sgid_index 1 failed: EINVAL (22): ", 0), 0u) << j.b_to_a.text;
  // a -> b: a's RTR passed, but the receiver never reached RTR.
  EXPECT_EQ(j.a_to_b.outcome, LinkOutcome::rtr_error);
  EXPECT_FALSE(j.a_to_b.sender_at_fault);
  EXPECT_EQ(j.a_to_b.text, j.b_to_a.text);
  // Each side is judged by its own model: on Linux the same empty slot is ENODATA.
  const DriverModel linux_model = DriverModel::linux_kernel();
  const LinkJudgment mixed = judge_link({&a, &pa, &apple}, {&b, &pb, &linux_model});
  EXPECT_EQ(mixed.b_to_a.err, 61);
}

TEST(Link, DeliveryRuleMismatchIsDropped) {
  // Advertise the GID at 2, route from 1: both GIDs are usable and of one family, so the builder
  // and the driver accept the RTR; the receiver was told the GID at 2 and drops what 1 sends.
  const GidTable a = roce("mlx5_0", 1), b = roce("mlx5_0", 2);
  const Plan pa = plan_of(a, 2, 1), pb = plan_of(b, 2, 2);
  const DriverModel linux_model = DriverModel::linux_kernel();
  const LinkJudgment j = judge_link({&a, &pa, &linux_model}, {&b, &pb, &linux_model});
  EXPECT_EQ(j.a_to_b.outcome, LinkOutcome::dropped);
  EXPECT_TRUE(j.a_to_b.sender_at_fault);
  EXPECT_EQ(j.a_to_b.text,
            "sends from ::ffff:10.0.0.1 (sgid_index 1) but advertises ::ffff:10.0.1.1: dropped");
  EXPECT_TRUE(j.b_to_a.ok()) << j.b_to_a.text;
}

TEST(Link, DeliveryRuleOnTheSendersTableAsItIs) {
  const GidTable a = roce("mlx5_0", 1);
  EXPECT_FALSE(delivery_failure(a, 1, gid("::ffff:10.0.0.1")).has_value());
  EXPECT_EQ(delivery_failure(a, 4, gid("::ffff:10.0.0.1")),
            "sends from sgid_index 4, which holds no GID, but advertises ::ffff:10.0.0.1: dropped");
  EXPECT_EQ(delivery_failure(a, 9, gid("::ffff:10.0.0.1")),
            "sends from sgid_index 9, which holds no GID, but advertises ::ffff:10.0.0.1: dropped");
  EXPECT_EQ(delivery_failure(a, 2, gid("::ffff:10.0.0.1")),
            "sends from ::ffff:10.0.1.1 (sgid_index 2) but advertises ::ffff:10.0.0.1: dropped");
}

TEST(Link, LinkLocalSourceTimesOutOnItsSenderOnly) {
  // Route from the fe80 towards a global IPv6 peer: the builder and Linux accept the RTR, and
  // the driver model says the traffic times out.
  const GidTable a = roce("mlx5_0", 1), b = roce("mlx5_0", 2);
  const Plan pa = plan_of(a, 0, 0), pb = plan_of(b, 3, 3);
  const DriverModel linux_model = DriverModel::linux_kernel();
  const LinkJudgment j = judge_link({&a, &pa, &linux_model}, {&b, &pb, &linux_model});
  EXPECT_EQ(j.a_to_b.outcome, LinkOutcome::times_out);
  EXPECT_EQ(j.a_to_b.err, 110);
  EXPECT_EQ(j.a_to_b.text.rfind("traffic times out: ", 0), 0u) << j.a_to_b.text;
  // b routes from its global GID towards a's fe80: not a link-local source, delivered.
  EXPECT_TRUE(j.b_to_a.ok()) << j.b_to_a.text;
}

// RoCE v1 (Ethertype 0x8915) on one side, v2 (UDP 4791) on the other: modify_qp is not told the
// peer's type, so both RTRs pass, and each port answers only its own framing: both directions
// time out, each on its sender, naming both types.
TEST(Link, RoceV1AgainstV2TimesOutBothWays) {
  const GidTable a = v1v2(1), b = v1v2(2);
  const Plan pa = plan_of(a, 2, 2), pb = plan_of(b, 3, 3);
  const DriverModel linux_model = DriverModel::linux_kernel();
  const LinkJudgment j = judge_link({&a, &pa, &linux_model}, {&b, &pb, &linux_model});
  EXPECT_FALSE(j.connected());
  EXPECT_EQ(j.a_to_b.outcome, LinkOutcome::times_out);
  EXPECT_TRUE(j.a_to_b.sender_at_fault);
  EXPECT_EQ(j.a_to_b.err, 0);  // no errno: modify_qp succeeded, the completion is RETRY_EXC_ERR
  EXPECT_EQ(j.a_to_b.text,
            "sends RoCE v1 frames (sgid_index 2); the peer's port routes RoCE v2: nothing is delivered, "
            "the sender's retries run out");
  EXPECT_EQ(j.b_to_a.outcome, LinkOutcome::times_out);
  EXPECT_EQ(j.b_to_a.text,
            "sends RoCE v2 frames (sgid_index 3); the peer's port routes RoCE v1: nothing is delivered, "
            "the sender's retries run out");
  // The same version on both sides connects, v1 or v2, IPv4-mapped or link-local.
  for (const auto& [ia, ib] : {std::pair{2u, 2u}, std::pair{3u, 3u}, std::pair{0u, 0u}, std::pair{1u, 1u}}) {
    const Plan qa = plan_of(a, ia, static_cast<std::uint8_t>(ia));
    const Plan qb = plan_of(b, ib, static_cast<std::uint8_t>(ib));
    const LinkJudgment same = judge_link({&a, &qa, &linux_model}, {&b, &qb, &linux_model});
    EXPECT_TRUE(same.connected()) << ia << ": " << same.a_to_b.text << " / " << same.b_to_a.text;
  }
}

TEST(Link, DeliveryRuleComesBeforeFraming) {
  // a advertises its v2 entry and routes from the v1 one: the receiver drops a packet from
  // another GID whatever its framing, so the direction is dropped, not timed out.
  const GidTable b = v1v2(2);
  const GidTable a2 =
      VALUE_OR_FAIL(GidTable::make(test::port("mlx5_0", LinkLayer::ethernet(), 16),
                                   {GidEntry::valid(2, gid("::ffff:10.0.0.1"), GidType::roce_v1),
                                    GidEntry::valid(3, gid("::ffff:10.0.0.9"), GidType::roce_v2)}));
  const Plan pa = plan_of(a2, 3, 2), pb = plan_of(b, 3, 3);
  const DriverModel linux_model = DriverModel::linux_kernel();
  const LinkJudgment j = judge_link({&a2, &pa, &linux_model}, {&b, &pb, &linux_model});
  EXPECT_EQ(j.a_to_b.outcome, LinkOutcome::dropped) << j.a_to_b.text;
  EXPECT_EQ(j.b_to_a.outcome, LinkOutcome::times_out) << j.b_to_a.text;
}

TEST(Link, FramingRuleOnTypes) {
  EXPECT_EQ(wire_framing(GidType::roce_v1), 1);
  EXPECT_EQ(wire_framing(GidType::ib), 1);  // one sysfs type, "IB/RoCE v1"
  EXPECT_EQ(wire_framing(GidType::roce_v2), 2);
  EXPECT_EQ(wire_framing(GidType::unknown), 0);
  EXPECT_FALSE(framing_failure(GidType::roce_v1, 0, GidType::roce_v1).has_value());
  EXPECT_FALSE(framing_failure(GidType::ib, 0, GidType::roce_v1).has_value());
  EXPECT_FALSE(framing_failure(GidType::unknown, 0, GidType::roce_v2).has_value());
  EXPECT_FALSE(framing_failure(GidType::roce_v2, 0, GidType::unknown).has_value());
  EXPECT_EQ(framing_failure(GidType::ib, 0, GidType::roce_v2),
            "sends IB/RoCE v1 frames (sgid_index 0); the peer's port routes RoCE v2: nothing is delivered, "
            "the sender's retries run out");
  // On tables: the entries the QPs route from; an empty slot is the other rules' business.
  const GidTable a = v1v2(1), b = v1v2(2);
  EXPECT_TRUE(framing_failure(a, 2, b, 3).has_value());
  EXPECT_FALSE(framing_failure(a, 2, b, 2).has_value());
  EXPECT_FALSE(framing_failure(a, 9, b, 3).has_value());
}

TEST(Link, SideRtrJudgesWhatModifyQpSees) {
  // The peer says RoCE v1, this side routes from a v2 entry: the builder refuses (it was told),
  // and judge_side_rtr reports the refusal with no verdict on attributes never built.
  const GidTable a = roce("mlx5_0", 1), b = roce("mlx5_0", 2);
  const Plan pa = plan_of(a, 1, 1), pb = plan_of(b, 1, 1);
  PeerInfo peer = told_by(b, pb, 5, 7);
  EXPECT_EQ(peer.gid, gid("::ffff:10.0.0.2"));
  EXPECT_EQ(peer.qpn, 5u);
  EXPECT_EQ(peer.mtu, Mtu::mtu_1024);
  peer.gid_type = GidType::roce_v1;
  const SideRtr refused = judge_side_rtr(a, pa, peer, DriverModel::linux_kernel());
  EXPECT_EQ(refused.outcome, LinkOutcome::rtr_error);
  ASSERT_TRUE(refused.refused.has_value());
  EXPECT_EQ(*refused.refused, errc::roce_version_mismatch);
  EXPECT_FALSE(refused.attributes.has_value());
  EXPECT_EQ(refused.text.rfind("cannot build its RTR: ", 0), 0u) << refused.text;
  peer.gid_type.reset();
  const SideRtr ok = judge_side_rtr(a, pa, peer, DriverModel::linux_kernel());
  EXPECT_EQ(ok.outcome, LinkOutcome::ok);
  ASSERT_TRUE(ok.attributes.has_value());
  EXPECT_EQ(ok.attributes->sgid_index(), 1);
  EXPECT_TRUE(ok.text.empty());
}

TEST(Link, TheFakeFabricEndsEachDirectionAsTheJudgmentDoes) {
  struct Case {
    const char* name;
    GidTable a, b;
    std::uint32_t adv_a, route_a, adv_b, route_b;
  };
  const std::vector<Case> cases{
      {"agree", roce("mlx5_0", 1), roce("mlx5_0", 2), 1, 1, 2, 2},
      {"dropped", roce("mlx5_0", 1), roce("mlx5_0", 2), 2, 1, 2, 2},
      {"times_out", roce("mlx5_0", 1), roce("mlx5_0", 2), 0, 0, 3, 3},
      {"pr3389", test::apple_ds4qa(), test::macmini(), 1, 1, 2, 1},
      {"v1_v2", v1v2(1), v1v2(2), 2, 2, 3, 3},
      {"v1_v1", v1v2(1), v1v2(2), 2, 2, 2, 2},
      {"v2_v2", v1v2(1), v1v2(2), 3, 3, 3, 3},
      {"ib_roce_v2", ib_port(), v1v2(2), 0, 0, 1, 1},
      {"ib_roce_v1", ib_port(), v1v2(2), 0, 0, 0, 0},
  };
  for (const Case& c : cases) {
    const Plan pa = plan_of(c.a, c.adv_a, static_cast<std::uint8_t>(c.route_a));
    const Plan pb = plan_of(c.b, c.adv_b, static_cast<std::uint8_t>(c.route_b));
    const DriverModel ma = DriverModel::for_table(c.a), mb = DriverModel::for_table(c.b);
    const LinkJudgment j = judge_link({&c.a, &pa, &ma}, {&c.b, &pb, &mb});

    // The same choice as a profile the fabric runs: the policy picks the entry, the literal
    // source index routes.
    auto profile_for = [](std::uint32_t adv, std::uint32_t route) {
      return VALUE_OR_FAIL(
          parse_profile("ds4:index=" + std::to_string(adv) + "@sgid=" + std::to_string(route)));
    };
    fakes::FakeFabric fabric;
    ASSERT_OK(fabric.add_host({"a", c.a, profile_for(c.adv_a, c.route_a), std::nullopt}));
    ASSERT_OK(fabric.add_host({"b", c.b, profile_for(c.adv_b, c.route_b), std::nullopt}));
    auto report = fabric.connect(fleet::Pairing::mesh);
    ASSERT_OK(report);
    const fakes::PairResult& p = report.value().pairs.at(0);
    EXPECT_EQ(p.a_to_b.outcome, j.a_to_b.outcome) << c.name << ": " << p.a_to_b.why << " / " << j.a_to_b.text;
    EXPECT_EQ(p.b_to_a.outcome, j.b_to_a.outcome) << c.name << ": " << p.b_to_a.why << " / " << j.b_to_a.text;
    EXPECT_EQ(p.a_to_b.delivered, j.a_to_b.ok()) << c.name;
    EXPECT_EQ(p.b_to_a.delivered, j.b_to_a.ok()) << c.name;
    // A delivery or timeout text is the judgment's, after the sender's name.
    for (const auto& [fab, judged, sender] :
         {std::tuple{&p.a_to_b, &j.a_to_b, "a"}, std::tuple{&p.b_to_a, &j.b_to_a, "b"}}) {
      if (judged->outcome == LinkOutcome::dropped ||
          (judged->outcome == LinkOutcome::times_out && judged->err == 0)) {  // delivery, framing
        EXPECT_EQ(fab->why, std::string(sender) + " " + judged->text) << c.name;
      }
    }
  }
}

TEST(Link, TheFakeFabricRefusesPairingsOfSeveralPorts) {
  fakes::FakeFabric fabric;
  ASSERT_OK(fabric.add_host({"a", roce("mlx5_0", 1), profiles::automatic(), std::nullopt}));
  ASSERT_OK(fabric.add_host({"b", roce("mlx5_0", 2), profiles::automatic(), std::nullopt}));
  for (const fleet::Pairing p : {fleet::Pairing::rail, fleet::Pairing::jaccl}) {
    auto r = fabric.connect(p);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::invalid_argument);
    EXPECT_NE(r.error().detail.find("mesh or ring"), std::string::npos) << r.error().detail;
  }
}

TEST(Link, OutcomeNamesAreStable) {
  EXPECT_EQ(to_string(LinkOutcome::ok), "ok");
  EXPECT_EQ(to_string(LinkOutcome::dropped), "dropped");
  EXPECT_EQ(to_string(LinkOutcome::times_out), "times_out");
  EXPECT_EQ(to_string(LinkOutcome::rtr_error), "rtr_error");
  EXPECT_EQ(to_string(LinkOutcome::qp_refused), "qp_refused");
  EXPECT_EQ(to_string(LinkOutcome::unusable), "unusable");
}

}  // namespace
}  // namespace gidpolicy
