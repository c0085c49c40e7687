// `show_gids` text (NVIDIA mlnx-tools): read what users paste, write what the script prints.
//
//   DEV     PORT    INDEX   GID                                     IPv4            VER     DEV
//   ---     ----    -----   ---                                     ------------    ---     ---
//   mlx5_0  1       6       0000:0000:0000:0000:0000:ffff:0a98:000c 10.152.0.12     v1      net1
//   n_gids_found=1
//
// Gotchas encoded here:
//  * show_gids never prints gid_tbl_len: tables read from it have gid_tbl_len == nullopt.
//  * It skips all-zero GIDs and the bare `fe80::`: an index it does not list is empty
//    (Holes::empty), not an error and not "not shown".
//  * VER is the sysfs type with everything up to the "v" cut off: "IB/RoCE v1" and "RoCE v1"
//    both print v1, so an IB entry reads back as roce_v1. An unreadable type prints nothing.
//  * The IPv4 column is derived from the GID's last 32 bits whenever its first group is 0000
//    (the script's own test); when present it must agree with the GID.
//  * It does not print the link layer. show_gids is a RoCE tool: a port whose rows carry a VER
//    or a netdev is read as Ethernet, otherwise the link layer is unknown.
//  * Pasted copies often lose their tabs: columns are split on any run of tabs or spaces.
//    When the header line is present the `n_gids_found=N` line must be too, and N must equal
//    the number of rows: that is how a cut-off paste is told apart from a short table. Rows
//    pasted with neither header nor footer (even a single line) are read, but as Holes::not_shown:
//    nothing says the paste is whole, so an index they do not list may hold a GID.
//  * VER `vN` for an N other than 1 or 2 (a later script) is GidType::unknown; a DEV/netdev
//    name follows the readers' name rule (docs/formats.md).
//
// Errors: errc::parse_error or errc::invalid_field with "<source>:<line>: <what was expected>";
// errc::duplicate_index for an index listed twice in one port.
//
// Example:
//   auto tables = gidpolicy::formats::read_show_gids(text, "show_gids.txt");
//   std::cout << gidpolicy::formats::write_show_gids(tables.value());
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::formats {

/// Parse show_gids output, with or without its header and footer. One table per device/port in
/// the order they first appear. No table is returned unless the whole text was read.
result<std::vector<GidTable>> read_show_gids(std::string_view text, std::string_view source = "<show_gids>");

/// Write show_gids output as the mlnx-tools script prints it (header, dashes, rows, footer).
/// Rows are the entries of devinfo-style "valid" state that show_gids would list.
std::string write_show_gids(const std::vector<GidTable>& tables);

/// What survives a trip through show_gids text: read_show_gids(write_show_gids(t)) ==
/// show_gids_view(t). Keeps valid entries except the all-zero GID and the bare fe80::; keeps
/// their netdev, turns ib into roce_v1; drops ifindex, port state, MTU, LID and gid_tbl_len;
/// link layer as the reader infers it; ports without a row disappear; holes become empty.
std::vector<GidTable> show_gids_view(const std::vector<GidTable>& tables);

}  // namespace gidpolicy::formats
