// diagnose() and predict_rtr(): errno causes ranked with table evidence; RTR predicted through
// the shared judge_rtr() model.
#include <gidpolicy/diagnose.hpp>

#include "example_tables.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gidpolicy {
namespace {

using test::gid;

const Cause* find(const Diagnosis& d, std::string_view id) {
  for (const auto& c : d.causes)
    if (c.id == id) return &c;
  return nullptr;
}

TEST(Diagnose, DarwinEinvalOnTheMacMiniNamesTheEmptyIndexAndWhereTheGidIs) {
  const GidTable mac = test::macmini();
  auto d =
      diagnose(22, Platform::darwin, {.table = &mac, .sgid_index = 1, .advertised = gid("::ffff:10.99.0.3")});
  EXPECT_EQ(d.name, "EINVAL");
  ASSERT_FALSE(d.causes.empty());
  EXPECT_EQ(d.causes[0].likelihood, Likelihood::confirmed);
  EXPECT_EQ(d.causes[0].summary.rfind(
                "sgid_index 1 is empty; the advertised GID ::ffff:10.99.0.3 is at index 2", 0),
            0u)
      << d.to_string();
  EXPECT_EQ(find(d, "no_ipv4_on_port")->likelihood, Likelihood::ruled_out);
  EXPECT_EQ(find(d, "index_out_of_range")->likelihood, Likelihood::ruled_out);
  EXPECT_NE(d.to_string().find("EINVAL (22) on darwin:"), std::string::npos);
}

TEST(Diagnose, DarwinEinvalWithoutIpv4) {
  const GidTable t = test::apple_noipv4();
  auto d = diagnose(22, Platform::darwin, {.table = &t, .sgid_index = 0});
  EXPECT_EQ(find(d, "no_ipv4_on_port")->likelihood, Likelihood::confirmed);
  EXPECT_EQ(find(d, "source_not_mapped")->likelihood, Likelihood::confirmed);
}

TEST(Diagnose, DarwinTimeoutFromIndex0) {
  const GidTable t = test::apple_ds4qa();
  auto d = diagnose(60, Platform::darwin, {.table = &t, .sgid_index = 0});
  EXPECT_EQ(d.name, "ETIMEDOUT");
  EXPECT_EQ(d.causes[0].id, "index_0");
  EXPECT_EQ(d.causes[0].likelihood, Likelihood::confirmed);
  EXPECT_NE(d.causes[0].summary.find("fe80::3c51:2eff:fe10:a42"), std::string::npos) << d.causes[0].summary;
  auto one = diagnose(60, Platform::darwin, {.table = &t, .sgid_index = 1});
  EXPECT_EQ(find(one, "index_0")->likelihood, Likelihood::ruled_out);
}

TEST(Diagnose, DarwinEnodataEbusyEopnotsupp) {
  auto d96 = diagnose(96, Platform::darwin);
  EXPECT_EQ(d96.name, "ENODATA");
  EXPECT_EQ(d96.causes[0].id, "leaked_resources");
  auto d16 = diagnose(16, Platform::darwin, {.qps_on_device = 10});
  EXPECT_EQ(d16.causes[0].id, "qp_limit");
  EXPECT_EQ(d16.causes[0].likelihood, Likelihood::confirmed);
  EXPECT_EQ(diagnose(16, Platform::darwin, {.qps_on_device = 3}).causes[0].likelihood, Likelihood::ruled_out);
  auto d102 = diagnose(102, Platform::darwin, {.qp_type = QpKind::rc});
  EXPECT_EQ(d102.name, "EOPNOTSUPP");
  EXPECT_EQ(d102.causes[0].id, "rc_unsupported");
  EXPECT_EQ(d102.causes[0].likelihood, Likelihood::confirmed);
}

TEST(Diagnose, LinuxEnodataEmptySlot) {
  const GidTable t = test::nccl_1573_pod(0);
  auto d = diagnose(61, Platform::linux_kernel,
                    {.table = &t, .sgid_index = 3, .advertised = gid("::ffff:10.152.0.12")});
  EXPECT_EQ(d.name, "ENODATA");
  EXPECT_EQ(d.causes[0].id, "empty_slot");
  EXPECT_EQ(d.causes[0].likelihood, Likelihood::confirmed);
  EXPECT_EQ(d.causes[0].summary.rfind(
                "sgid_index 3 is empty; the advertised GID ::ffff:10.152.0.12 is at indices 6 "
                "(roce_v1) and 7 (roce_v2)",
                0),
            0u)
      << d.causes[0].summary;
  // The slot is valid in the table: the GID moved after the table was read.
  auto moved = diagnose(61, Platform::linux_kernel, {.table = &t, .sgid_index = 7});
  EXPECT_EQ(moved.causes[0].id, "gid_removed");
  EXPECT_EQ(find(moved, "empty_slot")->likelihood, Likelihood::ruled_out);
}

TEST(Diagnose, LinuxEinval) {
  const GidTable t = test::nccl_769();
  auto wrapped = diagnose(22, Platform::linux_kernel, {.table = &t, .sgid_index = 259});
  EXPECT_EQ(wrapped.causes[0].id, "index_wrapped");
  EXPECT_NE(wrapped.causes[0].summary.find("wrapped to 3"), std::string::npos);
  auto fam = diagnose(22, Platform::linux_kernel, {.table = &t, .sgid_index = 3, .peer_gid = gid("fd93::1")});
  EXPECT_EQ(fam.causes[0].id, "family_mismatch");
  EXPECT_EQ(fam.causes[0].likelihood, Likelihood::confirmed);
  PortInfo small = t.port();
  small.gid_tbl_len = 4;
  auto t4 = GidTable::make(small, {t.begin(), t.end()}, Holes::not_shown).value();
  auto oor = diagnose(22, Platform::linux_kernel, {.table = &t4, .sgid_index = 4});
  EXPECT_EQ(oor.causes[0].id, "index_out_of_range");
  EXPECT_EQ(oor.causes[0].likelihood, Likelihood::confirmed);
  EXPECT_NE(oor.causes[0].summary.find("not below gid_tbl_len 4"), std::string::npos);
}

TEST(Diagnose, LinuxEnodevEnetunreachEtimedout) {
  const GidTable pod = test::nccl_1573_pod(1);
  auto d19 = diagnose(19, Platform::linux_kernel, {.table = &pod, .sgid_index = 7});
  EXPECT_EQ(d19.name, "ENODEV");
  EXPECT_EQ(d19.causes[0].id, "netdev_gone");
  EXPECT_NE(d19.causes[0].summary.find("(net2)"), std::string::npos);
  auto d101 = diagnose(101, Platform::linux_kernel, {.peer_gid = gid("::ffff:10.0.0.1")});
  EXPECT_EQ(d101.name, "ENETUNREACH");
  EXPECT_EQ(d101.causes[0].id, "no_route");
  const GidTable t = test::nccl_769();
  auto d110 = diagnose(110, Platform::linux_kernel,
                       {.table = &t,
                        .sgid_index = 1,
                        .advertised = gid("::ffff:200.0.209.6"),
                        .peer_gid = gid("::ffff:200.0.209.7")});
  EXPECT_EQ(d110.name, "ETIMEDOUT");
  EXPECT_EQ(d110.causes[0].likelihood, Likelihood::confirmed);
  EXPECT_EQ(find(d110, "link_local_source")->likelihood, Likelihood::confirmed);
  EXPECT_EQ(find(d110, "disagreement")->likelihood, Likelihood::confirmed);
  auto ver = diagnose(110, Platform::linux_kernel,
                      {.table = &t,
                       .sgid_index = 2,
                       .peer_gid = gid("::ffff:200.0.209.7"),
                       .peer_gid_type = GidType::roce_v2});
  EXPECT_EQ(ver.causes[0].id, "roce_version_mismatch");
  EXPECT_EQ(ver.causes[0].likelihood, Likelihood::confirmed);
}

TEST(Diagnose, EveryModelledErrnoHasCausesAndTheyAreSorted) {
  for (int e : {22, 61, 19, 101, 110}) {
    auto d = diagnose(e, Platform::linux_kernel);
    ASSERT_FALSE(d.causes.empty()) << e;
    EXPECT_NE(d.causes[0].id, "unknown") << e;
    EXPECT_TRUE(std::is_sorted(d.causes.begin(), d.causes.end(),
                               [](const Cause& a, const Cause& b) { return a.likelihood < b.likelihood; }));
  }
  for (int e : {22, 60, 96, 16, 102}) {
    auto d = diagnose(e, Platform::darwin);
    ASSERT_FALSE(d.causes.empty()) << e;
    EXPECT_NE(d.causes[0].id, "unknown") << e;
  }
}

TEST(Diagnose, ErrnoNumbersArePlatformSpecific) {
  auto d = diagnose(61, Platform::darwin);  // ECONNREFUSED on Darwin, ENODATA on Linux
  EXPECT_EQ(d.name, "ECONNREFUSED");
  ASSERT_EQ(d.causes.size(), 1u);
  EXPECT_EQ(d.causes[0].id, "unknown");
  EXPECT_NE(d.causes[0].summary.find("on linux 61 is ENODATA"), std::string::npos) << d.causes[0].summary;
  auto x = diagnose(5, Platform::linux_kernel);
  EXPECT_EQ(x.causes.at(0).id, "unknown");
}

TEST(PredictRtr, UsesTheSharedDriverModel) {
  const GidTable mac = test::macmini();
  const PeerInfo peer{.qpn = 1, .psn = 2, .gid = gid("::ffff:10.99.0.4")};
  const auto apple = DriverProfile::apple_thunderbolt();
  EXPECT_EQ(predict_rtr(mac, 1, peer, apple).err, 22);  // JACCL's literal 1 on PR 3389's Mac mini
  EXPECT_EQ(predict_rtr(mac, 0, peer, apple).err, 60);  // index 0 times out
  EXPECT_EQ(predict_rtr(mac, 2, peer, apple).outcome, RtrOutcome::ok);
  EXPECT_EQ(predict_rtr(mac, 2, peer, apple, QpKind::rc).err, 102);
  const GidTable t = test::nccl_769();
  const auto lnx = DriverProfile::linux_kernel();
  const PeerInfo p4{.qpn = 1, .psn = 2, .gid = gid("::ffff:200.0.209.7")};
  EXPECT_EQ(predict_rtr(t, 3, p4, lnx).outcome, RtrOutcome::ok);
  EXPECT_EQ(predict_rtr(t, 1, p4, lnx).err, 22);  // fe80 source, IPv4 destination: family mismatch
  EXPECT_EQ(predict_rtr(t, 7, p4, lnx).outcome, RtrOutcome::unknown);  // devinfo did not print 7
  const GidTable pod = test::nccl_1573_pod(0);
  EXPECT_EQ(predict_rtr(pod, 3, {.gid = gid("::ffff:10.152.0.13")}, lnx).err, 61);
  auto ib = GidTable::make(test::port("mlx5_ib", LinkLayer::infiniband(), 128),
                           {GidEntry::valid(0, gid("fe80::ac0:ebff:feda:1cfb"), GidType::ib)})
                .value();
  // LID-routed inside the subnet: no GRH, as RtrBuilder would build it.
  EXPECT_EQ(predict_rtr(ib, 9, {.gid = gid("fe80::2"), .lid = 3}, lnx).outcome, RtrOutcome::ok);
}

}  // namespace
}  // namespace gidpolicy
