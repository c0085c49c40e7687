// Gid: the 16 bytes of an RDMA global identifier, as a value.
//
// Hardware gotcha encoded here: RoCE and Apple Thunderbolt GIDs are IPv6 addresses, and the
// IPv4 ones are IPv4-mapped (::ffff:a.b.c.d). Whether a GID "is IPv4" is decided on the raw
// bytes with JACCL's exact rule (bytes 0-9 zero, 10-11 ff ff), never by reinterpreting the array
// as integers (no type punning: the bytes are compared and copied with memcpy/memcmp semantics).
//
// Example:
//   auto g = gidpolicy::Gid::parse("::ffff:10.0.0.1").value();
//   g.is_ipv4_mapped();        // true
//   g.ipv4_string();           // "10.0.0.1"
//   g.to_string();             // "::ffff:10.0.0.1"
//   g.to_full_string();        // "0000:0000:0000:0000:0000:ffff:0a00:0001"
#pragma once

#include <gidpolicy/error.hpp>

#include <array>
#include <bit>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace gidpolicy {

namespace detail_gid {
// The native-order word whose bytes in memory are `bytes`, built byte by byte in std::endian's
// order: no cast and no memcpy. src/gid.cpp checks it equals std::bit_cast where both exist.
template <typename Word, std::size_t N>
[[nodiscard]] constexpr Word bytewise_word(const std::array<std::uint8_t, N>& bytes) noexcept {
  static_assert(sizeof(Word) == N && std::is_unsigned_v<Word>);
  static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
                "a mixed-endian target has no native word order to build");
  Word w = 0;
  for (std::size_t i = 0; i < N; ++i) {
    const std::size_t byte = std::endian::native == std::endian::little ? i : N - 1 - i;
    w = static_cast<Word>(w | static_cast<Word>(static_cast<Word>(bytes[i]) << (8 * byte)));
  }
  return w;
}
// The same word: std::bit_cast where the C++ library has it (libstdc++ 11+, libc++ 14+), else
// bytewise_word() (libc++ 13, emscripten 3.1's, has no std::bit_cast).
template <typename Word, std::size_t N>
[[nodiscard]] constexpr Word native_word(const std::array<std::uint8_t, N>& bytes) noexcept {
#if defined(__cpp_lib_bit_cast)
  return std::bit_cast<Word>(bytes);
#else
  return bytewise_word<Word>(bytes);
#endif
}
}  // namespace detail_gid

/// A 128-bit GID in network byte order (byte 0 is the first byte on the wire).
class Gid {
 public:
  using Bytes = std::array<std::uint8_t, 16>;

  /// The all-zero GID (an empty table slot reads as this through ibv_query_gid).
  constexpr Gid() noexcept = default;
  constexpr explicit Gid(const Bytes& raw) noexcept : raw_(raw) {}

  /// From 16 bytes in wire order, e.g. `ibv_gid::raw` (copied, never reinterpreted).
  static Gid from_bytes(const void* sixteen_bytes) noexcept {
    Gid g;
    std::memcpy(g.raw_.data(), sixteen_bytes, 16);
    return g;
  }
  /// `::ffff:a.b.c.d` for an IPv4 address given in host order (0x0a000001 = 10.0.0.1).
  static constexpr Gid ipv4_mapped(std::uint32_t ipv4_host_order) noexcept {
    Gid g;
    g.raw_[10] = 0xff;
    g.raw_[11] = 0xff;
    g.raw_[12] = static_cast<std::uint8_t>(ipv4_host_order >> 24);
    g.raw_[13] = static_cast<std::uint8_t>(ipv4_host_order >> 16);
    g.raw_[14] = static_cast<std::uint8_t>(ipv4_host_order >> 8);
    g.raw_[15] = static_cast<std::uint8_t>(ipv4_host_order);
    return g;
  }

  /// Parse any text form users paste: compressed IPv6 (`fe80::1`, `::`, `::ffff:10.0.0.1`,
  /// embedded dotted IPv4 in the last 32 bits), the 8x4 full form printed by ibv_devinfo,
  /// sysfs and show_gids, any letter case. Surrounding whitespace is not accepted: callers trim.
  /// Error: errc::invalid_gid_text, detail "at position N: <reason>" (0-based).
  static result<Gid> parse(std::string_view text);

  [[nodiscard]] constexpr const Bytes& bytes() const noexcept { return raw_; }
  [[nodiscard]] constexpr std::uint8_t operator[](std::size_t i) const noexcept { return raw_[i]; }
  /// Copy the 16 bytes out, e.g. into `ibv_gid::raw`.
  void copy_to(void* sixteen_bytes) const noexcept { std::memcpy(sixteen_bytes, raw_.data(), 16); }

  /// Compressed RFC 5952 form; IPv4-mapped GIDs print as `::ffff:a.b.c.d`.
  [[nodiscard]] std::string to_string() const;
  /// 8 groups of 4 lower-case hex digits, the form of sysfs and of ibv_devinfo for RoCE v1.
  [[nodiscard]] std::string to_full_string() const;

  /// All sixteen bytes zero: an empty slot as ibv_query_gid and sysfs report it.
  [[nodiscard]] constexpr bool is_zero() const noexcept {
    if (std::is_constant_evaluated()) {
      for (auto b : raw_)
        if (b != 0) return false;
      return true;
    }
    // Two 8-byte words copied out (memcpy, not a cast: no aliasing or alignment assumptions);
    // the compiler turns this into two loads. Policies call it once per table entry.
    std::uint64_t hi = 0, lo = 0;
    std::memcpy(&hi, raw_.data(), 8);
    std::memcpy(&lo, raw_.data() + 8, 8);
    return (hi | lo) == 0;
  }
  /// JACCL's rule, byte for byte: bytes 0-9 zero, bytes 10-11 0xff.
  [[nodiscard]] constexpr bool is_ipv4_mapped() const noexcept {
    if (std::is_constant_evaluated()) {
      for (std::size_t i = 0; i < 10; ++i)
        if (raw_[i] != 0) return false;
      return raw_[10] == 0xff && raw_[11] == 0xff;
    }
    // Bytes 0-7 and 8-11 as two words copied out (memcpy, not a cast), the second compared with
    // the word whose bytes are 00 00 ff ff on this machine (native_word() of the bytes: no byte-order
    // assumption). Two loads and two compares: policies call this once per table entry.
    std::uint64_t hi = 0;
    std::uint32_t mid = 0;
    std::memcpy(&hi, raw_.data(), 8);
    std::memcpy(&mid, raw_.data() + 8, 4);
    return hi == 0 && mid == kMappedMarker;
  }
  /// fe80::/10. Not routed: on RoCE and Thunderbolt an RTR from such a source times out
  /// unless both ends share the link (NCCL 769, Mooncake 2747).
  [[nodiscard]] constexpr bool is_link_local() const noexcept {
    if (std::is_constant_evaluated()) return raw_[0] == 0xfe && (raw_[1] & 0xc0) == 0x80;
    // Bytes 0-1 as one word (memcpy), masked and compared with words built from bytes.
    std::uint16_t head = 0;
    std::memcpy(&head, raw_.data(), 2);
    return (head & kLinkLocalMask) == kLinkLocalPrefix;
  }
  /// An IPv4-mapped GID whose address is in 169.254.0.0/16 (IPv4 link-local / APIPA, what
  /// macOS gives a Thunderbolt bridge without DHCP).
  [[nodiscard]] constexpr bool is_ipv4_link_local() const noexcept {
    return is_ipv4_mapped() && raw_[12] == 169 && raw_[13] == 254;
  }
  /// fc00::/7 unique-local IPv6.
  [[nodiscard]] constexpr bool is_unique_local() const noexcept { return (raw_[0] & 0xfe) == 0xfc; }
  /// Bytes 8-15 as a big-endian integer. ibv_devinfo does not print entries where this is 0;
  /// JACCL sets a GRH only when the peer's interface id is non-zero.
  [[nodiscard]] constexpr std::uint64_t interface_id() const noexcept { return be64(8); }
  /// Bytes 0-7 as a big-endian integer (fe80000000000000 for a link-local GID).
  [[nodiscard]] constexpr std::uint64_t subnet_prefix() const noexcept { return be64(0); }
  /// The IPv4 address (host order) of an IPv4-mapped GID; nullopt otherwise.
  [[nodiscard]] constexpr std::optional<std::uint32_t> ipv4() const noexcept {
    if (!is_ipv4_mapped()) return std::nullopt;
    return (std::uint32_t{raw_[12]} << 24) | (std::uint32_t{raw_[13]} << 16) |
           (std::uint32_t{raw_[14]} << 8) | std::uint32_t{raw_[15]};
  }
  /// "a.b.c.d" for an IPv4-mapped GID, "" otherwise.
  [[nodiscard]] std::string ipv4_string() const;

  /// Whether the first `prefix_len` bits equal those of `network` (CIDR containment).
  [[nodiscard]] constexpr bool in_prefix(const Gid& network, unsigned prefix_len) const noexcept {
    if (prefix_len > 128) prefix_len = 128;
    std::size_t full = prefix_len / 8;
    for (std::size_t i = 0; i < full; ++i)
      if (raw_[i] != network.raw_[i]) return false;
    unsigned rest = prefix_len % 8;
    if (rest == 0) return true;
    auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
    return (raw_[full] & mask) == (network.raw_[full] & mask);
  }

  friend constexpr bool operator==(const Gid&, const Gid&) noexcept = default;
  friend constexpr std::strong_ordering operator<=>(const Gid&, const Gid&) noexcept = default;

 private:
  // Native-order words with a given byte image, for the predicates' word compares.
  static constexpr std::uint32_t kMappedMarker =
      detail_gid::native_word<std::uint32_t>(std::array<std::uint8_t, 4>{0, 0, 0xff, 0xff});
  static constexpr std::uint16_t kLinkLocalMask =
      detail_gid::native_word<std::uint16_t>(std::array<std::uint8_t, 2>{0xff, 0xc0});
  static constexpr std::uint16_t kLinkLocalPrefix =
      detail_gid::native_word<std::uint16_t>(std::array<std::uint8_t, 2>{0xfe, 0x80});

  [[nodiscard]] constexpr std::uint64_t be64(std::size_t at) const noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i) v = (v << 8) | raw_[at + i];
    return v;
  }
  Bytes raw_{};
};

/// An IPv6 prefix in CIDR notation over GIDs. IPv4 CIDRs (`10.0.0.0/8`) are stored as their
/// IPv4-mapped form (`::ffff:10.0.0.0/104`), so one containment test serves both families.
struct Cidr {
  Gid network;
  unsigned prefix_len = 0;

  /// `10.0.0.0/8`, `fd00::/8`, `::ffff:10.0.0.0/104`; a bare address means a host route.
  /// Error: errc::invalid_field with the position and what was expected.
  static result<Cidr> parse(std::string_view text);
  [[nodiscard]] constexpr bool contains(const Gid& g) const noexcept {
    return g.in_prefix(network, prefix_len);
  }
  /// The form parse() reads back: IPv4 for mapped prefixes of length >= 96.
  [[nodiscard]] std::string to_string() const;
  friend constexpr bool operator==(const Cidr&, const Cidr&) noexcept = default;
};

/// Parse an IPv4 dotted quad or an IPv6/GID text into a Gid (IPv4 becomes IPv4-mapped): the
/// form in which a "local address" knob (ds4's control-socket address, `local=`) is given.
result<Gid> parse_address(std::string_view text);

}  // namespace gidpolicy

template <>
struct std::hash<gidpolicy::Gid> {
  std::size_t operator()(const gidpolicy::Gid& g) const noexcept {
    // FNV-1a over the bytes: stable across platforms, no punning.
    std::uint64_t h = 1469598103934665603ull;
    for (auto b : g.bytes()) {
      h ^= b;
      h *= 1099511628211ull;
    }
    return static_cast<std::size_t>(h);
  }
};
