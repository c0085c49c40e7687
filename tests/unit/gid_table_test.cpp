#include <gidpolicy/gid_table.hpp>

#include <gtest/gtest.h>
#include "support/assert_ok.hpp"
#include "support/gid_literals.hpp"

namespace gidpolicy {
namespace {

PortInfo eth_port(std::optional<std::uint32_t> len = 16) {
  PortInfo p;
  p.device = "mlx5_0";
  p.port = 1;
  p.link_layer = LinkLayer::ethernet();
  p.gid_tbl_len = len;
  return p;
}

TEST(GidTable, SortsAndLooksUpByIndexWithHoles) {
  auto t = GidTable::make(eth_port(),
                          {GidEntry::valid(7, g("::ffff:10.0.0.1"), GidType::roce_v2, "net1"),
                           GidEntry::valid(4, g("fe80::1"), GidType::roce_v1, "net1"), GidEntry::empty(5)});
  ASSERT_TRUE(t);
  std::vector<std::uint32_t> order;
  for (const auto& e : t.value()) order.push_back(e.index);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{4, 5, 7}));
  ASSERT_NE(t.value().find(7u), nullptr);
  EXPECT_EQ(t.value().find(7u)->netdev, "net1");
  EXPECT_EQ(t.value().find(6u), nullptr);   // a hole
  EXPECT_EQ(t.value().find(99u), nullptr);  // out of range
  EXPECT_EQ(t.value().find(5u)->state, EntryState::empty);
  EXPECT_FALSE(t.value().find(5u)->usable());
  EXPECT_TRUE(t.value().find(4u)->usable());
  EXPECT_EQ(t.value().length(), 16u);
}

TEST(GidTable, FindsByGidValueLowestIndex) {
  Gid v4 = g("::ffff:10.0.0.1");
  auto t = GidTable::make(eth_port(), {GidEntry::valid(3, v4, GidType::roce_v2),
                                       GidEntry::valid(2, v4, GidType::roce_v1), GidEntry::empty(0)});
  ASSERT_TRUE(t);
  ASSERT_NE(t.value().find(v4), nullptr);
  EXPECT_EQ(t.value().find(v4)->index, 2u);
  EXPECT_EQ(t.value().find(g("::ffff:10.0.0.2")), nullptr);
  EXPECT_EQ(t.value().find(Gid{}), nullptr);  // empty slots are not "holding" the zero GID
}

TEST(GidTable, LengthUnknownIsOnePastHighestIndex) {
  auto t = GidTable::make(eth_port(std::nullopt), {GidEntry::valid(6, g("::ffff:10.152.0.12"))});
  ASSERT_TRUE(t);
  EXPECT_EQ(t.value().length(), 7u);
  EXPECT_EQ(VALUE_OR_FAIL(GidTable::make(eth_port(std::nullopt), {})).length(), 0u);
}

TEST(GidTable, RejectsDuplicateIndex) {
  auto t = GidTable::make(eth_port(), {GidEntry::valid(1, g("fe80::1")), GidEntry::empty(1)});
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error(), errc::duplicate_index);
  EXPECT_NE(t.error().detail.find("port 1 index 1 appears twice"), std::string::npos) << t.error().detail;
}

TEST(GidTable, RejectsIndexBeyondTableOrTwoToThe31) {
  auto beyond = GidTable::make(eth_port(4), {GidEntry::valid(4, g("fe80::1"))});
  ASSERT_FALSE(beyond);
  EXPECT_EQ(beyond.error(), errc::index_too_large);
  auto huge = GidTable::make(eth_port(std::nullopt), {GidEntry::valid(0x80000000u, g("fe80::1"))});
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error(), errc::index_too_large);
  EXPECT_NE(huge.error().detail.find("2^31"), std::string::npos);
}

TEST(LinkLayer, KeepsUnknownRawValues) {
  EXPECT_EQ(LinkLayer::from_raw(2), LinkLayer::ethernet());
  EXPECT_EQ(LinkLayer::from_raw(100), LinkLayer::thunderbolt());
  auto odd = LinkLayer::from_raw(42);
  EXPECT_EQ(odd.kind(), LinkLayer::Kind::unknown);
  EXPECT_EQ(odd.raw(), 42u);
  EXPECT_EQ(to_string(odd), "unknown(42)");
  EXPECT_EQ(link_layer_from_string("unknown(42)"), odd);
  EXPECT_EQ(link_layer_from_string("Thunderbolt"), LinkLayer::thunderbolt());
  EXPECT_EQ(link_layer_from_string("InfiniBand"), LinkLayer::infiniband());
  EXPECT_EQ(link_layer_from_string("7"), LinkLayer::from_raw(7));
  EXPECT_EQ(link_layer_from_string("fast"), std::nullopt);
  EXPECT_TRUE(LinkLayer::ethernet().is_ip_routed());
  EXPECT_TRUE(LinkLayer::thunderbolt().is_ip_routed());
  EXPECT_FALSE(LinkLayer::infiniband().is_ip_routed());
}

TEST(Names, GidTypeAndPortStateSpellings) {
  EXPECT_EQ(gid_type_from_string("RoCE v2"), GidType::roce_v2);
  EXPECT_EQ(gid_type_from_string("v1"), GidType::roce_v1);
  EXPECT_EQ(gid_type_from_string("IB"), GidType::ib);
  EXPECT_EQ(gid_type_from_string("v3"), std::nullopt);
  EXPECT_EQ(port_state_from_string("PORT_ACTIVE"), PortState::active);
  EXPECT_EQ(port_state_from_string("armed"), PortState::armed);
  EXPECT_EQ(port_state_from_string("PORT_SLEEPY"), std::nullopt);
  for (auto t : {GidType::ib, GidType::roce_v1, GidType::roce_v2, GidType::unknown})
    EXPECT_EQ(gid_type_from_string(to_string(t)), t);
}

TEST(Mtu, BytesRoundTrip) {
  EXPECT_EQ(mtu_bytes(Mtu::mtu_1024), 1024u);
  EXPECT_EQ(mtu_bytes(Mtu::mtu_4096), 4096u);
  EXPECT_EQ(mtu_from_bytes(2048), Mtu::mtu_2048);
  EXPECT_EQ(mtu_from_bytes(1500), std::nullopt);
}

TEST(GidTableNames, PortsAndEntriesAreNamedOneWay) {
  const PortInfo p{"mlx5_0", 1, PortState::active, LinkLayer::ethernet(), 16, Mtu::mtu_1024, 0};
  EXPECT_EQ(port_name("mlx5_0", 1), "mlx5_0 port 1");
  EXPECT_EQ(port_name(p), "mlx5_0 port 1");
  EXPECT_EQ(entry_name("mlx5_0", 1, 3), "mlx5_0 port 1 index 3");
  EXPECT_EQ(entry_name(p, 3), "mlx5_0 port 1 index 3");
  const GidTable t = VALUE_OR_FAIL(GidTable::make(p, {}));
  EXPECT_EQ(port_name(t), "mlx5_0 port 1");
  // The table's own errors name the entry that way.
  auto dup = GidTable::make(p, {GidEntry::empty(2), GidEntry::empty(2)});
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().detail, "mlx5_0 port 1 index 2 appears twice");
}

}  // namespace
}  // namespace gidpolicy
