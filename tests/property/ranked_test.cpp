// Properties of Ranked ("auto"), the recommended policy: what it never returns, the
// order it prefers, an oracle restated from the documented order, determinism and
// independence from how the table was listed.
#include <gidpolicy/policies/ranked.hpp>

#include "support/assert_ok.hpp"
#include "support/families.hpp"
#include "support/generators.hpp"
#include "support/policy_generators.hpp"
#include "support/reference.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace gidpolicy {
namespace {

namespace ref = test::ref;

/// Options worth testing on `t`: random ones, with `local=` often an address the table holds.
rc::Gen<RankedOptions> gen_options_for(const GidTable& t) {
  return rc::gen::exec([t] {
    RankedOptions o = *test::gen_ranked_options();
    std::vector<Gid> held;
    for (const auto& e : t)
      if (e.usable()) held.push_back(e.gid);
    if (!held.empty() && *rc::gen::arbitrary<bool>()) {
      o.local = *rc::gen::elementOf(held);
      if (*rc::gen::arbitrary<bool>()) o.require_local = false;
    }
    if (!o.local) o.require_local = false;
    return o;
  });
}

RC_GTEST_PROP(Ranked, prop_ranked_by_default_never_returns_link_local_empty_or_zero, ()) {
  const GidTable t = *test::gen_realistic_table();
  RankedOptions o = *rc::gen::oneOf(rc::gen::just(RankedOptions{}), gen_options_for(t));
  o.allow_link_local = false;
  auto s = Ranked{o}.select(t);
  if (!s) {
    RC_ASSERT(s.error() == errc::no_candidate);
    return;
  }
  const GidEntry& e = s.value().entry;
  const ref::Raw b = ref::raw(e.gid);
  RC_ASSERT(e.state == EntryState::valid);
  RC_ASSERT(!ref::zero(b));
  RC_ASSERT(!(ref::link_local(b) && ref::routed_by_gid(t)));
  RC_ASSERT(e.index <= 255u);
  RC_ASSERT(e.index < ref::length(t));
  const bool listed = ref::at(t, e.index) != nullptr;
  RC_ASSERT(listed);
  RC_ASSERT(*ref::at(t, e.index) == e);
}

RC_GTEST_PROP(Ranked, prop_ranked_never_picks_v1_when_a_v2_of_the_same_family_qualifies, ()) {
  // Without local= (which ranks above the RoCE version by design: rdma_cm's rule) and among
  // candidates of the top tier (Thunderbolt index 0 and link-local GIDs rank last whatever
  // their type), a RoCE v1 entry is never chosen over a qualifying RoCE v2 one of its family.
  const GidTable t =
      *rc::gen::oneOf(test::gen_mlx5_table(), test::gen_other_table(), test::gen_realistic_table());
  RankedOptions o = *rc::gen::oneOf(rc::gen::just(RankedOptions{}), gen_options_for(t));
  o.local.reset();
  o.require_local = false;
  auto s = Ranked{o}.select(t);
  if (!s) return;
  const GidEntry& chosen = s.value().entry;
  RC_CLASSIFY(chosen.type == GidType::roce_v2, "chose v2");
  if (chosen.type != GidType::roce_v1) return;
  const bool chosen_mapped = ref::mapped(ref::raw(chosen.gid));
  for (const GidEntry& e : t.entries()) {
    if (e.type != GidType::roce_v2 || !ref::ranked_candidate(t, e, o)) continue;
    const auto key = ref::ranked_key(t, e, o);
    if (std::get<0>(key) || std::get<1>(key)) continue;  // bottom tiers
    RC_ASSERT(ref::mapped(ref::raw(e.gid)) != chosen_mapped);
  }
}

RC_GTEST_PROP(Ranked, prop_ranked_always_picks_the_exact_local_address_when_present, ()) {
  const GidTable t = *test::gen_realistic_table();
  // Random filters leave no candidate more often than not: half the cases use none.
  RankedOptions o = *rc::gen::oneOf(rc::gen::just(RankedOptions{}), gen_options_for(t));
  // local= one of the table's top-tier candidates (not Thunderbolt index 0, not link-local):
  // those are the only ranks above the local address.
  RankedOptions without_local = o;
  without_local.local.reset();
  without_local.require_local = false;
  std::vector<Gid> eligible;
  for (const auto& e : t.entries()) {
    if (!ref::ranked_candidate(t, e, without_local)) continue;
    const auto key = ref::ranked_key(t, e, o);
    if (!std::get<0>(key) && !std::get<1>(key)) eligible.push_back(e.gid);
  }
  RC_PRE(!eligible.empty());
  o.local = *rc::gen::elementOf(eligible);
  auto s = Ranked{o}.select(t);
  RC_ASSERT(s.has_value());
  RC_ASSERT(s.value().entry.gid == *o.local);
}

RC_GTEST_PROP(Ranked, prop_ranked_equals_the_naive_reference_ranking, ()) {
  const GidTable t = *test::gen_realistic_table();
  const RankedOptions o = *rc::gen::oneOf(rc::gen::just(RankedOptions{}), gen_options_for(t));
  auto s = Ranked{o}.select(t);
  const auto expected = ref::ranked(t, o);
  RC_ASSERT(s.has_value() == expected.has_value());
  if (!expected) {
    RC_ASSERT(s.error() == errc::no_candidate);
    RC_TAG("no candidate");
    return;
  }
  RC_ASSERT(s.value().entry == *expected);
}

RC_GTEST_PROP(Ranked, prop_ranked_is_deterministic_and_independent_of_entry_order, ()) {
  const GidTable t = *test::gen_realistic_table();
  const RankedOptions o = *rc::gen::oneOf(rc::gen::just(RankedOptions{}), gen_options_for(t));
  // The same entries handed over in another order (a reader, a merge of sources...).
  std::vector<GidEntry> shuffled(t.begin(), t.end());
  std::mt19937 rng(*rc::gen::arbitrary<std::uint32_t>());
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  auto t2 = GidTable::make(t.port(), shuffled, t.holes());
  RC_ASSERT(t2.has_value());
  const Ranked p{o};
  auto a = p.select(t);
  auto b = p.select(t2.value());
  auto c = p.select(t, {.trace = true});  // tracing does not change the choice
  RC_ASSERT(a.has_value() == b.has_value());
  RC_ASSERT(a.has_value() == c.has_value());
  if (!a) return;
  RC_ASSERT(a.value().entry == b.value().entry);
  RC_ASSERT(a.value().entry == c.value().entry);
  RC_ASSERT(a.value().entry == VALUE_OR_FAIL(p.select(t)).entry);
}

RC_GTEST_PROP(Ranked, prop_ranked_choice_survives_removing_other_entries, ()) {
  // The choice is the best of the candidates: taking away any other entry cannot change it.
  const GidTable t = *test::gen_realistic_table();
  const RankedOptions o = *rc::gen::oneOf(rc::gen::just(RankedOptions{}), gen_options_for(t));
  auto s = Ranked{o}.select(t);
  RC_PRE(s.has_value());
  std::vector<GidEntry> rest;
  for (const auto& e : t)
    if (e.index == s.value().entry.index || *rc::gen::arbitrary<bool>()) rest.push_back(e);
  PortInfo port = t.port();
  if (!port.gid_tbl_len) port.gid_tbl_len = t.length();  // keep the same bound
  auto smaller = Ranked{o}.select(VALUE_OR_FAIL(GidTable::make(port, rest, t.holes())));
  RC_ASSERT(smaller.has_value());
  RC_ASSERT(smaller.value().entry == s.value().entry);
}

}  // namespace
}  // namespace gidpolicy
