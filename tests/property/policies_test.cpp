// Properties of the selection policies and profiles: agreement for every consistent
// profile, JACCL's disagreement exactly where it happens (with its minimal counterexample),
// JACCL legacy, ds4's explicit index, ValidatedExplicit against a reference predicate, FirstOf.
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/per_device.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>

#include "support/assert_ok.hpp"
#include "support/families.hpp"
#include "support/generators.hpp"
#include "support/policy_generators.hpp"
#include "support/rc_runner.hpp"
#include "support/reference.hpp"
#include "support/scenario_generators.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <iostream>

namespace gidpolicy {
namespace {

namespace ref = test::ref;

// ---- agreement ---------------------------------------------------------------------------

/// The agreement invariant, on one table: where the profile selects, the RTR built from its
/// plan routes from a slot holding exactly the GID advertised to the peer. Checked against the
/// table itself (ref::at), not against the library's own Agreement verdict, so that a policy
/// returning the wrong entry is caught even if check_agreement() were wrong too.
void check_agreement_on(const Profile& profile, const GidTable& table) {
  auto plan = profile.plan(table);
  if (!plan) {
    RC_TAG("selects nothing");
    return;
  }
  const Selection& sel = plan.value().selection;
  const Gid advertised = sel.entry.gid;
  // A consistent profile routes from the entry it advertised, by construction.
  RC_ASSERT(plan.value().sgid_index == sel.entry.index);

  const QpKind kind = *rc::gen::element(QpKind::uc, QpKind::rc);
  const PeerInfo peer = *test::gen_peer_info_of_family(advertised.is_ipv4_mapped());
  RtrBuilder b(kind, table, plan.value());
  b.remote(peer);
  if (kind == QpKind::rc) b.max_dest_rd_atomic(1).min_rnr_timer(12);
  auto rtr = b.build();
  const std::uint32_t sgid = rtr ? rtr.value().sgid_index() : plan.value().sgid_index;
  const GidEntry* routed = ref::at(table, sgid);

  if (ref::holds_gid(&sel.entry)) {
    RC_TAG("selected a GID");
    // (Pointers stay out of RC_ASSERT: rapidcheck prints a failing pointer by dereferencing it.)
    const bool routed_listed = routed != nullptr;
    RC_ASSERT(routed_listed);
    RC_ASSERT(routed->state == EntryState::valid);
    RC_ASSERT(ref::raw(routed->gid) == ref::raw(advertised));
    RC_ASSERT(plan.value().agrees());
    if (rtr) RC_ASSERT(rtr.value().agrees());
  } else {
    // Only the unchecked reproductions advertise an empty slot's zeros, and then the library
    // says it does not agree (an empty slot holds no GID to route from) instead of routing.
    RC_TAG("selected an empty slot (unchecked reproduction)");
    // The policy says so itself (SelectionPolicy::picks_unchecked(), from its own type and
    // options), not a list of policy types kept here.
    RC_ASSERT(profile.policy.picks_unchecked());
    RC_ASSERT(!plan.value().agrees());
    if (rtr) RC_ASSERT(!rtr.value().agrees());
  }
}

RC_GTEST_PROP(Agreement, prop_consistent_profiles_route_from_the_advertised_gid, ()) {
  const Profile profile = *test::gen_consistent_profile();
  const GidTable table = *test::gen_realistic_table();
  check_agreement_on(profile, table);
}

RC_GTEST_PROP(Agreement, prop_named_profiles_route_from_the_advertised_gid, ()) {
  // The named behaviours other than jaccl() (the one with a literal source index).
  const Profile profile = *rc::gen::element(profiles::jaccl_legacy(), profiles::jaccl_fixed(),
                                            profiles::ds4(), profiles::ds4_linux(), profiles::automatic());
  check_agreement_on(profile, *test::gen_realistic_table());
}

/// A deliberately broken policy: it advertises the GID Ranked chose but reports the slot next
/// to it as the entry (sgid from the wrong entry), the way JACCL's literal index breaks.
struct SgidFromWrongEntry {
  [[nodiscard]] result<Selection> select(const GidTable& table, SelectOptions run = {}) const {
    auto r = Ranked{}.select(table, run);
    if (r) r.value().entry.index ^= 1u;
    return r;
  }
  [[nodiscard]] std::string spec() const { return "broken"; }
  [[nodiscard]] std::vector<PeerAddress> peers() const { return {}; }
  [[nodiscard]] bool picks_unchecked() const noexcept { return false; }
  friend bool operator==(const SgidFromWrongEntry&, const SgidFromWrongEntry&) = default;
};

TEST(Agreement, property_catches_a_policy_that_routes_from_the_wrong_entry) {
  const Profile broken{SgidFromWrongEntry{}, SourceIndex::selected()};
  const test::PropertyRun run = test::run_property(
      "agreement with a broken policy", [&] { check_agreement_on(broken, *test::gen_realistic_table()); });
  ASSERT_TRUE(run.failure.has_value()) << "the agreement property passed on a broken policy:\n" << run.report;
  std::cout << "[expected failure, shrunk]\n" << run.report << "\n";
  // And the same property passes on the policy it wraps, with the same runner.
  const Profile good{Ranked{}, SourceIndex::selected()};
  const test::PropertyRun ok = test::run_property(
      "agreement with Ranked", [&] { check_agreement_on(good, *test::gen_realistic_table()); });
  EXPECT_FALSE(ok.failure.has_value()) << ok.report;
}

// ---- JACCL -------------------------------------------------------------------------------

// The exact condition, and how it refines the wording: ref::jaccl_agrees().
RC_GTEST_PROP(Jaccl, prop_jaccl_agrees_iff_index_1_holds_the_first_mapped_gid, ()) {
  const GidTable t = *test::gen_realistic_table();
  auto plan = profiles::jaccl().plan(t);
  const GidEntry* m = ref::first_mapped(t);
  // It selects iff a mapped GID exists, and then it is the first one (if that one fits a uint8_t).
  RC_ASSERT(plan.has_value() == (m != nullptr && m->index <= 255));
  if (!plan) return;
  RC_ASSERT(plan.value().selection.entry.index == m->index);
  RC_ASSERT(plan.value().sgid_index == 1);
  RC_ASSERT(plan.value().agrees() == ref::jaccl_agrees(t));
  // The wording, on tables where index 0 and 1 do not hold the same GID.
  const GidEntry* zero = ref::at(t, 0);
  const GidEntry* one = ref::at(t, 1);
  const bool twins = zero && one && zero->state == EntryState::valid && one->state == EntryState::valid &&
                     zero->gid == one->gid;
  if (!twins) RC_ASSERT(plan.value().agrees() == (m->index == 1));
  RC_CLASSIFY(twins && plan.value().agrees(), "agrees through the v2 twin at 1");
  RC_CLASSIFY(m->index == 1, "mapped at 1");
  RC_CLASSIFY(m->index != 1, "mapped elsewhere");
}

/// A false claim on purpose: "jaccl() agrees wherever it selects". Its shrunk counterexample
/// must be the minimal disagreement.
void jaccl_always_agrees(const GidTable& t, GidTable* last_failure) {
  auto plan = profiles::jaccl().plan(t);
  if (!plan) return;
  if (!plan.value().agrees()) *last_failure = t;  // rapidcheck keeps the last failing shrink
  RC_ASSERT(plan.value().agrees());
}

/// Mapped GIDs in `t` (index order).
std::vector<GidEntry> mapped_entries(const GidTable& t) {
  std::vector<GidEntry> out;
  for (const auto& e : t)
    if (e.state == EntryState::valid && ref::mapped(ref::raw(e.gid))) out.push_back(e);
  return out;
}

/// What makes a disagreement counterexample minimal: the first mapped GID is the only GID it
/// needs, and moving it to index 1 (or removing it) makes the failure go away.
void expect_minimal_jaccl_counterexample(const GidTable& shrunk) {
  const auto mapped = mapped_entries(shrunk);
  ASSERT_EQ(mapped.size(), 1u) << test::show_table(shrunk);
  std::vector<GidEntry> others;
  for (const auto& e : shrunk)
    if (e.index != mapped[0].index) others.push_back(e);
  // Removed: nothing to advertise, jaccl() selects nothing.
  EXPECT_FALSE(profiles::jaccl()
                   .plan(VALUE_OR_FAIL(GidTable::make(shrunk.port(), others, shrunk.holes())))
                   .has_value());
  // At index 1 instead: it agrees.
  std::vector<GidEntry> moved;
  for (const auto& e : others)
    if (e.index != 1) moved.push_back(e);
  GidEntry at1 = mapped[0];
  at1.index = 1;
  moved.push_back(at1);
  PortInfo port = shrunk.port();
  if (port.gid_tbl_len && *port.gid_tbl_len < 2) port.gid_tbl_len = 2;
  auto fixed = profiles::jaccl().plan(VALUE_OR_FAIL(GidTable::make(port, moved, shrunk.holes())));
  ASSERT_TRUE(fixed.has_value());
  EXPECT_TRUE(fixed.value().agrees()) << fixed.value().agreement.explanation;
}

TEST(Jaccl, shrunk_counterexample_on_arbitrary_tables_is_the_mapped_gid_at_index_0) {
  GidTable shrunk;
  const test::PropertyRun run = test::run_property("jaccl always agrees (arbitrary tables)", [&] {
    jaccl_always_agrees(*test::gen_sparse_table(), &shrunk);
  });
  ASSERT_TRUE(run.failure.has_value()) << run.report;
  std::cout << "[expected failure, shrunk]\n" << run.report << "\n";
  // Shrunk all the way: one entry, the IPv4-mapped GID at index 0 (routed from index 1, which
  // holds nothing), with the generator's smallest address.
  ASSERT_EQ(shrunk.size(), 1u) << test::show_table(shrunk);
  EXPECT_EQ(shrunk.entries()[0].index, 0u) << test::show_table(shrunk);
  EXPECT_EQ(shrunk.entries()[0].gid, Gid::ipv4_mapped(0x0a000001u)) << test::show_table(shrunk);
  expect_minimal_jaccl_counterexample(shrunk);
  // The counterexample rapidcheck printed is that table.
  EXPECT_NE(run.report.find(test::show_table(shrunk)), std::string::npos) << run.report;
}

TEST(Jaccl, shrunk_counterexample_on_thunderbolt_tables_is_the_mapped_gid_at_index_2) {
  GidTable shrunk;
  const test::PropertyRun run = test::run_property("jaccl always agrees (Thunderbolt tables)", [&] {
    jaccl_always_agrees(*test::gen_thunderbolt_table(), &shrunk);
  });
  ASSERT_TRUE(run.failure.has_value()) << run.report;
  std::cout << "[expected failure, shrunk]\n" << run.report << "\n";
  // Minimal within the family (fe80 always at 0): MLX PR 3389's Mac mini, the mapped GID one
  // slot too far, at index 2, index 1 an empty slot, nothing else.
  expect_minimal_jaccl_counterexample(shrunk);
  const auto mapped = mapped_entries(shrunk);
  ASSERT_EQ(mapped.size(), 1u) << test::show_table(shrunk);
  EXPECT_EQ(mapped[0].index, 2u) << test::show_table(shrunk);
  EXPECT_EQ(mapped[0].gid, Gid::ipv4_mapped(0x0a000001u)) << test::show_table(shrunk);
  ASSERT_EQ(shrunk.size(), 3u) << test::show_table(shrunk);
  EXPECT_TRUE(shrunk.entries()[0].gid.is_link_local()) << test::show_table(shrunk);
  EXPECT_EQ(shrunk.entries()[1].state, EntryState::empty) << test::show_table(shrunk);
  EXPECT_NE(run.report.find(test::show_table(shrunk)), std::string::npos) << run.report;
}

RC_GTEST_PROP(Jaccl, prop_jaccl_legacy_routes_from_index_1_and_advertises_whatever_it_holds, ()) {
  const GidTable t = *test::gen_realistic_table();
  auto plan = profiles::jaccl_legacy().plan(t);
  const GidEntry* one = ref::at(t, 1);
  const bool readable = ref::length(t) > 1 && !(one == nullptr && t.holes() == Holes::not_shown) &&
                        !(one != nullptr && one->state == EntryState::unreadable);
  RC_ASSERT(plan.has_value() == readable);
  if (!plan) return;
  // Always consistent in the index sense: it advertises slot 1 and routes from slot 1.
  RC_ASSERT(plan.value().selection.entry.index == 1u);
  RC_ASSERT(plan.value().sgid_index == 1);
  const Gid advertised = plan.value().selection.entry.gid;
  const bool slot_holds_gid = ref::holds_gid(one);
  // What it advertises is whatever slot 1 holds, zeros for an empty slot...
  RC_ASSERT(ref::raw(advertised) ==
            (one && one->state == EntryState::valid ? ref::raw(one->gid) : ref::Raw{}));
  // ... so it advertises a non-mapped GID exactly when slot 1 is not an IPv4-mapped one.
  RC_ASSERT(ref::mapped(ref::raw(advertised)) == (slot_holds_gid && ref::mapped(ref::raw(one->gid))));
  // It agrees whenever the slot holds a GID; an empty slot's zeros are never routable, and the
  // library says so rather than calling it agreement.
  RC_ASSERT(plan.value().agrees() == slot_holds_gid);
  RC_CLASSIFY(!ref::mapped(ref::raw(advertised)), "advertises a non-mapped GID");
}

// ---- ds4 ---------------------------------------------------------------------------------

/// An index worth asking for on `t`: one of its listed entries, anything near its length, or
/// gen_index()'s spread (above 255, near 2^32).
rc::Gen<std::uint32_t> gen_index_for(const GidTable& t) {
  std::vector<std::uint32_t> listed;
  for (const auto& e : t) listed.push_back(e.index);
  const std::uint32_t len = ref::length(t);
  auto near = rc::gen::inRange<std::uint32_t>(0, len + 3);
  if (listed.empty()) return rc::gen::oneOf(near, test::gen_index());
  return rc::gen::oneOf(rc::gen::elementOf(listed), near, test::gen_index());
}

rc::Gen<GidTable> gen_ds4_table() {
  // Wide tables reach gid_tbl_len 1024 (indices above 255 exist); realistic ones are the rest.
  return rc::gen::oneOf(test::gen_wide_table(), test::gen_realistic_table());
}

RC_GTEST_PROP(Ds4, prop_ds4_explicit_index_agrees_iff_readable_below_256_and_reports_every_wrap, ()) {
  const GidTable t = *gen_ds4_table();
  const std::uint32_t i = *gen_index_for(t);
  auto plan = profiles::ds4(i).plan(t);
  const std::uint32_t len = ref::length(t);
  const GidEntry* e = ref::at(t, i);
  if (i >= len) {
    RC_ASSERT(!plan);
    RC_ASSERT(plan.error() == errc::index_out_of_range);
    return;
  }
  if (i > 255) {
    // ds4 itself reads the slot and then routes from (uint8_t)i: never silent here.
    RC_TAG("wrap reported");
    RC_ASSERT(!plan);
    RC_ASSERT(plan.error() == errc::index_exceeds_uint8);
    RC_ASSERT(plan.error().detail.find("route from index " + std::to_string(i & 0xffu)) != std::string::npos);
    return;
  }
  const bool unreadable =
      (e == nullptr && t.holes() == Holes::not_shown) || (e != nullptr && e->state == EntryState::unreadable);
  RC_ASSERT(plan.has_value() == !unreadable);
  if (!plan) {
    RC_ASSERT(plan.error() == (e ? errc::entry_unreadable : errc::entry_not_shown));
    return;
  }
  // Readable and below 256: accepted unchecked, routed from itself. It agrees exactly when the
  // slot holds a GID (ds4 also accepts an empty slot's zeros, which nothing can route from).
  RC_ASSERT(plan.value().selection.entry.index == i);
  RC_ASSERT(plan.value().sgid_index == i);
  RC_ASSERT(plan.value().agrees() == ref::holds_gid(e));
  RC_CLASSIFY(!ref::holds_gid(e), "accepted an empty or zero slot");
}

RC_GTEST_PROP(Ds4, prop_ds4_scan_takes_the_first_mapped_gid_and_reports_a_wrap, ()) {
  const GidTable t = *gen_ds4_table();
  auto s = profiles::ds4().plan(t);
  const GidEntry* m = ref::first_mapped(t);
  if (m == nullptr) {
    RC_ASSERT(!s);
    RC_ASSERT(s.error() == errc::no_ipv4_mapped_gid);
  } else if (m->index > 255) {
    RC_TAG("first mapped GID above 255");
    RC_ASSERT(!s);
    RC_ASSERT(s.error() == errc::index_exceeds_uint8);
  } else {
    RC_ASSERT(s.has_value());
    RC_ASSERT(s.value().selection.entry == *m);
    RC_ASSERT(s.value().agrees());  // unlike JACCL, ds4 routes from where it found it
  }
}

/// ds4's tp_rdma_linux_gid restated from docs/facts.md#ds4-linux.
std::optional<GidEntry> reference_ds4_linux(const GidTable& t, const Ds4Linux& p) {
  const auto usable_v2 = [](const GidEntry* e) {
    return e != nullptr && e->state == EntryState::valid && e->type == GidType::roce_v2 &&
           !ref::zero(ref::raw(e->gid));
  };
  if (p.index) {
    const std::int64_t i = *p.index;
    if (i < 0 || i >= std::int64_t{ref::length(t)} || i > 255) return std::nullopt;
    const GidEntry* e = ref::at(t, static_cast<std::uint32_t>(i));
    return usable_v2(e) ? std::optional<GidEntry>(*e) : std::nullopt;
  }
  std::optional<GidEntry> best;
  int best_score = 0;
  const std::uint32_t end = std::min<std::uint32_t>(ref::length(t), 256);
  for (std::uint32_t i = 0; i < end; ++i) {
    const GidEntry* e = ref::at(t, i);
    if (!usable_v2(e)) continue;
    const int score = p.local && ref::raw(*p.local) == ref::raw(e->gid) ? 2 : 1;
    if (score > best_score) {
      best = *e;
      best_score = score;
    }
  }
  return best;
}

RC_GTEST_PROP(Ds4, prop_ds4_linux_equals_the_reference, ()) {
  const GidTable t =
      *rc::gen::oneOf(test::gen_mlx5_table(), test::gen_realistic_table(), test::gen_sparse_table());
  Ds4Linux p = *test::gen_ds4_linux();
  // local= often an address the table holds (ds4's own test: the control socket's address).
  std::vector<Gid> held;
  for (const auto& e : t)
    if (e.usable()) held.push_back(e.gid);
  if (!held.empty() && *rc::gen::arbitrary<bool>()) p.local = *rc::gen::elementOf(held);
  if (p.index && *rc::gen::arbitrary<bool>())
    p.index = static_cast<std::int32_t>(*gen_index_for(t) & 0x7fffffffu);
  auto s = p.select(t);
  const auto expected = reference_ds4_linux(t, p);
  RC_ASSERT(s.has_value() == expected.has_value());
  if (expected) RC_ASSERT(s.value().entry == *expected);
  RC_CLASSIFY(p.index.has_value(), "forced index");
}

// ---- ValidatedExplicit -------------------------------------------------------------------

/// ValidatedExplicit restated from its header: every check evaluated, the first failing one
/// in the documented order reported.
std::optional<errc> reference_validated(const GidTable& t, const ValidatedExplicit& p) {
  const GidEntry* e = ref::at(t, p.index);
  const bool listed = e != nullptr;
  const bool valid = listed && e->state == EntryState::valid;
  const ref::Raw b = valid ? ref::raw(e->gid) : ref::Raw{};
  const std::pair<errc, bool> checks[] = {
      {errc::index_out_of_range, p.index >= ref::length(t)},
      {errc::index_exceeds_uint8, p.index >= 256},
      {errc::entry_not_shown, !listed && t.holes() == Holes::not_shown},
      {errc::entry_empty, !listed || e->state == EntryState::empty},
      {errc::entry_unreadable, listed && e->state == EntryState::unreadable},
      {errc::entry_zero, valid && ref::zero(b)},
      {errc::wrong_gid_type, valid && !ref::type_ok(p.type, e->type)},
      {errc::wrong_family, valid && !ref::family_ok(p.family, b)},
      {errc::link_local_rejected,
       valid && ref::link_local(b) && !p.allow_link_local && ref::routed_by_gid(t)},
  };
  for (const auto& [code, failed] : checks)
    if (failed) return code;
  return std::nullopt;
}

RC_GTEST_PROP(Validated, prop_validated_explicit_never_returns_an_unusable_entry, ()) {
  const GidTable t = *gen_ds4_table();
  ValidatedExplicit p = *test::gen_validated_explicit();
  p.index = *gen_index_for(t);
  p.family = *rc::gen::weightedElement<FamilyFilter>(
      {{3, FamilyFilter::ipv4}, {1, FamilyFilter::any}, {1, FamilyFilter::ipv6}});
  auto s = p.select(t);
  if (!s) return;
  const GidEntry& e = s.value().entry;
  const ref::Raw b = ref::raw(e.gid);
  RC_ASSERT(e.index == p.index);
  RC_ASSERT(e.state == EntryState::valid);
  RC_ASSERT(!ref::zero(b));
  RC_ASSERT(e.index < ref::length(t));
  RC_ASSERT(e.index <= 255u);
  if (p.family == FamilyFilter::ipv4) RC_ASSERT(ref::mapped(b));  // the default family
  RC_ASSERT(ref::type_ok(p.type, e.type));
  if (!p.allow_link_local && ref::routed_by_gid(t)) RC_ASSERT(!ref::link_local(b));
  // And the default options specifically: only a non-zero IPv4-mapped GID.
  auto d = ValidatedExplicit{.index = p.index}.select(t);
  if (d) RC_ASSERT(ref::mapped(ref::raw(d.value().entry.gid)));
}

RC_GTEST_PROP(Validated, prop_validated_explicit_rejects_exactly_what_the_reference_rejects, ()) {
  const GidTable t = *gen_ds4_table();
  ValidatedExplicit p = *test::gen_validated_explicit();
  p.index = *gen_index_for(t);
  auto s = p.select(t);
  const std::optional<errc> expected = reference_validated(t, p);
  RC_ASSERT(s.has_value() == !expected.has_value());
  if (expected) {
    RC_ASSERT(s.error() == *expected);
    // Every refusal names the index it refused.
    RC_ASSERT(s.error().detail.find(std::to_string(p.index)) != std::string::npos);
    RC_TAG(std::string(s.error().code.message()));
  } else {
    RC_ASSERT(s.value().entry == *ref::at(t, p.index));
  }
}

// ---- FirstOf -----------------------------------------------------------------------------

// Every policy's untraced path (skip loops, early stops, the Selection built in place) decides
// exactly what its traced path decides: the same entry, or the same error with the same detail.
RC_GTEST_PROP(Policies, prop_untraced_select_decides_what_the_traced_select_decides, ()) {
  const AnyPolicy p = *test::gen_policy();
  const GidTable t = *test::gen_realistic_table();
  const auto fast = p.select(t);
  const auto traced = p.select(t, {.trace = true});
  RC_ASSERT(fast.has_value() == traced.has_value());
  if (fast) {
    RC_ASSERT(fast.value().entry == traced.value().entry);
    RC_ASSERT(fast.value().trace.attempts.empty());
    RC_ASSERT(!traced.value().trace.attempts.empty());
  } else {
    RC_ASSERT(fast.error().code == traced.error().code);
    RC_ASSERT(fast.error().detail == traced.error().detail);
    const bool both_traced = fast.error().trace != nullptr && traced.error().trace != nullptr;
    RC_ASSERT(both_traced);
    RC_ASSERT(*fast.error().trace == *traced.error().trace);
  }
}

RC_GTEST_PROP(FirstOf, prop_first_of_returns_the_first_succeeding_alternative, ()) {
  const auto alternatives = *test::gen_sized<std::vector<AnyPolicy>>(1, 4, test::gen_policy(1));
  const GidTable t = *test::gen_realistic_table();
  const FirstOf f{alternatives};
  auto got = f.select(t, {.trace = true});
  std::optional<std::size_t> winner;
  for (std::size_t k = 0; k < alternatives.size() && !winner; ++k)
    if (alternatives[k].select(t)) winner = k;
  RC_ASSERT(got.has_value() == winner.has_value());
  if (!winner) {
    RC_ASSERT(got.error() == errc::no_candidate);
    const bool has_trace = got.error().trace != nullptr;
    RC_ASSERT(has_trace);
    RC_ASSERT(got.error().trace->attempts.size() >= alternatives.size());
    return;
  }
  RC_ASSERT(got.value().entry == alternatives[*winner].select(t).value().entry);
  // The trace keeps every attempt up to the winner, which is the last one.
  RC_ASSERT(!got.value().trace.attempts.empty());
  RC_ASSERT(got.value().trace.attempts.back().error.empty());
  RC_CLASSIFY(*winner > 0, "a later alternative won");
}

}  // namespace
}  // namespace gidpolicy
