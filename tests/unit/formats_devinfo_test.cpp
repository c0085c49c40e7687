// ibv_devinfo reader and writer: the real pastes in examples/tables, partial pastes, what
// rdma-core 44 prints, and malformed inputs (every error names file:line).
#include <gidpolicy/formats/devinfo.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"
#include "support/gid_literals.hpp"

#include <gtest/gtest.h>

#include <ostream>
#include <sstream>

namespace gidpolicy {
namespace {

using formats::read_devinfo;
using formats::write_devinfo;

std::vector<GidTable> read_devinfo_example(const char* name) {
  std::string text = test::read_file(test::example_tables_dir() / name);
  EXPECT_FALSE(text.empty()) << name;
  auto r = read_devinfo(text, name);
  EXPECT_OK(r);
  return r ? r.value() : std::vector<GidTable>{};
}

void expect_entry(const GidTable& t, std::uint32_t index, const char* gid, GidType type) {
  const GidEntry* e = t.find(index);
  ASSERT_NE(e, nullptr) << "index " << index;
  EXPECT_EQ(e->state, EntryState::valid);
  EXPECT_EQ(e->gid, G(gid)) << "index " << index;
  EXPECT_EQ(e->type, type) << "index " << index;
  EXPECT_EQ(e->netdev, "") << "devinfo prints no netdev";
}

TEST(FormatsDevinfo, ReadsNccl769Bond) {
  auto tables = read_devinfo_example("nccl-769.devinfo.txt");
  ASSERT_EQ(tables.size(), 1u);
  const GidTable& t = tables[0];
  EXPECT_EQ(t.port().device, "mlx5_bond_0");
  EXPECT_EQ(t.port().port, 1u);
  EXPECT_EQ(t.port().state, PortState::active);
  EXPECT_EQ(t.port().link_layer, LinkLayer::ethernet());
  EXPECT_EQ(t.port().gid_tbl_len, 256u);
  EXPECT_EQ(t.port().active_mtu, Mtu::mtu_1024);
  EXPECT_EQ(t.port().lid, 0u);
  // "active_width: 4X (2)", "active_speed: 25.0 Gbps (32)": 4X EDR, 100 Gb/s.
  EXPECT_EQ(t.port().link_rate, (LinkRate{.width = 2, .speed = 32}));
  EXPECT_EQ(t.port().link_rate.value_or(LinkRate{}).gbps(), 100.0);
  EXPECT_EQ(t.holes(), Holes::not_shown);
  ASSERT_EQ(t.size(), 4u);
  expect_entry(t, 0, "fe80::ac0:ebff:feda:1cfb", GidType::roce_v1);
  expect_entry(t, 1, "fe80::ac0:ebff:feda:1cfb", GidType::roce_v2);
  expect_entry(t, 2, "::ffff:200.0.209.6", GidType::roce_v1);
  expect_entry(t, 3, "::ffff:200.0.209.6", GidType::roce_v2);
  EXPECT_EQ(t.find(4u), nullptr);
}

TEST(FormatsDevinfo, ReadsAppleThunderboltWithMappedAtOne) {
  auto tables = read_devinfo_example("apple-ds4qa-rdma_en1.devinfo.txt");
  ASSERT_EQ(tables.size(), 1u);
  const GidTable& t = tables[0];
  EXPECT_EQ(t.port().device, "rdma_en1");
  EXPECT_EQ(t.port().link_layer, LinkLayer::thunderbolt());
  EXPECT_EQ(t.port().gid_tbl_len, 16u);
  ASSERT_EQ(t.size(), 2u);
  expect_entry(t, 0, "fe80::3c51:2eff:fe10:a42", GidType::unknown);
  expect_entry(t, 1, "::ffff:10.99.0.2", GidType::unknown);
}

TEST(FormatsDevinfo, ReadsAppleThunderboltWithoutIpv4) {
  auto tables = read_devinfo_example("apple-mlx4191-rdma_en3-noipv4.devinfo.txt");
  ASSERT_EQ(tables.size(), 1u);
  const GidTable& t = tables[0];
  EXPECT_EQ(t.port().device, "rdma_en3");
  EXPECT_EQ(t.port().link_layer, LinkLayer::thunderbolt());
  ASSERT_EQ(t.size(), 1u);
  expect_entry(t, 0, "fe80::347c:94ff:fecd:45c4", GidType::unknown);
  EXPECT_EQ(t.holes(), Holes::not_shown) << "index 1 may hold a GID devinfo did not print";
}

constexpr const char* kTwoDevices =
    "hca_id:\tmlx5_0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tfw_ver:\t\t\t\t20.31.1014\n"
    "\tphys_port_cnt:\t\t\t2\n"
    "\tmax_qp:\t\t\t\t131072\n"
    "\tdevice_cap_flags:\t\t0xed721c36\n"
    "\t\t\t\t\tBAD_PKEY_CNTR\n"
    "\tgeneral_odp_caps:\n"
    "\trc_odp_caps:\n"
    "\t\t\t\t\tNO SUPPORT\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t4096 (5)\n"
    "\t\t\tsm_lid:\t\t\t0\n"
    "\t\t\tport_lid:\t\t0\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tEthernet\n"
    "\t\t\tgid_tbl_len:\t\t256\n"
    "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0ac0:ebff:feda:1cfb, RoCE v1\n"
    "\t\t\tGID[  1]:\t\tfe80::ac0:ebff:feda:1cfb, RoCE v2\n"
    "\t\t\tGID[  6]:\t\t0000:0000:0000:0000:0000:ffff:0a98:000c, RoCE v1\n"
    "\t\t\tGID[  7]:\t\t::ffff:10.152.0.12, RoCE v2\n"
    "\n"
    "\t\tport:\t2\n"
    "\t\t\tstate:\t\t\tPORT_DOWN (1)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t1024 (3)\n"
    "\t\t\tsm_lid:\t\t\t0\n"
    "\t\t\tport_lid:\t\t0\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tEthernet\n"
    "\t\t\tgid_tbl_len:\t\t256\n"
    "\n"
    "hca_id:\tmlx4_0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tmax_qp:\t\t\t\t1000\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tmax_mtu:\t\t4096 (5)\n"
    "\t\t\tactive_mtu:\t\t2048 (4)\n"
    "\t\t\tsm_lid:\t\t\t1\n"
    "\t\t\tport_lid:\t\t12\n"
    "\t\t\tport_lmc:\t\t0x00\n"
    "\t\t\tlink_layer:\t\tInfiniBand\n"
    "\t\t\tgid_tbl_len:\t\t128\n"
    "\t\t\tphys_state:\t\tLINK_UP (5)\n"
    "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0002:c903:0010:a1b1\n"
    "\n";

// One port of `ibv_devinfo -v` as rdma-core after v64 prints it: every line from
// libibverbs/examples/devinfo.c's own printf formats, `effective_speed:\t%.1f Gbps` (from
// ibv_query_port_speed(), in 100 Mb/s units) between active_speed and phys_state.
// https://github.com/linux-rdma/rdma-core/blob/master/libibverbs/examples/devinfo.c
std::string port_block(const std::string& after_speed) {
  return "hca_id:\tmlx5_4\n"
         "\ttransport:\t\t\tInfiniBand (0)\n"
         "\tmax_qp:\t\t\t\t131072\n"
         "\t\tport:\t1\n"
         "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
         "\t\t\tmax_mtu:\t\t4096 (5)\n"
         "\t\t\tactive_mtu:\t\t4096 (5)\n"
         "\t\t\tsm_lid:\t\t\t0\n"
         "\t\t\tport_lid:\t\t0\n"
         "\t\t\tport_lmc:\t\t0x00\n"
         "\t\t\tlink_layer:\t\tEthernet\n"
         "\t\t\tmax_msg_sz:\t\t0x40000000\n"
         "\t\t\tport_cap_flags:\t\t0x04010000\n"
         "\t\t\tport_cap_flags2:\t0x0000\n"
         "\t\t\tmax_vl_num:\t\tinvalid value (0)\n"
         "\t\t\tbad_pkey_cntr:\t\t0x0\n"
         "\t\t\tqkey_viol_cntr:\t\t0x0\n"
         "\t\t\tsm_sl:\t\t\t0\n"
         "\t\t\tpkey_tbl_len:\t\t1\n"
         "\t\t\tgid_tbl_len:\t\t255\n"
         "\t\t\tsubnet_timeout:\t\t0\n"
         "\t\t\tinit_type_reply:\t0\n"
         "\t\t\tactive_width:\t\t4X (2)\n"
         "\t\t\tactive_speed:\t\t50.0 Gbps (64)\n" +
         after_speed +
         "\t\t\tphys_state:\t\tLINK_UP (5)\n"
         "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:a288:c2ff:fe0e:4a5c, RoCE v1\n"
         "\t\t\tGID[  1]:\t\tfe80::a288:c2ff:fe0e:4a5c, RoCE v2\n"
         "\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:0a00:0405, RoCE v1\n"
         "\t\t\tGID[  3]:\t\t::ffff:10.0.4.5, RoCE v2\n"
         "\n";
}

TEST(FormatsDevinfo, EffectiveSpeedLineOfNewerRdmaCoreChangesNothing) {
  auto plain = read_devinfo(port_block(""), "v64.txt");
  ASSERT_OK(plain);
  // 200 Gb/s is 2000 units of 100 Mb/s: "%.1f" of 2000 / 10.0.
  auto newer = read_devinfo(port_block("\t\t\teffective_speed:\t200.0 Gbps\n"), "v65.txt");
  ASSERT_OK(newer);
  ASSERT_EQ(newer.value().size(), 1u);
  EXPECT_EQ(newer.value(), plain.value());
  const GidTable& t = newer.value()[0];
  EXPECT_EQ(t.port().gid_tbl_len, 255u);
  EXPECT_EQ(t.port().link_rate, (LinkRate{2, 64}));
  EXPECT_EQ(t.size(), 4u);
  // A LAG or a narrow PCIe link makes it differ from width x speed: still nothing to read.
  auto lag = read_devinfo(port_block("\t\t\teffective_speed:\t400.0 Gbps\n"), "lag.txt");
  ASSERT_OK(lag);
  EXPECT_EQ(lag.value(), plain.value());
}

TEST(FormatsDevinfo, UnknownFutureKeysBetweenKnownLinesChangeNothing) {
  auto plain = read_devinfo(port_block(""), "v64.txt");
  ASSERT_OK(plain);
  // Keys no rdma-core prints yet, in its shape, in the port block and in the device block; one
  // holds a known key's name as a suffix and a value a known field would refuse.
  std::string text =
      port_block("\t\t\tfuture_port_state:\t\tPORT_WHATEVER (9)\n\t\t\tlink_layer_ex:\t\tBanana\n");
  text.insert(text.find("\tmax_qp:"), "\tfuture_device_key:\t\t0x1234\n");
  auto newer = read_devinfo(text, "future.txt");
  ASSERT_OK(newer);
  EXPECT_EQ(newer.value(), plain.value());
}

TEST(FormatsDevinfo, UnspecifiedLinkLayerReadsAsUnknown) {
  // rdma-core >= v33 prints "Unspecified" for IBV_LINK_LAYER_UNSPECIFIED (EFA's ports), from
  // its commit "libibverbs: Fix reporting link_layer for efa devices".
  const std::string text =
      "hca_id:\tefa_0\n"
      "\ttransport:\t\t\tunspecified (4)\n"
      "\tphys_port_cnt:\t\t\t1\n"
      "\t\tport:\t1\n"
      "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
      "\t\t\tmax_mtu:\t\t4096 (5)\n"
      "\t\t\tactive_mtu:\t\t4096 (5)\n"
      "\t\t\tsm_lid:\t\t\t0\n"
      "\t\t\tport_lid:\t\t0\n"
      "\t\t\tport_lmc:\t\t0x01\n"
      "\t\t\tlink_layer:\t\tUnspecified\n"
      "\n";
  auto r = read_devinfo(text, "efa.txt");
  ASSERT_OK(r);
  ASSERT_EQ(r.value().size(), 1u);
  EXPECT_EQ(r.value()[0].port().link_layer.kind(), LinkLayer::Kind::unknown);
  EXPECT_EQ(r.value()[0].port().device, "efa_0");
}

TEST(FormatsDevinfo, ReadsSeveralDevicesAndPorts) {
  auto r = read_devinfo(kTwoDevices, "two.txt");
  ASSERT_OK(r);
  const auto& tables = r.value();
  ASSERT_EQ(tables.size(), 3u);
  EXPECT_EQ(tables[0].port().device, "mlx5_0");
  EXPECT_EQ(tables[0].port().port, 1u);
  EXPECT_EQ(tables[0].port().active_mtu, Mtu::mtu_4096);
  ASSERT_EQ(tables[0].size(), 4u);
  expect_entry(tables[0], 6, "::ffff:10.152.0.12", GidType::roce_v1);
  expect_entry(tables[0], 7, "::ffff:10.152.0.12", GidType::roce_v2);
  EXPECT_EQ(tables[1].port().device, "mlx5_0");
  EXPECT_EQ(tables[1].port().port, 2u);
  EXPECT_EQ(tables[1].port().state, PortState::down);
  EXPECT_EQ(tables[1].port().active_mtu, Mtu::mtu_1024);
  EXPECT_EQ(tables[1].size(), 0u);
  EXPECT_EQ(tables[2].port().device, "mlx4_0");
  EXPECT_EQ(tables[2].port().link_layer, LinkLayer::infiniband());
  EXPECT_EQ(tables[2].port().lid, 12u);
  EXPECT_EQ(tables[2].port().gid_tbl_len, 128u);
  // No suffix on InfiniBand: every GID of an IB port is of type IB.
  expect_entry(tables[2], 0, "fe80::2:c903:10:a1b1", GidType::ib);
}

TEST(FormatsDevinfo, ReadsAPortSectionPastedAlone) {
  const char* paste =
      "\t\tport:\t2\n"
      "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
      "\t\t\tlink_layer:\t\tEthernet\n"
      "\t\t\tGID[  3]:\t\t::ffff:10.0.0.3, RoCE v2\n";
  auto r = read_devinfo(paste, "port.txt");
  ASSERT_OK(r);
  ASSERT_EQ(r.value().size(), 1u);
  const GidTable& t = r.value()[0];
  EXPECT_EQ(t.port().device, formats::kUnnamedDevice);
  EXPECT_EQ(t.port().port, 2u);
  EXPECT_EQ(t.port().gid_tbl_len, std::nullopt);
  expect_entry(t, 3, "::ffff:10.0.0.3", GidType::roce_v2);
}

TEST(FormatsDevinfo, ReadsPortFieldsWithoutThePortLine) {
  const char* paste =
      "   state:   PORT_ACTIVE (4)\n"
      "   link_layer:  InfiniBand\n"
      "   gid_tbl_len: 8\n"
      "   GID[  0]:    fe80:0000:0000:0000:0002:c903:0010:a1b1\n";
  auto r = read_devinfo(paste, "spaces.txt");
  ASSERT_OK(r);
  ASSERT_EQ(r.value().size(), 1u);
  EXPECT_EQ(r.value()[0].port().port, 1u);
  EXPECT_EQ(r.value()[0].port().gid_tbl_len, 8u);
  expect_entry(r.value()[0], 0, "fe80::2:c903:10:a1b1", GidType::ib);
}

TEST(FormatsDevinfo, ReadsOnlyGidLines) {
  const char* with_suffix =
      "GID[  0]:\t\tfe80:0000:0000:0000:0ac0:ebff:feda:1cfb, RoCE v1\r\n"
      "GID[  3]:\t\t::ffff:200.0.209.6, RoCE v2\r\n";
  auto a = read_devinfo(with_suffix, "gids.txt");
  ASSERT_OK(a);
  ASSERT_EQ(a.value().size(), 1u);
  EXPECT_EQ(a.value()[0].port().link_layer, LinkLayer::ethernet())
      << "the suffix is printed only on Ethernet";
  expect_entry(a.value()[0], 3, "::ffff:200.0.209.6", GidType::roce_v2);

  // rdma-core before v29: no suffix, the type is not known.
  const char* old = "\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:c800:d106\n";
  auto b = read_devinfo(old, "old.txt");
  ASSERT_OK(b);
  EXPECT_EQ(b.value()[0].port().link_layer.kind(), LinkLayer::Kind::unknown);
  expect_entry(b.value()[0], 2, "::ffff:200.0.209.6", GidType::unknown);
}

TEST(FormatsDevinfo, ReadsEnumNumbersDevinfoHasNoNameFor) {
  const char* paste =
      "\t\tport:\t1\n"
      "\t\t\tstate:\t\t\tinvalid state (5)\n"
      "\t\t\tactive_mtu:\t\t256 (1)\n"
      "\t\t\tlink_layer:\t\tUnknown\n";
  auto r = read_devinfo(paste, "p.txt");
  ASSERT_OK(r);
  EXPECT_EQ(r.value()[0].port().state, PortState::active_defer);
  EXPECT_EQ(r.value()[0].port().active_mtu, Mtu::mtu_256);
  EXPECT_EQ(r.value()[0].port().link_layer.kind(), LinkLayer::Kind::unknown);
}

TEST(FormatsDevinfo, ReadsLinkWidthAndSpeedIncludingEncodingsDevinfoHasNoNameFor) {
  auto read_rate = [](const std::string& width, const std::string& speed) -> std::optional<LinkRate> {
    const std::string paste = "\t\tport:\t1\n\t\t\tlink_layer:\t\tEthernet\n\t\t\tactive_width:\t\t" + width +
                              "\n\t\t\tactive_speed:\t\t" + speed + "\n";
    auto r = read_devinfo(paste, "p.txt");
    EXPECT_TRUE(r) << r.error().what();
    return r ? r.value()[0].port().link_rate : std::nullopt;
  };
  EXPECT_EQ(read_rate("1X (1)", "2.5 Gbps (1)"), (LinkRate{1, 1}));
  EXPECT_EQ(read_rate("12X (8)", "14.0 Gbps (16)"), (LinkRate{8, 16}));
  EXPECT_EQ(read_rate("2X (16)", "100.0 Gbps (128)"), (LinkRate{16, 128}));
  EXPECT_EQ(read_rate("4X (2)", "10.0 Gbps (8)"), (LinkRate{2, 8}));  // FDR10 prints as QDR does
  // rdma-core's words for an encoding it does not know: kept as the number, unknown.
  auto odd = read_rate("invalid widthX (3)", "invalid speed (7)");
  EXPECT_EQ(odd, (LinkRate{3, 7}));
  EXPECT_FALSE(odd.value_or(LinkRate{1, 1}).known());
  // No rate lines: the paste did not say.
  auto none = read_devinfo("\t\tport:\t1\n\t\t\tlink_layer:\t\tEthernet\n", "p.txt");
  ASSERT_OK(none);
  EXPECT_EQ(none.value()[0].port().link_rate, std::nullopt);
}

TEST(FormatsDevinfo, WritesAndReadsBackTheLinkRate) {
  PortInfo p{.device = "mlx5_0", .port = 1, .link_layer = LinkLayer::ethernet(), .gid_tbl_len = 4};
  p.link_rate = LinkRate{.width = 2, .speed = 64};  // 4X HDR
  ASSERT_OK_AND_ASSIGN(auto t, GidTable::make(p, {GidEntry::valid(1, G("fe80::1"), GidType::roce_v2)}));
  const std::string text = write_devinfo({t});
  EXPECT_NE(text.find("\t\t\tactive_width:\t\t4X (2)\n\t\t\tactive_speed:\t\t50.0 Gbps (64)\n"),
            std::string::npos)
      << text;
  ASSERT_OK_AND_ASSIGN(auto back, read_devinfo(text, "w.txt"));
  EXPECT_EQ(back[0].port().link_rate, p.link_rate);
}

TEST(FormatsDevinfo, TransportOneHundredWithUnknownLinkLayerIsThunderbolt) {
  // What the real rdma-core tool prints for a device reporting Apple's transport 100.
  const char* paste =
      "hca_id:\trdma_en2\n"
      "\ttransport:\t\t\tinvalid transport (100)\n"
      "\t\tport:\t1\n"
      "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
      "\t\t\tlink_layer:\t\tUnknown\n";
  auto r = read_devinfo(paste, "tb.txt");
  ASSERT_OK(r);
  EXPECT_EQ(r.value()[0].port().link_layer, LinkLayer::thunderbolt());
}

// The lines of the real paste that write_devinfo must reproduce byte for byte (the rest of the
// paste holds device attributes gidpolicy does not model).
TEST(FormatsDevinfo, WriteReproducesTheRealGidAndPortLines) {
  std::string original = test::read_file(test::example_tables_dir() / "nccl-769.devinfo.txt");
  ASSERT_OK_AND_ASSIGN(auto tables, read_devinfo(original, "nccl-769"));
  std::string written = write_devinfo(tables);
  std::istringstream lines(written);
  std::string line;
  int gid_lines = 0;
  while (std::getline(lines, line)) {
    if (line.find("GID[") != std::string::npos) ++gid_lines;
    if (line.find("max_mtu") != std::string::npos || line.find("transport") != std::string::npos ||
        line.find("phys_port_cnt") != std::string::npos || line.empty())
      continue;  // values the table does not hold (max_mtu 4096) or device-level lines
    EXPECT_NE(original.find(line + "\n"), std::string::npos)
        << "written line not in the real output: " << line;
  }
  EXPECT_EQ(gid_lines, 4);
}

TEST(FormatsDevinfo, WritesRdmaCore44Layout) {
  PortInfo eth{.device = "mlx5_0",
               .port = 1,
               .state = PortState::active,
               .link_layer = LinkLayer::ethernet(),
               .gid_tbl_len = 256,
               .active_mtu = Mtu::mtu_1024,
               .lid = 0};
  auto a = VALUE_OR_FAIL(
      GidTable::make(eth, {GidEntry::valid(0, G("fe80::1"), GidType::roce_v1, "eth0"),
                           GidEntry::valid(1, G("fe80::1"), GidType::roce_v2, "eth0"), GidEntry::empty(2),
                           GidEntry::valid(3, G("fd00::"), GidType::roce_v2),  // interface id 0: hidden
                           GidEntry::valid(4, G("::ffff:10.0.0.1"), GidType::unknown),  // untyped: hidden
                           GidEntry::valid(105, G("::ffff:10.0.0.1"), GidType::roce_v2)}));
  PortInfo ib{.device = "mlx5_0",
              .port = 2,
              .state = PortState::init,
              .link_layer = LinkLayer::infiniband(),
              .gid_tbl_len = std::nullopt,
              .active_mtu = Mtu::mtu_4096,
              .lid = 7};
  ASSERT_OK_AND_ASSIGN(auto b,
                       GidTable::make(ib, {GidEntry::valid(0, G("fe80::2:c903:10:a1b1"), GidType::ib)}));
  const std::string expected =
      "hca_id:\tmlx5_0\n"
      "\ttransport:\t\t\tInfiniBand (0)\n"
      "\tphys_port_cnt:\t\t\t2\n"
      "\t\tport:\t1\n"
      "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
      "\t\t\tmax_mtu:\t\t1024 (3)\n"
      "\t\t\tactive_mtu:\t\t1024 (3)\n"
      "\t\t\tsm_lid:\t\t\t0\n"
      "\t\t\tport_lid:\t\t0\n"
      "\t\t\tport_lmc:\t\t0x00\n"
      "\t\t\tlink_layer:\t\tEthernet\n"
      "\t\t\tgid_tbl_len:\t\t256\n"
      "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0000:0000:0000:0001, RoCE v1\n"
      "\t\t\tGID[  1]:\t\tfe80::1, RoCE v2\n"
      "\t\t\tGID[105]:\t\t::ffff:10.0.0.1, RoCE v2\n"
      "\n"
      "\t\tport:\t2\n"
      "\t\t\tstate:\t\t\tPORT_INIT (2)\n"
      "\t\t\tmax_mtu:\t\t4096 (5)\n"
      "\t\t\tactive_mtu:\t\t4096 (5)\n"
      "\t\t\tsm_lid:\t\t\t0\n"
      "\t\t\tport_lid:\t\t7\n"
      "\t\t\tport_lmc:\t\t0x00\n"
      "\t\t\tlink_layer:\t\tInfiniBand\n"
      "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0002:c903:0010:a1b1\n"
      "\n";
  EXPECT_EQ(write_devinfo({a, b}), expected);
}

// Regression (fuzz_devinfo): a device name longer than the writer's 256-byte line buffer was cut
// together with its newline, so write_devinfo's text no longer read back. The writer writes any
// name whole; the reader takes names up to the kernel's 63 bytes and refuses longer
// ones by name instead of misreading them.
TEST(FormatsDevinfo, RegressionLongDeviceNameIsWrittenWhole) {
  PortInfo p;
  p.device = "rdma_" + std::string(400, 'x');
  p.link_layer = LinkLayer::thunderbolt();
  p.gid_tbl_len = 16;
  ASSERT_OK_AND_ASSIGN(auto t, GidTable::make(p, {GidEntry::valid(1, Gid::ipv4_mapped(0x0a630002u))}));
  const std::string text = write_devinfo({t});
  EXPECT_NE(text.find("hca_id:\t" + p.device + "\n"), std::string::npos);
  auto refused = read_devinfo(text, "long.txt");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().detail.find("long.txt:1: hca_id: device name"), std::string::npos)
      << refused.error().detail;
  p.device = "rdma_" + std::string(58, 'x');  // 63 bytes, the longest the kernel allows
  t = VALUE_OR_FAIL(GidTable::make(p, {GidEntry::valid(1, Gid::ipv4_mapped(0x0a630002u))}));
  auto back = read_devinfo(write_devinfo({t}), "long.txt");
  ASSERT_OK(back);
  ASSERT_EQ(back.value().size(), 1u);
  EXPECT_EQ(back.value()[0].port().device, p.device);
  EXPECT_EQ(back.value(), formats::devinfo_view({t}));
}

TEST(FormatsDevinfo, WritesThunderboltAsApplePrintsIt) {
  auto tables = read_devinfo_example("apple-ds4qa-rdma_en1.devinfo.txt");
  std::string written = write_devinfo(tables);
  EXPECT_NE(written.find("\ttransport:\t\t\tThunderbolt (100)\n"), std::string::npos);
  EXPECT_NE(written.find("\t\t\tlink_layer:\t\tThunderbolt\n"), std::string::npos);
  EXPECT_NE(written.find("\t\t\tGID[  1]:\t\t0000:0000:0000:0000:0000:ffff:0a63:0002\n"), std::string::npos);
  EXPECT_EQ(VALUE_OR_FAIL(read_devinfo(written, "again")), tables);
}

struct BadDevinfo {
  const char* name;
  std::string text;
  errc code;
  const char* expect;  // substring of the message: where, and what was expected
};
// Readable test names in ctest (gtest would print the struct's bytes).
void PrintTo(const BadDevinfo& c, std::ostream* os) { *os << c.name; }

class FormatsDevinfoRejects : public ::testing::TestWithParam<BadDevinfo> {};

TEST_P(FormatsDevinfoRejects, WithFileLineAndExpectation) {
  const BadDevinfo& b = GetParam();
  auto r = read_devinfo(b.text, "bad.txt");
  ASSERT_FALSE(r) << b.name << " was accepted";
  EXPECT_EQ(r.error(), b.code) << r.error().what();
  EXPECT_NE(r.error().what().find(b.expect), std::string::npos) << r.error().what();
}

const std::string kHeader =
    "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tmax_qp:\t\t\t\t10\n\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tlink_layer:\t\tEthernet\n\t\t\tgid_tbl_len:\t\t4\n";

INSTANTIATE_TEST_SUITE_P(
    Malformed, FormatsDevinfoRejects,
    ::testing::Values(
        BadDevinfo{"empty", "", errc::parse_error, "no port section and no GID line"},
        BadDevinfo{"truncated_gid", kHeader + "\t\t\tGID[  0]:\t\tfe80:0000:0000:00", errc::parse_error,
                   "bad.txt:8: GID[0]"},
        BadDevinfo{"truncated_ipv4", kHeader + "\t\t\tGID[  3]:\t\t::ffff:200.0.2", errc::parse_error,
                   "bad.txt:8:"},
        BadDevinfo{"truncated_suffix", kHeader + "\t\t\tGID[  1]:\t\tfe80::1, RoCE v", errc::parse_error,
                   "bad.txt:8: expected ', RoCE v1' or ', RoCE v2'"},
        BadDevinfo{"truncated_index", kHeader + "\t\t\tGID[  ", errc::parse_error,
                   "bad.txt:8: expected 'GID[  n]:'"},
        BadDevinfo{
            "truncated_before_link_layer",
            "hca_id:\tmlx5_0\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n",
            errc::parse_error, "bad.txt:2: mlx5_0 port 1: the section ends at line 4 without a link_layer"},
        BadDevinfo{
            "truncated_before_gid_tbl_len",
            "hca_id:\tmlx5_0\n\tmax_qp:\t\t\t\t10\n\t\tport:\t1\n\t\t\tlink_layer:\t\tEthernet\n\t\t\tmax_"
            "msg_sz:\t\t0x4\n",
            errc::parse_error, "without the gid_tbl_len line"},
        BadDevinfo{"hca_without_port", "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n",
                   errc::parse_error, "bad.txt:1: hca_id mlx5_0 has no port section"},
        BadDevinfo{"gid_before_tbl_len_in_full_output",
                   "hca_id:\tmlx5_0\n\tmax_qp:\t\t\t\t10\n\t\tport:\t1\n\t\t\tlink_layer:\t\tEthernet\n"
                   "\t\t\tGID[  0]:\t\tfe80::1, RoCE v2\n",
                   errc::parse_error, "bad.txt:5: GID line before gid_tbl_len"},
        BadDevinfo{"mixed_suffix",
                   kHeader + "\t\t\tGID[  0]:\t\tfe80::1, RoCE v2\n\t\t\tGID[  1]:\t\tfe80::2\n",
                   errc::parse_error, "bad.txt:9: GID[1] lacks the ', RoCE vN' suffix but line 8"},
        BadDevinfo{"duplicate_index",
                   kHeader + "\t\t\tGID[  0]:\t\tfe80::1, RoCE v2\n\t\t\tGID[  0]:\t\tfe80::2, RoCE v2\n",
                   errc::duplicate_index,
                   "bad.txt:9: GID[0] appears twice in mlx5_0 port 1 (first at line 8)"},
        BadDevinfo{"index_beyond_len", kHeader + "\t\t\tGID[  4]:\t\tfe80::1, RoCE v2\n",
                   errc::index_too_large, "bad.txt:8: GID index 4 is not below gid_tbl_len 4"},
        BadDevinfo{"len_after_gid", "GID[  9]:\t\tfe80::1\ngid_tbl_len:\t8\n", errc::index_too_large,
                   "bad.txt:1: GID index 9 is not below gid_tbl_len 8"},
        BadDevinfo{"two_sections_spliced", kHeader + "\t\t\tlink_layer:\t\tInfiniBand\n", errc::parse_error,
                   "bad.txt:8: second 'link_layer'"},
        BadDevinfo{"bad_state", "state:\tPORT_SLEEPY\n", errc::invalid_field,
                   "bad.txt:1: state: expected a port state"},
        BadDevinfo{"bad_mtu", "active_mtu:\t1500\n", errc::invalid_field,
                   "bad.txt:1: active_mtu: expected an MTU"},
        BadDevinfo{"bad_tbl_len", "gid_tbl_len:\tmany\n", errc::invalid_field,
                   "bad.txt:1: gid_tbl_len: expected a decimal"},
        BadDevinfo{"width_text_disagrees_with_number", "active_width:\t4X (4)\nactive_speed:\t2.5 Gbps (1)\n",
                   errc::invalid_field,
                   "bad.txt:1: active_width: expected a link width as ibv_devinfo prints it"},
        BadDevinfo{"speed_without_number", "active_width:\t4X (2)\nactive_speed:\t25.0 Gbps\n",
                   errc::invalid_field, "bad.txt:2: active_speed: expected a lane speed"},
        BadDevinfo{"speed_number_too_large", "active_width:\t4X (2)\nactive_speed:\tinvalid speed (256)\n",
                   errc::invalid_field, "bad.txt:2: active_speed:"},
        BadDevinfo{"width_without_speed", "link_layer:\tEthernet\nactive_width:\t4X (2)\n", errc::parse_error,
                   "bad.txt:2: unknown port 1: active_width without active_speed"},
        BadDevinfo{"bad_port", "\t\tport:\t0\n", errc::invalid_field,
                   "bad.txt:1: port: expected a port number 1-255"},
        BadDevinfo{"duplicate_port",
                   kHeader + "\t\tport:\t1\n\t\t\tlink_layer:\t\tEthernet\n\t\t\tgid_tbl_len:\t\t4\n",
                   errc::parse_error,
                   "bad.txt:8: mlx5_0 port 1 appears twice (a second section for the same port)"},
        BadDevinfo{"binary",
                   std::string("hca_id:\tmlx5_0\n\x7f"
                               "ELF\x02\x01\x01\x00\x00",
                               24),
                   errc::parse_error, "bad.txt:2:1: binary data (byte 0x7f)"},
        BadDevinfo{"wrong_format_show_gids", "DEV\tPORT\tINDEX\tGID\nmlx5_0\t1\t0\tfe80::1\tv2\teth0\n",
                   errc::parse_error, "no port section and no GID line"}),
    [](const ::testing::TestParamInfo<BadDevinfo>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace gidpolicy
