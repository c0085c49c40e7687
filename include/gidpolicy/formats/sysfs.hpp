// GID tables from a directory laid out like /sys/class/infiniband, and back.
//
//   <root>/<dev>/ports/<p>/state               "4: ACTIVE"
//   <root>/<dev>/ports/<p>/link_layer          "Ethernet" / "InfiniBand"
//   <root>/<dev>/ports/<p>/lid                 "0x0" (optional)
//   <root>/<dev>/ports/<p>/rate                "100 Gb/sec (4X EDR)" (optional: PortInfo::link_rate)
//   <root>/<dev>/ports/<p>/gids/<i>            "fe80:0000:0000:0000:0ac0:ebff:feda:1cfb"
//   <root>/<dev>/ports/<p>/gid_attrs/types/<i> "IB/RoCE v1" / "RoCE v2"
//   <root>/<dev>/ports/<p>/gid_attrs/ndevs/<i> "bond0"
//
// Kernel quirks encoded here:
//  * The kernel creates one gids/<i> file per slot (their count is gid_tbl_len); an empty slot
//    reads as all zeros.
//  * Reading types/<i> or ndevs/<i> of an empty slot fails (EINVAL): a zero GID whose type
//    cannot be read is an empty slot; a zero GID with a readable type is kept as a valid entry
//    holding the zero GID (what ds4's own test table has at index 4).
//  * Kernels before gid_attrs existed have no gid_attrs/ directory: every GID is
//    "IB/RoCE v1", i.e. roce_v1 on an Ethernet port and ib on an InfiniBand one.
//  * "IB/RoCE v1" is one sysfs type for two things: ib on InfiniBand, roce_v1 on Ethernet,
//    unknown elsewhere. Type text the kernel may add later reads as unknown, not an error.
//  * Files under /sys/class/infiniband are symlinks to the device tree: they are followed.
//
// Errors: errc::io_error (a directory or a port's state/link_layer cannot be read), errc::
// parse_error / errc::invalid_field naming the file ("<path>:1: ..."); an unreadable gids/<i>
// file is not an error but an EntryState::unreadable entry carrying the read's errno.
//
// Example:
//   auto tables = gidpolicy::formats::read_sysfs("/sys/class/infiniband");
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::formats {

/// The kernel's text for a port's rate file, without its newline: "100 Gb/sec (4X EDR)",
/// "2.5 Gb/sec (1X SDR)". Lanes times the lane rate, as the kernel's rate_show() computes it.
/// nullopt for an encoding verbs does not define (the kernel cannot print one either).
///   auto text = gidpolicy::formats::sysfs_rate_text({.width = 2, .speed = 32});  // "100 Gb/sec (4X EDR)"
std::optional<std::string> sysfs_rate_text(LinkRate rate);

/// Read every device and port under `root` (a /sys/class/infiniband-like directory, or one
/// device directory holding `ports/`). Devices by name, ports and indices by number.
/// Empty slots are left out of the table (Holes::empty); gid_tbl_len is the number of slots.
/// Every attribute must be a regular file of at most one page (4096 bytes): a FIFO, a device
/// or a socket in place of gids/N, gid_attrs/types/N or state is errc::io_error naming the
/// path (opened without blocking, never read); a directory reads as a failed read (EISDIR).
/// Names follow the readers' name rule.
result<std::vector<GidTable>> read_sysfs(const std::filesystem::path& root);

/// The most text read_sysfs_listing() reads: a host with 16 ports of 256 slots lists some 12,000
/// lines (about 0.8 MB).
inline constexpr std::size_t kMaxSysfsListingBytes = 16u << 20;

/// The tables of a /sys/class/infiniband tree given as the lines `grep -H . FILES` prints of it
/// (what `gidpolicy-collect` writes into a host bundle: docs/bundle.md): "PATH:TEXT", PATH
/// relative to /sys/class/infiniband or absolute below it, one of DEVICE/ports/PORT/state,
/// link_layer, lid, rate, gids/N, gid_attrs/types/N or gid_attrs/ndevs/N. Read by the same
/// rules as read_sysfs(), over the files listed: a file left out reads as unreadable, as the
/// type of an empty slot does on the host (the collector leaves those out). `source` names the
/// text in errors ("host.bundle part sysfs_gids"). Errors (naming the line): a line without
/// ':', a path of any other shape or one that climbs out of the tree, a device name that breaks
/// the name rule, an attribute above a page, more than kMaxSysfsListingBytes; then
/// read_sysfs()'s, naming the file.
///
///   auto t = gidpolicy::formats::read_sysfs_listing(
///       "mlx5_0/ports/1/state:4: ACTIVE\nmlx5_0/ports/1/link_layer:Ethernet\n"
///       "mlx5_0/ports/1/gids/0:fe80:0000:0000:0000:0ac0:ebff:feda:1cfb\n"
///       "mlx5_0/ports/1/gid_attrs/types/0:RoCE v2\n", "listing");
result<std::vector<GidTable>> read_sysfs_listing(std::string_view listing, const std::string& source);

/// How write_sysfs lays the tree out.
struct SysfsWriteOptions {
  /// false: no gid_attrs/ directory, as on kernels before 4.6 (types then read back as v1).
  bool gid_attrs = true;
  /// The tree's bounds, checked (sysfs_footprint) before anything is written. A real host is a
  /// few thousand files (256 slots per port); a table's gid_tbl_len makes one file per slot
  /// whether or not the slot holds a GID, so a short document can ask for a large tree.
  std::uint64_t max_files = 65'536;       ///< regular files and links
  std::uint64_t max_bytes = 16ull << 20;  ///< bytes of file content
};

/// What write_sysfs(tables, root, options) would create: files (regular files and links),
/// directories, and bytes of content (each file also takes an inode, and on most file systems
/// a block).
struct SysfsFootprint {
  std::uint64_t files = 0;
  std::uint64_t directories = 0;  ///< counted per port, as if no two ports shared a directory
  std::uint64_t bytes = 0;
};
SysfsFootprint sysfs_footprint(const std::vector<GidTable>& tables, SysfsWriteOptions options = {});
/// What write_sysfs checks before its first file: every device name can be a directory, no
/// port above 65536 slots, and the footprint within `options.max_files` and `.max_bytes`
/// (errc::invalid_argument saying how many files or bytes, and the limit). Costs the tables'
/// size, not the tree's.
result<void> check_sysfs_tree(const std::vector<GidTable>& tables, SysfsWriteOptions options = {});

/// Write tables as a sysfs-like tree under `root` (created if missing), with the quirks above:
/// every slot in [0, length()) gets a gids file (zeros when empty or absent); types/ndevs files
/// exist only where a real kernel would let them be read (a known type, a netdev); an
/// unreadable slot's gids file is a dangling symlink, so reading it fails. Test fixtures and the
/// fakes use this. It writes into `root` as it is (merging with what is there); the CLI's
/// `convert --to sysfs` writes a fresh temporary tree and renames it into place instead.
/// Errors: the errno of a failed write or mkdir, naming the path; errc::invalid_argument for a
/// device name that cannot be a directory, a gid_tbl_len above 65536, or a tree above
/// `options.max_files` or `options.max_bytes` (refused before the first file, the count in the
/// message).
result<void> write_sysfs(const std::vector<GidTable>& tables, const std::filesystem::path& root,
                         SysfsWriteOptions options = {});

/// What survives write_sysfs then read_sysfs: read_sysfs(write_sysfs(t)) == sysfs_view(t).
/// gid_tbl_len becomes length(); ifindex, MTU are dropped; empty slots and holes disappear
/// (holes: empty); an untyped zero GID becomes empty; types follow the sysfs type mapping above
/// (without gid_attrs: all v1); unreadable entries carry ENOENT (the dangling link); an unknown
/// link layer loses its raw number.
std::vector<GidTable> sysfs_view(const std::vector<GidTable>& tables, SysfsWriteOptions options = {});

}  // namespace gidpolicy::formats
