// UTF-8 decoding and the code points no line may carry: one implementation shared by the name
// rule (names.cpp) and the quoting rules (quoting.cpp), so that what one refuses the other
// escapes. Private to the library.
#pragma once

#include <cstddef>
#include <string_view>

namespace gidpolicy::text_detail {

/// Length of the well-formed UTF-8 sequence at `s[k]` and its code point, or 0 when the bytes
/// there are not one (stray continuation, overlong, surrogate, above U+10FFFF, cut short).
inline std::size_t utf8_sequence(std::string_view s, std::size_t k, char32_t& cp) noexcept {
  const auto b0 = static_cast<unsigned char>(s[k]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  std::size_t n = 0;
  char32_t min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
    cp = b0 & 0x1Fu;
    min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    cp = b0 & 0x0Fu;
    min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    cp = b0 & 0x07u;
    min = 0x10000;
  } else {
    return 0;
  }
  if (k + n > s.size()) return 0;
  for (std::size_t i = 1; i < n; ++i) {
    const auto b = static_cast<unsigned char>(s[k + i]);
    if ((b & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

/// Why a code point may not be printed inside a line gidpolicy writes, or nullptr.
inline const char* unprintable(char32_t cp) noexcept {
  if (cp < 0x20 || cp == 0x7F) return "a control character";
  if (cp >= 0x80 && cp <= 0x9F) return "a C1 control character";
  if (cp == 0x2028 || cp == 0x2029) return "a line or paragraph separator";
  if (cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069))
    return "a bidirectional formatting character";
  return nullptr;
}

}  // namespace gidpolicy::text_detail
