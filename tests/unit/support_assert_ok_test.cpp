// tests/support/assert_ok.hpp: an unexpected failure fails one test (or one rapidcheck case) with
// the error's message, and the expression is evaluated exactly once.
#include "support/assert_ok.hpp"

#include <gidpolicy/gid.hpp>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <rapidcheck.h>

#include <memory>
#include <string>
#include <utility>

namespace gidpolicy {
namespace {

int g_calls = 0;  // how many times counted() ran: the helpers must evaluate their argument once

result<int> counted(bool ok) {
  ++g_calls;
  if (!ok) return fail(errc::entry_empty, "index 3 on mlx5_0 port 1");
  return 7;
}

result<std::unique_ptr<int>> move_only(bool ok) {
  if (!ok) return fail(errc::invalid_argument, "no pointer today");
  return std::make_unique<int>(5);
}

// EXPECT_FATAL_FAILURE's statement cannot see locals: these run the assertions in functions.
void assert_ok_on_failure() { ASSERT_OK(counted(false)); }
void assert_and_assign_on_failure() {
  ASSERT_OK_AND_ASSIGN(const int v, counted(false));
  ADD_FAILURE() << "reached after a failed ASSERT_OK_AND_ASSIGN with " << v;
}

TEST(AssertOk, ExpectOkReportsTheErrorMessageOnce) {
  g_calls = 0;
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(counted(false)), "GID entry is empty: index 3 on mlx5_0 port 1");
  EXPECT_EQ(g_calls, 1);
  EXPECT_NONFATAL_FAILURE(EXPECT_OK(Gid::parse("fe80::zz")),
                          "Gid::parse(\"fe80::zz\") failed: invalid GID text");
  EXPECT_OK(counted(true));
  EXPECT_EQ(g_calls, 2);
  EXPECT_OK(result<std::pair<int, int>>(std::pair<int, int>{1, 2}));  // commas in the expression
}

TEST(AssertOk, AssertOkIsFatalAndNamesTheError) {
  EXPECT_FATAL_FAILURE(assert_ok_on_failure(), "counted(false) failed: GID entry is empty");
  ASSERT_OK(counted(true));
}

TEST(AssertOk, AssertOkAndAssignReturnsOnFailureAndAssignsOnSuccess) {
  EXPECT_FATAL_FAILURE(assert_and_assign_on_failure(), "GID entry is empty: index 3 on mlx5_0 port 1");
  g_calls = 0;
  ASSERT_OK_AND_ASSIGN(const int v, counted(true));
  EXPECT_EQ(v, 7);
  EXPECT_EQ(g_calls, 1);
  ASSERT_OK_AND_ASSIGN(auto p, move_only(true));  // move-only values are moved out
  EXPECT_EQ(*p, 5);
}

TEST(AssertOk, ValueOrFailThrowsWithFileLineExpressionAndMessage) {
  g_calls = 0;
  EXPECT_EQ(VALUE_OR_FAIL(counted(true)), 7);
  EXPECT_EQ(g_calls, 1);
  try {
    (void)VALUE_OR_FAIL(counted(false));
    ADD_FAILURE() << "VALUE_OR_FAIL returned on a failure";
  } catch (const test::UnexpectedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("support_assert_ok_test.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("counted(false) failed: GID entry is empty: index 3 on mlx5_0 port 1"),
              std::string::npos)
        << what;
  }
  EXPECT_EQ(g_calls, 2);
  EXPECT_EQ(*VALUE_OR_FAIL(move_only(true)), 5);
  const result<int> named = counted(true);
  EXPECT_EQ(VALUE_OR_FAIL(named), 7);  // an lvalue result is copied from, not moved out
  EXPECT_EQ(named.value(), 7);
}

TEST(AssertOk, RapidcheckSeesAFailedCaseWithTheMessage) {
  g_calls = 0;
  try {
    RC_ASSERT_OK(counted(false));
    ADD_FAILURE() << "RC_ASSERT_OK returned on a failure";
  } catch (const rc::detail::CaseResult& r) {  // what rapidcheck catches from RC_ASSERT
    EXPECT_EQ(r.type, rc::detail::CaseResult::Type::Failure);
    EXPECT_NE(r.description.find("counted(false) failed: GID entry is empty"), std::string::npos)
        << r.description;
  }
  try {
    (void)VALUE_OR_FAIL(move_only(false));
    ADD_FAILURE() << "VALUE_OR_FAIL returned on a failure";
  } catch (const rc::detail::CaseResult& r) {
    EXPECT_EQ(r.type, rc::detail::CaseResult::Type::Failure);
    EXPECT_NE(r.description.find("move_only(false) failed: invalid argument"), std::string::npos)
        << r.description;
    EXPECT_NE(r.description.find("no pointer today"), std::string::npos) << r.description;
  }
  EXPECT_EQ(g_calls, 1);
  RC_ASSERT_OK(counted(true));
  EXPECT_EQ(g_calls, 2);
}

TEST(AssertOk, APropertyFailingThroughValueOrFailReportsTheErrorAndShrinks) {
  // A whole rapidcheck run: the property fails from some n on; the reported counterexample is
  // the smallest failing n and the message is the error's.
  const rc::detail::TestResult outcome = rc::detail::checkTestable([](int n) {
    const result<int> r =
        n >= 3 ? result<int>(fail(errc::index_out_of_range, "n=" + std::to_string(n))) : result<int>(n);
    RC_ASSERT(VALUE_OR_FAIL(r) < 3);
  });
  ASSERT_TRUE(outcome.is<rc::detail::FailureResult>());
  const auto& failure = outcome.get<rc::detail::FailureResult>();
  EXPECT_NE(failure.description.find("r failed: " + std::error_code(errc::index_out_of_range).message()),
            std::string::npos)
      << failure.description;
  EXPECT_NE(failure.description.find("n=3"), std::string::npos) << failure.description;  // shrunk to 3
}

}  // namespace
}  // namespace gidpolicy
