// What `check --pins`, `env` and `doctor` read besides the tables: env files (a FIFO, compose's
// dotenv rules, nested defaults), the device selectors `env` prints, and the rank options.
// Every run is under timeout(1): a reader that blocks on a FIFO ends as a failure (124), not a
// hung test; 60 s is a hang guard only (a right run takes well under a second).
#include "cli_run.hpp"
#include "cli_scratch.hpp"

#include "support/files.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace gidpolicy::test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string pod_table() { return (example_tables_dir() / "nccl-1573-pod.show_gids.txt").string(); }

class EnvInputs : public CliScratchTest {
 protected:
  EnvInputs() : CliScratchTest("gidpolicy-env-inputs-") {}
  static CliResult run(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    std::vector<std::string> a{"60", cli_path().string()};
    a.insert(a.end(), args.begin(), args.end());
    return run_program("/usr/bin/timeout", a, env);
  }
  /// `check --pins --json --env-file FILE`: each variable's value as read.
  std::map<std::string, std::string> pins_of(const fs::path& file) {
    const auto r = run({"check", "--pins", "--json", "--env-file", file.string(), "--input", pod_table()});
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    std::map<std::string, std::string> out;
    const Json j = Json::parse(r.out, nullptr, false);
    if (!j.is_object() || !j.contains("pins") || !j["pins"].is_array()) {
      ADD_FAILURE() << r.out << r.err;
      return out;
    }
    for (const auto& p : j["pins"]) out[p["variable"].get<std::string>()] = p["value"].get<std::string>();
    return out;
  }
};

// A FIFO used to be opened as a stream and read: with no writer that waits forever. It is
// refused at once now, as a non-regular --input is.
TEST_F(EnvInputs, AFifoEnvFileIsRefusedAtOnce) {
  const fs::path fifo = dir_ / "pins.env";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto r = run({"check", "--pins", "--env-file", fifo.string(), "--input", pod_table()});
  refused(r, fifo.string() + ": not a regular file");
}

// dotenv as compose reads it: " #" starts a comment in an unquoted value only; a '#' inside
// quotes or without a space before it is the value's.
TEST_F(EnvInputs, DotenvCommentsAreReadAsComposeReadsThem) {
  const auto pins = pins_of(write("pins.env",
                                  "NCCL_IB_GID_INDEX=7 # the pod's v2 entry\n"
                                  "UCX_IB_GID_INDEX=\"7 # inside quotes\"   # after them\n"
                                  "MC_GID_INDEX=3#4\n"
                                  "FI_VERBS_GID_IDX='5 # single' \n"));
  EXPECT_EQ(pins.at("NCCL_IB_GID_INDEX"), "7");
  EXPECT_EQ(pins.at("UCX_IB_GID_INDEX"), "7 # inside quotes");
  EXPECT_EQ(pins.at("MC_GID_INDEX"), "3#4");
  EXPECT_EQ(pins.at("FI_VERBS_GID_IDX"), "5 # single");
}

// ${A:-${B:-3}}: compose interpolates the default in turn; the first '}' used to end it.
TEST_F(EnvInputs, NestedDefaultsAreInterpolatedAsComposeDoesWithADepthBound) {
  const std::string nested = "${GIDPOLICY_TEST_UNSET_A:-${GIDPOLICY_TEST_UNSET_B:-3}}";
  EXPECT_EQ(pins_of(write("pins.env", "MC_GID_INDEX=" + nested + "\n")).at("MC_GID_INDEX"), "3");
  EXPECT_EQ(pins_of(write("docker-compose.yml",
                          "services:\n  trainer:\n    environment:\n      MC_GID_INDEX: " + nested + "\n"))
                .at("MC_GID_INDEX"),
            "3");
  // The file's own earlier variables are looked up too (after the environment).
  EXPECT_EQ(pins_of(write("pins.env", "IDX=7\nNCCL_IB_GID_INDEX=${IDX}\n")).at("NCCL_IB_GID_INDEX"), "7");
  std::string deep = "1";
  for (int i = 0; i < 17; ++i) deep = "${GIDPOLICY_TEST_UNSET_" + std::to_string(i) + ":-" + deep + "}";
  const fs::path f = write("deep.env", "\nMC_GID_INDEX=" + deep + "\n");
  refused(run({"check", "--pins", "--env-file", f.string(), "--input", pod_table()}),
          f.string() + ":2: defaults nested deeper than 16 levels");
}

// A reference copies a whole value: `B=$A$A...` lines would double a file's size line after
// line. Each value once interpolated is bounded, and so are all of them together, with the line.
TEST_F(EnvInputs, ValuesThatGrowByInterpolationAreBounded) {
  const std::string a = "A=" + std::string(1000, 'x') + "\n";
  std::string refs;
  for (int i = 0; i < 66; ++i) refs += "${A}";  // 66,000 bytes
  const fs::path one = write("one.env", a + "NCCL_IB_GID_INDEX=" + refs + "\n");
  refused(run({"check", "--pins", "--env-file", one.string(), "--input", pod_table()}),
          one.string() + ":2: the value is longer than 65536 bytes once interpolated");
  refs.clear();
  for (int i = 0; i < 60; ++i) refs += "$A";  // 60,000 bytes, under the bound for one value
  std::string text = a;
  for (int i = 0; i < 80; ++i) text += "V" + std::to_string(i) + "=" + refs + "\n";
  // 1,000 + 60,000 x 70 bytes pass 4 MiB at the 70th V, line 71.
  const fs::path all = write("all.env", text);
  refused(run({"check", "--pins", "--env-file", all.string(), "--input", pod_table()}),
          all.string() + ":71: the values are longer than 4194304 bytes in all once interpolated");
}

// A parse error names file:line and quotes the line's text escaped, never its raw bytes.
TEST_F(EnvInputs, ADotenvErrorQuotesTheLineEscaped) {
  const fs::path f = write("bad.env", "A=1\nNO\x1b[2J EQUALS\n");
  refused(run({"check", "--pins", "--env-file", f.string(), "--input", pod_table()}),
          f.string() + ":2: expected KEY=VALUE, found NO\\e[2J EQUALS");
  const fs::path k = write("key.env", "B\x07D=1\n");
  refused(run({"check", "--pins", "--env-file", k.string(), "--input", pod_table()}),
          k.string() + ":1: key: expected a variable name before '='");
}

}  // namespace
}  // namespace gidpolicy::test

namespace gidpolicy::test {
namespace {

std::string two_hcas() { return (test_data_dir() / "stacks" / "env" / "two-hcas.show_gids.txt").string(); }

// `env --for STACK` on a host whose first HCA has nothing usable pins index 3 and names the second
// HCA in the stack's device variable; that file fed back to `check --pins` used to fail on the
// first HCA, which the stack never opens. Without the device line it still fails (the gate is
// real).
TEST_F(EnvInputs, EnvsOwnSettingsPassCheckPinsWhereTheSelectedHcaIsNotTheFirst) {
  for (const char* stack : {"nccl", "nvshmem", "ucx", "llama.cpp"}) {
    const auto env = run({"env", "--for", stack, "--format", "dotenv", "--input", two_hcas()});
    ASSERT_EQ(env.exit_code, 0) << stack << env.err;
    const fs::path file = write(std::string(stack) + ".env", env.out);
    const auto r = run({"check", "--pins", "--json", "--env-file", file.string(), "--input", two_hcas()});
    EXPECT_EQ(r.exit_code, 0) << stack << "\n" << env.out << r.out << r.err;
    const Json j = Json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("pins") && j["pins"].is_array()) << r.out;
    bool unused = false;
    for (const auto& p : j["pins"]) {
      if (p["device"] == "mlx5_0") {
        EXPECT_EQ(p["status"], "unused") << stack << p.dump();
        unused = true;
      } else if (p["origin"].get<std::string>().find(file.string()) == 0) {
        EXPECT_EQ(p["status"], "fine") << stack << p.dump();
      }
    }
    EXPECT_TRUE(unused) << stack << r.out;
    // The same pin without its device line is judged on mlx5_0 too, and is stale there.
    std::string pins_only;
    for (std::size_t p = 0; p < env.out.size();) {
      const std::size_t e = env.out.find('\n', p);
      const std::string line = env.out.substr(p, e - p);
      if (line.find("_GID") != std::string::npos) pins_only += line + "\n";
      p = e == std::string::npos ? env.out.size() : e + 1;
    }
    const fs::path bare = write(std::string(stack) + "-pin.env", pins_only);
    EXPECT_EQ(run({"check", "--pins", "--env-file", bare.string(), "--input", two_hcas()}).exit_code, 1)
        << stack << pins_only;
  }
}

// The doctor reads the same selectors from the environment: no stale pin on the HCA NCCL leaves out.
// The environment is this host's, so the table is declared this host's (--this-host).
TEST_F(EnvInputs, TheDoctorJudgesAPinOnlyWhereItsStackSelects) {
  const auto codes = [&](const std::vector<std::string>& env) {
    const auto r = run({"doctor", "--json", "--this-host", "--input", two_hcas()}, env);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    std::vector<std::string> out;
    const Json j = Json::parse(r.out, nullptr, false);
    if (j.is_object())
      for (const auto& f : j["findings"])
        if (f["code"] == "stale_pin") out.push_back(f["device"].get<std::string>());
    return out;
  };
  EXPECT_EQ(codes({"NCCL_IB_GID_INDEX=3", "NCCL_IB_HCA==mlx5_1:1"}), std::vector<std::string>{});
  EXPECT_EQ(codes({"NCCL_IB_GID_INDEX=3"}),
            (std::vector<std::string>{"mlx5_0", "mlx5_0"}));  // NCCL and Mooncake
}

}  // namespace
}  // namespace gidpolicy::test

namespace gidpolicy::test {
namespace {

std::string jaccl_devices() {
  return (example_tables_dir().parent_path() / "fleet" / "jaccl" / "devices.json").string();
}
std::string jaccl_host() { return (test_data_dir() / "stacks" / "jaccl" / "m3-ultra-1.json").string(); }

// A hostfile of 100 hosts (routes to 99 peers) used to be refused: "at most 64 peers", a bound
// documented nowhere. kMaxRoutedPeers (16,384) is the bound now, and past it the count is named.
TEST_F(EnvInputs, TheDoctorRoutesAHundredHostHostfileAndNamesItsBound) {
  const auto hostfile = [&](int hosts, int ips) {
    std::string text = "{\"hosts\": [";
    for (int i = 0; i < hosts; ++i) {
      text += std::string(i ? "," : "") + "{\"ssh\": \"h" + std::to_string(i) + "\", \"ips\": [";
      for (int k = 0; k < ips; ++k)
        text += std::string(k ? "," : "") + "\"10." + std::to_string(k) + "." + std::to_string(i / 200) +
                "." + std::to_string(i % 200 + 1) + "\"";
      text += "]}";
    }
    return write("hosts-" + std::to_string(hosts) + "x" + std::to_string(ips) + ".json", text + "]}");
  };
  // Routes are this host's: the table is declared this host's (--this-host).
  const auto r = run({"doctor", "--json", "--this-host", "--input", pod_table(), "--hostfile",
                      hostfile(100, 1).string(), "--rank", "0"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  const Json j = Json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["peers"].size(), 99u);
  // 4,096 hosts with 5 addresses each: 20,475 peers, past the bound (refused before any route).
  refused(run({"doctor", "--input", pod_table(), "--hostfile", hostfile(4096, 5).string(), "--rank", "0"}),
          "20475 peers to route: at most 16384");
}

// --rank without the file it is a row of was ignored by doctor (env refused it).
TEST_F(EnvInputs, ARankWithoutItsFileIsRefusedByEnvAndDoctor) {
  refused(run({"doctor", "--input", pod_table(), "--rank", "1"}),
          "doctor --rank: give the file it is a row of, with --hostfile FILE or --jaccl-devices FILE");
  refused(run({"env", "--for", "jaccl", "--rank", "0", "--input", jaccl_host()}),
          "env --rank: give the device file with --jaccl-devices FILE");
}

// MLX_RANK=' 1' was read as 1 by doctor (strtoul) and refused by env: one reading now
// (fleet::parse_rank), digits only, in both; JACCL_RANK first in both.
TEST_F(EnvInputs, RankVariablesAreReadAlikeByEnvAndDoctor) {
  // The value is shown as one shell word: a space in it is seen.
  const std::map<std::string, std::string> shown{
      {" 1", "' 1'"}, {"+1", "+1"}, {"1 ", "'1 '"}, {"0x1", "0x1"}, {"4096", "4096"}};
  for (const auto& [bad, as] : shown) {
    refused(run({"env", "--for", "jaccl", "--jaccl-devices", jaccl_devices(), "--input", jaccl_host()},
                {"MLX_RANK=" + bad}),
            "MLX_RANK " + as + ": expected a rank 0..3 of " + jaccl_devices());
    refused(run({"doctor", "--input", jaccl_host(), "--jaccl-devices", jaccl_devices()}, {"MLX_RANK=" + bad}),
            "MLX_RANK " + as + ": expected a rank 0..3 of " + jaccl_devices());
  }
  refused(run({"doctor", "--input", jaccl_host(), "--jaccl-devices", jaccl_devices()},
              {"MLX_RANK=1", "JACCL_RANK=9"}),
          "JACCL_RANK 9: expected a rank 0..3 of " + jaccl_devices());
  const auto ok =
      run({"doctor", "--json", "--input", jaccl_host(), "--jaccl-devices", jaccl_devices()}, {"MLX_RANK=0"});
  EXPECT_TRUE(ok.exit_code == 0 || ok.exit_code == 1) << ok.err;
}

}  // namespace
}  // namespace gidpolicy::test
