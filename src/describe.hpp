// Description helpers: how messages and trace notes name a port and an entry (not installed).
//
// Shared by the policies, the agreement check, the RTR builder and diagnose(), so every message
// names an entry the same way; a unit of its own at the vocabulary layer so none of those
// includes another's internals for it.
#pragma once

#include <gidpolicy/gid_table.hpp>

#include <string>

namespace gidpolicy::detail {

/// "mlx5_0 port 1".
std::string where(const GidTable& table);
/// "fe80::1 (roce_v2) on eth0": what an entry holds, for notes and messages.
std::string describe(const GidEntry& e);
/// "index 3 holds ::ffff:10.0.0.1 (roce_v2)" / "index 1 is empty".
std::string holds(const GidEntry& e);
/// A peer GID that passes every destination rule for `source` (same family, global, non-zero):
/// stands in for a peer a prediction does not know, so the verdict is about this side's choice
/// alone. An empty slot (or none) gets an IPv4-mapped stand-in: the zero GID an empty slot
/// holds must never be taken for the peer's, or its ENODATA reads as the peer's zero GID.
Gid stand_in_peer(const GidEntry* source);

}  // namespace gidpolicy::detail
