// --bundle FILE on the CLI: `doctor` judges the host the bundle was collected on (its tables,
// interfaces, routes and environment, never this machine's or this process's), and `check`,
// `show`, `select` and `explain-errno` take their tables (and `check --pins` its pins) from it.
// The bundles are tests/data/bundle/ (docs/bundle.md says what each is built from).
#include "cli_run.hpp"

#include "support/files.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gidpolicy::test {
namespace bundle_cli_test {

using Json = nlohmann::json;

std::string bundle(const char* name) { return (test_data_dir() / "bundle" / name).string(); }

Json parsed(const CliResult& r) {
  Json j = Json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  return j;
}

std::vector<std::string> codes(const Json& j) {
  std::vector<std::string> out;
  if (j.is_object() && j.contains("findings"))
    for (const auto& f : j["findings"]) out.push_back(f["code"].get<std::string>());
  return out;
}

TEST(BundleCli, DoctorJudgesTheBundlesHostAndSaysWhichItIs) {
  const std::string b = bundle("linux-ready.bundle");
  const CliResult text = run_cli({"doctor", "--bundle", b});
  EXPECT_EQ(text.exit_code, 0) << text.out << text.err;
  EXPECT_EQ(text.out.rfind("READY: 0 blockers, 0 warnings (Linux commands; " + b +
                               ", host gpu-node-07, Debian GNU/Linux 12 (bookworm))\n",
                           0),
            0u)
      << text.out;
  EXPECT_NE(text.out.find("mlx5_1 port 1: active, ethernet, net2, 4 GIDs (2 routable)"), std::string::npos)
      << text.out;
  const CliResult json = run_cli({"doctor", "--bundle", b, "--json"});
  const Json j = parsed(json);
  EXPECT_EQ(j["ready"], true);
  EXPECT_EQ(j["platform"], "linux");
  EXPECT_EQ(j["bundle"]["host"], "gpu-node-07");
  EXPECT_EQ(j["bundle"]["tables_from"], "sysfs_gids");
  EXPECT_EQ(j["bundle"]["not_collected"],
            Json::array({"rdma_link: exit 1: Failed to open NETLINK_RDMA socket"}));
  EXPECT_EQ(j["not_checked"], Json::array());
  // Not a bundle: the key is there, null (one shape for every source).
  const Json live = parsed(
      run_cli({"doctor", "--input", (example_tables_dir() / "nccl-769.devinfo.txt").string(), "--json"}));
  EXPECT_TRUE(live.contains("bundle") && live["bundle"].is_null());
}

TEST(BundleCli, ThisProcesssPinsAreNotTheBundlesHosts) {
  // NCCL_IB_GID_INDEX=3 here would be stale on that host; the bundle's environment has none.
  const CliResult r =
      run_program(cli_path(), {"doctor", "--bundle", bundle("linux-ready.bundle")}, {"NCCL_IB_GID_INDEX=3"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // And the one the bundle carries is judged, with the variable unset here.
  const CliResult stale = run_cli({"doctor", "--bundle", bundle("linux-stale-pin.bundle"), "--json"});
  EXPECT_EQ(stale.exit_code, 1) << stale.out << stale.err;
  const auto c = codes(parsed(stale));
  EXPECT_NE(std::find(c.begin(), c.end(), "stale_pin"), c.end()) << stale.out;
  const CliResult pins = run_cli({"check", "--pins", "--bundle", bundle("linux-stale-pin.bundle")});
  EXPECT_EQ(pins.exit_code, 1) << pins.out << pins.err;
  EXPECT_NE(pins.out.find("linux-stale-pin.bundle's environment"), std::string::npos) << pins.out;
}

TEST(BundleCli, APeerIsRoutedByTheBundlesRoutingTable) {
  const CliResult r =
      run_cli({"doctor", "--bundle", bundle("linux-ready.bundle"), "--peer", "10.152.4.99", "--json"});
  const Json j = parsed(r);
  ASSERT_EQ(j["peers"].size(), 1u) << r.out;
  EXPECT_EQ(j["peers"][0]["netdev"], "net2");  // the bundle's 10.152.4.0/24 route, not this machine's
  EXPECT_EQ(j["peers"][0]["port"], "mlx5_1 port 1");
  EXPECT_EQ(j["peers"][0]["routed"], true);
}

TEST(BundleCli, CheckShowSelectAndExplainTakeTheBundlesTables) {
  const std::string b = bundle("linux-stale-pin.bundle");
  const CliResult check = run_cli({"check", "--bundle", b, "--profile", "auto"});
  EXPECT_NE(check.out.find("mlx5_0 port 1"), std::string::npos) << check.out << check.err;
  EXPECT_NE(check.out.find("::ffff:10.152.0.12"), std::string::npos) << check.out;
  const CliResult show = run_cli({"show", "--bundle", b, "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const Json s = parsed(show);
  EXPECT_EQ(s["host"], "gpu-node-08");  // the bundle's host names the tables for `fleet`
  EXPECT_EQ(s["source"], b + " (host gpu-node-08)");
  EXPECT_TRUE(s["ports"].is_array());
  const CliResult select = run_cli({"select", "--bundle", b, "--device", "mlx5_1", "--profile", "auto"});
  EXPECT_EQ(select.exit_code, 0) << select.err;
  EXPECT_NE(select.out.find("::ffff:10.152.4.12"), std::string::npos) << select.out;
  const CliResult explain =
      run_cli({"explain-errno", "61", "--bundle", b, "--device", "mlx5_0", "--sgid-index", "3"});
  EXPECT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_NE(explain.out.find("index 3"), std::string::npos) << explain.out;
}

TEST(BundleCli, ABadBundleIsAUsageErrorNamingTheFileAndLine) {
  const CliResult table =
      run_cli({"doctor", "--bundle", (example_tables_dir() / "nccl-769.devinfo.txt").string()});
  EXPECT_EQ(table.exit_code, 2);
  EXPECT_NE(
      table.err.find("nccl-769.devinfo.txt:1: expected the bundle's first line '# gidpolicy-collect 1'"),
      std::string::npos)
      << table.err;
  const CliResult both =
      run_cli({"check", "--bundle", bundle("linux-ready.bundle"), "--input", bundle("linux-ready.bundle")});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("give one source"), std::string::npos) << both.err;
  const CliResult doctor_both =
      run_cli({"doctor", "--bundle", bundle("linux-ready.bundle"), "--sysfs", "/nonexistent"});
  EXPECT_EQ(doctor_both.exit_code, 2);
  const CliResult zero = run_cli({"doctor", "--bundle", "/dev/zero"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(
      zero.err.find("/dev/zero:1:1: binary data (byte 0x00), not a bundle: gidpolicy-collect writes text"),
      std::string::npos)
      << zero.err;
  const CliResult missing = run_cli({"show", "--bundle", "/nonexistent.bundle"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/nonexistent.bundle"), std::string::npos) << missing.err;
  // A host with no RDMA port: `check` has no table to judge and says where to look.
  const CliResult none = run_cli({"check", "--bundle", bundle("linux-no-rdma.bundle")});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("lists no RDMA port"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("gidpolicy doctor --bundle"), std::string::npos) << none.err;
}

// The acceptance scenarios on a Mac, from bundles built of public macOS tool output: each is
// reported with its cause and the Mac's commands, and the ready Mac exits 0.
TEST(BundleCli, EachMacScenarioGetsItsCauseAndTheMacsCommands) {
  struct Case {
    const char* bundle;
    int exit_code;
    const char* line;  // a line of the report that says the cause
    const char* command;
  };
  const Case cases[] = {
      {"mac-ready.bundle", 0, "READY: 0 blockers, 0 warnings, 3 notes (macOS commands; ", ""},
      {"mac-no-ipv4.bundle", 1,
       "1. blocker: rdma_en3 port 1: en3 has no IPv4 address, so the port has no ::ffff:a.b.c.d GID",
       "sudo ifconfig en3 inet 192.168.200.1 netmask 255.255.255.252 alias"},
      {"mac-bridge.bundle", 1, "1. blocker: en2 is a member of bridge0",
       "sudo networksetup -setnetworkserviceenabled \"Thunderbolt Bridge\" off"},
      {"mac-rdma-disabled.bundle", 1,
       "1. blocker: RDMA over Thunderbolt is disabled (rdma_ctl status: disabled)", "rdma_ctl enable"},
      {"mac-tb4.bundle", 1,
       "1. blocker: no RDMA device is listed, and system_profiler reports Thunderbolt 4 (40 Gb/s): this Mac "
       "has no "
       "RDMA over Thunderbolt",
       "ibv_devices"},
  };
  for (const Case& c : cases) {
    const CliResult r = run_cli({"doctor", "--bundle", bundle(c.bundle)});
    EXPECT_EQ(r.exit_code, c.exit_code) << c.bundle << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find(c.line), std::string::npos) << c.bundle << "\n" << r.out;
    EXPECT_NE(r.out.find(c.command), std::string::npos) << c.bundle << "\n" << r.out;
    EXPECT_EQ(r.out.find(" ip "), std::string::npos) << c.bundle << ": a Linux command for a Mac\n" << r.out;
    const Json j = parsed(run_cli({"doctor", "--bundle", bundle(c.bundle), "--json"}));
    EXPECT_EQ(j["platform"], "darwin") << c.bundle;
    EXPECT_EQ(j["ready"], c.exit_code == 0) << c.bundle;
    EXPECT_EQ(j["bundle"]["release"], "26.2") << c.bundle;
  }
  const Json ready = parsed(run_cli({"doctor", "--bundle", bundle("mac-ready.bundle"), "--json"}));
  EXPECT_EQ(ready["bundle"]["thunderbolt_generation"], 5);
  const Json tb4 = parsed(run_cli({"doctor", "--bundle", bundle("mac-tb4.bundle"), "--json"}));
  EXPECT_EQ(tb4["bundle"]["thunderbolt_generation"], 4);
  EXPECT_EQ(codes(tb4), std::vector<std::string>{"no_rdma_device"});
}

// check --stacks on a Mac's bundle: the Mac's stacks, from its own tables.
TEST(BundleCli, CheckStacksOnAMacsBundleListsTheMacsStacks) {
  const CliResult r =
      run_cli({"check", "--stacks", "--bundle", bundle("mac-ready.bundle"), "--device", "rdma_en2"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* stack : {"jaccl", "ds4", "llama.cpp", "exo"})
    EXPECT_NE(r.out.find(stack), std::string::npos) << stack << "\n" << r.out;
  EXPECT_EQ(r.out.find("nccl"), std::string::npos) << r.out;
}

}  // namespace bundle_cli_test
}  // namespace gidpolicy::test
