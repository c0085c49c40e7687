// stack_table.hpp: one row per StackId, names unique and found again, each pin read as its stack
// reads it, and each row's settings (env, fix) built from its own fields.
#include <gidpolicy/env.hpp>
#include <gidpolicy/stack_table.hpp>
#include <gidpolicy/stacks.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gidpolicy {
namespace {

TEST(StackTable, EveryStackIdHasItsRowInOrder) {
  // The static_asserts in the header say the same at compile time; this names the row that fails.
  ASSERT_EQ(kStackCount, 10u);
  for (std::size_t i = 0; i < kStackCount; ++i) {
    const auto id = static_cast<StackId>(i);
    EXPECT_TRUE(is_stack_id(id)) << i;
    EXPECT_EQ(stack_row(id).id, id) << kStacks[i].name;
    EXPECT_EQ(&stack_row(id), &kStacks[i]);
  }
  EXPECT_FALSE(is_stack_id(static_cast<StackId>(kStackCount)));
  EXPECT_EQ(stack_catalogue().size(), kStackCount);
}

TEST(StackTable, NamesAreUniqueAndFindStackRoundTrips) {
  std::set<std::string_view> names;
  for (const StackInfo& s : kStacks) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    const StackInfo* found = find_stack(s.name);
    ASSERT_NE(found, nullptr) << s.name;
    EXPECT_EQ(found->id, s.id);
  }
  EXPECT_EQ(find_stack("mpich"), nullptr);
  EXPECT_EQ(find_stack(""), nullptr);
  EXPECT_EQ(find_stack("NCCL"), nullptr);  // names are exact: the title is not a name
  // Every name `env --for` takes is a row, and the three name sets of before are one.
  EXPECT_EQ(stack_names(StackSet::all),
            "nccl, nvshmem, ucx, mooncake, libfabric, perftest, ds4, llama.cpp, jaccl, exo");
  EXPECT_EQ(stack_names(StackSet::predicted),
            "nccl, nvshmem, ucx, mooncake, libfabric, perftest, ds4, jaccl, exo");
  EXPECT_EQ(stack_titles(StackSet::predicted),
            "NCCL, NVSHMEM, UCX, Mooncake, libfabric, perftest, ds4, JACCL, exo");
  for (const StackInfo& s : kStacks) EXPECT_TRUE(parse_env_stacks({std::string(s.name)})) << s.name;
}

TEST(StackTable, PinVariablesAreEachRowsPinsOnceInTableOrder) {
  const std::vector<std::string_view> want{"NCCL_IB_GID_INDEX", "NVSHMEM_IB_GID_INDEX", "UCX_IB_GID_INDEX",
                                           "MC_GID_INDEX",      "FI_VERBS_GID_IDX",     "GGML_RDMA_GID"};
  EXPECT_EQ(pin_variables(), want);
  // Mooncake reads NCCL's pin after its own.
  const StackInfo& m = stack_row(StackId::mooncake);
  ASSERT_EQ(m.pins.size(), 2u);
  EXPECT_EQ(m.pins[1].name, stack_row(StackId::nccl).pins[0].name);
  EXPECT_EQ(m.pins[1].rule, PinRule::atoi_fallback);
}

struct Reading {
  StackId stack;
  std::string reader;
  std::optional<std::int64_t> value;
  bool refused;
};

std::vector<Reading> readings(std::string_view var, std::string_view text, bool mc_set = false) {
  std::vector<Reading> out;
  for (const PinReading& r : read_pin(var, text, mc_set))
    out.push_back({r.stack, r.reader, r.value, r.refused});
  return out;
}

void expect_readings(std::string_view var, std::string_view text, bool mc_set,
                     const std::vector<Reading>& want) {
  const auto got = readings(var, text, mc_set);
  ASSERT_EQ(got.size(), want.size()) << var << "=" << text;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].stack, want[i].stack) << var << "=" << text << " #" << i;
    EXPECT_EQ(got[i].reader, want[i].reader) << var << "=" << text << " #" << i;
    EXPECT_EQ(got[i].value, want[i].value) << var << "=" << text << " #" << i;
    EXPECT_EQ(got[i].refused, want[i].refused) << var << "=" << text << " #" << i;
  }
}

// The readers' exact words and values, as read_pin() gave them before the table (its if-chain).
TEST(StackTable, EachPinIsReadAsBefore) {
  using O = std::optional<std::int64_t>;
  expect_readings(
      "NCCL_IB_GID_INDEX", "3", false,
      {{StackId::nccl, "NCCL (strtoll: \"3\" is 3)", O(3), false},
       {StackId::mooncake, "Mooncake (MC_GID_INDEX unset: NCCL_IB_GID_INDEX through atoi, \"3\" is 3)", O(3),
        false}});
  expect_readings("NCCL_IB_GID_INDEX", "0x10", true,
                  {{StackId::nccl, "NCCL (strtoll: \"0x10\" is 16)", O(16), false}});
  expect_readings("NCCL_IB_GID_INDEX", "-1", true,
                  {{StackId::nccl, "NCCL (strtoll: \"-1\" is -1)", O(), false}});
  expect_readings("NCCL_IB_GID_INDEX", "", true,
                  {{StackId::nccl, "NCCL >= 2.21.5 (an empty value keeps the default, -1: auto)", O(), false},
                   {StackId::nccl, "NCCL < 2.21.5 (an empty value keeps the default, 0)", O(0), false}});
  expect_readings(
      "NCCL_IB_GID_INDEX", "300", false,
      {{StackId::nccl, "NCCL (strtoll: \"300\" is 300)", O(300), false},
       {StackId::mooncake,
        "Mooncake (MC_GID_INDEX unset: NCCL_IB_GID_INDEX through atoi, \"300\" is 300, outside 0..255: "
        "auto)",
        O(), false}});
  expect_readings("NVSHMEM_IB_GID_INDEX", "5", false,
                  {{StackId::nvshmem, "NVSHMEM 3.x (read as NCCL reads it: not verified)", O(5), false}});
  expect_readings("NVSHMEM_IB_GID_INDEX", "", false,
                  {{StackId::nvshmem, "NVSHMEM 3.x (read as NCCL reads it: not verified)", O(), false}});
  expect_readings("UCX_IB_GID_INDEX", "auto", false, {{StackId::ucx, "UCX 1.13 (auto)", O(), false}});
  expect_readings("UCX_IB_GID_INDEX", "7", false, {{StackId::ucx, "UCX 1.13", O(7), false}});
  expect_readings("UCX_IB_GID_INDEX", "7x", false,
                  {{StackId::ucx, "UCX 1.13 (not \"auto\" nor a number: a configuration error)", O(), true}});
  expect_readings("MC_GID_INDEX", "abc", true,
                  {{StackId::mooncake, "Mooncake (atoi: \"abc\" is 0)", O(0), false}});
  expect_readings("MC_GID_INDEX", "300", true,
                  {{StackId::mooncake, "Mooncake (atoi: \"300\" is 300, outside 0..255: auto)", O(), false}});
  expect_readings(
      "FI_VERBS_GID_IDX", "", false,
      {{StackId::libfabric,
        "libfabric 1.17 (an integer parameter; an empty value is read as 0: not verified)", O(0), false}});
  expect_readings(
      "FI_VERBS_GID_IDX", "-4", false,
      {{StackId::libfabric,
        "libfabric 1.17 (an integer parameter; an empty value is read as 0: not verified)", O(0), false}});
  // llama.cpp's pin is now read as llama.cpp's (it was filed under libfabric, whose reading it shares).
  expect_readings(
      "GGML_RDMA_GID", "9", false,
      {{StackId::llama_cpp, "llama.cpp GGML_RDMA_GID (an index used unchecked: not verified)", O(9), false}});
  EXPECT_TRUE(readings("GGML_RDMA_DEV", "mlx5_0").empty());  // a launch setting, not a pin
}

TEST(StackTable, AGgmlPinIsJudgedAsAnIndexUsedUnchecked) {
  const auto t = test::nccl_1573_pod(0);
  const auto r = read_pin("GGML_RDMA_GID", "3", false);
  ASSERT_EQ(r.size(), 1u);
  const PinJudgement j = judge_pin(r[0], t, DriverModel::linux_kernel());
  EXPECT_EQ(j.status, PinJudgement::Status::stale) << j.summary;
  EXPECT_EQ(j.err, 61);  // index 3 is empty on the pod: ENODATA at RTR, as libfabric's reading said
  const PinJudgement fine =
      judge_pin(read_pin("GGML_RDMA_GID", "7", false).at(0), t, DriverModel::linux_kernel());
  EXPECT_EQ(fine.status, PinJudgement::Status::fine) << fine.summary;
}

TEST(StackTable, EveryModelledChoiceIsItsAutomaticSpec) {
  for (const StackInfo& s : kStacks) {
    const auto p = stack_profile(s.id);
    if (s.automatic.empty()) {
      ASSERT_FALSE(p) << s.name;
      EXPECT_EQ(p.error(), errc::not_supported);
      EXPECT_NE(p.error().detail.find(std::string(s.launch.choice)), std::string::npos) << p.error().detail;
      continue;
    }
    ASSERT_TRUE(p) << s.name << ": " << p.error().detail;
    EXPECT_EQ(p.value().spec(), s.automatic) << s.name;
    ASSERT_OK_AND_ASSIGN(const Profile parsed, parse_profile(s.automatic));
    EXPECT_EQ(parsed.spec(), s.automatic);
  }
  EXPECT_EQ(stack_profile(StackId::jaccl, 1).error(), errc::invalid_argument);
  ASSERT_OK_AND_ASSIGN(const Profile ds4, stack_profile(StackId::ds4, 3));
  EXPECT_EQ(ds4.spec(), "ds4:index=3");
  EXPECT_FALSE(predict_stack(StackId::llama_cpp, test::nccl_769()));
}

TEST(StackTable, EachRowsFixIsWrittenFromItsOwnFields) {
  const auto t = test::nccl_1573_pod(0);
  const std::string dev = t.port().device;
  EXPECT_EQ(fix_setting(stack_row(StackId::nccl), t, 7), "NCCL_IB_GID_INDEX=7");
  EXPECT_EQ(fix_setting(stack_row(StackId::ucx), t, 7), "UCX_IB_GID_INDEX=7 UCX_NET_DEVICES=" + dev + ":1");
  EXPECT_EQ(fix_setting(stack_row(StackId::mooncake), t, 7), "MC_GID_INDEX=7");
  EXPECT_EQ(fix_setting(stack_row(StackId::libfabric), t, 7), "FI_VERBS_GID_IDX=7");
  EXPECT_EQ(fix_setting(stack_row(StackId::perftest), t, 7), "-d " + dev + " -i 1 -x 7");
  EXPECT_EQ(fix_setting(stack_row(StackId::ds4), t, 7), "--rdma-device " + dev + " --rdma-gid-index 7");
  EXPECT_EQ(fix_setting(stack_row(StackId::llama_cpp), t, 7), "GGML_RDMA_DEV=" + dev + " GGML_RDMA_GID=7");
}

TEST(StackTable, RunsOnNamesLinkLayers) {
  EXPECT_TRUE(stack_row(StackId::nccl).runs_on.has(LinkLayer::infiniband()));
  EXPECT_TRUE(stack_row(StackId::nccl).runs_on.has(LinkLayer::ethernet()));
  EXPECT_FALSE(stack_row(StackId::nccl).runs_on.has(LinkLayer::thunderbolt()));
  EXPECT_TRUE(stack_row(StackId::jaccl).runs_on.has(LinkLayer::thunderbolt()));
  EXPECT_FALSE(stack_row(StackId::jaccl).runs_on.has(LinkLayer::ethernet()));
  // The Mac's stacks: llama.cpp's Apple path and ds4's macOS scan on Thunderbolt, both on RoCE too.
  for (StackId id : {StackId::ds4, StackId::llama_cpp}) {
    EXPECT_TRUE(stack_row(id).runs_on.has(LinkLayer::thunderbolt()));
    EXPECT_TRUE(stack_row(id).runs_on.has(LinkLayer::ethernet()));
    EXPECT_FALSE(stack_row(id).runs_on.has(LinkLayer::infiniband()));
  }
  EXPECT_EQ(stack_row(StackId::exo).automatic, stack_row(StackId::jaccl).automatic);  // exo runs JACCL
  EXPECT_EQ(stack_row(StackId::exo).launch.choice_reader, ChoiceReader::patched_fork);
  for (const StackInfo& s : kStacks) EXPECT_FALSE(s.runs_on.has(LinkLayer::from_raw(7))) << s.name;
}

// The bug the table removes: a per-process stack's one-process-per-HCA advice named another
// stack's device variable (a stack missing from one_hca_setting() got libfabric's). Each row's
// advice names its own device setting, and no other row's.
TEST(StackTable, OneProcessPerHcaAdviceNamesTheRowsOwnDeviceSetting) {
  PortInfo other{.device = "mlx5_9", .port = 1, .link_layer = LinkLayer::ethernet(), .gid_tbl_len = 16};
  ASSERT_OK_AND_ASSIGN(
      const GidTable second,
      GidTable::make(other, {GidEntry::valid(3, test::gid("::ffff:10.0.9.1"), GidType::roce_v2, "eth9")}));
  const std::vector<GidTable> tables{test::nccl_1573_pod(0), second};
  for (const StackInfo& s : kStacks) {
    if (s.env != EnvShape::per_process_variable) continue;
    const EnvPlan plan = plan_env({std::string(s.name)}, tables, profiles::automatic());
    ASSERT_EQ(plan.conflicts.size(), 1u) << s.name;
    const std::string& c = plan.conflicts[0];
    const std::string own = s.launch.device.empty() ? std::string("its device list naming only mlx5_9")
                                                    : std::string(s.launch.device) + "=";
    EXPECT_NE(c.find(own), std::string::npos) << s.name << ": " << c;
    for (const StackInfo& o : kStacks) {
      if (o.id != s.id && !o.launch.device.empty() && o.launch.device != s.launch.device) {
        EXPECT_EQ(c.find(std::string(o.launch.device) + "="), std::string::npos) << s.name << ": " << c;
      }
    }
  }
}

TEST(StackTable, EveryRowHasEnvOutputOfItsShape) {
  // A port of a kind each stack runs on (RoCE, else a Mac's Thunderbolt port where stock JACCL works).
  const std::vector<GidTable> roce{test::nccl_769()};
  const std::vector<GidTable> mac{test::apple_ds4qa()};
  for (const StackInfo& s : kStacks) {
    const auto& tables = s.runs_on.has(LinkLayer::ethernet()) ? roce : mac;
    const EnvPlan plan = plan_env({std::string(s.name)}, tables, profiles::automatic());
    const auto has = [&](std::string_view name) {
      return std::any_of(plan.settings.begin(), plan.settings.end(),
                         [&](const EnvSetting& e) { return e.name == name; });
    };
    switch (s.env) {
      case EnvShape::per_process_variable:
        EXPECT_TRUE(has(s.launch.choice)) << s.name;
        EXPECT_TRUE(plan.args.empty()) << s.name;
        break;
      case EnvShape::per_port_args:
        ASSERT_EQ(plan.args.size(), 1u) << s.name;
        EXPECT_EQ(plan.args[0].rfind(std::string(s.name) + ": " + std::string(s.launch.device) + " ", 0), 0u)
            << plan.args[0];
        EXPECT_TRUE(plan.settings.empty()) << s.name;
        break;
      case EnvShape::one_device_per_process:
        EXPECT_TRUE(has(s.launch.device) && has(s.launch.choice)) << s.name;
        break;
      case EnvShape::jaccl_device_file:
        EXPECT_TRUE(has(s.launch.choice)) << s.name;  // the policy; the device file needs --jaccl-devices
        break;
    }
    EXPECT_TRUE(plan.conflicts.empty()) << s.name;
  }
}

}  // namespace
}  // namespace gidpolicy
