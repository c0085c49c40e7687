// Properties of the foundation types: text forms, the IPv4-mapped rule, JSON round trips.
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/gid.hpp>

#include "support/generators.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

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
