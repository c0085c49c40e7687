#include <gidpolicy/error.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string_view>
#include "support/assert_ok.hpp"

namespace gidpolicy {
namespace {

result<int> half(int v) {
  if (v % 2 != 0) return fail(errc::invalid_argument, std::to_string(v) + " is odd");
  return v / 2;
}

result<int> quarter(int v) {
  GIDPOLICY_TRY(h, half(v));
  GIDPOLICY_TRY(q, half(h));
  return q;
}

result<void> check_even(int v) {
  GIDPOLICY_TRYV(half(v));
  return success();
}

TEST(Error, CategoryHasNameAndMessages) {
  std::error_code ec = errc::entry_empty;
  EXPECT_STREQ(ec.category().name(), "gidpolicy");
  EXPECT_EQ(ec.message(), "GID entry is empty");
  for (int v = 1; v <= static_cast<int>(errc::no_route); ++v)
    EXPECT_EQ(error_category().message(v).find("unknown"), std::string::npos) << v;
  EXPECT_NE(error_category().message(9999).find("unknown"), std::string::npos);
}

TEST(Error, MapsToGenericConditions) {
  EXPECT_EQ(std::error_code(errc::entry_empty), std::errc::no_message_available);
  EXPECT_EQ(std::error_code(errc::index_out_of_range), std::errc::result_out_of_range);
  EXPECT_EQ(std::error_code(errc::invalid_gid_text), std::errc::invalid_argument);
  EXPECT_EQ(std::error_code(errc::no_devices), std::errc::no_such_device);
  EXPECT_EQ(std::error_code(errc::no_route), std::errc::network_unreachable);
  EXPECT_NE(std::error_code(errc::entry_empty), std::errc::invalid_argument);
}

TEST(Error, WhatJoinsCodeAndDetail) {
  Error e(errc::entry_empty, "index 3 on mlx5_0 port 1");
  EXPECT_EQ(e.what(), "GID entry is empty: index 3 on mlx5_0 port 1");
  Error d(std::error_code(22, std::generic_category()), "ibv_modify_qp(RTR)");
  EXPECT_EQ(d.what(),
            std::error_code(22, std::generic_category()).message() + " (errno 22): ibv_modify_qp(RTR)");
  EXPECT_TRUE(d == std::errc::invalid_argument);
  EXPECT_TRUE(e == errc::entry_empty);
}

TEST(Error, TryPropagatesFirstFailure) {
  EXPECT_EQ(VALUE_OR_FAIL(quarter(12)), 3);
  auto r = quarter(6);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::invalid_argument);
  EXPECT_EQ(r.error().detail, "3 is odd");
  EXPECT_TRUE(check_even(4));
  EXPECT_FALSE(check_even(5));
}

// Every errc has a name, each unique, and the names read back: the values are dense from 1
// (the name table is a switch over the enum, so a new enumerator without one does not build).
TEST(ErrcNames, EveryErrcHasAUniqueNameThatReadsBack) {
  std::set<std::string_view> seen;
  int v = 1;
  for (; !to_string(static_cast<errc>(v)).empty(); ++v) {
    const auto e = static_cast<errc>(v);
    const std::string_view name = to_string(e);
    EXPECT_TRUE(seen.insert(name).second) << name << " names two errc values";
    EXPECT_EQ(errc_from_string(name), e) << name;
    for (char c : name) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << name;
  }
  // The last enumerator is named, and nothing past it or below 1 is.
  EXPECT_GE(v - 1, static_cast<int>(errc::mtu_too_large));
  EXPECT_EQ(to_string(errc::no_ipv4_mapped_gid), "no_ipv4_mapped_gid");
  EXPECT_EQ(to_string(errc::invalid_policy_spec), "invalid_policy_spec");
  for (int bad : {0, -1, v, v + 1, 1000}) EXPECT_EQ(to_string(static_cast<errc>(bad)), "") << bad;
  EXPECT_EQ(errc_from_string(""), std::nullopt);
  EXPECT_EQ(errc_from_string("errno"), std::nullopt);
  EXPECT_EQ(errc_from_string("No_Route"), std::nullopt);
}

}  // namespace
}  // namespace gidpolicy
