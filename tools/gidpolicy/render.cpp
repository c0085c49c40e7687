// Text rendering shared by the subcommands (render.hpp) and the usage errors (commands.hpp).
#include "render.hpp"
#include "commands.hpp"
#include "output.hpp"

#include <gidpolicy/policies/registry.hpp>
#include <gidpolicy/quoting.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string_view>

namespace gidpolicy::cli {
namespace {

std::string hint_for(const Error& e) {
  if (e == errc::no_devices || e == errc::library_unavailable)
    return "; give a table instead: --input FILE (ibv_devinfo -v, show_gids or gidpolicy JSON; - reads "
           "stdin) "
           "or --sysfs DIR";
  if (e == errc::unknown_format)
    return "; paste ibv_devinfo -v or show_gids output, or force one with --input-format";
  if (e == errc::invalid_policy_spec)
    return "; specs: " + builtin_spec_hint();  // every registry row (policies/registry.hpp)
  return {};
}

}  // namespace

void print_error(const std::string& line) {
  // Every error goes out through show_text() (quoting.hpp): no control character of a value it
  // quotes (an ESC sequence, a carriage return) reaches the terminal. A message of several lines
  // keeps them, each after the first indented, so no value can start a line of its own that
  // reads as "gidpolicy: ..." or a report's line.
  std::string shown;
  std::size_t start = 0;
  while (true) {
    const std::size_t nl = line.find('\n', start);
    const std::string_view part =
        std::string_view(line).substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (start != 0) shown += "\n  ";
    shown += show_text(part, std::string::npos);
    if (nl == std::string::npos || nl + 1 == line.size()) break;
    start = nl + 1;
  }
  std::cerr << "gidpolicy: " << shown << "\n";
}

std::string indent(const std::string& text, const std::string& by) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out += by + line + "\n";
  return out;
}

std::string unlisted_slots_note(const GidTable& t) {
  if (t.holes() != Holes::not_shown) return {};
  // Both readers that make such tables are named: a cut show_gids paste is not devinfo's hiding.
  return "indices not listed were not printed by the source (ibv_devinfo hides GIDs whose interface id "
         "is zero; show_gids rows without the header and n_gids_found= line may have been cut): they "
         "are unknown and may hold GIDs";
}

std::string entry_content(const GidEntry& e) {
  std::string details = std::string(to_string(e.type));
  if (!e.netdev.empty()) details += ", " + e.netdev;
  return e.gid.to_string() + " (" + details + ")";
}

DriverModel driver_for(const GidTable& t, const std::optional<std::string>& platform) {
  if (!platform) return DriverModel::for_table(t);
  return DriverModel::for_table(t, platform_from_string(*platform).value_or(Platform::linux_kernel));
}

void print_json(const Json& j) {
  // A document must be UTF-8: a value that is not (a pin's bytes, a path) is written with U+FFFD
  // for each bad byte rather than failing the whole document.
  standard_output().write(j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n");
}

std::string bounded(const std::string& s, std::size_t max) {
  // Text that would break the line it is printed in (a control character, bytes that are not
  // UTF-8) is shown as the name rule quotes names (names.hpp), never raw.
  const bool printable = is_utf8(s) && std::none_of(s.begin(), s.end(), [](char c) {
                           const auto u = static_cast<unsigned char>(c);
                           return u < 0x20 || u == 0x7f;
                         });
  if (!printable) return quote_name(s, max);
  return s.size() <= max ? s : std::string(cut_utf8(s, max)) + "...";
}

int usage_error(const Error& e) {
  print_error(e.what() + hint_for(e));
  return kExitUsage;
}

int usage_error(const std::string& message) {
  print_error(message);
  return kExitUsage;
}

}  // namespace gidpolicy::cli
