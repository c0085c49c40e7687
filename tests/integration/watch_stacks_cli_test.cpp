// `gidpolicy watch --stacks` and `check --pins` on a GID change: a live fake device whose table is
// rewritten while watch runs (an address removed, another taking its slots, the first one back at
// 4/5), and what each stack then does, in text and in JSON.
#include "cli_scratch.hpp"
#include "support/files.hpp"

#include <gidpolicy/stack_table.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace gidpolicy::test {
namespace {

class WatchStacks : public CliScratchTest {
 protected:
  WatchStacks() : CliScratchTest("gidpolicy-watch-stacks-") {}

  // watch on a copy of roce-1-start.json; once its first line is out, roce-2-moved.json is renamed
  // over it; once `until` is in the output (the change's last line), SIGINT. Bounded: each wait
  // 60 s at most (a hang guard, not a verdict), the whole run 120 s.
  CliResult watch(const std::vector<std::string>& args, const std::string& until,
                  const std::vector<std::string>& env = {}) {
    const auto table = dir_ / "table.json";
    std::filesystem::copy_file(test_data_dir() / "watch" / "roce-1-start.json", table);
    std::string cmd = "\"$0\" watch";
    for (const auto& a : args) cmd += " '" + a + "'";
    const std::string script =
        cmd +
        " > \"$1/out\" 2> \"$1/err\" & pid=$!; n=0;"
        " while [ ! -s \"$1/out\" ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done;"
        " cp \"$2\" \"$1/table.tmp\" && mv \"$1/table.tmp\" \"$1/table.json\"; n=0;"
        " while ! grep -q \"$3\" \"$1/out\" && [ $n -lt 1200 ]; do sleep 0.05; n=$((n + 1)); done;"
        " kill -INT $pid; wait $pid; s=$?; cat \"$1/out\"; cat \"$1/err\" >&2; exit $s";
    std::vector<std::string> full_env{std::string("LD_LIBRARY_PATH=") + GIDPOLICY_OUTPUT_TEST_FAKELIB_DIR,
                                      "GIDPOLICY_FAKE_TABLES=" + table.string()};
    full_env.insert(full_env.end(), env.begin(), env.end());
    return run_program("/usr/bin/timeout",
                       {"120", "/bin/sh", "-c", script, cli_path().string(), dir_.string(),
                        (test_data_dir() / "watch" / "roce-2-moved.json").string(), until},
                       full_env);
  }
};

#ifdef GIDPOLICY_OUTPUT_TEST_FAKELIB_DIR
TEST_F(WatchStacks, EachStackSaysWhatItDoesWhenItsAddressMoves) {
  const CliResult r = watch({"--stacks", "--no-env"}, "^  ds4 ");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("mlx5_0 port 1: ::ffff:10.0.0.1 (roce_v2) moved from index 3 to 5"), std::string::npos)
      << r.out;
  // NCCL picks per connection, UCX when it reopens the device, Mooncake on the event itself.
  EXPECT_NE(r.out.find("\n  NCCL: connections up keep index 3 (::ffff:10.0.0.1); index 3 now holds "
                       "::ffff:10.0.0.7"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  UCX keeps index 3 (::ffff:10.0.0.1) until it reopens the device"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  Mooncake chooses again on the event: index"), std::string::npos) << r.out;
  // A stack whose change path was not read says so.
  EXPECT_NE(
      r.out.find("\n  ds4 keeps index 3 (::ffff:10.0.0.1) until it reopens the device (assumed: not read in "
                 "its source)"),
      std::string::npos)
      << r.out;
  // JACCL does not run on RoCE: no line for it.
  EXPECT_EQ(r.out.find("JACCL"), std::string::npos) << r.out;
}

TEST_F(WatchStacks, APinnedIndexStaysWhileItsGidMovesAndTheEnvFileSaysSo) {
  const auto env = write("run.env", std::string(stack_vars::kNcclGidIndex) + "=3\n" +
                                        std::string(stack_vars::kMcGidIndex) + "=3\n");
  const CliResult r = watch({"--stacks", "--no-env", "--env-file", env.string()}, "^  ds4 ");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("new connections use its pinned index 3 (::ffff:10.0.0.7)"), std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find("Mooncake re-reads its pinned index on the event: index 3 (::ffff:10.0.0.7), republished"),
      std::string::npos)
      << r.out;
}

TEST_F(WatchStacks, TheJsonChangeCarriesEachStack) {
  const CliResult r = watch({"--stacks", "--no-env", "--json"}, "\"event\":\"change\"");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::istringstream lines(r.out);
  std::string line;
  nlohmann::json change;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("event") == "change") change = j;
  }
  ASSERT_TRUE(change.is_object()) << r.out;
  ASSERT_TRUE(change.at("stacks").is_array()) << change.dump();
  bool nccl = false;
  bool mooncake = false;
  for (const auto& s : change.at("stacks")) {
    if (s.at("stack") == "nccl") {
      nccl = true;
      EXPECT_EQ(s.at("reselects"), "per connection");
      EXPECT_EQ(s.at("before"), 3);
      EXPECT_EQ(s.at("before_gid"), "::ffff:10.0.0.1");
      EXPECT_EQ(s.at("now_at_before"), "::ffff:10.0.0.7");
      EXPECT_EQ(s.at("moved"), true);
      EXPECT_EQ(s.at("stale_while_up"), true);
      EXPECT_TRUE(s.at("pinned").is_null());
    }
    if (s.at("stack") == "mooncake") {
      mooncake = true;
      EXPECT_EQ(s.at("reselects"), "on the change event");
      EXPECT_EQ(s.at("stale_while_up"), false);
    }
    EXPECT_NE(s.at("stack"), "jaccl");
  }
  EXPECT_TRUE(nccl && mooncake) << change.dump();
}
#endif

TEST_F(WatchStacks, TheEnvOptionsWithoutStacksAreRefused) {
  refused(run_cli({"watch", "--no-env"}), "--env-file and --no-env are for --stacks");
}

TEST_F(WatchStacks, CheckPinsSaysWhatAPinDoesOnAChange) {
  const auto env = write("run.env", std::string(stack_vars::kNcclGidIndex) + "=3\n");
  const auto table = test_data_dir() / "watch" / "roce-1-start.json";
  const CliResult r =
      run_cli({"check", "--pins", "--no-env", "--env-file", env.string(), "--input", table.string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(
                "    on a GID change: NCCL keeps the pinned index and reads the GID there again for each new "
                "connection"),
            std::string::npos)
      << r.out;
  const CliResult j = run_cli(
      {"check", "--pins", "--no-env", "--json", "--env-file", env.string(), "--input", table.string()});
  EXPECT_EQ(j.exit_code, 0) << j.out << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_FALSE(doc.at("pins").empty()) << j.out;
  for (const auto& row : doc.at("pins")) {
    ASSERT_TRUE(row.contains("on_change")) << row.dump();
    if (row.at("reader").get<std::string>().rfind("NCCL", 0) == 0) {
      EXPECT_EQ(row.at("on_change").at("reselects"), "per connection") << row.dump();
    }
  }
}

}  // namespace
}  // namespace gidpolicy::test
