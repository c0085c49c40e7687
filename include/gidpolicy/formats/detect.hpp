// Which table format an input is in, and reading/writing any of them through one call.
//
// Users paste whatever they have: gidpolicy's JSON, `ibv_devinfo -v` (whole or in part),
// `show_gids`, or they point at a sysfs tree. Detection looks at the text's shape, not at the
// file name (pastes arrive as stdin or as "issue.txt"):
//  * a first non-blank character `{` (or `[`): JSON, in either of gidpolicy's forms: the
//    canonical document (json.hpp, `"schema": "gidpolicy.tables"`) or what `gidpolicy show
//    --json` prints (a port object or an array of them, read as fleet.hpp's host snapshot), so
//    `show --json > t.json` then `--input t.json` works; the reader reports what is wrong;
//  * a show_gids header (`DEV PORT INDEX GID ...`), its dashes, `n_gids_found=`, or a first
//    line shaped like a show_gids row (name, number, number, GID): show_gids;
//  * `hca_id:`, `port:`, `GID[ n]:` or a port field devinfo prints (`state:`, `link_layer:`,
//    `gid_tbl_len:`, `active_mtu:`): ibv_devinfo;
//  * a directory: sysfs.
// Empty input, binary data (NUL, control bytes) and anything else are errc::unknown_format with
// a message that says what was expected and quotes what was found.
//
// Example:
//   auto tables = gidpolicy::formats::read_tables_file("paste.txt");   // or a sysfs directory
//   auto text = gidpolicy::formats::write_tables(tables.value(), gidpolicy::formats::Format::show_gids);
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::formats {

/// The table formats gidpolicy reads.
enum class Format : std::uint8_t { json, devinfo, show_gids, sysfs };
/// "json", "devinfo", "show_gids", "sysfs".
std::string_view to_string(Format f) noexcept;
/// The names above (any case), plus "ibv_devinfo" and "show-gids".
std::optional<Format> format_from_string(std::string_view s) noexcept;

/// Default cap on a text input: real tables are a few KB (a 256-entry `ibv_devinfo -v` paste is
/// about 20 KB), so 16 MiB is generous and still bounds what /dev/zero or a wrong file costs.
inline constexpr std::size_t kDefaultMaxInputBytes = std::size_t{16} * 1024 * 1024;

/// Read a whole text input from `fd`, bounded: more than `max_bytes` is errc::parse_error, and
/// binary data (a NUL or control byte in any chunk, or mostly invalid UTF-8 in the first) is
/// errc::unknown_format as soon as the chunk holding it arrives, not after EOF (which
/// /dev/zero never reaches). `source` names the input in errors; a read error is
/// errc::io_error "cannot read input".
/// Example:
///   auto text = gidpolicy::formats::read_text_fd(0, "<stdin>", gidpolicy::formats::kDefaultMaxInputBytes);
result<std::string> read_text_fd(int fd, std::string_view source,
                                 std::size_t max_bytes = kDefaultMaxInputBytes);
/// The same for a file (a FIFO or character device too: open never blocks, reads are bounded).
result<std::string> read_text_file(const std::filesystem::path& path,
                                   std::size_t max_bytes = kDefaultMaxInputBytes);

/// The format of a text input (never Format::sysfs). `source` names it in errors.
result<Format> detect_format(std::string_view text, std::string_view source = "<input>");

/// Detect, then read with that format's reader. No table is returned unless the whole input
/// was read; a well-formed input that lists no port (show_gids output that found no GID,
/// `n_gids_found=0`, or JSON with `"ports": []`) yields an empty vector, devinfo never does.
result<std::vector<GidTable>> read_tables(std::string_view text, std::string_view source = "<input>");

/// Read with `format`'s reader, skipping detection: the one dispatch from a format to its reader,
/// used by read_tables and by a caller that was told the format (the CLI's `--input-format`).
/// Detection guesses from the text's shape, so a paste it cannot place still reads when the user
/// names its format. Format::sysfs is a directory, not text: errc::invalid_argument (use
/// read_sysfs).
/// Example:
///   auto t = gidpolicy::formats::read_tables_as(text, gidpolicy::formats::Format::show_gids, "paste.txt");
result<std::vector<GidTable>> read_tables_as(std::string_view text, Format format,
                                             std::string_view source = "<input>");

/// A directory: read_sysfs. A file: its text (read_text_file, at most `max_bytes`) through
/// read_tables, named by its path in errors.
/// Errors: errc::io_error for a path that cannot be opened or read; see read_text_fd.
result<std::vector<GidTable>> read_tables_file(const std::filesystem::path& path,
                                               std::size_t max_bytes = kDefaultMaxInputBytes);

/// The tables in a text format. Format::sysfs is not text: errc::invalid_argument (use
/// write_sysfs).
result<std::string> write_tables(const std::vector<GidTable>& tables, Format format);

}  // namespace gidpolicy::formats
