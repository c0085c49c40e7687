// JacclFirstMapped and JacclLegacyIndex1: JACCL's two shipped selections, on every example table.
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

namespace gidpolicy {
namespace {

using test::gid;

static_assert(SelectionPolicy<JacclFirstMapped>);
static_assert(SelectionPolicy<JacclLegacyIndex1>);

std::uint32_t jaccl_picked(const result<Selection>& r) { return VALUE_OR_FAIL(r).entry.index; }

TEST(JacclFirstMapped, PicksTheFirstMappedEntryOfEveryExampleTable) {
  EXPECT_EQ(jaccl_picked(JacclFirstMapped{}.select(test::nccl_769())), 2u);  // the RoCE v1 twin (NCCL 769)
  EXPECT_EQ(jaccl_picked(JacclFirstMapped{}.select(test::apple_ds4qa())), 1u);
  EXPECT_EQ(jaccl_picked(JacclFirstMapped{}.select(test::macmini())), 2u);  // MLX PR 3389
  EXPECT_EQ(jaccl_picked(JacclFirstMapped{}.select(test::ds4_linux_unit())),
            0u);  // index 0 allowed, v1 allowed
  EXPECT_EQ(jaccl_picked(JacclFirstMapped{}.select(test::nccl_1573_pod(0))), 6u);
  EXPECT_EQ(jaccl_picked(JacclFirstMapped{}.select(test::nccl_1573_pod(1))), 6u);
  EXPECT_EQ(jaccl_picked(JacclFirstMapped{}.select(test::ibm_cx6())), 4u);
  for (int d = 0; d < 3; ++d)
    EXPECT_EQ(JacclFirstMapped{}.select(test::mooncake_ipv6(d)).error(), errc::no_ipv4_mapped_gid) << d;
}

TEST(JacclFirstMapped, NoIpv4OnThunderboltIsJacclsErrorWithTheHint) {
  auto r = JacclFirstMapped{}.select(test::apple_noipv4());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::no_ipv4_mapped_gid);
  EXPECT_NE(r.error().detail.find("rdma_en3 port 1"), std::string::npos) << r.error().detail;
  EXPECT_NE(r.error().detail.find("assign an IPv4 address"), std::string::npos) << r.error().detail;
  EXPECT_NE(r.error().detail.find("not bridge0"), std::string::npos);
  // The one rule for 169.254/16 (docs/facts.md#link-local-ipv4), as the doctor's self_assigned
  // warning says it: it works, but a self-assigned one arrives late and may change.
  EXPECT_NE(r.error().detail.find("a self-assigned one arrives late and may change"), std::string::npos)
      << r.error().detail;
  // A failure always carries its trace, even when none was asked for.
  ASSERT_TRUE(r.error().trace);
  ASSERT_EQ(r.error().trace->attempts.size(), 1u);
  const auto& a = r.error().trace->attempts[0];
  EXPECT_EQ(a.policy, "jaccl-fixed");
  ASSERT_EQ(a.steps.size(), 1u);
  EXPECT_EQ(a.steps[0].index, 0u);
  EXPECT_EQ(a.steps[0].verdict, EntryVerdict::not_ipv4_mapped);
  EXPECT_NE(a.steps[0].note.find("fe80::347c:94ff:fecd:45c4"), std::string::npos);
}

TEST(JacclFirstMapped, TraceOnlyWhenAskedOnSuccess) {
  auto plain = JacclFirstMapped{}.select(test::nccl_769());
  ASSERT_OK(plain);
  EXPECT_TRUE(plain.value().trace.attempts.empty());
  auto traced = JacclFirstMapped{}.select(test::nccl_769(), {.trace = true});
  ASSERT_OK(traced);
  ASSERT_EQ(traced.value().trace.attempts.size(), 1u);
  const auto& steps = traced.value().trace.attempts[0].steps;
  ASSERT_EQ(steps.size(), 3u);  // stops at the first mapped entry, as JACCL does
  EXPECT_EQ(steps[0].verdict, EntryVerdict::not_ipv4_mapped);
  EXPECT_EQ(steps[1].verdict, EntryVerdict::not_ipv4_mapped);
  EXPECT_EQ(steps[2].verdict, EntryVerdict::chosen);
  EXPECT_EQ(steps[2].index, 2u);
}

TEST(JacclFirstMapped, SkipsEmptyAndUnreadableSlotsLikeJaccl) {
  auto t = VALUE_OR_FAIL(
      GidTable::make(test::port("x", LinkLayer::ethernet(), 8),
                     {GidEntry::empty(0), GidEntry::unreadable(1, std::make_error_code(std::errc::io_error)),
                      GidEntry::valid(2, Gid{}), GidEntry::valid(3, gid("::ffff:10.0.0.9"))}));
  auto r = JacclFirstMapped{}.select(t, {.trace = true});
  EXPECT_EQ(jaccl_picked(r), 3u);
  const auto& steps = r.value().trace.attempts[0].steps;
  EXPECT_EQ(steps[0].verdict, EntryVerdict::empty);
  EXPECT_EQ(steps[1].verdict, EntryVerdict::unreadable);
  EXPECT_EQ(steps[2].verdict, EntryVerdict::zero);
}

TEST(JacclFirstMapped, MappedGidAbove255IsReportedNotReturned) {
  auto t = VALUE_OR_FAIL(
      GidTable::make(test::port("wide", LinkLayer::ethernet(), 1024),
                     {GidEntry::valid(0, gid("fe80::1")), GidEntry::valid(300, gid("::ffff:10.1.2.3"))}));
  auto r = JacclFirstMapped{}.select(t);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::index_exceeds_uint8);
  EXPECT_NE(r.error().detail.find("index 300"), std::string::npos) << r.error().detail;
}

TEST(JacclFirstMapped, NeverReadsBeyondTheTableLength) {
  // An entry at or past gid_tbl_len cannot exist in a GidTable; an empty table is a plain failure.
  ASSERT_OK_AND_ASSIGN(auto t, GidTable::make(test::port("x", LinkLayer::ethernet(), 0), {}));
  EXPECT_EQ(JacclFirstMapped{}.select(t).error(), errc::no_ipv4_mapped_gid);
}

TEST(JacclLegacyIndex1, AdvertisesIndex1WhateverItHolds) {
  auto r = JacclLegacyIndex1{}.select(test::nccl_769());
  ASSERT_OK(r);
  EXPECT_EQ(jaccl_picked(r), 1u);
  EXPECT_EQ(r.value().entry.gid, gid("fe80::ac0:ebff:feda:1cfb"));  // link-local, unchecked
  EXPECT_EQ(jaccl_picked(JacclLegacyIndex1{}.select(test::apple_ds4qa())), 1u);
  EXPECT_EQ(jaccl_picked(JacclLegacyIndex1{}.select(test::ds4_linux_unit())), 1u);
  EXPECT_EQ(jaccl_picked(JacclLegacyIndex1{}.select(test::ibm_cx6())), 1u);
  EXPECT_EQ(jaccl_picked(JacclLegacyIndex1{}.select(test::mooncake_ipv6(0))), 1u);
}

TEST(JacclLegacyIndex1, AnEmptySlotIsAdvertisedAsTheZeroGid) {
  for (const GidTable& t : {test::macmini(), test::nccl_1573_pod(0), test::nccl_1573_pod(1)}) {
    auto r = JacclLegacyIndex1{}.select(t, {.trace = true});
    ASSERT_OK(r);
    EXPECT_EQ(r.value().entry.index, 1u);
    EXPECT_TRUE(r.value().entry.gid.is_zero());
    EXPECT_EQ(r.value().entry.state, EntryState::empty);
    EXPECT_NE(r.value().trace.to_string().find("zero GID"), std::string::npos);
  }
}

TEST(JacclLegacyIndex1, FailuresSayWhy) {
  EXPECT_EQ(JacclLegacyIndex1{}.select(test::apple_noipv4()).error(), errc::entry_not_shown);
  auto one = VALUE_OR_FAIL(
      GidTable::make(test::port("x", LinkLayer::ethernet(), 1), {GidEntry::valid(0, gid("fe80::1"))}));
  auto r = JacclLegacyIndex1{}.select(one);
  EXPECT_EQ(r.error(), errc::index_out_of_range);
  EXPECT_NE(r.error().detail.find("gid_tbl_len 1"), std::string::npos) << r.error().detail;
  auto bad =
      VALUE_OR_FAIL(GidTable::make(test::port("x", LinkLayer::ethernet(), 4),
                                   {GidEntry::unreadable(1, std::make_error_code(std::errc::io_error))}));
  EXPECT_EQ(JacclLegacyIndex1{}.select(bad).error(), errc::entry_unreadable);
}

TEST(JacclSpecs, Names) {
  EXPECT_EQ(JacclFirstMapped{}.spec(), "jaccl-fixed");
  EXPECT_EQ(JacclLegacyIndex1{}.spec(), "jaccl-legacy");
}

}  // namespace
}  // namespace gidpolicy
