// Fleet analysis: which links of a whole cluster will connect, and why not, from one GID-table
// snapshot per host (what `gidpolicy show --json` prints there).
//
// The gotcha this exists for: a GID choice that works on one host can break every link that
// touches another. JACCL advertises the first IPv4-mapped GID and routes from the literal index
// 1, so the one Mac mini whose mapped GID sits at index 2 (MLX PR 3389) breaks every link it is
// part of; a GPU host whose fifth NIC lost its IPv4 address breaks rail 5 to that host only.
// Finding that before launch takes every pair of a topology judged exactly as the fake fabric
// (fakes/fake_fabric.hpp, `gidpolicy simulate`) would connect it, at fleet size.
//
// How it stays fast and equal to the fabric: each (host, device, port) is planned once
// (Profile::plan, the real RtrBuilder and judge_rtr, the driver model shared with the fakes).
// A side's RTR verdict depends on its peer only through the peer GID's class (zero,
// link-local, IPv4-mapped) and, on InfiniBand, whether the peer has a LID — so every side
// precomputes its verdict per class that occurs in the fleet, and a pair is judged by a few
// table look-ups. Memory is linear in hosts (plus the links of explicit topologies: rings and
// JACCL device files), never in pairs: failures are counted per cause, and per-link detail is
// recomputed when a caller asks for it (link(), for_each_link()).
//
// Topologies (Topology::pairing):
//  * mesh: every pair of hosts over one named device/port;
//  * ring: host i with host i+1 (JACCL's ring, gidpolicy simulate's ring);
//  * rail: device k of every host with device k of every other host (rail-optimised GPU
//    clusters); rails named by device, or each host's k-th port in natural name order;
//  * jaccl: JACCL's device file (JACCL_IBV_DEVICES / MLX_IBV_DEVICES): devices[i][j] is the
//    device rank i uses to reach rank j, null on the diagonal. Used as JACCL uses it: the mesh
//    takes the first name of each entry; the ring connects rank i's k-th device towards i+1
//    with rank i+1's k-th device towards i; JACCL picks the ring when asked (JACCL_RING) and
//    valid, else the mesh when valid, else the ring.
//
// What only a fleet shows (Analysis::conflicts()): the same IP-based GID on two hosts (hosts
// made from one image or one example table) is an outage no per-host check sees, since the
// peer's packets reach whichever host answers for the address; and two rails whose IPv4 ranges
// interleave across the fleet cannot each be one subnet. Found by hashing every entry once.
//
// Example:
//   const std::vector<std::string> args{"gathered/"};   // FILE, HOST=FILE or a directory
//   auto hosts = gidpolicy::fleet::read_snapshots(args).value();
//   gidpolicy::fleet::Topology topo;
//   topo.pairing = gidpolicy::fleet::Pairing::jaccl;
//   topo.jaccl = gidpolicy::fleet::read_jaccl_devices("devices.json").value();
//   auto fleet = gidpolicy::fleet::Analysis::run(std::move(hosts), topo,
//                                                {.profile = gidpolicy::profiles::jaccl()}).value();
//   for (const auto& g : fleet.summary().groups)   // "rdma_en3 on 1 host: ... -> 3 links fail"
//     std::cout << fleet.describe(g) << "\n";
//   for (const auto& c : fleet.conflicts())        // "GID ::ffff:200.0.209.6 on 667 hosts (...)"
//     std::cout << fleet.describe(c) << "\n";
//   bool fine = fleet.ok();                         // every link connects, no address held twice
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/link.hpp>
#include <gidpolicy/profiles.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::fleet {

// ---------------------------------------------------------------------------------------------
// Input: host snapshots and JACCL device files.

/// One host: every port its `gidpolicy show --json` listed.
struct HostSnapshot {
  std::string host;             ///< "mac-a": the file's "host", HOST=FILE, else the file name
  std::string source;           ///< the file it came from, for messages
  std::vector<GidTable> ports;  ///< in the file's order
};

/// Bounds on what read_snapshots() accepts (every input is bounded).
struct ReadLimits {
  std::size_t max_file_bytes = std::size_t{8} << 20;  ///< one host: 8 MiB (64 ports x 256 GIDs is ~3 MiB)
  std::size_t max_hosts = 100'000;
  std::size_t max_ports_per_host = 4096;
  std::size_t max_entries_per_port = 65'536;
  unsigned threads = 2;  ///< parse files on this many threads
};

/// Parse the text `gidpolicy show --json` printed on one host: one port object, or an array of
/// them. `host` (HOST=FILE) wins over the document's "host" field, which wins over `source`'s
/// file name without its extension; whichever it is must follow the host-name rule (names.hpp),
/// and device and netdev names the device and netdev rules. Unknown keys are ignored (newer gidpolicy
/// versions add keys); a missing or malformed known key is an error naming source, port, entry and field:
/// "h3.json: [1].entries[4].gid: invalid GID text: ...". Nesting deeper than the schema is an
/// error before any parsing happens.
result<HostSnapshot> parse_snapshot(std::string_view text, std::string_view source,
                                    std::string_view host = {}, const ReadLimits& limits = {});

/// Read hosts from arguments, each "FILE", "HOST=FILE" or a directory (its regular files
/// ending in .json, in natural name order). Errors: a file too large, too many hosts, two
/// hosts of one name (both files named), an unreadable or malformed file, a path or host name
/// that breaks the name rule (names.hpp: not UTF-8, a control character...), quoted. Nothing is
/// returned half-read.
result<std::vector<HostSnapshot>> read_snapshots(std::span<const std::string> args,
                                                 const ReadLimits& limits = {});

/// JACCL's device file: names[i][j] lists the devices rank i uses to reach rank j (a JSON
/// string is a list of one, null an empty list).
struct JacclDevices {
  std::vector<std::vector<std::vector<std::string>>> names;
  [[nodiscard]] std::size_t ranks() const noexcept { return names.size(); }
  /// JACCL's mesh check: at least two ranks, nothing on the diagonal, a device everywhere else.
  /// On failure, `why` (when not null) says which entry breaks it.
  [[nodiscard]] bool valid_mesh(std::string* why = nullptr) const;
  /// JACCL's ring check: every rank has as many devices towards both neighbours as rank 0 has
  /// towards rank 1, and at least one.
  [[nodiscard]] bool valid_ring(std::string* why = nullptr) const;
  /// JACCL's choice between the two (jaccl::init): the ring when `prefer_ring` (JACCL_RING /
  /// MLX_JACCL_RING set) and it is valid, else the mesh when valid, else the ring when valid;
  /// true for the ring. errc::invalid_argument saying why neither is valid.
  [[nodiscard]] result<bool> uses_ring(bool prefer_ring) const;
  /// The devices rank `rank` opens under that layout, once each in natural order: in a mesh the
  /// first name towards every other rank, in a ring every name towards both neighbours.
  /// Empty for a rank out of range.
  [[nodiscard]] std::vector<std::string> devices_of(std::size_t rank, bool ring) const;
};
/// Parse a device file as JACCL does: an array of N arrays of N entries, each null, a string or
/// an array of strings; the names follow the device-name rule (names.hpp). At most 4,096 ranks
/// and 16 names per entry. The work is bounded by what is used: one pass over the bytes counts
/// the ranks first (no allocation), so a file nested deeper than the format, with more than
/// 4,096 ranks or, when `expected_ranks` is given (the host count), with another rank count is
/// refused before any of the matrix is built; the matrix is then built from the parser's events
/// (no JSON tree), a row refused as soon as it has more entries than there are ranks.
result<JacclDevices> parse_jaccl_devices(std::string_view text, std::string_view source = "<devices>",
                                         std::optional<std::size_t> expected_ranks = std::nullopt);
/// Read and parse a device file (at most 64 MiB; its path follows the path-name rule).
result<JacclDevices> read_jaccl_devices(const std::string& path,
                                        std::optional<std::size_t> expected_ranks = std::nullopt);

/// One rank's row of a JACCL device file, with JACCL's two checks made on the whole file: what
/// `env --for jaccl` and `doctor` use, read without building the matrix (read_jaccl_row).
///
/// The gotcha it removes: a device file within the bounds (4,096 ranks, 64 MiB) is ~16 million
/// entries; built whole (JacclDevices) that is gigabytes, to use one row.
///
/// Example:
///   auto row = gidpolicy::fleet::read_jaccl_row("devices.json", 2);
///   if (row && row.value().has_row()) {
///     auto ring = row.value().uses_ring(false);
///     if (ring) for (const auto& d : row.value().devices(ring.value())) std::cout << d << "\n";
///   }
struct JacclDeviceRow {
  std::size_t ranks = 0;                        ///< the file's rank count
  std::optional<std::size_t> rank;              ///< the row kept: the one asked for, when in range
  std::vector<std::vector<std::string>> names;  ///< names[j]: what `rank` uses towards rank j
  bool mesh = false;                            ///< JacclDevices::valid_mesh() of the whole file
  bool ring = false;                            ///< JacclDevices::valid_ring() of the whole file
  std::string why_not_mesh, why_not_ring;       ///< the first entry breaking each, as valid_*() say it
  [[nodiscard]] bool has_row() const noexcept { return rank.has_value(); }
  /// JacclDevices::uses_ring(): the same choice, the same error.
  [[nodiscard]] result<bool> uses_ring(bool prefer_ring) const;
  /// JacclDevices::devices_of(rank, ring) for the row kept (empty without one).
  [[nodiscard]] std::vector<std::string> devices(bool ring) const;
};
/// parse_jaccl_devices()'s checks, every one, in one pass of the parser (after its shape pass),
/// keeping only row `rank` (none when nullopt or out of range: `ranks` says how many there are).
/// Memory is the row and a few words per rank, not the matrix.
result<JacclDeviceRow> parse_jaccl_row(std::string_view text, std::optional<std::size_t> rank,
                                       std::string_view source = "<devices>");
/// Read (as read_jaccl_devices() reads it: a regular file, at most 64 MiB) and parse_jaccl_row().
result<JacclDeviceRow> read_jaccl_row(const std::string& path, std::optional<std::size_t> rank);

/// One host of the hostfile `mlx.distributed_config` writes and `mlx.launch --hostfile` reads:
/// {"ssh": "mac-a", "ips": ["10.0.0.1"], "rdma": [null, "rdma_en3", ...]}.
struct MlxHost {
  std::string ssh;                             ///< the name mlx.launch connects to over ssh
  std::vector<std::string> ips;                ///< its addresses, as written (IPv4 or IPv6 text)
  std::vector<std::vector<std::string>> rdma;  ///< rdma[j]: the devices it uses towards host j
};
/// The whole hostfile: {"backend": "jaccl", "envs": [...], "hosts": [...]} (or, as older MLX
/// versions wrote it, the bare array of hosts). "rdma" of every host is a row of JACCL's device
/// matrix; mlx.launch writes that matrix to a file and points MLX_IBV_DEVICES at it.
struct MlxHostfile {
  std::string backend;  ///< "jaccl", "ring", ...; "" when the file does not say
  std::vector<MlxHost> hosts;
  /// The device matrix the hosts' "rdma" rows form (a host without "rdma" is an empty row).
  [[nodiscard]] JacclDevices devices() const;
};
/// Parse a hostfile. Bounded: at most 4,096 hosts, 64 addresses per host, 16 device names per
/// entry, nesting no deeper than 8 (in keys it skips); each "rdma" row has one entry per host.
/// Unknown keys are skipped ("envs", keys newer MLX versions add). Every error names the
/// source and the field, with its line and column: "hosts.json:4:37: hosts[1].rdma[0]: ...".
/// `expected_hosts`, when given (the snapshots' count), must equal the number of hosts.
result<MlxHostfile> parse_mlx_hostfile(std::string_view text, std::string_view source = "<hostfile>",
                                       std::optional<std::size_t> expected_hosts = std::nullopt);
/// Read and parse a hostfile (at most 16 MiB; its path follows the path-name rule).
result<MlxHostfile> read_mlx_hostfile(const std::string& path,
                                      std::optional<std::size_t> expected_hosts = std::nullopt);
/// A rank as `--rank`, JACCL_RANK and MLX_RANK give it: 1 to 4 decimal digits, at most 4,095
/// (a device file's last rank). The one reading every command uses: white space, a sign, a
/// fraction or anything else around the digits is refused (errc::invalid_argument saying what
/// a rank is; the caller names where the text came from), never read as its leading number.
///
/// Example:
///   auto r = gidpolicy::fleet::parse_rank("3");   // 3
///   auto bad = gidpolicy::fleet::parse_rank(" 1");  // an error: not digits only
result<std::size_t> parse_rank(std::string_view text);

/// read_device_file()'s two shapes, one row kept: a JACCL device file streamed as
/// read_jaccl_row() streams it; a hostfile (at most 16 MiB of hosts) read whole, then its row.
result<JacclDeviceRow> read_device_file_row(const std::string& path, std::optional<std::size_t> rank);

/// A JACCL device file or an mlx.distributed_config hostfile, told apart by their shape (an
/// array of arrays, or an object / an array of objects): the device matrix either stands for.
result<JacclDevices> read_device_file(const std::string& path,
                                      std::optional<std::size_t> expected_ranks = std::nullopt);

// ---------------------------------------------------------------------------------------------
// Topology and options.

enum class Pairing : std::uint8_t { mesh, ring, rail, jaccl };
std::string_view to_string(Pairing p) noexcept;  ///< "mesh", "ring", "rail", "jaccl"

/// Which device of host A talks to which device of host B.
struct Topology {
  Pairing pairing = Pairing::mesh;
  /// mesh/ring: the device every host uses; empty: each host's first port in natural order.
  std::string device;
  /// The port on every named device (JACCL always uses port 1).
  std::uint32_t port = 1;
  /// rail: rail k is the device rails[k] on every host; empty: each host's k-th port in
  /// natural order (mlx5_2 before mlx5_10), as many rails as the host with most ports has.
  std::vector<std::string> rails;
  /// jaccl: the device file; ranks are the hosts in input order.
  JacclDevices jaccl;
  /// jaccl: JACCL_RING / MLX_JACCL_RING is set (prefer the ring when it is valid).
  bool jaccl_prefer_ring = false;
};

/// What every host runs.
struct Options {
  Profile profile = profiles::automatic();
  /// Driver model for every host; default DriverModel::for_table of each port.
  std::optional<DriverModel> driver;
  /// Judge the links on this many threads (at least 1).
  unsigned threads = 2;
  /// When set: the profile one side runs, where hosts differ (each rank of gidpolicy-probe-mpi
  /// reads its own launch settings, so one host may pin an index the others do not). Called once
  /// per used port with the host's index and the port's table, in order; nullopt: `profile`.
  std::function<std::optional<Profile>(std::uint32_t host, const GidTable& port)> profile_for;
};

// ---------------------------------------------------------------------------------------------
// Results.

/// What kind of fleet-wide fault a Conflict is.
enum class ConflictKind : std::uint8_t {
  /// One IP-based GID (IPv4-mapped, or IPv6 outside fe80::/10) on two or more hosts: the same IP
  /// address, so the peer's packets reach one of them. Link-local GIDs (fe80::, and IPv4
  /// 169.254/16) are left out: they repeat only where MACs or self-assigned addresses repeat on
  /// separate segments, which the snapshots cannot tell from a fault.
  duplicate_address,
  /// Two rails (device positions) whose ports' IPv4 address ranges interleave across the fleet:
  /// one subnet per rail cannot hold both, so routes by subnet send one rail's traffic out of
  /// the other's NIC. A warning: flat subnets with per-NIC source routing are a design too.
  rail_subnet_overlap,
};
std::string_view to_string(ConflictKind k) noexcept;  ///< "duplicate_address", "rail_subnet_overlap"

/// How many hosts (and addresses) a Conflict names; the counts say how many there are.
inline constexpr std::size_t kConflictNamed = 5;

/// A fault found across hosts, grouped: addresses held by the same set of hosts are one conflict
/// (2,000 hosts made from one table are one finding, not 2,000).
struct Conflict {
  ConflictKind kind = ConflictKind::duplicate_address;
  std::vector<Gid> gids;      ///< duplicate_address: the first kConflictNamed GIDs
  std::size_t gid_count = 0;  ///< duplicate_address: how many GIDs this host set shares
  std::string device;         ///< the device holding the first GID on the first host; rail: "rail 0 (mlx5_0)"
  std::string other_device;   ///< rail_subnet_overlap: the other rail, "rail 1 (mlx5_1)"
  std::uint32_t host_count = 0;      ///< distinct hosts involved
  std::vector<std::uint32_t> hosts;  ///< the first kConflictNamed of them, in input order
  std::uint64_t links = 0;           ///< links the fabric connects over one of these GIDs
  bool fatal = false;                ///< makes the fleet not OK (duplicate_address)
  std::string detail;                ///< rail_subnet_overlap: the two ranges
};

/// How one direction of a link ends: the link judgment's outcome (link.hpp), which the fake
/// fabric reports too.
using gidpolicy::LinkOutcome;

/// Why a direction failed: one entry per distinct (outcome, device, text).
struct Cause {
  LinkOutcome outcome = LinkOutcome::ok;
  std::string device;  ///< the device of the side at fault, "rdma_en2"
  int err = 0;         ///< the driver's errno for rtr_error/qp_refused/times_out, else 0
  Platform platform = Platform::linux_kernel;  ///< whose errno numbering `err` uses
  std::string text;  ///< "RTR from sgid_index 1 failed: EINVAL (22): sgid_index 1 is empty"
};

/// Link::conflict and SideInfo::conflict when no fleet conflict touches it.
inline constexpr std::uint32_t kNoConflict = 0xffffffffu;

/// One side of a link: a host's device/port and what it advertises and routes from.
struct SideInfo {
  std::uint32_t host = 0;
  std::string device;
  std::uint32_t port = 1;
  bool usable = false;
  std::optional<Gid> advertised;  ///< when a selection was made
  std::optional<std::uint8_t> sgid_index;
  /// The duplicate_address conflict (index into Analysis::conflicts()) the advertised GID is
  /// part of, else kNoConflict.
  std::uint32_t conflict = kNoConflict;
};

/// One direction of a judged link.
struct Direction {
  LinkOutcome outcome = LinkOutcome::ok;
  std::uint32_t cause = 0;    ///< index into causes(); meaningful when outcome != ok
  std::uint32_t culprit = 0;  ///< the side (index into sides()) the cause belongs to
  [[nodiscard]] bool ok() const noexcept { return outcome == LinkOutcome::ok; }
};

/// One link of the topology, judged.
struct Link {
  std::uint64_t index = 0;     ///< position in the topology's link order
  std::uint32_t a = 0, b = 0;  ///< sides (index into sides())
  std::uint32_t lane = 0;      ///< rail number, or JACCL ring connection; 0 otherwise
  Direction a_to_b, b_to_a;
  /// Index into Analysis::conflicts() when a side advertises a GID another host holds too (the
  /// a side's first), else kNoConflict. The fabric model still connects such a link; the real
  /// fabric delivers the peer's packets to whichever host answers for the address.
  std::uint32_t conflict = kNoConflict;
  [[nodiscard]] bool connected() const noexcept { return a_to_b.ok() && b_to_a.ok(); }
  /// Connected, and over GIDs no other host holds.
  [[nodiscard]] bool reliable() const noexcept { return connected() && conflict == kNoConflict; }
};

/// The failures of one cause.
struct CauseGroup {
  std::uint32_t cause = 0;
  std::uint64_t links = 0;       ///< links with at least one direction failing for this cause
  std::uint32_t hosts = 0;       ///< distinct hosts at fault
  std::uint32_t first_side = 0;  ///< the first side at fault, for an example
};

struct Summary {
  std::uint64_t links = 0;
  std::uint64_t connected = 0;  ///< as the fabric model connects them (Link::connected())
  /// Of `connected`, the links a conflict touches (Link::reliable() false): connected, not reliably.
  std::uint64_t unreliable = 0;
  /// Largest first. A link failing for two causes (each direction its own) counts in both.
  std::vector<CauseGroup> groups;
  [[nodiscard]] bool all_connected() const noexcept { return connected == links; }
};

/// A fleet planned and judged.
class Analysis {
 public:
  /// Plan every used (host, device, port) once, judge every link, count failures per cause.
  /// Errors: fewer than two hosts; two hosts of one name; a JACCL file whose rank count differs
  /// from the host count, or that forms neither a valid mesh nor ring (JACCL's own checks);
  /// rail with no rails; a link count above 2^40.
  static result<Analysis> run(std::vector<HostSnapshot> hosts, const Topology& topology,
                              const Options& options = {});

  [[nodiscard]] std::size_t host_count() const noexcept { return hosts_.size(); }
  [[nodiscard]] const HostSnapshot& host(std::uint32_t i) const { return hosts_[i]; }
  [[nodiscard]] const std::vector<SideInfo>& sides() const noexcept { return side_info_; }
  [[nodiscard]] const std::vector<Cause>& causes() const noexcept { return causes_; }
  [[nodiscard]] const Summary& summary() const noexcept { return summary_; }
  /// Fleet-wide faults, duplicate addresses first, each group's largest first.
  [[nodiscard]] const std::vector<Conflict>& conflicts() const noexcept { return conflicts_; }
  /// Every link connects and no conflict is fatal: what `gidpolicy fleet` exits 0 for.
  [[nodiscard]] bool ok() const noexcept;
  /// What was used: jaccl resolves to "jaccl-mesh" or "jaccl-ring".
  [[nodiscard]] const std::string& topology_name() const noexcept { return topology_name_; }
  [[nodiscard]] std::string profile_spec() const { return profile_.spec(); }
  [[nodiscard]] std::uint64_t link_count() const noexcept { return link_count_; }

  /// Link `k` (0 <= k < link_count()), judged in constant time.
  [[nodiscard]] Link link(std::uint64_t k) const;
  /// Call `fn` for links [begin, end) in order (faster than link() per index for a mesh).
  void for_each_link(std::uint64_t begin, std::uint64_t end,
                     const std::function<void(const Link&)>& fn) const;

  /// "rdma_en2 on 3 hosts: RTR from sgid_index 1 failed: EINVAL (22): sgid_index 1 is empty
  ///  -> 12 links fail"
  [[nodiscard]] std::string describe(const CauseGroup& g) const;
  /// "mac-b rdma_en3: RTR from sgid_index 1 failed: ..." for one failed direction.
  [[nodiscard]] std::string describe(const Direction& d) const;
  /// "GID ::ffff:200.0.209.6 (200.0.209.6) on 667 hosts (h1, h2, h3, h4, h5, ...), mlx5_bond_0 on
  ///  h1: one address on several hosts -> 221778 links not reliably connected".
  [[nodiscard]] std::string describe(const Conflict& c) const;
  /// "mac-a rdma_en5 <-> mac-b rdma_en5".
  [[nodiscard]] std::string describe_link(const Link& l) const;

  Analysis(Analysis&&) noexcept;
  Analysis& operator=(Analysis&&) noexcept;
  ~Analysis();

  struct Side;    // per-side precomputed verdicts (internal)
  struct Layout;  // the sides a topology uses and how it pairs them (internal)

 private:
  Analysis();
  result<void> lay_links(const Topology& topology, const Layout& layout);
  [[nodiscard]] Link judge(std::uint64_t index, std::uint32_t a, std::uint32_t b, std::uint32_t lane,
                           std::uint32_t rank_a, std::uint32_t rank_b) const;
  void summarize(unsigned threads);
  void find_conflicts();

  std::vector<HostSnapshot> hosts_;
  Profile profile_;
  std::string topology_name_;
  Pairing pairing_ = Pairing::mesh;
  std::vector<Side> sides_;
  std::vector<SideInfo> side_info_;
  std::vector<Cause> causes_;
  std::vector<Conflict> conflicts_;
  Summary summary_;
  std::uint64_t link_count_ = 0;
  std::uint32_t lanes_ = 1;  // rail: sides_ index = host * lanes_ + lane
  // mesh/rail: per lane, the count of usable sides among hosts [0, i) (QP-cap ranks).
  std::vector<std::vector<std::uint32_t>> usable_prefix_;
  // ring/jaccl: the explicit links {a, b, lane, rank_a, rank_b}.
  struct Explicit {
    std::uint32_t a, b, lane, rank_a, rank_b;
  };
  std::vector<Explicit> explicit_;
};

/// Natural order of device names: "mlx5_2" < "mlx5_10".
bool natural_less(std::string_view a, std::string_view b) noexcept;

}  // namespace gidpolicy::fleet
