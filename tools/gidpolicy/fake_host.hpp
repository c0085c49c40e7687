// `gidpolicy fake-host`: run an unmodified program on a host that looks like a GID table. The
// program sees /sys/class/infiniband, /sys/class/infiniband_verbs and /dev/infiniband made from
// the table inside a private mount namespace (and, with --netns, the table's netdevs in a
// private network namespace), with the drop-in fake libibverbs first on its library path.
// Declared apart from the other subcommands (commands.hpp): main.cpp only registers it.
//
// Parts: fake_host.cpp (the command: namespaces, mounts, the child, the table watch),
// fake_host_sysfs.cpp (the sysfs view), fake_host_net.cpp (the netdevs).
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>

#include <CLI/CLI.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gidpolicy::cli {

/// Exit status of fake-host's own failures (a bad table, refused namespaces, a mount that
/// failed), as env(1) and unshare(1) use it; 126/127 when the command cannot be run or found.
/// Otherwise fake-host exits with the command's status (128 + N when signal N ended it).
inline constexpr int kExitFakeHostFailed = 125;

struct FakeHostArgs {
  std::string tables;                 ///< --tables FILE (any table format, or a sysfs-like directory)
  bool netns = false;                 ///< --netns: a private network namespace with the table's netdevs
  std::optional<std::string> driver;  ///< --driver linux|apple_thunderbolt (default: by link layer)
  std::optional<std::string> fabric;  ///< --fabric DIR: where the QPs' sockets live
  std::vector<std::string> command;   ///< after --, verbatim (never through CLI11's parsing)
  std::vector<std::string> stray;     ///< positional words before -- (refused: the command goes after --)
};

/// Registers `fake-host` on `app`; run() after parsing when parsed() says it was chosen.
class FakeHostCommand {
 public:
  explicit FakeHostCommand(CLI::App& app);
  [[nodiscard]] bool parsed() const { return cmd_->parsed(); }
  /// Before CLI11 parses `argv`: when argv[1] is `fake-host`, takes everything after the first
  /// `--` as the command, verbatim, and returns the count of the words CLI11 is to parse (the
  /// `--` and the command excluded). CLI11 would read `[0-9]`, `[a,b]` or `[]` as lists; exec
  /// must receive them as written. Otherwise returns `argc`.
  int take_command(int argc, char** argv);
  [[nodiscard]] int run() const;

 private:
  CLI::App* cmd_ = nullptr;
  FakeHostArgs o_;
};

int run_fake_host(const FakeHostArgs& o);

namespace fake_host {

/// The link width and speed a port reports when its table gives none: the fake libibverbs'
/// default (fakes::c_core::kDefaultLinkRate, checked equal where both are built), 4X EDR.
inline constexpr LinkRate kFakeLinkRate{.width = 2, .speed = 32};

/// The device order the fake libibverbs uses (first appearance in the table file): a device's
/// uverbs number is its position here.
std::vector<std::string> device_order(const std::vector<GidTable>& tables);

/// Write the sysfs view of `tables` under `class_dir` (a fresh directory): infiniband/<dev>/...
/// as `convert --to sysfs` writes it plus what UCX, libfabric and rdma-core read besides (the
/// device's node_guid, node_type, device/numa_node and local_cpus; each port's phys_state,
/// rate (the table's, else kFakeLinkRate), cap_mask, pkeys) and infiniband_verbs/uverbsN. Bounded as
/// write_sysfs is.
result<void> write_class_tree(const std::vector<GidTable>& tables, const std::filesystem::path& class_dir);

/// Make the tree at `live` hold what `staged` holds, file by file (each file renamed into place,
/// so a reader sees the old content or the new, never a mix); entries `staged` lacks are removed.
/// Both must be on one file system.
result<void> sync_tree(const std::filesystem::path& staged, const std::filesystem::path& live);

/// What apply_netdevs made so far in this network namespace.
struct NetdevState {
  bool in_user_namespace = false;  ///< `ip` then needs CAP_NET_ADMIN handed on as an ambient capability
  bool loopback_up = false;
  unsigned peers = 0;                                  ///< veth peers made (their names: gpfh0, gpfh1, ...)
  std::set<std::string> created;                       ///< veths made
  std::map<std::string, std::set<std::string>> added;  ///< per netdev, the addresses given to it
};

/// The netdevs of `tables` (veth, each with its peer) in the current network namespace: each
/// created when a table first names it, then its addresses (the GIDs' IPv4 and IPv6 addresses)
/// and state (up while a port it serves is ACTIVE) made to match. Loopback up. Runs
/// `ip` once per change (never `ip -batch`, which reads `#` as a comment); errors name the
/// failing ip command and its complaint.
result<void> apply_netdevs(const std::vector<GidTable>& tables, NetdevState& state);

}  // namespace fake_host

}  // namespace gidpolicy::cli
