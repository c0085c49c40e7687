// The name rule (gidpolicy/names.hpp): one rule for every name that reaches output.
#include <gidpolicy/names.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

using gidpolicy::cut_utf8;
using gidpolicy::is_utf8;
using gidpolicy::name_problem;
using gidpolicy::NameKind;
using gidpolicy::quote_name;

TEST(NameRule, HostNamesMayBeUtf8ButNeverBreakALine) {
  EXPECT_FALSE(name_problem("mac-a", NameKind::host));
  EXPECT_FALSE(
      name_problem("rack 1 / m\xC3\xBC"
                   "de",
                   NameKind::host));  // "müde": UTF-8 and spaces are fine
  EXPECT_FALSE(name_problem(std::string(255, 'h'), NameKind::host));
  // Each of these could forge or hide a report line.
  for (const std::string& bad : {std::string("a\n999 of 999 links connected"), std::string("a\rb"),
                                 std::string("esc\x1b[2J"), std::string("nul\0x", 5), std::string("del\x7f"),
                                 std::string("c1\xC2\x85"),      // U+0085, NEXT LINE
                                 std::string("ls\xE2\x80\xA8"),  // U+2028
                                 std::string("bidi\xE2\x80\xAE"
                                             "evil"),             // U+202E, RIGHT-TO-LEFT OVERRIDE
                                 std::string("iso\xE2\x81\xA6"),  // U+2066
                                 std::string(), std::string(256, 'h')}) {
    auto why = name_problem(bad, NameKind::host);
    ASSERT_TRUE(why) << quote_name(bad);
  }
  EXPECT_NE(name_problem("a\nb", NameKind::host)->find("byte 2 starts a control character (0x0a)"),
            std::string::npos);
  EXPECT_NE(name_problem("x\xE2\x80\xAE", NameKind::host)->find("U+202E"), std::string::npos);
}

TEST(NameRule, NamesThatAreNotUtf8AreRefusedSayingWhere) {
  for (const std::string& bad : {std::string("\xff"), std::string("a\xC3"),  // cut short
                                 std::string("\xC0\xAF"),                    // overlong '/'
                                 std::string("\xED\xA0\x80"),                // a surrogate
                                 std::string("\xF4\x90\x80\x80"),            // above U+10FFFF
                                 std::string("\x80")}) {                     // stray continuation
    EXPECT_FALSE(is_utf8(bad)) << quote_name(bad);
    auto why = name_problem(bad, NameKind::path);
    ASSERT_TRUE(why) << quote_name(bad);
    EXPECT_NE(why->find("is not UTF-8"), std::string::npos) << *why;
  }
  EXPECT_NE(name_problem("ab\xff", NameKind::host)->find("byte 3 is 0xff"), std::string::npos);
  EXPECT_TRUE(is_utf8("plain \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
}

TEST(NameRule, DeviceAndNetdevNamesKeepTheKernelsRule) {
  EXPECT_FALSE(name_problem("mlx5_0", NameKind::device));
  EXPECT_FALSE(name_problem("rdma_en5", NameKind::device));
  EXPECT_TRUE(name_problem("m\xC3\xBC", NameKind::device));  // UTF-8 is not a kernel device name
  EXPECT_TRUE(name_problem("two words", NameKind::device));
  EXPECT_TRUE(name_problem("a/b", NameKind::device));
  EXPECT_TRUE(name_problem(std::string(64, 'm'), NameKind::device));
  EXPECT_FALSE(name_problem(std::string(63, 'm'), NameKind::device));
  EXPECT_TRUE(name_problem("eth0:1", NameKind::netdev));
  EXPECT_TRUE(name_problem(std::string(16, 'e'), NameKind::netdev));
}

TEST(NameRule, QuotedNamesAreOnePrintableAsciiLine) {
  EXPECT_EQ(quote_name("a\n\"b\"\\\xff\t"), "\"a\\x0a\\\"b\\\"\\\\\\xff\\t\"");
  EXPECT_EQ(quote_name("abcdef", 3), "\"abc...\"");
  const std::string q = quote_name(std::string("\x1b[31m\r\n\xE2\x80\xAE", 9));
  for (char c : q)
    EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f) << q;
}

TEST(NameRule, CutsFallOnCodePoints) {
  const std::string s =
      "ab\xE2\x82\xAC"
      "cd";  // "ab€cd": the euro sign is bytes 3-5
  EXPECT_EQ(cut_utf8(s, 2), "ab");
  EXPECT_EQ(cut_utf8(s, 3), "ab");  // not "ab\xE2"
  EXPECT_EQ(cut_utf8(s, 4), "ab");
  EXPECT_EQ(cut_utf8(s, 5), "ab\xE2\x82\xAC");
  EXPECT_EQ(cut_utf8(s, 100), s);
  for (std::size_t n = 0; n <= s.size(); ++n) EXPECT_TRUE(is_utf8(cut_utf8(s, n))) << n;
}

}  // namespace
