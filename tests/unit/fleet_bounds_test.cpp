// gidpolicy/fleet.hpp's readers: the work an input causes is bounded by what is used (a JACCL
// device file is counted against the hosts before its matrix is built), and every name that
// reaches a report follows the name rule (names.hpp).
#include <gidpolicy/fleet.hpp>

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gidpolicy {
namespace {

namespace fs = std::filesystem;

/// An n-rank device file whose entries are all `cell` (the diagonal too: shape only).
std::string jaccl_square(std::size_t n, const std::string& cell) {
  std::string row = "[";
  for (std::size_t j = 0; j < n; ++j) row += (j ? "," : "") + cell;
  row += "]";
  std::string out = "[";
  out.reserve(n * (row.size() + 1) + 2);
  for (std::size_t i = 0; i < n; ++i) out += (i ? "," : "") + row;
  return out + "]";
}

// AddressSanitizer keeps freed blocks in its quarantine (256 MiB by default): a reader that
// allocates and frees per row then shows the quarantine's growth in its peak RSS, not its own
// (FleetJacclRow: 185 MiB under ASan, under 32 MiB without). That bound is asserted in the
// uninstrumented trees only; its results are checked everywhere.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssMeasuresTheReader = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRssMeasuresTheReader = false;
#else
constexpr bool kRssMeasuresTheReader = true;
#endif
#else
constexpr bool kRssMeasuresTheReader = true;
#endif

long peak_rss_kib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// A 48 MiB file of 4,096 ranks given with 3 hosts used to be parsed into a JSON tree and a
// matrix first (1.25 GB, 19 s) and refused after. It is refused after one pass over its bytes:
// the error names both counts, and peak memory stays near the text's own size.
TEST(FleetJacclBounds, ARankCountThatIsNotTheHostCountIsRefusedBeforeTheMatrix) {
  const std::string text = jaccl_square(4096, "[]");
  ASSERT_GT(text.size(), std::size_t{48} << 20);
  const long before = peak_rss_kib();
  auto d = fleet::parse_jaccl_devices(text, "big.json", 3);
  const long after = peak_rss_kib();
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().what().find("big.json: 4096 ranks but 3 hosts were given"), std::string::npos)
      << d.error().what();
  // A generous bound (the tree alone was ~1.2 GB): under 64 MiB more than before the call.
  EXPECT_LT(after - before, 64 * 1024) << "peak RSS grew by " << (after - before) << " KiB";
}

// The count comes first: a file whose rows are malformed past the first is refused for its
// rank count (what the user must fix first), not for row 1, so no row was looked at.
TEST(FleetJacclBounds, TheCountIsCheckedBeforeAnyRow) {
  auto d = fleet::parse_jaccl_devices(R"([[null, "a", "b"], 7, {"x": 1}])", "dev.json", 2);
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().what().find("dev.json: 3 ranks but 2 hosts were given"), std::string::npos)
      << d.error().what();
  // With the right count, the rows are checked as before.
  auto rows = fleet::parse_jaccl_devices(R"([[null, "a", "b"], 7, {"x": 1}])", "dev.json", 3);
  ASSERT_FALSE(rows.has_value());
  EXPECT_NE(rows.error().what().find("dev.json: [1]: expected an array of devices"), std::string::npos)
      << rows.error().what();
}

TEST(FleetJacclBounds, ARowLongerThanTheRankCountIsRefusedAtOnce) {
  // Row 0 holds 100,000 entries in a 2-rank file: refused at its third entry, not stored.
  std::string text = "[[null";
  for (int k = 0; k < 100000; ++k) text += ",\"a\"";
  text += "],[\"a\",null]]";
  auto d = fleet::parse_jaccl_devices(text, "dev.json");
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().what().find("dev.json: [0]: has more than 2 entries"), std::string::npos)
      << d.error().what();
  std::string many = "[[]";
  for (int k = 1; k < 4097; ++k) many += ",[]";
  auto over = fleet::parse_jaccl_devices(many + "]", "dev.json");
  ASSERT_FALSE(over.has_value());
  EXPECT_NE(over.error().what().find("more than 4096 ranks"), std::string::npos) << over.error().what();
}

TEST(FleetJacclBounds, ValidFilesReadAsBefore) {
  auto d = fleet::parse_jaccl_devices(R"([[null, ["a", "b"]], [["c", "d"], null]])", "dev.json", 2);
  ASSERT_TRUE(d.has_value()) << d.error().what();
  EXPECT_EQ(d.value().names[0][1], (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(d.value().names[1][0], (std::vector<std::string>{"c", "d"}));
  EXPECT_TRUE(d.value().names[0][0].empty());
  auto empty = fleet::parse_jaccl_devices("[]", "dev.json");
  ASSERT_TRUE(empty.has_value()) << empty.error().what();
  EXPECT_EQ(empty.value().ranks(), 0u);
  // A file cut short is a syntax error at its end, whatever the rank count looks like.
  auto syntax = fleet::parse_jaccl_devices("[[null,\n \"a\"", "dev.json", 1);
  ASSERT_FALSE(syntax.has_value());
  EXPECT_NE(syntax.error().what().find("dev.json:2:"), std::string::npos) << syntax.error().what();
  EXPECT_NE(syntax.error().what().find("invalid JSON"), std::string::npos) << syntax.error().what();
  auto not_array = fleet::parse_jaccl_devices(R"({"a": 1})", "dev.json", 4);
  ASSERT_FALSE(not_array.has_value());
  EXPECT_NE(not_array.error().what().find("should start with an array"), std::string::npos)
      << not_array.error().what();
}

// JACCL device names are device names: a newline in one would forge a report line.
// The row reader (parse_jaccl_row) keeps one row but makes every check the whole reader makes:
// on files that are a mesh, a ring, both, neither or malformed it gives the same row, the same
// verdicts with the same reasons, and the same errors, for every rank.
TEST(FleetJacclRow, AgreesWithTheWholeReaderOnEveryRankAndEveryError) {
  const std::vector<std::string> files = {
      "[[null, \"a\", \"b\"], [\"c\", null, \"d\"], [\"e\", \"f\", null]]",  // mesh and ring
      "[[null, [\"a\", \"b\"], null, [\"c\", \"d\"]], [[\"e\", \"f\"], null, [\"g\", \"h\"], null],"
      " [null, [\"i\", \"j\"], null, [\"k\", \"l\"]], [[\"m\", \"n\"], null, [\"o\", \"p\"], null]]",  // ring
                                                                                                       // only
      "[[\"self\", \"a\"], [\"b\", null]]",                                 // mesh broken at [0][0]
      "[[null, null], [\"a\", null]]",                                      // neither: rank 0 to 1
      "[[null, \"a\", \"b\"], [\"c\", null, null], [\"e\", \"f\", null]]",  // ring broken at rank 1
      "[[null]]",                                                           // one rank
      "[]",
      "[[null, \"a\"], [\"b\"]]",       // a short row
      "[[null, \"a\"], [\"b\", 7]]",    // a number
      "[[null, \"a\"], [\"b\", null]",  // cut short
      "{\"hosts\": []}",
  };
  for (const std::string& text : files) {
    const auto whole = fleet::parse_jaccl_devices(text, "d.json");
    for (std::size_t rank = 0; rank < 5; ++rank) {
      const auto row = fleet::parse_jaccl_row(text, rank, "d.json");
      ASSERT_EQ(whole.has_value(), row.has_value()) << text;
      if (!whole) {
        EXPECT_EQ(whole.error().what(), row.error().what()) << text;
        continue;
      }
      const fleet::JacclDevices& d = whole.value();
      const fleet::JacclDeviceRow& r = row.value();
      EXPECT_EQ(r.ranks, d.ranks()) << text;
      std::string why_mesh, why_ring;
      EXPECT_EQ(r.mesh, d.valid_mesh(&why_mesh)) << text;
      EXPECT_EQ(r.ring, d.valid_ring(&why_ring)) << text;
      if (!r.mesh) {
        EXPECT_EQ(r.why_not_mesh, why_mesh) << text;
      }
      if (!r.ring) {
        EXPECT_EQ(r.why_not_ring, why_ring) << text;
      }
      const auto a = d.uses_ring(false), b = r.uses_ring(false);
      ASSERT_EQ(a.has_value(), b.has_value()) << text;
      if (!a) {
        EXPECT_EQ(a.error().what(), b.error().what()) << text;
        continue;
      }
      if (rank >= d.ranks()) {
        EXPECT_FALSE(r.has_row()) << text;
        continue;
      }
      EXPECT_EQ(r.names, d.names[rank]) << text << " rank " << rank;
      for (bool ring : {false, true}) EXPECT_EQ(r.devices(ring), d.devices_of(rank, ring)) << text;
    }
  }
}

// A 2,048-rank file keeps one row: peak memory grows by far less than the matrix the whole
// reader builds of it (2,048 x 2,048 entries of 24 bytes each at least: 96 MiB).
TEST(FleetJacclRow, ALargeFileKeepsOneRow) {
  const std::string text = jaccl_square(2048, "null");
  const long before = peak_rss_kib();
  const auto r = fleet::parse_jaccl_row(text, 2047, "d.json");
  ASSERT_TRUE(r) << r.error().what();
  EXPECT_EQ(r.value().ranks, 2048u);
  EXPECT_EQ(r.value().names.size(), 2048u);
  EXPECT_FALSE(r.value().mesh);
  if (kRssMeasuresTheReader) {
    EXPECT_LT(peak_rss_kib() - before, 32 * 1024) << "KiB";
  }
}

TEST(FleetJacclBounds, DeviceNamesFollowTheNameRule) {
  for (const char* bad :
       {R"("rdma\n999 of 999 links connected")", R"("rdma\u001b[31m")", R"("two words")", R"("caf\u00e9")"}) {
    const std::string text = std::string("[[null, ") + bad + "], [\"a\", null]]";
    auto d = fleet::parse_jaccl_devices(text, "dev.json");
    ASSERT_FALSE(d.has_value()) << text;
    EXPECT_NE(d.error().what().find("dev.json: [0][1]: device name \""), std::string::npos)
        << d.error().what();
    EXPECT_EQ(d.error().what().find('\n'), std::string::npos) << d.error().what();
  }
  auto in_list = fleet::parse_jaccl_devices(R"([[null, ["ok", "b\tc"]], ["a", null]])", "dev.json");
  ASSERT_FALSE(in_list.has_value());
  EXPECT_NE(in_list.error().what().find("dev.json: [0][1]: device name"), std::string::npos)
      << in_list.error().what();
}

class FleetNames : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gidpolicy-fleet-names-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  static std::string port(const std::string& host_json, const std::string& device_json = R"("mlx5_0")") {
    return R"({"host": )" + host_json + R"(, "device": )" + device_json + R"(, "port": 1, "entries": []})";
  }
  result<std::vector<fleet::HostSnapshot>> read(std::vector<std::string> args) {
    return fleet::read_snapshots(args);
  }
  fs::path dir_;
};

// Each source of a host name, each refused with one line that names where the name came from.
TEST_F(FleetNames, HostNamesFromEverySourceFollowTheRule) {
  const auto good = write("good.json", port("null"));
  // The document's "host".
  const auto doc = write("doc.json", port(R"("a\n999 of 999 links connected")"));
  auto r = read({good.string(), doc.string()});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("doc.json: host name \"a\\x0a999 of 999 links connected\" (its \"host\")"),
            std::string::npos)
      << r.error().what();
  // HOST=FILE.
  r = read({good.string(), "mac\x1b[2J=" + good.string()});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("host name \"mac\\x1b[2J\" (HOST=FILE)"), std::string::npos)
      << r.error().what();
  // HOST= that is not UTF-8.
  r = read({good.string(), "mac\xff=" + good.string()});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("is not UTF-8"), std::string::npos) << r.error().what();
  // The file name, as an argument and inside a directory.
  const auto esc = write("x\x1b[31m.json", port("null"));
  r = read({good.string(), esc.string()});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("\\x1b[31m.json\": byte"), std::string::npos) << r.error().what();
  EXPECT_EQ(r.error().what().find('\x1b'), std::string::npos) << r.error().what();
  fs::remove(esc);
  fs::remove(doc);
  write("\xff\xfe.json", port("null"));
  r = read({dir_.string()});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("file name \"\\xff\\xfe.json\": is not UTF-8 (byte 1 is 0xff)"),
            std::string::npos)
      << r.error().what();
  // UTF-8 host names are names, and read as given.
  fs::remove(dir_ / "\xff\xfe.json");
  write("caf\xC3\xA9.json", port("null"));
  r = read({dir_.string()});
  ASSERT_TRUE(r.has_value()) << r.error().what();
  ASSERT_EQ(r.value().size(), 2u);
  EXPECT_EQ(r.value()[0].host, "caf\xC3\xA9");
}

// Device and netdev names in a snapshot follow the same rule as every table reader's.
TEST_F(FleetNames, DeviceAndNetdevNamesInASnapshotFollowTheRule) {
  auto r = fleet::parse_snapshot(port("null", R"("mlx5_0\n999 of 999 links connected")"), "h.json");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("h.json: port.device: device name \"mlx5_0\\x0a999"), std::string::npos)
      << r.error().what();
  auto nd = fleet::parse_snapshot(
      R"({"device": "mlx5_0", "port": 1, "entries": [{"index": 0, "gid": "::ffff:10.0.0.1", "netdev": "eth0\u001b"}]})",
      "h.json");
  ASSERT_FALSE(nd.has_value());
  EXPECT_NE(nd.error().what().find("netdev name \"eth0\\x1b\""), std::string::npos) << nd.error().what();
}

}  // namespace
}  // namespace gidpolicy
