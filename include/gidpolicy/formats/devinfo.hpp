// `ibv_devinfo -v` text: read what users paste, write what rdma-core 44 prints.
//
// Gotchas encoded here (checked against rdma-core 44's libibverbs/examples/devinfo.c and the
// Debian 12 /usr/bin/ibv_devinfo):
//  * devinfo skips every entry whose interface id (bytes 8-15) is zero, and every entry whose
//    type it cannot query. A table read from it is therefore marked Holes::not_shown: an index
//    it does not list may hold a GID, and policies must not treat it as empty.
//  * GID text comes in two forms: RoCE v2 entries through inet_ntop (`::ffff:10.0.0.1`), v1,
//    IB and untyped ones as 8 groups of 4 hex digits.
//  * The `, RoCE vN` suffix is printed only on Ethernet ports and only since rdma-core v29.
//    Without it the type is unknown, except on an InfiniBand port, whose GIDs are all IB.
//  * Enum values print as "NAME (number)"; the number is what is read, because devinfo prints
//    "invalid state (5)" for states it has no name for.
//  * link_layer prints "InfiniBand" (also for the unspecified value 0), "Ethernet", Apple's
//    "Thunderbolt", or "Unknown". A device whose transport number is 100 (Apple's Thunderbolt
//    RDMA) with an "Unknown" link layer is read as Thunderbolt.
//
// Partial pastes work: a lone port section, or only GID lines. Missing context takes defaults:
// device "unknown", port 1, state active, gid_tbl_len unknown, link layer Ethernet when the GID
// lines carry the suffix (else unknown). A complete output (one that has `hca_id:` lines) must
// show link_layer in every port and, when its device block has the lines only `-v` prints
// (max_qp), gid_tbl_len before any GID line, so a paste cut off between lines is reported
// rather than read as a shorter table.
//
// Errors: errc::parse_error (syntax, binary data, truncation) or errc::invalid_field (a value),
// errc::duplicate_index / errc::index_too_large; detail "<source>:<line>: <what was expected>".
//
// Example:
//   auto tables = gidpolicy::formats::read_devinfo(text, "paste.txt");
//   if (!tables) std::cerr << tables.error().what() << "\n";
//   std::cout << gidpolicy::formats::write_devinfo(tables.value());
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::formats {

/// The device name given to a port pasted without its `hca_id:` line.
inline constexpr std::string_view kUnnamedDevice = "unknown";

/// Parse `ibv_devinfo` / `ibv_devinfo -v` output (complete or partial). Tables come out in the
/// order their port sections appear; every table has Holes::not_shown. `source` names the input
/// in error messages. No table is returned unless the whole text was read.
result<std::vector<GidTable>> read_devinfo(std::string_view text, std::string_view source = "<devinfo>");

/// Write `ibv_devinfo -v` as rdma-core 44 prints it, for the lines gidpolicy has values for:
/// hca_id, transport, phys_port_cnt; per port state, max_mtu (= active_mtu), active_mtu, sm_lid,
/// port_lid, port_lmc, link_layer, gid_tbl_len (when known) and the GID lines, each port followed
/// by a blank line. Entries devinfo would not print (see devinfo_view) are left out.
std::string write_devinfo(const std::vector<GidTable>& tables);

/// What survives a trip through the devinfo text: read_devinfo(write_devinfo(t)) == devinfo_view(t),
/// and what rdma-core 44's own ibv_devinfo shows of a port holding `t`.
/// Drops empty, unreadable and zero-interface-id entries, netdevs and ifindexes; on Ethernet
/// and InfiniBand ports drops untyped entries (rdma-core 44 prints nothing for an entry whose
/// type it cannot query; Thunderbolt and unknown link layers keep them, as Apple's devinfo
/// prints no types); ib becomes roce_v1 on Ethernet (one sysfs type, "IB/RoCE v1"), every type
/// becomes ib on InfiniBand and unknown elsewhere; an unknown link layer loses its raw number;
/// holes become not_shown.
std::vector<GidTable> devinfo_view(const std::vector<GidTable>& tables);

}  // namespace gidpolicy::formats
