// The quoting rules: how a value that came from outside becomes a file name, a shown text or a
// word of a printed command. One function per use, so no caller writes its own:
//
//  * file_name_problem() / join_file_name(): a name from input (a snapshot's host name, a device
//    name) used as a file name is a FILE NAME, never a path. "../x", "/abs", "a/b", ".", "..",
//    an empty name, a NUL, a control character or more than kMaxFileName bytes is refused, never
//    repaired: a repaired name would not match the host it names, and a path would let the input
//    choose where gidpolicy writes (`fleet --env-dir` runs as root on a cluster's head node).
//  * show_text(): a value shown in a report line or an error message (a pin's value, a path, a
//    line of a file). Control characters (newline and ESC included), DEL, C1 controls, line and
//    paragraph separators, bidirectional controls and bytes that are not UTF-8 are written as
//    escapes (\n, \t, \r, \e, \xNN, \u{NNNN}), so a value can neither start a line of its own
//    (forging "READY" in a report) nor reach the terminal as an escape sequence. Bounded: cut
//    on a code point with "..." after `max` bytes. Printable text, UTF-8 included, is unchanged,
//    and show_text(show_text(s)) == show_text(s) (a backslash is left as it is).
//  * shell_quote(): one word of a command printed for the user to paste (the doctor's fixes,
//    `env --format sh`): a word of safe characters stays bare (eth0, mlx5_0, 10.0.0.1/30);
//    anything else is single-quoted, and a control character or a byte that is not UTF-8 is
//    written in bash's $'...' form, so the printed line is one line and the shell passes exactly
//    the original bytes as one argument: `ip link set 'a$(touch x)' up` changes the interface of
//    that name and runs nothing.
//  * valid_utf8(): text for a JSON document, which must be UTF-8: every byte that is not part of
//    a well-formed sequence becomes U+FFFD.
//
// Example:
//   auto target = gidpolicy::join_file_name(file, host + ".env");  // file: the directory
//   if (!target) return target.error();  // file name "../x/.env" contains '/' ...
//   std::cout << "sudo ip link set " << gidpolicy::shell_quote(host) << " up\n";
//   std::cerr << "bad value " << gidpolicy::show_text(text, 60) << "\n";
#pragma once

#include <gidpolicy/error.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gidpolicy {

/// Longest file name (NAME_MAX on Linux and macOS).
inline constexpr std::size_t kMaxFileName = 255;
/// Default bound of show_text(): a value in a message, not the message.
inline constexpr std::size_t kMaxShownText = 200;

/// What is wrong with `name` as one file name in a directory, or nullopt when it is fine:
/// "must not be empty", "is \"..\"", "contains '/' (a file name, not a path)", "byte 3 is 0x0a
/// (a control character)", "is longer than 255 bytes".
std::optional<std::string> file_name_problem(std::string_view name);

/// `dir` + "/" + `name` when `name` is a file name (file_name_problem()); errc::invalid_argument
/// naming the name (shown with quote_name()) and the reason otherwise. `dir` is used as given.
result<std::string> join_file_name(std::string_view dir, std::string_view name);

/// `s` as shown in a report or a message: one line, no control character, at most `max` bytes
/// of the original (then "..." is appended). See the header comment for the escapes.
std::string show_text(std::string_view s, std::size_t max = kMaxShownText);

/// `s` as one word of a POSIX shell command line (bash's $'...' for control characters and
/// bytes that are not UTF-8). Bare when every byte is one of A-Z a-z 0-9 _ - . / : , + = @ %
/// and `s` is not empty; "''" for an empty word.
std::string shell_quote(std::string_view s);

/// `s` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD (what
/// a JSON document can carry).
std::string valid_utf8(std::string_view s);

}  // namespace gidpolicy
