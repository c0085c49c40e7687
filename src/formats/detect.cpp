#include <gidpolicy/fleet.hpp>
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/formats/show_gids.hpp>
#include <gidpolicy/formats/sysfs.hpp>

#include "text.hpp"

#include <cctype>

namespace gidpolicy::formats {
namespace {

using detail::at;
using detail::excerpt;
using detail::trim;

constexpr const char* kExpected =
    "expected gidpolicy JSON ('{'), ibv_devinfo -v output ('hca_id:', 'port:', 'GID[  n]:' lines) or "
    "show_gids "
    "output (a 'DEV PORT INDEX GID' header and tab-separated rows)";

bool is_devinfo_key(std::string_view key) {
  return key == "hca_id" || key == "port" || key == "state" || key == "link_layer" || key == "gid_tbl_len" ||
         key == "active_mtu" || key == "port_lid";
}

std::optional<Format> classify(std::string_view t) {
  if (t.starts_with("GID[")) return Format::devinfo;
  if (t.starts_with("n_gids_found=")) return Format::show_gids;
  auto cols = detail::tokens(t);
  if (cols.empty()) return std::nullopt;
  if (cols[0] == "DEV" && t.find("GID") != std::string_view::npos) return Format::show_gids;
  if (std::size_t colon = t.find(':');
      colon != std::string_view::npos && is_devinfo_key(trim(t.substr(0, colon))))
    return Format::devinfo;
  if (cols.size() >= 4 && detail::parse_decimal(cols[1], 255) &&
      detail::parse_decimal(cols[2], 0x7fffffffu) && Gid::parse(cols[3]))
    return Format::show_gids;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(Format f) noexcept {
  switch (f) {
    case Format::json:
      return "json";
    case Format::devinfo:
      return "devinfo";
    case Format::show_gids:
      return "show_gids";
    case Format::sysfs:
      return "sysfs";
  }
  return "json";
}

std::optional<Format> format_from_string(std::string_view s) noexcept {
  std::string l(s);
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == "json") return Format::json;
  if (l == "devinfo" || l == "ibv_devinfo") return Format::devinfo;
  if (l == "show_gids" || l == "show-gids") return Format::show_gids;
  if (l == "sysfs") return Format::sysfs;
  return std::nullopt;
}

result<Format> detect_format(std::string_view text, std::string_view source) {
  auto lines = detail::split_lines(text);
  const detail::Line* first = nullptr;
  for (const auto& l : lines) {
    if (auto col = detail::binary_column(l.text))
      return fail(errc::unknown_format, at(source, l.number) + ":" + std::to_string(*col) +
                                            ": binary data (byte " + detail::hex_byte(l.text, *col) +
                                            "), not a table: " + kExpected);
    if (!first && !trim(l.text).empty()) first = &l;
  }
  if (!first) return fail(errc::unknown_format, std::string(source) + ": empty input: " + kExpected);
  std::string_view head = trim(first->text);
  if (head.starts_with('{') || head.starts_with('[')) return Format::json;
  for (const auto& l : lines)
    if (auto f = classify(trim(l.text))) return *f;
  return fail(errc::unknown_format,
              at(source, first->number) + ": " + kExpected + "; found " + excerpt(head, 60));
}

result<std::vector<GidTable>> read_tables(std::string_view text, std::string_view source) {
  GIDPOLICY_TRY(format, detect_format(text, source));
  return read_tables_as(text, format, source);
}

namespace {

/// JSON in either of gidpolicy's forms: the canonical document (json.hpp: an object with
/// "schema": "gidpolicy.tables"), or what `gidpolicy show --json` prints (a port object, or an
/// array of them: the fleet's host snapshot, fleet.hpp). Both are read, because the second is
/// what a user has: the doctor's own advice is to take a table with `show --json`. An array is
/// always a snapshot; an object is the canonical document unless it lacks the schema.
result<std::vector<GidTable>> read_any_json(std::string_view text, std::string_view source) {
  const auto first = text.find_first_not_of(" \t\r\n");
  // The host name is not the tables' business: a fixed valid one, so that a source such as
  // "<stdin>" (no host name) is no error.
  constexpr std::string_view kHost = "input";
  if (first != std::string_view::npos && text[first] == '[') {
    GIDPOLICY_TRY(snapshot, fleet::parse_snapshot(text, source, kHost));
    return std::move(snapshot.ports);
  }
  auto canonical = read_json(text, source);
  if (canonical || canonical.error().detail.rfind(std::string(source) + ": schema: ", 0) != 0)
    return canonical;
  auto snapshot = fleet::parse_snapshot(text, source, kHost);
  if (snapshot) return std::move(snapshot.value().ports);
  return fail(Error(canonical.error().code, canonical.error().detail +
                                                "; nor is it a port as `gidpolicy show --json` prints it: " +
                                                snapshot.error().detail));
}

}  // namespace

result<std::vector<GidTable>> read_tables_as(std::string_view text, Format format, std::string_view source) {
  switch (format) {
    case Format::json:
      return read_any_json(text, source);
    case Format::devinfo:
      return read_devinfo(text, source);
    case Format::show_gids:
      return read_show_gids(text, source);
    case Format::sysfs:
      break;
  }
  return fail(errc::invalid_argument,
              std::string(source) + ": sysfs is a directory tree, not text: use read_sysfs");
}

result<std::vector<GidTable>> read_tables_file(const std::filesystem::path& path, std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return read_sysfs(path);
  GIDPOLICY_TRY(text, read_text_file(path, max_bytes));
  return read_tables(text, path.string());
}

result<std::string> write_tables(const std::vector<GidTable>& tables, Format format) {
  switch (format) {
    case Format::json:
      return write_json(tables);
    case Format::devinfo:
      return write_devinfo(tables);
    case Format::show_gids:
      return write_show_gids(tables);
    case Format::sysfs:
      break;
  }
  return fail(errc::invalid_argument, "sysfs is a directory tree, not text: use write_sysfs");
}

}  // namespace gidpolicy::formats
