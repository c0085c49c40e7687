// show_gids reader and writer: the real pastes in examples/tables (read, and written back byte
// for byte), older script variants, and malformed inputs.
#include <gidpolicy/formats/show_gids.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"
#include "support/gid_literals.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <sstream>

namespace gidpolicy {
namespace {

using formats::read_show_gids;
using formats::write_show_gids;

std::vector<GidTable> read_show_gids_example(const char* name) {
  std::string text = test::read_file(test::example_tables_dir() / name);
  EXPECT_FALSE(text.empty()) << name;
  auto r = read_show_gids(text, name);
  EXPECT_OK(r);
  return r ? r.value() : std::vector<GidTable>{};
}

void expect_show_gids_entry(const GidTable& t, std::uint32_t index, const char* gid, GidType type,
                            const char* netdev) {
  const GidEntry* e = t.find(index);
  ASSERT_NE(e, nullptr) << t.port().device << " index " << index;
  EXPECT_EQ(e->state, EntryState::valid);
  EXPECT_EQ(e->gid, G(gid)) << "index " << index;
  EXPECT_EQ(e->type, type) << "index " << index;
  EXPECT_EQ(e->netdev, netdev) << "index " << index;
}

void expect_show_gids_port(const GidTable& t, const char* device) {
  EXPECT_EQ(t.port().device, device);
  EXPECT_EQ(t.port().port, 1u);
  EXPECT_EQ(t.port().gid_tbl_len, std::nullopt) << "show_gids does not print the table length";
  EXPECT_EQ(t.holes(), Holes::empty) << "an index show_gids does not list is empty";
  EXPECT_EQ(t.port().link_layer, LinkLayer::ethernet());
}

TEST(FormatsShowGids, ReadsNccl1573PodWithHolesBelowFour) {
  auto tables = read_show_gids_example("nccl-1573-pod.show_gids.txt");
  ASSERT_EQ(tables.size(), 2u);
  expect_show_gids_port(tables[0], "mlx5_0");
  ASSERT_EQ(tables[0].size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i) EXPECT_EQ(tables[0].find(i), nullptr);
  expect_show_gids_entry(tables[0], 4, "fe80::a4ed:ccff:fe8b:1994", GidType::roce_v1, "net1");
  expect_show_gids_entry(tables[0], 5, "fe80::a4ed:ccff:fe8b:1994", GidType::roce_v2, "net1");
  expect_show_gids_entry(tables[0], 6, "::ffff:10.152.0.12", GidType::roce_v1, "net1");
  expect_show_gids_entry(tables[0], 7, "::ffff:10.152.0.12", GidType::roce_v2, "net1");
  expect_show_gids_port(tables[1], "mlx5_1");
  ASSERT_EQ(tables[1].size(), 4u);
  expect_show_gids_entry(tables[1], 4, "fe80::9459:9bff:fe54:7704", GidType::roce_v1, "net2");
  expect_show_gids_entry(tables[1], 5, "fe80::9459:9bff:fe54:7704", GidType::roce_v2, "net2");
  expect_show_gids_entry(tables[1], 6, "::ffff:10.152.4.12", GidType::roce_v1, "net2");
  expect_show_gids_entry(tables[1], 7, "::ffff:10.152.4.12", GidType::roce_v2, "net2");
}

TEST(FormatsShowGids, ReadsIbmCx6WithTwoLinkLocalPairs) {
  auto tables = read_show_gids_example("ibm-pr4-cx6.show_gids.txt");
  ASSERT_EQ(tables.size(), 1u);
  const GidTable& t = tables[0];
  expect_show_gids_port(t, "mlx5_0");
  ASSERT_EQ(t.size(), 6u);
  expect_show_gids_entry(t, 0, "fe80::e42:a1ff:fe5d:4db8", GidType::roce_v1, "ens1f0");
  expect_show_gids_entry(t, 1, "fe80::e42:a1ff:fe5d:4db8", GidType::roce_v2, "ens1f0");
  expect_show_gids_entry(t, 2, "fe80::1186:a6b1:3f0b:c441", GidType::roce_v1, "ens1f0");
  expect_show_gids_entry(t, 3, "fe80::1186:a6b1:3f0b:c441", GidType::roce_v2, "ens1f0");
  expect_show_gids_entry(t, 4, "::ffff:172.19.0.60", GidType::roce_v1, "ens1f0");
  expect_show_gids_entry(t, 5, "::ffff:172.19.0.60", GidType::roce_v2, "ens1f0");
}

TEST(FormatsShowGids, ReadsMooncakeIpv6OnlyNics) {
  auto tables = read_show_gids_example("mooncake-1617-ipv6only.show_gids.txt");
  ASSERT_EQ(tables.size(), 3u);
  expect_show_gids_port(tables[0], "rocep105s0");
  expect_show_gids_entry(tables[0], 0, "fe80::690:81ff:fe39:e3e8", GidType::roce_v2, "enp105s0");
  expect_show_gids_entry(tables[0], 1, "fd93:16d3:59b6:10d:690:81ff:fe39:e3e8", GidType::roce_v2, "enp105s0");
  expect_show_gids_port(tables[1], "rocep121s0");
  expect_show_gids_entry(tables[1], 0, "fe80::690:81ff:fe39:1c8", GidType::roce_v2, "enp121s0");
  expect_show_gids_entry(tables[1], 1, "fd93:16d3:59b6:10e:690:81ff:fe39:1c8", GidType::roce_v2, "enp121s0");
  expect_show_gids_port(tables[2], "rocep193s0f0");
  expect_show_gids_entry(tables[2], 0, "fe80::7ec2:55ff:feba:ff88", GidType::roce_v1, "enp193s0f0np0");
  expect_show_gids_entry(tables[2], 1, "fe80::7ec2:55ff:feba:ff88", GidType::roce_v2, "enp193s0f0np0");
  for (const auto& t : tables)
    for (const auto& e : t) EXPECT_FALSE(e.gid.is_ipv4_mapped()) << "IPv6-only NICs";
}

// The writer prints what the mlnx-tools script prints: the real pastes come back byte for byte.
TEST(FormatsShowGids, WriteReproducesTheRealPastesExactly) {
  for (const char* name :
       {"nccl-1573-pod.show_gids.txt", "ibm-pr4-cx6.show_gids.txt", "mooncake-1617-ipv6only.show_gids.txt"}) {
    std::string original = test::read_file(test::example_tables_dir() / name);
    EXPECT_EQ(write_show_gids(VALUE_OR_FAIL(read_show_gids(original, name))), original) << name;
  }
}

TEST(FormatsShowGids, ReadsOlderScriptRowsAndPastesThatLostTheirTabs) {
  // Older show_gids printed "\t\t\t" for an empty IPv4 column; a browser copy turns tabs into spaces.
  const char* text =
      "DEV     PORT    INDEX   GID                                     IPv4            VER     DEV\n"
      "---     ----    -----   ---                                     ------------    ---     ---\n"
      "mlx5_2  1       0       fe80:0000:0000:0000:5254:00ff:fe12:3456                 v1      ens3\n"
      "mlx5_2\t1\t1\tfe80:0000:0000:0000:5254:00ff:fe12:3456\t\t\tv2\tens3\n"
      "mlx5_2\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:0102\t192.168.1.2  \tv2\n"
      "mlx5_2\t2\t0\tfe80:0000:0000:0000:5254:00ff:fe12:3457\t  \t\t\n"
      "n_gids_found=4\n";
  auto r = read_show_gids(text, "old.txt");
  ASSERT_OK(r);
  ASSERT_EQ(r.value().size(), 2u);
  expect_show_gids_entry(r.value()[0], 0, "fe80::5254:ff:fe12:3456", GidType::roce_v1, "ens3");
  expect_show_gids_entry(r.value()[0], 1, "fe80::5254:ff:fe12:3456", GidType::roce_v2, "ens3");
  expect_show_gids_entry(r.value()[0], 3, "::ffff:192.168.1.2", GidType::roce_v2, "");
  // No type (gid_attrs unreadable) and no netdev: nothing says this port is RoCE.
  expect_show_gids_entry(r.value()[1], 0, "fe80::5254:ff:fe12:3457", GidType::unknown, "");
  EXPECT_EQ(r.value()[1].port().link_layer.kind(), LinkLayer::Kind::unknown);
}

TEST(FormatsShowGids, ReadsRowsPastedWithoutHeaderOrFooter) {
  auto r =
      read_show_gids("mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:0a00:0001\t10.0.0.1  \tv2\teth0\n", "rows");
  ASSERT_OK(r);
  ASSERT_EQ(r.value().size(), 1u);
  expect_show_gids_entry(r.value()[0], 3, "::ffff:10.0.0.1", GidType::roce_v2, "eth0");
}

// `show_gids | grep mlx5_1` on the NCCL pod's paste: the rows of one device, no header, no
// dashes, no n_gids_found= line. Nothing proves the grep kept every row, so the indices it does
// not list (0-3 here, which the whole paste would call empty) are unknown, not empty.
TEST(FormatsShowGids, AGreppedPasteIsOneDeviceWithUnknownSlots) {
  const std::string whole = test::read_file(test::example_tables_dir() / "nccl-1573-pod.show_gids.txt");
  std::string cut;
  std::istringstream in(whole);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("mlx5_1\t")) cut += line + "\n";
  ASSERT_FALSE(cut.empty());
  auto full = read_show_gids(whole, "whole");
  ASSERT_OK(full);
  auto r = read_show_gids(cut, "grep");
  ASSERT_OK(r);
  ASSERT_EQ(r.value().size(), 1u);
  const GidTable& t = r.value()[0];
  EXPECT_EQ(t.port().device, "mlx5_1");
  EXPECT_EQ(t.holes(), Holes::not_shown);
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.find(0u), nullptr) << "index 0 is not listed: unknown, with no entry to claim otherwise";
  EXPECT_EQ(full.value()[1].holes(), Holes::empty) << "the whole output proves its holes empty";
  // The rows themselves read as in the whole output.
  EXPECT_TRUE(std::equal(t.begin(), t.end(), full.value()[1].begin(), full.value()[1].end()));
  expect_show_gids_entry(t, 7, "::ffff:10.152.4.12", GidType::roce_v2, "net2");
}

TEST(FormatsShowGids, AnOutputThatFoundNothingIsNoTable) {
  auto r = read_show_gids(
      "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n---\t----\t-----\t---\t\t\t\t\t------------  "
      "\t---\t---\n"
      "n_gids_found=\n",
      "none");
  ASSERT_OK(r);
  EXPECT_TRUE(r.value().empty());
}

TEST(FormatsShowGids, WriteSkipsWhatTheScriptSkips) {
  PortInfo p{.device = "mlx5_0", .port = 1, .link_layer = LinkLayer::ethernet()};
  auto t = VALUE_OR_FAIL(GidTable::make(
      p, {GidEntry::valid(0, G("fe80::"), GidType::roce_v1, "eth0"),  // bare fe80::
          GidEntry::valid(1, G("::"), GidType::roce_v2, "eth0"),      // zero
          GidEntry::empty(2), GidEntry::unreadable(3, std::make_error_code(std::errc::invalid_argument)),
          GidEntry::valid(4, G("::ffff:10.0.0.1"), GidType::ib, "eth0")}));
  EXPECT_EQ(write_show_gids({t}),
            "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
            "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
            "mlx5_0\t1\t4\t0000:0000:0000:0000:0000:ffff:0a00:0001\t10.0.0.1  \tv1\teth0\n"
            "n_gids_found=1\n");
}

struct BadShowGids {
  const char* name;
  std::string text;
  errc code;
  const char* expect;
};
// Readable test names in ctest (gtest would print the struct's bytes).
void PrintTo(const BadShowGids& c, std::ostream* os) { *os << c.name; }

class FormatsShowGidsRejects : public ::testing::TestWithParam<BadShowGids> {};

TEST_P(FormatsShowGidsRejects, WithFileLineAndExpectation) {
  const BadShowGids& b = GetParam();
  auto r = read_show_gids(b.text, "bad.txt");
  ASSERT_FALSE(r) << b.name << " was accepted";
  EXPECT_EQ(r.error(), b.code) << r.error().what();
  EXPECT_NE(r.error().what().find(b.expect), std::string::npos) << r.error().what();
}

const std::string kHead =
    "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n---\t----\t-----\t---\t\t\t\t\t------------  "
    "\t---\t---\n";
const std::string kRow = "mlx5_0\t1\t4\tfe80:0000:0000:0000:a4ed:ccff:fe8b:1994\t  \tv1\tnet1\n";

INSTANTIATE_TEST_SUITE_P(
    Malformed, FormatsShowGidsRejects,
    ::testing::Values(
        BadShowGids{"empty", "", errc::parse_error, "bad.txt: no rows"},
        BadShowGids{"truncated_after_rows", kHead + kRow, errc::parse_error,
                    "bad.txt:3: the output ends without its n_gids_found= line"},
        BadShowGids{"truncated_mid_gid", kHead + "mlx5_0\t1\t4\tfe80:0000:0000:0000:a4ed:cc",
                    errc::invalid_field, "bad.txt:3: GID: expected 8 groups"},
        BadShowGids{"truncated_mid_row", kHead + "mlx5_0\t1\t", errc::parse_error,
                    "bad.txt:3: expected a row"},
        BadShowGids{"rows_missing", kHead + kRow + "n_gids_found=2\n", errc::parse_error,
                    "bad.txt:4: n_gids_found=2 but 1 rows were read"},
        BadShowGids{"bad_count", kHead + kRow + "n_gids_found=two\n", errc::invalid_field,
                    "bad.txt:4: n_gids_found:"},
        BadShowGids{"row_after_footer", kHead + kRow + "n_gids_found=1\n" + kRow, errc::parse_error,
                    "bad.txt:5: expected nothing after the n_gids_found line"},
        BadShowGids{"ipv4_disagrees",
                    kHead + "mlx5_0\t1\t6\t0000:0000:0000:0000:0000:ffff:0a98:000c\t10.152.0.13  "
                            "\tv1\tnet1\nn_gids_found=1\n",
                    errc::invalid_field,
                    "bad.txt:3: IPv4: 10.152.0.13 does not match the GID, which ends in 10.152.0.12"},
        BadShowGids{"duplicate_index", kHead + kRow + kRow + "n_gids_found=2\n", errc::duplicate_index,
                    "bad.txt:4: mlx5_0 port 1 index 4 appears twice (first at line 3)"},
        BadShowGids{"bad_port", kHead + "mlx5_0\tone\t4\tfe80::1\tv1\tnet1\n", errc::invalid_field,
                    "bad.txt:3: PORT:"},
        BadShowGids{"bad_index", kHead + "mlx5_0\t1\t-4\tfe80::1\tv1\tnet1\n", errc::invalid_field,
                    "bad.txt:3: INDEX:"},
        BadShowGids{
            "extra_column", kHead + "mlx5_0\t1\t4\tfe80::1\tv1\tnet1\textra\n", errc::parse_error,
            "bad.txt:3: expected a row 'DEV PORT INDEX GID [IPv4] [VER] [NETDEV]', found an extra column"},
        BadShowGids{"second_header", kHead + kRow + kHead, errc::parse_error,
                    "bad.txt:4: a second header line"},
        BadShowGids{"binary", kHead + std::string("\x00\x01\x02garbage", 10), errc::parse_error,
                    "bad.txt:3:1: binary data (byte 0x00)"},
        BadShowGids{"wrong_format_devinfo", "hca_id:\tmlx5_0\n\t\tport:\t1\n", errc::parse_error,
                    "bad.txt:1: expected a row"}),
    [](const ::testing::TestParamInfo<BadShowGids>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace gidpolicy
