// Properties of the RTR builder: the mask always carries the bits the QP type
// requires, the path MTU never exceeds either side, and an IPv4/IPv6 family mismatch is refused
// before the driver sees it (checked through the fake verbs' counters).
#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/apply.hpp>

#include "support/assert_ok.hpp"
#include "support/families.hpp"
#include "support/generators.hpp"
#include "support/policy_generators.hpp"
#include "support/reference.hpp"
#include "support/scenario_generators.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>

namespace gidpolicy {
namespace {

namespace ref = test::ref;

/// Which of the builder's setters a caller used (every combination, including forgetting some).
struct Calls {
  bool remote = true;                         // remote(peer): dest_qp_num + rq_psn + destination
  bool qpn = false, psn = false, av = false;  // the same one by one, when remote() is not used
  bool rd_atomic = false, rnr_timer = false;  // RC only
  std::optional<Mtu> path_mtu;
};

void showValue(const Calls& c, std::ostream& os) {
  os << (c.remote ? "remote()"
                  : std::string(c.qpn ? "dest_qp_num() " : "") + (c.psn ? "rq_psn() " : "") +
                        (c.av ? "destination()" : ""));
  if (c.rd_atomic) os << " max_dest_rd_atomic()";
  if (c.rnr_timer) os << " min_rnr_timer()";
  if (c.path_mtu) os << " path_mtu(" << mtu_bytes(*c.path_mtu) << ")";
}

/// Whether an explicit path MTU exceeds either side (refused before the mask is checked).
bool explicit_mtu_too_big(const Calls& c, const GidTable& t, const PeerInfo& peer) {
  if (!c.path_mtu) return false;
  return *c.path_mtu > t.port().active_mtu || (peer.mtu && *c.path_mtu > *peer.mtu);
}

rc::Gen<Calls> gen_calls(QpKind kind) {
  return rc::gen::exec([kind] {
    Calls c;
    c.remote = *rc::gen::weightedElement<bool>({{3, true}, {1, false}});
    if (!c.remote) {
      c.qpn = *rc::gen::weightedElement<bool>({{4, true}, {1, false}});
      c.psn = *rc::gen::weightedElement<bool>({{4, true}, {1, false}});
      c.av = *rc::gen::weightedElement<bool>({{4, true}, {1, false}});
    }
    const bool rc = kind == QpKind::rc;
    c.rd_atomic = rc && *rc::gen::weightedElement<bool>({{4, true}, {1, false}});
    c.rnr_timer = rc && *rc::gen::weightedElement<bool>({{4, true}, {1, false}});
    if (*rc::gen::weightedElement<bool>({{3, false}, {1, true}}))
      c.path_mtu = *rc::gen::element(Mtu::mtu_256, Mtu::mtu_512, Mtu::mtu_1024, Mtu::mtu_2048, Mtu::mtu_4096);
    return c;
  });
}

RtrBuilder make_builder(QpKind kind, const GidTable& t, const Plan& plan, const PeerInfo& peer,
                        const Calls& c) {
  RtrBuilder b(kind, t, plan);
  if (c.remote) {
    b.remote(peer);
  } else {
    if (c.qpn) b.dest_qp_num(peer.qpn);
    if (c.psn) b.rq_psn(peer.psn);
    if (c.av) b.destination(peer.gid, peer.lid);
    if (peer.mtu) b.peer_mtu(*peer.mtu);
  }
  if (c.rd_atomic) b.max_dest_rd_atomic(4);
  if (c.rnr_timer) b.min_rnr_timer(12);
  if (c.path_mtu) b.path_mtu(*c.path_mtu);
  return b;
}

/// A selection to build from: any profile that selects on the table (discard the rest).
Plan gen_plan(const GidTable& t) {
  const Profile p = *rc::gen::oneOf(test::gen_profile(), rc::gen::just(profiles::automatic()));
  auto plan = p.plan(t);
  RC_PRE(plan.has_value());
  return plan.value();
}

RC_GTEST_PROP(RtrBuilder, prop_rtr_mask_always_carries_the_required_bits, ()) {
  const GidTable t = *test::gen_realistic_table();
  const Plan plan = gen_plan(t);
  const QpKind kind = *rc::gen::element(QpKind::uc, QpKind::rc, QpKind::ud);
  const Calls calls = *gen_calls(kind);
  const PeerInfo peer = *test::gen_peer_info();
  auto rtr = make_builder(kind, t, plan, peer, calls).build();
  if (kind == QpKind::ud) {
    RC_ASSERT(!rtr);
    RC_ASSERT(rtr.error() == errc::not_supported);
    return;
  }
  // Restated from ibv_modify_qp(3): UC needs STATE|AV|PATH_MTU|DEST_QPN|RQ_PSN for INIT->RTR,
  // RC also MAX_DEST_RD_ATOMIC|MIN_RNR_TIMER. PATH_MTU is always filled in (min of both sides).
  const bool supplied = (calls.remote || (calls.qpn && calls.psn && calls.av)) &&
                        (kind == QpKind::uc || (calls.rd_atomic && calls.rnr_timer));
  if (!supplied) {
    RC_ASSERT(!rtr);
    if (!explicit_mtu_too_big(calls, t, peer)) RC_ASSERT(rtr.error() == errc::missing_required_attribute);
    return;
  }
  if (!rtr) {
    // Refused for a reason the builder documents; never for a missing bit.
    RC_ASSERT(rtr.error() != errc::missing_required_attribute);
    RC_TAG(std::string(rtr.error().code.message()));
    return;
  }
  const int uc_bits = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  const int rc_bits = uc_bits | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  const int required = kind == QpKind::rc ? rc_bits : uc_bits;
  RC_ASSERT((rtr.value().mask & required) == required);
  RC_ASSERT(rtr.value().mask == required);  // and nothing the transition does not take
  RC_ASSERT(rtr.value().attr.qp_state == IBV_QPS_RTR);
  // Each field its bit names holds what was given, from the same plan that was advertised.
  RC_ASSERT(rtr.value().attr.dest_qp_num == peer.qpn);
  RC_ASSERT(rtr.value().attr.rq_psn == peer.psn);
  RC_ASSERT(rtr.value().sgid_index() == plan.sgid_index);
  if (rtr.value().is_global()) RC_ASSERT(rtr.value().dgid() == peer.gid);
}

RC_GTEST_PROP(RtrBuilder, prop_rtr_path_mtu_never_exceeds_either_side, ()) {
  const GidTable t = *test::gen_realistic_table();
  const Plan plan = gen_plan(t);
  const PeerInfo peer = *test::gen_peer_info_of_family(plan.selection.entry.gid.is_ipv4_mapped());
  Calls calls;
  if (*rc::gen::arbitrary<bool>())
    calls.path_mtu =
        *rc::gen::element(Mtu::mtu_256, Mtu::mtu_512, Mtu::mtu_1024, Mtu::mtu_2048, Mtu::mtu_4096);
  auto rtr = make_builder(QpKind::uc, t, plan, peer, calls).build();
  const unsigned local = mtu_bytes(t.port().active_mtu);
  const unsigned remote = peer.mtu ? mtu_bytes(*peer.mtu) : 4096u;
  if (calls.path_mtu && (mtu_bytes(*calls.path_mtu) > local || mtu_bytes(*calls.path_mtu) > remote)) {
    // An explicit MTU above either side is refused, not clamped silently: errc::mtu_too_large
    // (the C API's GIDPOLICY_ERR_RTR), whose condition is the driver's EINVAL.
    RC_ASSERT(!rtr);
    RC_ASSERT(rtr.error() == errc::mtu_too_large);
    RC_ASSERT(rtr.error() == std::errc::invalid_argument);
    return;
  }
  if (!rtr) return;  // refused for another documented reason (family, version, zero peer...)
  RC_ASSERT((rtr.value().mask & IBV_QP_PATH_MTU) != 0);
  const unsigned path = mtu_bytes(static_cast<Mtu>(rtr.value().attr.path_mtu));
  RC_ASSERT(path <= local);
  RC_ASSERT(path <= remote);
  // Unless set, it is exactly the smaller side's.
  if (!calls.path_mtu) RC_ASSERT(path == std::min(local, remote));
}

RC_GTEST_PROP(RtrBuilder, prop_rtr_family_mismatch_never_reaches_the_driver, ()) {
  // Any table, any consistent profile, any peer (both families, zero now and then): built on
  // the fake verbs and applied as a program would (bare modify_qp, no preflight). Whenever the
  // source slot and the peer's GID are of different families on a GID-routed port, the builder
  // refuses and the driver never sees an RTR.
  const GidTable t = *test::gen_family_table();
  fakes::FakeVerbs fake;
  RC_ASSERT(fake.add_port(t).has_value());
  auto dev = fake.open_device(t.port().device);
  RC_ASSERT(dev.has_value());
  auto snap = verbs::snapshot(fake, dev.value(), t.port().port);
  RC_ASSERT(snap.has_value());
  const Profile profile = *test::gen_consistent_profile();
  auto plan = profile.plan(snap.value());
  RC_PRE(plan.has_value());
  const PeerInfo peer = *rc::gen::oneOf(test::gen_peer_info(), test::gen_peer_info_of_family(true),
                                        test::gen_peer_info_of_family(false));
  auto qp = fake.create_qp(dev.value(), QpKind::uc);
  RC_ASSERT(qp.has_value());
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = static_cast<std::uint8_t>(t.port().port);
  RC_ASSERT(
      fake.modify_qp(qp.value(), init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
          .has_value());
  const unsigned before = fake.calls(verbs::VerbsCall::modify_qp);

  auto rtr = RtrBuilder(QpKind::uc, snap.value(), plan.value()).remote(peer).build();
  const GidEntry* source = ref::at(snap.value(), plan.value().sgid_index);
  const bool mismatch = ref::routed_by_gid(snap.value()) && ref::holds_gid(source) && !peer.gid.is_zero() &&
                        ref::mapped(ref::raw(source->gid)) != ref::mapped(ref::raw(peer.gid));
  if (mismatch) {
    RC_TAG("family mismatch");
    RC_ASSERT(!rtr);
    RC_ASSERT(rtr.error() == errc::family_mismatch);
  }
  if (rtr) (void)fake.modify_qp(qp.value(), rtr.value().attr, rtr.value().mask);
  const unsigned rtr_calls = fake.calls(verbs::VerbsCall::modify_qp) - before;
  RC_ASSERT(rtr_calls == (rtr ? 1u : 0u));
  if (mismatch) RC_ASSERT(VALUE_OR_FAIL(fake.qp(qp.value())).state == IBV_QPS_INIT);
  if (rtr_calls == 1 && VALUE_OR_FAIL(fake.qp(qp.value())).state == IBV_QPS_RTR &&
      ref::routed_by_gid(snap.value())) {
    // What the driver accepted routes within one family.
    const auto q = VALUE_OR_FAIL(fake.qp(qp.value()));
    RC_ASSERT(q.source_gid.has_value());
    RC_ASSERT(q.source_gid->is_ipv4_mapped() == peer.gid.is_ipv4_mapped());
  }
}

// One path to the RTR. For random tables, plans (literal
// sources included, so empty and foreign slots come up), peers (either family, zero now and
// then) and drivers, what `check` and `simulate` predict -- predict_rtr() on the plan -- is what
// the in-process fake's modify_qp returns for the attributes RtrBuilder built; a builder refusal
// is predicted as "refused" and never reaches modify_qp.
RC_GTEST_PROP(Prediction, prop_prediction_is_what_the_fakes_modify_qp_returns, ()) {
  const GidTable t = *rc::gen::oneOf(test::gen_family_table(), test::gen_realistic_table());
  const DriverModel driver = *rc::gen::element(DriverModel::linux_kernel(), DriverModel::apple_thunderbolt());
  fakes::FakeVerbs fake;
  RC_ASSERT(fake.add_port(t, driver).has_value());
  auto dev = fake.open_device(t.port().device);
  RC_ASSERT(dev.has_value());
  // The table `check` is given and the fake's hardware are one table (unlisted slots included).
  auto held = fake.table(t.port().device, t.port().port);
  RC_ASSERT(held.has_value());
  const GidTable& table = held.value();
  const Plan plan = gen_plan(table);
  const PeerInfo peer = *rc::gen::oneOf(test::gen_peer_info(), test::gen_peer_info_of_family(true),
                                        test::gen_peer_info_of_family(false));
  const QpKind kind = driver.uc_only ? QpKind::uc : *rc::gen::element(QpKind::uc, QpKind::rc);

  const RtrPrediction predicted = predict_rtr(table, plan, peer, driver, kind);

  auto qp = fake.create_qp(dev.value(), kind);
  RC_ASSERT(qp.has_value());
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = static_cast<std::uint8_t>(t.port().port);
  const int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  RC_ASSERT(fake.modify_qp(qp.value(), init, init_mask).has_value());
  const unsigned before = fake.calls(verbs::VerbsCall::modify_qp);

  // What a program does: build, and call modify_qp only with what was built.
  RtrBuilder builder(kind, table, plan);
  builder.remote(peer);
  if (kind == QpKind::rc) builder.max_dest_rd_atomic(1).min_rnr_timer(12);
  auto rtr = builder.build();
  RC_ASSERT(rtr.has_value() == predicted.reaches_driver());
  if (!rtr) {
    RC_TAG("refused by the builder");
    RC_ASSERT(rtr.error().code == predicted.refused->code);
    RC_ASSERT(fake.calls(verbs::VerbsCall::modify_qp) == before);
    RC_ASSERT(VALUE_OR_FAIL(fake.qp(qp.value())).state == IBV_QPS_INIT);
    return;
  }
  auto applied = fake.modify_qp(qp.value(), rtr.value().attr, rtr.value().mask);
  RC_TAG(std::string(to_string(predicted.verdict.outcome)));
  switch (predicted.verdict.outcome) {
    case RtrOutcome::error:
      RC_ASSERT(!applied);
      RC_ASSERT(applied.error().code.value() == predicted.verdict.err);
      break;
    case RtrOutcome::ok:
    case RtrOutcome::times_out:
    case RtrOutcome::unknown: {  // unknown: a slot the source did not list; the call itself passes
      RC_ASSERT(applied.has_value());
      const auto q = VALUE_OR_FAIL(fake.qp(qp.value()));
      RC_ASSERT(q.rtr.has_value());
      RC_ASSERT(q.rtr->outcome == predicted.verdict.outcome);
      break;
    }
  }
}

// For any table, index (wrapped ones too), advertised GID, peer and errno,
// diagnose() lists each cause once and never confirms what it rules out; and a zero peer GID on
// a GID-routed port is the confirmed cause of EINVAL, as the prediction names it.
RC_GTEST_PROP(Diagnose, prop_never_confirms_and_rules_out_the_same_cause, ()) {
  const GidTable t = *rc::gen::oneOf(test::gen_family_table(), test::gen_realistic_table());
  const Platform platform = *rc::gen::element(Platform::linux_kernel, Platform::darwin);
  const Errnos E = Errnos::of(platform);
  const int err =
      *rc::gen::element(E.einval, E.enodata, E.enodev, E.enetunreach, E.etimedout, E.ebusy, E.eopnotsupp);
  DiagnoseContext c;
  c.table = *rc::gen::weightedElement<bool>({{5, true}, {1, false}}) ? &t : nullptr;
  if (*rc::gen::weightedElement<bool>({{5, true}, {1, false}}))
    c.sgid_index =
        *rc::gen::oneOf(rc::gen::inRange<std::uint32_t>(0, 40), rc::gen::inRange<std::uint32_t>(0, 600));
  if (*rc::gen::arbitrary<bool>()) c.advertised = *test::gen_gid();
  const bool zero_peer = *rc::gen::weightedElement<bool>({{1, true}, {3, false}});
  if (zero_peer)
    c.peer_gid = Gid{};
  else if (*rc::gen::arbitrary<bool>())
    c.peer_gid = *test::gen_gid();
  if (*rc::gen::arbitrary<bool>()) c.peer_gid_type = *rc::gen::element(GidType::roce_v1, GidType::roce_v2);

  const Diagnosis d = diagnose(err, platform, c);
  RC_ASSERT(!d.causes.empty());
  for (std::size_t i = 0; i < d.causes.size(); ++i)
    for (std::size_t j = 0; j < d.causes.size(); ++j) {
      if (i == j) continue;
      RC_ASSERT(d.causes[i].id != d.causes[j].id);
      if (d.causes[i].likelihood == Likelihood::confirmed && d.causes[j].likelihood == Likelihood::ruled_out)
        RC_ASSERT(d.causes[i].summary != d.causes[j].summary);
    }
  if (zero_peer && err == E.einval && c.table && c.sgid_index &&
      t.port().link_layer.kind() != LinkLayer::Kind::infiniband) {
    RC_TAG("zero peer");
    const auto it = std::find_if(d.causes.begin(), d.causes.end(),
                                 [](const CandidateCause& x) { return x.id == "dgid_zero"; });
    RC_ASSERT(it != d.causes.end());
    RC_ASSERT(it->likelihood != Likelihood::ruled_out);
    // The source slot is resolved first (Linux's rdma_get_gid_attr before ib_resolve_eth_dmac):
    // the zero destination decides when the slot is in range and holds a GID.
    const std::uint32_t idx = *c.sgid_index & 0xffu;
    const GidEntry* e = t.find(idx);
    const bool source_resolves = (idx < t.length() || !t.port().gid_tbl_len) && e &&
                                 e->state != EntryState::empty &&
                                 !(e->state == EntryState::valid && e->gid.is_zero());
    if (source_resolves) {
      RC_TAG("zero peer, source resolves");
      RC_ASSERT(it->likelihood == Likelihood::confirmed);
      RC_ASSERT(it->summary.rfind("the destination GID is zero", 0) == 0u);
    }
  }
}

}  // namespace
}  // namespace gidpolicy
