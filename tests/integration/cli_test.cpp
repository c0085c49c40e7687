// The gidpolicy command-line tool, run as a process: every example table through `check`
// (verdicts asserted per profile), `show`, `select`, `convert`, `explain-errno`, `simulate`,
// malformed inputs, usage errors, exit codes, the --json documents, and check's speed.
#include "cli_run.hpp"

#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/json.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

namespace gidpolicy::test {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string example(const char* name) { return (example_tables_dir() / name).string(); }
std::string malformed(const char* name) { return (test_data_dir() / "malformed" / name).string(); }

// stdout as JSON; fails the test (and returns null) when it is not.
Json parse_json(const CliResult& r) {
  Json j = Json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "stdout is not JSON:\n" << r.out << "\nstderr:\n" << r.err;
  return j;
}

// A document's results (docs/cli.md): the envelope's keys first, then "ports", an array
// whatever the number of ports.
Json ports_of(const Json& doc, const char* schema) {
  EXPECT_TRUE(doc.is_object()) << doc.dump();
  if (!doc.is_object()) return Json::array();
  std::vector<std::string> keys;
  for (auto it = doc.begin(); it != doc.end() && keys.size() < 4; ++it) keys.push_back(it.key());
  EXPECT_TRUE(doc.contains("schema") && doc.contains("version") && doc.contains("host") &&
              doc.contains("source"))
      << doc.dump();
  EXPECT_EQ(doc.value("schema", ""), schema);
  EXPECT_TRUE(doc.contains("ports") && doc.at("ports").is_array()) << doc.dump();
  return doc.value("ports", Json::array());
}

// A usage error: exit 2, nothing on stdout, exactly one line on stderr naming what was wrong.
void expect_one_line_error(const CliResult& r, const std::string& mentions) {
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  auto lines = r.err_lines();
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("gidpolicy: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(mentions), std::string::npos) << lines[0];
}

// ---------------------------------------------------------------------------------------------
// check over every example table: what each named profile advertises, routes from, and what the
// driver model predicts. The reasons are domain facts (docs/facts.md#driver-models,
// examples/tables/SOURCES.md).

struct ProfileVerdict {
  const char* name;
  std::optional<unsigned> advertised;  // nullopt: the selection fails
  std::optional<unsigned> sgid;
  bool agrees;
  const char* outcome;  // predicted RTR outcome, or the error code when the selection fails
  int err = 0;          // predicted errno (error outcomes)
};

struct PortVerdicts {
  const char* device;
  std::vector<ProfileVerdict> profiles;
};

struct ExampleCase {
  const char* file;
  int exit_code;
  std::vector<PortVerdicts> ports;
};

const std::vector<ExampleCase>& example_cases() {
  static const std::vector<ExampleCase> cases = {
      // NCCL 769: the first IPv4-mapped GID is index 2 (RoCE v1); JACCL routes from 1 (fe80):
      // the families differ: RtrBuilder refuses it (sent anyway, Linux answers EINVAL). auto takes the v2
      // twin at 3.
      {"nccl-769.devinfo.txt",
       1,
       {{"mlx5_bond_0",
         {{"jaccl", 2, 1, false, "refused", 22},
          {"jaccl-legacy", 1, 1, true, "ok"},
          {"jaccl-fixed", 2, 2, true, "ok"},
          {"ds4", 2, 2, true, "ok"},
          {"ds4-linux", 1, 1, true, "ok"},  // first non-zero RoCE v2 entry: the fe80 one
          {"auto", 3, 3, true, "ok"}}}}},
      // ds4 QA: the mapped GID at index 1, the one table where JACCL's literal 1 is right.
      // ds4's Linux path needs RoCE v2 types, which Apple's devinfo does not print.
      {"apple-ds4qa-rdma_en1.devinfo.txt",
       1,
       {{"rdma_en1",
         {{"jaccl", 1, 1, true, "ok"},
          {"jaccl-legacy", 1, 1, true, "ok"},
          {"jaccl-fixed", 1, 1, true, "ok"},
          {"ds4", 1, 1, true, "ok"},
          {"ds4-linux", std::nullopt, std::nullopt, false, "no_candidate"},
          {"auto", 1, 1, true, "ok"}}}}},
      // MLX PR 4191: no IPv4 address on the port, only fe80 at 0: nothing can be advertised
      // (and index 1 was not printed, so what legacy JACCL would advertise is unknown).
      {"apple-mlx4191-rdma_en3-noipv4.devinfo.txt",
       1,
       {{"rdma_en3",
         {{"jaccl", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"jaccl-legacy", std::nullopt, std::nullopt, false, "entry_not_shown"},
          {"jaccl-fixed", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"ds4", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"ds4-linux", std::nullopt, std::nullopt, false, "no_candidate"},
          {"auto", std::nullopt, std::nullopt, false, "no_candidate"}}}}},
      // IBM CX-6: two link-local pairs push the IPv4 pair to 4/5.
      {"ibm-pr4-cx6.show_gids.txt",
       1,
       {{"mlx5_0",
         {{"jaccl", 4, 1, false, "refused", 22},
          {"jaccl-legacy", 1, 1, true, "ok"},
          {"jaccl-fixed", 4, 4, true, "ok"},
          {"ds4", 4, 4, true, "ok"},
          {"ds4-linux", 1, 1, true, "ok"},
          {"auto", 5, 5, true, "ok"}}}}},
      // Mooncake 1617: IPv6-only NICs, no IPv4-mapped GID: JACCL and ds4 cannot start; auto
      // takes the ULA, and refuses the mlx5 that has only link-local GIDs.
      {"mooncake-1617-ipv6only.show_gids.txt",
       1,
       {{"rocep105s0",
         {{"jaccl", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"jaccl-legacy", 1, 1, true, "ok"},
          {"jaccl-fixed", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"ds4", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"ds4-linux", 0, 0, true, "ok"},
          {"auto", 1, 1, true, "ok"}}},
        {"rocep121s0",
         {{"jaccl", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"jaccl-legacy", 1, 1, true, "ok"},
          {"jaccl-fixed", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"ds4", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"ds4-linux", 0, 0, true, "ok"},
          {"auto", 1, 1, true, "ok"}}},
        {"rocep193s0f0",
         {{"jaccl", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"jaccl-legacy", 1, 1, true, "ok"},
          {"jaccl-fixed", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"ds4", std::nullopt, std::nullopt, false, "no_ipv4_mapped_gid"},
          {"ds4-linux", 1, 1, true, "ok"},
          {"auto", std::nullopt, std::nullopt, false, "no_candidate"}}}}},
      // NCCL 1573 pod: 0-3 empty. JACCL routes from the empty index 1: ENODATA (61) on Linux;
      // legacy JACCL advertises the empty slot's zero GID (the builder refuses it) and, sent
      // anyway, Linux resolves the empty source slot before the zero destination: ENODATA too.
      {"nccl-1573-pod.show_gids.txt",
       1,
       {{"mlx5_0",
         {{"jaccl", 6, 1, false, "error", 61},
          {"jaccl-legacy", 1, 1, false, "refused", 61},
          {"jaccl-fixed", 6, 6, true, "ok"},
          {"ds4", 6, 6, true, "ok"},
          {"ds4-linux", 5, 5, true, "ok"},
          {"auto", 7, 7, true, "ok"}}},
        {"mlx5_1",
         {{"jaccl", 6, 1, false, "error", 61},
          {"jaccl-legacy", 1, 1, false, "refused", 61},
          {"jaccl-fixed", 6, 6, true, "ok"},
          {"ds4", 6, 6, true, "ok"},
          {"ds4-linux", 5, 5, true, "ok"},
          {"auto", 7, 7, true, "ok"}}}}},
      // ds4's own unit table: index 1 holds the same bytes as 0, so JACCL's literal 1 agrees.
      {"ds4-linux-unit.json",
       0,
       {{"ds4_test0",
         {{"jaccl", 0, 1, true, "ok"},
          {"jaccl-legacy", 1, 1, true, "ok"},
          {"jaccl-fixed", 0, 0, true, "ok"},
          {"ds4", 0, 0, true, "ok"},
          {"ds4-linux", 2, 2, true, "ok"},
          {"auto", 2, 2, true, "ok"}}}}},
      // MLX PR 3389: the Mac mini with the mapped GID at 2: JACCL routes from the empty 1 and
      // Apple's driver answers errno 22.
      {"macmini-mapped-at-2.json",
       1,
       {{"rdma_en2",
         {{"jaccl", 2, 1, false, "error", 22},
          {"jaccl-legacy", 1, 1, false, "refused", 22},
          {"jaccl-fixed", 2, 2, true, "ok"},
          {"ds4", 2, 2, true, "ok"},
          {"ds4-linux", std::nullopt, std::nullopt, false, "no_candidate"},
          {"auto", 2, 2, true, "ok"}}}}},
  };
  return cases;
}

TEST(ExampleTables, EveryExampleFileIsCovered) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(example_tables_dir()))
    if (e.path().extension() == ".txt" || e.path().extension() == ".json")
      files.push_back(e.path().filename().string());
  for (const auto& f : files) {
    bool covered = std::any_of(example_cases().begin(), example_cases().end(),
                               [&](const ExampleCase& c) { return f == c.file; });
    EXPECT_TRUE(covered) << f << " has no expected verdicts in cli_test.cpp";
  }
}

TEST(ExampleTables, CheckJsonVerdicts) {
  for (const auto& c : example_cases()) {
    SCOPED_TRACE(c.file);
    // Every named profile asked for by name: each is checked whatever the link layer (the
    // default leaves out a stack's profiles where it never runs: DefaultCheckLeavesOut... below).
    CliResult r = run_cli({"check", "--input", example(c.file), "--json", "--profile", "jaccl", "--profile",
                           "jaccl-legacy", "--profile", "jaccl-fixed", "--profile", "ds4", "--profile",
                           "ds4-linux", "--profile", "auto"});
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_EQ(r.err, "");
    Json doc = parse_json(r);
    // An array of ports whatever their number, under one envelope (docs/cli.md).
    Json ports = ports_of(doc, "gidpolicy.check");
    EXPECT_EQ(doc.at("version"), 3);
    EXPECT_TRUE(doc.at("host").is_null());  // a table file: its host is not known
    EXPECT_EQ(doc.at("source"), example(c.file));
    ASSERT_EQ(ports.size(), c.ports.size());
    for (std::size_t k = 0; k < c.ports.size(); ++k) {
      const Json& port = ports[k];
      EXPECT_EQ(port.at("device"), c.ports[k].device);
      EXPECT_EQ(port.at("port"), 1);
      EXPECT_FALSE(port.contains("schema"));  // version 2 repeated it on each port
      const Json& profiles = port.at("profiles");
      ASSERT_EQ(profiles.size(), c.ports[k].profiles.size());
      for (std::size_t p = 0; p < profiles.size(); ++p) {
        const ProfileVerdict& want = c.ports[k].profiles[p];
        const Json& got = profiles[p];
        SCOPED_TRACE(std::string(c.ports[k].device) + " " + want.name);
        for (const char* key :
             {"profile", "ok", "advertised_index", "advertised_gid", "sgid_index", "agrees", "predicted_rtr"})
          EXPECT_TRUE(got.contains(key)) << key;
        EXPECT_EQ(got.at("profile"), want.name);
        EXPECT_FALSE(got.contains("name"));  // version 1's key for the spec
        EXPECT_EQ(got.at("ok").get<bool>(), want.advertised.has_value());
        EXPECT_EQ(got.at("agrees").get<bool>(), want.agrees);
        if (!want.advertised) {
          EXPECT_TRUE(got.at("advertised_index").is_null());
          EXPECT_TRUE(got.at("advertised_gid").is_null());
          EXPECT_TRUE(got.at("sgid_index").is_null());
          EXPECT_TRUE(got.at("predicted_rtr").is_null());
          EXPECT_EQ(got.at("error").at("code"), want.outcome);
          continue;
        }
        EXPECT_EQ(got.at("advertised_index"), *want.advertised);
        EXPECT_EQ(got.at("sgid_index"), *want.sgid);
        EXPECT_TRUE(got.at("advertised_gid").is_string());
        EXPECT_EQ(got.at("predicted_rtr").at("outcome"), want.outcome);
        if (want.err) {
          EXPECT_EQ(got.at("predicted_rtr").at("errno"), want.err);
        }
        EXPECT_TRUE(got.at("error").is_null());
      }
    }
  }
}

// The default check shows a stack's named profiles only where the stack runs: JACCL's three and
// ds4's macOS scan not on RoCE, ds4's Linux path not on Thunderbolt. A healthy RoCE port passes.
TEST(ExampleTables, DefaultCheckLeavesOutProfilesWhoseStackDoesNotRunThere) {
  const std::map<std::string, int> exit_codes{
      {"nccl-769.devinfo.txt", 0},
      {"apple-ds4qa-rdma_en1.devinfo.txt", 0},
      {"apple-mlx4191-rdma_en3-noipv4.devinfo.txt", 1},
      {"ibm-pr4-cx6.show_gids.txt", 0},
      {"mooncake-1617-ipv6only.show_gids.txt", 1},  // auto: no candidate
      {"nccl-1573-pod.show_gids.txt", 0},
      {"ds4-linux-unit.json", 0},
      {"macmini-mapped-at-2.json", 1}};  // stock JACCL
  const Json roce = Json::array({"jaccl", "jaccl-legacy", "jaccl-fixed", "ds4"});
  const Json mac = Json::array({"ds4-linux"});
  for (const auto& c : example_cases()) {
    SCOPED_TRACE(c.file);
    CliResult r = run_cli({"check", "--input", example(c.file), "--json"});
    EXPECT_EQ(r.exit_code, exit_codes.at(c.file)) << r.out;
    Json doc = parse_json(r);
    for (const Json& port : ports_of(doc, "gidpolicy.check")) {
      const Json& left_out = port.at("link_layer") == "thunderbolt" ? mac : roce;
      EXPECT_EQ(port.at("not_run"), left_out);
      for (const Json& p : port.at("profiles"))
        EXPECT_EQ(std::find(left_out.begin(), left_out.end(), p.at("profile")), left_out.end())
            << p.at("profile");
    }
  }
}

TEST(ExampleTables, CheckTextShowsEveryProfileAndExplainsDisagreements) {
  CliResult r = run_cli({"check", "--input", example("macmini-mapped-at-2.json")});
  EXPECT_EQ(r.exit_code, 1);
  for (const char* s : {"rdma_en2 port 1 (thunderbolt", "RTR predicted for apple_thunderbolt", "PROFILE",
                        "jaccl", "jaccl-legacy", "jaccl-fixed", "ds4-linux", "auto", "EINVAL (22)",
                        "jaccl: sgid_index 1 is empty; the advertised GID ::ffff:10.99.0.3 is at index 2"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

// `show_gids | grep mlx5_0` of the NCCL pod's paste (rows only, one device): check and select
// read it and say that the slots it does not list are unknown, in the words a devinfo paste gets.
TEST(ExampleTables, CheckAndSelectOfAGreppedShowGidsPasteNameTheUnknownSlots) {
  std::ifstream whole(example("nccl-1573-pod.show_gids.txt"));
  std::string cut;
  for (std::string line; std::getline(whole, line);)
    if (line.starts_with("mlx5_0\t")) cut += line + "\n";
  ASSERT_FALSE(cut.empty());
  const fs::path file =
      fs::temp_directory_path() / ("gidpolicy-cut-" + std::to_string(::getpid()) + ".show_gids.txt");
  std::ofstream(file, std::ios::binary) << cut;
  const std::string note = "indices not listed were not printed by the source";
  CliResult check = run_cli({"check", "--input", file.string()});
  CliResult select = run_cli({"select", "--input", file.string()});
  CliResult devinfo = run_cli({"check", "--input", example("nccl-769.devinfo.txt")});
  CliResult whole_check = run_cli({"check", "--input", example("nccl-1573-pod.show_gids.txt")});
  fs::remove(file);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("mlx5_0 port 1 (ethernet"), std::string::npos) << check.out;
  EXPECT_EQ(check.out.find("mlx5_1"), std::string::npos) << "one device only:\n" << check.out;
  EXPECT_NE(check.out.find(note), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("they are unknown and may hold GIDs"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("show_gids rows without the header"), std::string::npos) << check.out;
  EXPECT_EQ(select.exit_code, 0) << select.out << select.err;
  EXPECT_NE(select.out.find("::ffff:10.152.0.12"), std::string::npos) << select.out;
  EXPECT_NE(select.out.find(note), std::string::npos) << select.out;
  // The same sentence for a devinfo paste; none for the whole show_gids output.
  EXPECT_NE(devinfo.out.find(note), std::string::npos) << devinfo.out;
  EXPECT_EQ(whole_check.out.find(note), std::string::npos) << whole_check.out;
}

TEST(ExampleTables, CheckPlatformOverride) {
  // The same Thunderbolt table judged as if it were a Linux port: the empty slot is ENODATA.
  CliResult r =
      run_cli({"check", "--input", example("macmini-mapped-at-2.json"), "--platform", "linux", "--json"});
  Json doc = ports_of(parse_json(r), "gidpolicy.check").at(0);
  EXPECT_EQ(doc.at("platform"), "linux");
  EXPECT_EQ(doc.at("profiles").at(0).at("predicted_rtr").at("errno"), 61);
  EXPECT_EQ(doc.at("profiles").at(0).at("predicted_rtr").at("errno_name"), "ENODATA");
}

TEST(ExampleTables, CheckWithChosenProfiles) {
  CliResult r = run_cli({"check", "--input", example("nccl-769.devinfo.txt"), "--profile", "jaccl-fixed",
                         "--profile", "auto:roce=v1", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Json doc = ports_of(parse_json(r), "gidpolicy.check").at(0);
  ASSERT_EQ(doc.at("profiles").size(), 2u);
  EXPECT_EQ(doc.at("profiles").at(1).at("advertised_index"), 2);
}

TEST(ExampleTables, ShowEveryTable) {
  for (const auto& c : example_cases()) {
    SCOPED_TRACE(c.file);
    CliResult r = run_cli({"show", "--input", example(c.file), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Json doc = parse_json(r);
    Json ports = ports_of(doc, "gidpolicy.tables");
    EXPECT_EQ(doc.at("version"), 2);
    ASSERT_EQ(ports.size(), c.ports.size());
    for (const auto& p : ports)
      for (const char* key : {"device", "port", "state", "link_layer", "gid_tbl_len", "holes", "entries"})
        EXPECT_TRUE(p.contains(key)) << key;
  }
  CliResult text = run_cli({"show", "--input", example("nccl-769.devinfo.txt")});
  EXPECT_EQ(text.exit_code, 0);
  for (const char* s : {"mlx5_bond_0 port 1: ethernet, active, gid_tbl_len 256", "INDEX", "FLAGS",
                        "::ffff:200.0.209.6", "200.0.209.6", "ipv4-mapped", "link-local", "may hold GIDs"})
    EXPECT_NE(text.out.find(s), std::string::npos) << s << "\n" << text.out;
}

// What `show --json` prints is an input too: the doctor's own fix for a table taken before an
// address was added is `gidpolicy show --json > TABLE.json`, then `--input TABLE.json`.
TEST(ExampleTables, ShowJsonOutputIsAnInputThatReadsBackTheSameTables) {
  const fs::path dir = fs::temp_directory_path() / ("gidpolicy-showjson-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const auto& c : example_cases()) {
    SCOPED_TRACE(c.file);
    CliResult shown = run_cli({"show", "--input", example(c.file), "--json"});
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    const fs::path snap = dir / (std::string(c.file) + ".show.json");
    std::ofstream(snap) << shown.out;
    // The same tables: shown again from the snapshot, the same ports (the source differs).
    CliResult again = run_cli({"show", "--input", snap.string(), "--json"});
    EXPECT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(ports_of(parse_json(again), "gidpolicy.tables"),
              ports_of(parse_json(shown), "gidpolicy.tables"));
    EXPECT_EQ(parse_json(again).at("source"), snap.string());
    // And the same verdicts: select and the doctor read it as they read the original.
    CliResult from_original = run_cli({"select", "--input", example(c.file), "--profile", "auto"});
    CliResult from_snapshot = run_cli({"select", "--input", snap.string(), "--profile", "auto"});
    EXPECT_EQ(from_snapshot.exit_code, from_original.exit_code) << from_snapshot.err;
    EXPECT_EQ(from_snapshot.out, from_original.out);
    CliResult doctor = run_cli({"doctor", "--input", snap.string()});
    EXPECT_NE(doctor.exit_code, 2) << doctor.err;
    CliResult piped = run_cli({"select", "--input", "-", "--profile", "auto"}, snap);
    EXPECT_EQ(piped.out, from_original.out) << piped.err;
  }
  // Neither form: the canonical reader's complaint, then the snapshot reader's.
  const fs::path neither = dir / "neither.json";
  std::ofstream(neither) << R"({"schema": "other", "ports": []})"
                         << "\n";
  CliResult r = run_cli({"select", "--input", neither.string(), "--profile", "auto"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("schema: expected \"gidpolicy.tables\"; nor is it a port as `gidpolicy show --json` "
                       "prints it: "),
            std::string::npos)
      << r.err;
  const fs::path bad_array = dir / "bad-array.json";
  std::ofstream(bad_array) << R"([{"device": "mlx5_0", "port": 1, "entries": [{"index": 1, "gid": "nope"}]}])"
                           << "\n";
  r = run_cli({"select", "--input", bad_array.string(), "--profile", "auto"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("[0]"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(ExampleTables, ShowJsonEntriesAndFlags) {
  CliResult r = run_cli({"show", "--input", example("macmini-mapped-at-2.json"), "--json"});
  Json doc = ports_of(parse_json(r), "gidpolicy.tables").at(0);
  EXPECT_EQ(doc.at("link_layer"), "thunderbolt");
  EXPECT_EQ(doc.at("gid_tbl_len"), 16);
  const Json& e = doc.at("entries");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].at("flags"), Json::array({"link-local"}));
  EXPECT_EQ(e[1].at("state"), "empty");
  EXPECT_TRUE(e[1].at("gid").is_null());
  EXPECT_EQ(e[1].at("flags"), Json::array({"empty"}));
  EXPECT_EQ(e[2].at("gid"), "::ffff:10.99.0.3");
  EXPECT_EQ(e[2].at("ipv4"), "10.99.0.3");
  EXPECT_EQ(e[2].at("flags"), Json::array({"ipv4-mapped"}));
}

// The envelope's source is the path as given: a byte of it that is not UTF-8 is written as
// U+FFFD, never a failed document.
TEST(ExampleTables, ShowJsonOfAFileWhoseNameIsNotUtf8) {
  const fs::path dir = fs::temp_directory_path() / ("gidpolicy-nonutf8-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "t\xff.json";
  fs::copy_file(example("macmini-mapped-at-2.json"), file);
  CliResult r = run_cli({"show", "--json", "--input", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Json doc = parse_json(r);
  EXPECT_NE(doc.value("source", "").find("t\xef\xbf\xbd.json"), std::string::npos) << r.out;
  EXPECT_EQ(ports_of(doc, "gidpolicy.tables").size(), 1u);
  fs::remove_all(dir);
}

TEST(ExampleTables, ShowSysfsFixtureWithDeviceFilter) {
  CliResult r = run_cli({"show", "--sysfs", (test_data_dir() / "sysfs" / "class" / "infiniband").string(),
                         "--device", "mlx5_0", "--port", "1", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Json doc = ports_of(parse_json(r), "gidpolicy.tables").at(0);
  EXPECT_EQ(doc.at("device"), "mlx5_0");
  EXPECT_EQ(doc.at("entries").size(), 4u);
  EXPECT_EQ(doc.at("entries").at(0).at("netdev"), "net1");
}

// ---------------------------------------------------------------------------------------------
TEST(Select, JsonArrayOfOneForOnePort) {
  CliResult r =
      run_cli({"select", "--profile", "auto", "--input", example("nccl-769.devinfo.txt"), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const Json doc = parse_json(r);
  const Json ports = ports_of(doc, "gidpolicy.select");
  EXPECT_EQ(doc.at("version"), 3);
  ASSERT_EQ(ports.size(), 1u);
  const Json& j = ports[0];
  for (const char* key :
       {"device", "port", "profile", "ok", "index", "gid", "sgid_index", "agrees", "error", "trace"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_FALSE(j.contains("schema")) << "version 3: the envelope holds it, once";
  EXPECT_FALSE(j.contains("policy")) << "version 2 names the spec \"profile\"";
  EXPECT_EQ(j.at("device"), "mlx5_bond_0");
  EXPECT_EQ(j.at("profile"), "auto");
  EXPECT_EQ(j.at("ok"), true);
  EXPECT_EQ(j.at("index"), 3);
  EXPECT_EQ(j.at("gid"), "::ffff:200.0.209.6");
  EXPECT_EQ(j.at("sgid_index"), 3);
  EXPECT_EQ(j.at("agrees"), true);
  EXPECT_TRUE(j.at("error").is_null());
  ASSERT_TRUE(j.at("trace").is_array());
  EXPECT_FALSE(j.at("trace").empty());
}

TEST(Select, JsonArrayForSeveralPortsAndFailures) {
  CliResult r = run_cli(
      {"select", "--policy", "jaccl", "--input", example("mooncake-1617-ipv6only.show_gids.txt"), "--json"});
  EXPECT_EQ(r.exit_code, 1);
  const Json j = ports_of(parse_json(r), "gidpolicy.select");
  ASSERT_EQ(j.size(), 3u);
  for (const auto& item : j) {
    EXPECT_EQ(item.at("ok"), false);
    EXPECT_TRUE(item.at("index").is_null());
    EXPECT_EQ(item.at("error").at("code"), "no_ipv4_mapped_gid");
    EXPECT_NE(item.at("error").at("message").get<std::string>().find("assign an IPv4 address"),
              std::string::npos);
    EXPECT_FALSE(item.at("trace").empty()) << "a failure always says what was looked at";
  }
}

TEST(Select, DisagreementExitsOne) {
  CliResult r = run_cli({"select", "--policy", "jaccl", "--input", example("macmini-mapped-at-2.json")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("rdma_en2 port 1 index 2: jaccl: ::ffff:10.99.0.3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sgid_index 1, DISAGREES: sgid_index 1 is empty"), std::string::npos) << r.out;
}

TEST(Select, ExplainPrintsTheTrace) {
  CliResult r = run_cli(
      {"select", "--policy", "jaccl-fixed", "--explain", "--input", example("macmini-mapped-at-2.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"[0] not_ipv4_mapped", "[1] empty", "[2] chosen"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(Select, ReadsStdin) {
  CliResult r = run_cli({"select", "--input", "-", "--policy", "validated:index=3,type=roce_v2"},
                        example_tables_dir() / "nccl-769.devinfo.txt");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("mlx5_bond_0 port 1 index 3: validated:index=3,type=roce_v2: ::ffff:200.0.209.6"),
            std::string::npos)
      << r.out;
}

// ---------------------------------------------------------------------------------------------
TEST(Convert, ShowGidsComesBackByteForByte) {
  const std::string original = read_file(example_tables_dir() / "ibm-pr4-cx6.show_gids.txt");
  std::string tmpl = (fs::temp_directory_path() / "gidpolicy-conv-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const fs::path json = fs::path(tmpl) / "t.json";
  CliResult to_json = run_cli({"convert", "--to", "json", "--input", example("ibm-pr4-cx6.show_gids.txt"),
                               "--output", json.string()});
  EXPECT_EQ(to_json.exit_code, 0) << to_json.err;
  CliResult back = run_cli({"convert", "--to", "show_gids", "--input", json.string()});
  EXPECT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(back.out, original);
  fs::remove_all(tmpl);
}

TEST(Convert, DevinfoOfAJsonTableReadsBackAndSaysWhatItDrops) {
  CliResult r = run_cli({"convert", "--to", "devinfo", "--input", example("ds4-linux-unit.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\t\t\tGID[  3]:\t\t::ffff:127.0.0.1, RoCE v2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\t\t\tGID[  0]:\t\t0000:0000:0000:0000:0000:ffff:7f00:0001, RoCE v1\n"),
            std::string::npos);
  auto note = r.err_lines();
  ASSERT_EQ(note.size(), 1u) << r.err;
  EXPECT_NE(note[0].find("note: devinfo cannot hold all of"), std::string::npos);
  EXPECT_NE(note[0].find("4 of 5 entries kept"), std::string::npos) << note[0];
}

TEST(Convert, SysfsTreeReadsBack) {
  std::string tmpl = (fs::temp_directory_path() / "gidpolicy-sysfs-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  CliResult w = run_cli(
      {"convert", "--to", "sysfs", "--input", example("nccl-1573-pod.show_gids.txt"), "--output", tmpl});
  EXPECT_EQ(w.exit_code, 0) << w.err;
  EXPECT_EQ(read_file(fs::path(tmpl) / "mlx5_1" / "ports" / "1" / "gids" / "6"),
            "0000:0000:0000:0000:0000:ffff:0a98:040c\n");
  CliResult r = run_cli({"check", "--sysfs", tmpl, "--json"});
  Json doc = ports_of(parse_json(r), "gidpolicy.check");
  ASSERT_EQ(doc.size(), 2u);
  EXPECT_EQ(doc.at(1).at("profiles").at(1).at("profile"),
            "auto");  // after ds4-linux: JACCL's do not run on RoCE
  EXPECT_EQ(doc.at(1).at("profiles").at(1).at("advertised_index"), 7);
  fs::remove_all(tmpl);
}

// ---------------------------------------------------------------------------------------------
TEST(ExplainErrno, UsesWhatTheTableHoldsAtTheIndex) {
  CliResult r =
      run_cli({"explain-errno", "22", "--input", example("macmini-mapped-at-2.json"), "--sgid-index", "1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("EINVAL (22) on darwin"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[confirmed] sgid_index 1 is empty"), std::string::npos) << r.out;
}

TEST(ExplainErrno, PlatformDecidesTheName) {
  CliResult linux_61 = run_cli({"explain-errno", "61", "--platform", "linux"});
  CliResult darwin_61 = run_cli({"explain-errno", "61", "--platform", "darwin"});
  EXPECT_EQ(linux_61.exit_code, 0);
  EXPECT_NE(linux_61.out.find("ENODATA (61) on linux"), std::string::npos) << linux_61.out;
  EXPECT_NE(darwin_61.out.find("ECONNREFUSED (61) on darwin"), std::string::npos) << darwin_61.out;
  CliResult by_name = run_cli({"explain-errno", "ETIMEDOUT", "--platform", "darwin"});
  EXPECT_NE(by_name.out.find("(60) on darwin"), std::string::npos) << by_name.out;
}

// 61 and 60 on macOS are what JACCL users see from its TCP side channel: both explanations for a
// bare number, the side channel's alone when the error line says so.
TEST(ExplainErrno, ABareNumberGetsTheSideChannelsCausesToo) {
  const CliResult refused = run_cli({"explain-errno", "61", "--platform", "darwin"});
  EXPECT_EQ(refused.exit_code, 0) << refused.err;
  EXPECT_NE(refused.out.find("from the side channel"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("nothing listens at that address and port"), std::string::npos) << refused.out;
  const CliResult timed_out = run_cli({"explain-errno", "60", "--platform", "darwin"});
  EXPECT_NE(timed_out.out.find("routing from index 0"), std::string::npos) << timed_out.out;  // the RTR's
  EXPECT_NE(timed_out.out.find("at connect(): nothing answered the connection request"), std::string::npos)
      << timed_out.out;
  // EINVAL is no socket error a side channel meets: the RTR's causes alone.
  const CliResult einval = run_cli({"explain-errno", "22", "--platform", "darwin"});
  EXPECT_EQ(einval.out.find("side channel"), std::string::npos) << einval.out;
  // --side rtr: the RTR's alone.
  const CliResult rtr = run_cli({"explain-errno", "60", "--platform", "darwin", "--side", "rtr"});
  EXPECT_EQ(rtr.out.find("side channel"), std::string::npos) << rtr.out;
  // Linux numbers its socket errors its own way: 111, not 61.
  const CliResult linux_refused = run_cli({"explain-errno", "ECONNREFUSED", "--platform", "linux"});
  EXPECT_NE(linux_refused.out.find("ECONNREFUSED (111) on linux"), std::string::npos) << linux_refused.out;
}

TEST(ExplainErrno, AnErrorLineSaysItsSideItsCallAndJacclsPlatform) {
  // A [jaccl] line is from macOS (JACCL loads librdma.dylib): darwin without --platform.
  const CliResult connect = run_cli({"explain-errno", "RuntimeError: [jaccl] Couldn't connect (error: 60)"});
  EXPECT_EQ(connect.exit_code, 0) << connect.err;
  EXPECT_NE(connect.out.find("at connect()"), std::string::npos) << connect.out;
  EXPECT_NE(connect.out.find("ETIMEDOUT (60) on darwin"), std::string::npos) << connect.out;
  EXPECT_EQ(connect.out.find("routing from index 0"), std::string::npos) << connect.out;  // no RTR
  const CliResult rtr = run_cli({"explain-errno", "[jaccl] Changing queue pair to RTR failed with errno 22",
                                 "--input", example("macmini-mapped-at-2.json"), "--sgid-index", "1"});
  EXPECT_NE(rtr.out.find("[confirmed] sgid_index 1 is empty"), std::string::npos) << rtr.out;
  EXPECT_EQ(rtr.out.find("side channel"), std::string::npos) << rtr.out;
  const CliResult closed = run_cli({"explain-errno", "[jaccl] Recv failed: peer closed the side channel"});
  EXPECT_NE(closed.out.find("read the other ranks' logs"), std::string::npos) << closed.out;
  const CliResult init =
      run_cli({"explain-errno", "[jaccl] Changing queue pair to INIT failed with errno 22"});
  EXPECT_NE(init.out.find("an INIT failure is not about the GID"), std::string::npos) << init.out;
  // A --side the line contradicts is refused, naming the line's side.
  expect_one_line_error(run_cli({"explain-errno", "[jaccl] Couldn't connect (error: 60)", "--side", "rtr"}),
                        "the error line says the number came from the side channel's socket");
  // Text that is neither a number, a name nor a known line: refused, shown escaped.
  const CliResult bad = run_cli({"explain-errno", "oops \x1b[2J"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("found oops \\e[2J"), std::string::npos) << bad.err;
}

// ---------------------------------------------------------------------------------------------
#if GIDPOLICY_CLI_TESTS_HAVE_FAKES
TEST(Simulate, JacclFailsEveryPairWithTheMacMiniAutoConnectsAll) {
  const std::string mini = example("macmini-mapped-at-2.json");
  const std::string good = example("apple-ds4qa-rdma_en1.devinfo.txt");
  CliResult jaccl =
      run_cli({"simulate", "--topology", "mesh", "--profile", "jaccl", mini, good, good + ":rdma_en1:1"});
  EXPECT_EQ(jaccl.exit_code, 1) << jaccl.err;
  EXPECT_NE(jaccl.out.find("1 of 3 pairs connected"), std::string::npos) << jaccl.out;
  EXPECT_NE(jaccl.out.find("FAILED"), std::string::npos);
  EXPECT_NE(jaccl.out.find("sgid_index 1 is empty"), std::string::npos) << jaccl.out;
  CliResult fixed =
      run_cli({"simulate", "--topology", "ring", "--profile", "auto", mini, good, good + ":rdma_en1"});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out << fixed.err;
  EXPECT_NE(fixed.out.find("3 of 3 pairs connected"), std::string::npos) << fixed.out;
}

// Each direction names its own side's RTR refusal, not the first side's again.
TEST(Simulate, EachDirectionNamesItsOwnSidesRefusal) {
  const std::string v4 = example("nccl-769.devinfo.txt");
  const std::string v6 = example("mooncake-1617-ipv6only.show_gids.txt");
  CliResult r = run_cli({"simulate", "--profile", "auto:family=any", v4, v6});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string a_to_b = "nccl-769.devinfo.txt -> mooncake-1617-ipv6only.show_gids.txt: ";
  const std::string b_to_a = "mooncake-1617-ipv6only.show_gids.txt -> nccl-769.devinfo.txt: ";
  const auto at_a = r.out.find(a_to_b);
  const auto at_b = r.out.find(b_to_a);
  ASSERT_NE(at_a, std::string::npos) << r.out;
  ASSERT_NE(at_b, std::string::npos) << r.out;
  EXPECT_EQ(r.out.compare(at_a + a_to_b.size(), 37, "nccl-769.devinfo.txt cannot build its"), 0) << r.out;
  EXPECT_EQ(r.out.compare(at_b + b_to_a.size(), 53, "mooncake-1617-ipv6only.show_gids.txt cannot build its"),
            0)
      << r.out;
}

// A v1-only host against a v2 host: both RTRs pass, neither port answers the other's framing;
// same-version pairs connect (tests/data/roce_versions).
TEST(Simulate, RoceV1AgainstV2TimesOutNamingBothTypes) {
  const auto data = [](const char* f) { return (test_data_dir() / "roce_versions" / f).string(); };
  CliResult r = run_cli({"simulate", "--profile", "auto", data("v1-only-a.json"), data("v2-a.json")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("0 of 1 pairs connected"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("v1-only-a.json sends RoCE v1 frames (sgid_index 1); the peer's port routes RoCE v2: "
                       "nothing is delivered, the sender's retries run out"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("v2-a.json sends RoCE v2 frames (sgid_index 3); the peer's port routes RoCE v1"),
            std::string::npos)
      << r.out;
  for (const auto& [x, y] :
       {std::pair{"v1-only-a.json", "v1-only-b.json"}, std::pair{"v2-a.json", "v2-b.json"}}) {
    CliResult same = run_cli({"simulate", "--profile", "auto", data(x), data(y)});
    EXPECT_EQ(same.exit_code, 0) << x << " " << y << ": " << same.out << same.err;
    EXPECT_NE(same.out.find("1 of 1 pairs connected"), std::string::npos) << same.out;
  }
}

TEST(Simulate, NeedsTwoHosts) {
  expect_one_line_error(run_cli({"simulate", example("macmini-mapped-at-2.json")}), "at least two tables");
}
#endif

// ---------------------------------------------------------------------------------------------
// Malformed inputs: exit 2, one line on stderr naming the file (and line) and what was expected.
struct MalformedCase {
  const char* file;
  const char* mentions;
};
// Readable test names in ctest (gtest would print the struct's bytes).
void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.file; }

class Malformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(Malformed, EverySubcommandRefusesWithOneLine) {
  const auto& c = GetParam();
  const std::string path = malformed(c.file);
  for (const char* sub : {"show", "select", "check", "convert"}) {
    SCOPED_TRACE(sub);
    std::vector<std::string> args{sub, "--input", path};
    if (std::string(sub) == "convert") args.insert(args.end(), {"--to", "json"});
    if (std::string(sub) != "convert") args.emplace_back("--json");
    CliResult r = run_cli(args);
    expect_one_line_error(r, path + c.mentions);
  }
  // The same bytes on stdin are named <stdin>.
  CliResult r = run_cli({"check", "--input", "-"}, fs::path(path));
  expect_one_line_error(r, std::string("<stdin>") + c.mentions);
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, Malformed,
    ::testing::Values(MalformedCase{"empty.txt", ": empty input"},
                      MalformedCase{"blank.txt", ": empty input"},
                      MalformedCase{"garbage.bin", ":1:1: binary data"},
                      MalformedCase{"wrong-format.txt", ":1: expected gidpolicy JSON"},
                      MalformedCase{"wrong-schema.json", ": schema: expected"},
                      MalformedCase{"truncated.json", ":11:5: invalid JSON"},
                      MalformedCase{"truncated.devinfo.txt", ":12: GID[2]: expected a GID"},
                      MalformedCase{"truncated.show_gids.txt", ":6: GID: expected 8 groups"},
                      MalformedCase{"bad-gid.show_gids.txt", ":3: GID:"}),
    [](const ::testing::TestParamInfo<MalformedCase>& param_info) {
      std::string n = param_info.param.file;
      for (auto& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

TEST(Malformed, MissingFile) {
  expect_one_line_error(run_cli({"show", "--input", "/nonexistent/table.txt"}),
                        "/nonexistent/table.txt: No such file");
}

// ---------------------------------------------------------------------------------------------
TEST(Usage, BadUsageExitsTwoWithOneLine) {
  expect_one_line_error(run_cli({}), "expected a subcommand");
  expect_one_line_error(run_cli({"frobnicate"}), "unknown subcommand 'frobnicate'");
  expect_one_line_error(
      run_cli({"check", "--platform", "windows", "--input", example("nccl-769.devinfo.txt")}), "--platform");
  expect_one_line_error(
      run_cli({"select", "--policy", "validated:idx=3", "--input", example("nccl-769.devinfo.txt")}),
      "at position 10");
  expect_one_line_error(run_cli({"show", "--input", example("nccl-769.devinfo.txt"), "--sysfs", "/tmp"}),
                        "give one source: --input, --sysfs or --bundle, not two");
  expect_one_line_error(run_cli({"show", "--input", example("nccl-769.devinfo.txt"), "--device", "mlx5_9"}),
                        "has no device mlx5_9 (it has: mlx5_bond_0 port 1)");
  expect_one_line_error(run_cli({"convert", "--to", "sysfs", "--input", example("nccl-769.devinfo.txt")}),
                        "--output DIR");
  expect_one_line_error(run_cli({"explain-errno", "EWHAT"}), "expected an errno number or name");
}

// CLI11's own texts are said in the tool's words: the option, what it
// expects and what was found, on one line, exit 2.
TEST(Usage, ParseErrorsNameTheOptionAndWhatItExpects) {
  const std::string t = example("nccl-769.devinfo.txt");
  expect_one_line_error(run_cli({"explain-errno", "22", "--sgid-index", "-1"}),
                        "--sgid-index: expected an index 0..4294967295");
  expect_one_line_error(run_cli({"explain-errno", "22", "--sgid-index", "-1"}), "found '-1'");
  expect_one_line_error(run_cli({"select", "--input", t, "--input", t}),
                        "--input: given 2 times; give it once");
  expect_one_line_error(run_cli({"select", "--input", t, "--port", "0"}),
                        "--port: expected a port number 1..255, found '0'");
  expect_one_line_error(run_cli({"explain-errno"}), "missing errno: expected an errno number or name");
  // Inside a subcommand CLI11 names the extras error after the subcommand: matched by text.
  expect_one_line_error(run_cli({"show", "--bogus"}), "unexpected argument --bogus");
  expect_one_line_error(run_cli({"select", "--input", t, "extra", "more"}), "unexpected arguments ");
  EXPECT_EQ(run_cli({"show", "--bogus"}).err.find("The following"), std::string::npos);
  for (const char* raw : {"Could not convert", "At Most", "required but received"}) {
    EXPECT_EQ(run_cli({"explain-errno", "22", "--sgid-index", "x"}).err.find(raw), std::string::npos) << raw;
    EXPECT_EQ(run_cli({"select", "--input", t, "--input", t}).err.find(raw), std::string::npos) << raw;
  }
  // A port the input does not have is named as a port, not as "a device port 2".
  CliResult port = run_cli({"select", "--input", t, "--port", "2"});
  expect_one_line_error(port, "has no port 2 (it has: mlx5_bond_0 port 1)");
  EXPECT_EQ(port.err.find("a device"), std::string::npos) << port.err;
}

// A live --device on a machine without RDMA says "no RDMA devices" once.
TEST(Usage, NoRdmaIsSaidOnce) {
  CliResult r = run_cli({"select", "--device", "mlx5_0"});
  if (r.exit_code == 2) {
    const auto first = r.err.find("no RDMA devices");
    if (first != std::string::npos) {
      EXPECT_EQ(r.err.find("no RDMA devices", first + 1), std::string::npos) << r.err;
    }
  }
}

// Through the tool: no cause is both confirmed and ruled out, and the
// zero destination GID is named as `check` predicts it.
TEST(ExplainErrno, NeverConfirmsAndRulesOutOneCause) {
  for (const char* idx : {"20", "256"}) {
    CliResult r =
        run_cli({"explain-errno", "22", "--input", example("macmini-mapped-at-2.json"), "--sgid-index", idx});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> confirmed, ruled_out;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      const auto text = [&](const std::string& tag) {
        const auto at = line.find(tag);
        if (at == std::string::npos) return std::string();
        std::string t = line.substr(at + tag.size());
        return t.substr(0, t.find(" -> "));
      };
      if (auto c = text("[confirmed] "); !c.empty()) confirmed.push_back(c);
      if (auto c = text("[ruled_out] "); !c.empty()) ruled_out.push_back(c);
    }
    ASSERT_FALSE(confirmed.empty()) << r.out;
    for (const auto& c : confirmed)
      for (const auto& x : ruled_out) EXPECT_NE(c, x) << r.out;
  }
}

TEST(ExplainErrno, ZeroDestinationIsNamedAsCheckPredictsIt) {
  const std::string mini = example("macmini-mapped-at-2.json");
  // jaccl-legacy advertises index 1's zeros: a like peer's dgid is zero.
  Json doc = ports_of(parse_json(run_cli({"check", "--input", mini, "--profile", "jaccl-legacy", "--json"})),
                      "gidpolicy.check")
                 .at(0);
  const Json& predicted = doc.at("profiles").at(0).at("predicted_rtr");
  EXPECT_EQ(predicted.at("outcome"), "refused");
  // jaccl-legacy also routes from index 1, empty here: the source slot is judged first, as
  // Linux's modify_qp resolves it before the destination.
  EXPECT_EQ(predicted.at("reason").get<std::string>(), "sgid_index 1 is empty");
  // A source slot that holds a GID and a zero peer: the zero destination, in the model's words.
  const std::string reason = "the destination GID is zero";
  CliResult r = run_cli({"explain-errno", "22", "--input", mini, "--sgid-index", "2", "--peer", "::"});
  EXPECT_NE(r.out.find("[confirmed] " + reason), std::string::npos) << r.out;
  CliResult lnx = run_cli({"explain-errno", "22", "--input", example("nccl-769.devinfo.txt"), "--sgid-index",
                           "3", "--peer", "::"});
  EXPECT_NE(lnx.out.find("[confirmed] " + reason), std::string::npos) << lnx.out;
  EXPECT_EQ(lnx.out.find("[confirmed] sgid_index 3 holds"), std::string::npos) << lnx.out;  // not the family
}

TEST(ExplainErrno, AnErrnoWithoutANameIsNotRepeated) {
  CliResult r = run_cli({"explain-errno", "5"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("errno 5 on linux:", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find("errno 5 (5)"), std::string::npos) << r.out;
}

TEST(Usage, HelpAndVersionExitZero) {
  CliResult help = run_cli({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* s : {"show", "select", "check", "explain-errno", "convert", "simulate", "Exit codes"})
    EXPECT_NE(help.out.find(s), std::string::npos) << s;
  CliResult version = run_cli({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("gidpolicy 0."), std::string::npos) << version.out;
}

TEST(Usage, NoSourceLooksForLiveDevicesAndSuggestsInput) {
  CliResult r = run_cli({"check"});
  if (r.exit_code != 2) GTEST_SKIP() << "this machine has RDMA devices: " << r.out;
  expect_one_line_error(r, "--input FILE");
  EXPECT_NE(r.err.find("no RDMA devices"), std::string::npos) << r.err;
}

// ---------------------------------------------------------------------------------------------
// The real rdma-core 44 ibv_devinfo, run over the drop-in fake libibverbs serving each example
// table: the devinfo reader must read what the tool prints and give back exactly what devinfo
// can show of the table (devinfo_view), nothing invented, nothing lost.
#ifdef GIDPOLICY_IBV_DEVINFO
TEST(RealIbvDevinfo, ReaderGivesBackWhatTheToolShows) {
  for (const auto& c : example_cases()) {
    SCOPED_TRACE(c.file);
    CliResult r = run_program(GIDPOLICY_IBV_DEVINFO, {"-v"},
                              {std::string("LD_LIBRARY_PATH=") + GIDPOLICY_FAKE_LIBIBVERBS_DIR,
                               "GIDPOLICY_FAKE_TABLES=" + example(c.file)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto read = formats::read_devinfo(r.out, "ibv_devinfo -v");
    ASSERT_TRUE(read) << read.error().what() << "\n" << r.out;
    auto tables = VALUE_OR_FAIL(formats::read_tables_file(example_tables_dir() / c.file));
    // The fake must answer ibv_query_port with some gid_tbl_len: a show_gids table's unknown
    // length becomes one past its highest index. It reports the table's link width and speed,
    // else its default 4X EDR (c_core::kDefaultLinkRate).
    for (auto& t : tables) {
      PortInfo p = t.port();
      if (!p.gid_tbl_len) p.gid_tbl_len = t.length();
      p.link_rate = p.link_rate.value_or(LinkRate{.width = 2, .speed = 32});
      t = VALUE_OR_FAIL(GidTable::make(p, {t.begin(), t.end()}, t.holes()));
    }
    EXPECT_EQ(read.value(), formats::devinfo_view(tables)) << r.out;
    // And the writer prints those GID lines as the tool does, byte for byte.
    std::string written = formats::write_devinfo(tables);
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.find("GID[") == std::string::npos) continue;
      EXPECT_NE(written.find(line + "\n"), std::string::npos)
          << "not written as ibv_devinfo prints it: " << line;
    }
  }
}
#endif

// ---------------------------------------------------------------------------------------------
// Speed: 4 devices x 256 entries (every slot filled, v1/v2 pairs, the mapped GID near the end).
TEST(Performance, CheckOnFourDevicesOf256EntriesIsFast) {
  std::vector<GidTable> tables;
  for (std::uint32_t d = 0; d < 4; ++d) {
    PortInfo p{.device = "mlx5_" + std::to_string(d),
               .port = 1,
               .link_layer = LinkLayer::ethernet(),
               .gid_tbl_len = 256};
    std::vector<GidEntry> entries;
    for (std::uint32_t i = 0; i < 256; ++i) {
      Gid::Bytes b{};
      b[0] = 0xfd;
      b[1] = static_cast<std::uint8_t>(d);
      b[14] = static_cast<std::uint8_t>(i / 2);
      b[15] = 1;
      Gid g = i >= 250 ? Gid::ipv4_mapped(0x0a000000u | (d << 8) | i) : Gid(b);
      entries.push_back(
          GidEntry::valid(i, g, i % 2 ? GidType::roce_v2 : GidType::roce_v1, "eth" + std::to_string(d)));
    }
    tables.push_back(VALUE_OR_FAIL(GidTable::make(p, entries)));
  }
  std::string tmpl = (fs::temp_directory_path() / "gidpolicy-perf-XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const fs::path file = fs::path(tmpl) / "4x256.json";
  std::ofstream(file) << formats::write_json(tables);

  // CPU time is the figure asserted: wall time on a shared 2-core CI machine measures the load.
  double best_wall = 1e9, best_cpu = 1e9;
  for (int k = 0; k < 5; ++k) {
    // Every named profile by name: the default leaves JACCL's out on these RoCE ports.
    CliResult r = run_cli({"check", "--input", file.string(), "--profile", "jaccl", "--profile",
                           "jaccl-legacy", "--profile", "jaccl-fixed", "--profile", "ds4", "--profile",
                           "ds4-linux", "--profile", "auto"});
    ASSERT_EQ(r.exit_code, 1) << r.err;  // jaccl routes from 1 and disagrees
    best_wall = std::min(best_wall, r.millis);
    best_cpu = std::min(best_cpu, r.cpu_millis);
  }
  std::cout << "gidpolicy check, 4 devices x 256 entries (JSON): best of 5 = " << best_wall << " ms wall, "
            << best_cpu << " ms CPU\n";
  RecordProperty("check_4x256_wall_ms", std::to_string(best_wall));
  RecordProperty("check_4x256_cpu_ms", std::to_string(best_cpu));
#if GIDPOLICY_CLI_TIMING
  EXPECT_LT(best_cpu, 100.0);
#endif
  fs::remove_all(tmpl);
}

}  // namespace
}  // namespace gidpolicy::test
