// FirstOf, PerDevice and AnyPolicy: combining and erasing policies.
#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/per_device.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

namespace gidpolicy {
namespace {

static_assert(SelectionPolicy<FirstOf>);
static_assert(SelectionPolicy<PerDevice>);
static_assert(SelectionPolicy<AnyPolicy>);

TEST(FirstOf, FirstSuccessWinsAndTheTraceKeepsEveryAttempt) {
  FirstOf p{{ValidatedExplicit{.index = 3}, Ranked{}}};
  EXPECT_EQ(p.spec(), "first(validated:index=3|auto)");
  // nccl-769: index 3 is fine, auto never runs.
  auto a = p.select(test::nccl_769(), {.trace = true});
  ASSERT_TRUE(a);
  EXPECT_EQ(a.value().entry.index, 3u);
  ASSERT_EQ(a.value().trace.attempts.size(), 1u);
  // macmini: index 3 is empty; auto picks 2; the trace shows why index 3 was refused.
  auto b = p.select(test::macmini(), {.trace = true});
  ASSERT_TRUE(b);
  EXPECT_EQ(b.value().entry.index, 2u);
  ASSERT_EQ(b.value().trace.attempts.size(), 2u);
  EXPECT_EQ(b.value().trace.attempts[0].policy, "validated:index=3");
  EXPECT_NE(b.value().trace.attempts[0].error.find("index 3 is empty"), std::string::npos);
  EXPECT_EQ(b.value().trace.attempts[1].policy, "auto");
  EXPECT_TRUE(b.value().trace.attempts[1].error.empty());
  // Without a trace request the success carries none.
  EXPECT_TRUE(VALUE_OR_FAIL(p.select(test::macmini())).trace.attempts.empty());
}

TEST(FirstOf, AllFailListsEveryAlternative) {
  FirstOf p{{JacclFirstMapped{}, Ranked{}}};
  auto r = p.select(test::apple_noipv4());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::no_candidate);
  EXPECT_NE(r.error().detail.find("jaccl-fixed: no IPv4-mapped GID"), std::string::npos) << r.error().detail;
  EXPECT_NE(r.error().detail.find("auto: no acceptable GID"), std::string::npos) << r.error().detail;
  ASSERT_TRUE(r.error().trace);
  ASSERT_EQ(r.error().trace->attempts.size(), 2u);
  EXPECT_FALSE(r.error().trace->attempts[0].error.empty());
  EXPECT_FALSE(r.error().trace->attempts[1].error.empty());
  EXPECT_EQ(r.error().trace->attempts[1].steps.at(0).verdict, EntryVerdict::link_local);
  EXPECT_EQ(FirstOf{}.select(test::macmini()).error(), errc::no_candidate);
}

TEST(PerDevice, ChoosesByDeviceWithDefault) {
  PerDevice p{.by_device = {{"mlx5_1", ValidatedExplicit{.index = 6, .type = TypeFilter::roce_v1}}},
              .fallback = AnyPolicy(Ranked{})};
  EXPECT_EQ(p.spec(), "per-device(mlx5_1=validated:index=6,type=roce_v1;*=auto)");
  EXPECT_EQ(VALUE_OR_FAIL(p.select(test::nccl_1573_pod(1))).entry.index, 6u);
  EXPECT_EQ(VALUE_OR_FAIL(p.select(test::nccl_1573_pod(0))).entry.index, 7u);
  EXPECT_EQ(p.policy_for("mlx5_1")->spec(), "validated:index=6,type=roce_v1");
  EXPECT_EQ(p.policy_for("other")->spec(), "auto");
}

TEST(PerDevice, UnlistedDeviceWithoutDefaultIsAnError) {
  PerDevice p{.by_device = {{"mlx5_0", ValidatedExplicit{.index = 7}}}};
  EXPECT_EQ(VALUE_OR_FAIL(p.select(test::nccl_1573_pod(0))).entry.index, 7u);
  auto r = p.select(test::nccl_1573_pod(1));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error(), errc::device_not_found);
  EXPECT_NE(r.error().detail.find("'mlx5_1'"), std::string::npos);
  EXPECT_TRUE(r.error().trace);
  EXPECT_EQ(p.policy_for("mlx5_1"), nullptr);
}

TEST(AnyPolicy, DefaultIsAutoAndEqualityComparesHeldPolicies) {
  AnyPolicy def;
  EXPECT_EQ(def.spec(), "auto");
  EXPECT_NE(def.target<Ranked>(), nullptr);
  EXPECT_EQ(def.target<JacclFirstMapped>(), nullptr);
  EXPECT_EQ(def, AnyPolicy(Ranked{}));
  EXPECT_FALSE(def == AnyPolicy(Ranked{{.family = FamilyFilter::ipv4}}));
  EXPECT_FALSE(AnyPolicy(Ds4ExplicitIndex{1}) == AnyPolicy(ValidatedExplicit{.index = 1}));
  EXPECT_EQ(AnyPolicy(Ds4ExplicitIndex{1}), AnyPolicy(Ds4ExplicitIndex{1}));
  AnyPolicy copy = def;
  EXPECT_EQ(copy, def);
  EXPECT_EQ(VALUE_OR_FAIL(copy.select(test::nccl_769())).entry.index, 3u);
  EXPECT_EQ(def.type(), typeid(Ranked));
}

TEST(AnyPolicy, Nests) {
  AnyPolicy p = FirstOf{{PerDevice{.by_device = {{"rdma_en2", Ds4ExplicitIndex{2}}}}, Ranked{}}};
  EXPECT_EQ(p.spec(), "first(per-device(rdma_en2=ds4:index=2)|auto)");
  EXPECT_EQ(VALUE_OR_FAIL(p.select(test::macmini())).entry.index, 2u);
  EXPECT_EQ(VALUE_OR_FAIL(p.select(test::apple_ds4qa())).entry.index, 1u);  // per-device fails, auto
}

}  // namespace
}  // namespace gidpolicy
