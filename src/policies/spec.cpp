// The policy/profile spec parser: a small recursive-descent parser over the grammar documented
// in include/gidpolicy/policies/spec.hpp. Every error names the byte position and what was
// expected there, because specs arrive through environment variables where nobody sees a
// stack trace.
#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/libfabric.hpp>
#include <gidpolicy/policies/mooncake.hpp>
#include <gidpolicy/policies/nccl.hpp>
#include <gidpolicy/policies/per_device.hpp>
#include <gidpolicy/policies/perftest.hpp>
#include <gidpolicy/policies/rdma_cm.hpp>
#include <gidpolicy/policies/ucx.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>

#include "spec_parser.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>

namespace gidpolicy::detail {
namespace {

// Bounds on what a spec may ask of the parser: specs arrive through environment variables
// (JACCL_GID_POLICY) and each nesting level is a recursive call, so an unbounded depth is a stack
// overflow in the calling program. Documented in include/gidpolicy/policies/spec.hpp.
constexpr std::size_t kMaxDepth = kMaxSpecDepth;
constexpr std::size_t kMaxBytes = kMaxSpecBytes;

// How much of a spec an error quotes: enough to find the spot, bounded so a 40 KB spec does not
// come back in full on one line.
constexpr std::size_t kQuoteBefore = 24;
constexpr std::size_t kQuoteAfter = 24;
constexpr std::size_t kMaxFound = 40;

constexpr std::string_view kPolicyNames =
    "a policy name (jaccl-fixed, jaccl-legacy, ds4, ds4-linux, validated, auto, first, per-device, nccl, "
    "ucx, perftest, mooncake, libfabric, rdma_cm)";
// "jaccl" names one thing, the profile of JACCL as it ships. Where only a policy fits (parse_policy,
// inside first()/per-device()) it is refused rather than read as the policy alone, which would
// route from its own pick and so silently not be JACCL.
constexpr std::string_view kJacclIsAProfile =
    "a policy name ('jaccl' is a profile, not a policy: JACCL as it ships, advertising the first "
    "IPv4-mapped GID and routing from the literal sgid_index 1; parse it whole with parse_profile, "
    "or name the policy alone, routed from its own pick, jaccl-fixed)";

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_'; }
bool is_delim(char c) {
  return c == ',' || c == ';' || c == '|' || c == '(' || c == ')' || c == '@' || c == '=' || c == ':' ||
         std::isspace(static_cast<unsigned char>(c)) != 0;
}
bool is_value_end(char c) {
  return c == ',' || c == ';' || c == '|' || c == ')' || c == '(' || c == '@' ||
         std::isspace(static_cast<unsigned char>(c)) != 0;
}

/// One parsed option: key, its position, and its value (with position) if it had one.
struct Option {
  std::string_view key;
  std::size_t key_pos = 0;
  std::optional<std::string_view> value;
  std::size_t value_pos = 0;
};

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

  /// policy, with `bare_jaccl` set when it is exactly the name "jaccl" (the profile that
  /// routes from the literal 1). `bare_jaccl` is null where only a policy fits (parse_policy,
  /// nested specs): "jaccl" is refused there with kJacclIsAProfile.
  result<AnyPolicy> policy(bool* bare_jaccl) {
    skip_ws();
    const std::size_t start = pos_;
    const std::string_view name = identifier();
    if (name.empty()) return error(start, kPolicyNames);
    if (bare_jaccl) *bare_jaccl = false;
    if (name == "first" || name == "per-device") {
      // Each first(...) / per-device(...) level is one recursive call: bounded before recursing.
      if (depth_ >= kMaxDepth)
        return error(start, "at most " + std::to_string(kMaxDepth) +
                                " nested first(...)/per-device(...) levels (the spec nests deeper)");
      ++depth_;
      const DepthGuard guard{depth_};
      if (name == "first") return first_of(start);
      return per_device(start);
    }

    if (name == "jaccl" || name == "jaccl-fixed" || name == "jaccl-legacy") {
      if (peek() == ':') return error(pos_, "no options (" + std::string(name) + " takes none)");
      if (name == "jaccl-legacy") return AnyPolicy(JacclLegacyIndex1{});
      if (name == "jaccl") {
        if (!bare_jaccl) return error(start, kJacclIsAProfile);
        *bare_jaccl = true;
      }
      return AnyPolicy(JacclFirstMapped{});
    }
    if (name == "nccl" || name == "ucx" || name == "perftest" || name == "mooncake" || name == "libfabric" ||
        name == "rdma_cm")
      return stack(name);
    if (name != "ds4" && name != "ds4-linux" && name != "validated" && name != "auto")
      return error(start, kPolicyNames);
    std::vector<Option> opts;
    if (peek() == ':') {
      ++pos_;
      GIDPOLICY_TRY(parsed, options(name));
      opts = std::move(parsed);
    }
    if (name == "ds4") return ds4(opts);
    if (name == "ds4-linux") return ds4_linux(opts);
    if (name == "validated") return validated(opts);
    return automatic(opts);
  }

  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])) != 0) ++pos_;
  }
  [[nodiscard]] char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  [[nodiscard]] bool at_end() const { return pos_ >= s_.size(); }
  [[nodiscard]] std::size_t pos() const { return pos_; }
  void advance() { ++pos_; }

  /// "at position P: expected E, found 'X' in \"...spec around P...\"". `value` names the
  /// whole option value that starts at P (a CIDR or address holds ':' and '/'); otherwise the
  /// token at P up to the next separator is quoted.
  Error make_error(std::size_t at, std::string_view expected,
                   std::optional<std::string_view> value = std::nullopt) const {
    std::string found;
    if (value) {
      found = quote(*value, kMaxFound);
    } else if (at >= s_.size()) {
      found = "end of spec";
    } else if (is_delim(s_[at])) {
      found = quote(s_.substr(at, 1), kMaxFound);
    } else {
      std::size_t end = at;
      while (end < s_.size() && !is_value_end(s_[end]) && s_[end] != '=' && s_[end] != ':') ++end;
      found = quote(s_.substr(at, end - at), kMaxFound);
    }
    return Error(errc::invalid_policy_spec, "at position " + std::to_string(at) + ": expected " +
                                                std::string(expected) + ", found " + found + " in \"" +
                                                around(at) + "\"");
  }
  boost::outcome_v2::failure_type<Error> error(std::size_t at, std::string_view expected,
                                               std::optional<std::string_view> value = std::nullopt) const {
    return fail(make_error(at, expected, value));
  }
  /// An option's value is wrong: quote all of it (up to kMaxFound bytes).
  boost::outcome_v2::failure_type<Error> value_error(const Option& o, std::string_view expected) const {
    return error(o.value_pos, expected, o.value);
  }

  /// A decimal integer in [lo, hi].
  result<std::int64_t> integer(const Option& o, std::int64_t lo, std::int64_t hi,
                               std::string_view what) const {
    const std::string expected = std::string(what) + " " + std::to_string(lo) + ".." + std::to_string(hi);
    if (!o.value)
      return error(o.key_pos + o.key.size(), "'=' and " + expected + " after '" + std::string(o.key) + "'");
    std::int64_t v = 0;
    const char* b = o.value->data();
    const char* e = b + o.value->size();
    auto [p, ec] = std::from_chars(b, e, v);
    if (ec != std::errc() || p != e || v < lo || v > hi) return value_error(o, expected);
    return v;
  }

 private:
  /// 'X', at most `max` bytes of it, control bytes as \xNN so the message stays one line.
  static std::string quote(std::string_view t, std::size_t max) {
    return "'" + printable(t.substr(0, max)) + (t.size() > max ? "..." : "") + "'";
  }
  static std::string printable(std::string_view t) {
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
  /// The spec around byte `at`: the whole spec when short, else a window with "..." on the cut
  /// sides.
  [[nodiscard]] std::string around(std::size_t at) const {
    const std::size_t from = at > kQuoteBefore ? at - kQuoteBefore : 0;
    const std::size_t to = std::min(s_.size(), at + kQuoteAfter);
    return (from > 0 ? "..." : "") + printable(s_.substr(from, to - from)) + (to < s_.size() ? "..." : "");
  }

  std::string_view identifier() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  static std::string allowed(std::string_view policy) {
    if (policy == "ds4") return "index";
    if (policy == "ds4-linux") return "local, index";
    if (policy == "validated") return "index, type, family, allow-link-local";
    if (policy == "auto")
      return "family, roce, type, subnet, exclude, netdev, local, peer, require-local, allow-link-local";
    return "";
  }

  /// option ( "," option )*; keys checked for duplicates (subnet/exclude may repeat).
  result<std::vector<Option>> options(std::string_view policy) {
    std::vector<Option> out;
    std::set<std::string_view> seen;
    const std::string expected = "an option of " + std::string(policy) + " (" + allowed(policy) + ")";
    while (true) {
      skip_ws();
      Option o;
      o.key_pos = pos_;
      o.key = identifier();
      if (o.key.empty()) return error(o.key_pos, expected);
      if (!whole_word(allowed(policy), o.key)) return error(o.key_pos, expected);
      if (o.key != "subnet" && o.key != "exclude" && !seen.insert(o.key).second)
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

  static bool whole_word(std::string_view list, std::string_view word) {
    std::size_t p = 0;
    while ((p = list.find(word, p)) != std::string_view::npos) {
      const bool left = p == 0 || list[p - 1] == ' ';
      const std::size_t after = p + word.size();
      const bool right = after == list.size() || list[after] == ',';
      if (left && right) return true;
      ++p;
    }
    return false;
  }

  result<void> flag(const Option& o) const {
    if (o.value)
      return error(o.value_pos - 1,
                   "',' or the end of the options ('" + std::string(o.key) + "' takes no value)");
    return success();
  }
  result<std::string_view> value(const Option& o, std::string_view what) const {
    if (!o.value)
      return error(o.key_pos + o.key.size(),
                   "'=' and " + std::string(what) + " after '" + std::string(o.key) + "'");
    return *o.value;
  }
  result<Gid> address(const Option& o) const {
    GIDPOLICY_TRY(text, value(o, "an IPv4 or IPv6 address"));
    auto g = parse_address(text);
    if (!g || g.value().is_zero()) return value_error(o, "an IPv4 or IPv6 address (not zero)");
    return g.value();
  }
  result<Cidr> cidr(const Option& o) const {
    GIDPOLICY_TRY(text, value(o, "a CIDR prefix such as 10.0.0.0/8 or fd00::/8"));
    auto c = Cidr::parse(text);
    if (!c) return value_error(o, "a CIDR prefix such as 10.0.0.0/8 or fd00::/8");
    return c.value();
  }

  result<AnyPolicy> ds4(const std::vector<Option>& opts) const {
    if (opts.empty()) return AnyPolicy(Ds4Scan{});
    GIDPOLICY_TRY(v, integer(opts.front(), 0, std::numeric_limits<std::uint32_t>::max(), "an index"));
    return AnyPolicy(Ds4ExplicitIndex{static_cast<std::uint32_t>(v)});
  }

  result<AnyPolicy> ds4_linux(const std::vector<Option>& opts) const {
    Ds4Linux p;
    for (const Option& o : opts) {
      if (o.key == "local") {
        GIDPOLICY_TRY(g, address(o));
        p.local = g;
      } else {
        GIDPOLICY_TRY(v, integer(o, std::numeric_limits<std::int32_t>::min(),
                                 std::numeric_limits<std::int32_t>::max(), "an int"));
        p.index = static_cast<std::int32_t>(v);
      }
    }
    return AnyPolicy(p);
  }

  result<AnyPolicy> validated(const std::vector<Option>& opts) const {
    ValidatedExplicit p;
    bool has_index = false;
    for (const Option& o : opts) {
      if (o.key == "index") {
        GIDPOLICY_TRY(v, integer(o, 0, std::numeric_limits<std::uint32_t>::max(), "an index"));
        p.index = static_cast<std::uint32_t>(v);
        has_index = true;
      } else if (o.key == "type") {
        GIDPOLICY_TRY(t, value(o, "a type (roce_v2, roce_v1, ib, any)"));
        auto f = type_filter_from_string(t);
        if (!f) return value_error(o, "a type (roce_v2, roce_v1, ib, any)");
        p.type = *f;
      } else if (o.key == "family") {
        GIDPOLICY_TRY(t, value(o, "a family (ipv4, ipv6, any)"));
        auto f = family_filter_from_string(t);
        if (!f) return value_error(o, "a family (ipv4, ipv6, any)");
        p.family = *f;
      } else {
        GIDPOLICY_TRYV(flag(o));
        p.allow_link_local = true;
      }
    }
    if (!has_index) return error(pos_, "the option 'index=N' (validated needs an index)");
    return AnyPolicy(p);
  }

  result<AnyPolicy> automatic(const std::vector<Option>& opts) const {
    RankedOptions r;
    bool typed = false;
    for (const Option& o : opts) {
      if (o.key == "family") {
        GIDPOLICY_TRY(t, value(o, "a family (ipv4, ipv6, any)"));
        auto f = family_filter_from_string(t);
        if (!f) return value_error(o, "a family (ipv4, ipv6, any)");
        r.family = *f;
      } else if (o.key == "roce" || o.key == "type") {
        if (typed) return error(o.key_pos, "one of 'roce' or 'type', once");
        typed = true;
        const bool roce = o.key == "roce";
        const char* what = roce ? "a RoCE version (v2, v1, any)" : "a type (roce_v2, roce_v1, ib, any)";
        GIDPOLICY_TRY(t, value(o, what));
        auto f = type_filter_from_string(t);
        if (!f || (roce && *f == TypeFilter::ib)) return value_error(o, what);
        r.type = *f;
      } else if (o.key == "subnet") {
        GIDPOLICY_TRY(c, cidr(o));
        r.subnets.push_back(c);
      } else if (o.key == "exclude") {
        GIDPOLICY_TRY(c, cidr(o));
        r.excludes.push_back(c);
      } else if (o.key == "netdev") {
        GIDPOLICY_TRY(t, value(o, "a netdev name"));
        r.netdev = std::string(t);
      } else if (o.key == "local") {
        GIDPOLICY_TRY(g, address(o));
        r.local = g;
      } else if (o.key == "peer") {
        GIDPOLICY_TRY(text, value(o, "an IPv4 or IPv6 address (fe80::/10 with its %NETDEV scope)"));
        auto peer = PeerAddress::parse(text);
        if (!peer || peer.value().address.is_zero())
          return value_error(o, "an IPv4 or IPv6 address, not zero (fe80::/10 with its %NETDEV scope)");
        r.peer = std::move(peer).value();
      } else if (o.key == "require-local") {
        GIDPOLICY_TRYV(flag(o));
        r.require_local = true;
      } else {
        GIDPOLICY_TRYV(flag(o));
        r.allow_link_local = true;
      }
    }
    if (r.require_local && !r.local) return error(pos_, "the option 'local=ADDR' (require-local needs it)");
    return AnyPolicy(Ranked{std::move(r)});
  }

  /// A stack's profile: its options (up to the next separator of the grammar) are read by the
  /// stack's own parse_options(), beside its policy (policies/nccl.hpp, ...).
  result<AnyPolicy> stack(std::string_view name) {
    std::string_view text;
    std::size_t base = pos_;
    if (peek() == ':') {
      ++pos_;
      base = pos_;
      while (pos_ < s_.size() && s_[pos_] != '|' && s_[pos_] != ';' && s_[pos_] != ')' && s_[pos_] != '(' &&
             s_[pos_] != '@' && std::isspace(static_cast<unsigned char>(s_[pos_])) == 0)
        ++pos_;
      text = s_.substr(base, pos_ - base);
      if (text.empty()) return error(base, "an option of " + std::string(name));
    } else if (name == "rdma_cm") {
      return error(pos_, "':local=ADDR' or ':peer=ADDR' after 'rdma_cm' (rdma_cm needs an address)");
    } else {
      if (name == "nccl") return AnyPolicy(Nccl{});
      if (name == "ucx") return AnyPolicy(Ucx{});
      if (name == "perftest") return AnyPolicy(Perftest{});
      if (name == "mooncake") return AnyPolicy(Mooncake{});
      return AnyPolicy(Libfabric{});
    }
    const auto wrap = [](auto r) -> result<AnyPolicy> {
      if (!r) return fail(std::move(r).error());
      return AnyPolicy(std::move(r).value());
    };
    if (name == "nccl") return wrap(Nccl::parse_options(text, base));
    if (name == "ucx") return wrap(Ucx::parse_options(text, base));
    if (name == "perftest") return wrap(Perftest::parse_options(text, base));
    if (name == "mooncake") return wrap(Mooncake::parse_options(text, base));
    if (name == "libfabric") return wrap(Libfabric::parse_options(text, base));
    return wrap(RdmaCm::parse_options(text, base));
  }

  result<AnyPolicy> first_of(std::size_t start) {
    (void)start;
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

  result<AnyPolicy> per_device(std::size_t start) {
    (void)start;
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
  bool bare_jaccl = false;
  GIDPOLICY_TRY(policy, p.policy(allow_source ? &bare_jaccl : nullptr));
  p.skip_ws();
  SourceIndex source = bare_jaccl ? SourceIndex::literal(1) : SourceIndex::selected();
  if (p.peek() == '@') {
    const std::size_t at = p.pos();
    if (!allow_source)
      return p.error(
          at, "the end of the spec (a source-index rule '@sgid=N' belongs to a profile: parse_profile)");
    if (bare_jaccl)
      return p.error(
          at,
          "the end of the spec (jaccl already routes from the literal index 1; write jaccl-fixed@sgid=N)");
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
