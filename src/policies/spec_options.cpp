// The option readers of SpecOptions and the parser's error format (spec_options.hpp), shared by
// the spec parser (spec.cpp) and every policy's factory.
#include <gidpolicy/policies/spec_options.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

namespace gidpolicy {
namespace detail {
// Named, not anonymous: the library builds as a unity build and spec.cpp has helpers of its own.
namespace spec_text {

// How much of a spec an error quotes: enough to find the spot, bounded so a 40 KB spec does not
// come back in full on one line.
constexpr std::size_t kQuoteBefore = 24;
constexpr std::size_t kQuoteAfter = 24;
constexpr std::size_t kMaxFound = 40;

bool is_delim(char c) {
  return c == ',' || c == ';' || c == '|' || c == '(' || c == ')' || c == '@' || c == '=' || c == ':' ||
         std::isspace(static_cast<unsigned char>(c)) != 0;
}
bool is_value_end(char c) {
  return c == ',' || c == ';' || c == '|' || c == ')' || c == '(' || c == '@' ||
         std::isspace(static_cast<unsigned char>(c)) != 0;
}

std::string printable(std::string_view t) {
  std::string out;
  for (char c : t) {
    auto u = static_cast<unsigned char>(c);
    // Bytes above 0x7f too: a window or an excerpt may cut a UTF-8 sequence, and a message
    // stays one line of printable ASCII (as the name rule's quote_name(), names.hpp).
    if (u < 0x20 || u >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

/// 'X', at most `max` bytes of it, control bytes as \xNN so the message stays one line.
std::string quote(std::string_view t, std::size_t max) {
  return "'" + printable(t.substr(0, max)) + (t.size() > max ? "..." : "") + "'";
}

/// The spec around byte `at`: the whole spec when short, else a window with "..." on the cut
/// sides.
std::string around(std::string_view s, std::size_t at) {
  const std::size_t from = at > kQuoteBefore ? at - kQuoteBefore : 0;
  const std::size_t to = std::min(s.size(), at + kQuoteAfter);
  return (from > 0 ? "..." : "") + printable(s.substr(from, to - from)) + (to < s.size() ? "..." : "");
}

}  // namespace spec_text

Error spec_error(std::string_view s, std::size_t at, std::string_view expected,
                 std::optional<std::string_view> value) {
  std::string found;
  if (value) {
    found = spec_text::quote(*value, spec_text::kMaxFound);
  } else if (at >= s.size()) {
    found = "end of spec";
  } else if (spec_text::is_delim(s[at])) {
    found = spec_text::quote(s.substr(at, 1), spec_text::kMaxFound);
  } else {
    std::size_t end = at;
    while (end < s.size() && !spec_text::is_value_end(s[end]) && s[end] != '=' && s[end] != ':') ++end;
    found = spec_text::quote(s.substr(at, end - at), spec_text::kMaxFound);
  }
  return Error(errc::invalid_policy_spec, "at position " + std::to_string(at) + ": expected " +
                                              std::string(expected) + ", found " + found + " in \"" +
                                              spec_text::around(s, at) + "\"");
}

}  // namespace detail

Error SpecOptions::bad_value(const SpecOption& o, std::string_view expected) const {
  return detail::spec_error(spec_, o.value_pos, expected, o.value);
}

Error SpecOptions::bad_key(const SpecOption& o, std::string_view expected) const {
  return detail::spec_error(spec_, o.key_pos, expected);
}

Error SpecOptions::missing(std::string_view expected) const {
  return detail::spec_error(spec_, end_, expected);
}

result<std::int64_t> SpecOptions::integer(const SpecOption& o, std::int64_t lo, std::int64_t hi,
                                          std::string_view what) const {
  const std::string expected = std::string(what) + " " + std::to_string(lo) + ".." + std::to_string(hi);
  if (!o.value)
    return fail(detail::spec_error(spec_, o.key_pos + o.key.size(),
                                   "'=' and " + expected + " after '" + std::string(o.key) + "'"));
  std::int64_t v = 0;
  const char* b = o.value->data();
  const char* e = b + o.value->size();
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || v < lo || v > hi) return fail(bad_value(o, expected));
  return v;
}

result<std::string_view> SpecOptions::value(const SpecOption& o, std::string_view what) const {
  if (!o.value)
    return fail(detail::spec_error(spec_, o.key_pos + o.key.size(),
                                   "'=' and " + std::string(what) + " after '" + std::string(o.key) + "'"));
  return *o.value;
}

result<void> SpecOptions::flag(const SpecOption& o) const {
  if (o.value)
    return fail(
        detail::spec_error(spec_, o.value_pos - 1,
                           "',' or the end of the options ('" + std::string(o.key) + "' takes no value)"));
  return success();
}

result<Gid> SpecOptions::address(const SpecOption& o) const {
  GIDPOLICY_TRY(text, value(o, "an IPv4 or IPv6 address"));
  auto g = parse_address(text);
  if (!g || g.value().is_zero()) return fail(bad_value(o, "an IPv4 or IPv6 address (not zero)"));
  return g.value();
}

result<Cidr> SpecOptions::cidr(const SpecOption& o) const {
  GIDPOLICY_TRY(text, value(o, "a CIDR prefix such as 10.0.0.0/8 or fd00::/8"));
  auto c = Cidr::parse(text);
  if (!c) return fail(bad_value(o, "a CIDR prefix such as 10.0.0.0/8 or fd00::/8"));
  return c.value();
}

}  // namespace gidpolicy
