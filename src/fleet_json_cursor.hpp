// A strict one-pass JSON cursor for parse_snapshot() (internal; see fleet_snapshot.cpp): it
// checks every value for well-formedness (escapes, numbers, literals), bounds nesting, and
// records the first syntax error's offset, without building a tree.
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace gidpolicy::fleet::detail {

// Deeper than show --json's own nesting (array > port > entries > entry > flags) only in keys
// it skips; anything deeper than this is not a snapshot.
inline constexpr int kMaxDepth = 8;

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

}  // namespace gidpolicy::fleet::detail
