// ValidatedExplicit: an explicit index, every failure its own errc and message.
#include <gidpolicy/policies/validated_explicit.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

namespace gidpolicy {
namespace {

using test::gid;

static_assert(SelectionPolicy<ValidatedExplicit>);

void expect_fail(const result<Selection>& r, errc code, std::initializer_list<std::string_view> in_detail) {
  ASSERT_FALSE(r) << "selected index " << r.value().entry.index;
  EXPECT_EQ(r.error(), code) << r.error().what();
  for (auto s : in_detail)
    EXPECT_NE(r.error().detail.find(s), std::string::npos) << "'" << s << "' in " << r.error().detail;
  ASSERT_TRUE(r.error().trace);
  ASSERT_EQ(r.error().trace->attempts.size(), 1u);
  EXPECT_EQ(r.error().trace->attempts[0].steps.size(), 1u);
}

TEST(ValidatedExplicit, AcceptsAGoodIndex) {
  auto r = ValidatedExplicit{.index = 3, .type = TypeFilter::roce_v2}.select(test::nccl_769());
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value().entry.index, 3u);
  EXPECT_EQ(VALUE_OR_FAIL(ValidatedExplicit{.index = 1}.select(test::apple_ds4qa())).entry.index, 1u);
  EXPECT_EQ(VALUE_OR_FAIL(ValidatedExplicit{.index = 2}.select(test::macmini())).entry.index, 2u);
  EXPECT_EQ(VALUE_OR_FAIL(ValidatedExplicit{.index = 7}.select(test::nccl_1573_pod(0))).entry.index, 7u);
  EXPECT_EQ(VALUE_OR_FAIL(ValidatedExplicit{.index = 5}.select(test::ibm_cx6())).entry.index, 5u);
  EXPECT_EQ((VALUE_OR_FAIL(
                 ValidatedExplicit{.index = 1, .family = FamilyFilter::ipv6}.select(test::mooncake_ipv6(0)))
                 .entry.index),
            1u);
}

TEST(ValidatedExplicit, EachFailureHasItsOwnCodeAndNamesIndexAndContent) {
  expect_fail(ValidatedExplicit{.index = 16}.select(test::macmini()), errc::index_out_of_range,
              {"index 16", "gid_tbl_len 16", "rdma_en2 port 1"});
  expect_fail(ValidatedExplicit{.index = 8}.select(test::nccl_1573_pod(0)), errc::index_out_of_range,
              {"index 8", "entries listed"});
  expect_fail(ValidatedExplicit{.index = 1}.select(test::macmini()), errc::entry_empty, {"index 1 is empty"});
  expect_fail(ValidatedExplicit{.index = 3}.select(test::nccl_1573_pod(0)), errc::entry_empty,
              {"index 3 is empty"});
  expect_fail(ValidatedExplicit{.index = 1}.select(test::apple_noipv4()), errc::entry_not_shown,
              {"index 1", "not printed"});
  expect_fail(ValidatedExplicit{.index = 4, .family = FamilyFilter::any}.select(test::ds4_linux_unit()),
              errc::entry_zero, {"index 4", "zero GID"});
  expect_fail(ValidatedExplicit{.index = 2, .type = TypeFilter::roce_v2}.select(test::nccl_769()),
              errc::wrong_gid_type, {"index 2 holds ::ffff:200.0.209.6 (roce_v1)", "not roce_v2"});
  expect_fail(ValidatedExplicit{.index = 1}.select(test::nccl_769()), errc::wrong_family,
              {"index 1 holds fe80::ac0:ebff:feda:1cfb (roce_v2)", "not an IPv4-mapped GID"});
  expect_fail(ValidatedExplicit{.index = 3, .family = FamilyFilter::ipv6}.select(test::nccl_769()),
              errc::wrong_family, {"index 3", "it is IPv4-mapped"});
  expect_fail(ValidatedExplicit{.index = 1, .family = FamilyFilter::any}.select(test::nccl_769()),
              errc::link_local_rejected,
              {"index 1 holds fe80::ac0:ebff:feda:1cfb", "link-local", "ethernet"});
  expect_fail(ValidatedExplicit{.index = 0, .family = FamilyFilter::ipv6}.select(test::apple_ds4qa()),
              errc::link_local_rejected, {"index 0", "thunderbolt"});
  auto bad =
      VALUE_OR_FAIL(GidTable::make(test::port("x", LinkLayer::ethernet(), 4),
                                   {GidEntry::unreadable(2, std::make_error_code(std::errc::io_error))}));
  expect_fail(ValidatedExplicit{.index = 2}.select(bad), errc::entry_unreadable, {"index 2", "unreadable"});
  auto wide = VALUE_OR_FAIL(GidTable::make(test::port("x", LinkLayer::ethernet(), 512),
                                           {GidEntry::valid(300, gid("::ffff:10.0.0.1"), GidType::roce_v2)}));
  expect_fail(ValidatedExplicit{.index = 300}.select(wide), errc::index_exceeds_uint8,
              {"index 300", "wrap to 44"});
}

TEST(ValidatedExplicit, AllowLinkLocalAndInfiniband) {
  auto r = ValidatedExplicit{.index = 1, .family = FamilyFilter::any, .allow_link_local = true}.select(
      test::nccl_769());
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value().entry.index, 1u);
  // On InfiniBand the fe80::GUID GID is the normal one.
  auto ib = VALUE_OR_FAIL(GidTable::make(test::port("mlx5_ib", LinkLayer::infiniband(), 128),
                                         {GidEntry::valid(0, gid("fe80::ac0:ebff:feda:1cfb"), GidType::ib)}));
  EXPECT_TRUE((ValidatedExplicit{.index = 0, .family = FamilyFilter::ipv6}.select(ib)));
}

TEST(ValidatedExplicit, Spec) {
  EXPECT_EQ(ValidatedExplicit{.index = 3}.spec(), "validated:index=3");
  EXPECT_EQ(
      (ValidatedExplicit{
          .index = 3, .type = TypeFilter::roce_v2, .family = FamilyFilter::any, .allow_link_local = true}
           .spec()),
      "validated:index=3,type=roce_v2,family=any,allow-link-local");
}

}  // namespace
}  // namespace gidpolicy
