// Look-ups over the registry's table (registry.hpp). The table itself is in the header so the
// rows, the policy types they make and their examples are one list in one place.
#include <gidpolicy/policies/registry.hpp>

#include <algorithm>
#include <utility>
#include <vector>

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

namespace {
// A Markdown table cell: a '|' would end the cell (GitHub's tables read "\|" as the character,
// inside code spans too); a line break would end the row.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string code(std::string_view text) { return "`" + cell(text) + "`"; }
}  // namespace

std::string builtin_spec_table() {
  std::string out =
      "<!-- spec-table:begin (generated from policies/registry.hpp by scripts/update-docs: edit the "
      "registry, "
      "not this table) -->\n"
      "| spec | options | behaviour | policy types |\n"
      "|---|---|---|---|\n";
  for (const BuiltinSpec& s : kBuiltinSpecs) {
    std::string options;
    for (const SpecOptionInfo& o : s.options) {
      if (!options.empty()) options += ", ";
      options += code(o.value.empty() ? std::string(o.key) : std::string(o.key) + "=" + std::string(o.value));
      if (o.repeats) options += " (repeats)";
    }
    std::string behaviour = cell(s.summary);
    // A profile is not a policy (parse_policy refuses it): say which row is its policy alone.
    if (s.kind == SpecKind::profile)
      behaviour +=
          std::string("; a profile, not a policy") +
          (s.policy_alone.empty() ? std::string() : " (the policy alone: " + code(s.policy_alone) + ")");
    for (std::string_view alias : s.aliases) behaviour += "; also spelled " + code(alias);
    std::string types;
    std::string_view rest = s.types;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      std::string_view one = rest.substr(0, comma);
      while (one.starts_with(' ')) one.remove_prefix(1);
      if (!types.empty()) types += ", ";
      types += code(one);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    out += "| " + code(s.grammar) + " | " + options + " | " + behaviour + " | " + types + " |\n";
  }
  return out + "<!-- spec-table:end -->\n";
}

std::string option_names(const BuiltinSpec& spec) {
  std::string out;
  for (const SpecOptionInfo& o : spec.options) {
    if (!out.empty()) out += ", ";
    out += o.key;
  }
  return out;
}

std::optional<std::string> spec_with_peer(std::string_view spec, std::string_view peer) {
  const std::size_t at = spec.find('@');  // a profile's "@sgid=N" suffix stays last
  const std::string_view head = spec.substr(0, at);
  const std::string_view tail = at == std::string_view::npos ? std::string_view() : spec.substr(at);
  const std::size_t colon = head.find(':');
  const std::string_view name = head.substr(0, colon);
  const BuiltinSpec* row = find_builtin_spec(name);
  // A combinator's name is followed by '(' (not a row name): its alternatives name their peers.
  if (row == nullptr || row->takes_peer == nullptr) return std::nullopt;
  std::vector<SpecOption> options;
  if (colon != std::string_view::npos) {
    std::size_t start = colon + 1;
    while (start <= head.size()) {
      const std::size_t comma = std::min(head.find(',', start), head.size());
      const std::string_view option = head.substr(start, comma - start);
      const std::size_t eq = option.find('=');
      SpecOption o;
      o.key = option.substr(0, eq);
      o.key_pos = start;
      if (eq != std::string_view::npos) {
        o.value = option.substr(eq + 1);
        o.value_pos = start + eq + 1;
      }
      options.push_back(o);
      start = comma + 1;
    }
  }
  if (!row->takes_peer(SpecOptions(spec, std::move(options), head.size()))) return std::nullopt;
  return std::string(head) + (colon == std::string_view::npos ? ":" : ",") + "peer=" + std::string(peer) +
         std::string(tail);
}

std::string builtin_specs_taking_peer() {
  std::string out;
  for (const BuiltinSpec& s : kBuiltinSpecs) {
    if (s.takes_peer == nullptr) continue;
    if (!out.empty()) out += ", ";
    out += s.name;
  }
  return out;
}

}  // namespace gidpolicy
