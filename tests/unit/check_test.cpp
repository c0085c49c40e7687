// check.hpp: one row of `gidpolicy check`, a profile's plan and its RTR towards a like peer.
#include <gidpolicy/check.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

namespace gidpolicy {
namespace {

TEST(Check, JacclOnTheMacMiniPredictsEinvalFromItsLiteralIndex1) {
  const GidTable t = test::macmini();
  ASSERT_OK_AND_ASSIGN(const Profile jaccl, parse_profile("jaccl"));
  const CheckRow row = check_profile(t, jaccl, DriverModel::for_table(t));
  EXPECT_EQ(row.profile, "jaccl");
  EXPECT_FALSE(row.error);
  ASSERT_TRUE(row.plan && row.prediction);
  EXPECT_FALSE(row.agrees());
  EXPECT_EQ(row.plan->sgid_index, 1u);
  EXPECT_EQ(row.prediction->to_string(Platform::darwin), "EINVAL (22): sgid_index 1 is empty");
}

TEST(Check, TheLikePeerAdvertisesWhatThisSideAdvertises) {
  const GidTable t = test::nccl_769();
  ASSERT_OK_AND_ASSIGN(const Plan plan, profiles::automatic().plan(t));
  const PeerInfo peer = like_peer(t, plan);
  EXPECT_EQ(peer.gid, plan.selection.entry.gid);
  EXPECT_EQ(peer.mtu, t.port().active_mtu);
  ASSERT_TRUE(peer.gid_type);
  EXPECT_EQ(*peer.gid_type, plan.selection.entry.type);
  EXPECT_EQ(peer.qpn, 0x11u);
  EXPECT_EQ(peer.psn, 7u);
  const CheckRow row = check_profile(t, profiles::automatic(), DriverModel::for_table(t));
  ASSERT_TRUE(row.prediction);
  EXPECT_EQ(row.prediction->verdict.outcome, RtrOutcome::ok);
  EXPECT_TRUE(row.agrees());
}

TEST(Check, AFailedSelectionIsARowWithItsErrorAndNoPrediction) {
  const GidTable t = test::apple_noipv4();
  ASSERT_OK_AND_ASSIGN(const Profile fixed, parse_profile("jaccl-fixed"));
  const CheckRow row = check_profile(t, fixed, DriverModel::for_table(t));
  ASSERT_TRUE(row.error);
  EXPECT_EQ(*row.error, errc::no_ipv4_mapped_gid);
  EXPECT_FALSE(row.plan);
  EXPECT_FALSE(row.prediction);
  EXPECT_FALSE(row.agrees());
}

}  // namespace
}  // namespace gidpolicy
