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

constexpr auto kLastVerdict = Verdict::not_requested;

TEST(Trace, EveryVerdictHasItsStableName) {
  const std::pair<Verdict, const char*> names[] = {
      {Verdict::chosen, "chosen"},
      {Verdict::candidate, "candidate"},
      {Verdict::lower_rank, "lower_rank"},
      {Verdict::empty, "empty"},
      {Verdict::not_shown, "not_shown"},
      {Verdict::unreadable, "unreadable"},
      {Verdict::zero, "zero"},
      {Verdict::link_local, "link_local"},
      {Verdict::wrong_type, "wrong_type"},
      {Verdict::wrong_family, "wrong_family"},
      {Verdict::not_ipv4_mapped, "not_ipv4_mapped"},
      {Verdict::outside_subnet, "outside_subnet"},
      {Verdict::excluded_subnet, "excluded_subnet"},
      {Verdict::other_netdev, "other_netdev"},
      {Verdict::not_local_address, "not_local_address"},
      {Verdict::index_above_255, "index_above_255"},
      {Verdict::out_of_range, "out_of_range"},
      {Verdict::not_requested, "not_requested"},
  };
  EXPECT_EQ(std::size(names), static_cast<std::size_t>(kLastVerdict) + 1) << "a verdict is missing here";
  for (const auto& [v, name] : names) EXPECT_EQ(to_string(v), name);
  std::set<std::string_view> distinct;
  for (int v = 0; v <= static_cast<int>(kLastVerdict); ++v) {
    const std::string_view s = to_string(static_cast<Verdict>(v));
    EXPECT_NE(s, "unknown") << v;
    distinct.insert(s);
  }
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kLastVerdict) + 1);
}

TEST(Trace, OnlyChosenCandidateAndLowerRankAreAccepted) {
  static_assert(is_accepted(Verdict::chosen) && is_accepted(Verdict::candidate) &&
                is_accepted(Verdict::lower_rank));
  for (int v = static_cast<int>(Verdict::empty); v <= static_cast<int>(kLastVerdict); ++v)
    EXPECT_FALSE(is_accepted(static_cast<Verdict>(v))) << to_string(static_cast<Verdict>(v));
}

TEST(Trace, ToStringRendersOneLinePerAttemptAndOneIndentedLinePerStep) {
  Trace t;
  t.attempts.push_back({"jaccl",
                        {{0, Verdict::not_ipv4_mapped, "fe80::1 (roce_v2)"}, {1, Verdict::empty, ""}},
                        "no IPv4-mapped GID"});
  t.attempts.push_back({"auto", {{2, Verdict::chosen, "::ffff:10.0.0.1 (roce_v2)"}}, ""});
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
  const TraceStep s{3, Verdict::link_local, "fe80::1"};
  EXPECT_EQ(s, (TraceStep{3, Verdict::link_local, "fe80::1"}));
  EXPECT_NE(s, (TraceStep{4, Verdict::link_local, "fe80::1"}));
  EXPECT_NE(s, (TraceStep{3, Verdict::zero, "fe80::1"}));
  EXPECT_NE(s, (TraceStep{3, Verdict::link_local, ""}));
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
    EXPECT_EQ(attempt.steps[i].verdict, Verdict::link_local);
  }
  const std::string text = r.error().trace->to_string();
  EXPECT_EQ(text.rfind("auto: failed: ", 0), 0u) << text;
  EXPECT_NE(text.find("  [0] link_local: fe80::7ec2:55ff:feba:ff88"), std::string::npos) << text;
  EXPECT_NE(text.find("  [1] link_local: fe80::7ec2:55ff:feba:ff88"), std::string::npos) << text;
}

}  // namespace
}  // namespace gidpolicy
