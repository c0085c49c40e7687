#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/profiles.hpp>

#include "policies/spec_parser.hpp"

namespace gidpolicy {

result<Plan> Profile::plan(const GidTable& table, SelectOptions run) const {
  GIDPOLICY_TRY(sel, policy.select(table, run));
  Plan p;
  p.sgid_index = source.resolve(sel);
  p.agreement = check_agreement(table, sel.entry.gid, p.sgid_index);
  p.selection = std::move(sel);
  return p;
}

std::string Profile::spec() const {
  std::string s = policy.spec();
  if (!source.is_literal()) return s;
  // A profile row of the registry (registry.hpp) is its policy-alone row routed from its literal
  // index: written as the profile's name plus the policy's options ("jaccl-fixed" -> "jaccl").
  for (const BuiltinSpec& row : kBuiltinSpecs) {
    if (row.kind != SpecKind::profile || row.literal_source != source.literal_index()) continue;
    const std::string_view alone = row.policy_alone;
    if (s.starts_with(alone) && (s.size() == alone.size() || s[alone.size()] == ':'))
      return std::string(row.name) + s.substr(alone.size());
  }
  return s + "@sgid=" + std::to_string(source.literal_index());
}

result<Profile> parse_profile(std::string_view spec) {
  GIDPOLICY_TRY(parsed, detail::parse_spec(spec, true));
  return Profile{std::move(parsed.policy), parsed.source};
}

namespace profiles {

Profile jaccl() { return {JacclFirstMapped{}, SourceIndex::literal(1)}; }
Profile jaccl_legacy() { return {JacclLegacyIndex1{}, SourceIndex::selected()}; }
Profile jaccl_fixed() { return {JacclFirstMapped{}, SourceIndex::selected()}; }
Profile ds4(std::optional<std::uint32_t> index) {
  if (index) return {Ds4ExplicitIndex{*index}, SourceIndex::selected()};
  return {Ds4Scan{}, SourceIndex::selected()};
}
Profile ds4_linux(std::optional<Gid> local, std::optional<std::int32_t> index) {
  return {Ds4Linux{local, index}, SourceIndex::selected()};
}
Profile automatic(RankedOptions options) { return {Ranked{std::move(options)}, SourceIndex::selected()}; }

std::vector<Profile> all() {
  return {jaccl(), jaccl_legacy(), jaccl_fixed(), ds4(), ds4_linux(), automatic()};
}

}  // namespace profiles

}  // namespace gidpolicy
