// change.hpp: classify_change (what a table change did to the advertised entry) and replan
// (what the profile chooses after it), on value tables without a device.
#include <gidpolicy/change.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/profiles.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "support/assert_ok.hpp"

// A named namespace: the unit tests are a unity build, where every file's anonymous namespace is
// one namespace.
namespace gidpolicy::change_test {

Gid gid(const char* s) { return VALUE_OR_FAIL(Gid::parse(s)); }

PortInfo roce_port(std::uint32_t len = 16) {
  return PortInfo{"mlx5_0", 1, PortState::active, LinkLayer::ethernet(), len, Mtu::mtu_1024, 0};
}

/// mlx5's layout: link-local v1/v2 at 0/1, 10.0.0.1 v1/v2 at 2/3.
GidTable mlx5_table() {
  return VALUE_OR_FAIL(
      GidTable::make(roce_port(), {GidEntry::valid(0, gid("fe80::1"), GidType::roce_v1, "eth0"),
                                   GidEntry::valid(1, gid("fe80::1"), GidType::roce_v2, "eth0"),
                                   GidEntry::valid(2, gid("::ffff:10.0.0.1"), GidType::roce_v1, "eth0"),
                                   GidEntry::valid(3, gid("::ffff:10.0.0.1"), GidType::roce_v2, "eth0")}));
}

GidTable with(const GidTable& t, std::vector<GidEntry> entries, PortState state = PortState::active) {
  PortInfo p = t.port();
  p.state = state;
  return VALUE_OR_FAIL(GidTable::make(p, std::move(entries)));
}

// ---- classify_change ---------------------------------------------------------------------

TEST(ClassifyChange, MovedDisappearedReappearedTwinAndUntracked) {
  const GidTable before = mlx5_table();
  const GidEntry adv = *before.find(3);
  const GidEntry ll0 = *before.find(0), ll1 = *before.find(1);
  const Gid a = gid("::ffff:10.0.0.1");

  const GidTable moved = with(before, {ll0, ll1, GidEntry::valid(2, a, GidType::roce_v1, "eth0"),
                                       GidEntry::valid(5, a, GidType::roce_v2, "eth0")});
  auto c = classify_change(before, moved, adv, "gid_change");
  EXPECT_EQ(c.kind, ChangeKind::moved);
  EXPECT_EQ(c.old_index, 3u);
  EXPECT_EQ(c.new_index, 5u);
  EXPECT_EQ(c.to_string(), "mlx5_0 port 1: ::ffff:10.0.0.1 (roce_v2) moved from index 3 to 5 [gid_change]");

  const GidTable gone = with(before, {ll0, ll1});
  c = classify_change(before, gone, adv);
  EXPECT_EQ(c.kind, ChangeKind::disappeared);
  EXPECT_EQ(c.new_index, std::nullopt);

  c = classify_change(gone, moved, adv);
  EXPECT_EQ(c.kind, ChangeKind::reappeared);
  EXPECT_EQ(c.new_index, 5u);

  // The v1 twin moves, the v2 entry stays: nothing to tell the peer, but reported.
  const GidTable twin = with(before, {ll0, ll1, GidEntry::valid(3, a, GidType::roce_v2, "eth0"),
                                      GidEntry::valid(4, a, GidType::roce_v1, "eth0")});
  c = classify_change(before, twin, adv);
  EXPECT_EQ(c.kind, ChangeKind::twin_changed);
  EXPECT_EQ(c.twin_old_index, 2u);
  EXPECT_EQ(c.twin_new_index, 4u);

  // The same bytes as the other RoCE version at the old slot are not the advertised entry.
  const GidTable swapped = with(before, {ll0, ll1, GidEntry::valid(3, a, GidType::roce_v1, "eth0")});
  EXPECT_EQ(classify_change(before, swapped, adv).kind, ChangeKind::disappeared);

  EXPECT_EQ(classify_change(before, gone, std::nullopt).kind, ChangeKind::untracked);
  EXPECT_EQ(classify_change(before, before, adv).kind, ChangeKind::unchanged);

  const GidTable down = with(before, {ll0, ll1, *before.find(2), adv}, PortState::down);
  c = classify_change(before, down, adv, "port_error");
  EXPECT_EQ(c.kind, ChangeKind::unchanged);
  EXPECT_EQ(c.port_state, PortState::down);
  EXPECT_THAT(c.to_string(), testing::HasSubstr("port active -> down [port_error]"));
}

// ---- replan ------------------------------------------------------------------------------

TEST(Replan, FollowsTheSameGidWhenThePolicyAcceptsIt) {
  ASSERT_OK_AND_ASSIGN(const Profile profile, parse_profile("auto:roce=v2"));
  const GidTable before = mlx5_table();
  ASSERT_OK_AND_ASSIGN(const Plan plan, profile.plan(before));
  ASSERT_EQ(plan.sgid_index, 3);
  const GidTable after = with(before, {*before.find(0), *before.find(1),
                                       GidEntry::valid(6, gid("::ffff:10.0.0.1"), GidType::roce_v2, "eth0")});
  const auto r = replan(profile, plan, classify_change(before, after, plan.selection.entry));
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r.value().followed);
  EXPECT_FALSE(r.value().tell_peer);
  EXPECT_TRUE(r.value().changed);
  EXPECT_EQ(r.value().plan.sgid_index, 6);
  EXPECT_TRUE(r.value().plan.agrees());
}

TEST(Replan, ReselectsWhenThePolicyNamesAnIndexAndTellsThePeer) {
  // validated:index=3 accepts only index 3: the GID moved to 6, index 3 now holds another one.
  ASSERT_OK_AND_ASSIGN(const Profile profile, parse_profile("validated:index=3"));
  const GidTable before = mlx5_table();
  ASSERT_OK_AND_ASSIGN(const Plan plan, profile.plan(before));
  const GidTable after = with(
      before, {*before.find(0), *before.find(1), GidEntry::valid(3, gid("::ffff:10.0.0.7"), GidType::roce_v2),
               GidEntry::valid(6, gid("::ffff:10.0.0.1"), GidType::roce_v2)});
  const auto r = replan(profile, plan, classify_change(before, after, plan.selection.entry));
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r.value().followed);
  EXPECT_TRUE(r.value().tell_peer);
  EXPECT_EQ(r.value().plan.selection.entry.gid, gid("::ffff:10.0.0.7"));
}

TEST(Replan, RefusesADownPortAndFailsWithTheTraceWhenNothingQualifies) {
  const Profile profile = profiles::automatic();
  const GidTable before = mlx5_table();
  ASSERT_OK_AND_ASSIGN(const Plan plan, profile.plan(before));
  const GidTable down = with(before, {*before.find(0), *before.find(1)}, PortState::down);
  auto r = replan(profile, plan, classify_change(before, down, plan.selection.entry));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), errc::port_not_active);
  const GidTable gone = with(before, {*before.find(0), *before.find(1)});
  r = replan(profile, plan, classify_change(before, gone, plan.selection.entry));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), errc::no_candidate);
  EXPECT_TRUE(r.error().trace != nullptr);
}

TEST(Replan, LiteralSourceIndexIsSelectedAgainNotFollowed) {
  const Profile profile = profiles::jaccl();  // routes from the literal 1
  const GidTable before = VALUE_OR_FAIL(GidTable::make(
      PortInfo{"rdma_en2", 1, PortState::active, LinkLayer::thunderbolt(), 16, Mtu::mtu_1024, 0},
      {GidEntry::valid(0, gid("fe80::5")), GidEntry::valid(1, gid("::ffff:169.254.1.2"))}));
  ASSERT_OK_AND_ASSIGN(const Plan plan, profile.plan(before));
  const GidTable after = with(before, {*before.find(0), GidEntry::valid(2, gid("::ffff:169.254.1.2"))});
  const auto r = replan(profile, plan, classify_change(before, after, plan.selection.entry));
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r.value().followed);
  EXPECT_EQ(r.value().plan.sgid_index, 1);  // still JACCL's literal 1: the reproduced bug
  EXPECT_FALSE(r.value().plan.agrees());
}

}  // namespace gidpolicy::change_test
