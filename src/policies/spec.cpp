// The policy/profile spec parser: a small recursive-descent parser over the grammar documented
// in include/gidpolicy/policies/spec.hpp. The names it knows and the options each takes come from
// the registry (registry.hpp); each policy's own factory reads its option values. Every error
// names the byte position and what was expected there, because specs arrive through environment
// variables where nobody sees a stack trace.
#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/policies/spec_options.hpp>

#include "spec_parser.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace gidpolicy::detail {
namespace {

// Bounds on what a spec may ask of the parser: specs arrive through environment variables
// (the patched JACCL's, stack_vars::kJacclGidPolicy) and each nesting level is a recursive call, so an
// unbounded depth is a stack overflow in the calling program. Documented in
// include/gidpolicy/policies/spec.hpp.
constexpr std::size_t kMaxDepth = kMaxSpecDepth;
constexpr std::size_t kMaxBytes = kMaxSpecBytes;

/// "a policy name (jaccl-fixed, ...)": every row that may stand where a policy does; where a
/// whole profile fits, the profiles too.
std::string policy_names(bool profiles) {
  if (profiles) return "a profile or policy name (" + builtin_spec_names(true, true, true) + ")";
  return "a policy name (" + builtin_spec_names(true, false, true) + ")";
}

/// A profile's name where only a policy fits (parse_policy, inside first()/per-device()): refused
/// rather than read as its policy alone, which would route from its own pick and so silently not
/// be the profile.
std::string profile_is_not_a_policy(const BuiltinSpec& row) {
  return "a policy name ('" + std::string(row.name) +
         "' is a profile, not a policy: " + std::string(row.summary) +
         "; parse it whole with parse_profile, or name the policy alone, routed from its own pick, " +
         std::string(row.policy_alone) + ")";
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_'; }
bool is_value_end(char c) {
  return c == ',' || c == ';' || c == '|' || c == ')' || c == '(' || c == '@' ||
         std::isspace(static_cast<unsigned char>(c)) != 0;
}

/// Closes one nesting level when the recursive call returns, whichever way it returns.
struct DepthGuard {
  std::size_t& depth;
  explicit DepthGuard(std::size_t& d) : depth(d) {}
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;
  ~DepthGuard() { --depth; }
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  /// policy. `profile` is where a profile's row is reported (its name is exactly a profile's,
  /// e.g. "jaccl"); it is null where only a policy fits, and a profile's name is refused there.
  result<AnyPolicy> policy(const BuiltinSpec** profile) {
    skip_ws();
    const std::size_t start = pos_;
    const std::string_view name = identifier();
    const BuiltinSpec* row = name.empty() ? nullptr : find_builtin_spec(name);
    if (!row) return error(start, policy_names(profile != nullptr));
    if (profile) *profile = nullptr;
    if (row->kind == SpecKind::combinator) {
      // Each first(...) / per-device(...) level is one recursive call: bounded before recursing.
      if (depth_ >= kMaxDepth)
        return error(start, "at most " + std::to_string(kMaxDepth) +
                                " nested first(...)/per-device(...) levels (the spec nests deeper)");
      ++depth_;
      const DepthGuard guard{depth_};
      if (row->name == "first") return first_of();
      return per_device();
    }
    if (peek() == ':' && row->options.empty())
      return error(pos_, "no options (" + std::string(row->name) + " takes none)");
    if (row->kind == SpecKind::profile) {
      if (!profile) return error(start, profile_is_not_a_policy(*row));
      *profile = row;
    }
    std::vector<SpecOption> opts;
    if (peek() == ':') {
      ++pos_;
      GIDPOLICY_TRY(parsed, options(*row));
      opts = std::move(parsed);
    }
    return row->factory(SpecOptions(s_, std::move(opts), pos_));
  }

  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])) != 0) ++pos_;
  }
  [[nodiscard]] char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  [[nodiscard]] bool at_end() const { return pos_ >= s_.size(); }
  [[nodiscard]] std::size_t pos() const { return pos_; }
  void advance() { ++pos_; }

  /// "at position P: expected E, found 'X' in \"...spec around P...\"" (spec_options.hpp).
  boost::outcome_v2::failure_type<Error> error(std::size_t at, std::string_view expected) const {
    return fail(spec_error(s_, at, expected));
  }

 private:
  std::string_view identifier() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  /// option ( "," option )*: keys from the row, each once unless the row lets it repeat.
  result<std::vector<SpecOption>> options(const BuiltinSpec& row) {
    std::vector<SpecOption> out;
    std::set<std::string_view> seen;
    const std::string expected = "an option of " + std::string(row.name) + " (" + option_names(row) + ")";
    while (true) {
      skip_ws();
      SpecOption o;
      o.key_pos = pos_;
      o.key = identifier();
      const auto info = std::find_if(row.options.begin(), row.options.end(),
                                     [&](const SpecOptionInfo& i) { return i.key == o.key; });
      if (o.key.empty() || info == row.options.end()) return error(o.key_pos, expected);
      if (!info->repeats && !seen.insert(o.key).second)
        return error(o.key_pos, "each option once ('" + std::string(o.key) + "' is repeated)");
      if (peek() == '=') {
        ++pos_;
        o.value_pos = pos_;
        const std::size_t start = pos_;
        while (pos_ < s_.size() && !is_value_end(s_[pos_])) ++pos_;
        o.value = s_.substr(start, pos_ - start);
        if (o.value->empty()) return error(start, "a value for '" + std::string(o.key) + "'");
      }
      out.push_back(o);
      skip_ws();
      if (peek() != ',') break;
      ++pos_;
    }
    return out;
  }

  result<AnyPolicy> first_of() {
    if (peek() != '(') return error(pos_, "'(' after 'first'");
    ++pos_;
    FirstOf f;
    while (true) {
      GIDPOLICY_TRY(p, policy(nullptr));
      f.alternatives.push_back(std::move(p));
      skip_ws();
      if (peek() == '|') {
        ++pos_;
        continue;
      }
      if (peek() == ')') {
        ++pos_;
        return AnyPolicy(std::move(f));
      }
      return error(pos_, "'|' or ')'");
    }
  }

  result<AnyPolicy> per_device() {
    if (peek() != '(') return error(pos_, "'(' after 'per-device'");
    ++pos_;
    PerDevice d;
    while (true) {
      skip_ws();
      const std::size_t dev_pos = pos_;
      std::string_view dev;
      if (peek() == '*') {
        ++pos_;
        dev = "*";
      } else {
        while (pos_ < s_.size() && (is_name_char(s_[pos_]) || s_[pos_] == '.')) ++pos_;
        dev = s_.substr(dev_pos, pos_ - dev_pos);
      }
      if (dev.empty()) return error(dev_pos, "a device name or '*'");
      skip_ws();
      if (peek() != '=') return error(pos_, "'=' after the device name");
      ++pos_;
      GIDPOLICY_TRY(p, policy(nullptr));
      if (dev == "*") {
        if (d.fallback) return error(dev_pos, "one default ('*' is repeated)");
        d.fallback = std::move(p);
      } else if (!d.by_device.emplace(std::string(dev), std::move(p)).second) {
        return error(dev_pos, "each device once ('" + std::string(dev) + "' is repeated)");
      }
      skip_ws();
      if (peek() == ';') {
        ++pos_;
        continue;
      }
      if (peek() == ')') {
        ++pos_;
        return AnyPolicy(std::move(d));
      }
      return error(pos_, "';' or ')'");
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;  // first(...)/per-device(...) levels open at pos_
};

}  // namespace

result<ParsedProfile> parse_spec(std::string_view spec, bool allow_source) {
  if (spec.size() > kMaxBytes)
    return fail(errc::invalid_policy_spec, "at position " + std::to_string(kMaxBytes) +
                                               ": expected the end of the spec (at most " +
                                               std::to_string(kMaxBytes) + " bytes), found a spec of " +
                                               std::to_string(spec.size()) + " bytes");
  Parser p(spec);
  const BuiltinSpec* profile = nullptr;
  GIDPOLICY_TRY(policy, p.policy(allow_source ? &profile : nullptr));
  p.skip_ws();
  SourceIndex source = SourceIndex::selected();
  if (profile && profile->literal_source) source = SourceIndex::literal(*profile->literal_source);
  if (p.peek() == '@') {
    const std::size_t at = p.pos();
    if (!allow_source)
      return p.error(
          at, "the end of the spec (a source-index rule '@sgid=N' belongs to a profile: parse_profile)");
    if (profile && profile->literal_source)
      return p.error(at, "the end of the spec (" + std::string(profile->name) +
                             " already routes from the literal index " +
                             std::to_string(*profile->literal_source) + "; write " +
                             std::string(profile->policy_alone) + "@sgid=N)");
    constexpr std::string_view kSgid = "@sgid=";
    if (spec.substr(at, kSgid.size()) != kSgid) return p.error(at, "'@sgid=N'");
    const std::size_t num = at + kSgid.size();
    std::size_t end = num;
    while (end < spec.size() && std::isdigit(static_cast<unsigned char>(spec[end])) != 0) ++end;
    unsigned v = 0;
    auto [ptr, ec] = std::from_chars(spec.data() + num, spec.data() + end, v);
    if (end == num || ec != std::errc() || ptr != spec.data() + end || v > 255)
      return p.error(num, "an sgid_index 0..255 (a uint8_t)");
    source = SourceIndex::literal(static_cast<std::uint8_t>(v));
    while (p.pos() < end) p.advance();
    p.skip_ws();
  }
  if (!p.at_end()) return p.error(p.pos(), "the end of the spec");
  return ParsedProfile{std::move(policy), source};
}

}  // namespace gidpolicy::detail

namespace gidpolicy {

result<AnyPolicy> parse_policy(std::string_view spec) {
  GIDPOLICY_TRY(parsed, detail::parse_spec(spec, false));
  return std::move(parsed.policy);
}

}  // namespace gidpolicy
