// Realistic GID table families for property tests, shaped like the tables in
// examples/tables and docs/facts.md#linux-table-layout: Apple Thunderbolt, mlx5 RoCE (v1/v2 pairs, pods,
// bond+vxlan), rxe, IPv6-only NICs, InfiniBand, and wide arbitrary tables past index 255. Every generator
// shrinks toward small tables (fewer addresses, mapped GID at its usual index).
#pragma once

#include <gidpolicy/gid_table.hpp>

#include <rapidcheck.h>

namespace gidpolicy::test {

/// rdma_enN, fe80 at 0; the IPv4-mapped GID usually at 1, sometimes at 2 or later, sometimes
/// absent (no IPv4 on the port), sometimes with empty slots (or holes) before it.
rc::Gen<GidTable> gen_thunderbolt_table();
/// mlx5: a v1/v2 pair per address, link-local first then IPv4 (and maybe global IPv6) pairs;
/// pod/macvlan variants start at 4 or 6 with empty slots below; bond + vxlan sharing an IP.
rc::Gen<GidTable> gen_mlx5_table();
/// rxe soft-RoCE, IPv6-only RoCE v2 NICs (fe80 + ULA, no IPv4-mapped entry), InfiniBand ports.
rc::Gen<GidTable> gen_other_table();
/// Holes, unreadable entries, zero GIDs, unknown types, gid_tbl_len 1..1024 (past 255).
rc::Gen<GidTable> gen_wide_table();
/// Arbitrary tables that shrink well: a list of (gap, slot) pairs, so shrinking drops entries,
/// pulls the rest toward index 0 and turns slots into the simplest kind (an IPv4-mapped GID,
/// then link-local, ULA, zero, empty, unreadable, random bytes); gid_tbl_len 1..1024 (at least
/// one past the last entry) or unknown. Unknown types and link layers too.
rc::Gen<GidTable> gen_sparse_table();
/// Any of the above, weighted toward the realistic families.
rc::Gen<GidTable> gen_realistic_table();
/// Only the hardware families (Thunderbolt, mlx5, rxe/IPv6-only/InfiniBand): what a fabric
/// host's port looks like (no unreadable entries, no holes that are "not shown").
rc::Gen<GidTable> gen_family_table();

}  // namespace gidpolicy::test
