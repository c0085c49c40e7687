// The registry of built-in specs (policies/registry.hpp), tested row by row: whatever row is
// added, these run on its examples. Round trip, traced and untraced selection agreeing, the
// parser's hints naming every row and option, and the row list and the BuiltinPolicies type
// list covering each other. (The allocation-free untraced path is policies_allocation_test.cpp,
// which owns the counting operator new; the docs check is policies_registry_docs_test.cpp.)
#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/profiles.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <typeindex>

namespace gidpolicy {
namespace {

/// Every row's every example, as (row, example) pairs, for loops that name what failed.
std::vector<std::pair<const BuiltinSpec*, std::string_view>> all_examples() {
  std::vector<std::pair<const BuiltinSpec*, std::string_view>> out;
  for (const BuiltinSpec& row : kBuiltinSpecs)
    for (std::string_view ex : row.examples) out.emplace_back(&row, ex);
  return out;
}

/// What an example means as a profile (every row's examples parse as one).
Profile profile_of(std::string_view spec) {
  auto p = parse_profile(spec);
  EXPECT_TRUE(p) << spec << ": " << (p ? "" : p.error().what());
  return p ? p.value() : Profile{};
}

TEST(Registry, EveryRowIsComplete) {
  std::set<std::string_view> names;
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    SCOPED_TRACE(std::string(row.name));
    EXPECT_TRUE(names.insert(row.name).second) << "a name is in two rows";
    for (std::string_view alias : row.aliases) EXPECT_TRUE(names.insert(alias).second) << alias;
    EXPECT_FALSE(row.grammar.empty());
    EXPECT_TRUE(row.grammar.starts_with(row.name)) << row.grammar;
    EXPECT_FALSE(row.summary.empty());
    EXPECT_FALSE(row.examples.empty());
    EXPECT_EQ(row.factory == nullptr, row.kind == SpecKind::combinator);
    EXPECT_EQ(row.kind == SpecKind::profile, row.literal_source.has_value());
    if (row.kind == SpecKind::profile) {
      const BuiltinSpec* alone = find_builtin_spec(row.policy_alone);
      ASSERT_NE(alone, nullptr) << row.policy_alone;
      EXPECT_EQ(alone->kind, SpecKind::policy);
    }
    std::set<std::string_view> keys;
    for (const SpecOptionInfo& o : row.options) EXPECT_TRUE(keys.insert(o.key).second) << o.key;
  }
}

TEST(Registry, FindsEveryNameAndAliasAndNothingElse) {
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    EXPECT_EQ(find_builtin_spec(row.name), &row);
    for (std::string_view alias : row.aliases) EXPECT_EQ(find_builtin_spec(alias), &row);
  }
  EXPECT_EQ(find_builtin_spec(""), nullptr);
  EXPECT_EQ(find_builtin_spec("jacl"), nullptr);
  EXPECT_EQ(find_builtin_spec("ds4:index"), nullptr);
}

// to_spec(parse(s)) == s for every example: as a profile always, as a policy unless the row is a
// profile (refused there, naming the policy alone).
TEST(Registry, EveryExampleRoundTrips) {
  for (const auto& [row, ex] : all_examples()) {
    SCOPED_TRACE(std::string(ex));
    auto prof = parse_profile(ex);
    ASSERT_OK(prof);
    EXPECT_EQ(prof.value().spec(), ex);
    EXPECT_EQ(VALUE_OR_FAIL(parse_profile(prof.value().spec())), prof.value());
    auto pol = parse_policy(ex);
    if (row->kind == SpecKind::profile) {
      ASSERT_FALSE(pol);
      EXPECT_EQ(pol.error(), errc::invalid_policy_spec);
      EXPECT_NE(pol.error().detail.find("'" + std::string(row->name) + "' is a profile"), std::string::npos)
          << pol.error().detail;
      EXPECT_NE(pol.error().detail.find(std::string(row->policy_alone)), std::string::npos)
          << pol.error().detail;
      // The profile is its policy-alone row, with the same options, routed from its literal index.
      const std::string alone = std::string(row->policy_alone) + std::string(ex.substr(row->name.size()));
      EXPECT_EQ(prof.value().policy, VALUE_OR_FAIL(parse_policy(alone)));
      EXPECT_EQ(prof.value().source, SourceIndex::literal(*row->literal_source));
      // It takes no @sgid: it already routes from its own index.
      EXPECT_FALSE(parse_profile(std::string(ex) + "@sgid=2"));
    } else {
      ASSERT_OK(pol);
      EXPECT_EQ(pol.value().spec(), ex);
      EXPECT_EQ(VALUE_OR_FAIL(parse_policy(pol.value().spec())), pol.value());
      EXPECT_EQ(prof.value().source, SourceIndex::selected());
      EXPECT_EQ(VALUE_OR_FAIL(parse_profile(std::string(ex) + "@sgid=4")).source, SourceIndex::literal(4));
    }
  }
}

// Traced and untraced selection agree on every example and every example table: the same entry,
// or the same error; the traced run carries a trace, the untraced success none.
TEST(Registry, TracedAndUntracedSelectionAgree) {
  std::size_t successes = 0;
  for (const auto& [row, ex] : all_examples()) {
    const Profile p = profile_of(ex);
    for (const auto& [table_name, table] : test::all_example_tables()) {
      SCOPED_TRACE(std::string(ex) + " on " + table_name);
      auto plain = p.policy.select(table);
      auto traced = p.policy.select(table, {.trace = true});
      ASSERT_EQ(plain.has_value(), traced.has_value());
      if (plain) {
        ++successes;
        EXPECT_EQ(plain.value().entry, traced.value().entry);
        EXPECT_TRUE(plain.value().trace.attempts.empty());
        EXPECT_FALSE(traced.value().trace.attempts.empty());
      } else {
        EXPECT_EQ(plain.error().code, traced.error().code);
        EXPECT_EQ(plain.error().detail, traced.error().detail);
      }
    }
  }
  EXPECT_GT(successes, std::size(kBuiltinSpecs));
}

// The parser's hints come from the rows: an unknown name lists every policy and combinator, an
// unknown option every option of its row.
TEST(Registry, ParserHintsNameEveryRowAndOption) {
  auto unknown = parse_policy("no-such-policy");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().detail.find("expected a policy name ("), std::string::npos)
      << unknown.error().detail;
  // Where a whole profile fits, the profiles are named too.
  auto unknown_profile = parse_profile("no-such-profile");
  ASSERT_FALSE(unknown_profile);
  EXPECT_NE(unknown_profile.error().detail.find("expected a profile or policy name ("), std::string::npos)
      << unknown_profile.error().detail;
  // The names between the parentheses, exactly: every row (profiles only where they fit).
  const auto listed = [](const std::string& detail) {
    const auto open = detail.find('(');
    const std::string list = detail.substr(open + 1, detail.find(')', open) - open - 1);
    std::set<std::string> names;
    std::size_t p = 0;
    while (p <= list.size()) {
      const std::size_t comma = std::min(list.find(", ", p), list.size());
      names.insert(list.substr(p, comma - p));
      p = comma + 2;
    }
    return names;
  };
  std::set<std::string> policies, all;
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    all.insert(std::string(row.name));
    if (row.kind != SpecKind::profile) policies.insert(std::string(row.name));
  }
  EXPECT_EQ(listed(unknown.error().detail), policies) << unknown.error().detail;
  EXPECT_EQ(listed(unknown_profile.error().detail), all) << unknown_profile.error().detail;
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    if (row.kind == SpecKind::combinator) continue;
    SCOPED_TRACE(std::string(row.name));
    auto bad = parse_profile(std::string(row.name) + ":no-such-option");
    ASSERT_FALSE(bad);
    if (row.options.empty()) {
      EXPECT_NE(bad.error().detail.find("takes none"), std::string::npos) << bad.error().detail;
      continue;
    }
    EXPECT_NE(bad.error().detail.find("expected an option of " + std::string(row.name) + " (" +
                                      option_names(row) + ")"),
              std::string::npos)
        << bad.error().detail;
    for (const SpecOptionInfo& o : row.options)
      EXPECT_NE(bad.error().detail.find(std::string(o.key)), std::string::npos) << o.key;
  }
  const std::string hint = builtin_spec_hint();
  for (const BuiltinSpec& row : kBuiltinSpecs)
    EXPECT_NE(hint.find(row.grammar), std::string::npos) << row.name;
}

// Repeatable options repeat; the others are refused the second time.
TEST(Registry, OptionsRepeatOnlyWhereTheRowSaysSo) {
  for (const auto& [row, ex] : all_examples()) {
    const auto colon = ex.find(':');
    if (row->kind == SpecKind::combinator || colon == std::string_view::npos) continue;
    const std::string_view first = ex.substr(colon + 1, ex.find(',', colon) - colon - 1);
    const std::string_view key = first.substr(0, first.find('='));
    const auto info = std::find_if(row->options.begin(), row->options.end(),
                                   [&](const SpecOptionInfo& o) { return o.key == key; });
    ASSERT_NE(info, row->options.end()) << ex;
    auto twice = parse_profile(std::string(ex) + "," + std::string(first));
    SCOPED_TRACE(std::string(ex) + "," + std::string(first));
    if (info->repeats) {
      EXPECT_TRUE(twice);
    } else {
      ASSERT_FALSE(twice);
      EXPECT_NE(twice.error().detail.find("each option once"), std::string::npos) << twice.error().detail;
    }
  }
}

template <class... P>
std::set<std::type_index> type_set(PolicyTypes<P...> /*types*/) {
  return {std::type_index(typeid(P))...};
}

// The rows' examples make exactly the types of BuiltinPolicies (every one of which the property
// suite generates: RegistryGenerators): a row whose type is missing from the list, or a listed
// type no row makes, fails here.
TEST(Registry, ExamplesMakeExactlyTheBuiltinPolicyTypes) {
  std::set<std::type_index> made;
  for (const auto& [row, ex] : all_examples()) made.insert(std::type_index(profile_of(ex).policy.type()));
  const std::set<std::type_index> listed = type_set(BuiltinPolicies{});
  for (const auto& t : made)
    EXPECT_TRUE(listed.contains(t)) << t.name() << ": made by a row, not in BuiltinPolicies";
  for (const auto& t : listed)
    EXPECT_TRUE(made.contains(t)) << t.name() << ": in BuiltinPolicies, made by no row";
}

template <class P>
class RegistryTypes : public ::testing::Test {};
template <class... P>
::testing::Types<P...> as_gtest_types(PolicyTypes<P...>);
using BuiltinPolicyTypes = decltype(as_gtest_types(BuiltinPolicies{}));
TYPED_TEST_SUITE(RegistryTypes, BuiltinPolicyTypes);

// Each built-in type is a SelectionPolicy (with equality), some example makes it, and that
// policy equals itself parsed back from its own spec.
TYPED_TEST(RegistryTypes, IsMadeByAnExampleAndRoundTrips) {
  static_assert(SelectionPolicy<TypeParam>);
  std::size_t found = 0;
  for (const auto& [row, ex] : all_examples()) {
    const Profile p = profile_of(ex);
    const auto* held = p.policy.template target<TypeParam>();
    if (!held) continue;
    ++found;
    EXPECT_EQ(held->spec(), p.policy.spec());
    EXPECT_EQ(VALUE_OR_FAIL(parse_policy(held->spec())), AnyPolicy(*held)) << ex;
  }
  EXPECT_GT(found, 0u) << "no registry example makes " << typeid(TypeParam).name();
}

}  // namespace
}  // namespace gidpolicy
