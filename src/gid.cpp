#include <gidpolicy/gid.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <string>

namespace gidpolicy {

#if defined(__cpp_lib_bit_cast)
// The word built byte by byte (what a library without std::bit_cast uses, gid.hpp) is the one
// std::bit_cast gives, on this target's byte order.
static_assert(detail_gid::bytewise_word<std::uint32_t>(std::array<std::uint8_t, 4>{0, 0, 0xff, 0xff}) ==
              std::bit_cast<std::uint32_t>(std::array<std::uint8_t, 4>{0, 0, 0xff, 0xff}));
static_assert(detail_gid::bytewise_word<std::uint32_t>(std::array<std::uint8_t, 4>{0x12, 0x34, 0x56, 0x78}) ==
              std::bit_cast<std::uint32_t>(std::array<std::uint8_t, 4>{0x12, 0x34, 0x56, 0x78}));
static_assert(detail_gid::bytewise_word<std::uint16_t>(std::array<std::uint8_t, 2>{0xfe, 0x80}) ==
              std::bit_cast<std::uint16_t>(std::array<std::uint8_t, 2>{0xfe, 0x80}));
static_assert(detail_gid::bytewise_word<std::uint64_t>(std::array<std::uint8_t, 8>{1, 2, 3, 4, 5, 6, 7, 8}) ==
              std::bit_cast<std::uint64_t>(std::array<std::uint8_t, 8>{1, 2, 3, 4, 5, 6, 7, 8}));
#endif
namespace {

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string quoted(std::string_view s) {
  // Keep messages one line and printable even for binary garbage.
  std::string out = "\"";
  for (char c : s.substr(0, 64)) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  if (s.size() > 64) out += "...";
  return out + "\"";
}

Error text_error(std::string_view text, std::size_t pos, std::string_view reason) {
  return Error(errc::invalid_gid_text,
               "at position " + std::to_string(pos) + ": " + std::string(reason) + " in " + quoted(text));
}

std::string describe_char(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("unexpected character '") + c + "'";
  char buf[40];
  std::snprintf(buf, sizeof buf, "unexpected byte 0x%02x", u);
  return buf;
}

// Dotted quad at text[pos, end); writes 4 bytes. Returns the position of the first error or npos.
struct Ipv4Parse {
  std::array<std::uint8_t, 4> bytes{};
  std::size_t error_pos = std::string_view::npos;
  std::string reason;
};

Ipv4Parse parse_ipv4(std::string_view text, std::size_t pos, std::size_t end) {
  Ipv4Parse r;
  std::size_t i = pos;
  for (int octet = 0; octet < 4; ++octet) {
    if (octet > 0) {
      if (i >= end || text[i] != '.') {
        r.error_pos = i;
        r.reason = i >= end ? "IPv4 part has fewer than 4 octets" : describe_char(text[i]) + " in IPv4 part";
        return r;
      }
      ++i;
    }
    std::size_t start = i;
    unsigned value = 0;
    while (i < end && text[i] >= '0' && text[i] <= '9') {
      value = value * 10 + static_cast<unsigned>(text[i] - '0');
      ++i;
      if (i - start > 3) {
        r.error_pos = start;
        r.reason = "IPv4 octet longer than 3 digits";
        return r;
      }
    }
    if (i == start) {
      r.error_pos = i;
      r.reason =
          i >= end ? "IPv4 octet missing" : describe_char(text[i]) + " where an IPv4 octet was expected";
      return r;
    }
    // inet_pton refuses "01" (it could be read as octal, as inet_aton does): so does this.
    if (i - start > 1 && text[start] == '0') {
      r.error_pos = start;
      r.reason = "IPv4 octet with a leading zero ('" + std::string(text.substr(start, i - start)) +
                 "': inet_pton refuses it)";
      return r;
    }
    if (value > 255) {
      r.error_pos = start;
      r.reason = "IPv4 octet " + std::to_string(value) + " above 255";
      return r;
    }
    r.bytes[static_cast<std::size_t>(octet)] = static_cast<std::uint8_t>(value);
  }
  if (i != end) {
    r.error_pos = i;
    r.reason = describe_char(text[i]) + " after the IPv4 part";
  }
  return r;
}

}  // namespace

result<Gid> Gid::parse(std::string_view text) {
  if (text.empty()) return fail(text_error(text, 0, "empty text"));
  std::array<std::uint16_t, 8> head{}, tail{};
  std::size_t nhead = 0, ntail = 0;
  bool compressed = false;
  std::size_t i = 0;
  const std::size_t n = text.size();

  if (text[0] == ':') {
    if (n < 2 || text[1] != ':') return fail(text_error(text, 0, "a single ':' cannot start an address"));
    compressed = true;
    i = 2;
    if (i < n && text[i] == ':') return fail(text_error(text, i, "':::' is not valid"));
  }
  while (i < n) {
    std::size_t j = i;
    bool dotted = false;
    while (j < n && text[j] != ':') {
      if (text[j] == '.') dotted = true;
      ++j;
    }
    std::size_t groups_so_far = nhead + ntail;
    if (dotted) {
      if (j != n) return fail(text_error(text, j, "an IPv4 part must end the address"));
      if (groups_so_far > 6) return fail(text_error(text, i, "too many groups before the IPv4 part"));
      Ipv4Parse v4 = parse_ipv4(text, i, j);
      if (v4.error_pos != std::string_view::npos) return fail(text_error(text, v4.error_pos, v4.reason));
      auto& dst = compressed ? tail : head;
      auto& cnt = compressed ? ntail : nhead;
      dst[cnt++] = static_cast<std::uint16_t>((v4.bytes[0] << 8) | v4.bytes[1]);
      dst[cnt++] = static_cast<std::uint16_t>((v4.bytes[2] << 8) | v4.bytes[3]);
      i = j;
      break;
    }
    if (groups_so_far >= 8) return fail(text_error(text, i, "more than 8 groups"));
    unsigned value = 0;
    for (std::size_t k = i; k < j; ++k) {
      int h = hex_value(text[k]);
      if (h < 0) return fail(text_error(text, k, describe_char(text[k])));
      if (k - i >= 4) return fail(text_error(text, k, "group longer than 4 hex digits"));
      value = (value << 4) | static_cast<unsigned>(h);
    }
    auto& dst = compressed ? tail : head;
    auto& cnt = compressed ? ntail : nhead;
    dst[cnt++] = static_cast<std::uint16_t>(value);
    i = j;
    if (i == n) break;
    // text[i] == ':'
    if (i + 1 < n && text[i + 1] == ':') {
      if (compressed) return fail(text_error(text, i, "'::' may appear only once"));
      compressed = true;
      i += 2;
      if (i < n && text[i] == ':') return fail(text_error(text, i, "':::' is not valid"));
    } else {
      ++i;
      if (i == n) return fail(text_error(text, i - 1, "address ends with a single ':'"));
      if (text[i] == ':') return fail(text_error(text, i, "empty group"));
    }
  }
  std::size_t total = nhead + ntail;
  if (!compressed && total != 8)
    return fail(text_error(text, n, "expected 8 groups, found " + std::to_string(total)));
  if (compressed && total > 7)
    return fail(text_error(text, n, "'::' must stand for at least one zero group"));

  Gid g;
  for (std::size_t k = 0; k < nhead; ++k) {
    g.raw_[2 * k] = static_cast<std::uint8_t>(head[k] >> 8);
    g.raw_[2 * k + 1] = static_cast<std::uint8_t>(head[k]);
  }
  for (std::size_t k = 0; k < ntail; ++k) {
    std::size_t at = 8 - ntail + k;
    g.raw_[2 * at] = static_cast<std::uint8_t>(tail[k] >> 8);
    g.raw_[2 * at + 1] = static_cast<std::uint8_t>(tail[k]);
  }
  return g;
}

std::string Gid::to_string() const {
  // Same output as glibc's inet_ntop(AF_INET6): ibv_devinfo prints RoCE v2 GIDs with it, so the
  // devinfo writer and the reader agree byte for byte with the real tool.
  std::array<unsigned, 8> w{};
  for (std::size_t k = 0; k < 8; ++k) w[k] = (unsigned{raw_[2 * k]} << 8) | raw_[2 * k + 1];
  int best_base = -1, best_len = 0, cur_base = -1, cur_len = 0;
  for (int k = 0; k < 8; ++k) {
    if (w[static_cast<std::size_t>(k)] == 0) {
      if (cur_base < 0) {
        cur_base = k;
        cur_len = 1;
      } else {
        ++cur_len;
      }
    } else if (cur_base >= 0) {
      if (best_base < 0 || cur_len > best_len) {
        best_base = cur_base;
        best_len = cur_len;
      }
      cur_base = -1;
    }
  }
  if (cur_base >= 0 && (best_base < 0 || cur_len > best_len)) {
    best_base = cur_base;
    best_len = cur_len;
  }
  if (best_len < 2) best_base = -1;

  std::string out;
  char buf[8];
  for (int k = 0; k < 8; ++k) {
    if (best_base >= 0 && k >= best_base && k < best_base + best_len) {
      if (k == best_base) out += ':';
      continue;
    }
    if (k != 0) out += ':';
    // IPv4-compatible (::a.b.c.d) and IPv4-mapped (::ffff:a.b.c.d) tails print dotted.
    if (k == 6 && best_base == 0 && (best_len == 6 || (best_len == 5 && w[5] == 0xffff))) {
      std::snprintf(buf, sizeof buf, "%u", unsigned{raw_[12]});
      out += buf;
      for (std::size_t b = 13; b < 16; ++b) {
        std::snprintf(buf, sizeof buf, ".%u", unsigned{raw_[b]});
        out += buf;
      }
      return out;
    }
    std::snprintf(buf, sizeof buf, "%x", w[static_cast<std::size_t>(k)]);
    out += buf;
  }
  if (best_base >= 0 && best_base + best_len == 8) out += ':';
  return out;
}

std::string Gid::to_full_string() const {
  std::string out;
  out.reserve(39);
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t k = 0; k < 16; ++k) {
    if (k != 0 && k % 2 == 0) out += ':';
    out += kHex[raw_[k] >> 4];
    out += kHex[raw_[k] & 0xf];
  }
  return out;
}

std::string Gid::ipv4_string() const {
  if (!is_ipv4_mapped()) return {};
  char buf[16];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", unsigned{raw_[12]}, unsigned{raw_[13]}, unsigned{raw_[14]},
                unsigned{raw_[15]});
  return buf;
}

result<Gid> parse_address(std::string_view text) {
  if (text.find(':') == std::string_view::npos && text.find('.') != std::string_view::npos) {
    Ipv4Parse v4 = parse_ipv4(text, 0, text.size());
    if (v4.error_pos != std::string_view::npos) return fail(text_error(text, v4.error_pos, v4.reason));
    return Gid::ipv4_mapped((std::uint32_t{v4.bytes[0]} << 24) | (std::uint32_t{v4.bytes[1]} << 16) |
                            (std::uint32_t{v4.bytes[2]} << 8) | std::uint32_t{v4.bytes[3]});
  }
  return Gid::parse(text);
}

result<Cidr> Cidr::parse(std::string_view text) {
  auto bad = [&](std::size_t pos, const std::string& why) {
    return fail(errc::invalid_field,
                "CIDR " + quoted(text) + " at position " + std::to_string(pos) + ": " + why);
  };
  std::size_t slash = text.find('/');
  std::string_view addr = text.substr(0, slash);
  bool v4 = addr.find(':') == std::string_view::npos;
  auto gid = parse_address(addr);
  if (!gid) return bad(0, gid.error().detail);
  unsigned max_len = v4 ? 32 : 128;
  unsigned len = max_len;
  if (slash != std::string_view::npos) {
    std::string_view digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3) return bad(slash + 1, "expected a prefix length after '/'");
    len = 0;
    for (std::size_t k = 0; k < digits.size(); ++k) {
      char c = digits[k];
      if (c < '0' || c > '9') return bad(slash + 1 + k, describe_char(c) + " in the prefix length");
      len = len * 10 + static_cast<unsigned>(c - '0');
    }
    if (len > max_len)
      return bad(slash + 1, "prefix length " + std::to_string(len) + " above " + std::to_string(max_len));
  }
  Cidr c;
  c.network = gid.value();
  c.prefix_len = v4 ? len + 96 : len;
  return c;
}

std::string Cidr::to_string() const {
  if (prefix_len >= 96 && network.is_ipv4_mapped())
    return network.ipv4_string() + "/" + std::to_string(prefix_len - 96);
  return network.to_string() + "/" + std::to_string(prefix_len);
}

}  // namespace gidpolicy
