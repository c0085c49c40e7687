// Properties of the foundation types: text forms, the IPv4-mapped rule, JSON round trips.
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/gid.hpp>

#include "support/families.hpp"
#include "support/generators.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <vector>

namespace gidpolicy {
namespace {

RC_GTEST_PROP(Foundation, prop_parse_format_compressed_round_trips, (const Gid& g)) {
  auto back = Gid::parse(g.to_string());
  RC_ASSERT(back.has_value());
  RC_ASSERT(back.value() == g);
}

RC_GTEST_PROP(Foundation, prop_parse_format_full_round_trips, (const Gid& g)) {
  std::string full = g.to_full_string();
  RC_ASSERT(full.size() == 39u);
  auto back = Gid::parse(full);
  RC_ASSERT(back.has_value());
  RC_ASSERT(back.value() == g);
}

// A differently written reference: JACCL's three comparisons on a copied-out byte array.
bool reference_ipv4_mapped(const Gid& g) {
  std::uint8_t raw[16];
  g.copy_to(raw);
  static const std::uint8_t kZeros[10] = {};
  return std::memcmp(raw, kZeros, 10) == 0 && raw[10] == 0xff && raw[11] == 0xff;
}

RC_GTEST_PROP(Foundation, prop_ipv4_mapped_equals_reference, (const Gid& g)) {
  RC_ASSERT(g.is_ipv4_mapped() == reference_ipv4_mapped(g));
  RC_ASSERT(g.ipv4().has_value() == reference_ipv4_mapped(g));
}

RC_GTEST_PROP(Foundation, prop_ipv4_mapped_byte_flip_breaks_mapping, (std::uint32_t v4)) {
  Gid m = Gid::ipv4_mapped(v4);
  RC_ASSERT(m.is_ipv4_mapped());
  const auto byte = *rc::gen::inRange<std::size_t>(0, 12);
  auto raw = m.bytes();
  raw[byte] = static_cast<std::uint8_t>(raw[byte] ^ (1u << *rc::gen::inRange(0, 8)));
  RC_ASSERT(!Gid(raw).is_ipv4_mapped());
}

// The link-local test reads bytes 0-1 as one word; the reference compares the bytes. Byte 0 is
// fe half of the time and byte 1 arbitrary, so both sides of the /10 boundary are exercised.
RC_GTEST_PROP(Foundation, prop_link_local_equals_reference, (const Gid& g, bool fe)) {
  auto raw = g.bytes();
  if (fe) raw[0] = 0xfe;
  const Gid h(raw);
  RC_ASSERT(h.is_link_local() == (raw[0] == 0xfe && (raw[1] & 0xc0) == 0x80));
}

// The word-compare predicates give what their constant-evaluated (byte by byte) forms give.
static_assert(Gid::ipv4_mapped(0x0a000001u).is_ipv4_mapped());
static_assert(!Gid(Gid::Bytes{0xfe, 0x80}).is_ipv4_mapped());
static_assert(Gid(Gid::Bytes{0xfe, 0xbf}).is_link_local());
static_assert(!Gid(Gid::Bytes{0xfe, 0xc0}).is_link_local());

RC_GTEST_PROP(Foundation, prop_sgid_entries_are_exactly_the_entries_at_indices_up_to_255, ()) {
  const GidTable t = *test::gen_realistic_table();  // wide tables reach index 1024
  std::vector<GidEntry> expected;
  for (const auto& e : t)
    if (e.index <= 255) expected.push_back(e);
  const auto got = t.sgid_entries();
  RC_ASSERT(std::vector<GidEntry>(got.begin(), got.end()) == expected);
}

RC_GTEST_PROP(Foundation, prop_json_round_trips_arbitrary_tables, ()) {
  auto tables = *test::gen_table_set();
  auto back = formats::read_json(formats::write_json(tables), "prop.json");
  RC_ASSERT(back.has_value());
  RC_ASSERT(back.value() == tables);
}

RC_GTEST_PROP(Foundation, prop_find_by_index_matches_linear_scan, (const GidTable& t)) {
  auto idx = *rc::gen::inRange<std::uint32_t>(0, t.length() + 2);
  const GidEntry* expected = nullptr;
  for (const auto& e : t)
    if (e.index == idx) expected = &e;
  RC_ASSERT(t.find(idx) == expected);
}

}  // namespace
}  // namespace gidpolicy
