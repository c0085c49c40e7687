// rapidcheck generators for gidpolicy's value types, shared by unit and property tests.
//
// Arbitrary<Gid> is biased toward the GIDs that matter (zero, IPv4-mapped, link-local, ULA)
// rather than uniform bytes, so properties about those classes get exercised. showValue prints
// tables as index/GID/type/netdev rows, not byte dumps.
#pragma once

#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>

#include <rapidcheck.h>

#include <ostream>
#include <vector>

namespace gidpolicy::test {

/// A GID of a realistic class: zero, IPv4-mapped (private, APIPA, anything), fe80 link-local,
/// fd ULA, global, or 16 arbitrary bytes.
rc::Gen<Gid> gen_gid();
/// A non-zero IPv4-mapped GID.
rc::Gen<Gid> gen_ipv4_mapped_gid();
/// An fe80::/64 link-local GID with a non-zero EUI-64 style interface id.
rc::Gen<Gid> gen_link_local_gid();
/// Entries for indices [0, len) with holes, empty, unreadable, zero GIDs and unknown types.
rc::Gen<GidTable> gen_arbitrary_table(std::uint32_t max_len = 64);
/// Several ports with distinct device/port names (for JSON and format round trips).
rc::Gen<std::vector<GidTable>> gen_table_set(std::uint32_t max_ports = 4, std::uint32_t max_len = 32);

/// Index | GID | type | netdev | state, one row per entry, with the port header.
std::string show_table(const GidTable& t);

}  // namespace gidpolicy::test

namespace rc {
template <>
struct Arbitrary<gidpolicy::Gid> {
  static Gen<gidpolicy::Gid> arbitrary() { return gidpolicy::test::gen_gid(); }
};
template <>
struct Arbitrary<gidpolicy::GidType> {
  static Gen<gidpolicy::GidType> arbitrary() {
    return gen::element(gidpolicy::GidType::ib, gidpolicy::GidType::roce_v1, gidpolicy::GidType::roce_v2,
                        gidpolicy::GidType::unknown);
  }
};
template <>
struct Arbitrary<gidpolicy::GidTable> {
  static Gen<gidpolicy::GidTable> arbitrary() { return gidpolicy::test::gen_arbitrary_table(); }
};
}  // namespace rc

namespace gidpolicy {
// rapidcheck and gtest print values through these.
void showValue(const Gid& g, std::ostream& os);
void showValue(const GidTable& t, std::ostream& os);
inline std::ostream& operator<<(std::ostream& os, const Gid& g) { return os << g.to_string(); }
void PrintTo(const GidTable& t, std::ostream* os);
}  // namespace gidpolicy
