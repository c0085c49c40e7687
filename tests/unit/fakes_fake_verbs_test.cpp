// FakeVerbs: rdma-core's read semantics, the driver models deciding create_qp/RTR, the QP
// state machine, table mutations, fault injection and counters.
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"
#include "support/gid_literals.hpp"

#include <gtest/gtest.h>

#include <cerrno>

namespace gidpolicy::fakes {
namespace {

using verbs::VerbsCall;

GidTable mlx5_table() {
  PortInfo p{"mlx5_0", 1, PortState::active, LinkLayer::ethernet(), 8, Mtu::mtu_4096, 0};
  return VALUE_OR_FAIL(
      GidTable::make(p, {GidEntry::valid(0, g("fe80::1"), GidType::roce_v1, "eth0", 4),
                         GidEntry::valid(1, g("fe80::1"), GidType::roce_v2, "eth0", 4),
                         GidEntry::valid(2, g("::ffff:10.0.0.1"), GidType::roce_v1, "eth0", 4),
                         GidEntry::valid(3, g("::ffff:10.0.0.1"), GidType::roce_v2, "eth0", 4),
                         GidEntry::unreadable(5, std::error_code(EIO, std::generic_category()))}));
}

ibv_qp_attr init_attr(std::uint8_t port = 1) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = port;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  return a;
}
constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;

ibv_qp_attr rtr_attr(std::uint8_t sgid_index, const Gid& dgid) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = 0x200;
  a.rq_psn = 7;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.grh.sgid_index = sgid_index;
  dgid.copy_to(a.ah_attr.grh.dgid.raw);
  return a;
}
constexpr int kUcRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

struct Fixture : ::testing::Test {
  FakeVerbs fake;
  DeviceHandle dev;
  void SetUp() override {
    ASSERT_TRUE(fake.add_port(mlx5_table()));
    auto h = fake.open_device("mlx5_0");
    ASSERT_OK(h);
    dev = h.value();
    fake.reset_counters();
  }
  /// A UC QP in INIT on port 1.
  QpHandle init_qp(QpKind kind = QpKind::uc) {
    const QpHandle q = VALUE_OR_FAIL(fake.create_qp(dev, kind));
    EXPECT_OK(fake.modify_qp(q, init_attr(), kInitMask));
    return q;
  }
};

using FakeVerbsReads = Fixture;

TEST_F(FakeVerbsReads, LegacyReadGivesZerosForAnEmptySlotAndEinvalPastTheTable) {
  EXPECT_EQ(VALUE_OR_FAIL(fake.read_gid(dev, 1, 3)), g("::ffff:10.0.0.1"));
  auto empty = fake.read_gid(dev, 1, 4);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty.value().is_zero());
  auto past = fake.read_gid(dev, 1, 8);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error(), std::errc::invalid_argument);
  EXPECT_EQ(fake.read_gid(dev, 1, 5).error().code.value(), EIO);
  EXPECT_EQ(fake.read_gid(dev, 2, 0).error().code.value(), EINVAL);  // no port 2
  EXPECT_EQ(fake.calls(VerbsCall::read_gid), 5u);
}

TEST_F(FakeVerbsReads, EntryReadGivesEnodataForAnEmptySlotAndKeepsTypeAndNetdev) {
  auto e = fake.read_gid_entry(dev, 1, 3);
  ASSERT_TRUE(e);
  EXPECT_EQ(e.value().type, GidType::roce_v2);
  EXPECT_EQ(e.value().netdev, "eth0");
  EXPECT_EQ(e.value().ifindex, 4u);
  auto empty = fake.read_gid_entry(dev, 1, 4);
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code.value(), ENODATA);
  EXPECT_NE(empty.error().detail.find("read_gid_entry(mlx5_0, 1, 4)"), std::string::npos)
      << empty.error().detail;
}

TEST_F(FakeVerbsReads, TableReadListsValidEntriesOfEveryPortAndFailsWhenTheBufferIsSmall) {
  PortInfo p2{"mlx5_0", 2, PortState::active, LinkLayer::ethernet(), 4, Mtu::mtu_1024, 0};
  ASSERT_TRUE(
      fake.add_port(VALUE_OR_FAIL(GidTable::make(p2, {GidEntry::valid(0, g("fe80::2"), GidType::roce_v2)}))));
  auto rows = fake.read_gid_table(dev, 16);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows.value().size(), 5u);  // 4 valid on port 1 (the unreadable one is not listed) + 1
  EXPECT_EQ(rows.value().back().port, 2u);
  auto small = fake.read_gid_table(dev, 4);
  ASSERT_FALSE(small);
  EXPECT_EQ(small.error().code.value(), EINVAL);
}

TEST_F(FakeVerbsReads, UnsupportedReadsFailWithEopnotsuppAndAreNotOffered) {
  ASSERT_TRUE(fake.set_read_support("mlx5_0", {false, true, true}));
  EXPECT_EQ(fake.read_gid_table(dev, 16).error().code.value(), EOPNOTSUPP);
  EXPECT_EQ(fake.read_support(dev), (verbs::ReadSupport{false, true, true}));
}

TEST_F(FakeVerbsReads, UnknownDeviceAndNoDevice) {
  auto none = fake.open_device("mlx5_9");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error(), errc::device_not_found);
  EXPECT_NE(none.error().detail.find("mlx5_0"), std::string::npos);
  FakeVerbs empty;
  EXPECT_EQ(empty.device_names().error(), errc::no_devices);
  EXPECT_EQ(empty.open_device("x").error(), errc::no_devices);
}

TEST(FakeVerbsLoad, LoadsTheExampleTablesAndPicksTheProfileFromTheLinkLayer) {
  FakeVerbs fake;
  auto r = fake.load_file(test::example_tables_dir() / "macmini-mapped-at-2.json");
  ASSERT_OK(r);
  EXPECT_EQ(fake.devices(), std::vector<std::string>{"rdma_en2"});
  EXPECT_EQ(VALUE_OR_FAIL(fake.driver_model("rdma_en2")).name, "apple_thunderbolt");
  EXPECT_EQ(VALUE_OR_FAIL(fake.table("rdma_en2", 1)).find(2)->gid, g("::ffff:10.99.0.3"));
  auto bad = fake.load_text("{ not json", "paste");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().what().find("paste"), std::string::npos);
  EXPECT_EQ(fake.load_file("/nonexistent/t.json").error(), errc::io_error);
  // The same port twice is refused.
  EXPECT_EQ(fake.load_file(test::example_tables_dir() / "macmini-mapped-at-2.json").error(),
            errc::invalid_argument);
}

TEST(FakeVerbsLoad, LoadsPastedToolOutputInAnyFormat) {
  FakeVerbs fake;
  auto r = fake.load_file(test::example_tables_dir() / "apple-ds4qa-rdma_en1.devinfo.txt");
  ASSERT_OK(r);
  auto pod =
      fake.load_text(test::read_file(test::example_tables_dir() / "nccl-1573-pod.show_gids.txt"), "pod");
  ASSERT_OK(pod);
  EXPECT_EQ(fake.devices().size(), 3u);  // rdma_en1 + the pod's two mlx5 devices
  EXPECT_EQ(VALUE_OR_FAIL(fake.driver_model("rdma_en1")).name, "apple_thunderbolt");
  ASSERT_OK_AND_ASSIGN(const DeviceHandle dev, fake.open_device("rdma_en1"));
  EXPECT_EQ(VALUE_OR_FAIL(fake.read_gid(dev, 1, 1)), g("::ffff:10.99.0.2"));
  EXPECT_EQ(VALUE_OR_FAIL(fake.port_attributes(dev, 1)).gid_tbl_len, 16u);
  // A show_gids table states no gid_tbl_len; a driver always reports one: one past the last index.
  const std::string pod_dev = fake.devices()[1];
  ASSERT_OK_AND_ASSIGN(const DeviceHandle h, fake.open_device(pod_dev));
  EXPECT_EQ(VALUE_OR_FAIL(fake.port_attributes(h, 1)).gid_tbl_len,
            VALUE_OR_FAIL(fake.table(pod_dev, 1)).length());
}

using FakeVerbsFaults = Fixture;

TEST_F(FakeVerbsFaults, NthCallOfAKindFailsOnceWithTheGivenErrno) {
  fake.fail_nth(VerbsCall::read_gid_entry, 2, EIO);
  EXPECT_TRUE(fake.read_gid_entry(dev, 1, 3));
  auto second = fake.read_gid_entry(dev, 1, 3);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code.value(), EIO);
  EXPECT_NE(second.error().detail.find("injected"), std::string::npos);
  EXPECT_TRUE(fake.read_gid_entry(dev, 1, 3));
  EXPECT_EQ(fake.calls(VerbsCall::read_gid_entry), 3u);  // the failed call counts too
  EXPECT_EQ(fake.pending_faults(), 0u);
}

TEST_F(FakeVerbsFaults, EveryCallOfAKindAndNthCallOverall) {
  fake.fail_every(VerbsCall::port_attributes, ENODEV);
  EXPECT_EQ(fake.port_attributes(dev, 1).error().code.value(), ENODEV);
  EXPECT_EQ(fake.port_attributes(dev, 1).error().code.value(), ENODEV);
  EXPECT_TRUE(fake.read_gid(dev, 1, 0));
  fake.clear_faults();
  EXPECT_TRUE(fake.port_attributes(dev, 1));

  fake.fail_call_number(3, ETIMEDOUT);
  EXPECT_TRUE(fake.read_gid(dev, 1, 0));
  EXPECT_TRUE(fake.port_attributes(dev, 1));
  EXPECT_EQ(fake.read_gid_table(dev, 64).error().code.value(), ETIMEDOUT);
  EXPECT_TRUE(fake.read_gid_table(dev, 64));
  const std::vector<VerbsCall> log = fake.call_log();
  EXPECT_EQ(log.size(), fake.total_calls());
  EXPECT_EQ(log.back(), VerbsCall::read_gid_table);
}

TEST_F(FakeVerbsFaults, MutationsChangeTheTableAtTheGivenCall) {
  ASSERT_TRUE(fake.mutate_at(VerbsCall::read_gid, 2,
                             TableMutation::stale_entry("mlx5_0", 1, 3, g("::ffff:10.0.0.9"))));
  EXPECT_EQ(VALUE_OR_FAIL(fake.read_gid(dev, 1, 3)), g("::ffff:10.0.0.1"));
  EXPECT_EQ(VALUE_OR_FAIL(fake.read_gid(dev, 1, 3)), g("::ffff:10.0.0.9"));  // the 2nd call sees it
  // The stale entry keeps its type and netdev: only the address changed.
  EXPECT_EQ(VALUE_OR_FAIL(fake.table("mlx5_0", 1)).find(3)->type, GidType::roce_v2);

  ASSERT_TRUE(fake.apply(TableMutation::moved_index("mlx5_0", 1, 3, 6)));
  ASSERT_OK_AND_ASSIGN(const GidTable t, fake.table("mlx5_0", 1));
  EXPECT_EQ(t.find(3), nullptr);
  EXPECT_EQ(t.find(6)->gid, g("::ffff:10.0.0.9"));
  ASSERT_TRUE(fake.apply(TableMutation::emptied("mlx5_0", 1, 6)));
  EXPECT_EQ(fake.read_gid_entry(dev, 1, 6).error().code.value(), ENODATA);

  EXPECT_EQ(fake.apply(TableMutation::moved_index("mlx5_0", 1, 4, 5)).error(),
            errc::invalid_argument);  // empty
  EXPECT_EQ(fake.apply(TableMutation::emptied("mlx5_0", 1, 8)).error(),
            errc::invalid_argument);  // out of range
  EXPECT_EQ(fake.apply(TableMutation::emptied("mlx5_9", 1, 0)).error(), errc::device_not_found);
  EXPECT_EQ(TableMutation::moved_index("mlx5_0", 1, 3, 6).to_string(), "moved_index mlx5_0:1[3] -> [6]");
}

TEST_F(FakeVerbsFaults, MutationTargetsAreCheckedAndFailuresWhenFiringAreKept) {
  EXPECT_EQ(fake.mutate_at(VerbsCall::read_gid, 1, TableMutation::emptied("mlx5_9", 1, 0)).error(),
            errc::device_not_found);
  EXPECT_EQ(fake.mutate_at(VerbsCall::read_gid, 1, TableMutation::moved_index("mlx5_0", 1, 3, 8)).error(),
            errc::invalid_argument);
  EXPECT_EQ(fake.pending_faults(), 0u);
  // Slot 4 is empty when the move fires: recorded, not dropped.
  ASSERT_TRUE(fake.mutate_at(VerbsCall::read_gid, 1, TableMutation::moved_index("mlx5_0", 1, 4, 6)));
  EXPECT_TRUE(fake.read_gid(dev, 1, 0));
  ASSERT_EQ(fake.failed_mutations().size(), 1u);
  EXPECT_NE(fake.failed_mutations()[0].detail.find("holds no GID to move"), std::string::npos);
}

using FakeVerbsQp = Fixture;

TEST_F(FakeVerbsQp, UcQpWalksResetInitRtrRtsAndKeepsItsAttributes) {
  const QpHandle q = init_qp();
  auto r = fake.modify_qp(q, rtr_attr(3, g("::ffff:10.0.0.2")), kUcRtrMask);
  ASSERT_OK(r);
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.sq_psn = 7;
  ASSERT_TRUE(fake.modify_qp(q, rts, IBV_QP_STATE | IBV_QP_SQ_PSN));
  ASSERT_OK_AND_ASSIGN(const FakeQp state, fake.qp(q));
  EXPECT_EQ(state.state, IBV_QPS_RTS);
  EXPECT_EQ(state.port, 1u);
  EXPECT_EQ(state.attr.dest_qp_num, 0x200u);
  EXPECT_EQ(state.attr.sq_psn, 7u);
  EXPECT_EQ(state.source_gid, g("::ffff:10.0.0.1"));
  ASSERT_TRUE(state.rtr);
  EXPECT_EQ(state.rtr->outcome, RtrOutcome::ok);
  ASSERT_OK_AND_ASSIGN(auto info, fake.query_qp(q));
  EXPECT_EQ(info.qp_num, state.qp_num);
  EXPECT_EQ(info.state, IBV_QPS_RTS);
  EXPECT_EQ(info.attr.ah_attr.grh.sgid_index, 3);
  EXPECT_EQ(fake.qp_by_number("mlx5_0", state.qp_num)->state, IBV_QPS_RTS);
  ASSERT_TRUE(fake.destroy_qp(q));
  EXPECT_EQ(fake.qp_count("mlx5_0"), 0u);
}

TEST_F(FakeVerbsQp, MissingRequiredBitsAndBadTransitionsAreEinval) {
  ASSERT_OK_AND_ASSIGN(auto q, fake.create_qp(dev, QpKind::uc));
  auto no_access = fake.modify_qp(q, init_attr(), IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
  ASSERT_FALSE(no_access);
  EXPECT_EQ(no_access.error().code.value(), EINVAL);
  EXPECT_EQ(fake.modify_qp(q, init_attr(2), kInitMask).error().code.value(), EINVAL);  // no port 2
  EXPECT_EQ(fake.modify_qp(q, rtr_attr(3, g("::ffff:10.0.0.2")), kUcRtrMask).error().code.value(),
            EINVAL);  // RESET->RTR
  ASSERT_TRUE(fake.modify_qp(q, init_attr(), kInitMask));
  auto no_mtu = fake.modify_qp(q, rtr_attr(3, g("::ffff:10.0.0.2")), kUcRtrMask & ~IBV_QP_PATH_MTU);
  EXPECT_EQ(no_mtu.error().code.value(), EINVAL);
  EXPECT_EQ(VALUE_OR_FAIL(fake.qp(q)).state, IBV_QPS_INIT);  // a failed RTR leaves the QP in INIT
}

// Without IBV_QP_STATE the kernel takes the current state as the next one (a cur->cur
// transition, judged by the same table): an RC QP in RTS may change its access flags or its RNR
// timer alone; a bit that RTS->RTS does not take (SQ_PSN is RTR->RTS's) is EINVAL.
TEST_F(FakeVerbsQp, RtsToRtsWithoutStateTakesThatRowsOptionalBits) {
  const QpHandle q = init_qp(QpKind::rc);
  ibv_qp_attr rtr = rtr_attr(3, g("::ffff:10.0.0.2"));
  rtr.max_dest_rd_atomic = 1;
  rtr.min_rnr_timer = 12;
  ASSERT_OK(fake.modify_qp(q, rtr, kUcRtrMask | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
  ibv_qp_attr rts{};
  rts.qp_state = IBV_QPS_RTS;
  rts.timeout = 14;
  rts.retry_cnt = 7;
  rts.rnr_retry = 7;
  rts.sq_psn = 9;
  rts.max_rd_atomic = 1;
  ASSERT_OK(fake.modify_qp(q, rts,
                           IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                               IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC));
  ibv_qp_attr change{};
  change.qp_state = IBV_QPS_RESET;  // ignored: the mask does not name the state
  change.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  ASSERT_OK(fake.modify_qp(q, change, IBV_QP_ACCESS_FLAGS));
  change.min_rnr_timer = 20;
  ASSERT_OK(fake.modify_qp(q, change, IBV_QP_MIN_RNR_TIMER));
  ASSERT_OK_AND_ASSIGN(const FakeQp after, fake.qp(q));
  EXPECT_EQ(after.state, IBV_QPS_RTS);
  EXPECT_EQ(after.attr.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  EXPECT_EQ(after.attr.min_rnr_timer, 20);
  change.sq_psn = 5;
  auto refused = fake.modify_qp(q, change, IBV_QP_SQ_PSN);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code.value(), EINVAL);
  EXPECT_EQ(VALUE_OR_FAIL(fake.qp(q)).attr.sq_psn, 9u);  // refused: nothing changed
  // RTR has no RTR->RTR row: an attribute-only change there is EINVAL too.
  const QpHandle r = init_qp(QpKind::rc);
  ASSERT_OK(fake.modify_qp(r, rtr, kUcRtrMask | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
  EXPECT_EQ(fake.modify_qp(r, change, IBV_QP_ACCESS_FLAGS).error().code.value(), EINVAL);
}

TEST_F(FakeVerbsQp, LinuxProfileDecidesRtrErrnos) {
  // Empty in-range slot: ENODATA (kernel >= 5.10).
  EXPECT_EQ(fake.modify_qp(init_qp(), rtr_attr(4, g("::ffff:10.0.0.2")), kUcRtrMask).error().code.value(),
            ENODATA);
  // Empty slot and a zero destination (both sides pinned empty slots): the source is resolved
  // first, ENODATA; a zero destination from a valid slot is EINVAL.
  EXPECT_EQ(fake.modify_qp(init_qp(), rtr_attr(4, Gid{}), kUcRtrMask).error().code.value(), ENODATA);
  EXPECT_EQ(fake.modify_qp(init_qp(), rtr_attr(3, Gid{}), kUcRtrMask).error().code.value(), EINVAL);
  // Family mismatch: EINVAL.
  EXPECT_EQ(fake.modify_qp(init_qp(), rtr_attr(3, g("fd93::2")), kUcRtrMask).error().code.value(), EINVAL);
  // Out of range: EINVAL.
  EXPECT_EQ(fake.modify_qp(init_qp(), rtr_attr(200, g("::ffff:10.0.0.2")), kUcRtrMask).error().code.value(),
            EINVAL);
  // Netdev gone: ENODEV.
  ASSERT_TRUE(fake.apply(TableMutation::netdev_gone("mlx5_0", 1, 3)));
  EXPECT_EQ(fake.modify_qp(init_qp(), rtr_attr(3, g("::ffff:10.0.0.2")), kUcRtrMask).error().code.value(),
            ENODEV);
  ASSERT_TRUE(fake.apply(TableMutation::netdev_back("mlx5_0", 1, 3)));
  // Link-local source to a routed destination: RTR passes, the verdict says it times out.
  const QpHandle q = init_qp();
  ASSERT_TRUE(fake.modify_qp(q, rtr_attr(1, g("fd93::2")), kUcRtrMask));
  EXPECT_EQ(VALUE_OR_FAIL(fake.qp(q)).rtr->outcome, RtrOutcome::times_out);
  // An old kernel: EINVAL for the empty slot.
  auto old = DriverModel::linux_kernel();
  old.enodata_for_empty_slot = false;
  ASSERT_TRUE(fake.set_driver_model("mlx5_0", old));
  EXPECT_EQ(fake.modify_qp(init_qp(), rtr_attr(4, g("::ffff:10.0.0.2")), kUcRtrMask).error().code.value(),
            EINVAL);
}

TEST(FakeVerbsApple, ThunderboltProfileRefusesRcCapsQpsAndRejectsIndex1WhenMappedIsAt2) {
  FakeVerbs fake;
  ASSERT_TRUE(fake.load_file(test::example_tables_dir() / "macmini-mapped-at-2.json"));
  ASSERT_OK_AND_ASSIGN(const DeviceHandle dev, fake.open_device("rdma_en2"));
  EXPECT_EQ(fake.create_qp(dev, QpKind::rc).error().code.value(), 102);  // Darwin EOPNOTSUPP
  std::vector<QpHandle> qps;
  for (int i = 0; i < 10; ++i) qps.push_back(VALUE_OR_FAIL(fake.create_qp(dev, QpKind::uc)));
  EXPECT_EQ(fake.create_qp(dev, QpKind::uc).error().code.value(), EBUSY);  // the 11th
  for (std::size_t i = 1; i < qps.size(); ++i) ASSERT_TRUE(fake.destroy_qp(qps[i]));
  const QpHandle q = qps[0];
  ASSERT_TRUE(fake.modify_qp(q, init_attr(), kInitMask));
  const Gid peer = g("::ffff:10.99.0.4");
  // JACCL's literal 1 on this Mac mini: errno 22 (MLX PR 3389).
  auto at1 = fake.modify_qp(q, rtr_attr(1, peer), kUcRtrMask);
  ASSERT_FALSE(at1);
  EXPECT_EQ(at1.error().code.value(), 22);
  // Index 0 (the fe80): Darwin ETIMEDOUT 60 at RTR.
  EXPECT_EQ(fake.modify_qp(q, rtr_attr(0, peer), kUcRtrMask).error().code.value(), 60);
  // The index where the mapped GID is: fine.
  EXPECT_TRUE(fake.modify_qp(q, rtr_attr(2, peer), kUcRtrMask));
}

TEST_F(FakeVerbsQp, CloseDeviceDestroysItsQps) {
  (void)init_qp();
  (void)init_qp();
  EXPECT_EQ(fake.qp_count("mlx5_0"), 2u);
  ASSERT_TRUE(fake.close_device(dev));
  EXPECT_EQ(fake.qp_count("mlx5_0"), 0u);
  EXPECT_EQ(fake.port_attributes(dev, 1).error(), errc::invalid_argument);  // handle closed
}

TEST_F(FakeVerbsQp, QpNumberAllocatorIsUsed) {
  std::uint32_t next = 18515;
  fake.set_qp_number_allocator([&]() -> result<std::uint32_t> { return next++; });
  EXPECT_EQ(VALUE_OR_FAIL(fake.qp(VALUE_OR_FAIL(fake.create_qp(dev, QpKind::uc)))).qp_num, 18515u);
  EXPECT_EQ(VALUE_OR_FAIL(fake.qp(VALUE_OR_FAIL(fake.create_qp(dev, QpKind::uc)))).qp_num, 18516u);
}

}  // namespace
}  // namespace gidpolicy::fakes
