// The canonical JSON form of one or more ports' GID tables.
//
// Schema (version 1; documented in docs/json-schema.md):
//   {
//     "schema": "gidpolicy.tables", "version": 1,
//     "ports": [ {
//       "device": "mlx5_0", "port": 1, "state": "active",
//       "link_layer": "ethernet",            // or "infiniband", "thunderbolt", or a raw number
//       "gid_tbl_len": 256,                  // or null: length unknown (show_gids input)
//       "active_mtu": 1024, "lid": 0,
//       "holes": "empty",                    // or "not_shown" (ibv_devinfo input)
//       "entries": [ {"index": 3, "gid": "::ffff:10.0.0.1", "type": "roce_v2",
//                     "netdev": "eth0", "ifindex": 4, "state": "valid"},
//                    {"index": 5, "state": "empty"},
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
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::formats {

inline constexpr int kJsonSchemaVersion = 1;
/// Deepest object/array nesting read_json accepts; a tables document nests 5 levels.
inline constexpr std::size_t kMaxJsonDepth = 32;

/// Parse a JSON tables document. `source` names the input in error messages.
result<std::vector<GidTable>> read_json(std::string_view text, std::string_view source = "<json>");
/// Serialize tables; read_json(write_json(t)) == t for every table.
std::string write_json(const std::vector<GidTable>& tables, int indent = 2);

}  // namespace gidpolicy::formats
