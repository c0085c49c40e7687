// Text rendering shared by the subcommands of `gidpolicy` (show_cmd.cpp, select_cmd.cpp,
// check_cmd.cpp, explain_cmd.cpp, convert_cmd.cpp, simulate_cmd.cpp); the JSON documents are
// json_out.hpp's.
#pragma once

#include "json_out.hpp"

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/names.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace gidpolicy::cli {

/// "gidpolicy: <line>" on stderr: every error line starts with the program name so it reads well
/// in a script's log.
void print_error(const std::string& line);
/// Every line of `text` prefixed with `by`.
std::string indent(const std::string& text, const std::string& by);
/// "::ffff:10.0.0.1 (roce_v2, eth0)": what an entry holds. It names no entry: messages name the
/// entry with entry_name() and the port with port_name() (gid_table.hpp), like the library's.
std::string entry_content(const GidEntry& e);
/// What an index a table does not list means, for a table whose source hides some slots
/// (Holes::not_shown): one sentence, the same whichever reader made the table (an ibv_devinfo
/// paste, show_gids rows cut by grep), so `show`, `check` and `select` say it alike. Empty for
/// a table that lists every non-empty slot.
std::string unlisted_slots_note(const GidTable& t);
/// The driver whose RTR is predicted: Apple's for Thunderbolt ports, Linux otherwise, unless
/// --platform says which machine the table is from.
DriverModel driver_for(const GidTable& t, const std::optional<std::string>& platform);
/// A --json document on stdout (standard_output()), indented by 2.
void print_json(const Json& j);
/// At most `max` bytes of a user-given spec for an error prefix (the parser's own message
/// quotes the part around the position), cut on a code point (cut_utf8), never inside a UTF-8
/// sequence.
std::string bounded(const std::string& s, std::size_t max = 60);

}  // namespace gidpolicy::cli
