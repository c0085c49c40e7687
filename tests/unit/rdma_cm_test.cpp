// rdma_cm.hpp: the kernel's rule for an address's GID (rdma_cm_source) and the per-port default
// RoCE mode (parse_roce_modes, default_roce_mode). The drop-in fake librdmacm decides with the
// same function; its tests (label rdmacm) check real programs against it.
#include <gidpolicy/rdma_cm.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "support/assert_ok.hpp"

#include <vector>

namespace gidpolicy {
namespace {

using testing::HasSubstr;

Gid cm_gid(const char* s) { return VALUE_OR_FAIL(Gid::parse(s)); }

PortInfo cm_port(const char* device, std::uint32_t num = 1, LinkLayer ll = LinkLayer::ethernet()) {
  return PortInfo{device, num, PortState::active, ll, 16, Mtu::mtu_1024, 0};
}

/// Two devices as nccl-1573-pod: each a v1/v2 pair of link-local and IPv4 GIDs on its netdev;
/// mlx5_1 also holds 10.0.0.9 as v1 only, and 10.0.0.7 on another netdev (net9).
std::vector<GidTable> cm_host() {
  std::vector<GidTable> t;
  t.push_back(VALUE_OR_FAIL(GidTable::make(
      cm_port("mlx5_0"), {GidEntry::valid(4, cm_gid("fe80::1"), GidType::roce_v1, "net1"),
                          GidEntry::valid(5, cm_gid("fe80::1"), GidType::roce_v2, "net1"),
                          GidEntry::valid(6, cm_gid("::ffff:10.152.0.12"), GidType::roce_v1, "net1"),
                          GidEntry::valid(7, cm_gid("::ffff:10.152.0.12"), GidType::roce_v2, "net1")})));
  t.push_back(VALUE_OR_FAIL(GidTable::make(
      cm_port("mlx5_1"), {GidEntry::valid(2, cm_gid("::ffff:10.0.0.9"), GidType::roce_v1, "net2"),
                          GidEntry::valid(3, cm_gid("::ffff:10.0.0.7"), GidType::roce_v2, "net9"),
                          GidEntry::valid(6, cm_gid("::ffff:10.152.4.12"), GidType::roce_v1, "net2"),
                          GidEntry::valid(7, cm_gid("::ffff:10.152.4.12"), GidType::roce_v2, "net2")})));
  return t;
}

TEST(RdmaCmSource, TheDefaultV2GidOfTheAddressOnItsNetdev) {
  const auto t = cm_host();
  auto a = VALUE_OR_FAIL(rdma_cm_source(t, cm_gid("::ffff:10.152.0.12"), "net1", {}));
  EXPECT_EQ(a.table, 0u);
  EXPECT_EQ(a.entry->index, 7u);
  EXPECT_EQ(a.mode, GidType::roce_v2);
  auto b = VALUE_OR_FAIL(rdma_cm_source(t, cm_gid("::ffff:10.152.4.12"), "net2", {}));
  EXPECT_EQ(b.table, 1u);
  EXPECT_EQ(b.entry->index, 7u);
}

TEST(RdmaCmSource, APortSetToV1TakesTheV1Gid) {
  const auto t = cm_host();
  const std::vector<RoceModeSetting> modes = VALUE_OR_FAIL(parse_roce_modes("mlx5_0:1=v1"));
  auto a = VALUE_OR_FAIL(rdma_cm_source(t, cm_gid("::ffff:10.152.0.12"), "net1", modes));
  EXPECT_EQ(a.entry->index, 6u);
  EXPECT_EQ(a.mode, GidType::roce_v1);
  // Only the port named: mlx5_1 keeps v2.
  EXPECT_EQ(VALUE_OR_FAIL(rdma_cm_source(t, cm_gid("::ffff:10.152.4.12"), "net2", modes)).entry->index, 7u);
}

TEST(RdmaCmSource, OnlyAV1GidUnderTheDefaultV2ModeIsEnodev) {
  const auto t = cm_host();
  auto r = rdma_cm_source(t, cm_gid("::ffff:10.0.0.9"), "net2", {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, errc::no_candidate);
  EXPECT_THAT(r.error().detail, HasSubstr("ENODEV"));
  EXPECT_THAT(r.error().detail, HasSubstr("mlx5_1 port 1 holds it only as roce_v1"));
  const std::vector<RoceModeSetting> v1 = VALUE_OR_FAIL(parse_roce_modes("mlx5_1=v1"));
  EXPECT_EQ(VALUE_OR_FAIL(rdma_cm_source(t, cm_gid("::ffff:10.0.0.9"), "net2", v1)).entry->index, 2u);
}

TEST(RdmaCmSource, AGidOfAnotherNetdevIsNeverTaken) {
  const auto t = cm_host();
  auto r = rdma_cm_source(t, cm_gid("::ffff:10.0.0.7"), "net2", {});
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().detail, HasSubstr("on net9, not on net2"));
  // Without a namespace the table's own netdev stands for the address's owner.
  EXPECT_EQ(VALUE_OR_FAIL(rdma_cm_source(t, cm_gid("::ffff:10.0.0.7"), std::nullopt, {})).entry->index, 3u);
}

TEST(RdmaCmSource, AnAddressNoGidHoldsIsEnodev) {
  const auto t = cm_host();
  auto r = rdma_cm_source(t, cm_gid("::ffff:10.152.9.9"), "net1", {});
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().detail, HasSubstr("no port holds that address at all"));
  EXPECT_FALSE(rdma_cm_source(t, Gid(), "net1", {}));
}

TEST(RdmaCmSource, InfinibandPortsAreNotMatchedByIpAddress) {
  std::vector<GidTable> t;
  t.push_back(
      VALUE_OR_FAIL(GidTable::make(cm_port("mlx5_ib", 1, LinkLayer::infiniband()),
                                   {GidEntry::valid(0, cm_gid("::ffff:10.1.1.1"), GidType::ib, "ib0")})));
  auto r = rdma_cm_source(t, cm_gid("::ffff:10.1.1.1"), "ib0", {});
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().detail, HasSubstr("IPoIB"));
}

TEST(RdmaCmSource, TheFirstDeviceAndLowestIndexWin) {
  std::vector<GidTable> t;
  for (const char* d : {"a", "b"})
    t.push_back(VALUE_OR_FAIL(GidTable::make(
        cm_port(d), {GidEntry::valid(3, cm_gid("::ffff:10.9.9.9"), GidType::roce_v2, "bond0"),
                     GidEntry::valid(9, cm_gid("::ffff:10.9.9.9"), GidType::roce_v2, "bond0")})));
  auto r = VALUE_OR_FAIL(rdma_cm_source(t, cm_gid("::ffff:10.9.9.9"), "bond0", {}));
  EXPECT_EQ(r.table, 0u);
  EXPECT_EQ(r.entry->index, 3u);
}

TEST(RoceModes, ParseAndLookUp) {
  const auto m = VALUE_OR_FAIL(parse_roce_modes("mlx5_0=v1,mlx5_0:2=v2,mlx5_1:1=1"));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(default_roce_mode(cm_port("mlx5_0", 1), m), GidType::roce_v1);
  EXPECT_EQ(default_roce_mode(cm_port("mlx5_0", 2), m), GidType::roce_v2);
  EXPECT_EQ(default_roce_mode(cm_port("mlx5_1", 1), m), GidType::roce_v1);
  EXPECT_EQ(default_roce_mode(cm_port("mlx5_2", 1), m), GidType::roce_v2);
  EXPECT_TRUE(VALUE_OR_FAIL(parse_roce_modes("")).empty());
}

TEST(RoceModes, BadSettingsNameThePosition) {
  for (const char* bad : {"mlx5_0", "mlx5_0=v3", "=v1", "mlx5_0:0=v1", "mlx5_0:x=v1", "a=v1,,b=v2"}) {
    auto r = parse_roce_modes(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().code, errc::invalid_field) << bad;
    EXPECT_THAT(r.error().detail, HasSubstr("position")) << bad;
  }
  std::string many;
  for (int i = 0; i < 257; ++i) many += (i ? "," : "") + std::string("d=v1");
  EXPECT_FALSE(parse_roce_modes(many));
}

}  // namespace
}  // namespace gidpolicy
