// rapidcheck generators for what surrounds a selection: the peer's side of the
// exchange, address changes that rewrite a GID table while a job runs, and the tables of the
// hosts of a fabric. Pure values: the stateful and fabric properties turn them into fake-verbs
// mutations and FakeFabric hosts.
#pragma once

#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/rtr.hpp>

#include <rapidcheck.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gidpolicy::test {

/// What a peer sends: 24-bit QPN/PSN, a GID from gen_gid() (zero now and then), a LID, and
/// maybe its MTU and RoCE version.
rc::Gen<PeerInfo> gen_peer_info();
/// A peer whose GID has the given family (IPv4-mapped or not) and is never zero: the peers a
/// correct build accepts, so that the other checks are reached.
rc::Gen<PeerInfo> gen_peer_info_of_family(bool ipv4_mapped);

/// One change the kernel makes to a port's GID table while a job runs (NCCL 2157, 1819).
struct AddressChange {
  enum class Kind : std::uint8_t {
    add,      ///< an address appears: `entry` goes into the first free slot (index = that slot)
    remove,   ///< the address at `index` goes away: the slot empties
    move,     ///< a port flap: the entry at `index` comes back at `to_index`, `index` empties
    replace,  ///< the slot at `index` now holds `entry.gid` (an address replaced in place)
  };
  Kind kind = Kind::add;
  std::uint32_t index = 0;
  std::uint32_t to_index = 0;
  GidEntry entry;  ///< add: the new entry (its index is the slot); replace: the new GID
  friend bool operator==(const AddressChange&, const AddressChange&) = default;
};
std::string to_string(const AddressChange& c);

/// The first free (unlisted or empty) slot of `t` below min(length, limit); nullopt when full.
std::optional<std::uint32_t> first_free_slot(const GidTable& t, std::uint32_t limit = 64);
/// A change that applies to `t` (add needs a free slot, remove/move/replace a valid entry, move
/// a free destination). New addresses come from a small pool (10.0.0.1-4, a ULA, a link-local)
/// so that addresses come back and collide, as they do after a flap. Discards when none applies.
rc::Gen<AddressChange> gen_address_change(const GidTable& t);
/// `t` after the kernel made `c` (the reference the fake's mutations are compared with).
GidTable apply_change(const GidTable& t, const AddressChange& c);

/// Tables of realistic hardware ports (gen_family_table) for `min`..`max` fabric hosts.
rc::Gen<std::vector<GidTable>> gen_host_tables(std::size_t min = 2, std::size_t max = 6);

}  // namespace gidpolicy::test

namespace gidpolicy {
void showValue(const PeerInfo& p, std::ostream& os);
void showValue(QpKind k, std::ostream& os);
namespace test {
void showValue(const AddressChange& c, std::ostream& os);
}  // namespace test
}  // namespace gidpolicy
