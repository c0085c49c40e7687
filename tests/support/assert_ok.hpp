// Test helpers for gidpolicy::result<T>: an unexpected failure fails ONE test (or one rapidcheck
// case) with the error's message instead of terminating the whole test binary.
//
// Why: result<T>::value() on a failure terminates (the library's no-throw policy), so one broken
// parse in one test used to kill every test after it in the same executable, with no message
// naming the error. These helpers print `error().what()` and evaluate their expression once.
//
//   ASSERT_OK(expr) / EXPECT_OK(expr)   expr (a result) must succeed; else a fatal / non-fatal
//                                       gtest failure naming expr and the error.
//   ASSERT_OK_AND_ASSIGN(lhs, expr)     a statement, in void functions (test bodies): on success
//                                       `lhs = value`, on failure a fatal failure and return.
//   VALUE_OR_FAIL(expr)                 an expression, anywhere (helpers returning values,
//                                       initialisers, arguments, rapidcheck properties and
//                                       generators): the value, or throws UnexpectedError with
//                                       "file:line: expr failed: <error>". gtest fails the
//                                       current test with that text; rapidcheck takes it as a
//                                       failed case, exactly as a failed RC_ASSERT, and shrinks.
//   RC_ASSERT_OK(expr)                  in a property: RC_ASSERT(expr) that names the error.
//
// Example:
//   ASSERT_OK_AND_ASSIGN(const GidTable t, GidTable::make(port, entries));
//   EXPECT_EQ(VALUE_OR_FAIL(Gid::parse("fe80::1")).is_link_local(), true);
//   RC_ASSERT(VALUE_OR_FAIL(profile.plan(t)).agrees());
#pragma once

#include <gidpolicy/error.hpp>

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace gidpolicy::test {

/// What an unexpected failure says: "<file>:<line>: <expr> failed: <error().what()>".
template <class R>
std::string describe_failure(const R& r, const char* expr_text, const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": " + expr_text + " failed: " + r.error().what();
}

/// Thrown by VALUE_OR_FAIL. A std::exception for gtest (an exception escaping a test body fails
/// that test with what()) and a failed rapidcheck CaseResult for rapidcheck (caught as RC_ASSERT's
/// failures are, so the case shrinks and the message is the description).
class UnexpectedError : public std::runtime_error, public ::rc::detail::CaseResult {
 public:
  explicit UnexpectedError(const std::string& what)
      : std::runtime_error(what), ::rc::detail::CaseResult(::rc::detail::CaseResult::Type::Failure, what) {}
};

/// The predicate-formatter behind EXPECT_OK / ASSERT_OK.
template <class R>
::testing::AssertionResult is_ok(const char* expr_text, const R& r) {
  if (r.has_value()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr_text << " failed: " << r.error().what();
}

/// VALUE_OR_FAIL's body: the value (moved out of an rvalue result, copied from an lvalue one).
template <class R>
auto value_or_fail(R&& r, const char* expr_text, const char* file, int line)
    -> std::remove_cvref_t<decltype(std::forward<R>(r).value())> {
  if (!r.has_value()) throw UnexpectedError(describe_failure(r, expr_text, file, line));
  return std::forward<R>(r).value();
}

/// RC_ASSERT_OK's body.
template <class R>
void rc_assert_ok(const R& r, const char* expr_text, const char* file, int line) {
  if (!r.has_value()) {
    throw UnexpectedError(describe_failure(r, expr_text, file, line));
  }
}

}  // namespace gidpolicy::test

// gtest's own EXPECT_PRED_FORMAT1 expansion, written out so an expression with commas works.
#define EXPECT_OK(...) \
  GTEST_ASSERT_(::gidpolicy::test::is_ok(#__VA_ARGS__, (__VA_ARGS__)), GTEST_NONFATAL_FAILURE_)
#define ASSERT_OK(...) \
  GTEST_ASSERT_(::gidpolicy::test::is_ok(#__VA_ARGS__, (__VA_ARGS__)), GTEST_FATAL_FAILURE_)

#define GIDPOLICY_TEST_CAT2(a, b) a##b
#define GIDPOLICY_TEST_CAT(a, b) GIDPOLICY_TEST_CAT2(a, b)
#define GIDPOLICY_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, ...)                           \
  auto tmp = (__VA_ARGS__);                                                          \
  ASSERT_TRUE(tmp.has_value()) << #__VA_ARGS__ << " failed: " << tmp.error().what(); \
  lhs = std::move(tmp).value()
/// ASSERT_OK_AND_ASSIGN(auto x, expr): a statement; only in functions returning void.
#define ASSERT_OK_AND_ASSIGN(lhs, ...) \
  GIDPOLICY_ASSERT_OK_AND_ASSIGN_IMPL(GIDPOLICY_TEST_CAT(gidpolicy_ok_, __LINE__), lhs, __VA_ARGS__)

#define VALUE_OR_FAIL(...) ::gidpolicy::test::value_or_fail((__VA_ARGS__), #__VA_ARGS__, __FILE__, __LINE__)
#define RC_ASSERT_OK(...) ::gidpolicy::test::rc_assert_ok((__VA_ARGS__), #__VA_ARGS__, __FILE__, __LINE__)
