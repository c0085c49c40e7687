// diagnose() and predict_rtr(): errno causes ranked with table evidence; RTR predicted through
// the shared judge_rtr() model.
#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/network.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace gidpolicy {
namespace {

using test::gid;

const CandidateCause* find(const Diagnosis& d, std::string_view id) {
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
  // Index 0 holds a non-mapped fe80 GID, but the model's Apple driver decides index 0 first
  // (errno 60): the non-mapped source is likely, and the diagnosis says what the model predicts.
  EXPECT_EQ(find(d, "source_not_mapped")->likelihood, Likelihood::likely);
  EXPECT_NE(find(d, "model_predicts_otherwise"), nullptr) << d.to_string();
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
  ASSERT_OK_AND_ASSIGN(auto t4, GidTable::make(small, {t.begin(), t.end()}, Holes::not_shown));
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
  // The one model: Linux refuses an fe80 source towards an IPv4 destination with EINVAL (family)
  // before any traffic could time out, so the link-local source is likely, not confirmed, and
  // the diagnosis says what the model predicts instead.
  EXPECT_EQ(find(d110, "link_local_source")->likelihood, Likelihood::likely);
  EXPECT_NE(find(d110, "model_predicts_otherwise"), nullptr) << d110.to_string();
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
    EXPECT_TRUE(std::is_sorted(
        d.causes.begin(), d.causes.end(),
        [](const CandidateCause& a, const CandidateCause& b) { return a.likelihood < b.likelihood; }));
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

// A plan that advertises the entry at `advertised` and routes from the literal `sgid_index`.
Plan plan_at(const GidTable& t, std::uint32_t advertised, std::uint8_t sgid_index) {
  Plan p;
  if (const GidEntry* e = t.find(advertised)) p.selection = Selection(*e);
  p.sgid_index = sgid_index;
  p.agreement = check_agreement(t, p.selection.entry.gid, sgid_index);
  return p;
}

TEST(PredictRtr, JudgesWhatRtrBuilderBuilt) {
  const GidTable mac = test::macmini();
  const PeerInfo peer{.qpn = 1, .psn = 2, .gid = gid("::ffff:10.99.0.4")};
  const auto apple = DriverModel::apple_thunderbolt();
  EXPECT_EQ(predict_rtr(mac, plan_at(mac, 2, 1), peer, apple).verdict.err, 22);  // JACCL's literal 1
  EXPECT_EQ(predict_rtr(mac, plan_at(mac, 2, 0), peer, apple).verdict.err, 60);  // index 0 times out
  EXPECT_EQ(predict_rtr(mac, plan_at(mac, 2, 2), peer, apple).verdict.outcome, RtrOutcome::ok);
  EXPECT_EQ(predict_rtr(mac, plan_at(mac, 2, 2), peer, apple, QpKind::rc).verdict.err, 102);
  const GidTable t = test::nccl_769();
  const auto lnx = DriverModel::linux_kernel();
  const PeerInfo p4{.qpn = 1, .psn = 2, .gid = gid("::ffff:200.0.209.7")};
  EXPECT_EQ(predict_rtr(t, plan_at(t, 3, 3), p4, lnx).verdict.outcome, RtrOutcome::ok);
  // An fe80 source towards an IPv4 destination: RtrBuilder refuses it (family mismatch) before
  // modify_qp; sent anyway, Linux answers EINVAL.
  const RtrPrediction fam = predict_rtr(t, plan_at(t, 1, 1), p4, lnx);
  ASSERT_TRUE(fam.refused);
  EXPECT_EQ(fam.refused->code, errc::family_mismatch);
  EXPECT_EQ(fam.verdict.err, 22);
  EXPECT_EQ(fam.verdict.rule, RtrRule::family_mismatch);
  EXPECT_EQ(predict_rtr(t, plan_at(t, 3, 7), p4, lnx).verdict.outcome, RtrOutcome::unknown);  // not printed
  const GidTable pod = test::nccl_1573_pod(0);
  EXPECT_EQ(predict_rtr(pod, plan_at(pod, 7, 3), {.gid = gid("::ffff:10.152.0.13")}, lnx).verdict.err, 61);
  auto ib = VALUE_OR_FAIL(GidTable::make(test::port("mlx5_ib", LinkLayer::infiniband(), 128),
                                         {GidEntry::valid(0, gid("fe80::ac0:ebff:feda:1cfb"), GidType::ib)}));
  // LID-routed inside the subnet: no GRH, as RtrBuilder builds it.
  const RtrPrediction lid = predict_rtr(ib, plan_at(ib, 0, 0), {.gid = gid("fe80::2"), .lid = 3}, lnx);
  EXPECT_TRUE(lid.reaches_driver());
  EXPECT_EQ(lid.verdict.outcome, RtrOutcome::ok);
}

// The builder's refusals are part of the prediction: a zero peer GID never reaches modify_qp,
// and the verdict says what the driver would have answered.
TEST(PredictRtr, ZeroPeerGidIsRefusedAndNamed) {
  const GidTable t = test::nccl_769();
  const RtrPrediction p =
      predict_rtr(t, plan_at(t, 3, 3), {.qpn = 1, .psn = 2, .gid = Gid{}}, DriverModel::linux_kernel());
  ASSERT_TRUE(p.refused);
  EXPECT_EQ(p.refused->code, errc::peer_gid_zero);
  EXPECT_EQ(p.verdict.rule, RtrRule::dgid_zero);
  EXPECT_NE(p.to_string(Platform::linux_kernel).find("EINVAL (22): the destination GID is zero"),
            std::string::npos)
      << p.to_string(Platform::linux_kernel);
}

// A cause is never both confirmed and ruled out (the Mac mini at index 20,
// past gid_tbl_len 16, and 256, which wraps to 0).
TEST(Diagnose, NeverConfirmsAndRulesOutTheSameCause) {
  const GidTable mac = test::macmini();
  for (std::uint32_t idx : {20u, 256u, 1u, 2u, 0u}) {
    const Diagnosis d = diagnose(22, Platform::darwin, {.table = &mac, .sgid_index = idx});
    for (const auto& a : d.causes)
      for (const auto& b : d.causes) {
        if (&a == &b) continue;
        EXPECT_NE(a.id, b.id) << d.to_string();
        if (a.likelihood == Likelihood::confirmed && b.likelihood == Likelihood::ruled_out) {
          EXPECT_NE(a.summary, b.summary) << d.to_string();
        }
      }
  }
  const Diagnosis oor = diagnose(22, Platform::darwin, {.table = &mac, .sgid_index = 20});
  EXPECT_EQ(oor.causes.at(0).id, "index_out_of_range");
  EXPECT_EQ(find(oor, "absent_source")->likelihood, Likelihood::ruled_out);
  EXPECT_EQ(find(oor, "absent_source")->summary,
            "sgid_index 20 is outside the table, not an empty slot in it");
}

// explain-errno names the zero destination GID exactly as check predicts it.
TEST(Diagnose, ZeroDestinationIsNamedAsThePredictionNamesIt) {
  for (const GidTable& t : {test::macmini(), test::nccl_769()}) {
    const auto driver = DriverModel::for_link_layer(t.port().link_layer);
    const std::uint8_t idx = t.port().link_layer.kind() == LinkLayer::Kind::thunderbolt ? 2 : 3;
    const RtrPrediction p = predict_rtr(t, plan_at(t, idx, idx), {.qpn = 1, .psn = 2, .gid = Gid{}}, driver);
    const Diagnosis d = diagnose(22, driver.platform, {.table = &t, .sgid_index = idx, .peer_gid = Gid{}});
    ASSERT_FALSE(d.causes.empty());
    EXPECT_EQ(d.causes[0].id, "dgid_zero") << d.to_string();
    EXPECT_EQ(d.causes[0].likelihood, Likelihood::confirmed);
    EXPECT_EQ(d.causes[0].summary.rfind(p.verdict.reason, 0), 0u) << d.causes[0].summary;
    EXPECT_NE(d.causes[0].summary.find(p.refused->detail), std::string::npos) << d.causes[0].summary;
    // The family is not blamed for a zero GID.
    if (const CandidateCause* fam = find(d, "family_mismatch")) {
      EXPECT_NE(fam->likelihood, Likelihood::confirmed);
    }
  }
}

// Found by prop_never_confirms_and_rules_out_the_same_cause: a slot the source did not print has
// no entry to describe. With a zero peer GID the slot is judged first (Linux resolves the source
// before the destination) and is unknown, so the zero destination stays a likely cause of 22.
TEST(Diagnose, AnUnprintedSlotBeforeAZeroDestinationIsNotDescribed) {
  const GidTable t = test::nccl_769();  // ibv_devinfo did not print index 7
  for (const Platform p : {Platform::darwin, Platform::linux_kernel}) {
    const Diagnosis d = diagnose(22, p, {.table = &t, .sgid_index = 7, .peer_gid = Gid{}});
    const CandidateCause* zero = find(d, "dgid_zero");
    ASSERT_NE(zero, nullptr) << d.to_string();
    EXPECT_EQ(zero->likelihood, Likelihood::likely) << d.to_string();
    EXPECT_NE(d.to_string().find("sgid_index 7 was not printed by the source"), std::string::npos)
        << d.to_string();
  }
}

TEST(Diagnose, AnErrnoWithoutANameIsSaidOnce) {
  const Diagnosis d = diagnose(5, Platform::linux_kernel);
  EXPECT_EQ(d.to_string().rfind("errno 5 on linux:\n", 0), 0u) << d.to_string();
  EXPECT_EQ(d.to_string().find("(5)"), std::string::npos) << d.to_string();
}

TEST(Diagnose, ACustomModelsQpCapIsTheOneDiagnosed) {
  // An Apple driver reported to allow 4 QPs, not about 10: the 5th create_qp fails with EBUSY.
  DriverModel four = DriverModel::apple_thunderbolt();
  four.name = "apple_thunderbolt_4qps";
  four.max_qps_per_device = 4;
  const Diagnosis hit = diagnose(16, four, {.qps_on_device = 4});
  ASSERT_FALSE(hit.causes.empty());
  EXPECT_EQ(hit.causes[0].id, "qp_limit");
  EXPECT_EQ(hit.causes[0].likelihood, Likelihood::confirmed) << hit.to_string();
  EXPECT_NE(hit.causes[0].summary.find("allows 4"), std::string::npos) << hit.causes[0].summary;
  // The stock model's cap of 10 rules the same count out: the model decides, not the platform.
  EXPECT_EQ(find(diagnose(16, Platform::darwin, {.qps_on_device = 4}), "qp_limit")->likelihood,
            Likelihood::ruled_out);
  EXPECT_EQ(find(diagnose(16, four, {.qps_on_device = 3}), "qp_limit")->likelihood, Likelihood::ruled_out);
  // A Linux model with a cap is diagnosed with it too (the stock Linux model has none).
  DriverModel capped = DriverModel::linux_kernel();
  capped.max_qps_per_device = 2;
  EXPECT_EQ(find(diagnose(16, capped, {.qps_on_device = 2}), "qp_limit")->likelihood, Likelihood::confirmed);
  EXPECT_EQ(find(diagnose(16, Platform::linux_kernel, {.qps_on_device = 2}), "qp_limit"), nullptr);
}

TEST(Diagnose, TheModelsSwitchesDecideTheCauses) {
  // A Thunderbolt driver reported to take RC: EOPNOTSUPP for an RC QP is then not "UC only".
  DriverModel rc_ok = DriverModel::apple_thunderbolt();
  rc_ok.uc_only = false;
  EXPECT_EQ(find(diagnose(102, rc_ok, {.qp_type = QpKind::rc}), "rc_unsupported")->likelihood,
            Likelihood::ruled_out);
  EXPECT_EQ(find(diagnose(102, Platform::darwin, {.qp_type = QpKind::rc}), "rc_unsupported")->likelihood,
            Likelihood::confirmed);
}

TEST(Diagnose, ThePlatformOverloadIsTheStockModel) {
  const GidTable t = test::macmini();
  for (const Platform p : {Platform::linux_kernel, Platform::darwin})
    EXPECT_EQ(diagnose(22, p, {.table = &t, .sgid_index = 1}).to_string(),
              diagnose(22, DriverModel::for_platform(p), {.table = &t, .sgid_index = 1}).to_string());
}

}  // namespace
}  // namespace gidpolicy

// diagnose()'s ENODEV namespace cause: the slot's netdev is not in the caller's namespace.
// A named namespace: the unit tests are a unity build, where every file's anonymous namespace is
// one namespace.
namespace gidpolicy::diagnose_namespace_test {

Gid gid(const char* s) { return VALUE_OR_FAIL(Gid::parse(s)); }

PortInfo roce_port(std::uint32_t len = 16) {
  return PortInfo{"mlx5_0", 1, PortState::active, LinkLayer::ethernet(), len, Mtu::mtu_1024, 0};
}

GidTable two_netdevs() {
  return VALUE_OR_FAIL(
      GidTable::make(roce_port(), {GidEntry::valid(1, gid("::ffff:10.9.0.1"), GidType::roce_v2, "ghost0"),
                                   GidEntry::valid(2, gid("::ffff:10.1.0.1"), GidType::roce_v2, "eth0"),
                                   GidEntry::valid(3, gid("::ffff:10.1.0.5"), GidType::roce_v2, "eth0"),
                                   GidEntry::valid(4, gid("::ffff:10.2.0.1"), GidType::roce_v2, "eth1")}));
}

TEST(DiagnoseNamespace, EnodevConfirmedWhenTheSlotsNetdevIsNotInTheNamespace) {
  const GidTable t = two_netdevs();
  NetworkView v{{{"eth0", 2}, {"eth1", 3}}, {}};
  DiagnoseContext c;
  c.table = &t;
  c.sgid_index = 1;
  c.network = &v;
  const Diagnosis d = diagnose(ENODEV, Platform::linux_kernel, c);
  ASSERT_FALSE(d.causes.empty());
  EXPECT_EQ(d.causes.front().id, "netdev_other_namespace");
  EXPECT_EQ(d.causes.front().likelihood, Likelihood::confirmed);
  EXPECT_THAT(d.causes.front().summary, testing::HasSubstr("ghost0"));
  c.sgid_index = 2;
  const Diagnosis ok = diagnose(ENODEV, Platform::linux_kernel, c);
  bool ruled_out = false;
  for (const auto& cause : ok.causes)
    if (cause.id == "netdev_other_namespace") ruled_out = cause.likelihood == Likelihood::ruled_out;
  EXPECT_TRUE(ruled_out);
  c.network = nullptr;  // no view: the cause is not claimed
  for (const auto& cause : diagnose(ENODEV, Platform::linux_kernel, c).causes)
    EXPECT_NE(cause.id, "netdev_other_namespace");
}

}  // namespace gidpolicy::diagnose_namespace_test
