// Interaction tests with MockVerbs (delegating to FakeVerbs): a failed selection never reaches
// modify_qp; a stale entry is caught by preflight whatever the change and whatever the read
// method; every backend error path surfaces its errno; a driver error comes back with
// diagnose()'s explanation.
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/fakes/testing/mock_verbs.hpp>
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/apply.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"
#include "support/gid_literals.hpp"
#include "support/roce_port.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>

namespace gidpolicy::verbs {
namespace {

using fakes::FakeVerbs;
using fakes::MockVerbs;
using fakes::TableMutation;
using ::testing::_;
using ::testing::AnyNumber;
using ::testing::Field;
using ::testing::NiceMock;
using ::testing::Return;

constexpr int kInitMask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;

const PeerInfo kPeer{0x345, 7, Gid::ipv4_mapped(0x0a000002u), 0, Mtu::mtu_4096, std::nullopt};

/// What an application does on one side, written with gidpolicy: plan, QP to INIT, exchange
/// (the peer is given), RTR built from the plan and applied with preflight.
result<void> connect_side(VerbsApi& api, DeviceHandle dev, const Profile& profile,
                          const PeerInfo& peer = kPeer) {
  GIDPOLICY_TRY(pp, plan_port(api, dev, 1, profile));
  GIDPOLICY_TRY(qp, api.create_qp(dev, QpKind::uc));
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  GIDPOLICY_TRYV(api.modify_qp(qp, init, kInitMask));
  GIDPOLICY_TRY(rtr, RtrBuilder(QpKind::uc, pp.table, pp.plan).remote(peer).build());
  return apply_rtr(api, qp, dev, 1, rtr);
}

auto is_rtr() { return Field(&ibv_qp_attr::qp_state, IBV_QPS_RTR); }

struct Apply : ::testing::Test {
  FakeVerbs fake;
  NiceMock<MockVerbs> mock{fake};
  DeviceHandle dev;
  void load(const GidTable& t) {
    ASSERT_TRUE(fake.add_port(t));
    dev = VALUE_OR_FAIL(fake.open_device(t.port().device));
  }
};

TEST_F(Apply, TheHappyPathReachesRtrOnceWithTheSelectedIndex) {
  load(test::roce_port());
  EXPECT_CALL(mock, modify_qp(_, Field(&ibv_qp_attr::qp_state, IBV_QPS_INIT), kInitMask));
  EXPECT_CALL(mock, modify_qp(_, is_rtr(), _)).WillOnce([this](QpHandle q, const ibv_qp_attr& a, int m) {
    EXPECT_EQ(a.ah_attr.grh.sgid_index, 3);  // auto: RoCE v2 IPv4
    return fake.modify_qp(q, a, m);
  });
  auto r = connect_side(mock, dev, profiles::automatic());
  EXPECT_OK(r);
}

TEST_F(Apply, AFailedSelectionNeverCallsModifyQp) {
  FakeVerbs tb;
  ASSERT_TRUE(tb.load_file(test::example_tables_dir() / "apple-mlx4191-rdma_en3-noipv4.devinfo.txt"));
  NiceMock<MockVerbs> m(tb);
  ASSERT_OK_AND_ASSIGN(const DeviceHandle h, tb.open_device("rdma_en3"));
  EXPECT_CALL(m, create_qp).Times(0);
  EXPECT_CALL(m, modify_qp).Times(0);
  for (const Profile& p : {profiles::jaccl(), profiles::jaccl_fixed(), profiles::automatic()}) {
    SCOPED_TRACE(p.spec());
    auto r = connect_side(m, h, p);
    ASSERT_FALSE(r);
    EXPECT_TRUE(r.error() == errc::no_ipv4_mapped_gid || r.error() == errc::no_candidate) << r.error().what();
  }
}

TEST_F(Apply, DisagreeingAttributesAreRefusedWithoutTouchingTheDriver) {
  FakeVerbs mac;
  ASSERT_TRUE(mac.load_file(test::example_tables_dir() / "macmini-mapped-at-2.json"));
  NiceMock<MockVerbs> m(mac);
  ASSERT_OK_AND_ASSIGN(const DeviceHandle h, mac.open_device("rdma_en2"));
  EXPECT_CALL(m, modify_qp(_, Field(&ibv_qp_attr::qp_state, IBV_QPS_INIT), _)).Times(1);
  EXPECT_CALL(m, modify_qp(_, is_rtr(), _)).Times(0);
  auto r = connect_side(m, h, profiles::jaccl(),
                        {0x345, 7, g("::ffff:10.99.0.4"), 0, Mtu::mtu_1024, std::nullopt});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::disagreement);
  EXPECT_NE(r.error().detail.find("index 2"), std::string::npos) << r.error().detail;
}

// Every way a table changes between selection and RTR, injected at the preflight's own read,
// under both per-index read methods: modify_qp(RTR) is never called.
TEST_F(Apply, PreflightCatchesAStaleEntryInEveryInjectedCase) {
  struct Case {
    std::string name;
    TableMutation mutation;
    std::string says;
  };
  for (const bool legacy : {false, true}) {
    // ibv_query_gid reports no GID type, so auto cannot tell the v2 entry (3) from its v1 twin
    // (2) and takes the lowest index; with types it takes 3. Where the GID went is then found
    // by bytes only (legacy) or by bytes and type.
    const std::uint32_t idx = legacy ? 2 : 3;
    const std::uint32_t twin = legacy ? 3 : 2;
    const std::vector<Case> cases = {
        {"address replaced", TableMutation::stale_entry("mlx5_0", 1, idx, g("::ffff:10.0.0.9")),
         "holds ::ffff:10.0.0.9"},
        {"port flap moved it", TableMutation::moved_index("mlx5_0", 1, idx, 7),
         legacy ? "now at index " + std::to_string(twin) : std::string("now at index 7")},
        {"address removed", TableMutation::emptied("mlx5_0", 1, idx),
         legacy ? "now at index " + std::to_string(twin) : std::string("no longer in the table")},
        {"replaced by an IPv6 GID",
         TableMutation::set("mlx5_0", 1, GidEntry::valid(idx, g("fd93::1"), GidType::roce_v2)),
         "holds fd93::1"},
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name + (legacy ? " (ibv_query_gid)" : " (ibv_query_gid_ex)"));
      FakeVerbs f;
      ASSERT_TRUE(f.add_port(test::roce_port()));
      if (legacy) {
        ASSERT_TRUE(f.set_read_support("mlx5_0", {false, false, true}));
      }
      NiceMock<MockVerbs> m(f);
      const DeviceHandle h = VALUE_OR_FAIL(f.open_device("mlx5_0"));
      EXPECT_CALL(m, modify_qp).Times(AnyNumber());
      EXPECT_CALL(m, modify_qp(_, is_rtr(), _)).Times(0);
      // The snapshot reads every index once (legacy) or uses the table call; the next per-index
      // read is the preflight's: change the table there.
      const VerbsCall read = legacy ? VerbsCall::read_gid : VerbsCall::read_gid_entry;
      ASSERT_TRUE(f.mutate_at(read, legacy ? 17u : 1u, c.mutation));
      auto r = connect_side(m, h, profiles::automatic());
      ASSERT_FALSE(r);
      EXPECT_EQ(r.error(), errc::gid_changed) << r.error().what();
      EXPECT_NE(r.error().detail.find(c.says), std::string::npos) << r.error().detail;
      EXPECT_NE(r.error().detail.find("mlx5_0 port 1 index " + std::to_string(idx)), std::string::npos)
          << r.error().detail;
      EXPECT_EQ(f.pending_faults(), 0u);  // the mutation fired where intended
      ::testing::Mock::VerifyAndClearExpectations(&m);
    }
  }
}

TEST_F(Apply, AnUnreadableSourceEntryStopsBeforeModifyQpWithItsErrno) {
  load(test::roce_port());
  EXPECT_CALL(mock, modify_qp).Times(AnyNumber());
  EXPECT_CALL(mock, modify_qp(_, is_rtr(), _)).Times(0);
  fake.fail_nth(VerbsCall::read_gid_entry, 1, EIO);  // the preflight's read
  auto r = connect_side(mock, dev, profiles::automatic());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, std::error_code(EIO, std::generic_category()));
  EXPECT_NE(r.error().detail.find("cannot be re-read"), std::string::npos) << r.error().detail;
}

TEST_F(Apply, ADriverErrorKeepsItsErrnoAndCarriesTheDiagnosis) {
  load(test::roce_port());
  // The netdev vanishes after selection: the GID is unchanged (preflight passes), the kernel
  // answers ENODEV at RTR.
  ASSERT_TRUE(fake.mutate_at(VerbsCall::modify_qp, 2, TableMutation::netdev_gone("mlx5_0", 1, 3)));
  auto r = connect_side(mock, dev, profiles::automatic());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, std::error_code(ENODEV, std::generic_category()));
  EXPECT_NE(r.error().detail.find("ENODEV (19) on linux"), std::string::npos) << r.error().detail;
}

// Each VerbsApi call failing with a driver errno: the library call that made it returns that
// errno (never a success, never another code).
TEST_F(Apply, EachBackendErrorPathSurfacesTheErrno) {
  load(test::roce_port());
  // Everything is allowed (and delegates to the fake); each check below adds one failing call.
  EXPECT_CALL(mock, open_device).Times(AnyNumber());
  EXPECT_CALL(mock, close_device).Times(AnyNumber());
  EXPECT_CALL(mock, port_attributes).Times(AnyNumber());
  EXPECT_CALL(mock, read_gid).Times(AnyNumber());
  EXPECT_CALL(mock, read_gid_entry).Times(AnyNumber());
  EXPECT_CALL(mock, read_gid_table).Times(AnyNumber());
  EXPECT_CALL(mock, create_qp).Times(AnyNumber());
  EXPECT_CALL(mock, modify_qp).Times(AnyNumber());
  auto errno_of = [](const auto& r) { return r ? 0 : r.error().code.value(); };
  auto driver = [](int e) { return fail_errno(e, "injected by the test"); };

  EXPECT_CALL(mock, port_attributes).WillOnce(Return(driver(ENODEV))).RetiresOnSaturation();
  EXPECT_EQ(errno_of(snapshot(mock, dev, 1)), ENODEV);

  EXPECT_CALL(mock, read_gid_table).WillOnce(Return(driver(EIO))).RetiresOnSaturation();
  EXPECT_EQ(errno_of(snapshot(mock, dev, 1)), EIO);

  EXPECT_CALL(mock, open_device).WillOnce(Return(driver(EACCES))).RetiresOnSaturation();
  EXPECT_EQ(errno_of(snapshot(mock, "mlx5_0", 1)), EACCES);

  EXPECT_CALL(mock, close_device).WillOnce(Return(driver(EBADF))).RetiresOnSaturation();
  EXPECT_EQ(errno_of(snapshot(mock, "mlx5_0", 1)), EBADF);

  EXPECT_CALL(mock, read_gid_entry).WillOnce(Return(driver(EFAULT))).RetiresOnSaturation();
  EXPECT_EQ(errno_of(preflight(mock, dev, 1, 3, g("::ffff:10.0.0.1"))), EFAULT);

  EXPECT_CALL(mock, read_support).WillRepeatedly(Return(ReadSupport{false, false, true}));
  EXPECT_CALL(mock, read_gid).WillOnce(Return(driver(EPERM))).RetiresOnSaturation();
  EXPECT_EQ(errno_of(preflight(mock, dev, 1, 3, g("::ffff:10.0.0.1"))), EPERM);
  // One unreadable index does not fail a snapshot: the entry keeps the errno.
  EXPECT_CALL(mock, read_gid(_, 1, 0)).WillOnce(Return(driver(ETIMEDOUT))).RetiresOnSaturation();
  auto t = snapshot(mock, dev, 1);
  ASSERT_OK(t);
  EXPECT_EQ(t.value().find(0)->read_error, std::error_code(ETIMEDOUT, std::generic_category()));
  EXPECT_CALL(mock, read_support).WillRepeatedly([this](DeviceHandle d) { return fake.read_support(d); });

  EXPECT_CALL(mock, create_qp).WillOnce(Return(driver(EBUSY))).RetiresOnSaturation();
  EXPECT_EQ(errno_of(connect_side(mock, dev, profiles::automatic())), EBUSY);

  EXPECT_CALL(mock, modify_qp(_, is_rtr(), _)).WillOnce(Return(driver(ETIMEDOUT))).RetiresOnSaturation();
  auto rtr = connect_side(mock, dev, profiles::automatic());
  EXPECT_EQ(errno_of(rtr), ETIMEDOUT);
  EXPECT_NE(rtr.error().detail.find("ETIMEDOUT (110) on linux"), std::string::npos) << rtr.error().detail;
}

TEST_F(Apply, ThunderboltErrnosAreDiagnosedWithDarwinNumbers) {
  FakeVerbs mac;
  ASSERT_TRUE(mac.load_file(test::example_tables_dir() / "macmini-mapped-at-2.json"));
  ASSERT_OK_AND_ASSIGN(const DeviceHandle h, mac.open_device("rdma_en2"));
  ASSERT_OK_AND_ASSIGN(auto pp, plan_port(mac, h, 1, profiles::jaccl_fixed()));
  EXPECT_EQ(pp.plan.sgid_index, 2);
  ASSERT_OK_AND_ASSIGN(auto qp, mac.create_qp(h, QpKind::uc));
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  ASSERT_TRUE(mac.modify_qp(qp, init, kInitMask));
  auto rtr = VALUE_OR_FAIL(RtrBuilder(QpKind::uc, pp.table, pp.plan)
                               .remote({0x345, 7, g("::ffff:10.99.0.4"), 0, Mtu::mtu_1024, std::nullopt})
                               .build());
  mac.fail_nth(VerbsCall::modify_qp, 1, 60);  // what Apple's driver reportedly says from index 0
  auto r = apply_rtr(mac, qp, h, 1, rtr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code.value(), 60);
  EXPECT_NE(r.error().detail.find("on darwin"), std::string::npos) << r.error().detail;
  EXPECT_TRUE(apply_rtr(mac, qp, h, 1, rtr));  // next time it passes: the fault fired once
}

TEST_F(Apply, PreflightRefusesAnIndexAbove255) {
  load(test::roce_port());
  EXPECT_EQ(preflight(mock, dev, 1, 256 + 3, g("::ffff:10.0.0.1")).error(), errc::index_exceeds_uint8);
  EXPECT_TRUE(preflight(mock, dev, 1, 3, g("::ffff:10.0.0.1")));
}

}  // namespace
}  // namespace gidpolicy::verbs
