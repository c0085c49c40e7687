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
