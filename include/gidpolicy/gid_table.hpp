// GidTable: one port's GID table as a value snapshot, plus the types that describe it.
//
// Hardware gotchas encoded here:
//  * An index is not a stable name for a GID: after a port flap the kernel re-allocates
//    first-free slots and the same address can come back elsewhere (NCCL 2157). Look GIDs up
//    by value with find(Gid) when following one across snapshots.
//  * "Empty" has two spellings at the driver: ibv_query_gid returns success and all zeros,
//    ibv_query_gid_ex returns ENODATA. Both become EntryState::empty here.
//  * Tools print partial tables: show_gids never prints gid_tbl_len (length unknown) and
//    ibv_devinfo hides entries whose interface id is zero (holes are "not shown", not empty).
//
// Example:
//   gidpolicy::PortInfo port{.device = "mlx5_0", .port = 1, .state = PortState::active,
//                            .link_layer = LinkLayer::ethernet(), .gid_tbl_len = 256};
//   auto table = gidpolicy::GidTable::make(port, {GidEntry::valid(3, gid, GidType::roce_v2)});
//   if (const GidEntry* e = table.value().find(3)) std::cout << e->gid.to_string();
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace gidpolicy {

/// The GID type the kernel stores with an entry (ibv_gid_type_sysfs / enum ibv_gid_type).
enum class GidType : std::uint8_t { ib, roce_v1, roce_v2, unknown };
/// "ib", "roce_v1", "roce_v2", "unknown".
std::string_view to_string(GidType t) noexcept;
/// Accepts the names above plus "IB", "RoCE v1", "RoCE v2", "v1", "v2" (any case).
std::optional<GidType> gid_type_from_string(std::string_view s) noexcept;

/// What a port's link layer is. Unknown values (a future driver's) keep their raw number.
class LinkLayer {
 public:
  enum class Kind : std::uint8_t { unknown, infiniband, ethernet, thunderbolt };
  /// Raw numbers: verbs' IBV_LINK_LAYER_INFINIBAND (1) and _ETHERNET (2); Apple reports
  /// Thunderbolt ports with transport 100, which gidpolicy uses as Thunderbolt's raw value.
  static constexpr std::uint32_t kRawInfiniband = 1, kRawEthernet = 2, kRawThunderbolt = 100;

  constexpr LinkLayer() noexcept = default;
  static constexpr LinkLayer infiniband() noexcept { return LinkLayer(Kind::infiniband, kRawInfiniband); }
  static constexpr LinkLayer ethernet() noexcept { return LinkLayer(Kind::ethernet, kRawEthernet); }
  static constexpr LinkLayer thunderbolt() noexcept { return LinkLayer(Kind::thunderbolt, kRawThunderbolt); }
  /// From a raw link_layer / transport number; anything unrecognised is Kind::unknown.
  static constexpr LinkLayer from_raw(std::uint32_t raw) noexcept {
    switch (raw) {
      case kRawInfiniband:
        return infiniband();
      case kRawEthernet:
        return ethernet();
      case kRawThunderbolt:
        return thunderbolt();
      default:
        return LinkLayer(Kind::unknown, raw);
    }
  }
  [[nodiscard]] constexpr Kind kind() const noexcept { return kind_; }
  [[nodiscard]] constexpr std::uint32_t raw() const noexcept { return raw_; }
  /// RoCE and Thunderbolt route by GID (GRH mandatory, link-local GIDs are not routable).
  [[nodiscard]] constexpr bool is_ip_routed() const noexcept {
    return kind_ == Kind::ethernet || kind_ == Kind::thunderbolt;
  }
  friend constexpr bool operator==(const LinkLayer&, const LinkLayer&) noexcept = default;

 private:
  constexpr LinkLayer(Kind k, std::uint32_t raw) noexcept : kind_(k), raw_(raw) {}
  Kind kind_ = Kind::unknown;
  std::uint32_t raw_ = 0;
};
/// "infiniband", "ethernet", "thunderbolt", or "unknown(<raw>)".
std::string to_string(LinkLayer l);
/// Accepts the names above (any case, "InfiniBand"/"Ethernet"/"Thunderbolt" as tools print
/// them), "unknown(<n>)", or a bare number.
std::optional<LinkLayer> link_layer_from_string(std::string_view s) noexcept;

/// enum ibv_port_state, same numbering.
enum class PortState : std::uint8_t { nop = 0, down = 1, init = 2, armed = 3, active = 4, active_defer = 5 };
/// "nop", "down", "init", "armed", "active", "active_defer".
std::string_view to_string(PortState s) noexcept;
/// Accepts the names above and ibv_devinfo's "PORT_ACTIVE" spelling (any case).
std::optional<PortState> port_state_from_string(std::string_view s) noexcept;

/// enum ibv_mtu, same numbering (1 = 256 bytes ... 5 = 4096 bytes).
enum class Mtu : std::uint8_t { mtu_256 = 1, mtu_512 = 2, mtu_1024 = 3, mtu_2048 = 4, mtu_4096 = 5 };
constexpr unsigned mtu_bytes(Mtu m) noexcept { return 128u << static_cast<unsigned>(m); }
/// 256, 512, 1024, 2048 or 4096 bytes; anything else is nullopt.
constexpr std::optional<Mtu> mtu_from_bytes(unsigned bytes) noexcept {
  for (unsigned v = 1; v <= 5; ++v)
    if ((128u << v) == bytes) return static_cast<Mtu>(v);
  return std::nullopt;
}

/// A port's trained link as ibv_query_port reports it: ibv_port_attr's active_width and
/// active_speed, kept in verbs' own encodings so a live reading round-trips unchanged.
///   width: 1 = 1X, 16 = 2X, 2 = 4X, 4 = 8X, 8 = 12X (lanes)
///   speed: 1 = SDR (2.5 Gb/s a lane), 2 = DDR (5), 4 = QDR (10), 8 = FDR10 (10), 16 = FDR (14),
///          32 = EDR (25), 64 = HDR (50), 128 = NDR (100)
///
/// Gotcha: middleware sizes its protocols from it. UCX multiplies width by speed to get the
/// device's bandwidth and derives its eager/rendezvous thresholds from that, so a port that
/// reports 1X SDR (2.5 Gb/s) is driven like a 2.5 Gb/s link, whatever the wire does.
///
/// Example:
///   gidpolicy::LinkRate edr{.width = 2, .speed = 32};   // 4X EDR, as ibv_devinfo prints it
///   double gbps = edr.gbps().value_or(0);              // 100
struct LinkRate {
  std::uint8_t width = 0;  ///< ibv_port_attr::active_width
  std::uint8_t speed = 0;  ///< ibv_port_attr::active_speed
  /// Lanes of a known width (1, 2, 4, 8 or 12); nullopt for an encoding verbs does not define.
  [[nodiscard]] constexpr std::optional<unsigned> lanes() const noexcept {
    switch (width) {
      case 1:
        return 1;
      case 16:
        return 2;
      case 2:
        return 4;
      case 4:
        return 8;
      case 8:
        return 12;
      default:
        return std::nullopt;
    }
  }
  /// One lane's data rate in units of 0.5 Gb/s (SDR 5 ... NDR 200); nullopt for an unknown speed.
  [[nodiscard]] constexpr std::optional<unsigned> lane_half_gbps() const noexcept {
    switch (speed) {
      case 1:
        return 5;
      case 2:
        return 10;
      case 4:
      case 8:
        return 20;
      case 16:
        return 28;
      case 32:
        return 50;
      case 64:
        return 100;
      case 128:
        return 200;
      default:
        return std::nullopt;
    }
  }
  /// "SDR" ... "NDR"; "" for an unknown speed.
  [[nodiscard]] std::string_view speed_name() const noexcept;
  /// The link's data rate, lanes x lane rate, in Gb/s; nullopt when either is unknown.
  [[nodiscard]] constexpr std::optional<double> gbps() const noexcept {
    auto l = lanes();
    auto h = lane_half_gbps();
    if (!l || !h) return std::nullopt;
    return static_cast<double>(*l * *h) / 2.0;
  }
  [[nodiscard]] constexpr bool known() const noexcept { return lanes() && lane_half_gbps(); }
  /// From names as sysfs's rate file and gidpolicy's JSON spell them: "4X" and "EDR".
  static std::optional<LinkRate> from_names(std::string_view width, std::string_view speed) noexcept;
  friend constexpr bool operator==(const LinkRate&, const LinkRate&) noexcept = default;
};
/// "4X EDR (100 Gb/s)"; an unknown encoding prints its numbers: "width 3, speed 7".
std::string to_string(LinkRate r);

/// Whether a slot holds a GID.
enum class EntryState : std::uint8_t {
  valid,       ///< holds a non-zero GID
  empty,       ///< zeros through ibv_query_gid / ENODATA through ibv_query_gid_ex
  unreadable,  ///< the read failed otherwise; GidEntry::read_error says how
};
std::string_view to_string(EntryState s) noexcept;

/// One slot of a GID table.
struct GidEntry {
  std::uint32_t index = 0;
  Gid gid;  ///< zero unless state == valid
  GidType type = GidType::unknown;
  std::string netdev;         ///< the netdev the kernel bound the GID to; "" when unknown
  std::uint32_t ifindex = 0;  ///< ndev_ifindex; 0 when unknown or none
  EntryState state = EntryState::valid;
  std::error_code read_error;  ///< set when state == unreadable

  static GidEntry valid(std::uint32_t index, Gid gid, GidType type = GidType::unknown,
                        std::string netdev = {}, std::uint32_t ifindex = 0) {
    return GidEntry{index, gid, type, std::move(netdev), ifindex, EntryState::valid, {}};
  }
  static GidEntry empty(std::uint32_t index) {
    return GidEntry{index, Gid{}, GidType::unknown, {}, 0, EntryState::empty, {}};
  }
  static GidEntry unreadable(std::uint32_t index, std::error_code why) {
    return GidEntry{index, Gid{}, GidType::unknown, {}, 0, EntryState::unreadable, why};
  }
  /// Holds a usable, non-zero GID.
  [[nodiscard]] bool usable() const noexcept { return state == EntryState::valid && !gid.is_zero(); }
  friend bool operator==(const GidEntry&, const GidEntry&) = default;
};

/// One port's attributes as far as GID choice and RTR need them.
struct PortInfo {
  std::string device;  ///< e.g. "mlx5_0", "rdma_en1"
  std::uint32_t port = 1;
  PortState state = PortState::active;
  LinkLayer link_layer;
  /// ibv_port_attr::gid_tbl_len; nullopt when the source did not say (show_gids).
  std::optional<std::uint32_t> gid_tbl_len;
  Mtu active_mtu = Mtu::mtu_1024;
  std::uint16_t lid = 0;
  /// The trained link's width and speed; nullopt when the source did not say (show_gids, sysfs
  /// without a rate file, a JSON table without them).
  std::optional<LinkRate> link_rate;
  friend bool operator==(const PortInfo&, const PortInfo&) = default;
};

/// What an index absent from GidTable::entries() means.
enum class Holes : std::uint8_t {
  empty,      ///< the source lists every non-empty slot (verbs, sysfs, show_gids, JSON)
  not_shown,  ///< the source hides some non-empty slots (ibv_devinfo skips zero interface ids)
};
std::string_view to_string(Holes h) noexcept;

/// A snapshot of one port's GID table: PortInfo plus entries in index order, holes allowed.
class GidTable {
 public:
  GidTable() = default;

  /// Sorts the entries by index. Errors: errc::duplicate_index; errc::index_too_large for an
  /// index >= 2^31 or, when gid_tbl_len is known, an entry at or beyond it.
  static result<GidTable> make(PortInfo port, std::vector<GidEntry> entries, Holes holes = Holes::empty);

  [[nodiscard]] const PortInfo& port() const noexcept { return port_; }
  [[nodiscard]] Holes holes() const noexcept { return holes_; }
  /// The entries the snapshot holds, in index order (not every index need be present).
  [[nodiscard]] std::span<const GidEntry> entries() const noexcept { return entries_; }
  [[nodiscard]] auto begin() const noexcept { return entries_.begin(); }
  [[nodiscard]] auto end() const noexcept { return entries_.end(); }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  /// The leading entries an sgid_index can name: those at indices 0-255. The verbs field
  /// (`ibv_global_route::sgid_index`) is a uint8_t, so a larger index silently wraps to another
  /// slot; a policy looking for a slot to route from need not read past these.
  ///   for (const GidEntry& e : table.sgid_entries()) ...   // never sees index 256 or above
  [[nodiscard]] std::span<const GidEntry> sgid_entries() const noexcept {
    return std::span<const GidEntry>(entries_).first(sgid_count_);
  }

  /// gid_tbl_len when known; otherwise one past the highest index present. Selection reads
  /// only indices below this bound.
  [[nodiscard]] std::uint32_t length() const noexcept {
    if (port_.gid_tbl_len) return *port_.gid_tbl_len;
    return entries_.empty() ? 0 : entries_.back().index + 1;
  }
  /// The entry stored at `index`, or nullptr for a hole (see holes()) or an index out of range.
  [[nodiscard]] const GidEntry* find(std::uint32_t index) const noexcept;
  /// The lowest-index valid entry holding `gid`, or nullptr.
  [[nodiscard]] const GidEntry* find(const Gid& gid) const noexcept;

  friend bool operator==(const GidTable&, const GidTable&) = default;

 private:
  PortInfo port_;
  std::vector<GidEntry> entries_;
  std::size_t sgid_count_ = 0;  ///< entries at indices 0-255 (a prefix: entries_ is sorted)
  Holes holes_ = Holes::empty;
};

/// How every message names a port: "mlx5_0 port 1" (the library, the fakes and the CLI alike).
[[nodiscard]] std::string port_name(std::string_view device, std::uint32_t port);
[[nodiscard]] std::string port_name(const PortInfo& port);
[[nodiscard]] std::string port_name(const GidTable& table);
/// How every message names one GID table entry: "mlx5_0 port 1 index 3".
[[nodiscard]] std::string entry_name(std::string_view device, std::uint32_t port, std::uint32_t index);
[[nodiscard]] std::string entry_name(const PortInfo& port, std::uint32_t index);

}  // namespace gidpolicy
