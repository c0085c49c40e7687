// Spec strings round-trip through the parser: for every policy and profile the
// generators can make (every strategy, random options, nested first()/per-device()),
// parse(p.spec()) == p, and the grammar's "spaces around separators are ignored" holds.
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/profiles.hpp>

#include "support/policy_generators.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

namespace gidpolicy {
namespace {

RC_GTEST_PROP(Spec, prop_policy_spec_round_trips_through_the_parser, ()) {
  const AnyPolicy p = *test::gen_policy(3);
  const std::string spec = p.spec();
  auto back = parse_policy(spec);
  RC_ASSERT(back.has_value());
  // (Compared outside RC_ASSERT: its expression capture would try to convert into AnyPolicy.)
  const bool same = back.value() == p;
  RC_ASSERT(same);
  RC_ASSERT(back.value().spec() == spec);
}

RC_GTEST_PROP(Spec, prop_profile_spec_round_trips_through_the_parser, ()) {
  const Profile p = *test::gen_profile();
  const std::string spec = p.spec();
  auto back = parse_profile(spec);
  RC_ASSERT(back.has_value());
  const bool same = back.value() == p;
  RC_ASSERT(same);
  RC_ASSERT(back.value().spec() == spec);
  // A profile's source rule survives too: "jaccl" is the literal 1, "...@sgid=N" the literal N.
  RC_ASSERT(back.value().source == p.source);
}

/// `spec` with spaces inserted after some separators and before some others, only where the
/// grammar ignores them (never around ':' after a policy name, or around '=').
std::string with_spaces(const std::string& spec, const std::vector<bool>& where) {
  std::string out;
  std::size_t k = 0;
  auto maybe = [&] {
    if (k < where.size() && where[k]) out += "  ";
    ++k;
  };
  for (char c : spec) {
    if (c == ')' || c == '|' || c == ';' || c == ',' || c == '@') maybe();
    out += c;
    if (c == '(' || c == '|' || c == ';' || c == ',') maybe();
  }
  return out;
}

RC_GTEST_PROP(Spec, prop_spaces_around_separators_are_ignored, ()) {
  const Profile p = *test::gen_profile();
  const std::string spec = p.spec();
  const auto where = *rc::gen::container<std::vector<bool>>(spec.size() * 2, rc::gen::arbitrary<bool>());
  const std::string spaced = " " + with_spaces(spec, where) + " ";
  auto back = parse_profile(spaced);
  RC_ASSERT(back.has_value());
  const bool same = back.value() == p;
  RC_ASSERT(same);
}

}  // namespace
}  // namespace gidpolicy
