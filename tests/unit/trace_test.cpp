// gidpolicy/trace.hpp: verdict names (stable, used in --json), which verdicts are acceptances,
// and Trace::to_string()'s rendering; plus that a failed selection's trace lists every entry.
#include <gidpolicy/trace.hpp>

#include <gidpolicy/policies/ranked.hpp>

#include "example_tables.hpp"

#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace gidpolicy {
namespace {

constexpr auto kLastVerdict = EntryVerdict::not_requested;

TEST(Trace, EveryVerdictHasItsStableName) {
  const std::pair<EntryVerdict, const char*> names[] = {
      {EntryVerdict::chosen, "chosen"},
      {EntryVerdict::candidate, "candidate"},
      {EntryVerdict::lower_rank, "lower_rank"},
      {EntryVerdict::empty, "empty"},
      {EntryVerdict::not_shown, "not_shown"},
      {EntryVerdict::unreadable, "unreadable"},
      {EntryVerdict::zero, "zero"},
      {EntryVerdict::link_local, "link_local"},
      {EntryVerdict::wrong_type, "wrong_type"},
      {EntryVerdict::wrong_family, "wrong_family"},
      {EntryVerdict::not_ipv4_mapped, "not_ipv4_mapped"},
      {EntryVerdict::outside_subnet, "outside_subnet"},
      {EntryVerdict::excluded_subnet, "excluded_subnet"},
      {EntryVerdict::other_netdev, "other_netdev"},
      {EntryVerdict::not_local_address, "not_local_address"},
      {EntryVerdict::index_above_255, "index_above_255"},
      {EntryVerdict::out_of_range, "out_of_range"},
      {EntryVerdict::not_requested, "not_requested"},
  };
  EXPECT_EQ(std::size(names), static_cast<std::size_t>(kLastVerdict) + 1) << "a verdict is missing here";
  for (const auto& [v, name] : names) EXPECT_EQ(to_string(v), name);
  std::set<std::string_view> distinct;
  for (int v = 0; v <= static_cast<int>(kLastVerdict); ++v) {
    const std::string_view s = to_string(static_cast<EntryVerdict>(v));
    EXPECT_NE(s, "unknown") << v;
    distinct.insert(s);
  }
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kLastVerdict) + 1);
}

TEST(Trace, OnlyChosenCandidateAndLowerRankAreAccepted) {
  static_assert(is_accepted(EntryVerdict::chosen) && is_accepted(EntryVerdict::candidate) &&
                is_accepted(EntryVerdict::lower_rank));
  for (int v = static_cast<int>(EntryVerdict::empty); v <= static_cast<int>(kLastVerdict); ++v)
    EXPECT_FALSE(is_accepted(static_cast<EntryVerdict>(v))) << to_string(static_cast<EntryVerdict>(v));
}

TEST(Trace, ToStringRendersOneLinePerAttemptAndOneIndentedLinePerStep) {
  Trace t;
  t.attempts.push_back(
      {"jaccl",
       {{0, EntryVerdict::not_ipv4_mapped, "fe80::1 (roce_v2)"}, {1, EntryVerdict::empty, ""}},
       "no IPv4-mapped GID"});
  t.attempts.push_back({"auto", {{2, EntryVerdict::chosen, "::ffff:10.0.0.1 (roce_v2)"}}, ""});
  EXPECT_EQ(t.to_string(),
            "jaccl: failed: no IPv4-mapped GID\n"
            "  [0] not_ipv4_mapped: fe80::1 (roce_v2)\n"
            "  [1] empty\n"  // no note: no colon
            "auto: selected\n"
            "  [2] chosen: ::ffff:10.0.0.1 (roce_v2)\n");
  EXPECT_EQ(Trace{}.to_string(), "");
  Trace no_steps;
  no_steps.attempts.push_back({"validated:index=300", {}, "index above 255"});
  EXPECT_EQ(no_steps.to_string(), "validated:index=300: failed: index above 255\n");
}

TEST(Trace, EqualityComparesEveryField) {
  const TraceStep s{3, EntryVerdict::link_local, "fe80::1"};
  EXPECT_EQ(s, (TraceStep{3, EntryVerdict::link_local, "fe80::1"}));
  EXPECT_NE(s, (TraceStep{4, EntryVerdict::link_local, "fe80::1"}));
  EXPECT_NE(s, (TraceStep{3, EntryVerdict::zero, "fe80::1"}));
  EXPECT_NE(s, (TraceStep{3, EntryVerdict::link_local, ""}));
  Trace a, b;
  a.attempts.push_back({"auto", {s}, ""});
  b.attempts.push_back({"auto", {s}, ""});
  EXPECT_EQ(a, b);
  b.attempts.front().error = "x";
  EXPECT_NE(a, b);
}

TEST(Trace, AFailedSelectionCarriesAStepForEveryEntryItLookedAt) {
  // The header's promise: "no candidate" comes with the reasons, recorded even without
  // SelectOptions::trace. mooncake_ipv6(2) holds only link-local GIDs at 0 and 1.
  const auto r = Ranked{}.select(test::mooncake_ipv6(2));
  ASSERT_FALSE(r);
  ASSERT_NE(r.error().trace, nullptr);
  ASSERT_EQ(r.error().trace->attempts.size(), 1u);
  const Trace::Attempt& attempt = r.error().trace->attempts.front();
  EXPECT_EQ(attempt.policy, "auto");
  EXPECT_FALSE(attempt.error.empty());
  ASSERT_EQ(attempt.steps.size(), 2u);
  for (std::uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(attempt.steps[i].index, i);
    EXPECT_EQ(attempt.steps[i].verdict, EntryVerdict::link_local);
  }
  const std::string text = r.error().trace->to_string();
  EXPECT_EQ(text.rfind("auto: failed: ", 0), 0u) << text;
  EXPECT_NE(text.find("  [0] link_local: fe80::7ec2:55ff:feba:ff88"), std::string::npos) << text;
  EXPECT_NE(text.find("  [1] link_local: fe80::7ec2:55ff:feba:ff88"), std::string::npos) << text;
}

}  // namespace
}  // namespace gidpolicy
