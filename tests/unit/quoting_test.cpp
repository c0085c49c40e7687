// quoting.hpp: file names from input, shown text, shell words and JSON text.
#include <gidpolicy/quoting.hpp>

#include <gtest/gtest.h>

#include <string>

namespace gidpolicy {
namespace {

TEST(Quoting, AFileNameIsNeverAPath) {
  for (const char* bad : {"", ".", "..", "../x", "../x/", "/abs", "a/b", "x/", "/"})
    EXPECT_TRUE(file_name_problem(bad)) << '"' << bad << '"';
  EXPECT_NE(file_name_problem("a/b")->find("'/'"), std::string::npos) << *file_name_problem("a/b");
  EXPECT_TRUE(file_name_problem(std::string("a\0b", 3)));
  EXPECT_TRUE(file_name_problem("a\nb"));
  EXPECT_TRUE(file_name_problem("a\x1b[2J"));
  EXPECT_TRUE(file_name_problem("a\x7f"));
  EXPECT_TRUE(file_name_problem("\xff"));  // not UTF-8
  EXPECT_TRUE(
      file_name_problem("a\xe2\x80\xae"
                        "b"));  // U+202E, right-to-left override
  EXPECT_TRUE(file_name_problem(std::string(256, 'a')));
  for (const char* good : {"node-1.env", "...env", ".hidden", "h\xc3\xb6st", "a b", "x..y"})
    EXPECT_FALSE(file_name_problem(good)) << good << ": " << *file_name_problem(good);
  EXPECT_FALSE(file_name_problem(std::string(255, 'a')));
}

TEST(Quoting, JoinFileNameRefusesWhatFileNameProblemRefuses) {
  EXPECT_EQ(join_file_name("/tmp/d", "pod-a.env").value(), "/tmp/d/pod-a.env");
  EXPECT_EQ(join_file_name("/tmp/d/", "pod-a.env").value(), "/tmp/d/pod-a.env");
  const auto bad = join_file_name("/tmp/d", "../proj/.env");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), errc::invalid_argument);
  EXPECT_NE(bad.error().detail.find("\"../proj/.env\""), std::string::npos) << bad.error().detail;
  EXPECT_FALSE(join_file_name("/tmp/d", "/etc/x.env"));
}

TEST(Quoting, ShowTextKeepsEveryValueOnOneLineWithoutControls) {
  EXPECT_EQ(show_text("3\nREADY: 0 blockers"), "3\\nREADY: 0 blockers");
  EXPECT_EQ(show_text("a\x1b[2Jb"), "a\\e[2Jb");
  EXPECT_EQ(show_text("a\rb\tc"), "a\\rb\\tc");
  EXPECT_EQ(show_text("a\x7f"), "a\\x7f");
  EXPECT_EQ(show_text("\xc2\x9b"), "\\u{009b}");  // C1 CSI
  EXPECT_EQ(show_text("a\xe2\x80\xa8"), "a\\u{2028}");
  EXPECT_EQ(show_text("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(show_text("h\xc3\xb6st a\\b"), "h\xc3\xb6st a\\b");  // printable UTF-8 and '\' unchanged
  // Bounded, cut on a code point.
  EXPECT_EQ(show_text(std::string(300, 'x')).size(), kMaxShownText + 3);
  EXPECT_EQ(show_text("ab\xc3\xb6", 3), "ab...");
  // Idempotent: what it shows is shown as it is.
  const std::string once = show_text("x\n\x1b\xff\xe2\x80\xae");
  EXPECT_EQ(show_text(once), once);
  for (char c : show_text(std::string("\x01\x02\x1f\n\r\x1b\x7f", 7)))
    EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f);
}

TEST(Quoting, ShellQuoteLeavesSafeWordsBareAndQuotesTheRest) {
  EXPECT_EQ(shell_quote("eth0"), "eth0");
  EXPECT_EQ(shell_quote("10.0.0.1/30"), "10.0.0.1/30");
  EXPECT_EQ(shell_quote("fe80::1%eth0"), "fe80::1%eth0");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a$(reboot)"), "'a$(reboot)'");
  EXPECT_EQ(shell_quote("a;b"), "'a;b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("*"), "'*'");
  EXPECT_EQ(shell_quote("~x"), "'~x'");
  EXPECT_EQ(shell_quote("a\nb"), "$'a\\x0ab'");
  EXPECT_EQ(shell_quote("a'\\\x1b"), "$'a\\'\\\\\\x1b'");
  EXPECT_EQ(shell_quote("\xff"), "$'\\xff'");
  // One line of no control characters, whatever the word.
  for (char c : shell_quote(std::string("\x01\n\r\x1b\x7f;'", 7)))
    EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f);
}

TEST(Quoting, ValidUtf8ReplacesEachBadByteWithTheReplacementCharacter) {
  EXPECT_EQ(valid_utf8("ok h\xc3\xb6st"), "ok h\xc3\xb6st");
  EXPECT_EQ(valid_utf8("a\xff"
                       "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(valid_utf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");                  // overlong '/'
  EXPECT_EQ(valid_utf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a surrogate
}

}  // namespace
}  // namespace gidpolicy
