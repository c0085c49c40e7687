// snapshot(): the cheapest read, its call cost measured with the fake's counters, fallbacks,
// the port-state rule, early stop for first-mapped scans; find_current_index and read_entry.
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <gtest/gtest.h>
#include "support/assert_ok.hpp"
#include "support/gid_literals.hpp"

#include <cerrno>

namespace gidpolicy::verbs {
namespace {

using fakes::FakeVerbs;
using fakes::TableMutation;

/// A 256-entry RoCE table: fe80 v1/v2 pairs and empty slots below `mapped_at`, the first
/// IPv4-mapped GID at `mapped_at`, more entries after it.
GidTable wide_table(std::uint32_t mapped_at, PortState state = PortState::active) {
  PortInfo p{"mlx5_0", 1, state, LinkLayer::ethernet(), 256, Mtu::mtu_4096, 0};
  std::vector<GidEntry> e;
  for (std::uint32_t i = 0; i < mapped_at; ++i)
    if (i % 3 != 2)
      e.push_back(GidEntry::valid(i, g("fe80::1"), i % 2 ? GidType::roce_v2 : GidType::roce_v1, "eth0", 4));
  e.push_back(GidEntry::valid(mapped_at, Gid::ipv4_mapped(0x0a000001u), GidType::roce_v1, "eth0", 4));
  for (std::uint32_t i = mapped_at + 1; i < 256; i += 2)
    e.push_back(GidEntry::valid(i, Gid::ipv4_mapped(0x0a000100u + i), GidType::roce_v2, "eth0", 4));
  return VALUE_OR_FAIL(GidTable::make(p, std::move(e)));
}

struct Snap : ::testing::Test {
  FakeVerbs fake;
  DeviceHandle dev;
  void load(const GidTable& t) {
    ASSERT_TRUE(fake.add_port(t));
    dev = VALUE_OR_FAIL(fake.open_device(t.port().device));
    fake.reset_counters();
  }
};

TEST_F(Snap, TableCallCostsOneCallPlusThePortQuery) {
  load(wide_table(3));
  SnapshotReport report;
  auto t = snapshot(fake, dev, 1, {.report = &report});
  ASSERT_OK(t);
  EXPECT_EQ(t.value(), VALUE_OR_FAIL(fake.table("mlx5_0", 1)));
  EXPECT_EQ(fake.calls(VerbsCall::read_gid_table), 1u);
  EXPECT_EQ(fake.calls(VerbsCall::port_attributes), 1u);
  EXPECT_EQ(fake.total_calls(), 2u);
  EXPECT_EQ(report.method, ReadMethod::gid_table);
  EXPECT_EQ(report.driver_calls, 2u);
  EXPECT_EQ(report.gid_reads, 1u);
  EXPECT_TRUE(report.fallbacks.empty());
}

TEST_F(Snap, WithoutTheTableCallAFirstMappedScanStoppingAtKCostsKPlusOneReads) {
  for (std::uint32_t k : {0u, 1u, 2u, 3u, 17u, 200u, 255u}) {
    SCOPED_TRACE("k = " + std::to_string(k));
    FakeVerbs f;
    ASSERT_TRUE(f.add_port(wide_table(k)));
    ASSERT_TRUE(f.set_read_support("mlx5_0", {false, true, true}));
    const DeviceHandle h = VALUE_OR_FAIL(f.open_device("mlx5_0"));
    f.reset_counters();
    SnapshotReport report;
    auto t = snapshot(f, h, 1, {.stop_after = stop_at_first_ipv4_mapped(), .report = &report});
    ASSERT_OK(t);
    EXPECT_EQ(f.calls(VerbsCall::read_gid_entry), k + 1);
    EXPECT_EQ(f.calls(VerbsCall::read_gid_table), 0u);  // not offered: not paid for
    EXPECT_EQ(f.calls(VerbsCall::port_attributes), 1u);
    EXPECT_EQ(f.total_calls(), k + 2);
    EXPECT_EQ(report.driver_calls, k + 2);
    EXPECT_EQ(report.indices_read, k + 1);
    EXPECT_EQ(report.method, ReadMethod::gid_entry);
    EXPECT_EQ(report.stopped_early, k < 255);
    EXPECT_EQ(t.value().holes(), k < 255 ? Holes::not_shown : Holes::empty);
    if (k >= 3 && k < 255) {
      EXPECT_EQ(t.value().find(2)->state, EntryState::empty);  // read, and empty
    }
    if (k < 255) {
      EXPECT_EQ(t.value().find(k + 1), nullptr);  // not read
    }
    // The policy the scan was cut for picks the same entry as on the full table.
    auto s = JacclFirstMapped{}.select(t.value());
    ASSERT_OK(s);
    EXPECT_EQ(s.value().entry.index, k);
  }
}

TEST_F(Snap, ATableCallAnsweredEopnotsuppFallsBackOnceAndIsRecorded) {
  load(wide_table(3));
  fake.fail_every(VerbsCall::read_gid_table, EOPNOTSUPP);
  SnapshotReport report;
  auto t = snapshot(fake, dev, 1, {.report = &report});
  ASSERT_OK(t);
  EXPECT_EQ(report.method, ReadMethod::gid_entry);
  EXPECT_EQ(fake.calls(VerbsCall::read_gid_table), 1u);
  EXPECT_EQ(fake.calls(VerbsCall::read_gid_entry), 256u);
  EXPECT_EQ(report.driver_calls, 1u + 1u + 256u);
  ASSERT_EQ(report.fallbacks.size(), 1u);
  EXPECT_NE(report.fallbacks[0].find("read_gid_table"), std::string::npos);
  // The same table whatever the method: ENODATA slots are simply not listed, as by the table call.
  FakeVerbs clean;
  ASSERT_TRUE(clean.add_port(wide_table(3)));
  auto direct = snapshot(clean, "mlx5_0", 1);
  ASSERT_TRUE(direct);
  EXPECT_EQ(t.value(), direct.value());
}

TEST_F(Snap, EntryCallUnsupportedFallsBackToLegacyWhereItStopped) {
  load(wide_table(5));
  ASSERT_TRUE(fake.set_read_support("mlx5_0", {false, true, true}));
  fake.fail_every(VerbsCall::read_gid_entry, EOPNOTSUPP);  // the driver lacks the ioctl
  SnapshotReport report;
  auto t = snapshot(fake, dev, 1, {.report = &report});
  ASSERT_OK(t);
  EXPECT_EQ(report.method, ReadMethod::gid_legacy);
  EXPECT_EQ(fake.calls(VerbsCall::read_gid_entry), 1u);
  EXPECT_EQ(fake.calls(VerbsCall::read_gid), 256u);
  // Legacy reads have no type: the v2 mapped entry is kept, its type unknown.
  EXPECT_EQ(t.value().find(5)->gid, Gid::ipv4_mapped(0x0a000001u));
  EXPECT_EQ(t.value().find(5)->type, GidType::unknown);
  EXPECT_EQ(t.value().find(2), nullptr);  // zeros -> empty, not listed
}

TEST_F(Snap, ForcedMethodDoesNotFallBack) {
  load(wide_table(3));
  fake.fail_every(VerbsCall::read_gid_table, EOPNOTSUPP);
  auto t = snapshot(fake, dev, 1, {.method = ReadMethod::gid_table});
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code.value(), EOPNOTSUPP);
  fake.clear_faults();
  fake.reset_counters();
  SnapshotReport report;
  ASSERT_TRUE(snapshot(fake, dev, 1, {.method = ReadMethod::gid_legacy, .report = &report}));
  EXPECT_EQ(fake.calls(VerbsCall::read_gid), 256u);
  EXPECT_EQ(fake.calls(VerbsCall::read_gid_table), 0u);
}

TEST_F(Snap, MultiPortDevicesRetryTheTableCallWithALargerBuffer) {
  load(wide_table(3));
  PortInfo p2{"mlx5_0", 2, PortState::active, LinkLayer::ethernet(), 256, Mtu::mtu_4096, 0};
  std::vector<GidEntry> e;
  for (std::uint32_t i = 0; i < 200; ++i) e.push_back(GidEntry::valid(i, Gid::ipv4_mapped(0x0b000000u + i)));
  ASSERT_TRUE(fake.add_port(VALUE_OR_FAIL(GidTable::make(p2, e))));
  SnapshotReport report;
  auto t = snapshot(fake, dev, 2, {.report = &report});
  ASSERT_OK(t);
  EXPECT_EQ(t.value().size(), 200u);
  EXPECT_EQ(fake.calls(VerbsCall::read_gid_table), 2u);  // 256 too small for both ports: EINVAL, then 512
  EXPECT_EQ(report.gid_reads, 2u);
}

TEST_F(Snap, RefusesAPortThatIsNotActiveUnlessTold) {
  load(wide_table(3, PortState::down));
  auto t = snapshot(fake, dev, 1);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error(), errc::port_not_active);
  EXPECT_NE(t.error().detail.find("mlx5_0 port 1 is down"), std::string::npos) << t.error().detail;
  EXPECT_EQ(fake.calls(VerbsCall::read_gid_table), 0u);
  EXPECT_TRUE(snapshot(fake, dev, 1, {.allow_inactive = true}));
  FakeVerbs armed;
  ASSERT_TRUE(armed.add_port(wide_table(3, PortState::armed)));
  EXPECT_TRUE(snapshot(armed, "mlx5_0", 1));
}

TEST_F(Snap, UnreadableEntriesAreKeptWithTheirErrno) {
  load(wide_table(3));
  ASSERT_TRUE(fake.set_read_support("mlx5_0", {false, true, true}));
  fake.fail_nth(VerbsCall::read_gid_entry, 2, EIO);  // index 1
  auto t = snapshot(fake, dev, 1);
  ASSERT_TRUE(t);
  EXPECT_EQ(t.value().find(1)->state, EntryState::unreadable);
  EXPECT_EQ(t.value().find(1)->read_error.value(), EIO);
}

TEST_F(Snap, ErrorsFromThePortQueryAndByNameOpenSurface) {
  load(wide_table(3));
  fake.fail_nth(VerbsCall::port_attributes, 1, ENODEV);
  EXPECT_EQ(snapshot(fake, dev, 1).error().code.value(), ENODEV);
  EXPECT_EQ(snapshot(fake, dev, 0).error().code.value(), EINVAL);  // the fake's port 0: no such port
  EXPECT_EQ(snapshot(fake, "mlx5_7", 1).error(), errc::device_not_found);
  SnapshotReport report;
  ASSERT_TRUE(snapshot(fake, "mlx5_0", 1, {.report = &report}));
  EXPECT_EQ(report.driver_calls, 4u);  // open, port, table, close
}

TEST_F(Snap, ReadEntryAndFindCurrentIndexFollowAMovedGid) {
  load(wide_table(3));
  EXPECT_EQ(VALUE_OR_FAIL(read_entry(fake, dev, 1, 3)).gid, Gid::ipv4_mapped(0x0a000001u));
  EXPECT_EQ(VALUE_OR_FAIL(read_entry(fake, dev, 1, 2)).state, EntryState::empty);
  unsigned calls = 0;
  ASSERT_TRUE(read_entry(fake, dev, 1, 3, &calls));
  EXPECT_EQ(calls, 1u);
  ASSERT_TRUE(fake.apply(TableMutation::moved_index("mlx5_0", 1, 3, 6)));
  EXPECT_EQ(VALUE_OR_FAIL(find_current_index(fake, dev, 1, Gid::ipv4_mapped(0x0a000001u))), 6u);
  ASSERT_TRUE(fake.apply(TableMutation::emptied("mlx5_0", 1, 6)));
  auto gone = find_current_index(fake, dev, 1, Gid::ipv4_mapped(0x0a000001u));
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error(), errc::gid_changed);
}

}  // namespace
}  // namespace gidpolicy::verbs
