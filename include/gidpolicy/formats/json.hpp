// The canonical JSON form of one or more ports' GID tables.
//
// Schema (version 2, schemas/tables.schema.json; documented in docs/json-schema.md). Version 2
// is also what `gidpolicy show --json` prints: it adds "host" and "source" to the envelope and
// writes every entry key (null where it does not apply) plus the display keys "ipv4" and
// "flags", which a reader checks for type and ignores. Version 1 documents still read.
//   {
//     "schema": "gidpolicy.tables", "version": 2, "host": null, "source": "tables.txt",
//     "ports": [ {
//       "device": "mlx5_0", "port": 1, "state": "active",
//       "link_layer": "ethernet",            // or "infiniband", "thunderbolt", or a raw number
//       "gid_tbl_len": 256,                  // or null: length unknown (show_gids input)
//       "active_mtu": 1024, "lid": 0,
//       "holes": "empty",                    // or "not_shown" (ibv_devinfo input)
//       "entries": [ {"index": 3, "state": "valid", "gid": "::ffff:10.0.0.1", "type": "roce_v2",
//                     "ipv4": "10.0.0.1", "netdev": "eth0", "ifindex": 4, "errno": null,
//                     "flags": ["ipv4-mapped"]},
//                    {"index": 5, "state": "empty"},    // version 1 may leave keys out
//                    {"index": 6, "state": "unreadable", "errno": 22} ] } ] }
// Optional on read: state (active), link_layer (unknown 0), gid_tbl_len (null), active_mtu
// (1024), lid (0), holes (empty), type (unknown), netdev, ifindex, entry state (valid).
//
// Errors name the source, the line and column for syntax errors, and the field path for
// semantic ones: "t.json: ports[0].entries[2].gid: invalid GID text: at position 4: ...".
// Nothing is half-applied: a document with one bad entry yields an error, never a partial table.
// A key given twice in one object is an error naming its path (JSON parsers usually keep the
// last one, silently replacing e.g. a first "gid"), and so is nesting deeper than
// kMaxJsonDepth. Device and netdev names follow the kernel's limits (names.hpp rules, see
// docs/json-schema.md).
//
// Example:
//   auto tables = gidpolicy::formats::read_json(text, "tables.json");
//   std::string out = gidpolicy::formats::write_json(tables.value());
//   std::string shown = gidpolicy::formats::write_json(tables.value(), {.host = "node1", .source = "live"});
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::formats {

/// The version write_json writes; read_json reads it and version 1 (no host/source, no nulls).
inline constexpr int kJsonSchemaVersion = 2;
/// Deepest object/array nesting read_json accepts; a tables document nests 5 levels.
inline constexpr std::size_t kMaxJsonDepth = 32;

/// Parse a JSON tables document. `source` names the input in error messages.
result<std::vector<GidTable>> read_json(std::string_view text, std::string_view source = "<json>");
/// Serialize tables; read_json(write_json(t)) == t for every table.
std::string write_json(const std::vector<GidTable>& tables, int indent = 2);

/// What a tables document says about where its tables come from: the host they were read on
/// (null for a table file: a pasted table may come from anywhere) and the source read.
struct TablesDocument {
  std::optional<std::string> host;
  std::optional<std::string> source;
};
/// Serialize tables with their host and source (`gidpolicy show --json`, `convert --to json`).
std::string write_json(const std::vector<GidTable>& tables, const TablesDocument& about, int indent = 2);

/// The flags a tables document (and `gidpolicy show`) gives an entry, in this order: "empty",
/// "unreadable", then for a valid entry "zero", "link-local", "ipv4-mapped", "ipv4-link-local".
/// One list for the document and the CLI's text, so the two never say different things.
///   auto flags = gidpolicy::formats::entry_flags(gidpolicy::GidEntry::empty(3));  // {"empty"}
std::vector<std::string> entry_flags(const GidEntry& e);

}  // namespace gidpolicy::formats
