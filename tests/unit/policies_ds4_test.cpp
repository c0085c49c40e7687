// Ds4ExplicitIndex, Ds4Scan and Ds4Linux: ds4's three selections, reproduced exactly.
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <climits>

namespace gidpolicy {
namespace {

using test::gid;

static_assert(SelectionPolicy<Ds4ExplicitIndex>);
static_assert(SelectionPolicy<Ds4Scan>);
static_assert(SelectionPolicy<Ds4Linux>);

std::uint32_t ds4_picked(const result<Selection>& r) {
  EXPECT_TRUE(r) << (r ? "" : r.error().what());
  return r ? r.value().entry.index : 9999u;
}

// --- Ds4Linux: ds4's own unit-test table, exactly -------------------------------------------

TEST(Ds4Linux, Ds4UnitTableLocalAddressSelectsIndex3) {
  Ds4Linux p{.local = gid("::ffff:127.0.0.1")};
  EXPECT_EQ(ds4_picked(p.select(test::ds4_linux_unit())), 3u);
}

TEST(Ds4Linux, Ds4UnitTableForced2Selects2) {
  Ds4Linux p{.local = gid("::ffff:127.0.0.1"), .index = 2};
  EXPECT_EQ(ds4_picked(p.select(test::ds4_linux_unit())), 2u);  // forced wins over the better score
}

TEST(Ds4Linux, Ds4UnitTableForcedRejections) {
  const GidTable t = test::ds4_linux_unit();
  const struct {
    std::int32_t index;
    errc code;
  } cases[] = {{-1, errc::index_out_of_range},
               {1, errc::wrong_gid_type},
               {4, errc::entry_zero},
               {5, errc::index_out_of_range},
               {INT_MAX, errc::index_out_of_range}};
  for (const auto& c : cases) {
    auto r = Ds4Linux{.local = gid("::ffff:127.0.0.1"), .index = c.index}.select(t);
    ASSERT_FALSE(r) << c.index;
    EXPECT_EQ(r.error(), c.code) << c.index << ": " << r.error().what();
    EXPECT_NE(r.error().detail.find(std::to_string(c.index)), std::string::npos) << r.error().detail;
    ASSERT_TRUE(r.error().trace);
  }
}

TEST(Ds4Linux, WithoutLocalTheFirstV2Wins) {
  EXPECT_EQ(ds4_picked(Ds4Linux{}.select(test::ds4_linux_unit())), 2u);
  // ds4 does not filter link-local: on the NCCL 769 table it picks the fe80 v2 entry.
  EXPECT_EQ(ds4_picked(Ds4Linux{}.select(test::nccl_769())), 1u);
  EXPECT_EQ(ds4_picked(Ds4Linux{}.select(test::nccl_1573_pod(0))), 5u);
  EXPECT_EQ(ds4_picked(Ds4Linux{}.select(test::ibm_cx6())), 1u);
  EXPECT_EQ(ds4_picked(Ds4Linux{}.select(test::mooncake_ipv6(0))), 0u);
  EXPECT_EQ(ds4_picked(Ds4Linux{}.select(test::mooncake_ipv6(2))), 1u);
}

TEST(Ds4Linux, LocalAddressOnOtherTables) {
  EXPECT_EQ(ds4_picked(Ds4Linux{.local = gid("::ffff:200.0.209.6")}.select(test::nccl_769())), 3u);
  EXPECT_EQ(ds4_picked(Ds4Linux{.local = gid("::ffff:10.152.4.12")}.select(test::nccl_1573_pod(1))), 7u);
  // A local address that is not in the table scores nothing: the first v2 entry, as ds4 does.
  EXPECT_EQ(ds4_picked(Ds4Linux{.local = gid("::ffff:10.9.9.9")}.select(test::nccl_1573_pod(1))), 5u);
}

TEST(Ds4Linux, NoRoceV2EntryFailsWithEveryRejection) {
  for (const GidTable& t : {test::apple_ds4qa(), test::apple_noipv4(), test::macmini()}) {
    auto r = Ds4Linux{}.select(t);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::no_candidate);
    ASSERT_TRUE(r.error().trace);
    for (const auto& s : r.error().trace->attempts[0].steps) EXPECT_FALSE(is_accepted(s.verdict));
    EXPECT_NE(r.error().detail.find("wrong_type"), std::string::npos) << r.error().detail;
  }
}

TEST(Ds4Linux, ForcedEmptyUnreadableNotShownAbove255) {
  auto t = VALUE_OR_FAIL(
      GidTable::make(test::port("x", LinkLayer::ethernet(), 400),
                     {GidEntry::empty(1), GidEntry::unreadable(2, std::make_error_code(std::errc::io_error)),
                      GidEntry::valid(300, gid("::ffff:10.0.0.1"), GidType::roce_v2)}));
  EXPECT_EQ(Ds4Linux{.index = 1}.select(t).error(), errc::entry_empty);
  EXPECT_EQ(Ds4Linux{.index = 3}.select(t).error(), errc::entry_empty);  // a hole: ENODATA
  EXPECT_EQ(Ds4Linux{.index = 2}.select(t).error(), errc::entry_unreadable);
  EXPECT_EQ(Ds4Linux{.index = 300}.select(t).error(), errc::index_exceeds_uint8);
  EXPECT_EQ(Ds4Linux{.index = 5}.select(test::nccl_769()).error(), errc::entry_not_shown);
  // The scan never looks past 255 either.
  auto r = Ds4Linux{}.select(t, {.trace = true});
  EXPECT_EQ(r.error(), errc::no_candidate);
  EXPECT_EQ(r.error().trace->attempts[0].steps.back().verdict, EntryVerdict::index_above_255);
}

TEST(Ds4Linux, TraceMarksTheWinnerAndTheLowerScores) {
  auto r = Ds4Linux{.local = gid("::ffff:127.0.0.1")}.select(test::ds4_linux_unit(), {.trace = true});
  const auto& steps = r.value().trace.attempts.at(0).steps;
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].verdict, EntryVerdict::wrong_type);
  EXPECT_EQ(steps[1].verdict, EntryVerdict::wrong_type);
  EXPECT_EQ(steps[2].verdict, EntryVerdict::lower_rank);
  EXPECT_EQ(steps[3].verdict, EntryVerdict::chosen);
  EXPECT_EQ(steps[4].verdict, EntryVerdict::zero);
}

TEST(Ds4Linux, Spec) {
  EXPECT_EQ(Ds4Linux{}.spec(), "ds4-linux");
  EXPECT_EQ((Ds4Linux{.local = gid("::ffff:127.0.0.1"), .index = -1}.spec()),
            "ds4-linux:local=127.0.0.1,index=-1");
  EXPECT_EQ(Ds4Linux{.local = gid("fd93::1")}.spec(), "ds4-linux:local=fd93::1");
  EXPECT_EQ(Ds4Linux{.index = 2}.spec(), "ds4-linux:index=2");
}

// --- Ds4ExplicitIndex ----------------------------------------------------------------------

TEST(Ds4ExplicitIndex, AcceptsAnyReadableSlotUnchecked) {
  EXPECT_EQ(ds4_picked(Ds4ExplicitIndex{2}.select(test::nccl_769())), 2u);        // RoCE v1: not checked
  EXPECT_EQ(ds4_picked(Ds4ExplicitIndex{0}.select(test::apple_ds4qa())), 0u);     // link-local: not checked
  EXPECT_EQ(ds4_picked(Ds4ExplicitIndex{4}.select(test::ds4_linux_unit())), 4u);  // zero GID: not checked
  auto empty = Ds4ExplicitIndex{1}.select(test::macmini());  // empty: query_gid reads zeros
  ASSERT_OK(empty);
  EXPECT_EQ(ds4_picked(empty), 1u);
  EXPECT_TRUE(empty.value().entry.gid.is_zero());
  EXPECT_EQ(ds4_picked(Ds4ExplicitIndex{2}.select(test::nccl_1573_pod(0))), 2u);  // a hole below the pod's 4
}

TEST(Ds4ExplicitIndex, Failures) {
  auto oor = Ds4ExplicitIndex{2}.select(test::mooncake_ipv6(0));  // show_gids: 2 entries listed
  EXPECT_EQ(oor.error(), errc::index_out_of_range);
  EXPECT_EQ(Ds4ExplicitIndex{16}.select(test::macmini()).error(), errc::index_out_of_range);
  EXPECT_EQ(Ds4ExplicitIndex{2}.select(test::apple_ds4qa()).error(), errc::entry_not_shown);
  auto bad =
      VALUE_OR_FAIL(GidTable::make(test::port("x", LinkLayer::ethernet(), 4),
                                   {GidEntry::unreadable(3, std::make_error_code(std::errc::io_error))}));
  EXPECT_EQ(Ds4ExplicitIndex{3}.select(bad).error(), errc::entry_unreadable);
}

TEST(Ds4ExplicitIndex, IndexAbove255ReportsTheWrapAndWhatItHits) {
  auto t = VALUE_OR_FAIL(GidTable::make(test::port("wide", LinkLayer::ethernet(), 512),
                                        {GidEntry::valid(3, gid("::ffff:10.0.0.3"), GidType::roce_v2),
                                         GidEntry::valid(259, gid("::ffff:10.0.0.4"), GidType::roce_v2)}));
  auto r = Ds4ExplicitIndex{259}.select(t);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::index_exceeds_uint8);
  const std::string& d = r.error().detail;
  EXPECT_NE(d.find("index 259"), std::string::npos) << d;
  EXPECT_NE(d.find("route from index 3"), std::string::npos) << d;
  EXPECT_NE(d.find("::ffff:10.0.0.3"), std::string::npos) << d;
  EXPECT_EQ(r.error().trace->attempts[0].steps.at(0).verdict, EntryVerdict::index_above_255);
}

// --- Ds4Scan -------------------------------------------------------------------------------

TEST(Ds4Scan, FirstMappedEntryOnEveryExampleTable) {
  EXPECT_EQ(ds4_picked(Ds4Scan{}.select(test::nccl_769())), 2u);
  EXPECT_EQ(ds4_picked(Ds4Scan{}.select(test::apple_ds4qa())), 1u);
  EXPECT_EQ(ds4_picked(Ds4Scan{}.select(test::macmini())), 2u);
  EXPECT_EQ(ds4_picked(Ds4Scan{}.select(test::ds4_linux_unit())), 0u);
  EXPECT_EQ(ds4_picked(Ds4Scan{}.select(test::nccl_1573_pod(0))), 6u);
  EXPECT_EQ(ds4_picked(Ds4Scan{}.select(test::ibm_cx6())), 4u);
  for (const GidTable& t : {test::apple_noipv4(), test::mooncake_ipv6(0), test::mooncake_ipv6(2)}) {
    auto r = Ds4Scan{}.select(t);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::no_ipv4_mapped_gid);
    EXPECT_EQ(r.error().detail.find("assign"), std::string::npos);  // ds4 gives no hint
  }
}

TEST(Ds4Scan, MappedAbove255IsTheWrap) {
  auto t = VALUE_OR_FAIL(GidTable::make(test::port("wide", LinkLayer::ethernet(), 512),
                                        {GidEntry::valid(260, gid("::ffff:10.0.0.4"), GidType::roce_v2)}));
  auto r = Ds4Scan{}.select(t);
  EXPECT_EQ(r.error(), errc::index_exceeds_uint8);
  EXPECT_NE(r.error().detail.find("= 4"), std::string::npos) << r.error().detail;
}

TEST(Ds4Specs, Names) {
  EXPECT_EQ(Ds4Scan{}.spec(), "ds4");
  EXPECT_EQ(Ds4ExplicitIndex{7}.spec(), "ds4:index=7");
}

// ds4's Linux transport scores every active port by whether its pick is the
// control address and refuses a tie; picking one GID per port would connect where ds4 refuses.
GidTable port_of(std::string device, std::vector<GidEntry> entries, PortState state = PortState::active) {
  PortInfo p = test::port(std::move(device), LinkLayer::ethernet(), 8);
  p.state = state;
  return VALUE_OR_FAIL(GidTable::make(p, std::move(entries)));
}

TEST(Ds4LinuxPorts, TheControlAddressDecidesAndATieIsRefused) {
  const GidTable a = port_of("mlx5_0", {GidEntry::valid(1, gid("::ffff:10.0.0.1"), GidType::roce_v2)});
  const GidTable b = port_of("mlx5_1", {GidEntry::valid(3, gid("::ffff:10.0.1.1"), GidType::roce_v2)});
  const GidTable down =
      port_of("mlx5_2", {GidEntry::valid(1, gid("::ffff:10.0.2.1"), GidType::roce_v2)}, PortState::down);
  // The control address is on the second port: ds4 connects from it.
  auto on_b = choose_port(Ds4Linux{.local = gid("::ffff:10.0.1.1")}, {a, b});
  ASSERT_OK(on_b);
  EXPECT_EQ(on_b.value().table, 1u);
  EXPECT_EQ(on_b.value().selection.entry.index, 3u);
  // Two ports pick and neither holds the address: ds4 refuses, with its own advice.
  auto tie = choose_port(Ds4Linux{.local = gid("::ffff:192.0.2.9")}, {a, b});
  ASSERT_FALSE(tie);
  EXPECT_EQ(tie.error().code, errc::no_candidate);
  EXPECT_NE(tie.error().detail.find("2 ports tie"), std::string::npos) << tie.error().detail;
  EXPECT_NE(tie.error().detail.find("--rdma-device and --rdma-gid-index"), std::string::npos);
  // One active port that picks is taken without a match; a port that is down does not count.
  auto alone = choose_port(Ds4Linux{.local = gid("::ffff:192.0.2.9")}, {a, down});
  ASSERT_OK(alone);
  EXPECT_EQ(alone.value().table, 0u);
  // ds4's unit table alone: the control address picks index 3, as select() does.
  auto unit = choose_port(Ds4Linux{.local = gid("::ffff:127.0.0.1")}, {test::ds4_linux_unit()});
  ASSERT_TRUE(unit);
  EXPECT_EQ(unit.value().selection.entry.index, 3u);
  // Nothing picks: the port's own reason.
  auto none = choose_port(Ds4Linux{.local = gid("::ffff:127.0.0.1"), .index = 4}, {test::ds4_linux_unit()});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, errc::entry_zero);
}

}  // namespace
}  // namespace gidpolicy
