#include <gidpolicy/formats/show_gids.hpp>

#include "text.hpp"

#include <cstdio>
#include <map>
#include <optional>
#include <utility>

namespace gidpolicy::formats {
namespace {

using detail::at;
using detail::excerpt;
using detail::Line;
using detail::trim;

// The script's own skip list: `0000:...:0000` and `fe80:0000:...:0000`.
bool listed_by_show_gids(const GidEntry& e) {
  if (e.state != EntryState::valid || e.gid.is_zero()) return false;
  Gid::Bytes bare_fe80{};
  bare_fe80[0] = 0xfe;
  bare_fe80[1] = 0x80;
  return e.gid != Gid(bare_fe80);
}

// The script prints an IPv4 column when the GID's first group is 0000, from its last 32 bits.
bool has_ipv4_column(const Gid& g) { return g[0] == 0 && g[1] == 0; }

std::string dotted(const Gid& g) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", unsigned{g[12]}, unsigned{g[13]}, unsigned{g[14]},
                unsigned{g[15]});
  return buf;
}

bool is_dotted_quad(std::string_view s) {
  int parts = 0;
  while (true) {
    std::size_t dot = s.find('.');
    std::string_view part = s.substr(0, dot);
    if (part.empty() || part.size() > 3 || !detail::parse_decimal(part, 255)) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    s.remove_prefix(dot + 1);
  }
  return parts == 4;
}

bool is_ver(std::string_view s) {
  return s.size() >= 2 && (s[0] == 'v' || s[0] == 'V') && detail::parse_decimal(s.substr(1), 255).has_value();
}

GidType type_of_ver(std::string_view ver) {
  if (ver.empty()) return GidType::unknown;
  auto n = detail::parse_decimal(ver.substr(1), 255);
  if (n == 1u) return GidType::roce_v1;
  if (n == 2u) return GidType::roce_v2;
  return GidType::unknown;  // a future version: not a parse error
}

// show_gids does not print the link layer; this is the reader's inference, shared with the view.
LinkLayer inferred_link_layer(const std::vector<GidEntry>& rows) {
  for (const auto& e : rows)
    if (e.type != GidType::unknown || !e.netdev.empty()) return LinkLayer::ethernet();
  return LinkLayer::from_raw(0);
}

struct PortRows {
  std::string device;
  std::uint32_t port = 0;
  std::size_t first_line = 0;
  std::vector<GidEntry> entries;
  std::map<std::uint32_t, std::size_t> index_lines;
};

const char* kRowShape = "a row 'DEV PORT INDEX GID [IPv4] [VER] [NETDEV]'";

}  // namespace

result<std::vector<GidTable>> read_show_gids(std::string_view text, std::string_view source) {
  std::vector<PortRows> ports;
  std::map<std::pair<std::string, std::uint32_t>, std::size_t> port_index;
  std::optional<std::size_t> header_line, footer_line;
  std::size_t rows = 0, last_line = 0;
  for (const Line& l : detail::split_lines(text)) {
    last_line = l.number;
    if (auto col = detail::binary_column(l.text))
      return fail(errc::parse_error, at(source, l.number) + ":" + std::to_string(*col) +
                                         ": binary data (byte " + detail::hex_byte(l.text, *col) +
                                         "): expected show_gids text");
    std::string_view t = trim(l.text);
    if (t.empty()) continue;
    if (footer_line)
      return fail(errc::parse_error, at(source, l.number) +
                                         ": expected nothing after the n_gids_found line (line " +
                                         std::to_string(*footer_line) + "), found " + excerpt(t));
    auto cols = detail::tokens(t);
    if (cols[0] == "DEV" && t.find("GID") != std::string_view::npos) {
      if (header_line || rows > 0)
        return fail(errc::parse_error,
                    at(source, l.number) + ": a second header line: expected one show_gids output per input");
      header_line = l.number;
      continue;
    }
    if (t.find_first_not_of("-\t ") == std::string_view::npos) continue;  // the dashes under the header
    if (t.starts_with("n_gids_found=")) {
      std::string_view n = t.substr(13);
      // An unset counter prints as nothing: `n_gids_found=` when no GID was found.
      auto count = n.empty() ? std::optional<std::uint64_t>(0) : detail::parse_decimal(n, 0xffffffffu);
      if (!count)
        return fail(errc::invalid_field,
                    at(source, l.number) + ": n_gids_found: expected a number, found " + excerpt(n));
      if (*count != rows)
        return fail(errc::parse_error, at(source, l.number) + ": n_gids_found=" + std::to_string(*count) +
                                           " but " + std::to_string(rows) +
                                           " rows were read (rows missing: cut paste?)");
      footer_line = l.number;
      continue;
    }
    if (cols.size() < 4 || cols.size() > 7)
      return fail(errc::parse_error,
                  at(source, l.number) + ": expected " + kRowShape + ", found " + excerpt(t, 60));
    auto port = detail::parse_decimal(cols[1], 255);
    if (!port || *port == 0)
      return fail(errc::invalid_field,
                  at(source, l.number) + ": PORT: expected a port number 1-255, found " + excerpt(cols[1]));
    auto index = detail::parse_decimal(cols[2], 0x7fffffffu);
    if (!index)
      return fail(
          errc::invalid_field,
          at(source, l.number) + ": INDEX: expected a GID index 0-2147483647, found " + excerpt(cols[2]));
    auto gid = Gid::parse(cols[3]);
    if (!gid)
      return fail(errc::invalid_field,
                  at(source, l.number) + ": GID: expected 8 groups of 4 hex digits: " + gid.error().detail);
    std::string_view ipv4, ver, netdev;
    for (std::size_t k = 4; k < cols.size(); ++k) {
      std::string_view c = cols[k];
      if (ipv4.empty() && ver.empty() && netdev.empty() && is_dotted_quad(c)) {
        ipv4 = c;
      } else if (ver.empty() && netdev.empty() && is_ver(c)) {
        ver = c;
      } else if (netdev.empty()) {
        netdev = c;
      } else {
        return fail(errc::parse_error, at(source, l.number) + ": expected " + kRowShape +
                                           ", found an extra column " + excerpt(c));
      }
    }
    if (auto why = detail::name_problem(cols[0], detail::NameKind::device))
      return fail(errc::invalid_field,
                  at(source, l.number) + ": DEV: device name " + excerpt(cols[0]) + ": " + *why);
    if (!netdev.empty())
      if (auto why = detail::name_problem(netdev, detail::NameKind::netdev))
        return fail(errc::invalid_field,
                    at(source, l.number) + ": DEV (netdev): netdev name " + excerpt(netdev) + ": " + *why);
    if (!ipv4.empty() && ipv4 != dotted(gid.value()))
      return fail(errc::invalid_field, at(source, l.number) + ": IPv4: " + std::string(ipv4) +
                                           " does not match the GID, which ends in " + dotted(gid.value()));
    // A map, not a scan of `ports`: 16 MiB of rows naming distinct devices would be quadratic.
    auto [slot, added] =
        port_index.try_emplace({std::string(cols[0]), static_cast<std::uint32_t>(*port)}, ports.size());
    if (added) ports.push_back({std::string(cols[0]), static_cast<std::uint32_t>(*port), l.number, {}, {}});
    PortRows* pr = &ports[slot->second];
    auto idx = static_cast<std::uint32_t>(*index);
    if (auto prev = pr->index_lines.find(idx); prev != pr->index_lines.end())
      return fail(errc::duplicate_index, at(source, l.number) + ": " + entry_name(pr->device, pr->port, idx) +
                                             " appears twice (first at line " + std::to_string(prev->second) +
                                             ")");
    pr->index_lines.emplace(idx, l.number);
    pr->entries.push_back(GidEntry::valid(idx, gid.value(), type_of_ver(ver), std::string(netdev)));
    ++rows;
  }
  if (header_line && !footer_line)
    return fail(errc::parse_error, at(source, last_line) +
                                       ": the output ends without its n_gids_found= line (truncated paste?)");
  if (!header_line && rows == 0 && !footer_line)
    return fail(errc::parse_error, std::string(source) +
                                       ": no rows: expected show_gids output (a 'DEV PORT "
                                       "INDEX GID IPv4 VER DEV' header, rows, 'n_gids_found=N')");
  std::vector<GidTable> out;
  out.reserve(ports.size());
  // Rows pasted without the header and the n_gids_found= line cannot be told from a cut paste:
  // they show what they show, and an unlisted index is "not shown", not empty.
  const Holes holes = header_line || footer_line ? Holes::empty : Holes::not_shown;
  for (auto& p : ports) {
    PortInfo info;
    info.device = p.device;
    info.port = p.port;
    info.link_layer = inferred_link_layer(p.entries);
    auto table = GidTable::make(std::move(info), std::move(p.entries), holes);
    if (!table)
      return fail(Error(table.error().code, at(source, p.first_line) + ": " + table.error().detail));
    out.push_back(std::move(table).value());
  }
  return out;
}

std::string write_show_gids(const std::vector<GidTable>& tables) {
  std::string out =
      "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
      "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n";
  std::size_t n = 0;
  for (const auto& t : tables) {
    for (const auto& e : t) {
      if (!listed_by_show_gids(e)) continue;
      const char* ver = e.type == GidType::roce_v2 ? "v2" : e.type == GidType::unknown ? "" : "v1";
      out += t.port().device + "\t" + std::to_string(t.port().port) + "\t" + std::to_string(e.index) + "\t" +
             e.gid.to_full_string() + "\t" + (has_ipv4_column(e.gid) ? dotted(e.gid) : std::string()) +
             "  \t" + ver + "\t" + e.netdev + "\n";
      ++n;
    }
  }
  out += "n_gids_found=" + std::to_string(n) + "\n";
  return out;
}

std::vector<GidTable> show_gids_view(const std::vector<GidTable>& tables) {
  std::vector<GidTable> out;
  for (const auto& t : tables) {
    std::vector<GidEntry> rows;
    for (const auto& e : t) {
      if (!listed_by_show_gids(e)) continue;
      GidType type = e.type == GidType::ib ? GidType::roce_v1 : e.type;
      rows.push_back(GidEntry::valid(e.index, e.gid, type, e.netdev));
    }
    if (rows.empty()) continue;
    PortInfo info;
    info.device = t.port().device;
    info.port = t.port().port;
    info.link_layer = inferred_link_layer(rows);
    out.push_back(GidTable::make(std::move(info), std::move(rows), Holes::empty).value());
  }
  return out;
}

}  // namespace gidpolicy::formats
