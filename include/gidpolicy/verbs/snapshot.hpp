// snapshot(): read one port's GID table through a VerbsApi into a GidTable value.
//
// Hardware gotchas encoded here:
//  * A port that is not ACTIVE (or ARMED) has a table that is not meaningful yet: the GIDs
//    of its netdev's addresses appear only once the link is up. snapshot() refuses such a port
//    with errc::port_not_active unless SnapshotOptions::allow_inactive is set.
//  * rdma-core offers three reads of very different cost: ibv_query_gid_table (one call for
//    every valid entry of every port, >= v32), ibv_query_gid_ex (one call per index, type and
//    netdev included, ENODATA for an empty slot) and ibv_query_gid (one call per index, zeros for
//    an empty slot, no type). snapshot() uses the cheapest one the backend offers and falls back
//    when the driver answers EOPNOTSUPP/ENOSYS, recording what it did in a SnapshotReport.
//  * The table call reports all ports and fails with EINVAL when the buffer is too small;
//    snapshot() sizes it to the port's gid_tbl_len (enough on single-port devices: mlx5 and Apple
//    expose one port per device) and doubles it on EINVAL.
//  * Per-index reads can stop early (SnapshotOptions::stop_after): a JACCL-style first-mapped
//    scan needs indices 0..k only, as JACCL's own info() loop does. The unread rest is then
//    Holes::not_shown, never claimed empty.
//
// Example:
//   gidpolicy::verbs::SnapshotReport report;
//   auto table = gidpolicy::verbs::snapshot(api, "mlx5_0", 1, {.report = &report});
//   // report.method == ReadMethod::gid_table, report.driver_calls == 2 (port + table)
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::verbs {

/// How a snapshot read the entries.
enum class ReadMethod : std::uint8_t {
  gid_table,   ///< one ibv_query_gid_table call
  gid_entry,   ///< ibv_query_gid_ex per index
  gid_legacy,  ///< ibv_query_gid per index (no type, no netdev)
};
/// "gid_table", "gid_entry", "gid_legacy".
std::string_view to_string(ReadMethod m) noexcept;

/// What a snapshot cost and how it read the table.
struct SnapshotReport {
  ReadMethod method = ReadMethod::gid_table;  ///< the method that produced the entries
  /// Every VerbsApi call snapshot() made, failed attempts included (open/close when it opened
  /// the device by name, the port query, each GID read).
  unsigned driver_calls = 0;
  unsigned gid_reads = 0;      ///< of which GID-reading calls
  bool stopped_early = false;  ///< stop_after ended a per-index scan before gid_tbl_len
  /// A per-index scan read only the indices an sgid_index can reach (kSgidReach) of a longer
  /// table, without SnapshotOptions::whole_table: the rest is Holes::not_shown.
  bool capped = false;
  std::uint32_t indices_read = 0;  ///< per-index methods: how many indices were read
  /// Why cheaper methods were not used: "read_gid_table: Operation not supported (errno 95)".
  std::vector<std::string> fallbacks;
};

/// Indices an sgid_index (uint8_t) can name: a per-index scan reads no further by default.
inline constexpr std::uint32_t kSgidReach = 256;
/// The largest gid_tbl_len snapshot() accepts from a driver. Real ports report 16 to 256
/// (mlx5 RoCE: 256); a length above this (or a negative one) is a driver bug or a hostile
/// function table, refused with the driver's errno EPROTO rather than read for minutes.
inline constexpr std::uint32_t kMaxGidTableLength = 65536;

/// How snapshot() reads.
struct SnapshotOptions {
  /// Read a port that is not ACTIVE/ARMED anyway (its table may be incomplete).
  bool allow_inactive = false;
  /// Use only this method (no fallback): for tests and drivers whose table call misbehaves.
  std::optional<ReadMethod> method;
  /// Per-index methods only: stop after the first entry for which this returns true (the
  /// table call reads everything in one call and ignores it). See stop_at_first_ipv4_mapped().
  std::function<bool(const GidEntry&)> stop_after;
  /// Per-index methods only: read every index below gid_tbl_len (at most kMaxGidTableLength)
  /// instead of the kSgidReach an sgid_index can name. The table call reads all regardless.
  bool whole_table = false;
  /// Filled in when not null.
  SnapshotReport* report = nullptr;
};

/// JACCL's scan condition as a stop_after predicate: a usable IPv4-mapped entry.
std::function<bool(const GidEntry&)> stop_at_first_ipv4_mapped();

/// Snapshot `port` of an open device.
/// Errors: errc::port_not_active; errc::invalid_argument for a port outside 1..255; the
/// driver's errno from the port query; EPROTO for a gid_tbl_len that is negative or above
/// kMaxGidTableLength; errc::not_supported when the backend can read no GID.
/// A GID read failing for one index does not fail the snapshot: that entry is
/// EntryState::unreadable with the errno kept.
result<GidTable> snapshot(VerbsApi& api, DeviceHandle device, std::uint32_t port,
                          const SnapshotOptions& options = {});
/// Open `device` by name, snapshot, close. Errors as above plus errc::no_devices and
/// errc::device_not_found.
result<GidTable> snapshot(VerbsApi& api, std::string_view device, std::uint32_t port,
                          const SnapshotOptions& options = {});

/// Read the single entry at `index` with the cheapest exact read (read_gid_entry, else
/// read_gid): ENODATA and zeros both become EntryState::empty, another errno EntryState::unreadable.
/// `calls`, when not null, is incremented per VerbsApi call made.
result<GidEntry> read_entry(VerbsApi& api, DeviceHandle device, std::uint32_t port, std::uint32_t index,
                            unsigned* calls = nullptr);

/// Follow a GID to its index now: after a port flap the kernel reallocates first-free slots and
/// the same address can come back elsewhere (NCCL 2157). With `type`, only an entry of that GID
/// type matches: mlx5 stores each address twice (RoCE v1 and v2), and following a v2 entry to
/// its v1 twin would change how packets are sent. Per-index reads stop at the first match.
/// Error: errc::gid_changed when no entry holds `gid` any more (the detail says so).
result<std::uint32_t> find_current_index(VerbsApi& api, DeviceHandle device, std::uint32_t port,
                                         const Gid& gid, std::optional<GidType> type = std::nullopt);

}  // namespace gidpolicy::verbs
