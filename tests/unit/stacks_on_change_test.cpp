// stacks.hpp, on a GID table change: what each stack does by its StackInfo::on_change rule (NCCL
// per connection, UCX and perftest when they reopen the device, Mooncake on the event itself),
// and what a pinned index does while the address it was chosen for moves to another slot.
#include <gidpolicy/stacks.hpp>

#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gidpolicy {
namespace {

// One RoCE port: fe80 at 0/1, then (address, v1) (address, v2) pairs from index 2.
GidTable roce_port(const std::vector<std::string>& addresses) {
  PortInfo p{.device = "mlx5_0",
             .port = 1,
             .state = PortState::active,
             .link_layer = LinkLayer::ethernet(),
             .gid_tbl_len = 16};
  const Gid ll = Gid::parse("fe80::268a:7ff:fe55:4660").value();
  std::vector<GidEntry> e{GidEntry::valid(0, ll, GidType::roce_v1, "eth0"),
                          GidEntry::valid(1, ll, GidType::roce_v2, "eth0")};
  std::uint32_t i = 2;
  for (const std::string& a : addresses) {
    const Gid g = Gid::parse(a).value();
    e.push_back(GidEntry::valid(i++, g, GidType::roce_v1, "eth0"));
    e.push_back(GidEntry::valid(i++, g, GidType::roce_v2, "eth0"));
  }
  return GidTable::make(p, std::move(e)).value();
}

// 10.0.0.1 held 2/3; it was removed, 10.0.0.7 took the free slots, 10.0.0.1 came back at 4/5.
const GidTable& before_table() {
  static const GidTable t = roce_port({"::ffff:10.0.0.1"});
  return t;
}
const GidTable& after_table() {
  static const GidTable t = roce_port({"::ffff:10.0.0.7", "::ffff:10.0.0.1"});
  return t;
}

StackLaunch launch(StackId id, std::vector<LaunchSetting> settings) { return read_launch(id, settings); }

StackOnChange on_change(StackId id, std::vector<LaunchSetting> settings = {}) {
  return stack_on_change(id, before_table(), after_table(), launch(id, std::move(settings)),
                         DriverModel::for_table(after_table()));
}

TEST(StacksOnChange, EveryRowSaysWhenItChoosesAgainAndEveryReadRowNamesItsSource) {
  for (const StackInfo& s : kStacks) {
    EXPECT_FALSE(s.on_change.event.empty()) << s.name;
    if (s.on_change.reselects == Reselect::not_checked) {
      EXPECT_TRUE(s.on_change.source.empty()) << s.name;
      EXPECT_NE(on_change_text(s, false).find("not read in its source"), std::string::npos) << s.name;
    } else {
      EXPECT_FALSE(s.on_change.source.empty()) << s.name;
      EXPECT_NE(on_change_text(s, false).find(std::string(s.on_change.source)), std::string::npos) << s.name;
    }
  }
  // What was read in each source.
  EXPECT_EQ(stack_row(StackId::nccl).on_change.reselects, Reselect::per_connection);
  EXPECT_EQ(stack_row(StackId::ucx).on_change.reselects, Reselect::at_open);
  EXPECT_EQ(stack_row(StackId::mooncake).on_change.reselects, Reselect::on_change);
  EXPECT_EQ(stack_row(StackId::jaccl).on_change.reselects, Reselect::at_open);
  EXPECT_EQ(to_string(Reselect::per_connection), "per connection");
}

TEST(StacksOnChange, APinnedTextSaysWhatThePinnedIndexDoes) {
  const std::string nccl = on_change_text(stack_row(StackId::nccl), true);
  EXPECT_NE(nccl.find("keeps the pinned index and reads the GID there again for each new connection"),
            std::string::npos)
      << nccl;
  const std::string mooncake = on_change_text(stack_row(StackId::mooncake), true);
  EXPECT_NE(mooncake.find("the old GID stays published"), std::string::npos) << mooncake;
  // Without a pin the text is the stack's own re-selection, not the pin's.
  EXPECT_EQ(on_change_text(stack_row(StackId::mooncake), false).find("pinned"), std::string::npos);
}

TEST(StacksOnChange, NcclsConnectionsUpKeepTheOldGidAndNewOnesPickAgain) {
  const StackOnChange c = on_change(StackId::nccl);
  ASSERT_TRUE(c.before.has_value());
  EXPECT_EQ(*c.before, 3u);
  EXPECT_EQ(c.before_gid.to_string(), "::ffff:10.0.0.1");
  ASSERT_TRUE(c.now_at_before.has_value());
  EXPECT_EQ(c.now_at_before->to_string(), "::ffff:10.0.0.7");
  EXPECT_TRUE(c.moved);
  EXPECT_TRUE(c.stale_while_up);
  ASSERT_TRUE(c.next.has_value());
  EXPECT_NE(c.summary.find(
                "NCCL: connections up keep index 3 (::ffff:10.0.0.1); index 3 now holds ::ffff:10.0.0.7"),
            std::string::npos)
      << c.summary;
  EXPECT_NE(c.summary.find("new connections pick index " + std::to_string(*c.next)), std::string::npos)
      << c.summary;
}

TEST(StacksOnChange, APinnedNcclIndexStaysWhileItsGidMoves) {
  const StackOnChange c = on_change(StackId::nccl, {{std::string(stack_vars::kNcclGidIndex), "3", "test"}});
  ASSERT_TRUE(c.before && c.next);
  EXPECT_EQ(*c.before, 3u);
  EXPECT_EQ(*c.next, 3u);                                // the pin stays...
  EXPECT_EQ(c.next_gid.to_string(), "::ffff:10.0.0.7");  // ...and now advertises another address
  EXPECT_NE(c.summary.find("new connections use its pinned index 3 (::ffff:10.0.0.7)"), std::string::npos)
      << c.summary;
}

TEST(StacksOnChange, UcxKeepsItsIndexUntilItReopensTheDevice) {
  const StackOnChange c = on_change(StackId::ucx);
  ASSERT_TRUE(c.before);
  EXPECT_NE(c.summary.find("UCX keeps index " + std::to_string(*c.before)), std::string::npos) << c.summary;
  EXPECT_NE(c.summary.find("until it reopens the device"), std::string::npos) << c.summary;
  EXPECT_NE(c.summary.find("reopened, it picks"), std::string::npos) << c.summary;
}

TEST(StacksOnChange, MooncakeChoosesAgainOnTheEventOrReReadsItsPin) {
  const StackOnChange own = on_change(StackId::mooncake);
  EXPECT_NE(own.summary.find("Mooncake chooses again on the event: index"), std::string::npos) << own.summary;
  EXPECT_FALSE(own.stale_while_up);
  const StackOnChange pinned =
      on_change(StackId::mooncake, {{std::string(stack_vars::kMcGidIndex), "3", "test"}});
  EXPECT_NE(pinned.summary.find("Mooncake re-reads its pinned index on the event: index 3 (::ffff:10.0.0.7)"),
            std::string::npos)
      << pinned.summary;
  // The pinned slot emptied: its refresh fails and the old GID stays published.
  PortInfo p{.device = "mlx5_0",
             .port = 1,
             .state = PortState::active,
             .link_layer = LinkLayer::ethernet(),
             .gid_tbl_len = 16};
  const Gid ll = Gid::parse("fe80::268a:7ff:fe55:4660").value();
  const GidTable emptied = GidTable::make(p, {GidEntry::valid(0, ll, GidType::roce_v1, "eth0"),
                                              GidEntry::valid(1, ll, GidType::roce_v2, "eth0")})
                               .value();
  const StackOnChange gone =
      stack_on_change(StackId::mooncake, before_table(), emptied,
                      launch(StackId::mooncake, {{std::string(stack_vars::kMcGidIndex), "3", "test"}}),
                      DriverModel::for_table(emptied));
  EXPECT_FALSE(gone.now_at_before.has_value());
  EXPECT_TRUE(gone.stale_while_up);
  EXPECT_NE(gone.summary.find("index 3 is now empty, so its refresh fails"), std::string::npos)
      << gone.summary;
  EXPECT_NE(gone.summary.find("::ffff:10.0.0.1 stays published"), std::string::npos) << gone.summary;
}

TEST(StacksOnChange, AChangeElsewhereInTheTableLeavesAStackAlone) {
  // 10.0.0.1 stays at 2/3; a second address is added after it.
  const GidTable grown = roce_port({"::ffff:10.0.0.1", "::ffff:10.0.0.9"});
  const StackOnChange c = stack_on_change(StackId::ucx, before_table(), grown, launch(StackId::ucx, {}),
                                          DriverModel::for_table(grown));
  EXPECT_FALSE(c.moved);
  EXPECT_FALSE(c.stale_while_up);
  if (c.next == c.before) {
    EXPECT_NE(c.summary.find("UCX is not affected"), std::string::npos) << c.summary;
  } else {
    EXPECT_NE(c.summary.find("reopened, it picks"), std::string::npos) << c.summary;
  }
}

}  // namespace
}  // namespace gidpolicy
