// SpecOptions (policies/spec_options.hpp): the readers a policy's factory reads its options
// with, and the parser's positioned error they all report.
#include <gidpolicy/policies/spec_options.hpp>

#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gidpolicy {
namespace {

constexpr auto npos = std::string::npos;

// "x:index=12,flag,local=10.0.0.1,net=10.0.0.0/8,bad=zz"
//    0123456789...
const std::string kSpec = "x:index=12,flag,local=10.0.0.1,net=10.0.0.0/8,bad=zz";

SpecOption opt(std::string_view key, std::optional<std::string_view> value = std::nullopt) {
  const std::string_view s = kSpec;
  SpecOption o;
  o.key_pos = s.find(std::string(key) + (value ? "=" : ""));
  o.key = s.substr(o.key_pos, key.size());
  if (value) {
    o.value_pos = o.key_pos + key.size() + 1;
    o.value = s.substr(o.value_pos, value->size());
  }
  return o;
}

TEST(SpecOptions, ReadsEachKindOfValue) {
  const SpecOptions opts(kSpec, {opt("index", "12"), opt("flag"), opt("local", "10.0.0.1")}, kSpec.size());
  ASSERT_EQ(opts.size(), 3u);
  EXPECT_EQ(VALUE_OR_FAIL(opts.integer(opts.front(), 0, 100, "an index")), 12);
  EXPECT_OK(opts.flag(*(opts.begin() + 1)));
  EXPECT_EQ(VALUE_OR_FAIL(opts.address(*(opts.begin() + 2))), Gid::ipv4_mapped(0x0a000001u));
  EXPECT_EQ(VALUE_OR_FAIL(opts.cidr(opt("net", "10.0.0.0/8"))).to_string(), "10.0.0.0/8");
  EXPECT_EQ(VALUE_OR_FAIL(opts.value(opt("bad", "zz"), "anything")), "zz");
}

TEST(SpecOptions, ErrorsNameThePositionAndWhatWasExpected) {
  const SpecOptions opts(kSpec, {}, kSpec.size());
  auto range = opts.integer(opt("index", "12"), 0, 9, "an index");
  ASSERT_FALSE(range);
  EXPECT_EQ(range.error(), errc::invalid_policy_spec);
  EXPECT_NE(range.error().detail.find("at position 8: expected an index 0..9, found '12'"), npos)
      << range.error().detail;

  auto no_value = opts.integer(opt("flag"), 0, 9, "an index");
  ASSERT_FALSE(no_value);
  EXPECT_NE(no_value.error().detail.find("at position 15: expected '=' and an index 0..9 after 'flag'"), npos)
      << no_value.error().detail;

  auto valued_flag = opts.flag(opt("index", "12"));
  ASSERT_FALSE(valued_flag);
  EXPECT_NE(valued_flag.error().detail.find("('index' takes no value)"), npos) << valued_flag.error().detail;

  auto zero = opts.address(opt("bad", "zz"));
  ASSERT_FALSE(zero);
  EXPECT_NE(zero.error().detail.find("expected an IPv4 or IPv6 address (not zero), found 'zz'"), npos)
      << zero.error().detail;

  EXPECT_NE(opts.missing("the option 'index=N'")
                .detail.find("at position " + std::to_string(kSpec.size()) +
                             ": expected the option 'index=N', found end of spec"),
            npos);
  EXPECT_NE(opts.bad_key(opt("flag"), "one of 'a' or 'b'").detail.find("at position 11: expected one of"),
            npos);
  // The whole value is quoted, ':' and '/' included.
  EXPECT_NE(opts.bad_value(opt("net", "10.0.0.0/8"), "x").detail.find("found '10.0.0.0/8'"), npos);
}

TEST(SpecOptions, ErrorsQuoteABoundedExcerpt) {
  const std::string long_spec = "auto:" + std::string(5000, 'a');
  const Error e = detail::spec_error(long_spec, 2500, "something");
  EXPECT_LT(e.detail.size(), 300u) << e.detail;
  EXPECT_NE(e.detail.find("at position 2500"), npos);
  EXPECT_NE(e.detail.find("..."), npos);
}

}  // namespace
}  // namespace gidpolicy
