// `gidpolicy fleet` and `show --json`'s host field: exit codes as `simulate`, the
// grouped summary, the streamed --json document and the --svg matrix, on the JACCL example
// (examples/fleet/jaccl: the device file from JACCL's documentation over four Macs, one with
// its mapped GIDs at index 2).
#include "cli_run.hpp"
#include "support/files.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

namespace gidpolicy::test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

fs::path jaccl_dir() { return example_tables_dir().parent_path() / "fleet" / "jaccl"; }
std::string devices() { return (jaccl_dir() / "devices.json").string(); }
std::string hosts() { return (jaccl_dir() / "hosts").string(); }

TEST(Fleet, JacclProfileFailsExactlyTheMappedAtTwoHostsLinksExitOne) {
  const auto r = run_cli({"fleet", "--jaccl-devices", devices(), "--profile", "jaccl", hosts()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("jaccl-mesh of 4 hosts, profile jaccl: 3 of 6 links connected"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(
                "rdma_en3 on 1 host (m3-ultra-3): RTR from sgid_index 1 failed: EINVAL (22): sgid_index 1 is "
                "empty -> 1 link fails"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(Fleet, AutoProfileConnectsEveryLinkExitZero) {
  const auto r = run_cli({"fleet", "--jaccl-devices", devices(), "--profile", "auto", hosts()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "jaccl-mesh of 4 hosts, profile auto: 6 of 6 links connected\n");
}

TEST(Fleet, DeviceFileFromJacclsEnvironmentVariable) {
  const auto r = run_program(cli_path(), {"fleet", "--topology", "jaccl", "--profile", "jaccl", hosts()},
                             {"MLX_IBV_DEVICES=" + devices()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("3 of 6 links connected"), std::string::npos) << r.out;
  const auto ring = run_program(cli_path(), {"fleet", "--topology", "jaccl", "--profile", "jaccl", hosts()},
                                {"JACCL_IBV_DEVICES=" + devices(), "JACCL_RING=1"});
  EXPECT_NE(ring.out.find("jaccl-ring of 4 hosts, profile jaccl: 2 of 4 links connected"), std::string::npos)
      << ring.out << ring.err;
}

// The hostfile mlx.distributed_config writes (tests/data/fleet/mlx-hostfile.json, laid out as MLX
// writes it, "backend" and "envs" included) stands for the same device matrix as devices.json.
std::string mlx_hostfile() { return (test_data_dir() / "fleet" / "mlx-hostfile.json").string(); }

TEST(Fleet, MlxHostfileIsTheDeviceFileItsRdmaRowsForm) {
  const auto r = run_cli({"fleet", "--hostfile", mlx_hostfile(), "--profile", "jaccl", hosts()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("jaccl-mesh of 4 hosts, profile jaccl: 3 of 6 links connected"), std::string::npos)
      << r.out << r.err;
  const auto as_devices = run_cli({"fleet", "--jaccl-devices", devices(), "--profile", "jaccl", hosts()});
  EXPECT_EQ(r.out, as_devices.out);
  // Wherever a device file is accepted, a hostfile is: --jaccl-devices and MLX_IBV_DEVICES too.
  const auto via_env = run_program(cli_path(), {"fleet", "--topology", "jaccl", "--profile", "auto", hosts()},
                                   {"MLX_IBV_DEVICES=" + mlx_hostfile()});
  EXPECT_EQ(via_env.exit_code, 0) << via_env.err;
  EXPECT_EQ(via_env.out, "jaccl-mesh of 4 hosts, profile auto: 6 of 6 links connected\n");
}

TEST(Fleet, MlxHostfileWithAnotherHostCountIsRefusedNamingBoth) {
  const auto r =
      run_cli({"fleet", "--hostfile", mlx_hostfile(), (jaccl_dir() / "hosts" / "m3-ultra-1.json").string(),
               (jaccl_dir() / "hosts" / "m3-ultra-2.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("mlx-hostfile.json: 4 hosts but 2 snapshots were given"), std::string::npos) << r.err;
}

TEST(Fleet, JsonListsCausesSidesAndEveryFailedLink) {
  const auto r = run_cli({"fleet", "--jaccl-devices", devices(), "--profile", "jaccl", "--json", hosts()});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["schema"], "gidpolicy.fleet");
  EXPECT_EQ(j["version"], 2);
  EXPECT_TRUE(j["host"].is_null());  // many hosts: each side names its own
  EXPECT_EQ(j["source"], "4 host snapshots");
  EXPECT_EQ(j["topology"], "jaccl-mesh");
  EXPECT_EQ(j["links"], 6);
  EXPECT_EQ(j["connected"], 3);
  EXPECT_EQ(j["failed"], 3);
  EXPECT_EQ(j["sides"].size(), 12u);  // 4 Macs x 3 Thunderbolt ports
  ASSERT_EQ(j["links_detail"].size(), 3u);
  for (const auto& l : j["links_detail"]) {
    EXPECT_TRUE(l["a"] == "m3-ultra-3" || l["b"] == "m3-ultra-3") << l.dump();
    EXPECT_EQ(l["a_to_b"]["outcome"], "rtr_error");
    EXPECT_EQ(l["a_to_b"]["by"], "m3-ultra-3");
    const auto& cause = j["causes"][l["a_to_b"]["cause"].get<std::size_t>()];
    EXPECT_EQ(cause["errno"], 22);
    EXPECT_EQ(cause["errno_name"], "EINVAL");
  }
  const auto all = run_cli({"fleet", "--jaccl-devices", devices(), "--json", "--all-links", hosts()});
  EXPECT_EQ(Json::parse(all.out)["links_detail"].size(), 6u);
}

TEST(Fleet, TextOutputIsBoundedWithCountsPastTheLimit) {
  const auto r =
      run_cli({"fleet", "--jaccl-devices", devices(), "--profile", "jaccl", "--limit", "1", hosts()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("... and 2 more causes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failed links (first 1 of 3)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("... and 2 more failed links"), std::string::npos) << r.out;
}

class FleetOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gidpolicy-fleet-cli-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FleetOutput, SvgMatrixWithCausesOnHoverWrittenAtomically) {
  const fs::path svg = dir_ / "fabric.svg";
  const fs::path report = dir_ / "report.txt";
  const auto r = run_cli({"fleet", "--jaccl-devices", devices(), "--profile", "jaccl", "--svg", svg.string(),
                          "--output", report.string(), hosts()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(r.out.empty());
  const std::string text = read_file(svg);
  EXPECT_EQ(text.rfind("<svg ", 0), 0u);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
  EXPECT_NE(
      text.find("<title>m3-ultra-1 -&gt; m3-ultra-3: rtr_error: m3-ultra-3 rdma_en4: RTR from sgid_index 1 "
                "failed: EINVAL (22): sgid_index 1 is empty</title>"),
      std::string::npos);
  EXPECT_NE(text.find("<title>m3-ultra-1 -&gt; m3-ultra-2: connected</title>"), std::string::npos);
  EXPECT_NE(read_file(report).find("3 of 6 links connected"), std::string::npos);
  // Only the two outputs: no temporary file left beside them.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 2u);
}

TEST_F(FleetOutput, AFailedWriteLeavesNoFileAndExitsTwo) {
  const fs::path svg = dir_ / "missing-dir" / "fabric.svg";
  const auto r = run_cli({"fleet", "--jaccl-devices", devices(), "--svg", svg.string(), hosts()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("output error: --svg " + svg.string() + ": the directory"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("missing-dir does not exist"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(FleetOutput, MalformedSnapshotNamesFileAndFieldExitTwo) {
  std::ofstream(dir_ / "bad.json")
      << R"({"device": "mlx5_0", "port": 1, "entries": [{"index": 0, "gid": "nope"}]})";
  std::ofstream(dir_ / "good.json") << R"({"device": "mlx5_0", "port": 1, "entries": []})";
  const auto r = run_cli({"fleet", dir_.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.json: port.entries[0].gid: "), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

// Hosts whose snapshots were made from one example table all advertise ::ffff:200.0.209.6: the
// fabric model connects them, the fleet reports the duplicate, names the hosts and exits 1.
class FleetConflictsCli : public FleetOutput {
 protected:
  void snapshot(const std::string& host, const char* table) {
    const auto r =
        run_cli({"show", "--json", "--host", host, "--input", (example_tables_dir() / table).string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ofstream(dir_ / (host + ".json")) << r.out;
  }
};

TEST_F(FleetConflictsCli, TwoHostsFromOneExampleTableAreADuplicateAddressExitOne) {
  snapshot("node-a", "nccl-769.devinfo.txt");
  snapshot("node-b", "nccl-769.devinfo.txt");
  const auto r = run_cli({"fleet", dir_.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  for (const char* want :
       {"0 of 1 links connected reliably; 1 more connect over a GID another host also holds",
        "fleet-wide conflicts:",
        "error: GID ::ffff:200.0.209.6 (200.0.209.6) on 2 hosts "
        "(node-a, node-b)",
        "1 link not reliably connected"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  const auto j = run_cli({"fleet", "--json", "--all-links", dir_.string()});
  EXPECT_EQ(j.exit_code, 1) << j.err;
  const Json doc = Json::parse(j.out);
  EXPECT_EQ(doc["ok"], false);
  EXPECT_EQ(doc["connected"], 1);
  EXPECT_EQ(doc["unreliable"], 1);
  ASSERT_EQ(doc["conflicts"].size(), 1u);
  const Json& c = doc["conflicts"][0];
  EXPECT_EQ(c["kind"], "duplicate_address");
  EXPECT_EQ(c["fatal"], true);
  EXPECT_EQ(c["gids"], Json::array({"::ffff:200.0.209.6"}));
  EXPECT_EQ(c["hosts"], Json::array({"node-a", "node-b"}));
  EXPECT_EQ(c["host_count"], 2);
  EXPECT_EQ(c["links"], 1);
  ASSERT_EQ(doc["links_detail"].size(), 1u);
  EXPECT_EQ(doc["links_detail"][0]["connected"], true);
  EXPECT_EQ(doc["links_detail"][0]["conflict"], 0);
}

TEST_F(FleetConflictsCli, DistinctTablesHaveNoSuchFinding) {
  snapshot("node-a", "nccl-769.devinfo.txt");
  snapshot("node-b", "nccl-1573-pod.show_gids.txt");
  const auto r = run_cli({"fleet", dir_.string()});
  EXPECT_EQ(r.out.find("conflicts"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("reliably"), std::string::npos) << r.out;
  const Json doc = Json::parse(run_cli({"fleet", "--json", dir_.string()}).out);
  EXPECT_TRUE(doc["conflicts"].empty());
  EXPECT_EQ(doc["unreliable"], 0);
  // The JACCL example's four Macs: distinct addresses, every link connects under auto.
  const auto macs = run_cli({"fleet", "--jaccl-devices", devices(), "--profile", "auto", "--json", hosts()});
  EXPECT_EQ(macs.exit_code, 0) << macs.out;
  EXPECT_TRUE(Json::parse(macs.out)["conflicts"].empty());
}

TEST_F(FleetConflictsCli, TwoThousandClonesAreOneGroupedFindingNotTwoThousandLines) {
  snapshot("node0", "nccl-769.devinfo.txt");
  std::ifstream in(dir_ / "node0.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (int h = 1; h < 2000; ++h) {
    std::string copy = text;
    copy.replace(copy.find("\"node0\""), 7, "\"node" + std::to_string(h) + "\"");
    std::ofstream(dir_ / ("node" + std::to_string(h) + ".json")) << copy;
  }
  const auto r = run_cli({"fleet", dir_.string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("0 of 1999000 links connected reliably; 1999000 more connect"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("on 2000 hosts (node0, node1, node2, node3, node4, ...)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1999000 links not reliably connected"), std::string::npos) << r.out;
  // The summary, the one conflict, and --limit (20) of the links it touches, then a count.
  EXPECT_NE(r.out.find("links not reliably connected (first 20 of 1999000):\n  node0 mlx5_bond_0 <-> node1 "
                       "mlx5_bond_0: node0 advertises ::ffff:200.0.209.6, which 2000 hosts hold; node1 "
                       "advertises ::ffff:200.0.209.6, which 2000 hosts hold\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  ... and 1998980 more"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3 + 1 + 20 + 1) << r.out;
}

TEST(Fleet, ShowJsonRecordsTheHost) {
  const auto r = run_cli({"show", "--json", "--host", "node42", "--input",
                          (example_tables_dir() / "macmini-mapped-at-2.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["schema"], "gidpolicy.tables");
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["host"], "node42");
  ASSERT_TRUE(j["ports"].is_array());
  EXPECT_EQ(j["ports"][0]["device"], "rdma_en2");  // a port's keys unchanged
  EXPECT_EQ(j["ports"][0]["lid"], 0);
  // A pasted table does not claim to be this machine's.
  const auto pasted =
      run_cli({"show", "--json", "--input", (example_tables_dir() / "macmini-mapped-at-2.json").string()});
  EXPECT_TRUE(Json::parse(pasted.out)["host"].is_null());
}

// The fleet reads this version's `show --json` (the tables document, its "host" naming the host)
// beside the previous shape (a bare port object) that clusters keep on disk.
TEST_F(FleetOutput, ReadsTheNewSnapshotBesideTheOldShape) {
  const auto shown = run_cli({"show", "--json", "--host", "node-new", "--input",
                              (example_tables_dir() / "macmini-mapped-at-2.json").string()});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  std::ofstream(dir_ / "new.json") << shown.out;
  Json old_port = Json::parse(shown.out)["ports"][0];
  old_port["host"] = "node-old";
  std::ofstream(dir_ / "old.json") << old_port.dump();
  const auto r = run_cli({"fleet", "--json", dir_.string()});
  ASSERT_NE(r.exit_code, 2) << r.err;
  const Json doc = Json::parse(r.out);
  EXPECT_EQ(doc["schema"], "gidpolicy.fleet");
  EXPECT_EQ(doc["version"], 2);
  EXPECT_EQ(doc["hosts"], 2);
  std::set<std::string> hosts;
  for (const auto& side : doc["sides"]) hosts.insert(side["host"].get<std::string>());
  EXPECT_EQ(hosts, (std::set<std::string>{"node-new", "node-old"}));
}

TEST(Fleet, UsageErrors) {
  const auto no_file = run_cli({"fleet", "--topology", "jaccl", hosts()});
  EXPECT_EQ(no_file.exit_code, 2);
  EXPECT_NE(no_file.err.find("--jaccl-devices"), std::string::npos) << no_file.err;
  const auto one = run_cli({"fleet", (jaccl_dir() / "hosts" / "m3-ultra-1.json").string()});
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.err.find("at least two hosts"), std::string::npos) << one.err;
}

}  // namespace
}  // namespace gidpolicy::test
