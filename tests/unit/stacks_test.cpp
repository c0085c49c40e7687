// stacks.hpp: each stack's prediction per port, and a pin read and judged as each stack reads it.
#include <gidpolicy/stacks.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

namespace gidpolicy {
namespace {

TEST(Stacks, UcxRejectsTheNccl1573PortAndIndex7FixesIt) {
  const auto p = predict_stack(StackId::ucx, test::nccl_1573_pod(0)).value();
  EXPECT_FALSE(p.chose);
  EXPECT_EQ(p.outcome, "rejects the port");
  ASSERT_TRUE(p.fix);
  EXPECT_EQ(*p.fix, 7u);
  const auto n = predict_stack(StackId::nccl, test::nccl_1573_pod(0)).value();
  EXPECT_TRUE(n.works);
  EXPECT_EQ(n.index, 7u);
  EXPECT_FALSE(n.fix);
}

TEST(Stacks, LinkLocalPicksTimeOutAndIndex0OfLibfabricToo) {
  const auto p = predict_stack(StackId::perftest, test::mooncake_ipv6(0)).value();
  EXPECT_TRUE(p.chose);
  EXPECT_EQ(p.index, 0u);
  EXPECT_FALSE(p.works);
  EXPECT_NE(p.outcome.find("times out"), std::string::npos) << p.outcome;
  EXPECT_EQ(p.fix, 1u);
  const auto l = predict_stack(StackId::libfabric, test::nccl_769()).value();
  EXPECT_FALSE(l.works);
  EXPECT_EQ(l.fix, 3u);
}

TEST(Stacks, AnEmptyNcclPinIsReadPerVersion) {
  const auto r = read_pin("NCCL_IB_GID_INDEX", "", false);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].stack, StackId::nccl);
  EXPECT_FALSE(r[0].value);  // >= 2.21.5: the default, auto
  EXPECT_EQ(r[1].value, 0);  // before: the default was 0
  EXPECT_EQ(r[2].stack, StackId::mooncake);
  EXPECT_EQ(r[2].value, 0);  // atoi("")
  EXPECT_EQ(read_pin("NCCL_IB_GID_INDEX", "", true).size(), 2u);
  EXPECT_EQ(read_pin("NCCL_IB_GID_INDEX", "abc", true)[0].value, 0);  // strtoll without errno
  EXPECT_TRUE(read_pin("UCX_IB_GID_INDEX", "", false)[0].refused);
  EXPECT_TRUE(read_pin("OTHER", "1", false).empty());
}

TEST(Stacks, AStalePinIsNamedWithItsErrnoAndTheRightIndex) {
  const auto t = test::nccl_1573_pod(0);
  const auto r = read_pin("NCCL_IB_GID_INDEX", "3", true);
  const auto j = judge_pin(r.at(0), t, DriverModel::linux_kernel());
  EXPECT_EQ(j.status, PinJudgement::Status::stale);
  EXPECT_EQ(j.err, 61);
  EXPECT_EQ(j.right_index, 7u);
  EXPECT_NE(j.summary.find("ENODATA"), std::string::npos) << j.summary;
  EXPECT_NE(j.summary.find("index 7"), std::string::npos) << j.summary;
  const auto fine = judge_pin(read_pin("NCCL_IB_GID_INDEX", "7", true).at(0), t, DriverModel::linux_kernel());
  EXPECT_EQ(fine.status, PinJudgement::Status::fine) << fine.summary;
  const auto ll = judge_pin(read_pin("MC_GID_INDEX", "5", true).at(0), t, DriverModel::linux_kernel());
  EXPECT_EQ(ll.status, PinJudgement::Status::stale) << ll.summary;
  EXPECT_NE(ll.summary.find("fe80::"), std::string::npos) << ll.summary;
}

}  // namespace
}  // namespace gidpolicy
