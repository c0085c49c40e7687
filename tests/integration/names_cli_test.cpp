// One name per thing on the command line: --profile on every subcommand that takes a spec
// (--policy kept as select's and watch's old name), the "profile" key in every JSON document
// that prints one, and the subcommand list every message and docs/cli.md give, all from the
// tool's one subcommand table (its --help).
#include "cli_run.hpp"

#include <gidpolicy/policies/registry.hpp>

#include "support/files.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace gidpolicy::test {
namespace {

std::string names_table(const char* name) { return (example_tables_dir() / name).string(); }

/// The subcommands --help lists (the tool's table, as CLI11 prints it).
std::vector<std::string> help_subcommands() {
  const CliResult help = run_cli({"--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  std::istringstream in(help.out);
  std::vector<std::string> names;
  std::string line;
  bool in_list = false;
  while (std::getline(in, line)) {
    if (line == "Subcommands:") {
      in_list = true;
      continue;
    }
    if (!in_list) continue;
    if (line.empty()) break;
    std::istringstream words(line);
    std::string name;
    words >> name;
    names.push_back(name);
  }
  return names;
}

std::string read_doc(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// docs/cli.md names exactly the subcommands --help lists: in its synopsis (the first code
// block's "gidpolicy NAME ..." lines) and as the sections "## `NAME ...`".
TEST(Subcommands, DocsListExactlyTheSubcommands) {
  const auto listed = help_subcommands();
  ASSERT_GE(listed.size(), 8u);
  const std::set<std::string> want(listed.begin(), listed.end());
  const std::string doc = read_doc(test_data_dir().parent_path().parent_path() / "docs" / "cli.md");
  ASSERT_FALSE(doc.empty());
  std::set<std::string> synopsis, sections;
  std::istringstream in(doc);
  std::string line;
  int fences = 0;
  while (std::getline(in, line)) {
    if (line.starts_with("```")) ++fences;
    if (fences == 1 && line.starts_with("gidpolicy ")) {
      std::istringstream w(line.substr(10));
      std::string name;
      w >> name;
      synopsis.insert(name);
    }
    if (line.starts_with("## `") && line.size() > 4 && line[4] != '-') {
      const std::string head = line.substr(4);
      sections.insert(head.substr(0, head.find_first_of(" `")));
    }
  }
  EXPECT_EQ(synopsis, want) << "docs/cli.md's synopsis";
  EXPECT_EQ(sections, want) << "docs/cli.md's sections";
}

// The unknown- and missing-subcommand errors list every subcommand of the table, in its order.
TEST(Subcommands, ErrorsListEverySubcommand) {
  const auto listed = help_subcommands();
  ASSERT_FALSE(listed.empty());
  std::string expected;
  for (std::size_t i = 0; i < listed.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == listed.size() ? " or " : ", ") + listed[i];
  for (const auto& args : {std::vector<std::string>{"frobnicate"}, std::vector<std::string>{}}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2);
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_NE(r.err.find("expected " + std::string(args.empty() ? "a subcommand: " : "") + expected),
              std::string::npos)
        << r.err;
  }
}

// select and watch take --profile, as check, simulate and fleet do; --policy is its old name.
TEST(Profile, SelectTakesProfileAndItsOldNamePolicy) {
  const std::string t = names_table("macmini-mapped-at-2.json");
  const CliResult now = run_cli({"select", "--profile", "jaccl-fixed", "--input", t});
  const CliResult old = run_cli({"select", "--policy", "jaccl-fixed", "--input", t});
  EXPECT_EQ(now.exit_code, 0) << now.err;
  EXPECT_EQ(now.out, old.out);
  EXPECT_EQ(now.exit_code, old.exit_code);
  EXPECT_NE(now.out.find("jaccl-fixed"), std::string::npos) << now.out;
  // Both at once is refused, not one silently winning.
  const CliResult both = run_cli({"select", "--profile", "auto", "--policy", "jaccl", "--input", t});
  EXPECT_EQ(both.exit_code, 2) << both.out;
  // --help shows --profile; the old name stays out of it.
  for (const char* sub : {"select", "watch"}) {
    const CliResult help = run_cli({sub, "--help"});
    EXPECT_NE(help.out.find("--profile"), std::string::npos) << sub << ": " << help.out;
    EXPECT_EQ(help.out.find("--policy"), std::string::npos) << sub << ": " << help.out;
  }
  // Errors name the option as --profile, whichever name was given.
  const CliResult bad = run_cli({"select", "--policy", "validated:idx=3", "--input", t});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--profile validated:idx=3: "), std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find("--policy"), std::string::npos) << bad.err;
}

// The hint after a bad spec lists every built-in spec of the registry.
TEST(Profile, BadSpecHintListsEveryRegistryRow) {
  const CliResult r =
      run_cli({"select", "--profile", "nope", "--input", names_table("macmini-mapped-at-2.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("; specs: " + builtin_spec_hint()), std::string::npos) << r.err;
  for (const BuiltinSpec& row : kBuiltinSpecs)
    EXPECT_NE(r.err.find(std::string(row.grammar)), std::string::npos) << row.name;
}

// watch --json's first line per port names its profile "profile", with the document's version.
TEST(Profile, WatchJsonNamesTheProfile) {
#ifndef GIDPOLICY_OUTPUT_TEST_FAKELIB_DIR
  GTEST_SKIP() << "this build has no fake libibverbs to watch";
#else
  // SIGINT ends watch as a user would, once its first line is out: a fixed delay would be a race
  // with its start-up (a SIGINT before watch blocks it ends the process with no output), and a
  // loaded machine may take longer than any delay to load the fake. Bounded: 60 s (a hang guard).
  const char* script =
      "\"$0\" watch --json --profile jaccl-fixed > \"$1\" & pid=$!; n=0;"
      " while [ ! -s \"$1\" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done;"
      " kill -INT $pid; wait $pid; cat \"$1\"";
  const auto out_file =
      std::filesystem::path(::testing::TempDir()) / ("watch-json-" + std::to_string(::getpid()) + ".out");
  const CliResult r = run_program(
      "/usr/bin/timeout", {"120", "/bin/sh", "-c", script, cli_path().string(), out_file.string()},
      {std::string("LD_LIBRARY_PATH=") + GIDPOLICY_OUTPUT_TEST_FAKELIB_DIR,
       "GIDPOLICY_FAKE_TABLES=" + (test_data_dir() / "watch" / "1-start.json").string()});
  std::error_code ec;
  std::filesystem::remove(out_file, ec);
  std::istringstream lines(r.out);
  std::string first;
  ASSERT_TRUE(std::getline(lines, first)) << r.err;
  const auto j = nlohmann::json::parse(first);
  EXPECT_EQ(j.at("event"), "watching");
  EXPECT_EQ(j.at("schema"), "gidpolicy.watch");
  EXPECT_EQ(j.at("version"), 4);
  EXPECT_TRUE(j.contains("host") && j.contains("source")) << j.dump();
  EXPECT_EQ(j.at("profile"), "jaccl-fixed");
  EXPECT_FALSE(j.contains("policy"));
#endif
}

}  // namespace
}  // namespace gidpolicy::test
