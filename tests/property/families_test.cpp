// The realistic table generators keep the shapes the properties rely on.
#include "support/families.hpp"
#include "support/generators.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

namespace gidpolicy {
namespace {

RC_GTEST_PROP(Families, prop_thunderbolt_has_link_local_at_zero_and_at_most_one_mapped, ()) {
  GidTable t = *test::gen_thunderbolt_table();
  RC_ASSERT(t.port().link_layer == LinkLayer::thunderbolt());
  RC_ASSERT(t.find(0u) != nullptr);
  RC_ASSERT(t.find(0u)->gid.is_link_local());
  int mapped = 0;
  for (const auto& e : t) mapped += e.usable() && e.gid.is_ipv4_mapped() ? 1 : 0;
  RC_ASSERT(mapped <= 1);
  RC_TAG(mapped == 0 ? "no ipv4" : (t.find(1u) && t.find(1u)->usable() ? "mapped at 1" : "mapped elsewhere"));
}

RC_GTEST_PROP(Families, prop_mlx5_entries_come_in_v1_v2_pairs, ()) {
  GidTable t = *test::gen_mlx5_table();
  const GidEntry* prev = nullptr;
  for (const auto& e : t) {
    if (!e.usable()) continue;
    if (e.type == GidType::roce_v2) {
      RC_ASSERT(prev != nullptr);
      RC_ASSERT(prev->type == GidType::roce_v1);
      RC_ASSERT(prev->gid == e.gid);
      RC_ASSERT(prev->index + 1 == e.index);
    }
    prev = &e;
  }
}

RC_GTEST_PROP(Families, prop_wide_tables_reach_past_255_and_stay_in_range, ()) {
  GidTable t = *test::gen_wide_table();
  RC_ASSERT(t.length() >= 1u);
  RC_ASSERT(t.length() <= 1024u);
  for (const auto& e : t) RC_ASSERT(e.index < t.length());
  RC_CLASSIFY(t.length() > 256, "gid_tbl_len > 256");
}

}  // namespace
}  // namespace gidpolicy
