// RtrBuilder: fields with their mask bits, required bits per QP type, GRH rules, pre-driver
// rejections, and JACCL's literal source index reproduced with its disagreement reported.
#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

namespace gidpolicy {
namespace {

using test::gid;

const PeerInfo kPeer4{.qpn = 0x1234, .psn = 7, .gid = gid("::ffff:200.0.209.7"), .mtu = Mtu::mtu_4096};

static_assert(required_rtr_mask(QpKind::uc) ==
              (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN));
static_assert(required_rtr_mask(QpKind::rc) ==
              (required_rtr_mask(QpKind::uc) | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));

Selection sel(const GidTable& t) { return VALUE_OR_FAIL(Ranked{}.select(t)); }

TEST(RtrBuilder, UcFromTheSelection) {
  const GidTable t = test::nccl_769();
  auto r = RtrBuilder(QpKind::uc, t, sel(t)).remote(kPeer4).build();
  ASSERT_OK(r);
  const RtrAttributes& a = r.value();
  EXPECT_EQ(a.mask, required_rtr_mask(QpKind::uc));
  EXPECT_EQ(a.attr.qp_state, IBV_QPS_RTR);
  EXPECT_EQ(a.sgid_index(), 3);
  EXPECT_TRUE(a.is_global());
  EXPECT_EQ(a.dgid(), kPeer4.gid);
  EXPECT_EQ(a.attr.dest_qp_num, 0x1234u);
  EXPECT_EQ(a.attr.rq_psn, 7u);
  EXPECT_EQ(a.attr.path_mtu, IBV_MTU_1024);  // min(local 1024, peer 4096)
  EXPECT_EQ(a.attr.ah_attr.port_num, 1);
  EXPECT_EQ(a.attr.ah_attr.grh.hop_limit, kDefaultHopLimit);
  EXPECT_EQ(a.attr.ah_attr.grh.traffic_class, kDefaultTrafficClass);
  EXPECT_TRUE(a.agrees());
  EXPECT_EQ(rtr_mask_to_string(a.mask), "STATE|AV|PATH_MTU|RQ_PSN|DEST_QPN");
  EXPECT_NE(a.to_string().find("sgid_index=3"), std::string::npos) << a.to_string();
  EXPECT_NE(a.to_string().find("; agrees"), std::string::npos);
}

TEST(RtrBuilder, RcNeedsItsExtraBits) {
  const GidTable t = test::nccl_769();
  auto missing = RtrBuilder(QpKind::rc, t, sel(t)).remote(kPeer4).build();
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), errc::missing_required_attribute);
  EXPECT_EQ(
      missing.error().detail,
      "rc INIT->RTR requires MIN_RNR_TIMER (min_rnr_timer()), MAX_DEST_RD_ATOMIC (max_dest_rd_atomic())");
  auto ok = RtrBuilder(QpKind::rc, t, sel(t)).remote(kPeer4).max_dest_rd_atomic(1).min_rnr_timer(12).build();
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok.value().mask, required_rtr_mask(QpKind::rc));
  EXPECT_EQ(ok.value().attr.max_dest_rd_atomic, 1);
  EXPECT_EQ(ok.value().attr.min_rnr_timer, 12);
}

TEST(RtrBuilder, UcRefusesRcOnlyBitsAndUdIsNotSupported) {
  const GidTable t = test::nccl_769();
  auto r = RtrBuilder(QpKind::uc, t, sel(t)).remote(kPeer4).max_dest_rd_atomic(1).build();
  EXPECT_EQ(r.error(), errc::invalid_argument);
  EXPECT_NE(r.error().detail.find("MAX_DEST_RD_ATOMIC"), std::string::npos);
  EXPECT_EQ(RtrBuilder(QpKind::ud, t, sel(t)).remote(kPeer4).build().error(), errc::not_supported);
}

// Every combination of setters: the result either fails or carries every required bit.
TEST(RtrBuilder, NeverEmitsAMaskMissingARequiredBit) {
  const GidTable t = test::nccl_769();
  for (QpKind k : {QpKind::uc, QpKind::rc}) {
    int built = 0;
    for (unsigned combo = 0; combo < 64; ++combo) {
      RtrBuilder b(k, t, sel(t));
      if (combo & 1u) b.dest_qp_num(5);
      if (combo & 2u) b.rq_psn(9);
      if (combo & 4u) b.destination(kPeer4.gid);
      if (combo & 8u) b.path_mtu(Mtu::mtu_512);
      if (combo & 16u) b.max_dest_rd_atomic(1);
      if (combo & 32u) b.min_rnr_timer(12);
      auto r = b.build();
      if (!r) {
        EXPECT_TRUE(r.error() == errc::missing_required_attribute || r.error() == errc::invalid_argument)
            << r.error().what();
        continue;
      }
      ++built;
      const int req = required_rtr_mask(k);
      EXPECT_EQ(r.value().mask & req, req) << combo;
      EXPECT_EQ(r.value().attr.qp_state, IBV_QPS_RTR);
    }
    EXPECT_EQ(built, k == QpKind::uc ? 2 : 2);  // with and without an explicit path MTU
  }
}

TEST(RtrBuilder, PathMtu) {
  const GidTable t = test::nccl_769();  // active 1024
  PeerInfo p = kPeer4;
  p.mtu = Mtu::mtu_512;
  EXPECT_EQ(VALUE_OR_FAIL(RtrBuilder(QpKind::uc, t, sel(t)).remote(p).build()).attr.path_mtu, IBV_MTU_512);
  p.mtu.reset();
  EXPECT_EQ(VALUE_OR_FAIL(RtrBuilder(QpKind::uc, t, sel(t)).remote(p).build()).attr.path_mtu, IBV_MTU_1024);
  EXPECT_EQ(
      VALUE_OR_FAIL(RtrBuilder(QpKind::uc, t, sel(t)).remote(p).path_mtu(Mtu::mtu_256).build()).attr.path_mtu,
      IBV_MTU_256);
  // An MTU above either side is an RTR refusal of its own (the driver's EINVAL), which the C API
  // reports as GIDPOLICY_ERR_RTR, as gidpolicy.h documents; not a malformed argument.
  auto big = RtrBuilder(QpKind::uc, t, sel(t)).remote(p).path_mtu(Mtu::mtu_4096).build();
  EXPECT_EQ(big.error(), errc::mtu_too_large);
  EXPECT_TRUE(big.error() == std::errc::invalid_argument);  // its condition: EINVAL, as the driver's
  EXPECT_NE(big.error().detail.find("exceeds the local active MTU 1024"), std::string::npos);
  auto peer =
      RtrBuilder(QpKind::uc, t, sel(t)).remote(p).peer_mtu(Mtu::mtu_256).path_mtu(Mtu::mtu_512).build();
  EXPECT_EQ(peer.error(), errc::mtu_too_large);
  EXPECT_NE(peer.error().detail.find("exceeds the peer's MTU 256"), std::string::npos);
}

TEST(RtrBuilder, RejectsBeforeTheDriver) {
  const GidTable t = test::nccl_769();
  PeerInfo zero = kPeer4;
  zero.gid = Gid{};
  EXPECT_EQ(RtrBuilder(QpKind::uc, t, sel(t)).remote(zero).build().error(), errc::peer_gid_zero);
  PeerInfo v6 = kPeer4;
  v6.gid = gid("fd93::1");
  auto fam = RtrBuilder(QpKind::uc, t, sel(t)).remote(v6).build();
  EXPECT_EQ(fam.error(), errc::family_mismatch);
  EXPECT_NE(fam.error().detail.find("index 3 holds ::ffff:200.0.209.6 (roce_v2) (IPv4)"), std::string::npos)
      << fam.error().detail;
  PeerInfo v1 = kPeer4;
  v1.gid_type = GidType::roce_v1;
  auto ver = RtrBuilder(QpKind::uc, t, sel(t)).remote(v1).build();
  EXPECT_EQ(ver.error(), errc::roce_version_mismatch);
  PeerInfo v2 = kPeer4;
  v2.gid_type = GidType::roce_v2;
  EXPECT_TRUE(RtrBuilder(QpKind::uc, t, sel(t)).remote(v2).build());
  PeerInfo unknown = kPeer4;
  unknown.gid_type = GidType::unknown;  // the peer did not say: nothing to compare
  EXPECT_TRUE(RtrBuilder(QpKind::uc, t, sel(t)).remote(unknown).build());
  auto wide = RtrBuilder(QpKind::uc, t, sel(t)).remote(kPeer4).dest_qp_num(1u << 24).build();
  EXPECT_EQ(wide.error(), errc::invalid_argument);
  EXPECT_EQ(RtrBuilder(QpKind::uc, t, sel(t)).remote(kPeer4).rq_psn(1u << 24).build().error(),
            errc::invalid_argument);
  EXPECT_EQ(RtrBuilder(QpKind::uc, t, sel(t)).remote(kPeer4).flow_label(1u << 20).build().error(),
            errc::invalid_argument);
}

TEST(RtrBuilder, GrhAlwaysOnThunderboltOnInfinibandOnlyForGlobalPeers) {
  const GidTable tb = test::apple_ds4qa();
  auto a = RtrBuilder(QpKind::uc, tb, sel(tb))
               .remote({.qpn = 1, .psn = 2, .gid = gid("::ffff:10.99.0.1")})
               .build();
  ASSERT_OK(a);
  EXPECT_TRUE(a.value().is_global());
  EXPECT_EQ(a.value().sgid_index(), 1);
  auto ib = VALUE_OR_FAIL(GidTable::make(test::port("mlx5_ib", LinkLayer::infiniband(), 128),
                                         {GidEntry::valid(0, gid("fe80::ac0:ebff:feda:1cfb"), GidType::ib)}));
  auto local = RtrBuilder(QpKind::rc, ib, sel(ib))
                   .remote({.qpn = 1, .psn = 2, .gid = gid("fe80::ac0:ebff:feda:1cfc"), .lid = 17})
                   .max_dest_rd_atomic(1)
                   .min_rnr_timer(12)
                   .build();
  ASSERT_OK(local);
  EXPECT_FALSE(local.value().is_global());
  EXPECT_EQ(local.value().attr.ah_attr.dlid, 17);
  auto global = RtrBuilder(QpKind::rc, ib, sel(ib))
                    .remote({.qpn = 1, .psn = 2, .gid = gid("2001:db8::1"), .lid = 17})
                    .max_dest_rd_atomic(1)
                    .min_rnr_timer(12)
                    .build();
  ASSERT_OK(global);
  EXPECT_TRUE(global.value().is_global());
  auto nolid =
      RtrBuilder(QpKind::uc, ib, sel(ib)).remote({.qpn = 1, .psn = 2, .gid = gid("fe80::2")}).build();
  // Neither a global GID nor a LID: the peer's address is unusable, an argument error (the C
  // API's GIDPOLICY_ERR_INVALID_ARGUMENT, as gidpolicy.h documents).
  EXPECT_EQ(nolid.error(), errc::invalid_argument);
  EXPECT_NE(nolid.error().detail.find("needs its LID"), std::string::npos) << nolid.error().what();
}

TEST(RtrBuilder, HopLimitTrafficClassServiceLevel) {
  const GidTable t = test::nccl_769();
  auto a = RtrBuilder(QpKind::uc, t, sel(t))
               .remote(kPeer4)
               .hop_limit(1)
               .traffic_class(106)
               .service_level(3)
               .flow_label(5)
               .build();
  ASSERT_OK(a);
  EXPECT_EQ(a.value().attr.ah_attr.grh.hop_limit, 1);
  EXPECT_EQ(a.value().attr.ah_attr.grh.traffic_class, 106);
  EXPECT_EQ(a.value().attr.ah_attr.sl, 3);
  EXPECT_EQ(a.value().attr.ah_attr.grh.flow_label, 5u);
}

TEST(RtrBuilder, JacclLiteralIndexOneIsReproducedAndReportedAsDisagreeing) {
  const GidTable mac = test::macmini();
  ASSERT_OK_AND_ASSIGN(auto s, JacclFirstMapped{}.select(mac));
  auto r = RtrBuilder(QpKind::uc, mac, s, SourceIndex::literal(1))
               .remote({.qpn = 1, .psn = 7, .gid = gid("::ffff:10.99.0.4")})
               .path_mtu(Mtu::mtu_1024)
               .hop_limit(1)
               .build();
  ASSERT_OK(r);
  EXPECT_EQ(r.value().sgid_index(), 1);
  EXPECT_FALSE(r.value().agrees());
  EXPECT_EQ(r.value().agreement.explanation,
            "sgid_index 1 is empty; the advertised GID ::ffff:10.99.0.3 is at index 2");
  EXPECT_NE(r.value().to_string().find("DISAGREES"), std::string::npos);
  // The shared driver model says what Apple's driver did with it (MLX PR 3389: errno 22).
  auto v = predict_rtr(mac, r.value(), DriverModel::apple_thunderbolt());
  EXPECT_EQ(v.outcome, RtrOutcome::error);
  EXPECT_EQ(v.err, 22);
  // From the profile's plan: the same attributes.
  ASSERT_OK_AND_ASSIGN(auto plan, profiles::jaccl().plan(mac));
  auto viaplan =
      RtrBuilder(QpKind::uc, mac, plan).remote({.qpn = 1, .psn = 7, .gid = gid("::ffff:10.99.0.4")}).build();
  ASSERT_OK(viaplan);
  EXPECT_EQ(viaplan.value().sgid_index(), 1);
  EXPECT_FALSE(viaplan.value().agrees());
  ASSERT_OK_AND_ASSIGN(auto fixed, profiles::jaccl_fixed().plan(mac));
  auto good =
      RtrBuilder(QpKind::uc, mac, fixed).remote({.qpn = 1, .psn = 7, .gid = gid("::ffff:10.99.0.4")}).build();
  ASSERT_OK(good);
  EXPECT_EQ(good.value().sgid_index(), 2);
  EXPECT_TRUE(good.value().agrees());
  EXPECT_EQ(predict_rtr(mac, good.value(), DriverModel::apple_thunderbolt()).outcome, RtrOutcome::ok);
}

TEST(RtrBuilder, AStaleTableIsSeenByThePlanConstructor) {
  // The plan was made on one snapshot; the builder is given a newer one where the GID moved.
  const GidTable before = test::nccl_769();
  ASSERT_OK_AND_ASSIGN(auto plan, profiles::automatic().plan(before));
  auto after = VALUE_OR_FAIL(GidTable::make(before.port(),
                                            {GidEntry::valid(3, gid("::ffff:200.0.209.99"), GidType::roce_v2),
                                             GidEntry::valid(4, gid("::ffff:200.0.209.6"), GidType::roce_v2)},
                                            Holes::not_shown));
  auto r = RtrBuilder(QpKind::uc, after, plan).remote(kPeer4).build();
  ASSERT_TRUE(r);
  EXPECT_FALSE(r.value().agrees());
  EXPECT_NE(r.value().agreement.explanation.find("is at index 4"), std::string::npos)
      << r.value().agreement.explanation;
}

TEST(RtrBuilder, RequestMatchesWhatJudgeRtrSees) {
  const GidTable t = test::nccl_769();
  PeerInfo p = kPeer4;
  p.gid_type = GidType::roce_v2;
  ASSERT_OK_AND_ASSIGN(auto a, RtrBuilder(QpKind::uc, t, sel(t)).remote(p).build());
  RtrRequest q = a.request();
  EXPECT_EQ(q.qp_type, QpKind::uc);
  EXPECT_TRUE(q.is_global);
  EXPECT_EQ(q.sgid_index, 3u);
  EXPECT_EQ(q.dgid, p.gid);
  EXPECT_EQ(q.peer_gid_type, GidType::roce_v2);
  EXPECT_EQ(judge_rtr(t, q, DriverModel::linux_kernel()).outcome, RtrOutcome::ok);
}

TEST(RtrMaskToString, UnknownBits) {
  EXPECT_EQ(rtr_mask_to_string(0), "0");
  EXPECT_EQ(rtr_mask_to_string(IBV_QP_STATE | (1 << 30)), "STATE|0x40000000");
}

// rtr_request(): the one reduction of verbs attributes to what a driver model judges.

/// Attributes with every field rtr_request() could read set to a recognisable value.
ibv_qp_attr full_attr() {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_2048;
  a.dest_qp_num = 0x4321;
  a.rq_psn = 9;
  a.ah_attr.is_global = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.dlid = 7;
  a.ah_attr.grh.sgid_index = 5;
  a.ah_attr.grh.hop_limit = 3;
  gid("::ffff:10.1.2.3").copy_to(a.ah_attr.grh.dgid.raw);
  return a;
}

TEST(RtrRequestOf, AvCarriesTheGrhFields) {
  const ibv_qp_attr a = full_attr();
  for (const QpKind kind : {QpKind::uc, QpKind::rc, QpKind::ud}) {
    const RtrRequest r = rtr_request(a, IBV_QP_STATE | IBV_QP_AV, kind);
    EXPECT_EQ(r.qp_type, kind);
    EXPECT_TRUE(r.is_global);
    EXPECT_EQ(r.sgid_index, 5u);
    EXPECT_EQ(r.dgid, gid("::ffff:10.1.2.3"));
    // Nothing in ibv_qp_attr says the peer's GID type, and the netdev is the host's state.
    EXPECT_FALSE(r.peer_gid_type.has_value());
    EXPECT_TRUE(r.source_netdev_present);
  }
}

TEST(RtrRequestOf, IsGlobalIsReadAsTheCallerSetIt) {
  ibv_qp_attr a = full_attr();
  a.ah_attr.is_global = 0;
  const RtrRequest r = rtr_request(a, IBV_QP_AV, QpKind::uc);
  EXPECT_FALSE(r.is_global);
  EXPECT_EQ(r.sgid_index, 5u);  // the field is still what the driver would read
  a.ah_attr.is_global = 2;      // any non-zero value is a GRH
  EXPECT_TRUE(rtr_request(a, IBV_QP_AV, QpKind::uc).is_global);
}

TEST(RtrRequestOf, WithoutAvTheDriverReadsNoAddress) {
  const ibv_qp_attr a = full_attr();
  const int all_but_av = IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  const RtrRequest r = rtr_request(a, all_but_av, QpKind::rc);
  EXPECT_EQ(r.qp_type, QpKind::rc);
  EXPECT_FALSE(r.is_global);
  EXPECT_EQ(r.sgid_index, 0u);
  EXPECT_TRUE(r.dgid.is_zero());
}

TEST(RtrRequestOf, OtherMaskBitsChangeNothing) {
  const ibv_qp_attr a = full_attr();
  const RtrRequest base = rtr_request(a, IBV_QP_AV, QpKind::uc);
  for (const int bit :
       {IBV_QP_STATE, IBV_QP_PATH_MTU, IBV_QP_DEST_QPN, IBV_QP_RQ_PSN, IBV_QP_MAX_DEST_RD_ATOMIC,
        IBV_QP_MIN_RNR_TIMER, IBV_QP_PKEY_INDEX, IBV_QP_ACCESS_FLAGS, IBV_QP_ALT_PATH}) {
    const RtrRequest r = rtr_request(a, IBV_QP_AV | bit, QpKind::uc);
    EXPECT_EQ(r.is_global, base.is_global) << rtr_mask_to_string(bit);
    EXPECT_EQ(r.sgid_index, base.sgid_index) << rtr_mask_to_string(bit);
    EXPECT_EQ(r.dgid, base.dgid) << rtr_mask_to_string(bit);
  }
}

TEST(RtrRequestOf, TheBuildersRequestIsTheReductionPlusThePeerType) {
  const GidTable t = test::nccl_769();
  PeerInfo peer = kPeer4;
  peer.gid_type = GidType::roce_v2;
  for (const QpKind kind : {QpKind::uc, QpKind::rc}) {
    RtrBuilder b(kind, t, sel(t));
    b.remote(peer);
    if (kind == QpKind::rc) b.max_dest_rd_atomic(1).min_rnr_timer(12);
    auto built = b.build();
    ASSERT_OK(built);
    const RtrAttributes& a = built.value();
    const RtrRequest reduced = rtr_request(a.attr, a.mask, a.qp_type);
    const RtrRequest r = a.request();
    EXPECT_EQ(r.qp_type, kind);
    EXPECT_EQ(r.qp_type, reduced.qp_type);
    EXPECT_EQ(r.is_global, reduced.is_global);
    EXPECT_EQ(r.sgid_index, reduced.sgid_index);
    EXPECT_EQ(r.sgid_index, 3u);
    EXPECT_EQ(r.dgid, reduced.dgid);
    EXPECT_EQ(r.peer_gid_type, GidType::roce_v2);
    EXPECT_FALSE(reduced.peer_gid_type.has_value());
  }
}

}  // namespace
}  // namespace gidpolicy
