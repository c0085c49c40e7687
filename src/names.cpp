// The name rule (names.hpp): one implementation for every reader, the fleet, the CLI and the
// C API.
#include <gidpolicy/names.hpp>

#include "utf8.hpp"

#include <cstdio>

namespace gidpolicy {
namespace {

using text_detail::unprintable;
using text_detail::utf8_sequence;

std::string hex(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned>(c));
  return buf;
}

std::optional<std::string> kernel_name_problem(std::string_view name, NameKind kind) {
  const bool dev = kind == NameKind::device;
  const std::size_t max = dev ? kMaxDeviceName : kMaxNetdevName;
  if (name.empty()) return std::string("must not be empty");
  if (name.size() > max)
    return std::to_string(name.size()) + " bytes is longer than the kernel allows for a " +
           (dev ? "device name (63)" : "netdev name (15, IFNAMSIZ - 1)");
  if (name == "." || name == "..") return "'" + std::string(name) + "' is not a name";
  for (std::size_t k = 0; k < name.size(); ++k) {
    const auto c = static_cast<unsigned char>(name[k]);
    if (c <= 0x20 || c >= 0x7f)
      return "byte " + std::to_string(k + 1) + " is " + hex(c) +
             " (names are printable ASCII without spaces)";
    if (c == '/') return std::string("contains '/'");
    if (!dev && c == ':') return std::string("contains ':' (not allowed in a netdev name)");
  }
  return std::nullopt;
}

std::optional<std::string> text_name_problem(std::string_view name, NameKind kind) {
  const std::size_t max = kind == NameKind::host ? kMaxHostName : kMaxPathName;
  if (name.empty()) return std::string("must not be empty");
  if (name.size() > max)
    return std::to_string(name.size()) + " bytes is longer than " + std::to_string(max) + " bytes";
  for (std::size_t k = 0; k < name.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_sequence(name, k, cp);
    if (n == 0)
      return "is not UTF-8 (byte " + std::to_string(k + 1) + " is " +
             hex(static_cast<unsigned char>(name[k])) + ")";
    if (const char* why = unprintable(cp))
      return "byte " + std::to_string(k + 1) + " starts " + why + " (" +
             (cp < 0x80 ? hex(static_cast<unsigned char>(cp))
                        : "U+" +
                              [&] {
                                char buf[12];
                                std::snprintf(buf, sizeof buf, "%04X", static_cast<unsigned>(cp));
                                return std::string(buf);
                              }()) +
             ")";
    k += n;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> name_problem(std::string_view name, NameKind kind) {
  switch (kind) {
    case NameKind::device:
    case NameKind::netdev:
      return kernel_name_problem(name, kind);
    case NameKind::host:
    case NameKind::path:
      return text_name_problem(name, kind);
  }
  return std::string("unknown kind of name");
}

std::string quote_name(std::string_view s, std::size_t max) {
  std::string out = "\"";
  for (std::size_t k = 0; k < s.size() && k < max; ++k) {
    auto c = static_cast<unsigned char>(s[k]);
    if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max) out += "...";
  out += "\"";
  return out;
}

bool is_utf8(std::string_view s) noexcept {
  char32_t cp = 0;
  for (std::size_t k = 0; k < s.size();) {
    const std::size_t n = utf8_sequence(s, k, cp);
    if (n == 0) return false;
    k += n;
  }
  return true;
}

std::string_view cut_utf8(std::string_view s, std::size_t max_bytes) noexcept {
  if (s.size() <= max_bytes) return s;
  std::size_t end = max_bytes;
  // Back over continuation bytes to the start of the sequence the cut falls in: that sequence
  // does not fit whole, so it goes.
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0u) == 0x80u) --end;
  return s.substr(0, end);
}

}  // namespace gidpolicy
