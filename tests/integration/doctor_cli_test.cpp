// `gidpolicy doctor` on what it is given: a table from another host is judged by itself (its
// platform from the table, its Thunderbolt ports' IPv4 from their GIDs, this machine's
// interfaces, routes and pins left out and said so), and a host without any RDMA device gets a
// NOT-READY report naming the cause (exit 1), not a usage error.
#include "cli_run.hpp"

#include "support/files.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gidpolicy::test {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

std::string table(const char* name) { return (example_tables_dir() / name).string(); }

/// A line of `text` that runs a Linux iproute2 command ("ip ...", "sudo ip ..."), or "".
std::string linux_ip_command(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(" ip link ") != std::string::npos || line.find(" ip addr ") != std::string::npos ||
        line.find(" ip route ") != std::string::npos || line.find("fix: ip ") != std::string::npos)
      return line;
  return {};
}

std::vector<std::string> codes(const Json& j) {
  if (!j.is_object() || !j.contains("findings")) return {"(no findings array)"};
  std::vector<std::string> out;
  for (const auto& f : j["findings"]) out.push_back(f["code"].get<std::string>());
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// A Mac's Thunderbolt port without IPv4, read on this (Linux) machine: the Mac's cause with the
// Mac's commands. It was "its interface en3 is not there" with `ip link show en3`: this
// machine's interfaces judged against the Mac's table.
TEST(DoctorCli, AMacsTableWithoutIpv4GetsNoIpv4AndTheMacsCommands) {
  const std::string t = table("apple-mlx4191-rdma_en3-noipv4.devinfo.txt");
  const CliResult text = run_cli({"doctor", "--input", t});
  EXPECT_EQ(text.exit_code, 1) << text.out << text.err;
  EXPECT_NE(text.out.find("NOT READY: 1 blocker, 0 warnings (macOS commands; "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("1. blocker: rdma_en3 port 1: its interface en3 has no IPv4 address"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("sudo ifconfig en3 inet 192.168.200.1 netmask 255.255.255.252 alias"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("sudo networksetup -setmanual 'RDMA en3' 192.168.200.1 255.255.255.252"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(linux_ip_command(text.out), "") << text.out;
  EXPECT_EQ(text.out.find("is not there"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not checked from a table: the interfaces, bridge membership, the routes to peers, "
                          "the pins in the environment and rdma_ctl status of the host it was taken on "
                          "(run gidpolicy doctor on that host)"),
            std::string::npos)
      << text.out;

  const CliResult json = run_cli({"doctor", "--json", "--input", t});
  EXPECT_EQ(json.exit_code, 1);
  Json j = Json::parse(json.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << json.out;
  EXPECT_EQ(j["ready"], false);
  EXPECT_EQ(j["platform"], "darwin");
  EXPECT_EQ(codes(j), std::vector<std::string>{"no_ipv4"});
  EXPECT_EQ(j["findings"][0]["device"], "rdma_en3");
  EXPECT_EQ(j["findings"][0]["netdev"], "en3");
  EXPECT_EQ(j["not_checked"],
            Json::parse(R"(["interfaces", "bridge_membership", "routes", "pins", "rdma_ctl"])"));
}

// The Mac mini table (examples/tables/SOURCES.md): its IPv4-mapped GID is at index 2, so en2 has an address;
// from the table alone nothing blocks. It was NOT READY on this machine ("its interface en2 is not there",
// Linux commands).
TEST(DoctorCli, AMacsTableWithItsMappedGidIsNotJudgedByThisMachinesInterfaces) {
  const CliResult text = run_cli({"doctor", "--input", table("macmini-mapped-at-2.json")});
  EXPECT_EQ(text.exit_code, 0) << text.out << text.err;
  // Ready (ds4 and the patched JACCL work there), with a warning: JACCL as it ships routes from
  // index 1, which is empty here; no variable steers it.
  EXPECT_NE(text.out.find("READY: 0 blockers, 1 warning (macOS commands; "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(
                "1. warning: JACCL and exo as they ship fail on rdma_en2 port 1: EINVAL (22): sgid_index 1 "
                "is empty"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("is not there"), std::string::npos) << text.out;
  EXPECT_EQ(linux_ip_command(text.out), "") << text.out;
  EXPECT_NE(text.out.find("not checked from a table: the interfaces"), std::string::npos) << text.out;
  Json j = Json::parse(run_cli({"doctor", "--json", "--input", table("macmini-mapped-at-2.json")}).out,
                       nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["platform"], "darwin");
  ASSERT_EQ(j["findings"].size(), 1u) << j.dump();
  EXPECT_EQ(j["findings"][0]["code"], "stock_stack_fails");
  EXPECT_EQ(j["findings"][0]["severity"], "warning");
  EXPECT_EQ(j["ready"], true);
  // Where JACCL's index 1 holds the GID it advertises (the ds4 QA Mac), no such warning.
  Json ok =
      Json::parse(run_cli({"doctor", "--json", "--input", table("apple-ds4qa-rdma_en1.devinfo.txt")}).out,
                  nullptr, false);
  ASSERT_TRUE(ok.is_object());
  EXPECT_EQ(ok["findings"].size(), 0u) << ok.dump();
}

// --platform still wins; --this-host says the table is this machine's and judges it here.
TEST(DoctorCli, PlatformAndThisHostAreTheOperatorsToOverride) {
  const std::string t = table("apple-mlx4191-rdma_en3-noipv4.devinfo.txt");
  const CliResult linux_cmds = run_cli({"doctor", "--input", t, "--platform", "linux"});
  EXPECT_EQ(linux_cmds.exit_code, 1);
  EXPECT_NE(linux_cmds.out.find("(Linux commands; "), std::string::npos) << linux_cmds.out;
  EXPECT_NE(linux_cmds.out.find("sudo ip addr add 192.168.200.1/30 dev en3"), std::string::npos)
      << linux_cmds.out;
  // This machine has no en3 (a Mac's name): judged here, the interface is missing.
  if (fs::exists("/sys/class/net/en3")) GTEST_SKIP() << "this machine has an interface en3";
  const CliResult here = run_cli({"doctor", "--json", "--this-host", "--input", t});
  EXPECT_EQ(here.exit_code, 1);
  Json j = Json::parse(here.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << here.out;
  EXPECT_TRUE(has(codes(j), "netdev_missing")) << here.out;
  EXPECT_EQ(j["not_checked"].size(), 0u);
  EXPECT_EQ(run_cli({"doctor", "--this-host"}).exit_code, 2);  // it says whose --input: none given
}

// A Linux table from another host: this machine's environment is not its host's. A pin here
// (NCCL_IB_GID_INDEX=0, link-local on that port) was judged against it as stale; a netdev of
// that host that this machine lacks was "not in this network namespace".
TEST(DoctorCli, AnotherLinuxHostsTableIsNotJudgedByThisMachinesPinsOrInterfaces) {
  const CliResult r = run_program(cli_path(), {"doctor", "--json", "--input", table("nccl-769.devinfo.txt")},
                                  {"NCCL_IB_GID_INDEX=0"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  Json j = Json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["platform"], "linux");
  EXPECT_EQ(codes(j), std::vector<std::string>{}) << r.out;
  EXPECT_EQ(j["not_checked"], Json::parse(R"(["interfaces", "bridge_membership", "routes", "pins"])"));

  const fs::path dir = fs::path(::testing::TempDir()) / ("doctor_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path other = dir / "other-host.json";
  std::ofstream(other) << R"({"schema": "gidpolicy.tables", "version": 1, "ports": [
    {"device": "mlx5_0", "port": 1, "state": "active", "link_layer": "ethernet", "gid_tbl_len": 16,
     "active_mtu": 1024, "lid": 0, "holes": "empty", "entries": [
      {"index": 0, "gid": "fe80::1", "type": "roce_v2", "netdev": "gpelsewhere0", "state": "valid"},
      {"index": 1, "gid": "::ffff:10.77.0.1", "type": "roce_v2", "netdev": "gpelsewhere0", "state": "valid"}]}]})";
  const CliResult o = run_cli({"doctor", "--json", "--input", other.string(), "--peer", "10.77.0.2"});
  EXPECT_EQ(o.exit_code, 0) << o.out << o.err;
  Json k = Json::parse(o.out, nullptr, false);
  ASSERT_TRUE(k.is_object()) << o.out;
  EXPECT_EQ(codes(k), std::vector<std::string>{}) << o.out;
  EXPECT_EQ(k["peers"].size(), 0u) << o.out;  // routes are this machine's: not looked up
  // The same table as this host's: its netdev is not here.
  const CliResult h = run_cli({"doctor", "--json", "--this-host", "--input", other.string()});
  EXPECT_TRUE(has(codes(Json::parse(h.out, nullptr, false)), "netdev_elsewhere")) << h.out;
  fs::remove_all(dir);
}

// This machine, live: where it has no RDMA device (no /sys/class/infiniband entry), the doctor
// says so as a NOT-READY report with the cause, in text and JSON, exit 1. It was exit 2 ("no
// RDMA devices ... give a table instead") and `--json` printed nothing.
TEST(DoctorCli, AHostWithoutAnyRdmaDeviceIsNotReadyWithTheCause) {
  std::error_code ec;
  if (fs::exists("/sys/class/infiniband", ec) && !fs::is_empty("/sys/class/infiniband", ec))
    GTEST_SKIP() << "this machine has RDMA devices (/sys/class/infiniband lists some)";
  const CliResult text = run_cli({"doctor", "--deadline", "60"});
  if (text.exit_code == 0) GTEST_SKIP() << "the verbs library lists devices here:\n" << text.out;
  EXPECT_EQ(text.exit_code, 1) << text.out << text.err;
  EXPECT_NE(text.out.find("NOT READY: 1 blocker, 0 warnings (Linux commands; live devices (dlopen))"),
            std::string::npos)
      << text.out;
  const CliResult json = run_cli({"doctor", "--deadline", "60", "--json"});
  EXPECT_EQ(json.exit_code, 1) << json.err;
  Json j = Json::parse(json.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << json.out << json.err;
  EXPECT_EQ(j["ready"], false);
  ASSERT_EQ(j["findings"].size(), 1u) << json.out;
  // The library is linked into this build, so it loads: the kernel has no device.
  EXPECT_EQ(j["findings"][0]["code"], "no_kernel_rdma_device") << json.out;
  Json fix = j["findings"][0]["fix"];
  ASSERT_TRUE(fix.is_array());
  EXPECT_EQ(fix[0],
            "lspci | grep -i -e mellanox -e infiniband -e ethernet   # is there an RDMA-capable NIC?");
  EXPECT_EQ(fix.back().get<std::string>().rfind(
                "sudo modprobe rdma_rxe && sudo rdma link add rxe0 type rxe netdev ", 0),
            0u)
      << fix.dump();
}

}  // namespace
}  // namespace gidpolicy::test
