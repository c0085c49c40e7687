// The name rule: what a name must be before gidpolicy lets it reach a report, a JSON document,
// an SVG picture or a message.
//
// Names come from outside: device and netdev names from every table reader and from a C
// caller's function table, host names from a snapshot's "host", from HOST=FILE or from a file's
// name, JACCL device names, simulate's file names. A name is printed among lines gidpolicy wrote
// itself, so a name holding a newline could forge a report line ("999 of 999 links connected"),
// an escape sequence would reach the terminal, a control character makes an SVG file invalid
// XML, and a name that is not UTF-8 makes a JSON document impossible to write.
//
// The rule is one choice for every name: a name that breaks it is REFUSED, never escaped or
// repaired, with one line that names where it came from and shows the name through
// quote_name() (ASCII only: every other byte as \xNN). Refusing keeps what gidpolicy prints
// equal to what it read: an escaped name would no longer match the device or host it names.
//
//  * device and netdev names (NameKind::device, NameKind::netdev): what the kernel accepts and
//    the text formats can carry: 1-63 (device) or 1-15 (netdev) bytes of printable ASCII without
//    spaces, no '/', not "." or "..", and for netdevs no ':'.
//  * host names and file names (NameKind::host, NameKind::path): 1-255 bytes (paths 1-4096) of
//    valid UTF-8 without control characters (C0, DEL, C1), line or paragraph separators
//    (U+2028, U+2029) or bidirectional formatting characters (U+200E, U+200F, U+202A-U+202E,
//    U+2066-U+2069), which would reorder what a terminal shows. Spaces and other printable
//    characters are allowed: they cannot start a new line.
//
// Text that is cut to fit (an SVG caption, a bounded message) is cut on a code point with
// cut_utf8(), never inside a UTF-8 sequence.
//
// Example:
//   if (auto why = gidpolicy::name_problem(host, gidpolicy::NameKind::host))
//     return fail(errc::invalid_field, file + ": host name " + gidpolicy::quote_name(host) + ": " + *why);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gidpolicy {

/// Which rule applies (see the header comment).
enum class NameKind : std::uint8_t { device, netdev, host, path };

/// Longest names the kernel accepts: IB_DEVICE_NAME_MAX and IFNAMSIZ are 64 and 16 bytes with
/// the terminating NUL.
inline constexpr std::size_t kMaxDeviceName = 63;
inline constexpr std::size_t kMaxNetdevName = 15;
/// Longest host name (a DNS name is at most 253; 255 leaves room for a file name's stem).
inline constexpr std::size_t kMaxHostName = 255;
/// Longest path (PATH_MAX with its NUL).
inline constexpr std::size_t kMaxPathName = 4095;

/// What is wrong with `name` under the rule of `kind`, or nullopt when it is fine: "byte 4 is
/// 0x0a (a control character)", "is not UTF-8 (byte 1 is 0xff)", "must not be empty".
std::optional<std::string> name_problem(std::string_view name, NameKind kind);

/// `s` quoted for a message, at most `max` bytes of it: printable ASCII as is, '"' as \", a tab
/// as \t, '\' as \\, every other byte (controls, DEL, bytes of UTF-8 sequences) as \xNN, and
/// "..." before the closing quote when cut. Always one line of printable ASCII.
std::string quote_name(std::string_view s, std::size_t max = 40);

/// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates, at most U+10FFFF).
bool is_utf8(std::string_view s) noexcept;

/// The longest prefix of `s` of at most `max_bytes` bytes that does not end inside a UTF-8
/// sequence (the cut moves back to the last code point that fits).
std::string_view cut_utf8(std::string_view s, std::size_t max_bytes) noexcept;

}  // namespace gidpolicy
