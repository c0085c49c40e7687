// Hostile input, one group per class: each input here crashed, hung,
// used unbounded memory, lost data silently or was read differently by different readers
// before. Library, C API and the CLI as a process. Hangs are caught by this program's ctest
// TIMEOUT, memory by an address-space limit set on the child (ulimit -v), not by timing.
#include "cli_run.hpp"

#include <gidpolicy/gidpolicy.h>
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/formats/show_gids.hpp>
#include <gidpolicy/formats/sysfs.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/verbs/function_table_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace gidpolicy::test {
namespace {

namespace fs = std::filesystem;
using formats::Format;

std::string example(const char* name) { return (example_tables_dir() / name).string(); }

std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (std::size_t k = 0; k < n; ++k) out += s;
  return out;
}

// A usage error as the issue's acceptance asks: exit 2, nothing on stdout, one to three lines on
// stderr, the first naming what is wrong.
void expect_usage_error(const CliResult& r, const std::string& mentions) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  const auto lines = r.err_lines();
  EXPECT_GE(lines.size(), 1u);
  EXPECT_LE(lines.size(), 3u) << r.err.substr(0, 2000);
  EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err.substr(0, 2000);
}

// A scratch directory removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gidpolicy-hostile-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

// `gidpolicy args...` under an address-space limit (MiB) where the build allows one.
CliResult run_cli_limited(const std::vector<std::string>& args, unsigned mib,
                          const std::optional<fs::path>& stdin_file = std::nullopt,
                          const std::string& stdin_command = "") {
  std::string script;
  if (GIDPOLICY_HOSTILE_MEMORY_LIMITS) script += "ulimit -v " + std::to_string(mib * 1024) + "; ";
  script += stdin_command.empty() ? "exec \"$0\" \"$@\"" : stdin_command + " | \"$0\" \"$@\"";
  std::vector<std::string> sh_args{"-c", script, cli_path().string()};
  sh_args.insert(sh_args.end(), args.begin(), args.end());
  return run_program("/bin/sh", sh_args, {}, stdin_file);
}

// ---------------------------------------------------------------------------------------------
// 1. Nesting depth: the spec parser recursed once per level and overflowed the stack.

TEST(HostileNesting, DeepFirstIsAnErrorWithThePosition) {
  const std::string spec = repeat("first(", 7000);
  auto r = parse_policy(spec);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::invalid_policy_spec);
  // Level 33 starts at byte 32 * 6.
  EXPECT_NE(r.error().detail.find("at position 192"), std::string::npos) << r.error().detail;
  EXPECT_NE(r.error().detail.find("at most 32 nested"), std::string::npos) << r.error().detail;
}

TEST(HostileNesting, DeepPerDeviceIsAnError) {
  auto r = parse_profile(repeat("per-device(*=", 5000));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::invalid_policy_spec);
  EXPECT_NE(r.error().detail.find("nested"), std::string::npos) << r.error().detail;
}

TEST(HostileNesting, TheDocumentedDepthParsesAndOneMoreDoesNot) {
  auto nested = [](std::size_t depth) { return repeat("first(", depth) + "auto" + repeat(")", depth); };
  auto ok = parse_policy(nested(kMaxSpecDepth));
  ASSERT_OK(ok);
  EXPECT_EQ(VALUE_OR_FAIL(parse_policy(ok.value().spec())), ok.value());
  EXPECT_FALSE(parse_policy(nested(kMaxSpecDepth + 1)));
}

TEST(HostileNesting, CApiReturnsAnErrorInsteadOfCrashing) {
  const std::string spec = repeat("first(", 7000);
  gidpolicy_profile* p = nullptr;
  char err[256];
  EXPECT_EQ(gidpolicy_profile_parse(spec.c_str(), &p, err, sizeof err), GIDPOLICY_ERR_INVALID_SPEC);
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(std::string(err).find("nested"), std::string::npos) << err;
}

TEST(HostileNesting, CliExitsTwoWithTheMessage) {
  auto r =
      run_cli({"select", "--input", example("macmini-mapped-at-2.json"), "--policy", repeat("first(", 7000)});
  expect_usage_error(r, "nested");
  EXPECT_LT(r.err.size(), 1000u) << "the spec is quoted in full";
}

TEST(HostileNesting, DeepJsonIsAnErrorWithItsPath) {
  const std::string doc = R"({"schema":"gidpolicy.tables","version":1,"ports":[{"x":)" + repeat("[", 100000) +
                          repeat("]", 100000) + "}]}";
  auto r = formats::read_json(doc, "deep.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::parse_error);
  EXPECT_NE(r.error().detail.find("deep.json: ports[0].x[0]"), std::string::npos)
      << r.error().detail.substr(0, 300);
  EXPECT_NE(r.error().detail.find("nested deeper than 32"), std::string::npos)
      << r.error().detail.substr(0, 300);
}

// Item 12: a 40 KB spec is quoted as a bounded excerpt around the position, not in full.
TEST(HostileNesting, ALongSpecIsQuotedAroundThePosition) {
  const std::string spec = "first(" + repeat("auto|", 8000) + "bogus)";
  auto r = parse_policy(spec);
  ASSERT_FALSE(r);
  EXPECT_LT(r.error().detail.size(), 300u) << r.error().detail;
  EXPECT_NE(r.error().detail.find("found 'bogus'"), std::string::npos) << r.error().detail;
  EXPECT_NE(r.error().detail.find("in \"...uto|auto|auto|auto|auto|bogus)\""), std::string::npos)
      << r.error().detail;
  auto cli = run_cli({"select", "--input", example("macmini-mapped-at-2.json"), "--policy", spec});
  expect_usage_error(cli, "found 'bogus'");
  EXPECT_LT(cli.err.size(), 1000u);
}

// Item 12: a CIDR value is quoted whole, not cut at its first ':'.
TEST(HostileNesting, ABadCidrIsQuotedWhole) {
  auto r = parse_policy("auto:subnet=fe80::/129");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().detail.find("found 'fe80::/129'"), std::string::npos) << r.error().detail;
}

// Item 12: the CLI's spec hint names per-device() too.
TEST(HostileNesting, TheSpecHintNamesPerDevice) {
  auto r = run_cli({"select", "--input", example("macmini-mapped-at-2.json"), "--policy", "nope"});
  expect_usage_error(r, "per-device(");
}

// ---------------------------------------------------------------------------------------------
// 2. Unbounded reads: /dev/zero, /dev/urandom and endless text were read until memory ran out.

TEST(HostileReads, DevZeroIsRefusedFromTheFirstChunk) {
  for (const char* format : {"", "json", "devinfo", "show_gids"}) {
    std::vector<std::string> args{"show", "--input", "/dev/zero"};
    if (*format) args.insert(args.end(), {"--input-format", format});
    auto r = run_cli_limited(args, 256);
    expect_usage_error(r, "/dev/zero:1:1: binary data (byte 0x00)");
  }
}

TEST(HostileReads, DevUrandomIsRefusedFromTheFirstChunk) {
  auto r = run_cli_limited({"show", "--input", "/dev/urandom"}, 256);
  expect_usage_error(r, "binary data");
}

TEST(HostileReads, UrandomOnStdinIsRefused) {
  auto r = run_cli_limited({"show", "--input", "-"}, 256, std::nullopt, "cat /dev/urandom");
  expect_usage_error(r, "<stdin>");
  EXPECT_NE(r.err.find("binary data"), std::string::npos) << r.err;
}

TEST(HostileReads, EndlessTextStopsAtTheCap) {
  // `yes` is text without end: only the size cap stops it, within the memory limit.
  auto r = run_cli_limited({"show", "--input", "-", "--input-format", "json"}, 256, std::nullopt, "yes");
  expect_usage_error(r, "<stdin>: more than 16777216 bytes");
}

TEST(HostileReads, TheCapIsAnOption) {
  TempDir dir;
  const fs::path big = dir.path / "big.json";
  const std::string text = read_file(example_tables_dir() / "macmini-mapped-at-2.json");
  write_text(big, text);
  auto refused = run_cli({"show", "--input", big.string(), "--max-input-bytes", "100"});
  expect_usage_error(refused, "more than 100 bytes");
  auto read = run_cli({"show", "--input", big.string(), "--max-input-bytes", std::to_string(text.size())});
  EXPECT_EQ(read.exit_code, 0) << read.err;
}

TEST(HostileReads, LibraryReaderIsBounded) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string chunk(1000, 'a');
  for (int k = 0; k < 60; ++k) ASSERT_EQ(::write(fds[1], chunk.data(), chunk.size()), 1000);
  ::close(fds[1]);
  auto r = formats::read_text_fd(fds[0], "pipe", 50000);
  ::close(fds[0]);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::parse_error);
  EXPECT_NE(r.error().detail.find("pipe: more than 50000 bytes"), std::string::npos) << r.error().detail;
  auto zero = formats::read_tables_file("/dev/zero");
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error(), errc::unknown_format);
  // Mostly invalid UTF-8 without a control byte is binary too.
  TempDir dir;
  write_text(dir.path / "latin", std::string(4096, '\xff'));
  auto latin = formats::read_text_file(dir.path / "latin");
  ASSERT_FALSE(latin);
  EXPECT_NE(latin.error().detail.find("invalid UTF-8"), std::string::npos) << latin.error().detail;
}

// ---------------------------------------------------------------------------------------------
// 3. A FIFO in a sysfs tree blocked forever; anything not a regular file is refused by path.

class HostileSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tables = formats::read_tables_file(example_tables_dir() / "macmini-mapped-at-2.json");
    ASSERT_OK(tables);
    tables_ = tables.value();
    ASSERT_TRUE(formats::write_sysfs(tables_, dir_.path).has_value());
    port_ = dir_.path / tables_[0].port().device / "ports" / "1";
  }
  // Replace `rel` (under the port) by a FIFO and read the tree: an error naming it.
  void expect_fifo_refused(const std::string& rel) {
    const fs::path p = port_ / rel;
    fs::remove(p);
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0) << std::strerror(errno);
    auto r = formats::read_sysfs(dir_.path);
    ASSERT_FALSE(r) << rel;
    EXPECT_EQ(r.error(), errc::io_error);
    EXPECT_NE(r.error().detail.find(p.string() + ": expected a regular file"), std::string::npos)
        << r.error().detail;
    EXPECT_NE(r.error().detail.find("a FIFO"), std::string::npos) << r.error().detail;
    auto cli = run_cli({"show", "--sysfs", dir_.path.string()});
    expect_usage_error(cli, p.string());
  }
  TempDir dir_;
  std::vector<GidTable> tables_;
  fs::path port_;
};

TEST_F(HostileSysfs, FifoAsAGidIsRefused) { expect_fifo_refused("gids/2"); }
TEST_F(HostileSysfs, FifoAsAGidTypeIsRefused) { expect_fifo_refused("gid_attrs/types/2"); }
TEST_F(HostileSysfs, FifoAsTheStateIsRefused) { expect_fifo_refused("state"); }

TEST_F(HostileSysfs, ADeviceOrALargeFileIsRefused) {
  fs::remove(port_ / "link_layer");
  fs::create_symlink("/dev/zero", port_ / "link_layer");
  auto r = formats::read_sysfs(dir_.path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().detail.find("a character device"), std::string::npos) << r.error().detail;
  fs::remove(port_ / "link_layer");
  write_text(port_ / "link_layer", "Ethernet\n" + std::string(8000, ' '));
  r = formats::read_sysfs(dir_.path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().detail.find("at most one page"), std::string::npos) << r.error().detail;
}

// ---------------------------------------------------------------------------------------------
// 4. A driver's gid_tbl_len is not trusted: negative or absurd is an error, and a per-index
//    scan reads what an sgid_index can reach unless asked for the whole table.

int g_tbl_len = 0;
unsigned g_gid_reads = 0;

int query_port(ibv_context*, std::uint8_t, ibv_port_attr* attr) {
  std::memset(attr, 0, sizeof *attr);
  attr->state = IBV_PORT_ACTIVE;
  attr->link_layer = IBV_LINK_LAYER_ETHERNET;
  attr->active_mtu = IBV_MTU_1024;
  attr->gid_tbl_len = g_tbl_len;
  return 0;
}
int query_gid(ibv_context*, std::uint8_t, int index, ibv_gid* gid) {
  ++g_gid_reads;
  std::memset(gid, 0, sizeof *gid);
  if (index == 3) {  // one IPv4-mapped GID, the rest empty
    gid->raw[10] = 0xff;
    gid->raw[11] = 0xff;
    gid->raw[12] = 10;
    gid->raw[15] = 3;
  }
  return 0;
}

class HostileDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    g_gid_reads = 0;
    fns_.query_port = &query_port;
    fns_.query_gid = &query_gid;
    std::memset(&ctx_, 0, sizeof ctx_);
  }
  gidpolicy_status snapshot(unsigned flags, gidpolicy_table** out) {
    return gidpolicy_snapshot(&fns_, &ctx_, 1, flags, out, err_, sizeof err_);
  }
  gidpolicy_verbs_fns fns_{};
  ibv_context ctx_{};
  char err_[512] = {};
};

TEST_F(HostileDriver, AHugeLengthIsADriverErrorNotMinutesOfReads) {
  g_tbl_len = 100000000;
  gidpolicy_table* t = nullptr;
  EXPECT_EQ(snapshot(GIDPOLICY_SNAPSHOT_WHOLE_TABLE, &t), GIDPOLICY_ERR_DRIVER);
  EXPECT_EQ(t, nullptr);
  EXPECT_NE(std::string(err_).find("gid_tbl_len 100000000"), std::string::npos) << err_;
  EXPECT_EQ(g_gid_reads, 0u);
}

TEST_F(HostileDriver, ANegativeLengthIsADriverErrorNotAnEmptyTable) {
  g_tbl_len = -1;
  gidpolicy_table* t = nullptr;
  EXPECT_EQ(snapshot(0, &t), GIDPOLICY_ERR_DRIVER);
  EXPECT_EQ(t, nullptr);
  EXPECT_NE(std::string(err_).find("gid_tbl_len -1"), std::string::npos) << err_;
}

TEST_F(HostileDriver, AScanStopsWhereAnSgidIndexCannotReach) {
  g_tbl_len = 4096;
  gidpolicy_table* t = nullptr;
  ASSERT_EQ(snapshot(0, &t), GIDPOLICY_OK) << err_;
  EXPECT_EQ(g_gid_reads, 256u);
  gidpolicy_table_free(t);
  g_gid_reads = 0;
  ASSERT_EQ(snapshot(GIDPOLICY_SNAPSHOT_WHOLE_TABLE, &t), GIDPOLICY_OK) << err_;
  EXPECT_EQ(g_gid_reads, 4096u);
  gidpolicy_table_free(t);
}

TEST_F(HostileDriver, CxxSnapshotIsBoundedToo) {
  verbs::VerbsFunctions fns;
  fns.query_port = &query_port;
  fns.query_gid = &query_gid;
  verbs::FunctionTableApi api(fns);
  auto device = api.adopt(&ctx_);
  ASSERT_TRUE(device);
  g_tbl_len = 4096;
  verbs::SnapshotReport report;
  auto t = verbs::snapshot(api, device.value(), 1, {.report = &report});
  ASSERT_OK(t);
  EXPECT_EQ(report.indices_read, 256u);
  EXPECT_TRUE(report.capped);
  EXPECT_EQ(t.value().holes(), Holes::not_shown);  // slots past 255 were not read
  ASSERT_NE(t.value().find(3), nullptr);
  g_tbl_len = 100000000;
  auto huge = verbs::snapshot(api, device.value(), 1, {.whole_table = true});
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().code, std::error_code(EPROTO, std::generic_category()));
  g_tbl_len = -1;
  EXPECT_FALSE(verbs::snapshot(api, device.value(), 1));
}

// ---------------------------------------------------------------------------------------------
// 5. per-device output: each line names the device's own policy, so output is linear in devices.

TEST(HostilePerDevice, OutputIsLinearInDevices) {
  constexpr int kDevices = 4000;
  nlohmann::ordered_json doc;
  doc["schema"] = "gidpolicy.tables";
  doc["version"] = 1;
  doc["ports"] = nlohmann::ordered_json::array();
  std::string spec = "per-device(";
  for (int k = 0; k < kDevices; ++k) {
    const std::string dev = "d" + std::to_string(k);
    doc["ports"].push_back({{"device", dev},
                            {"port", 1},
                            {"link_layer", "ethernet"},
                            {"entries", {{{"index", 0}, {"gid", "::ffff:10.0.0.1"}, {"type", "roce_v2"}}}}});
    spec += dev + "=validated:index=0;";
  }
  spec += "*=auto)";
  TempDir dir;
  write_text(dir.path / "many.json", doc.dump());
  auto r = run_cli({"select", "--input", (dir.path / "many.json").string(), "--policy", spec});
  EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 500);
  // One line per device, each well under 200 bytes: the whole spec (about 95 KB) is not repeated.
  EXPECT_LT(r.out.size(), static_cast<std::size_t>(kDevices) * 200) << r.out.substr(0, 500);
  EXPECT_NE(r.out.find("d17 port 1 index 0: per-device[d17=validated:index=0]:"), std::string::npos)
      << r.out.substr(0, 500);
}

// ---------------------------------------------------------------------------------------------
// 6. Duplicate JSON keys: the last one silently won.

std::string table_json(const std::string& port_fields, const std::string& entry) {
  return R"({"schema":"gidpolicy.tables","version":1,"ports":[{"device":"mlx5_0","port":1)" + port_fields +
         R"(,"entries":[)" + entry + "]}]}";
}

TEST(HostileJson, DuplicateKeysAreRefusedWithTheirPath) {
  struct Case {
    std::string doc, path;
  };
  const std::vector<Case> cases{
      {table_json("", R"({"index":2,"gid":"::ffff:10.0.0.1","gid":"fe80::1"})"), "ports[0].entries[0].gid"},
      {table_json(R"(,"port":2)", R"({"index":2,"gid":"::1"})"), "ports[0].port"},
      {R"({"schema":"gidpolicy.tables","version":1,"version":1,"ports":[]})", "version"},
      {table_json("", R"({"index":1,"gid":"::2"},{"index":2,"index":3,"gid":"::1"})"),
       "ports[0].entries[1].index"},
  };
  for (const auto& c : cases) {
    auto r = formats::read_json(c.doc, "dup.json");
    ASSERT_FALSE(r) << c.doc;
    EXPECT_EQ(r.error(), errc::invalid_field);
    EXPECT_NE(r.error().detail.find("dup.json: " + c.path + ": duplicate key"), std::string::npos)
        << r.error().detail;
  }
  // The fake libibverbs and the C API read tables through the same reader.
  gidpolicy_table* t = nullptr;
  char err[256];
  const std::string& doc = cases[0].doc;
  EXPECT_EQ(gidpolicy_table_from_json(doc.data(), doc.size(), nullptr, 1, &t, err, sizeof err),
            GIDPOLICY_ERR_PARSE);
  EXPECT_NE(std::string(err).find("duplicate key"), std::string::npos) << err;
}

// Item 12: an empty "ports" array is not blamed on show_gids.
TEST(HostileJson, EmptyPortsMessageNamesTheJsonCase) {
  TempDir dir;
  write_text(dir.path / "none.json", R"({"schema":"gidpolicy.tables","version":1,"ports":[]})");
  auto r = run_cli({"show", "--input", (dir.path / "none.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(R"("ports": [])"), std::string::npos) << r.err;
}

// ---------------------------------------------------------------------------------------------
// 7. Names: control characters and over-long names were accepted and broke writers.

TEST(HostileNames, EveryReaderRefusesTheSameBadNames) {
  const std::string row_head = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n";
  struct Case {
    const char* what;
    Format format;
    std::string text;
    const char* mentions;
  };
  const std::vector<Case> cases{
      {"json control", Format::json,
       table_json("", "").replace(table_json("", "").find("mlx5_0"), 6, "a\\u0000b\\nc"),
       "ports[0].device: device name"},
      {"json long netdev", Format::json,
       table_json("", R"({"index":1,"gid":"::1","netdev":"abcdefghijklmnop"})"),
       "ports[0].entries[0].netdev: netdev name"},
      {"json slash", Format::json, table_json("", "").replace(table_json("", "").find("mlx5_0"), 6, "a/b"),
       "contains '/'"},
      {"devinfo slash", Format::devinfo, "hca_id:\tmlx/5\n\tport:\t1\n\t\tlink_layer:\tEthernet\n",
       "hca_id: device name"},
      {"devinfo long", Format::devinfo, "hca_id:\t" + std::string(64, 'm') + "\n",
       "longer than the kernel allows"},
      {"show_gids netdev colon", Format::show_gids,
       row_head + "mlx5_0\t1\t0\tfe80::1\t\tv2\teth0:1\nn_gids_found=1\n", "netdev name"},
  };
  for (const auto& c : cases) {
    result<std::vector<GidTable>> r = c.format == Format::json      ? formats::read_json(c.text, "n")
                                      : c.format == Format::devinfo ? formats::read_devinfo(c.text, "n")
                                                                    : formats::read_show_gids(c.text, "n");
    ASSERT_FALSE(r) << c.what;
    EXPECT_EQ(r.error(), errc::invalid_field) << c.what;
    EXPECT_NE(r.error().detail.find(c.mentions), std::string::npos) << c.what << ": " << r.error().detail;
  }
}

TEST(HostileNames, SysfsNetdevAndDeviceNamesAreChecked) {
  TempDir dir;
  auto tables = formats::read_tables_file(example_tables_dir() / "macmini-mapped-at-2.json");
  ASSERT_TRUE(tables);
  ASSERT_TRUE(formats::write_sysfs(tables.value(), dir.path).has_value());
  const fs::path ndev = dir.path / tables.value()[0].port().device / "ports/1/gid_attrs/ndevs/2";
  write_text(ndev, "e\rn0\n");
  auto r = formats::read_sysfs(dir.path);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().detail.find(ndev.string() + ":1: netdev name"), std::string::npos) << r.error().detail;
}

// Item 16: fuzz_show_gids aborted on this input (a netdev of carriage returns and vertical tabs
// that did not read back). It is refused now; fuzz_show_gids' invariant holds either way.
TEST(HostileNames, RegressionFuzzShowGidsCarriageReturnNetdev) {
  const std::string input("@GID1_0\t1\t0\tf2:20:0:0::  1em\r\r\r\v\v", 33);
  auto tables = formats::read_show_gids(input, "fuzz.txt");
  ASSERT_FALSE(tables);
  EXPECT_NE(tables.error().detail.find("netdev name"), std::string::npos) << tables.error().detail;
}

// ---------------------------------------------------------------------------------------------
// 8. convert --to sysfs merged into an existing tree; every output is written then renamed.

class HostileConvert : public ::testing::Test {
 protected:
  CliResult convert(const std::vector<std::string>& extra) {
    std::vector<std::string> args{"convert", "--input", example("macmini-mapped-at-2.json")};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  }
  // Nothing but `keep` in the scratch directory: no temporary left behind.
  void expect_only(const std::vector<std::string>& keep) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_.path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, keep);
  }
  TempDir dir_;
};

TEST_F(HostileConvert, ANonEmptyDirectoryIsRefusedUnlessReplaced) {
  const fs::path out = dir_.path / "tree";
  fs::create_directories(out / "stale_dev" / "ports" / "1" / "gids");
  write_text(out / "stale_dev" / "ports" / "1" / "gids" / "0", "fe80:0000:0000:0000:0000:0000:0000:0001\n");
  auto refused = convert({"--to", "sysfs", "--output", out.string()});
  expect_usage_error(refused, "is not empty");
  EXPECT_TRUE(fs::exists(out / "stale_dev"));
  auto replaced = convert({"--to", "sysfs", "--output", out.string() + "/", "--replace"});
  EXPECT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_FALSE(fs::exists(out / "stale_dev"));
  auto back = formats::read_sysfs(out);
  ASSERT_OK(back);
  expect_only({"tree"});
}

TEST_F(HostileConvert, AFailedConvertLeavesNothing) {
  // 70,000 slots would be 70,000 files: refused before anything is written.
  const std::string doc = R"({"schema":"gidpolicy.tables","version":1,"ports":[{"device":"d","port":1,)"
                          R"("gid_tbl_len":70000,"entries":[{"index":69999,"gid":"::1"}]}]})";
  write_text(dir_.path / "in.json", doc);
  auto r = run_cli({"convert", "--input", (dir_.path / "in.json").string(), "--to", "sysfs", "--output",
                    (dir_.path / "tree").string()});
  expect_usage_error(r, "at most 65536 slots");
  expect_only({"in.json"});
}

TEST_F(HostileConvert, AFailedFileWriteSaysItIsAWrite) {
  auto r = convert({"--to", "json", "--output", (dir_.path / "missing" / "out.json").string()});
  expect_usage_error(r, "output error: --output");
  EXPECT_NE(r.err.find("missing does not exist"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("cannot read input"), std::string::npos) << r.err;
  auto ok = convert({"--to", "devinfo", "--output", (dir_.path / "out.txt").string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  expect_only({"out.txt"});
}

// ---------------------------------------------------------------------------------------------
// 9. One leniency rule per kind of field (docs/formats.md).

TEST(HostileLeniency, UnknownValuesInTheToolsShapeAreUnknownEverywhere) {
  auto devinfo = formats::read_devinfo(
      "hca_id:\tmlx5_0\n\tport:\t1\n\t\tlink_layer:\tEthernet\n\t\tGID[  0]:\t\tfe80::1, RoCE v3\n", "d");
  ASSERT_OK(devinfo);
  EXPECT_EQ(devinfo.value()[0].find(0)->type, GidType::unknown);
  auto show = formats::read_show_gids(
      "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  "
      "\t\tVER\tDEV\nmlx5_0\t1\t0\tfe80::1\t\tv7\teth0\nn_gids_found=1\n",
      "s");
  ASSERT_OK(show);
  EXPECT_EQ(show.value()[0].find(0)->type, GidType::unknown);
  auto unknown_ll = formats::read_devinfo("hca_id:\tm\n\tport:\t1\n\t\tlink_layer:\tUnknown\n", "d");
  ASSERT_OK(unknown_ll);
  EXPECT_EQ(unknown_ll.value()[0].port().link_layer.kind(), LinkLayer::Kind::unknown);
}

TEST(HostileLeniency, TextTheToolNeverPrintsIsRefusedEverywhere) {
  auto devinfo_ll = formats::read_devinfo("hca_id:\tm\n\tport:\t1\n\t\tlink_layer:\tBanana\n", "d");
  ASSERT_FALSE(devinfo_ll);
  EXPECT_NE(devinfo_ll.error().detail.find("d:3: link_layer: expected"), std::string::npos)
      << devinfo_ll.error().detail;
  auto suffix = formats::read_devinfo("GID[  0]:\t\tfe80::1, RoCE v2 extra\n", "d");
  EXPECT_FALSE(suffix);

  TempDir dir;
  auto tables = formats::read_tables_file(example_tables_dir() / "macmini-mapped-at-2.json");
  ASSERT_TRUE(tables);
  ASSERT_TRUE(formats::write_sysfs(tables.value(), dir.path).has_value());
  const fs::path port = dir.path / tables.value()[0].port().device / "ports/1";
  fs::create_directories(port / "gid_attrs/types");
  write_text(port / "gid_attrs/types/2", "RoCE v3\n");
  auto v3 = formats::read_sysfs(dir.path);
  ASSERT_OK(v3);
  EXPECT_EQ(v3.value()[0].find(2)->type, GidType::unknown);
  write_text(port / "gid_attrs/types/2", "Banana\n");
  auto type = formats::read_sysfs(dir.path);
  ASSERT_FALSE(type);
  EXPECT_NE(type.error().detail.find("types/2:1: expected"), std::string::npos) << type.error().detail;
  write_text(port / "gid_attrs/types/2", "RoCE v2\n");
  const std::string ll = read_file(port / "link_layer");
  write_text(port / "link_layer", "Banana\n");
  auto link = formats::read_sysfs(dir.path);
  ASSERT_FALSE(link);
  EXPECT_NE(link.error().detail.find("link_layer:1: expected"), std::string::npos) << link.error().detail;
  write_text(port / "link_layer", ll);
  write_text(port / "state", "9: SLEEPY\n");
  EXPECT_FALSE(formats::read_sysfs(dir.path));
}

TEST(HostileLeniency, LeadingZerosInAnIpv4PartAreRefusedAsInetPtonDoes) {
  auto g = Gid::parse("::ffff:01.02.003.4");
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().detail.find("leading zero"), std::string::npos) << g.error().detail;
  EXPECT_FALSE(parse_address("010.0.0.1"));
  EXPECT_TRUE(parse_address("10.0.0.1"));
  EXPECT_TRUE(Gid::parse("::ffff:0.0.0.0"));
}

TEST(HostileLeniency, AHeaderlessFooterlessLineIsAPartialView) {
  auto r = formats::read_show_gids(
      "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:0a00:0001\t10.0.0.1\tv2\teth0\n", "one");
  ASSERT_OK(r);
  EXPECT_EQ(r.value()[0].holes(), Holes::not_shown);
  auto whole = formats::read_show_gids(
      "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
      "mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:0a00:0001\t10.0.0.1\tv2\teth0\nn_gids_found=1\n",
      "whole");
  ASSERT_OK(whole);
  EXPECT_EQ(whole.value()[0].holes(), Holes::empty);
}

}  // namespace
}  // namespace gidpolicy::test
