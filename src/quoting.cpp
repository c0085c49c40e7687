// The quoting rules (quoting.hpp): file names from input, shown text, shell words, JSON text.
#include <gidpolicy/names.hpp>
#include <gidpolicy/quoting.hpp>

#include "utf8.hpp"

#include <cstdio>

namespace gidpolicy {
namespace {

using text_detail::utf8_sequence;

/// Code points that must not reach a terminal as they are (utf8.hpp: the same ones the name
/// rule refuses).
bool hidden(char32_t cp) { return text_detail::unprintable(cp) != nullptr; }

std::string hex_byte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
  return buf;
}

/// The escape show_text() writes for a hidden code point.
std::string escape(char32_t cp) {
  switch (cp) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case 0x1B:
      return "\\e";
    default:
      break;
  }
  if (cp < 0x80) return hex_byte(static_cast<unsigned char>(cp));
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
  return buf;
}

bool bare_shell_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || c == '/' || c == ':' || c == ',' || c == '+' || c == '=' || c == '@' || c == '%';
}

}  // namespace

std::optional<std::string> file_name_problem(std::string_view name) {
  if (name.empty()) return std::string("must not be empty");
  if (name == "." || name == "..")
    return "is \"" + std::string(name) + "\", which names a directory, not a file in it";
  if (name.size() > kMaxFileName)
    return "is " + std::to_string(name.size()) + " bytes, longer than " + std::to_string(kMaxFileName);
  for (std::size_t k = 0; k < name.size(); ++k) {
    const auto c = static_cast<unsigned char>(name[k]);
    if (c == '/') return "contains '/' (byte " + std::to_string(k + 1) + "): a file name, not a path";
    if (c == 0) return "byte " + std::to_string(k + 1) + " is NUL";
    if (c < 0x20 || c == 0x7f)
      return "byte " + std::to_string(k + 1) + " is 0x" + hex_byte(c).substr(2) + " (a control character)";
  }
  char32_t cp = 0;
  for (std::size_t k = 0; k < name.size();) {
    const std::size_t n = utf8_sequence(name, k, cp);
    if (n == 0) return "is not UTF-8 (byte " + std::to_string(k + 1) + ")";
    if (hidden(cp)) return "byte " + std::to_string(k + 1) + " starts a control or bidirectional character";
    k += n;
  }
  return std::nullopt;
}

result<std::string> join_file_name(std::string_view dir, std::string_view name) {
  if (auto why = file_name_problem(name))
    return fail(errc::invalid_argument, "file name " + quote_name(name, 80) + " " + *why);
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out += '/';
  out += name;
  return out;
}

std::string show_text(std::string_view s, std::size_t max) {
  std::string out;
  out.reserve(s.size() < max ? s.size() : max);
  char32_t cp = 0;
  std::size_t k = 0;
  while (k < s.size()) {
    std::size_t n = utf8_sequence(s, k, cp);
    if (k + (n == 0 ? 1 : n) > max) break;
    if (n == 0) {
      out += hex_byte(static_cast<unsigned char>(s[k]));
      n = 1;
    } else if (hidden(cp)) {
      out += escape(cp);
    } else {
      out.append(s.substr(k, n));
    }
    k += n;
  }
  if (k < s.size()) out += "...";
  return out;
}

std::string shell_quote(std::string_view s) {
  bool bare = !s.empty();
  bool plain = true;  // no byte needs $'...'
  char32_t cp = 0;
  for (std::size_t k = 0; k < s.size();) {
    const std::size_t n = utf8_sequence(s, k, cp);
    if (n == 0 || hidden(cp)) plain = false;
    if (n != 1 || !bare_shell_byte(static_cast<unsigned char>(s[k]))) bare = false;
    k += n == 0 ? 1 : n;
  }
  if (bare) return std::string(s);
  if (plain) {
    // '...' keeps every byte but the quote itself, which is closed, escaped and reopened.
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }
  // $'...' (bash, zsh, ksh93, and POSIX.1-2024's sh): backslash escapes for what may not appear
  // as it is.
  std::string out = "$'";
  for (std::size_t k = 0; k < s.size();) {
    std::size_t n = utf8_sequence(s, k, cp);
    if (n == 0) {
      out += hex_byte(static_cast<unsigned char>(s[k]));
      n = 1;
    } else if (cp == '\'' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (hidden(cp)) {
      // Every byte of the sequence as \xNN: bash reads them back as those bytes.
      for (std::size_t i = 0; i < n; ++i) out += hex_byte(static_cast<unsigned char>(s[k + i]));
    } else {
      out.append(s.substr(k, n));
    }
    k += n;
  }
  return out + "'";
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char32_t cp = 0;
  for (std::size_t k = 0; k < s.size();) {
    const std::size_t n = utf8_sequence(s, k, cp);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++k;
    } else {
      out.append(s.substr(k, n));
      k += n;
    }
  }
  return out;
}

}  // namespace gidpolicy
