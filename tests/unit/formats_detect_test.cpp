// Format detection and read_tables/read_tables_file over every example table and every
// malformed input in tests/data/malformed.
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/formats/show_gids.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"

#include <gtest/gtest.h>

#include <ostream>

#include <cctype>

namespace gidpolicy {
namespace {

using formats::detect_format;
using formats::Format;
using formats::read_tables;
using formats::read_tables_file;

TEST(FormatsDetect, EveryExampleTableIsDetectedAndRead) {
  struct Case {
    const char* file;
    Format format;
    std::size_t ports;
  };
  for (const Case& c :
       {Case{"nccl-769.devinfo.txt", Format::devinfo, 1},
        Case{"apple-ds4qa-rdma_en1.devinfo.txt", Format::devinfo, 1},
        Case{"apple-mlx4191-rdma_en3-noipv4.devinfo.txt", Format::devinfo, 1},
        Case{"nccl-1573-pod.show_gids.txt", Format::show_gids, 2},
        Case{"ibm-pr4-cx6.show_gids.txt", Format::show_gids, 1},
        Case{"mooncake-1617-ipv6only.show_gids.txt", Format::show_gids, 3},
        Case{"ds4-linux-unit.json", Format::json, 1}, Case{"macmini-mapped-at-2.json", Format::json, 1}}) {
    auto path = test::example_tables_dir() / c.file;
    std::string text = test::read_file(path);
    auto f = detect_format(text, c.file);
    ASSERT_TRUE(f) << c.file << ": " << f.error().what();
    EXPECT_EQ(f.value(), c.format) << c.file;
    auto tables = read_tables_file(path);
    ASSERT_OK(tables);
    EXPECT_EQ(tables.value().size(), c.ports) << c.file;
  }
}

TEST(FormatsDetect, JsonExamplesHoldWhatSourcesMdSays) {
  ASSERT_OK_AND_ASSIGN(auto ds4, read_tables_file(test::example_tables_dir() / "ds4-linux-unit.json"));
  const GidTable& t = ds4.at(0);
  EXPECT_EQ(t.port().gid_tbl_len, 5u);
  EXPECT_EQ(t.find(0u)->type, GidType::roce_v1);
  EXPECT_EQ(t.find(3u)->gid, VALUE_OR_FAIL(Gid::parse("::ffff:127.0.0.1")));
  EXPECT_EQ(t.find(3u)->type, GidType::roce_v2);
  EXPECT_EQ(t.find(3u)->netdev, "lo");
  EXPECT_TRUE(t.find(4u)->gid.is_zero());
  ASSERT_OK_AND_ASSIGN(auto mac, read_tables_file(test::example_tables_dir() / "macmini-mapped-at-2.json"));
  EXPECT_EQ(mac.at(0).find(1u)->state, EntryState::empty);
  EXPECT_EQ(mac.at(0).find(2u)->gid, VALUE_OR_FAIL(Gid::parse("::ffff:10.99.0.3")));
  EXPECT_EQ(mac.at(0).port().link_layer, LinkLayer::thunderbolt());
}

TEST(FormatsDetect, PartialPastesAreDetected) {
  EXPECT_EQ(VALUE_OR_FAIL(detect_format("\t\t\tGID[  3]:\t\t::ffff:10.0.0.1, RoCE v2\n")), Format::devinfo);
  EXPECT_EQ(VALUE_OR_FAIL(detect_format("\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n")),
            Format::devinfo);
  EXPECT_EQ(VALUE_OR_FAIL(detect_format("  max_qp: 10\n  link_layer: Ethernet\n")), Format::devinfo);
  EXPECT_EQ(
      VALUE_OR_FAIL(detect_format("mlx5_0 1 3 0000:0000:0000:0000:0000:ffff:0a00:0001 10.0.0.1 v2 eth0\n")),
      Format::show_gids);
  EXPECT_EQ(VALUE_OR_FAIL(detect_format("\n\n  {\"schema\": 1}")), Format::json);
}

TEST(FormatsDetect, AGreppedShowGidsPasteIsShowGids) {
  // `show_gids | grep mlx5_1`: rows only, tabs kept, an empty IPv4 column on link-local rows.
  const std::string cut =
      "mlx5_1\t1\t4\tfe80:0000:0000:0000:9459:9bff:fe54:7704\t  \tv1\tnet2\n"
      "mlx5_1\t1\t7\t0000:0000:0000:0000:0000:ffff:0a98:040c\t10.152.4.12  \tv2\tnet2\n";
  EXPECT_EQ(VALUE_OR_FAIL(detect_format(cut)), Format::show_gids);
  auto tables = formats::read_tables(cut, "cut");
  ASSERT_OK(tables);
  ASSERT_EQ(tables.value().size(), 1u);
  EXPECT_EQ(tables.value()[0].holes(), Holes::not_shown);
}

TEST(FormatsDetect, DirectoryIsSysfs) {
  auto r = read_tables_file(test::test_data_dir() / "sysfs" / "class" / "infiniband");
  ASSERT_OK(r);
  EXPECT_EQ(r.value().size(), 4u);
}

TEST(FormatsDetect, FormatNamesRoundTrip) {
  for (Format f : {Format::json, Format::devinfo, Format::show_gids, Format::sysfs})
    EXPECT_EQ(formats::format_from_string(formats::to_string(f)), f);
  EXPECT_EQ(formats::format_from_string("ibv_devinfo"), Format::devinfo);
  EXPECT_EQ(formats::format_from_string("SHOW-GIDS"), Format::show_gids);
  EXPECT_EQ(formats::format_from_string("xml"), std::nullopt);
}

TEST(FormatsDetect, WriteTablesDispatchesAndRefusesSysfs) {
  ASSERT_OK_AND_ASSIGN(auto tables,
                       read_tables_file(test::example_tables_dir() / "nccl-1573-pod.show_gids.txt"));
  EXPECT_EQ(VALUE_OR_FAIL(formats::write_tables(tables, Format::show_gids)),
            formats::write_show_gids(tables));
  EXPECT_EQ(VALUE_OR_FAIL(formats::write_tables(tables, Format::devinfo)), formats::write_devinfo(tables));
  EXPECT_EQ(VALUE_OR_FAIL(formats::write_tables(tables, Format::json)), formats::write_json(tables));
  auto sysfs = formats::write_tables(tables, Format::sysfs);
  ASSERT_FALSE(sysfs);
  EXPECT_EQ(sysfs.error(), errc::invalid_argument);
}

TEST(FormatsDetect, ReadTablesAsUsesTheNamedReaderWithoutDetecting) {
  auto tables = read_tables_file(test::example_tables_dir() / "nccl-1573-pod.show_gids.txt").value();
  for (Format f : {Format::json, Format::devinfo, Format::show_gids}) {
    const std::string text = formats::write_tables(tables, f).value();
    auto again = formats::read_tables_as(text, f, "t.txt");
    ASSERT_TRUE(again) << formats::to_string(f) << ": " << again.error().what();
    EXPECT_EQ(formats::write_tables(again.value(), f).value(), text) << formats::to_string(f);
  }
  // The named reader runs even where detection would pick another: JSON through show_gids fails
  // with the show_gids reader's error, not a detected read.
  auto wrong = formats::read_tables_as(formats::write_json(tables), Format::show_gids, "t.txt");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().detail.find("t.txt"), std::string::npos) << wrong.error().what();
  auto sysfs = formats::read_tables_as("", Format::sysfs, "t.txt");
  ASSERT_FALSE(sysfs);
  EXPECT_EQ(sysfs.error(), errc::invalid_argument);
  EXPECT_NE(sysfs.error().detail.find("t.txt"), std::string::npos) << sysfs.error().what();
}

struct BadFile {
  const char* file;
  errc code;
  const char* expect;  // substring: names the file and line, and says what was expected
};
// Readable test names in ctest (gtest would print the struct's bytes).
void PrintTo(const BadFile& c, std::ostream* os) { *os << c.file; }

class FormatsDetectRejects : public ::testing::TestWithParam<BadFile> {};

TEST_P(FormatsDetectRejects, MalformedFile) {
  const BadFile& b = GetParam();
  auto path = test::test_data_dir() / "malformed" / b.file;
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  auto r = read_tables_file(path);
  ASSERT_FALSE(r) << b.file << " was accepted";
  EXPECT_EQ(r.error(), b.code) << r.error().what();
  std::string what = r.error().what();
  EXPECT_NE(what.find(path.string()), std::string::npos) << "names the file: " << what;
  EXPECT_NE(what.find(b.expect), std::string::npos) << what;
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, FormatsDetectRejects,
    ::testing::Values(
        BadFile{"empty.txt", errc::unknown_format, ": empty input: expected gidpolicy JSON"},
        BadFile{"blank.txt", errc::unknown_format, ": empty input"},
        BadFile{"garbage.bin", errc::unknown_format, ":1:1: binary data (byte 0x7f), not a table"},
        BadFile{"wrong-format.txt", errc::unknown_format, ":1: expected gidpolicy JSON"},
        BadFile{"wrong-schema.json", errc::invalid_field, "schema: expected \"gidpolicy.tables\""},
        BadFile{"truncated.json", errc::parse_error, ": invalid JSON"},
        BadFile{"truncated.devinfo.txt", errc::parse_error, ":12: GID[2]: expected a GID"},
        BadFile{"truncated.show_gids.txt", errc::invalid_field, ":6: GID: expected 8 groups"},
        BadFile{"bad-gid.show_gids.txt", errc::invalid_field, ":3: GID:"}),
    [](const ::testing::TestParamInfo<BadFile>& param_info) {
      std::string n = param_info.param.file;
      for (auto& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

TEST(FormatsDetect, MissingFileIsAnIoError) {
  auto r = read_tables_file(test::test_data_dir() / "malformed" / "does-not-exist.txt");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::io_error);
  EXPECT_NE(r.error().what().find("does-not-exist.txt: No such file"), std::string::npos) << r.error().what();
}

}  // namespace
}  // namespace gidpolicy
