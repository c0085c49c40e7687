// The stacks' commands as a process: `check --stacks` on every example table, `env --for`,
// `check --pins` (environment, dotenv and compose files) and `fleet --stack` / `--env-dir`.
#include "cli_run.hpp"

#include "support/files.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <unistd.h>

namespace gidpolicy::test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string stacks_example(const char* name) { return (example_tables_dir() / name).string(); }
std::string stacks_data(const char* name) { return (test_data_dir() / "stacks" / name).string(); }

// Every variable a stack reads is unset here: run_program() adds a test's entries to this process's
// environment, and a caller's NCCL_IB_HCA (say) would otherwise steer every prediction below.
const bool kStackVariablesUnset = [] {
  for (const char* v : {"NCCL_IB_GID_INDEX",
                        "NCCL_IB_HCA",
                        "NCCL_IB_ADDR_FAMILY",
                        "NCCL_IB_ADDR_RANGE",
                        "NCCL_IB_ROCE_VERSION_NUM",
                        "NVSHMEM_IB_GID_INDEX",
                        "NVSHMEM_HCA_LIST",
                        "NVSHMEM_IB_ADDR_FAMILY",
                        "NVSHMEM_IB_ADDR_RANGE",
                        "NVSHMEM_IB_ROCE_VERSION_NUM",
                        "UCX_IB_GID_INDEX",
                        "UCX_NET_DEVICES",
                        "UCX_IB_ROCE_LOCAL_SUBNET",
                        "UCX_IB_ROCE_SUBNET_PREFIX_LEN",
                        "UCX_IB_ROCE_SUBNETS",
                        "MC_GID_INDEX",
                        "FI_VERBS_GID_IDX",
                        "FI_VERBS_DEVICE_NAME",
                        "FI_VERBS_IFACE",
                        "GGML_RDMA_DEV",
                        "GGML_RDMA_GID"})
    ::unsetenv(v);
  return true;
}();

CliResult run_with_env(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  return run_program(cli_path(), args, env);
}

Json parse_out(const CliResult& r) {
  Json j = Json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  return j;
}

TEST(CheckStacks, EveryExampleTableShowsEveryStacksPickAndOutcome) {
  std::size_t tables = 0;
  for (const auto& f : fs::directory_iterator(example_tables_dir())) {
    const std::string name = f.path().filename().string();
    if (name == "SOURCES.md") continue;
    ++tables;
    const auto r = run_cli({"check", "--stacks", "--json", "--input", f.path().string()});
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << name << r.err;
    // One envelope, its "ports" an array whatever their number (docs/cli.md).
    Json j = parse_out(r).at("ports");
    bool any_fails = false;
    // The stacks that run on each link layer (the stack table's runs_on), in table order.
    const std::map<std::string, std::vector<std::string>> runs{
        {"ethernet", {"nccl", "nvshmem", "ucx", "mooncake", "libfabric", "perftest", "ds4", "llama.cpp"}},
        {"infiniband", {"nccl", "nvshmem", "ucx", "mooncake", "libfabric", "perftest"}},
        {"thunderbolt", {"ds4", "llama.cpp", "jaccl", "exo"}}};
    for (const auto& port : j) {
      std::vector<std::string> names;
      for (const auto& s : port["stacks"]) names.push_back(s["stack"].get<std::string>());
      EXPECT_EQ(names, runs.at(port["link_layer"].get<std::string>())) << name;
      for (const auto& s : port["stacks"]) {
        EXPECT_FALSE(s["outcome"].get<std::string>().empty()) << name;
        if (!s.at("modelled").get<bool>()) {  // llama.cpp: the index it is given, never a failure
          EXPECT_TRUE(s["works"].is_null()) << name;
          continue;
        }
        if (!s["works"].get<bool>()) any_fails = true;
        if (s["chose"].get<bool>()) {
          EXPECT_TRUE(s["index"].is_number()) << name;
        }
      }
    }
    EXPECT_EQ(r.exit_code, any_fails ? 1 : 0) << name;
  }
  EXPECT_GE(tables, 8u);
}

TEST(CheckStacks, UcxRejectsThePodsPortsAndTheFixIsIndex7) {
  const auto r = run_cli({"check", "--stacks", "--input", stacks_example("nccl-1573-pod.show_gids.txt")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("rejects the port"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fix: UCX_IB_GID_INDEX=7 UCX_NET_DEVICES=mlx5_0:1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fix: FI_VERBS_GID_IDX=7"), std::string::npos) << r.out;  // UD routes from the empty 0
}

TEST(Env, UcxOnThePodIsIndex7BecauseItsAutoRejectsThePort) {
  const auto r = run_cli({"env", "--for", "ucx", "--input", stacks_example("nccl-1573-pod.show_gids.txt")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("export UCX_IB_GID_INDEX='7'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("export UCX_NET_DEVICES='mlx5_0:1,mlx5_1:1'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rejects the port"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gid[0]"), std::string::npos) << r.out;
  const auto d = run_cli({"env", "--for", "ucx,nccl", "--format", "dotenv", "--input",
                          stacks_example("nccl-1573-pod.show_gids.txt")});
  EXPECT_NE(d.out.find("\nUCX_IB_GID_INDEX=7\n"), std::string::npos) << d.out;
  // NCCL's auto is right on both ports: no pin, and the comment says why (--pin prints one).
  EXPECT_EQ(d.out.find("NCCL_IB_GID_INDEX=7"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("its own choice is already index 7"), std::string::npos) << d.out;
  const auto pinned = run_cli({"env", "--for", "ucx,nccl", "--pin", "--format", "dotenv", "--input",
                               stacks_example("nccl-1573-pod.show_gids.txt")});
  EXPECT_NE(pinned.out.find("\nNCCL_IB_GID_INDEX=7\n"), std::string::npos) << pinned.out;
}

TEST(Env, OneIndexPerProcessOnHcasNeedingTwoExitsNamingBoth) {
  const auto r = run_cli({"env", "--for", "nccl,perftest", "--input", stacks_data("two-hcas.show_gids.txt")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("mlx5_0 port 1 needs 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("mlx5_1 port 1 needs 5"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("NCCL_IB_HCA==mlx5_0:1 with NCCL_IB_GID_INDEX=3"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("NCCL_IB_GID_INDEX="), std::string::npos) << r.out;  // no value wrong on one of them
  EXPECT_NE(r.out.find("perftest: -d mlx5_1 -i 1 -x 5"), std::string::npos) << r.out;  // per run: fine
  const auto j = parse_out(
      run_cli({"env", "--for", "ucx", "--format", "json", "--input", stacks_data("two-hcas.show_gids.txt")}));
  EXPECT_TRUE(j["settings"].empty());
  EXPECT_EQ(j["conflicts"].size(), 1u);
}

TEST(Env, UnknownStackAndFormatAreUsageErrors) {
  EXPECT_EQ(run_cli({"env", "--for", "mpi", "--input", stacks_example("nccl-769.devinfo.txt")}).exit_code, 2);
  EXPECT_EQ(
      run_cli({"env", "--for", "nccl", "--format", "yaml", "--input", stacks_example("nccl-769.devinfo.txt")})
          .exit_code,
      2);
}

TEST(CheckPins, AStaleNcclPinIsEnodataAndNamesIndex7) {
  const auto r = run_with_env({"check", "--pins", "--input", stacks_example("nccl-1573-pod.show_gids.txt")},
                              {"NCCL_IB_GID_INDEX=3"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("stale"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ENODATA (61)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("auto picks index 7"), std::string::npos) << r.out;
  const auto j = parse_out(
      run_with_env({"check", "--pins", "--json", "--input", stacks_example("nccl-1573-pod.show_gids.txt")},
                   {"NCCL_IB_GID_INDEX=3", "MC_GID_INDEX=7"}));
  EXPECT_EQ(j.at("schema"), "gidpolicy.check.pins");
  ASSERT_TRUE(j.at("pins").is_array());
  bool saw = false;
  for (const auto& p : j.at("pins"))
    if (p["variable"] == "NCCL_IB_GID_INDEX") {
      saw = true;
      EXPECT_EQ(p["status"], "stale");
      EXPECT_EQ(p["errno"], 61);
      EXPECT_EQ(p["right_index"], 7);
    } else {
      EXPECT_EQ(p["status"], "fine") << p.dump();  // MC_GID_INDEX=7 (and Mooncake no longer reads NCCL's)
    }
  EXPECT_TRUE(saw);
}

TEST(CheckPins, AnEmptyNcclPinIsReadAsEachVersionReadsIt) {
  const auto r = run_with_env({"check", "--pins", "--input", stacks_example("nccl-1573-pod.show_gids.txt")},
                              {"NCCL_IB_GID_INDEX="});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("NCCL < 2.21.5 (an empty value keeps the default, 0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("index 0 is empty"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NCCL >= 2.21.5 (an empty value keeps the default, -1: auto)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"\" is 0"), std::string::npos) << r.out;  // Mooncake's atoi
}

TEST(CheckPins, NoPinIsFine) {
  const auto r = run_cli({"check", "--pins", "--input", stacks_example("nccl-769.devinfo.txt")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no GID index is pinned"), std::string::npos) << r.out;
}

TEST(CheckPins, DotenvAndComposeFiles) {
  const std::string pod = stacks_example("nccl-1573-pod.show_gids.txt");
  const auto d = run_cli({"check", "--pins", "--env-file", stacks_data("env/pins.env"), "--input", pod});
  EXPECT_EQ(d.exit_code, 1);  // MC_GID_INDEX=5 is the link-local v2 entry
  EXPECT_NE(d.out.find("NCCL_IB_GID_INDEX=7 (" + stacks_data("env/pins.env") + ":2)"), std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("MC_GID_INDEX=5 (" + stacks_data("env/pins.env") + ":3)"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("points at fe80::"), std::string::npos) << d.out;

  const auto bad = run_cli({"check", "--pins", "--env-file", stacks_data("env/bad.env"), "--input", pod});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.env:2: expected KEY=VALUE"), std::string::npos) << bad.err;

  // An unset variable interpolated into the list form becomes "", which NCCL < 2.21.5 reads as 0.
  const auto list =
      run_cli({"check", "--pins", "--env-file", stacks_data("env/compose-list.yaml"), "--input", pod});
  EXPECT_EQ(list.exit_code, 1);
  EXPECT_NE(
      list.out.find("NCCL_IB_GID_INDEX= (" + stacks_data("env/compose-list.yaml") + ":5 (service trainer))"),
      std::string::npos)
      << list.out;
  EXPECT_NE(list.out.find("UCX_IB_GID_INDEX=7 ("), std::string::npos) << list.out;

  const auto map = run_cli(
      {"check", "--pins", "--json", "--env-file", stacks_data("env/compose-map.yaml"), "--input", pod});
  const Json j = parse_out(map);
  std::set<std::string> seen;
  for (const auto& p : j.at("pins"))
    seen.insert(p["variable"].get<std::string>() + "=" + p["value"].get<std::string>() + ":" +
                p["status"].get<std::string>());
  EXPECT_TRUE(seen.count("UCX_IB_GID_INDEX=7:fine")) << j.dump();
  EXPECT_TRUE(seen.count("MC_GID_INDEX=3:fails")) << j.dump();  // ${X:-3}: slot 3 is empty, "GID is NULL"

  const auto flow =
      run_cli({"check", "--pins", "--env-file", stacks_data("env/compose-flow.yaml"), "--input", pod});
  EXPECT_EQ(flow.exit_code, 2);
  EXPECT_NE(flow.err.find("compose-flow.yaml:3: a flow collection"), std::string::npos) << flow.err;
  EXPECT_EQ(run_cli({"check", "--env-file", stacks_data("env/pins.env"), "--input", pod}).exit_code,
            2);  // needs --pins
}

TEST(FleetStack, APinRightOnSomeHostsIsNamedOnTheOthers) {
  const auto r =
      run_cli({"fleet", "--stack", "nccl:gid_index=7", "--device", "mlx5_1", stacks_data("fleet")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("--stack nccl:gid_index=7: the entry to use on 2 of 3 hosts"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  node-c: mlx5_0 port 1:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("  pod-a:"), std::string::npos) << r.out;
  EXPECT_EQ(run_cli({"fleet", "--stack", "mpi", stacks_data("fleet")}).exit_code, 2);
  EXPECT_EQ(run_cli({"fleet", "--stack", "nccl", "--profile", "jaccl", stacks_data("fleet")}).exit_code, 2);
}

// The stack table's rows: fleet --stack takes the predicted ones, by their row's spec (nvshmem
// runs NCCL's rule); the others are env stacks only, and the help lists each set from the table.
TEST(FleetStack, TakesThePredictedRowsByTheirSpec) {
  const auto n =
      run_cli({"fleet", "--stack", "nvshmem:gid_index=7", "--device", "mlx5_1", stacks_data("fleet")});
  EXPECT_EQ(n.exit_code, 1) << n.err;  // was a usage error: "nvshmem" is no spec
  EXPECT_NE(n.out.find("--stack nccl:gid_index=7: the entry to use on 2 of 3 hosts"), std::string::npos)
      << n.out;
  // llama.cpp's own choice is not modelled: it is the one row fleet --stack does not take.
  const auto r = run_cli({"fleet", "--stack", "llama.cpp", stacks_data("fleet")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("expected one of nccl, nvshmem, ucx, mooncake, libfabric, perftest, ds4, jaccl, exo, "
                       "found 'llama.cpp'"),
            std::string::npos)
      << r.err;
  const auto bad = run_cli({"fleet", "--stack", "nvshmem:nope=1", stacks_data("fleet")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--stack nvshmem:nope=1:"), std::string::npos) << bad.err;  // as the user wrote it
}

TEST(Env, HelpListsEveryStackOfTheTable) {
  const auto h = run_cli({"env", "--help"});
  EXPECT_NE(h.out.find("nccl, nvshmem, ucx, mooncake, libfabric, perftest, ds4, llama.cpp, jaccl, exo"),
            std::string::npos)
      << h.out;
  const auto c = run_cli({"check", "--help"});
  EXPECT_NE(c.out.find("NCCL, NVSHMEM, UCX, Mooncake, libfabric, perftest, ds4, JACCL, exo"),
            std::string::npos)
      << c.out;
  EXPECT_NE(c.out.find("MC_GID_INDEX, FI_VERBS_GID_IDX, GGML_RDMA_GID"), std::string::npos) << c.out;
  const auto bad = run_cli({"env", "--for", "mpi", "--input", stacks_example("nccl-769.devinfo.txt")});
  EXPECT_NE(
      bad.err.find(
          "expected one of nccl, nvshmem, ucx, mooncake, libfabric, perftest, ds4, llama.cpp, jaccl, exo"),
      std::string::npos)
      << bad.err;
}

// env --for jaccl: MLX_IBV_DEVICES from JACCL's device file, once this host's row is checked.
std::string jaccl_fleet(const char* name) {
  return (example_tables_dir().parent_path() / "fleet" / "jaccl" / name).string();
}

TEST(EnvJaccl, PrintsTheDeviceFileWhenThisHostsRowWorks) {
  const std::string devices = jaccl_fleet("devices.json");
  const auto r = run_cli({"env", "--for", "jaccl", "--jaccl-devices", devices, "--rank", "0", "--input",
                          stacks_data("jaccl/m3-ultra-1.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string abs = fs::absolute(devices).lexically_normal().string();
  EXPECT_NE(r.out.find("export MLX_IBV_DEVICES='" + abs + "'\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("export JACCL_GID_POLICY='auto'\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 0 opens rdma_en3, rdma_en4, rdma_en5"), std::string::npos) << r.out;
  // Each device: auto's pick and what JACCL as it ships does there (routes from index 1, where
  // this host's mapped GID is: the same entry).
  EXPECT_NE(
      r.out.find("# jaccl on rdma_en4 port 1: auto picks index 1 (::ffff:10.99.2.1); JACCL as it ships uses "
                 "the same entry"),
      std::string::npos)
      << r.out;
  // JSON: the same setting.
  const Json j = parse_out(run_cli({"env", "--for", "jaccl", "--format", "json", "--jaccl-devices", devices,
                                    "--rank", "0", "--input", stacks_data("jaccl/m3-ultra-1.json")}));
  EXPECT_EQ(j.at("settings").at("MLX_IBV_DEVICES"), abs);
  // The defaults JACCL itself reads: JACCL_* first, then MLX_*.
  const auto e = run_with_env({"env", "--for", "jaccl", "--input", stacks_data("jaccl/m3-ultra-3.json")},
                              {"MLX_IBV_DEVICES=" + devices, "MLX_RANK=2", "JACCL_RANK=7"});
  EXPECT_EQ(e.exit_code, 2) << e.out;  // JACCL_RANK wins: 7 is outside the file's 4 ranks
  EXPECT_NE(e.err.find("JACCL_RANK 7: expected a rank 0..3"), std::string::npos) << e.err;
  const auto m = run_with_env({"env", "--for", "jaccl", "--input", stacks_data("jaccl/m3-ultra-3.json")},
                              {"MLX_IBV_DEVICES=" + devices, "MLX_RANK=2"});
  // auto's file is right for the patched fork, but JACCL as it ships fails on rdma_en3 (its mapped
  // GID at 2) and nothing steers it: exit 1, saying so.
  EXPECT_EQ(m.exit_code, 1) << m.err;
  EXPECT_NE(m.err.find("jaccl: JACCL as it ships on rdma_en3 port 1:"), std::string::npos) << m.err;
  EXPECT_NE(m.out.find("rank 2 opens rdma_en3, rdma_en4, rdma_en5"), std::string::npos) << m.out;
  // m3-ultra-3's rdma_en3 holds its mapped GID at 2: stock JACCL (index 1) disagrees there.
  EXPECT_NE(m.out.find("# jaccl on rdma_en3 port 1: auto picks index 2 (::ffff:10.99.4.2); JACCL as it ships "
                       "disagrees there (sgid_index 1 is empty"),
            std::string::npos)
      << m.out;
  // Asked for the ring (JACCL_RING set at all, as JACCL reads it): only the neighbours' devices.
  const auto ring = run_with_env({"env", "--for", "jaccl", "--input", stacks_data("jaccl/m3-ultra-3.json")},
                                 {"MLX_IBV_DEVICES=" + devices, "MLX_RANK=2", "MLX_JACCL_RING=0"});
  EXPECT_NE(ring.out.find("rank 2 opens rdma_en3, rdma_en5 ("), std::string::npos) << ring.out;
  // With --profile jaccl (JACCL as it ships) that host's row is refused: no value is right.
  const auto stock = run_cli({"env", "--for", "jaccl", "--profile", "jaccl", "--jaccl-devices", devices,
                              "--rank", "2", "--input", stacks_data("jaccl/m3-ultra-3.json")});
  EXPECT_EQ(stock.exit_code, 1);
  EXPECT_EQ(stock.out.find("MLX_IBV_DEVICES='"), std::string::npos) << stock.out;
  EXPECT_NE(stock.err.find("names rdma_en3, where jaccl does not route from the GID it advertises"),
            std::string::npos)
      << stock.err;
}

TEST(EnvJaccl, ARowThisHostCannotServeGetsNoValue) {
  const std::string devices = jaccl_fleet("devices.json");
  // The Mac mini's table has rdma_en2 only: rank 0's row names rdma_en3..5.
  const auto r = run_cli({"env", "--for", "jaccl", "--jaccl-devices", devices, "--rank", "0", "--input",
                          stacks_example("macmini-mapped-at-2.json")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.find("MLX_IBV_DEVICES='"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("names rdma_en3, but this host has no rdma_en3 port 1 (it has rdma_en2 port 1)"),
            std::string::npos)
      << r.err;
  // A rank that is not one, a rank without a file, a file that is neither mesh nor ring.
  for (const char* bad : {"4", "-1", "x", ""}) {
    const auto b = run_cli({"env", "--for", "jaccl", "--jaccl-devices", devices, "--rank", bad, "--input",
                            stacks_data("jaccl/m3-ultra-1.json")});
    EXPECT_EQ(b.exit_code, 2) << bad;
    EXPECT_NE(b.err.find("expected a rank 0..3"), std::string::npos) << bad << ": " << b.err;
    EXPECT_EQ(b.out, "") << bad;
  }
  const auto no_file = run_with_env(
      {"env", "--for", "jaccl", "--rank", "0", "--input", stacks_data("jaccl/m3-ultra-1.json")}, {});
  EXPECT_EQ(no_file.exit_code, 2);
  EXPECT_NE(no_file.err.find("--jaccl-devices FILE"), std::string::npos) << no_file.err;
  EXPECT_EQ(run_cli({"env", "--for", "nccl", "--rank", "0", "--input", stacks_data("jaccl/m3-ultra-1.json")})
                .exit_code,
            2);  // the JACCL options are for jaccl only
  const fs::path dir = fs::temp_directory_path() / ("gidpolicy-jaccl-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream(dir / "neither.json") << R"([[null, "a", null, null], ["a", null, null, null],
                                               [null, null, null, "b"], [null, null, "b", null]])";
  }
  const auto neither = run_cli({"env", "--for", "jaccl", "--jaccl-devices", (dir / "neither.json").string(),
                                "--rank", "0", "--input", stacks_data("jaccl/m3-ultra-1.json")});
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.err.find("neither a valid mesh"), std::string::npos) << neither.err;
  fs::remove_all(dir);
  // Without any device file: no MLX_IBV_DEVICES, and the output says how to give one.
  const auto none =
      run_with_env({"env", "--for", "jaccl", "--input", stacks_data("jaccl/m3-ultra-1.json")}, {});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out.find("MLX_IBV_DEVICES='"), std::string::npos) << none.out;
  EXPECT_NE(none.out.find("--jaccl-devices FILE --rank R"), std::string::npos) << none.out;
}

// The same judgment in --json: every host, right or not, and per port the stack's pick, whether
// it works, and the index auto picks there (the text names only the wrong hosts).
TEST(FleetStack, JsonListsEveryHostWithTheStacksPickAndAutosPerPort) {
  const auto r =
      run_cli({"fleet", "--stack", "nccl:gid_index=7", "--device", "mlx5_1", "--json", stacks_data("fleet")});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // node-c is wrong: the exit says so in JSON too
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("schema"), "gidpolicy.fleet");
  EXPECT_EQ(doc.at("version"), 2);
  const auto& st = doc.at("stack");
  EXPECT_EQ(st.at("profile"), "nccl:gid_index=7");  // a profile spec is "profile" everywhere
  EXPECT_EQ(doc.at("profile"), "nccl:gid_index=7");
  EXPECT_EQ(st.at("hosts_right"), 2);
  EXPECT_EQ(st.at("hosts_wrong"), 1);
  std::map<std::string, nlohmann::json> by_host;
  for (const auto& h : st.at("hosts")) by_host[h.at("host").get<std::string>()] = h;
  ASSERT_EQ(by_host.size(), 3u) << st.dump();
  for (const char* ok : {"pod-a", "pod-b"}) {
    EXPECT_TRUE(by_host[ok].at("right").get<bool>()) << ok;
    for (const auto& p : by_host[ok].at("ports")) {
      EXPECT_EQ(p.at("index"), 7) << ok;
      EXPECT_EQ(p.at("auto_index"), 7) << ok;
      EXPECT_TRUE(p.at("works").get<bool>()) << ok;
      EXPECT_TRUE(p.at("right").get<bool>()) << ok;
    }
  }
  const auto& c = by_host["node-c"];
  EXPECT_FALSE(c.at("right").get<bool>());
  ASSERT_EQ(c.at("ports").size(), 2u) << c.dump();
  std::map<std::string, int> auto_at;
  for (const auto& p : c.at("ports")) {
    EXPECT_EQ(p.at("port"), 1);
    EXPECT_FALSE(p.at("works").get<bool>()) << p.dump();  // index 7 is beyond both of its tables
    EXPECT_FALSE(p.at("right").get<bool>()) << p.dump();
    EXPECT_NE(p.at("outcome"), "ok") << p.dump();
    auto_at[p.at("device").get<std::string>()] = p.at("auto_index").get<int>();
  }
  EXPECT_EQ(auto_at, (std::map<std::string, int>{{"mlx5_0", 3}, {"mlx5_1", 5}}));
  // Without --stack the document has no "stack" object.
  const auto plain = run_cli({"fleet", "--device", "mlx5_1", "--json", stacks_data("fleet")});
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("stack")) << plain.out;
}

TEST(FleetStack, EnvDirWritesOneFilePerHostAndNoValueWhereNoneIsRight) {
  const fs::path dir = fs::temp_directory_path() / ("gidpolicy-envdir-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto r = run_cli(
      {"fleet", "--stack", "ucx", "--device", "mlx5_1", "--env-dir", dir.string(), stacks_data("fleet")});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // ucx's own choice rejects the pods' ports; node-c needs two indices
  const auto read = [](const fs::path& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  EXPECT_NE(read(dir / "pod-a.env").find("\nUCX_IB_GID_INDEX=7\n"), std::string::npos);
  const std::string c = read(dir / "node-c.env");
  EXPECT_NE(c.find("# no value: ucx takes one GID index per process"), std::string::npos) << c;
  EXPECT_EQ(c.find("\nUCX_IB_GID_INDEX="), std::string::npos) << c;
  // A non-empty directory is not replaced unless asked.
  const auto again = run_cli({"fleet", "--stack", "ucx", "--env-dir", dir.string(), stacks_data("fleet")});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_TRUE(fs::exists(dir / "pod-b.env"));
  fs::remove_all(dir);
}

}  // namespace

// The Mac's stacks on a Mac's port, the RoCE stacks on a RoCE port: chosen by the table's runs_on.
TEST(CheckStacks, AThunderboltPortListsTheMacsStacksAndJacclFailsOnTheMacMini) {
  const auto r =
      run_cli({"check", "--stacks", "--json", "--input", stacks_example("macmini-mapped-at-2.json")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const Json j = parse_out(r).at("ports").at(0);
  std::map<std::string, Json> by;
  for (const auto& s : j["stacks"]) by[s["stack"].get<std::string>()] = s;
  ASSERT_EQ(by.size(), 4u) << r.out;
  for (const char* linux_only : {"nccl", "nvshmem", "ucx", "mooncake", "libfabric", "perftest"})
    EXPECT_EQ(by.count(linux_only), 0u) << linux_only;
  // Stock JACCL advertises the mapped GID at 2 and routes from the literal 1, which is empty.
  EXPECT_FALSE(by["jaccl"]["works"].get<bool>());
  EXPECT_EQ(by["jaccl"]["index"], 1);
  EXPECT_EQ(by["jaccl"]["gid"], "::ffff:10.99.0.3");
  EXPECT_EQ(by["jaccl"]["errno"], 22);
  EXPECT_TRUE(by["jaccl"]["fix"].is_null());  // no variable steers it
  EXPECT_NE(by["jaccl"]["host_fix"].get<std::string>().find(
                "it works once the first IPv4-mapped GID sits at index 1"),
            std::string::npos);
  EXPECT_EQ(by["jaccl"]["patched_fork"],
            "JACCL_GID_POLICY=auto picks index 2 (::ffff:10.99.0.3) (patched fork only)");
  EXPECT_EQ(by["exo"]["outcome"], by["jaccl"]["outcome"]);
  EXPECT_EQ(by["ds4"]["spec"], "ds4");
  EXPECT_TRUE(by["ds4"]["works"].get<bool>());
  EXPECT_FALSE(by["llama.cpp"]["modelled"].get<bool>());
  EXPECT_EQ(by["llama.cpp"]["fix"], "GGML_RDMA_DEV=rdma_en2 GGML_RDMA_GID=2");
  const auto text = run_cli({"check", "--stacks", "--input", stacks_example("macmini-mapped-at-2.json")});
  EXPECT_NE(text.out.find("  jaccl           1  ::ffff:10.99.0.3                         NO     EINVAL (22)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("uses the index given: no automatic choice modelled (GGML_RDMA_GID)"),
            std::string::npos)
      << text.out;
  // The Mac with its mapped GID at 1: stock JACCL works, and the port passes.
  EXPECT_EQ(
      run_cli({"check", "--stacks", "--input", stacks_example("apple-ds4qa-rdma_en1.devinfo.txt")}).exit_code,
      0);
}

TEST(CheckStacks, ARocePortListsTheRoceStacksOnlyAndDs4ByItsLinuxPath) {
  const Json j =
      parse_out(run_cli({"check", "--stacks", "--json", "--input", stacks_example("nccl-769.devinfo.txt")}))
          .at("ports")
          .at(0);
  std::vector<std::string> names;
  for (const auto& s : j["stacks"]) {
    names.push_back(s["stack"].get<std::string>());
    if (s["stack"] == "ds4") {
      EXPECT_EQ(s["spec"], "ds4-linux");
      // Its control connection on the port's own address (as ds4 asks): the v2 entry of that
      // address, index 3, not the fe80 v2 entry at 1 a prediction without the address took.
      EXPECT_EQ(s["index"], 3) << s.dump();
      EXPECT_TRUE(s["works"].get<bool>()) << s.dump();
      EXPECT_NE(s["assumes"].get<std::string>().find("control connection on the port's own IPv4 address"),
                std::string::npos)
          << s.dump();
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"nccl", "nvshmem", "ucx", "mooncake", "libfabric", "perftest",
                                             "ds4", "llama.cpp"}));
}

// A port no stack runs on (an unknown link layer) says so.
TEST(CheckStacks, APortWhereNoStackRunsSaysSo) {
  const fs::path dir = fs::temp_directory_path() / ("gidpolicy-stacks-none-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream(dir / "t.json")
        << R"J({"schema": "gidpolicy.tables", "version": 1, "ports": [{"device": "x0",
      "port": 1, "state": "active", "link_layer": "unknown(7)", "gid_tbl_len": 4, "active_mtu": 1024, "lid": 0,
      "holes": "empty", "entries": [{"index": 0, "gid": "::ffff:10.0.0.1", "type": "roce_v2", "state": "valid"}]}]})J";
  }
  const auto r = run_cli({"check", "--stacks", "--input", (dir / "t.json").string()});
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no stack gidpolicy knows runs on unknown(7) ports"), std::string::npos)
      << r.out << r.err;
}

// A healthy RoCE host: JACCL's profiles (and ds4's macOS scan) never run there, so they neither
// print nor fail the default check.
TEST(Check, AHealthyRocePortPassesWithoutTheThunderboltProfiles) {
  const auto r = run_cli({"check", "--input", stacks_example("nccl-769.devinfo.txt")});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("  jaccl "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not run on ethernet ports (not checked): jaccl, jaccl-legacy, jaccl-fixed, ds4"),
            std::string::npos)
      << r.out;
  const Json j = parse_out(run_cli({"check", "--json", "--input", stacks_example("nccl-769.devinfo.txt")}))
                     .at("ports")
                     .at(0);
  EXPECT_EQ(j.at("not_run"), Json::array({"jaccl", "jaccl-legacy", "jaccl-fixed", "ds4"}));
  // Asked for by name, a profile is checked wherever asked.
  EXPECT_EQ(
      run_cli({"check", "--profile", "jaccl", "--input", stacks_example("nccl-769.devinfo.txt")}).exit_code,
      1);
  // `--profile all` keeps the full grid: JACCL's rows on the RoCE port, and its failure.
  const auto all = run_cli({"check", "--profile", "all", "--input", stacks_example("nccl-769.devinfo.txt")});
  EXPECT_EQ(all.exit_code, 1) << all.out << all.err;
  EXPECT_NE(all.out.find("  jaccl "), std::string::npos) << all.out;
  EXPECT_EQ(all.out.find("not run on"), std::string::npos) << all.out;
  // On the Mac the Linux path is the one left out; stock JACCL still fails there.
  const auto mac = run_cli({"check", "--input", stacks_example("macmini-mapped-at-2.json")});
  EXPECT_EQ(mac.exit_code, 1);
  EXPECT_NE(mac.out.find("not run on thunderbolt ports (not checked): ds4-linux"), std::string::npos)
      << mac.out;
}

// Stock JACCL on the Mac mini: no variable steers it, so env exits 1 and says what must hold on
// the host, beside the patched fork's setting, labelled as such.
TEST(EnvJaccl, StockJacclThatFailsExitsOneAndSaysWhatMustHoldOnTheHost) {
  const auto r =
      run_with_env({"env", "--for", "jaccl", "--input", stacks_example("macmini-mapped-at-2.json")}, {});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("jaccl: JACCL as it ships on rdma_en2 port 1: EINVAL (22)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("no variable steers it (JACCL_GID_POLICY is read only by its patched fork)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(
      r.err.find("it advertises index 2 (::ffff:10.99.0.3, the first IPv4-mapped GID) and routes from index "
                 "1, which is empty: it works once the first IPv4-mapped GID sits at index 1"),
      std::string::npos)
      << r.err;
  EXPECT_NE(
      r.out.find("# jaccl: JACCL_GID_POLICY=auto needs the patched JACCL fork: JACCL as it ships ignores it"),
      std::string::npos)
      << r.out;
  // exo runs JACCL: the same.
  EXPECT_EQ(run_with_env({"env", "--for", "exo", "--input", stacks_example("macmini-mapped-at-2.json")}, {})
                .exit_code,
            1);
  // Where stock JACCL works (its mapped GID at index 1), env exits 0.
  const auto ok = run_with_env(
      {"env", "--for", "jaccl", "--input", stacks_example("apple-ds4qa-rdma_en1.devinfo.txt")}, {});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err, "");
  // JACCL names no RoCE port: a stack that runs on none of the ports is a conflict.
  const auto roce =
      run_with_env({"env", "--for", "jaccl", "--input", stacks_example("nccl-769.devinfo.txt")}, {});
  EXPECT_EQ(roce.exit_code, 1);
  EXPECT_NE(roce.err.find("jaccl: JACCL runs on thunderbolt ports, and none of these is one"),
            std::string::npos)
      << roce.err;
}

// env --for a RoCE stack on a Mac's port: not a port NCCL opens.
TEST(Env, NcclOnAThunderboltPortIsAConflictAndLlamaCppGetsItsDevice) {
  const auto n = run_cli({"env", "--for", "nccl", "--input", stacks_example("macmini-mapped-at-2.json")});
  EXPECT_EQ(n.exit_code, 1);
  EXPECT_EQ(n.out.find("NCCL_IB_GID_INDEX"), std::string::npos) << n.out;
  EXPECT_NE(n.err.find("nccl: NCCL runs on infiniband, ethernet ports, and none of these is one"),
            std::string::npos)
      << n.err;
  const auto l =
      run_cli({"env", "--for", "llama.cpp", "--input", stacks_example("macmini-mapped-at-2.json")});
  EXPECT_EQ(l.exit_code, 0) << l.err;
  EXPECT_NE(l.out.find("export GGML_RDMA_DEV='rdma_en2'\nexport GGML_RDMA_GID='2'\n"), std::string::npos)
      << l.out;
}

// check --pins: a pin is judged only where its stack runs.
TEST(CheckPins, ANcclPinIsNotJudgedOnAThunderboltPort) {
  const auto r = run_with_env({"check", "--pins", "--input", stacks_example("macmini-mapped-at-2.json")},
                              {"NCCL_IB_GID_INDEX=0"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("rdma_en2 port 1: not run here: NCCL does not run on thunderbolt ports"),
            std::string::npos)
      << r.out;
  // llama.cpp runs there: its pin is judged (index 1 is empty on the Mac mini).
  const auto g = run_with_env({"check", "--pins", "--input", stacks_example("macmini-mapped-at-2.json")},
                              {"GGML_RDMA_GID=1"});
  EXPECT_EQ(g.exit_code, 1) << g.out;
  EXPECT_NE(g.out.find("rdma_en2 port 1: stale"), std::string::npos) << g.out;
}

// fleet --stack jaccl: the Macs' stack, judged per host.
TEST(FleetStack, JacclIsAStackOfTheFleet) {
  const auto r = run_cli({"fleet", "--stack", "jaccl",
                          (example_tables_dir().parent_path() / "fleet" / "jaccl" / "hosts").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("--stack jaccl: the entry to use on "), std::string::npos) << r.out;
  // On RoCE hosts JACCL does not run: each port says so and counts as right.
  const auto roce = run_cli({"fleet", "--stack", "jaccl", "--json", stacks_data("fleet")});
  const Json j = parse_out(roce);
  ASSERT_TRUE(j.contains("stack")) << roce.out;
  EXPECT_EQ(j["stack"]["hosts_wrong"], 0) << roce.out;
}

// The doctor's stacks block: the stacks that run on the port.
TEST(DoctorStacks, AMacsPortShowsTheMacsStacks) {
  const auto r = run_cli({"doctor", "--input", stacks_example("macmini-mapped-at-2.json"), "--json"});
  const Json j = parse_out(r);
  std::vector<std::string> names;
  for (const auto& s : j["stacks"]) names.push_back(s["stack"].get<std::string>());
  EXPECT_EQ(names, (std::vector<std::string>{"ds4", "llama.cpp", "jaccl", "exo"})) << r.out;
}

namespace {

// The launch's settings steer the predictions: the environment's, an --env-file's, or none (--no-env).
const Json& stack_entry(const Json& doc_or_port, const std::string& name) {
  // A whole `check --stacks --json` document (its one port) or one of its ports.
  const Json& port = doc_or_port.contains("ports") ? doc_or_port["ports"][0] : doc_or_port;
  for (const auto& s : port["stacks"])
    if (s["stack"] == name) return s;
  static const Json none;
  ADD_FAILURE() << "no " << name;
  return none;
}

TEST(CheckStacksSettings, NcclAddrFamilyFromTheEnvironmentIsWhatTheProfileWithThatFamilyPicks) {
  ASSERT_TRUE(kStackVariablesUnset);
  const std::string table = stacks_example("nccl-769.devinfo.txt");
  const Json want =
      parse_out(run_cli({"select", "--profile", "nccl:family=AF_INET6", "--json", "--input", table}));
  const auto r =
      run_with_env({"check", "--stacks", "--json", "--input", table}, {"NCCL_IB_ADDR_FAMILY=AF_INET6"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  const Json j = parse_out(r);
  const Json& nccl = stack_entry(j, "nccl");
  EXPECT_EQ(nccl["index"], want["ports"][0]["sgid_index"]);
  EXPECT_EQ(nccl["spec"], "nccl:family=AF_INET6");
  ASSERT_EQ(nccl["settings"].size(), 1u);
  EXPECT_EQ(nccl["settings"][0]["variable"], "NCCL_IB_ADDR_FAMILY");
  EXPECT_EQ(nccl["settings"][0]["origin"], "the environment");
  // The default is index 3; NVSHMEM reads its own names, not NCCL's.
  EXPECT_EQ(stack_entry(j, "nvshmem")["index"], 3);
  const auto text = run_with_env({"check", "--stacks", "--input", table}, {"NCCL_IB_ADDR_FAMILY=AF_INET6"});
  EXPECT_NE(text.out.find("nccl NCCL_IB_ADDR_FAMILY=AF_INET6 (the environment): AF_INET6"), std::string::npos)
      << text.out;
}

TEST(CheckStacksSettings, TheSameThroughAnEnvFileAndNoneWithNoEnv) {
  const std::string table = stacks_example("nccl-769.devinfo.txt");
  const std::string file = stacks_data("env/family6.env");
  const Json j = parse_out(run_cli({"check", "--stacks", "--json", "--env-file", file, "--input", table}));
  const Json& nccl = stack_entry(j, "nccl");
  EXPECT_EQ(nccl["index"], 0);
  ASSERT_EQ(nccl["settings"].size(), 1u);
  EXPECT_NE(nccl["settings"][0]["origin"].get<std::string>().find("family6.env"), std::string::npos);
  // --no-env: the environment's setting is not read, the defaults are predicted (as with none set).
  const Json plain = parse_out(run_cli({"check", "--stacks", "--json", "--input", table}));
  const Json no_env = parse_out(run_with_env({"check", "--stacks", "--json", "--no-env", "--input", table},
                                             {"NCCL_IB_ADDR_FAMILY=AF_INET6"}));
  EXPECT_EQ(no_env, plain);
  EXPECT_EQ(stack_entry(no_env, "nccl")["index"], 3);
  // --no-env with --env-file: the file still applies.
  const Json both = parse_out(
      run_with_env({"check", "--stacks", "--json", "--no-env", "--env-file", file, "--input", table},
                   {"NCCL_IB_ADDR_FAMILY=AF_INET"}));
  EXPECT_EQ(stack_entry(both, "nccl")["index"], 0);
  // A range NCCL cannot parse is ignored: its default choice.
  const Json bad_range = parse_out(
      run_with_env({"check", "--stacks", "--json", "--input", table}, {"NCCL_IB_ADDR_RANGE=nonsense"}));
  EXPECT_EQ(stack_entry(bad_range, "nccl")["index"], 3);
  EXPECT_NE(stack_entry(bad_range, "nccl")["settings"][0]["reading"].get<std::string>().find("ignored"),
            std::string::npos);
}

TEST(CheckStacksSettings, DeviceListsRestrictTheirStacksRows) {
  const std::string pod = stacks_example("nccl-1573-pod.show_gids.txt");
  const Json j = parse_out(run_with_env({"check", "--stacks", "--json", "--input", pod},
                                        {"NCCL_IB_HCA=mlx5_1", "UCX_NET_DEVICES=mlx5_1:1"}));
  ASSERT_TRUE(j["ports"].is_array());
  ASSERT_EQ(j["ports"].size(), 2u);
  for (const auto& port : j["ports"]) {
    const bool one = port["device"] == "mlx5_1";
    for (const char* stack : {"nccl", "ucx"}) {
      const Json& e = stack_entry(port, stack);
      EXPECT_EQ(e["used"], one) << stack << port["device"];
      if (!one) {
        EXPECT_TRUE(e["index"].is_null());
        EXPECT_NE(e["outcome"].get<std::string>().find("leaves this port out"), std::string::npos);
      }
    }
    EXPECT_EQ(stack_entry(port, "nvshmem")["used"], true);  // NVSHMEM reads its own list
  }
  // UCX on mlx5_0 rejects the port; left out by its device list, that is no finding.
  const auto r = run_with_env({"check", "--stacks", "--input", pod}, {"UCX_NET_DEVICES=mlx5_1:1"});
  EXPECT_NE(r.out.find("not used: UCX_NET_DEVICES leaves this port out"), std::string::npos) << r.out;
}

TEST(CheckStacksSettings, OptionsThatAreNotUsedAreRefused) {
  const std::string table = stacks_example("nccl-769.devinfo.txt");
  EXPECT_EQ(run_cli({"check", "--stacks", "--profile", "nccl", "--input", table}).exit_code, 2);
  EXPECT_EQ(run_cli({"check", "--pins", "--profile", "nccl", "--input", table}).exit_code, 2);
  EXPECT_EQ(run_cli({"check", "--no-env", "--input", table}).exit_code, 2);
  EXPECT_EQ(run_cli({"check", "--env-file", stacks_data("env/family6.env"), "--input", table}).exit_code, 2);
}

TEST(EnvForSettings, NoPinWhereTheStacksOwnChoiceIsAlreadyRight) {
  const std::string table = stacks_example("nccl-769.devinfo.txt");
  const auto r = run_cli({"env", "--for", "nccl", "--input", table});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("export NCCL_IB_GID_INDEX"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no NCCL_IB_GID_INDEX needed"), std::string::npos) << r.out;
  const auto pinned = run_cli({"env", "--for", "nccl", "--pin", "--input", table});
  EXPECT_NE(pinned.out.find("export NCCL_IB_GID_INDEX='3'"), std::string::npos) << pinned.out;
  // Under AF_INET6 NCCL's own choice is index 0, which fails: the pin is needed, and the setting read is
  // named.
  const auto six = run_with_env({"env", "--for", "nccl", "--input", table}, {"NCCL_IB_ADDR_FAMILY=AF_INET6"});
  EXPECT_NE(six.out.find("export NCCL_IB_GID_INDEX='3'"), std::string::npos) << six.out;
  EXPECT_NE(six.out.find("nccl reads NCCL_IB_ADDR_FAMILY=AF_INET6"), std::string::npos) << six.out;
  const auto six_dotenv = run_with_env({"env", "--for", "nccl", "--format", "dotenv", "--input", table},
                                       {"NCCL_IB_ADDR_FAMILY=AF_INET6"});
  EXPECT_NE(six_dotenv.out.find("# nccl reads NCCL_IB_ADDR_FAMILY=AF_INET6"), std::string::npos)
      << six_dotenv.out;
  EXPECT_NE(six_dotenv.out.find("\nNCCL_IB_GID_INDEX=3\n"), std::string::npos) << six_dotenv.out;
  // --no-env judges the defaults again.
  const auto no_env =
      run_with_env({"env", "--for", "nccl", "--no-env", "--input", table}, {"NCCL_IB_ADDR_FAMILY=AF_INET6"});
  EXPECT_EQ(no_env.out.find("export NCCL_IB_GID_INDEX"), std::string::npos) << no_env.out;
  // NCCL_IB_HCA leaves mlx5_0 out: only mlx5_1 is judged.
  const auto hca = run_with_env(
      {"env", "--for", "nccl", "--format", "json", "--input", stacks_example("nccl-1573-pod.show_gids.txt")},
      {"NCCL_IB_HCA=mlx5_1"});
  const Json jh = parse_out(hca);
  EXPECT_TRUE(jh["settings"].empty()) << hca.out;
  EXPECT_EQ(jh["launch_settings"][0]["variable"], "NCCL_IB_HCA");
}

TEST(CheckPinsSettings, APinEqualToTheStacksOwnChoiceIsRedundant) {
  const std::string table = stacks_example("nccl-769.devinfo.txt");
  const auto r = run_with_env({"check", "--pins", "--input", table}, {"NCCL_IB_GID_INDEX=3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("redundant:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("delete NCCL_IB_GID_INDEX=3 from the environment"), std::string::npos) << r.out;
  const Json j =
      parse_out(run_with_env({"check", "--pins", "--json", "--input", table}, {"NCCL_IB_GID_INDEX=3"}));
  ASSERT_FALSE(j["pins"].empty());
  for (const auto& row : j["pins"]) EXPECT_EQ(row["redundant"], true);
  // Under AF_INET6 NCCL's own choice is index 0: the pin is what keeps it on 3.
  const auto six = run_with_env({"check", "--pins", "--input", table},
                                {"NCCL_IB_GID_INDEX=3", "NCCL_IB_ADDR_FAMILY=AF_INET6"});
  EXPECT_EQ(six.out.find("redundant"), std::string::npos) << six.out;
  // A pin off the stack's own choice is not redundant.
  const auto zero = run_with_env({"check", "--pins", "--input", table}, {"NCCL_IB_GID_INDEX=0"});
  EXPECT_EQ(zero.out.find("redundant"), std::string::npos) << zero.out;
  // --no-env: the environment's pin is not read at all.
  const auto no_env =
      run_with_env({"check", "--pins", "--no-env", "--input", table}, {"NCCL_IB_GID_INDEX=3"});
  EXPECT_NE(no_env.out.find("no GID index is pinned"), std::string::npos) << no_env.out;
}

}  // namespace
}  // namespace gidpolicy::test

namespace gidpolicy::test {
namespace {

TEST(FleetStackSettings, TheEnvironmentsPinIsTheStacksSpecOnEveryHostAndStillNamedPerHost) {
  const auto r = run_with_env({"fleet", "--stack", "nccl", "--device", "mlx5_1", stacks_data("fleet")},
                              {"NCCL_IB_GID_INDEX=7"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("--stack nccl:gid_index=7: the entry to use on 2 of 3 hosts"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  node-c: mlx5_0 port 1:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("launch setting read: NCCL_IB_GID_INDEX=7 (the environment)"), std::string::npos)
      << r.out;
  // --no-env: NCCL's own choice, its default spec.
  const auto d =
      run_with_env({"fleet", "--stack", "nccl", "--no-env", "--device", "mlx5_1", stacks_data("fleet")},
                   {"NCCL_IB_GID_INDEX=7"});
  EXPECT_NE(d.out.find("--stack nccl: the entry"), std::string::npos) << d.out;
  EXPECT_EQ(run_cli({"fleet", "--no-env", stacks_data("fleet")}).exit_code, 2);  // needs --stack
}

}  // namespace
}  // namespace gidpolicy::test

namespace gidpolicy::test {
namespace {

// The doctor's stacks block predicts each stack as the host launches it: a bundle's recorded
// environment pins NCCL_IB_GID_INDEX=3 (slot 3 empty there), and the block says so.
TEST(DoctorStacksSettings, TheBundlesPinIsInTheStacksBlock) {
  const auto r = run_cli(
      {"doctor", "--bundle", (test_data_dir() / "bundle" / "linux-stale-pin.bundle").string(), "--json"});
  const Json j = parse_out(r);
  bool seen = false;
  for (const auto& s : j["stacks"])
    if (s["stack"] == "nccl") {
      seen = true;
      EXPECT_EQ(s["index"], 3) << s.dump();
      EXPECT_NE(s["outcome"].get<std::string>().find("launched with NCCL_IB_GID_INDEX=3"), std::string::npos)
          << s.dump();
    }
  EXPECT_TRUE(seen) << r.out;
}

}  // namespace
}  // namespace gidpolicy::test

namespace gidpolicy::test {
namespace {

// UCX refuses an index that is neither "auto" nor a number: it does not start, whatever the port.
TEST(CheckStacksSettings, AnIndexUcxRefusesMeansItDoesNotStart) {
  const auto r = run_with_env(
      {"check", "--stacks", "--json", "--input", (example_tables_dir() / "nccl-769.devinfo.txt").string()},
      {"UCX_IB_GID_INDEX=x"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const Json j = parse_out(r);
  ASSERT_EQ(j["ports"].size(), 1u);
  for (const auto& s : j["ports"][0]["stacks"])
    if (s["stack"] == "ucx") {
      EXPECT_EQ(s["works"], false);
      EXPECT_EQ(s["outcome"].get<std::string>().rfind("does not start", 0), 0u) << s.dump();
    }
}

}  // namespace
}  // namespace gidpolicy::test
