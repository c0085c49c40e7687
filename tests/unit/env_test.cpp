// env.hpp: the settings that make each stack use a profile's pick, conflicts, dotenv.
#include <gidpolicy/env.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gidpolicy {
namespace {

std::string value_of(const EnvPlan& plan, const std::string& name) {
  const auto it = std::find_if(plan.settings.begin(), plan.settings.end(),
                               [&](const EnvSetting& s) { return s.name == name; });
  return it == plan.settings.end() ? std::string("<unset>") : it->value;
}

TEST(Env, ParseStacksRefusesUnknownNamesAndDropsRepeats) {
  ASSERT_OK_AND_ASSIGN(const auto stacks, parse_env_stacks({"nccl", "ucx", "nccl"}));
  EXPECT_EQ(stacks, (std::vector<std::string>{"nccl", "ucx"}));
  const auto bad = parse_env_stacks({"mpich"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), errc::invalid_argument);
  EXPECT_NE(bad.error().detail.find("'mpich'"), std::string::npos);
  EXPECT_FALSE(parse_env_stacks({}));
}

TEST(Env, OnePerProcessIndexWhenEveryHcaNeedsTheSame) {
  const std::vector<GidTable> tables{test::nccl_769()};
  const EnvPlan plan = plan_env({"nccl", "ucx", "perftest"}, tables, profiles::automatic());
  ASSERT_OK_AND_ASSIGN(const Plan own, profiles::automatic().plan(tables[0]));
  EXPECT_EQ(value_of(plan, "NCCL_IB_GID_INDEX"), std::to_string(own.sgid_index));
  EXPECT_EQ(value_of(plan, "UCX_IB_GID_INDEX"), std::to_string(own.sgid_index));
  EXPECT_EQ(value_of(plan, "UCX_NET_DEVICES"), "mlx5_bond_0:1");
  ASSERT_EQ(plan.args.size(), 1u);
  EXPECT_EQ(plan.args[0], "perftest: -d mlx5_bond_0 -i 1 -x " + std::to_string(own.sgid_index));
  EXPECT_TRUE(plan.conflicts.empty());
  ASSERT_OK_AND_ASSIGN(const std::string dotenv, render_dotenv(plan));
  EXPECT_NE(dotenv.find("NCCL_IB_GID_INDEX=" + std::to_string(own.sgid_index) + "\n"), std::string::npos);
}

TEST(Env, HcasThatNeedDifferentIndicesGetNoValueButAConflict) {
  // mlx5_0 of the NCCL 1573 pod needs index 7; a second HCA whose RoCE v2 IPv4 GID is at 3.
  PortInfo other{.device = "mlx5_9", .port = 1, .link_layer = LinkLayer::ethernet(), .gid_tbl_len = 16};
  ASSERT_OK_AND_ASSIGN(
      const GidTable second,
      GidTable::make(other, {GidEntry::valid(3, test::gid("::ffff:10.0.9.1"), GidType::roce_v2, "eth9")}));
  const EnvPlan plan =
      plan_env({"nccl", "llama.cpp"}, {test::nccl_1573_pod(0), second}, profiles::automatic());
  EXPECT_EQ(value_of(plan, "NCCL_IB_GID_INDEX"), "<unset>");
  ASSERT_EQ(plan.conflicts.size(), 1u);
  EXPECT_NE(plan.conflicts[0].find("mlx5_0 port 1 needs 7"), std::string::npos) << plan.conflicts[0];
  EXPECT_NE(plan.conflicts[0].find("mlx5_9 port 1 needs 3"), std::string::npos) << plan.conflicts[0];
  EXPECT_NE(plan.conflicts[0].find("one process per HCA"), std::string::npos);
  // llama.cpp takes one device: the first usable port, the other named as the alternative.
  EXPECT_EQ(value_of(plan, "GGML_RDMA_DEV"), "mlx5_0");
  EXPECT_EQ(value_of(plan, "GGML_RDMA_GID"), "7");
}

TEST(Env, DotenvRefusesValuesItCannotHoldAndKeepsCommentsOnOneLine) {
  EnvPlan plan;
  plan.why.push_back("two\nlines");
  plan.settings.push_back({"NCCL_IB_HCA", "a b"});
  const auto bad = render_dotenv(plan);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), errc::invalid_argument);
  plan.settings = {{"A", "1"}};
  ASSERT_OK_AND_ASSIGN(const std::string text, render_dotenv(plan));
  EXPECT_EQ(text, "# two lines\nA=1\n");
}

}  // namespace
}  // namespace gidpolicy
