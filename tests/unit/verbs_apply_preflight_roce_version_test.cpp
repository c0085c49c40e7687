// Regression: preflight passed when the slot at sgid_index still held the advertised GID's bytes
// but as the other RoCE version.
//
// Found while modelling port flaps for the stateful property (tests/property/stateful_test.cpp):
// mlx5 stores every address twice, RoCE v1 then v2, in first-free slots. After a flap the same
// address can come back one slot later, its v1 entry landing where its v2 entry was:
//   before:  2 v1 ::ffff:10.0.0.1   3 v2 ::ffff:10.0.0.1   (auto selects 3, RoCE v2)
//   after:   2 v1 ::ffff:10.0.0.7   3 v1 ::ffff:10.0.0.1   4 v2 ::ffff:10.0.0.1
// preflight(rtr) compared the 16 bytes only, so modify_qp routed from a RoCE v1 entry while the
// peer was told (and builds its own RTR for) RoCE v2: the RTR passes and traffic times out
// (docs/facts.md#linux-rtr, "v1/v2 mismatch"). preflight() already knew the selected entry's type
// (it uses it to say where the GID went); it now refuses the changed slot too.
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/fakes/testing/mock_verbs.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/apply.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "support/assert_ok.hpp"
#include "support/gid_literals.hpp"
#include "support/roce_port.hpp"

namespace gidpolicy::verbs {
namespace {

using fakes::FakeVerbs;
using fakes::MockVerbs;
using fakes::TableMutation;
using ::testing::_;
using ::testing::AnyNumber;
using ::testing::Field;

/// The flap: another address takes slot 2, ours comes back as v1 at 3 and v2 at 4.
void flap(FakeVerbs& f) {
  ASSERT_TRUE(f.apply(TableMutation::set(
      "mlx5_0", 1, GidEntry::valid(2, g("::ffff:10.0.0.7"), GidType::roce_v1, "eth0", 4))));
  ASSERT_TRUE(f.apply(TableMutation::set(
      "mlx5_0", 1, GidEntry::valid(3, g("::ffff:10.0.0.1"), GidType::roce_v1, "eth0", 4))));
  ASSERT_TRUE(f.apply(TableMutation::set(
      "mlx5_0", 1, GidEntry::valid(4, g("::ffff:10.0.0.1"), GidType::roce_v2, "eth0", 4))));
}

TEST(PreflightRoceVersionChangedAtTheSameIndex, IsCaughtBeforeModifyQp) {
  FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(test::roce_port()));
  testing::NiceMock<MockVerbs> mock(fake);
  ASSERT_OK_AND_ASSIGN(const DeviceHandle dev, fake.open_device("mlx5_0"));
  auto pp = plan_port(mock, dev, 1, profiles::automatic());
  ASSERT_OK(pp);
  ASSERT_EQ(pp.value().plan.selection.entry.index, 3u);
  ASSERT_EQ(pp.value().plan.selection.entry.type, GidType::roce_v2);
  const PeerInfo peer{0x345, 7, g("::ffff:10.0.0.2"), 0, Mtu::mtu_4096, GidType::roce_v2};
  auto rtr = RtrBuilder(QpKind::uc, pp.value().table, pp.value().plan).remote(peer).build();
  ASSERT_OK(rtr);

  flap(fake);
  ASSERT_OK_AND_ASSIGN(auto qp, mock.create_qp(dev, QpKind::uc));
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  ASSERT_TRUE(mock.modify_qp(qp, init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
  EXPECT_CALL(mock, modify_qp(_, Field(&ibv_qp_attr::qp_state, IBV_QPS_RTR), _)).Times(0);

  auto r = apply_rtr(mock, qp, dev, 1, rtr.value());
  ASSERT_FALSE(r) << "modify_qp would route from the RoCE v1 entry now at sgid_index 3";
  EXPECT_EQ(r.error(), errc::gid_changed) << r.error().what();
  // It says what the slot holds now and where the selected (RoCE v2) entry went.
  EXPECT_NE(r.error().detail.find("holds ::ffff:10.0.0.1 (roce_v1)"), std::string::npos) << r.error().detail;
  EXPECT_NE(r.error().detail.find("now at index 4"), std::string::npos) << r.error().detail;
  EXPECT_EQ(VALUE_OR_FAIL(fake.qp(qp)).state, IBV_QPS_INIT);
}

TEST(PreflightRoceVersionChangedAtTheSameIndex, AnUnchangedSlotStillPasses) {
  // The same flap elsewhere in the table leaves slot 3 as it was: preflight passes.
  FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(test::roce_port()));
  ASSERT_OK_AND_ASSIGN(const DeviceHandle dev, fake.open_device("mlx5_0"));
  ASSERT_TRUE(fake.apply(TableMutation::set(
      "mlx5_0", 1, GidEntry::valid(5, g("::ffff:10.0.0.1"), GidType::roce_v1, "eth0", 4))));
  EXPECT_TRUE(preflight(fake, dev, 1, 3, g("::ffff:10.0.0.1"), GidType::roce_v2));
  // Without a type (a caller that only kept the GID, or a table read through ibv_query_gid, which
  // reports none) there is nothing to compare but the bytes.
  flap(fake);
  EXPECT_TRUE(preflight(fake, dev, 1, 3, g("::ffff:10.0.0.1")));
  ASSERT_TRUE(fake.set_read_support("mlx5_0", {false, false, true}));
  EXPECT_TRUE(preflight(fake, dev, 1, 3, g("::ffff:10.0.0.1"), GidType::roce_v2));
}

}  // namespace
}  // namespace gidpolicy::verbs
