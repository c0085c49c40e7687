#include <gidpolicy/driver_model.hpp>

#include <gtest/gtest.h>
#include "example_tables.hpp"
#include "support/assert_ok.hpp"
#include "support/gid_literals.hpp"

namespace gidpolicy {
namespace {

GidTable nccl769() {
  PortInfo p{"mlx5_bond_0", 1, PortState::active, LinkLayer::ethernet(), 256, Mtu::mtu_1024, 0};
  return VALUE_OR_FAIL(GidTable::make(p, {GidEntry::valid(0, g("fe80::ac0:ebff:feda:1cfb"), GidType::roce_v1),
                                          GidEntry::valid(1, g("fe80::ac0:ebff:feda:1cfb"), GidType::roce_v2),
                                          GidEntry::valid(2, g("::ffff:200.0.209.6"), GidType::roce_v1),
                                          GidEntry::valid(3, g("::ffff:200.0.209.6"), GidType::roce_v2)}));
}

GidTable macmini() {
  PortInfo p{"rdma_en2", 1, PortState::active, LinkLayer::thunderbolt(), 16, Mtu::mtu_1024, 0};
  return VALUE_OR_FAIL(GidTable::make(p, {GidEntry::valid(0, g("fe80::14a2:7cff:fe31:9d05")),
                                          GidEntry::empty(1), GidEntry::valid(2, g("::ffff:10.99.0.3"))}));
}

const Gid kPeer4Gid = Gid::ipv4_mapped(0xc800d107u);

TEST(JudgeRtr, LinuxAcceptsTheV2Ipv4Entry) {
  auto v = judge_rtr(nccl769(), {.sgid_index = 3, .dgid = kPeer4Gid}, DriverModel::linux_kernel());
  EXPECT_EQ(v.outcome, RtrOutcome::ok) << v.reason;
}

TEST(JudgeRtr, LinuxOutOfRangeIsEinval) {
  auto v = judge_rtr(nccl769(), {.sgid_index = 256 + 300, .dgid = kPeer4Gid}, DriverModel::linux_kernel());
  // 556 wraps to 44 (uint8_t), which is in range but empty.
  EXPECT_EQ(v.err, 61);
  EXPECT_NE(v.reason.find("wrapped to 44"), std::string::npos) << v.reason;
  const GidTable full = nccl769();
  PortInfo small = full.port();
  small.gid_tbl_len = 4;
  ASSERT_OK_AND_ASSIGN(auto t, GidTable::make(small, {full.begin(), full.end()}));
  auto w = judge_rtr(t, {.sgid_index = 4, .dgid = kPeer4Gid}, DriverModel::linux_kernel());
  EXPECT_EQ(w.outcome, RtrOutcome::error);
  EXPECT_EQ(w.err, 22);
  EXPECT_EQ(
      w.to_string(Platform::linux_kernel).rfind("EINVAL (22): sgid_index 4 is not below gid_tbl_len 4", 0),
      0u)
      << w.to_string(Platform::linux_kernel);
}

TEST(JudgeRtr, LinuxEmptySlotIsEnodataOrEinvalOnOldKernels) {
  auto prof = DriverModel::linux_kernel();
  auto v = judge_rtr(nccl769(), {.sgid_index = 7, .dgid = kPeer4Gid}, prof);
  EXPECT_EQ(v.err, 61);
  prof.enodata_for_empty_slot = false;
  EXPECT_EQ(judge_rtr(nccl769(), {.sgid_index = 7, .dgid = kPeer4Gid}, prof).err, 22);
}

// Both sides pinned an empty slot: each routes from nothing and was told the peer's all-zero
// GID. Linux's _ib_modify_qp resolves the source (rdma_fill_sgid_attr -> rdma_get_gid_attr)
// before the destination (ib_resolve_eth_dmac), so the answer is the empty slot's ENODATA, not
// the zero destination's EINVAL; a zero destination from a usable slot stays EINVAL.
TEST(JudgeRtr, LinuxEmptySourceIsJudgedBeforeAZeroDestination) {
  const GidTable t = nccl769();
  const auto v = judge_rtr(t, {.sgid_index = 7, .dgid = Gid{}}, DriverModel::linux_kernel());
  EXPECT_EQ(v.outcome, RtrOutcome::error);
  EXPECT_EQ(v.err, 61);
  EXPECT_EQ(v.rule, RtrRule::empty_slot);
  EXPECT_EQ(v.passed & rule_bit(RtrRule::dgid_zero), 0u);  // not reached
  const auto w = judge_rtr(t, {.sgid_index = 3, .dgid = Gid{}}, DriverModel::linux_kernel());
  EXPECT_EQ(w.err, 22);
  EXPECT_EQ(w.rule, RtrRule::dgid_zero);
  EXPECT_NE(w.passed & rule_bit(RtrRule::empty_slot), 0u);
  // Out of range still comes first (rdma_get_gid_attr's own EINVAL), zero destination or not.
  PortInfo small = t.port();
  small.gid_tbl_len = 4;
  const GidTable four = VALUE_OR_FAIL(GidTable::make(small, {t.begin(), t.end()}));
  const auto x = judge_rtr(four, {.sgid_index = 5, .dgid = Gid{}}, DriverModel::linux_kernel());
  EXPECT_EQ(x.err, 22);
  EXPECT_EQ(x.rule, RtrRule::index_out_of_range);
  // An old kernel's empty slot is EINVAL either way, named as the empty slot.
  auto old = DriverModel::linux_kernel();
  old.enodata_for_empty_slot = false;
  const auto y = judge_rtr(t, {.sgid_index = 7, .dgid = Gid{}}, old);
  EXPECT_EQ(y.err, 22);
  EXPECT_EQ(y.rule, RtrRule::empty_slot);
}

TEST(JudgeRtr, LinuxNoGrhOnRoceIsEinval) {
  auto v = judge_rtr(nccl769(), {.is_global = false, .sgid_index = 3, .dgid = kPeer4Gid},
                     DriverModel::linux_kernel());
  EXPECT_EQ(v.err, 22);
}

TEST(JudgeRtr, LinuxFamilyMismatchIsEinval) {
  auto v = judge_rtr(nccl769(), {.sgid_index = 3, .dgid = g("fd93::1")}, DriverModel::linux_kernel());
  EXPECT_EQ(v.err, 22);
  EXPECT_NE(v.reason.find("other address family"), std::string::npos);
}

TEST(JudgeRtr, LinuxLinkLocalSourceTimesOutLater) {
  auto v = judge_rtr(nccl769(), {.sgid_index = 1, .dgid = g("fe80::1")}, DriverModel::linux_kernel());
  EXPECT_EQ(v.outcome, RtrOutcome::ok);  // link-local to link-local on one link is fine
  auto w = judge_rtr(nccl769(), {.sgid_index = 1, .dgid = g("fd93::1")}, DriverModel::linux_kernel());
  EXPECT_EQ(w.outcome, RtrOutcome::times_out);
  EXPECT_EQ(w.err, 110);
}

TEST(JudgeRtr, LinuxRoceVersionMismatchTimesOut) {
  auto v = judge_rtr(nccl769(), {.sgid_index = 2, .dgid = kPeer4Gid, .peer_gid_type = GidType::roce_v2},
                     DriverModel::linux_kernel());
  EXPECT_EQ(v.outcome, RtrOutcome::times_out);
}

TEST(JudgeRtr, LinuxMissingNetdevIsEnodev) {
  auto v = judge_rtr(nccl769(), {.sgid_index = 3, .dgid = kPeer4Gid, .source_netdev_present = false},
                     DriverModel::linux_kernel());
  EXPECT_EQ(v.err, 19);
}

TEST(JudgeRtr, AppleLiteralIndexOneOnMacMiniIsEinval) {
  // MLX PR 3389: the mapped GID sits at 2, JACCL routes from 1.
  auto v = judge_rtr(macmini(), {.sgid_index = 1, .dgid = Gid::ipv4_mapped(0x0a630002u)},
                     DriverModel::apple_thunderbolt());
  EXPECT_EQ(v.outcome, RtrOutcome::error);
  EXPECT_EQ(v.err, 22);
  auto ok = judge_rtr(macmini(), {.sgid_index = 2, .dgid = Gid::ipv4_mapped(0x0a630002u)},
                      DriverModel::apple_thunderbolt());
  EXPECT_EQ(ok.outcome, RtrOutcome::ok) << ok.reason;
}

TEST(JudgeRtr, AppleIndexZeroIsDarwinEtimedout) {
  auto v = judge_rtr(macmini(), {.sgid_index = 0, .dgid = Gid::ipv4_mapped(0x0a630002u)},
                     DriverModel::apple_thunderbolt());
  EXPECT_EQ(v.err, 60);
  EXPECT_EQ(errno_name(Platform::darwin, 60), "ETIMEDOUT");
  EXPECT_EQ(errno_name(Platform::linux_kernel, 60), "errno 60");
}

TEST(JudgeRtr, NotShownSlotIsUnknown) {
  PortInfo p = nccl769().port();
  ASSERT_OK_AND_ASSIGN(
      auto t, GidTable::make(p, {GidEntry::valid(3, kPeer4Gid, GidType::roce_v2)}, Holes::not_shown));
  EXPECT_EQ(judge_rtr(t, {.sgid_index = 2, .dgid = kPeer4Gid}, DriverModel::linux_kernel()).outcome,
            RtrOutcome::unknown);
}

TEST(JudgeCreateQp, AppleIsUcOnlyAndCapped) {
  auto apple = DriverModel::apple_thunderbolt();
  EXPECT_EQ(judge_create_qp(QpKind::rc, 0, apple).err, 102);
  EXPECT_EQ(judge_create_qp(QpKind::uc, 9, apple).outcome, RtrOutcome::ok);
  EXPECT_EQ(judge_create_qp(QpKind::uc, 10, apple).err, 16);
  EXPECT_EQ(judge_create_qp(QpKind::rc, 1000, DriverModel::linux_kernel()).outcome, RtrOutcome::ok);
}

TEST(DriverModel, ByNameAndLinkLayer) {
  EXPECT_EQ(DriverModel::by_name("linux")->name, "linux");
  EXPECT_EQ(DriverModel::by_name("apple_thunderbolt")->platform, Platform::darwin);
  EXPECT_FALSE(DriverModel::by_name("windows"));
  EXPECT_EQ(DriverModel::for_link_layer(LinkLayer::thunderbolt()).name, "apple_thunderbolt");
  EXPECT_EQ(DriverModel::for_link_layer(LinkLayer::ethernet()).name, "linux");
}

// The data path's receive rule (the fake libibverbs): InfiniBand/Linux drop a UC message that
// finds no receive; Apple's Thunderbolt driver holds it (JACCL's credit-less collectives work).
TEST(DriverModel, UcWaitsForReceiveOnlyOnApple) {
  EXPECT_FALSE(DriverModel::linux_kernel().uc_waits_for_receive);
  EXPECT_TRUE(DriverModel::apple_thunderbolt().uc_waits_for_receive);
  EXPECT_TRUE(DriverModel::for_link_layer(LinkLayer::thunderbolt()).uc_waits_for_receive);
}

TEST(DriverModel, ForTableIsTheOneChoice) {
  const GidTable tb = test::apple_ds4qa();
  const GidTable roce = test::nccl_769();
  EXPECT_EQ(DriverModel::for_table(tb).name, "apple_thunderbolt");
  EXPECT_EQ(DriverModel::for_table(roce).name, "linux");
  // A named platform wins over the link layer.
  EXPECT_EQ(DriverModel::for_table(roce, Platform::darwin).name, "apple_thunderbolt");
  EXPECT_EQ(DriverModel::for_table(tb, Platform::linux_kernel).name, "linux");
  EXPECT_EQ(DriverModel::for_platform(Platform::darwin).name, "apple_thunderbolt");
  EXPECT_EQ(DriverModel::for_platform(Platform::linux_kernel).name, "linux");
}

TEST(DriverModel, TheQpCapHasItsOwnRule) {
  const DriverModel apple = DriverModel::apple_thunderbolt();
  const RtrVerdict full = judge_create_qp(QpKind::uc, 10, apple);
  EXPECT_EQ(full.rule, RtrRule::qp_limit);
  EXPECT_EQ(to_string(full.rule), "qp_limit");
  const RtrVerdict room = judge_create_qp(QpKind::uc, 9, apple);
  EXPECT_EQ(room.rule, RtrRule::none);
  EXPECT_NE(room.passed & rule_bit(RtrRule::qp_limit), 0u);
  EXPECT_NE(room.passed & rule_bit(RtrRule::qp_type), 0u);
  EXPECT_EQ(judge_create_qp(QpKind::rc, 0, apple).rule, RtrRule::qp_type);
  // No cap: the rule is never checked.
  EXPECT_EQ(
      judge_create_qp(QpKind::uc, 1000, DriverModel::linux_kernel()).passed & rule_bit(RtrRule::qp_limit),
      0u);
}

}  // namespace
}  // namespace gidpolicy
