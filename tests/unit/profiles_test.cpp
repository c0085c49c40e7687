// Profiles and agreement: policy + source-index rule, and whether the routed entry is the
// advertised one.
#include <gidpolicy/agreement.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/profiles.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

namespace gidpolicy {
namespace {

using test::gid;

TEST(Profiles, JacclOnNccl769AdvertisesV1Index2AndRoutesFrom1) {
  ASSERT_OK_AND_ASSIGN(auto plan, profiles::jaccl().plan(test::nccl_769()));
  EXPECT_EQ(plan.selection.entry.index, 2u);
  EXPECT_EQ(plan.selection.entry.type, GidType::roce_v1);
  EXPECT_EQ(plan.sgid_index, 1u);
  EXPECT_FALSE(plan.agrees());
  EXPECT_EQ(
      plan.agreement.explanation,
      "sgid_index 1 holds fe80::ac0:ebff:feda:1cfb (roce_v2), not the advertised GID; the advertised GID "
      "::ffff:200.0.209.6 is at indices 2 (roce_v1) and 3 (roce_v2)");
  ASSERT_OK_AND_ASSIGN(auto fixed, profiles::jaccl_fixed().plan(test::nccl_769()));
  EXPECT_EQ(fixed.sgid_index, 2u);
  EXPECT_TRUE(fixed.agrees());
  ASSERT_OK_AND_ASSIGN(auto autop, profiles::automatic().plan(test::nccl_769()));
  EXPECT_EQ(autop.sgid_index, 3u);
  EXPECT_TRUE(autop.agrees());
}

TEST(Profiles, JacclOnTheMacMiniDisagreesWithTheEmptyIndex1) {
  ASSERT_OK_AND_ASSIGN(auto plan, profiles::jaccl().plan(test::macmini()));
  EXPECT_EQ(plan.selection.entry.index, 2u);
  EXPECT_EQ(plan.sgid_index, 1u);
  EXPECT_FALSE(plan.agrees());
  EXPECT_EQ(plan.agreement.explanation,
            "sgid_index 1 is empty; the advertised GID ::ffff:10.99.0.3 is at index 2");
  EXPECT_EQ(plan.agreement.to_result().error(), errc::disagreement);
  EXPECT_TRUE(VALUE_OR_FAIL(profiles::jaccl_fixed().plan(test::macmini())).agrees());
}

TEST(Profiles, JacclAgreesWhereTheMappedGidIsAtIndex1) {
  ASSERT_OK_AND_ASSIGN(auto plan, profiles::jaccl().plan(test::apple_ds4qa()));
  EXPECT_EQ(plan.sgid_index, 1u);
  EXPECT_TRUE(plan.agrees());
  EXPECT_TRUE(plan.agreement.to_result());
}

TEST(Profiles, JacclFailsWithoutIpv4AndTheHintSurvives) {
  auto r = profiles::jaccl().plan(test::apple_noipv4());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::no_ipv4_mapped_gid);
  EXPECT_NE(r.error().detail.find("assign an IPv4 address"), std::string::npos);
}

TEST(Profiles, EverySelectedSourceProfileAgreesWhereItSucceedsOnUsableEntries) {
  for (const auto& [name, table] : test::all_example_tables()) {
    for (const Profile& p : profiles::all()) {
      if (p.source.is_literal()) continue;
      auto plan = p.plan(table);
      if (!plan) continue;
      if (!plan.value().selection.entry.usable()) {
        // jaccl-legacy / ds4 advertising an empty slot: reported, never silently "agreeing".
        EXPECT_FALSE(plan.value().agrees()) << name << " " << p.spec();
        continue;
      }
      EXPECT_TRUE(plan.value().agrees())
          << name << " " << p.spec() << ": " << plan.value().agreement.explanation;
      EXPECT_EQ(plan.value().sgid_index, plan.value().selection.entry.index);
    }
  }
}

TEST(Profiles, AllInCheckOrder) {
  std::vector<std::string> names;
  for (const Profile& p : profiles::all()) names.push_back(p.spec());
  EXPECT_EQ(names,
            (std::vector<std::string>{"jaccl", "jaccl-legacy", "jaccl-fixed", "ds4", "ds4-linux", "auto"}));
  EXPECT_EQ(profiles::ds4(2).spec(), "ds4:index=2");
  EXPECT_EQ(profiles::ds4_linux(gid("::ffff:127.0.0.1")).spec(), "ds4-linux:local=127.0.0.1");
  EXPECT_EQ(profiles::automatic({.family = FamilyFilter::ipv4}).spec(), "auto:family=ipv4");
}

TEST(Profiles, TracePassesThrough) {
  ASSERT_OK_AND_ASSIGN(auto plan, profiles::jaccl().plan(test::nccl_769(), {.trace = true}));
  EXPECT_EQ(plan.selection.trace.attempts.size(), 1u);
}

TEST(CheckAgreement, Cases) {
  const GidTable t = test::nccl_769();
  const Gid v4 = gid("::ffff:200.0.209.6");
  auto ok = check_agreement(t, v4, 3);
  EXPECT_TRUE(ok.agrees);
  EXPECT_EQ(ok.explanation, "sgid_index 3 holds the advertised GID ::ffff:200.0.209.6 (roce_v2)");
  ASSERT_TRUE(ok.at_index);
  EXPECT_EQ(ok.at_index->index, 3u);
  EXPECT_EQ(ok.advertised_at, 2u);  // the lowest index holding it

  auto other = check_agreement(t, gid("::ffff:1.2.3.4"), 3);
  EXPECT_FALSE(other.agrees);
  EXPECT_EQ(other.explanation,
            "sgid_index 3 holds ::ffff:200.0.209.6 (roce_v2), not the advertised GID; no entry holds the "
            "advertised "
            "GID ::ffff:1.2.3.4");
  EXPECT_FALSE(other.advertised_at);

  EXPECT_EQ(check_agreement(t, v4, 300).explanation.rfind("sgid_index 300 does not fit the uint8_t", 0), 0u);
  EXPECT_EQ(check_agreement(t, v4, 256).explanation.rfind("sgid_index 256 does not fit", 0), 0u);
  auto small = test::macmini();
  EXPECT_EQ(check_agreement(small, gid("::ffff:10.99.0.3"), 20).explanation,
            "sgid_index 20 is not below gid_tbl_len 16; the advertised GID ::ffff:10.99.0.3 is at index 2");
  EXPECT_EQ(check_agreement(small, gid("::ffff:10.99.0.3"), 5).explanation,
            "sgid_index 5 is empty; the advertised GID ::ffff:10.99.0.3 is at index 2");
  EXPECT_EQ(check_agreement(t, v4, 7).explanation.rfind("sgid_index 7 was not printed by the source", 0), 0u);
  // An empty slot never agrees, not even with an advertised zero GID.
  auto zero = check_agreement(small, Gid{}, 1);
  EXPECT_FALSE(zero.agrees);
  EXPECT_NE(zero.explanation.find("the zero GID"), std::string::npos) << zero.explanation;
  auto u = VALUE_OR_FAIL(GidTable::make(test::port("x", LinkLayer::ethernet(), 4),
                                        {GidEntry::unreadable(1, std::make_error_code(std::errc::io_error)),
                                         GidEntry::valid(2, Gid{}, GidType::roce_v2)}));
  EXPECT_EQ(check_agreement(u, v4, 1).explanation.rfind("sgid_index 1 could not be read", 0), 0u);
  EXPECT_EQ(check_agreement(u, Gid{}, 2).explanation.rfind("sgid_index 2 holds the zero GID", 0), 0u);
  EXPECT_FALSE(check_agreement(u, Gid{}, 2).agrees);
}

TEST(SourceIndex, Resolve) {
  Selection s{GidEntry::valid(7, gid("::ffff:10.0.0.1")), {}};
  EXPECT_EQ(SourceIndex::selected().resolve(s), 7);
  EXPECT_EQ(SourceIndex::literal(1).resolve(s), 1);
  EXPECT_EQ(SourceIndex::selected().to_string(), "selected");
  EXPECT_EQ(SourceIndex::literal(1).to_string(), "literal(1)");
  static_assert(SourceIndex::literal(1).is_literal() && !SourceIndex::selected().is_literal());
}

}  // namespace
}  // namespace gidpolicy
