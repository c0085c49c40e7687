// Internal helpers shared by the pasted-text readers (ibv_devinfo, show_gids) and detection.
// Not installed: the public API is include/gidpolicy/formats/*.hpp.
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/names.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::formats::detail {

/// One line of input: 1-based number, text without the line ending (\n, \r\n or \r\n\r).
struct Line {
  std::size_t number = 0;
  std::string_view text;
};

/// Split into lines. CR before LF is dropped (pastes from Windows terminals and browsers); a
/// UTF-8 byte order mark at the start is skipped (editors add one when a paste is saved).
inline std::vector<Line> split_lines(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<Line> out;
  std::size_t number = 1;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back({number++, line});
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

inline bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }

inline std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

/// Whitespace-separated tokens (tabs and spaces alike: pasted tables often lose their tabs).
inline std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t k = 0;
  while (k < s.size()) {
    while (k < s.size() && is_space(s[k])) ++k;
    std::size_t start = k;
    while (k < s.size() && !is_space(s[k])) ++k;
    if (k > start) out.push_back(s.substr(start, k - start));
  }
  return out;
}

/// The column (1-based) of the first byte that no text tool prints: NUL, C0 controls other
/// than tab/CR, DEL. Bytes >= 0x80 are allowed: pastes carry UTF-8 (quotes, ellipses).
inline std::optional<std::size_t> binary_column(std::string_view s) noexcept {
  for (std::size_t k = 0; k < s.size(); ++k) {
    auto c = static_cast<unsigned char>(s[k]);
    if ((c < 0x20 && c != '\t' && c != '\r' && c != '\v' && c != '\f') || c == 0x7f) return k + 1;
  }
  return std::nullopt;
}

inline std::string hex_byte(std::string_view s, std::size_t column) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned>(static_cast<unsigned char>(s[column - 1])));
  return buf;
}

/// "<source>:<line>" as compilers print it, so editors can jump to the spot.
inline std::string at(std::string_view source, std::size_t line) {
  return std::string(source) + ":" + std::to_string(line);
}

/// "L:C" (1-based line and column) of byte offset `byte` in `text`, clamped to its end: the
/// position every reader's errors give (format detection's binary bytes, JSON syntax errors, the
/// fleet's readers), as compilers print it.
inline std::string line_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  for (std::size_t k = 0; k < byte && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

/// At most `max` bytes of `s`, quoted, for "found ..." parts of messages; non-printing bytes
/// shown as \xNN so a message about binary input stays one readable line (the name rule's
/// quote_name(), names.hpp).
inline std::string excerpt(std::string_view s, std::size_t max = 40) { return quote_name(s, max); }

/// The two kinds of names a table carries, under the one name rule of names.hpp: non-empty, at
/// most 63 (device) or 15 (netdev) bytes, printable ASCII without spaces (the text formats
/// separate columns with whitespace and a control byte breaks lines), no '/' (a sysfs directory
/// name), not "." or "..", and for netdevs no ':' (the kernel's dev_valid_name()). Every reader
/// (JSON, ibv_devinfo, show_gids, sysfs, the fake's table files) applies it, so whatever one
/// reader accepts every writer can write and read back.
using gidpolicy::kMaxDeviceName;
using gidpolicy::kMaxNetdevName;
using gidpolicy::name_problem;
using gidpolicy::NameKind;

/// A whole decimal number in [0, max]; nullopt for anything else (sign, spaces, overflow).
inline std::optional<std::uint64_t> parse_decimal(std::string_view s, std::uint64_t max) noexcept {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v > max) return std::nullopt;
  return v;
}

/// "0x1f" or "1f" as hexadecimal, or nullopt.
inline std::optional<std::uint64_t> parse_hex(std::string_view s, std::uint64_t max) noexcept {
  if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc{} || p != s.data() + s.size() || v > max) return std::nullopt;
  return v;
}

/// The number in a trailing "(N)", as ibv_devinfo prints enum values ("PORT_ACTIVE (4)").
inline std::optional<std::uint64_t> parenthesised_number(std::string_view s, std::uint64_t max) noexcept {
  s = trim(s);
  if (!s.ends_with(')')) return std::nullopt;
  std::size_t open = s.rfind('(');
  if (open == std::string_view::npos) return std::nullopt;
  return parse_decimal(s.substr(open + 1, s.size() - open - 2), max);
}

/// The text before a trailing "(N)", trimmed ("PORT_ACTIVE").
inline std::string_view before_parenthesis(std::string_view s) noexcept {
  s = trim(s);
  std::size_t open = s.rfind('(');
  if (open == std::string_view::npos || !s.ends_with(')')) return s;
  return trim(s.substr(0, open));
}

/// A link layer as ibv_devinfo and sysfs spell it ("InfiniBand", "Ethernet", "Thunderbolt",
/// "Unknown"): shared by the devinfo and sysfs writers.
inline const char* link_layer_name(LinkLayer ll) noexcept {
  switch (ll.kind()) {
    case LinkLayer::Kind::infiniband:
      return "InfiniBand";
    case LinkLayer::Kind::ethernet:
      return "Ethernet";
    case LinkLayer::Kind::thunderbolt:
      return "Thunderbolt";
    case LinkLayer::Kind::unknown:
      break;
  }
  return "Unknown";
}

}  // namespace gidpolicy::formats::detail
