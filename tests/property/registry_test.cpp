// The property suite generates every built-in policy: each registry row with a factory through
// its generic generator (gen_row_policy: random values of its declared options, parsed through
// its factory) unless hand-written generators cover the types it makes, so a new row needs no
// generator of its own; what the rows cannot make (combinators) needs a hand-written one.
#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/profiles.hpp>

#include "support/policy_generators.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <typeindex>
#include <vector>

namespace gidpolicy {
namespace {

// Fixed seeds: these tests count what a generator makes, so they must not depend on RC_PARAMS.
constexpr std::uint64_t kDraws = 3000;

template <class... P>
std::vector<std::type_index> type_list(PolicyTypes<P...> /*types*/) {
  return {typeid(P)...};
}

result<AnyPolicy> parse_row(const BuiltinSpec& row, const std::string& spec) {
  if (row.kind != SpecKind::profile) return parse_policy(spec);
  auto profile = parse_profile(spec);
  if (!profile) return fail(profile.error());
  return std::move(profile).value().policy;
}

std::set<std::type_index> types_of_examples(const BuiltinSpec& row) {
  std::set<std::type_index> types;
  for (std::string_view ex : row.examples) types.insert(parse_row(row, std::string(ex)).value().type());
  return types;
}

TEST(RegistryGenerators, GenPolicyMakesEveryTypeOfBuiltinPolicies) {
  std::set<std::type_index> made;
  const rc::Gen<AnyPolicy> gen = test::gen_policy(1);
  for (std::uint64_t k = 0; k < kDraws; ++k) made.insert(gen(rc::Random(k + 1), 50).value().type());
  for (const std::type_index& t : type_list(BuiltinPolicies{}))
    EXPECT_TRUE(made.contains(t)) << t.name()
                                  << ": in BuiltinPolicies, never generated (a combinator needs a "
                                     "PolicyGenerator specialization, tests/support/policy_generators.hpp)";
}

// Each row's generic generator makes every type the row's examples make, with options drawn
// beyond the examples (more distinct specs than the row has examples), and only values whose
// spec parses back to them.
TEST(RegistryGenerators, EveryRowsGenericGeneratorMakesItsTypesWithRandomOptions) {
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    if (row.factory == nullptr) continue;
    SCOPED_TRACE(std::string(row.name));
    const rc::Gen<AnyPolicy> gen = test::gen_row_policy(row);
    std::set<std::type_index> made;
    std::set<std::string> specs;
    for (std::uint64_t k = 0; k < 500; ++k) {
      const AnyPolicy p = gen(rc::Random(k + 1), 50).value();
      made.insert(p.type());
      specs.insert(p.spec());
      auto back = parse_row(row, p.spec());
      ASSERT_TRUE(back.has_value()) << p.spec() << ": " << back.error().what();
      EXPECT_TRUE(back.value() == p) << p.spec();
    }
    EXPECT_EQ(made, types_of_examples(row));
    if (!row.options.empty()) {
      EXPECT_GT(specs.size(), row.examples.size() + 10);
    }
  }
}

// Every option gets values: its form is one the generic generator knows, or an example spec
// of the row gives it one.
TEST(RegistryGenerators, EveryOptionHasValuesToGenerate) {
  for (const BuiltinSpec& row : kBuiltinSpecs)
    for (const SpecOptionInfo& o : row.options) {
      if (test::known_option_form(o.value)) continue;
      bool exemplified = false;
      for (std::string_view ex : row.examples)
        exemplified = exemplified || ex.find(std::string(o.key) + "=") != std::string_view::npos;
      EXPECT_TRUE(exemplified)
          << row.name << ": option " << o.key << " has the form '" << o.value
          << "', which the generic generator does not know, and no example gives it a value";
    }
}

RC_GTEST_PROP(RegistryGenerators, prop_row_policies_round_trip_through_their_spec, ()) {
  std::vector<const BuiltinSpec*> rows;
  for (const BuiltinSpec& row : kBuiltinSpecs)
    if (row.factory != nullptr) rows.push_back(&row);
  const BuiltinSpec& row = **rc::gen::elementOf(rows);
  const AnyPolicy p = *test::gen_row_policy(row);
  auto back = parse_row(row, p.spec());
  RC_ASSERT(back.has_value());
  const bool same = back.value() == p;
  RC_ASSERT(same);
}

}  // namespace
}  // namespace gidpolicy
