// Look-ups over the registry's table (registry.hpp). The table itself is in the header so the
// rows, the policy types they make and their examples are one list in one place.
#include <gidpolicy/policies/registry.hpp>

namespace gidpolicy {

const BuiltinSpec* find_builtin_spec(std::string_view name) noexcept {
  for (const BuiltinSpec& s : kBuiltinSpecs) {
    if (s.name == name) return &s;
    for (std::string_view alias : s.aliases)
      if (alias == name) return &s;
  }
  return nullptr;
}

std::string builtin_spec_names(bool policies, bool profiles, bool combinators) {
  std::string out;
  for (const BuiltinSpec& s : kBuiltinSpecs) {
    const bool wanted = (s.kind == SpecKind::policy && policies) ||
                        (s.kind == SpecKind::profile && profiles) ||
                        (s.kind == SpecKind::combinator && combinators);
    if (!wanted) continue;
    if (!out.empty()) out += ", ";
    out += s.name;
  }
  return out;
}

std::string builtin_spec_hint() {
  std::string out;
  for (const BuiltinSpec& s : kBuiltinSpecs) {
    if (!out.empty()) out += ", ";
    out += s.grammar;
  }
  return out;
}

std::string option_names(const BuiltinSpec& spec) {
  std::string out;
  for (const SpecOptionInfo& o : spec.options) {
    if (!out.empty()) out += ", ";
    out += o.key;
  }
  return out;
}

}  // namespace gidpolicy
