// parse_snapshot(): one host's `gidpolicy show --json` text into GidTables, read in one pass.
//
// Why not a JSON DOM: a fleet of 10,000 hosts is ~100 MB of snapshots, and building a tree of
// allocated nodes per file (then walking it) ran at ~40 MB per CPU-second. This reader walks
// the text once, straight into PortInfo/GidEntry, skipping the display keys (`ipv4`, `flags`)
// and any key a newer gidpolicy adds. It is a strict JSON reader all the same: every value is
// checked for well-formedness (escapes, numbers, literals), nesting is bounded, and a syntax
// error names the line and column.
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/names.hpp>

#include "formats/text.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace gidpolicy::fleet {
namespace {

// Deeper than show --json's own nesting (array > port > entries > entry > flags) only in keys
// it skips; anything deeper than this is not a snapshot.
constexpr int kMaxDepth = 8;

struct SyntaxError {
  std::size_t offset;
  std::string what;
};

/// A cursor over JSON text. Methods return false after recording the first syntax error.
class Cursor {
 public:
  explicit Cursor(std::string_view text)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

  [[nodiscard]] bool failed() const noexcept { return error_.has_value(); }
  [[nodiscard]] const std::optional<SyntaxError>& error() const noexcept { return error_; }

  bool fail_here(std::string what) {
    if (!error_) error_ = SyntaxError{static_cast<std::size_t>(p_ - begin_), std::move(what)};
    return false;
  }

  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  /// The next significant character, or '\0' at the end.
  char peek() {
    ws();
    return p_ < end_ ? *p_ : '\0';
  }
  bool at_end() {
    ws();
    return p_ == end_;
  }
  bool consume(char c) {
    if (peek() != c) return fail_here(std::string("expected '") + c + "'" + found());
    ++p_;
    return true;
  }
  /// After '{' or '[' was consumed: true if the container is empty (and consumes the closer).
  bool empty_container(char closer) {
    if (peek() == closer) {
      ++p_;
      return true;
    }
    return false;
  }
  /// Between members: ',' continues (true), the closer ends (false, consumed).
  bool next_member(char closer, bool& more) {
    const char c = peek();
    if (c == ',') {
      ++p_;
      more = true;
      return true;
    }
    if (c == closer) {
      ++p_;
      more = false;
      return true;
    }
    return fail_here(std::string("expected ',' or '") + closer + "'" + found());
  }

  /// A JSON string into `out` (escapes decoded, \u to UTF-8).
  bool string(std::string& out) {
    if (peek() != '"') return fail_here("expected a string" + found());
    ++p_;
    out.clear();
    const char* run = p_;
    while (true) {
      // Copy plain runs in one go: most strings here have no escape and are ASCII.
      while (p_ < end_) {
        const auto u = static_cast<unsigned char>(*p_);
        if (u == '"' || u == '\\' || u < 0x20) break;
        if (u < 0x80) {
          ++p_;
        } else if (!utf8_sequence()) {  // JSON text is UTF-8 (RFC 8259); output re-encodes it
          return false;
        }
      }
      out.append(run, static_cast<std::size_t>(p_ - run));
      if (p_ >= end_) return fail_here("unterminated string");
      const char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return fail_here("control character in a string");
      ++p_;  // backslash
      if (p_ >= end_) return fail_here("unterminated escape");
      const char e = *p_++;
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          std::uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xd800 && cp <= 0xdbff) {
            std::uint32_t lo = 0;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u')
              return fail_here("unpaired surrogate in \\u escape");
            p_ += 2;
            if (!hex4(lo)) return false;
            if (lo < 0xdc00 || lo > 0xdfff) return fail_here("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          } else if (cp >= 0xdc00 && cp <= 0xdfff) {
            return fail_here("unpaired surrogate in \\u escape");
          }
          utf8(cp, out);
          break;
        }
        default:
          --p_;
          return fail_here(std::string("invalid escape '\\") + e + "'");
      }
      run = p_;
    }
  }

  /// A JSON number that must be a non-negative integer (no fraction, no exponent).
  /// `kind` is set to what was there instead when it is not.
  bool uint(std::uint64_t& out, std::string& not_uint) {
    ws();
    const char* start = p_;
    if (!number()) return false;
    const std::string_view tok(start, static_cast<std::size_t>(p_ - start));
    if (tok.find_first_of("-.eE") != std::string_view::npos) {
      not_uint = "the number " + std::string(tok);
      return true;
    }
    auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), out);
    if (ec != std::errc() || ptr != tok.data() + tok.size()) not_uint = "the number " + std::string(tok);
    return true;
  }

  bool literal(std::string_view word) {
    ws();
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0)
      return fail_here("invalid literal" + found());
    p_ += word.size();
    return true;
  }

  /// Skip any value, checking its syntax; `depth` counts the containers around it.
  bool skip(int depth) {
    const char c = peek();
    if (c == '{' || c == '[') {
      if (depth + 1 > kMaxDepth) return fail_here("nested deeper than a `gidpolicy show --json` document");
      ++p_;
      const char closer = c == '{' ? '}' : ']';
      if (empty_container(closer)) return true;
      std::string key;
      for (bool more = true; more;) {
        if (c == '{' && (!string(key) || !consume(':'))) return false;
        if (!skip(depth + 1) || !next_member(closer, more)) return false;
      }
      return true;
    }
    if (c == '"') {
      std::string s;
      return string(s);
    }
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    return fail_here("expected a value" + found());
  }

  /// What the next value is, for "expected X, found Y" messages (does not consume).
  std::string kind() {
    switch (peek()) {
      case '{':
        return "object";
      case '[':
        return "array";
      case '"':
        return "string";
      case 't':
      case 'f':
        return "boolean";
      case 'n':
        return "null";
      default:
        return "number";
    }
  }

  [[nodiscard]] std::size_t offset() const noexcept { return static_cast<std::size_t>(p_ - begin_); }

 private:
  std::string found() {
    if (p_ >= end_) return ", found the end of the text";
    const unsigned char c = static_cast<unsigned char>(*p_);
    if (c >= 0x20 && c < 0x7f) return std::string(", found '") + *p_ + "'";
    return ", found byte " + std::to_string(c);
  }
  /// One well-formed UTF-8 sequence at p_ (no overlong forms, surrogates or code points past
  /// U+10FFFF), consumed.
  bool utf8_sequence() {
    const auto b0 = static_cast<unsigned char>(*p_);
    int len = 0;
    std::uint32_t cp = 0, min = 0;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      len = 2, cp = b0 & 0x1fu, min = 0x80;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      len = 3, cp = b0 & 0x0fu, min = 0x800;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      len = 4, cp = b0 & 0x07u, min = 0x10000;
    } else {
      return fail_here("invalid UTF-8 in a string");
    }
    if (end_ - p_ < len) return fail_here("invalid UTF-8 in a string");
    for (int i = 1; i < len; ++i) {
      const auto b = static_cast<unsigned char>(p_[i]);
      if ((b & 0xc0u) != 0x80u) return fail_here("invalid UTF-8 in a string");
      cp = (cp << 6) | (b & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return fail_here("invalid UTF-8 in a string");
    p_ += len;
    return true;
  }
  bool hex4(std::uint32_t& v) {
    if (end_ - p_ < 4) return fail_here("truncated \\u escape");
    v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = *p_++;
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= static_cast<std::uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f')
        v |= static_cast<std::uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        v |= static_cast<std::uint32_t>(h - 'A' + 10);
      else
        return fail_here("invalid hex digit in \\u escape");
    }
    return true;
  }
  static void utf8(std::uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  /// JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number() {
    auto digit = [&] { return p_ < end_ && *p_ >= '0' && *p_ <= '9'; };
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (!digit()) return fail_here("invalid number" + found());
    if (*p_ == '0') {
      ++p_;
    } else {
      while (digit()) ++p_;
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (!digit()) return fail_here("invalid number" + found());
      while (digit()) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digit()) return fail_here("invalid number" + found());
      while (digit()) ++p_;
    }
    // A number no double holds (1e999) is refused, as the canonical JSON reader (nlohmann)
    // refuses it: the two readers accept the same documents. Integers are range-checked where
    // they are used; only fractions and exponents can overflow here.
    const std::string_view tok(start, static_cast<std::size_t>(p_ - start));
    if (tok.find_first_of(".eE") != std::string_view::npos &&
        !std::isfinite(std::strtod(std::string(tok).c_str(), nullptr))) {
      p_ = start;
      return fail_here("number out of range" + found());
    }
    return true;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::optional<SyntaxError> error_;
};

/// "[1].entries[4].gid", built only when an error needs it (not once per key read).
struct FieldPath {
  const std::string& base;
  const std::string& key;
  [[nodiscard]] std::string str() const { return base + "." + key; }
};

/// Reads one snapshot; semantic errors carry the field path, syntax errors the offset.
class SnapshotReader {
 public:
  SnapshotReader(std::string_view text, std::string_view source, const ReadLimits& limits)
      : text_(text), src_(source), limits_(limits), c_(text) {}

  result<std::vector<GidTable>> read(std::string& host) {
    std::vector<GidTable> ports;
    const char first = c_.peek();
    if (first == '{') {
      GIDPOLICY_TRY(t, port("port", host));
      ports.push_back(std::move(t));
    } else if (first == '[') {
      c_.consume('[');
      if (!c_.empty_container(']')) {
        for (bool more = true; more;) {
          if (ports.size() >= limits_.max_ports_per_host)
            return fail(errc::invalid_field, std::string(src_) + ": more than " +
                                                 std::to_string(limits_.max_ports_per_host) + " ports");
          GIDPOLICY_TRY(t, port("[" + std::to_string(ports.size()) + "]", host));
          ports.push_back(std::move(t));
          if (!c_.next_member(']', more)) return fail(syntax_error());
        }
      }
      if (ports.empty()) return fail(errc::invalid_field, std::string(src_) + ": no port listed");
    } else if (c_.at_end()) {
      return fail(errc::parse_error, std::string(src_) + ": empty: expected `gidpolicy show --json` output");
    } else {
      if (!c_.skip(0)) return fail(syntax_error());
      return fail(
          errc::invalid_field,
          std::string(src_) + ": expected `gidpolicy show --json` output (an object or an array of them)");
    }
    if (!c_.at_end()) {
      c_.fail_here("unexpected text after the document");
      return fail(syntax_error());
    }
    return ports;
  }

 private:
  Error syntax_error() const {
    const auto& e = *c_.error();
    return Error(errc::parse_error, std::string(src_) + ":" + formats::detail::line_column(text_, e.offset) +
                                        ": invalid JSON: " + e.what);
  }
  Error field_error(const std::string& path, const std::string& what, errc code = errc::invalid_field) const {
    return Error(code, std::string(src_) + ": " + path + ": " + what);
  }

  /// A string or null into `out` (null leaves it unset).
  result<bool> opt_string(const FieldPath& path, std::string& out) {
    const char c = c_.peek();
    if (c == 'n') {
      if (!c_.literal("null")) return fail(syntax_error());
      return false;
    }
    if (c != '"') {
      const std::string k = c_.kind();
      if (!c_.skip(3)) return fail(syntax_error());
      return fail(field_error(path.str(), "expected a string, found " + k));
    }
    if (!c_.string(out)) return fail(syntax_error());
    return true;
  }
  /// A non-negative integer up to `max`, or null (false).
  result<bool> opt_uint(const FieldPath& path, std::uint64_t max, std::uint64_t& out) {
    const char c = c_.peek();
    if (c == 'n') {
      if (!c_.literal("null")) return fail(syntax_error());
      return false;
    }
    if (c != '-' && (c < '0' || c > '9')) {
      const std::string k = c_.kind();
      if (!c_.skip(3)) return fail(syntax_error());
      return fail(field_error(path.str(), "expected a non-negative integer, found " + k));
    }
    std::string bad;
    if (!c_.uint(out, bad)) return fail(syntax_error());
    if (!bad.empty()) return fail(field_error(path.str(), "expected a non-negative integer, found " + bad));
    if (out > max)
      return fail(field_error(path.str(), std::to_string(out) + " is above " + std::to_string(max)));
    return true;
  }

  result<GidEntry> entry(const std::string& path) {
    if (c_.peek() != '{') {
      const std::string k = c_.kind();
      if (!c_.skip(3)) return fail(syntax_error());
      return fail(field_error(path, "expected an object, found " + k));
    }
    c_.consume('{');
    std::optional<std::uint64_t> index;
    std::string state = "valid", type, gid, netdev, key;
    bool has_gid = false, has_type = false;
    std::optional<std::uint64_t> err;
    if (!c_.empty_container('}')) {
      for (bool more = true; more;) {
        if (!c_.string(key) || !c_.consume(':')) return fail(syntax_error());
        const FieldPath at{path, key};
        if (key == "index") {
          std::uint64_t v = 0;
          GIDPOLICY_TRY(set, opt_uint(at, 0x7fffffffu, v));
          if (!set) return fail(field_error(at.str(), "expected a non-negative integer, found null"));
          index = v;
        } else if (key == "state") {
          std::string s;
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (set) state = s;
        } else if (key == "gid") {
          GIDPOLICY_TRY(set, opt_string(at, gid));
          has_gid = set;
        } else if (key == "type") {
          GIDPOLICY_TRY(set, opt_string(at, type));
          has_type = set;
        } else if (key == "netdev") {
          GIDPOLICY_TRY(set, opt_string(at, netdev));
          if (set && !netdev.empty())
            if (auto why = name_problem(netdev, NameKind::netdev))
              return fail(field_error(at.str(), "netdev name " + quote_name(netdev) + ": " + *why));
        } else if (key == "errno") {
          std::uint64_t v = 0;
          GIDPOLICY_TRY(set, opt_uint(at, 4095, v));
          if (set) err = v;
        } else if (!c_.skip(3)) {  // ipv4, flags, and keys newer versions add
          return fail(syntax_error());
        }
        if (!c_.next_member('}', more)) return fail(syntax_error());
      }
    }
    if (!index) return fail(field_error(path + ".index", "missing"));
    GidEntry e;
    e.index = static_cast<std::uint32_t>(*index);
    if (state == "valid")
      e.state = EntryState::valid;
    else if (state == "empty")
      e.state = EntryState::empty;
    else if (state == "unreadable")
      e.state = EntryState::unreadable;
    else
      return fail(field_error(path + ".state", "expected valid, empty or unreadable, found '" + state + "'"));
    if (has_type && e.state != EntryState::empty) {
      auto t = gid_type_from_string(type);
      if (!t)
        return fail(
            field_error(path + ".type", "expected ib, roce_v1, roce_v2 or unknown, found '" + type + "'"));
      e.type = *t;
    }
    if (e.state == EntryState::valid) {
      if (!has_gid) return fail(field_error(path + ".gid", "missing for a valid entry"));
      auto g = Gid::parse(gid);
      if (!g) return fail(field_error(path + ".gid", g.error().what(), errc::invalid_gid_text));
      e.gid = g.value();
      e.netdev = std::move(netdev);
    }
    if (e.state == EntryState::unreadable)
      e.read_error =
          std::error_code(static_cast<int>(err.value_or(5)), std::generic_category());  // EIO unless said
    return e;
  }

  result<GidTable> port(const std::string& path, std::string& host) {
    if (c_.peek() != '{') {
      const std::string k = c_.kind();
      if (!c_.skip(1)) return fail(syntax_error());
      return fail(field_error(path, "expected a port object, found " + k));
    }
    c_.consume('{');
    PortInfo p;
    Holes holes = Holes::empty;
    bool has_device = false, has_port = false, has_entries = false;
    std::vector<GidEntry> entries;
    std::string key, s;
    if (!c_.empty_container('}')) {
      for (bool more = true; more;) {
        if (!c_.string(key) || !c_.consume(':')) return fail(syntax_error());
        const FieldPath at{path, key};
        std::uint64_t v = 0;
        if (key == "host") {
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (set && host.empty()) host = s;
        } else if (key == "device") {
          GIDPOLICY_TRY(set, opt_string(at, p.device));
          if (!set) return fail(field_error(at.str(), "expected a device name, found null"));
          // The name rule (names.hpp): the device name is printed in every report line.
          if (auto why = name_problem(p.device, NameKind::device))
            return fail(field_error(at.str(), "device name " + quote_name(p.device) + ": " + *why));
          has_device = true;
        } else if (key == "port") {
          GIDPOLICY_TRY(set, opt_uint(at, 255, v));
          if (!set) return fail(field_error(at.str(), "expected a port number, found null"));
          p.port = static_cast<std::uint32_t>(v);
          has_port = true;
        } else if (key == "state") {
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (set) {
            auto st = port_state_from_string(s);
            if (!st) return fail(field_error(at.str(), "unknown port state '" + s + "'"));
            p.state = *st;
          }
        } else if (key == "link_layer") {
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (set) {
            auto l = link_layer_from_string(s);
            if (!l) return fail(field_error(at.str(), "unknown link layer '" + s + "'"));
            p.link_layer = *l;
          }
        } else if (key == "gid_tbl_len") {
          GIDPOLICY_TRY(set, opt_uint(at, 0x7fffffffu, v));
          if (set) p.gid_tbl_len = static_cast<std::uint32_t>(v);
        } else if (key == "active_mtu") {
          GIDPOLICY_TRY(set, opt_uint(at, 4096, v));
          if (set) {
            auto m = mtu_from_bytes(static_cast<unsigned>(v));
            if (!m) return fail(field_error(at.str(), "expected 256, 512, 1024, 2048 or 4096"));
            p.active_mtu = *m;
          }
        } else if (key == "lid") {
          GIDPOLICY_TRY(set, opt_uint(at, 0xffff, v));
          if (set) p.lid = static_cast<std::uint16_t>(v);
        } else if (key == "holes") {
          GIDPOLICY_TRY(set, opt_string(at, s));
          if (set && s == "not_shown")
            holes = Holes::not_shown;
          else if (set && s != "empty")
            return fail(field_error(at.str(), "expected empty or not_shown, found '" + s + "'"));
        } else if (key == "entries") {
          if (c_.peek() != '[') {
            const std::string k = c_.kind();
            if (!c_.skip(2)) return fail(syntax_error());
            return fail(field_error(at.str(), "expected an array, found " + k));
          }
          c_.consume('[');
          entries.clear();
          has_entries = true;
          if (!c_.empty_container(']')) {
            for (bool more_entries = true; more_entries;) {
              if (entries.size() >= limits_.max_entries_per_port)
                return fail(field_error(
                    at.str(), "more than " + std::to_string(limits_.max_entries_per_port) + " entries"));
              GIDPOLICY_TRY(e, entry(at.str() + "[" + std::to_string(entries.size()) + "]"));
              entries.push_back(std::move(e));
              if (!c_.next_member(']', more_entries)) return fail(syntax_error());
            }
          }
        } else if (!c_.skip(2)) {
          return fail(syntax_error());
        }
        if (!c_.next_member('}', more)) return fail(syntax_error());
      }
    }
    if (!has_device)
      return fail(field_error(path + ".device", "missing (is this `gidpolicy show --json` output?)"));
    if (!has_port) return fail(field_error(path + ".port", "missing"));
    if (!has_entries) return fail(field_error(path + ".entries", "missing"));
    auto t = GidTable::make(std::move(p), std::move(entries), holes);
    if (!t) return fail(Error(t.error().code, std::string(src_) + ": " + path + ": " + t.error().detail));
    return std::move(t).value();
  }

  std::string_view text_;
  std::string_view src_;
  const ReadLimits& limits_;
  Cursor c_;
};

std::string stem_of(std::string_view source) {
  std::string s = std::filesystem::path(std::string(source)).filename().string();
  if (s.size() > 5 && s.ends_with(".json")) s.resize(s.size() - 5);
  return s;
}

}  // namespace

result<HostSnapshot> parse_snapshot(std::string_view text, std::string_view source, std::string_view host,
                                    const ReadLimits& limits) {
  HostSnapshot h;
  h.source = std::string(source);
  std::string from_doc;
  SnapshotReader reader(text, source, limits);
  GIDPOLICY_TRY(ports, reader.read(from_doc));
  h.ports = std::move(ports);
  const char* from = !host.empty()       ? "given with HOST=FILE"
                     : !from_doc.empty() ? "its \"host\""
                                         : "its file name";
  h.host = !host.empty() ? std::string(host) : !from_doc.empty() ? from_doc : stem_of(source);
  // The name rule (names.hpp): a host name is printed in report lines, JSON and SVG.
  if (auto why = name_problem(h.host, NameKind::host))
    return fail(errc::invalid_field, std::string(source) + ": host name " + quote_name(h.host, 80) + " (" +
                                         from + "): " + *why +
                                         (host.empty() ? "; name the host with HOST=FILE" : ""));
  return h;
}

}  // namespace gidpolicy::fleet
