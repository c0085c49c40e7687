// stacks.hpp: each stack's prediction per port, and a pin read and judged as each stack reads it.
#include <gidpolicy/stacks.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

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

// A port the doctor calls blocked (not ACTIVE; only link-local GIDs on RoCE) is never "ok" for a
// stack: the prediction says the blocker.
GidTable blocked_port(PortState state, bool routable) {
  PortInfo p{
      .device = "mlx5_0", .port = 1, .state = state, .link_layer = LinkLayer::ethernet(), .gid_tbl_len = 4};
  std::vector<GidEntry> e{GidEntry::valid(0, Gid::parse("fe80::1").value(), GidType::roce_v2, "eth0"),
                          GidEntry::valid(1, Gid::parse("fe80::1").value(), GidType::roce_v1, "eth0")};
  if (routable)
    e.push_back(GidEntry::valid(2, Gid::parse("::ffff:10.0.0.1").value(), GidType::roce_v2, "eth0"));
  return GidTable::make(p, std::move(e)).value();
}

TEST(Stacks, ADownPortIsTheStacksBlockerNotOk) {
  const GidTable t = blocked_port(PortState::down, true);
  ASSERT_TRUE(port_blocker(t));
  EXPECT_NE(port_blocker(t)->find("is down, not active"), std::string::npos) << *port_blocker(t);
  for (const StackInfo& s : stack_catalogue()) {
    if (!s.predicted || !s.runs_on.has(t.port().link_layer)) continue;  // predicted only where it runs
    const auto p = predict_stack(s.id, t).value();
    EXPECT_FALSE(p.works) << s.name << ": " << p.outcome;
    EXPECT_NE(p.outcome, "ok") << s.name;
  }
  const auto n = predict_stack(StackId::nccl, t).value();
  EXPECT_EQ(n.outcome.rfind("port not active: ", 0), 0u) << n.outcome;
  EXPECT_FALSE(port_blocker(blocked_port(PortState::active, true)));
  EXPECT_TRUE(predict_stack(StackId::nccl, blocked_port(PortState::active, true)).value().works);
}

TEST(Stacks, ALinkLocalOnlyPortIsTheStacksBlockerNotOk) {
  const GidTable t = blocked_port(PortState::active, false);
  EXPECT_TRUE(only_link_local_gids(t));
  ASSERT_TRUE(port_blocker(t));
  for (const StackInfo& s : stack_catalogue()) {
    if (!s.predicted || !s.runs_on.has(t.port().link_layer)) continue;  // predicted only where it runs
    const auto p = predict_stack(s.id, t).value();
    EXPECT_FALSE(p.works) << s.name << ": " << p.outcome;
  }
  const auto n = predict_stack(StackId::nccl, t).value();
  EXPECT_NE(n.outcome.find("link-local"), std::string::npos) << n.outcome;
  EXPECT_FALSE(only_link_local_gids(blocked_port(PortState::active, true)));
}

TEST(Stacks, AnEmptyLocalSlotIsTheCauseNotAZeroPeerGid) {
  // No entry auto could pick: the stand-in peer must not be the empty slot's zeros.
  PortInfo p{.device = "mlx5_0",
             .port = 1,
             .state = PortState::active,
             .link_layer = LinkLayer::ethernet(),
             .gid_tbl_len = 4};
  const GidTable t = GidTable::make(p, {GidEntry::empty(1)}).value();
  const auto pin = judge_pin(read_pin("NCCL_IB_GID_INDEX", "1", true).at(0), t, DriverModel::linux_kernel());
  EXPECT_NE(pin.status, PinJudgement::Status::fine);
  const auto prof = stack_profile(StackId::llama_cpp, 1).value();
  const auto pr = predict_profile(prof, t, DriverModel::linux_kernel());
  ASSERT_TRUE(pr.chose);
  EXPECT_EQ(pr.err, 61) << pr.outcome;  // ENODATA: sgid_index 1 is empty
  EXPECT_NE(pr.outcome.find("empty"), std::string::npos) << pr.outcome;
  EXPECT_EQ(pr.outcome.find("destination GID is zero"), std::string::npos) << pr.outcome;
}

TEST(Stacks, APinValueCannotForgeALineOfAReading) {
  for (const char* var : {"NCCL_IB_GID_INDEX", "MC_GID_INDEX"})
    for (const auto& r : read_pin(var, "3\nREADY: 0 blockers\x1b[2J", false)) {
      EXPECT_EQ(r.reader.find('\n'), std::string::npos) << r.reader;
      EXPECT_EQ(r.reader.find('\x1b'), std::string::npos) << r.reader;
    }
}

}  // namespace
}  // namespace gidpolicy

namespace gidpolicy {
namespace {

// Every device variable is read, and only those: the rows whose device setting is a variable.
TEST(DeviceSelector, TheVariablesAreTheRowsDeviceVariables) {
  const std::vector<std::string_view> want{stack_vars::kNcclHca, stack_vars::kNvshmemHcaList,
                                           stack_vars::kUcxNetDevices, stack_vars::kFiVerbsDeviceName,
                                           stack_vars::kGgmlRdmaDev};
  EXPECT_EQ(device_variables(), want);
  EXPECT_FALSE(read_device_selector(stack_vars::kNcclGidIndex, "3"));
  EXPECT_FALSE(read_device_selector(stack_vars::kMlxIbvDevices, "/tmp/devices.json"));
}

// NCCL's rule: '^' excludes, '=' matches whole names, otherwise a name is a prefix (mlx5_1 is
// also mlx5_10), a port narrows an item, an empty list is every device.
TEST(DeviceSelector, NcclsListIsReadAsNcclReadsIt) {
  const auto prefix = read_device_selector(stack_vars::kNcclHca, "mlx5_1");
  ASSERT_TRUE(prefix);
  EXPECT_EQ(prefix->stack, StackId::nccl);
  EXPECT_TRUE(prefix->selects("mlx5_1", 1));
  EXPECT_TRUE(prefix->selects("mlx5_10", 2));
  EXPECT_FALSE(prefix->selects("mlx5_0", 1));
  const auto exact = read_device_selector(stack_vars::kNcclHca, "=mlx5_1:1,mlx5_2");
  ASSERT_TRUE(exact);
  EXPECT_TRUE(exact->selects("mlx5_1", 1));
  EXPECT_FALSE(exact->selects("mlx5_1", 2));
  EXPECT_FALSE(exact->selects("mlx5_10", 1));
  EXPECT_TRUE(exact->selects("mlx5_2", 2));
  const auto not_one = read_device_selector(stack_vars::kNcclHca, "^=mlx5_0");
  ASSERT_TRUE(not_one);
  EXPECT_FALSE(not_one->selects("mlx5_0", 1));
  EXPECT_TRUE(not_one->selects("mlx5_00", 1));
  const auto empty = read_device_selector(stack_vars::kNcclHca, "");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->selects("anything", 1));
  // NVSHMEM is modelled as NCCL.
  const auto nvshmem = read_device_selector(stack_vars::kNvshmemHcaList, "mlx5_1:1");
  ASSERT_TRUE(nvshmem);
  EXPECT_EQ(nvshmem->stack, StackId::nvshmem);
  EXPECT_TRUE(nvshmem->selects("mlx5_1", 1));
  EXPECT_FALSE(nvshmem->selects("mlx5_0", 1));
}

TEST(DeviceSelector, UcxLibfabricAndLlamaCppEachReadTheirOwnWay) {
  const auto ucx = read_device_selector(stack_vars::kUcxNetDevices, "eth0,mlx5_1:1");
  ASSERT_TRUE(ucx);
  EXPECT_TRUE(ucx->selects("mlx5_1", 1));
  EXPECT_FALSE(ucx->selects("mlx5_10", 1));  // whole names
  EXPECT_FALSE(ucx->selects("eth0", 1));     // a TCP interface, no RDMA port
  EXPECT_TRUE(read_device_selector(stack_vars::kUcxNetDevices, "all")->selects("mlx5_7", 1));
  const auto fi = read_device_selector(stack_vars::kFiVerbsDeviceName, "mlx5_1");
  ASSERT_TRUE(fi);
  EXPECT_TRUE(fi->selects("mlx5_1", 1));
  EXPECT_TRUE(fi->selects("mlx5_10", 1));
  const auto ggml = read_device_selector(stack_vars::kGgmlRdmaDev, "mlx5_1");
  ASSERT_TRUE(ggml);
  EXPECT_TRUE(ggml->selects("mlx5_1", 1));
  EXPECT_FALSE(ggml->selects("mlx5_10", 1));
}

// The stacks a Mac runs are the rows that run on Thunderbolt (the table's runs_on), and their
// choice is predicted there: JACCL as it ships routes from index 1 while advertising the mapped
// GID at 2 on the Mac mini; ds4's macOS scan takes index 2 itself.
TEST(StacksOnAPort, TheMacsStacksArePredictedOnThunderboltAndJacclFailsOnTheMacMini) {
  const GidTable mac = test::macmini();
  std::vector<std::string_view> here;
  for (const StackInfo& s : kStacks)
    if (s.runs_on.has(mac.port().link_layer)) here.push_back(s.name);
  EXPECT_EQ(here, (std::vector<std::string_view>{"ds4", "llama.cpp", "jaccl", "exo"}));
  ASSERT_OK_AND_ASSIGN(const StackPrediction j, predict_stack(StackId::jaccl, mac));
  EXPECT_TRUE(j.chose);
  EXPECT_EQ(j.index, 1u);                            // it routes from the literal index 1 (empty here) ...
  EXPECT_EQ(j.gid.to_string(), "::ffff:10.99.0.3");  // ... advertising the mapped GID at 2
  EXPECT_FALSE(j.works);
  EXPECT_EQ(j.err, 22);
  ASSERT_OK_AND_ASSIGN(const StackPrediction e, predict_stack(StackId::exo, mac));
  EXPECT_EQ(e.outcome, j.outcome);  // exo runs JACCL
  ASSERT_OK_AND_ASSIGN(const StackPrediction d, predict_stack(StackId::ds4, mac));
  EXPECT_TRUE(d.works);
  EXPECT_EQ(d.index, 2u);
  // On the Mac with its mapped GID at 1, stock JACCL works.
  ASSERT_OK_AND_ASSIGN(const StackPrediction ok, predict_stack(StackId::jaccl, test::apple_ds4qa()));
  EXPECT_TRUE(ok.works) << ok.outcome;
  // NCCL does not run on Thunderbolt: no prediction, an error saying so.
  const auto n = predict_stack(StackId::nccl, mac);
  ASSERT_FALSE(n);
  EXPECT_EQ(n.error(), errc::not_supported);
  EXPECT_NE(n.error().detail.find("does not run on thunderbolt"), std::string::npos) << n.error().detail;
}

// ds4 takes its Linux RoCE path on RoCE: ds4-linux's pick (the first non-zero RoCE v2 entry), not
// the macOS scan's first IPv4-mapped entry.
TEST(StacksOnAPort, Ds4OnRoceIsItsLinuxPath) {
  const StackInfo& ds4 = stack_row(StackId::ds4);
  EXPECT_EQ(automatic_spec(ds4, LinkLayer::ethernet()), "ds4-linux");
  EXPECT_EQ(automatic_spec(ds4, LinkLayer::thunderbolt()), "ds4");
  EXPECT_EQ(automatic_spec(ds4, LinkLayer::infiniband()), "");
  ASSERT_OK_AND_ASSIGN(const StackPrediction p, predict_stack(StackId::ds4, test::ds4_linux_unit()));
  EXPECT_EQ(p.index, 2u);  // the macOS scan would take index 0 (::ffff:127.0.0.1, RoCE v1)
  // On a port, its control address is the port's first RoCE v2 IPv4-mapped GID's: 127.0.0.2 here
  // (index 2), the address ds4 asks its control connection to run on.
  ASSERT_OK_AND_ASSIGN(const Profile on_port, stack_profile_for(StackId::ds4, test::ds4_linux_unit()));
  EXPECT_EQ(on_port.spec(), "ds4-linux:local=127.0.0.2");
  ASSERT_OK_AND_ASSIGN(const Profile on_port_pinned,
                       stack_profile_for(StackId::ds4, test::ds4_linux_unit(), 3));
  EXPECT_EQ(on_port_pinned.spec(), "ds4-linux:local=127.0.0.2,index=3");
  // Stacks without a control address option are stack_profile_on()'s.
  ASSERT_OK_AND_ASSIGN(const Profile nccl, stack_profile_for(StackId::nccl, test::ds4_linux_unit()));
  EXPECT_EQ(nccl.spec(), stack_profile_on(StackId::nccl, LinkLayer::ethernet()).value().spec());
  ASSERT_OK_AND_ASSIGN(const Profile pinned, stack_profile_on(StackId::ds4, LinkLayer::ethernet(), 3));
  EXPECT_EQ(pinned.spec(), "ds4-linux:index=3");
  EXPECT_EQ(stack_profile_on(StackId::ds4, LinkLayer::ethernet(), 256).error(), errc::invalid_argument);
  EXPECT_EQ(stack_profile_on(StackId::jaccl, LinkLayer::ethernet()).error(), errc::not_supported);
  EXPECT_EQ(stack_profile_on(StackId::llama_cpp, LinkLayer::thunderbolt()).error(), errc::not_supported);
  ASSERT_OK_AND_ASSIGN(const Profile l, stack_profile_on(StackId::llama_cpp, LinkLayer::thunderbolt(), 2));
  EXPECT_EQ(l.plan(test::macmini()).value().sgid_index, 2u);
}

// The default `check` shows a named profile only where its stack runs: JACCL's three and ds4's
// macOS scan not on RoCE, ds4's Linux path not on Thunderbolt; auto and custom specs everywhere.
TEST(StacksOnAPort, NamedProfilesRunOnlyWhereTheirStackRuns) {
  for (const char* spec : {"jaccl", "jaccl-legacy", "jaccl-fixed", "ds4", "ds4:index=2"}) {
    EXPECT_FALSE(profile_runs_on(spec, LinkLayer::ethernet())) << spec;
    EXPECT_TRUE(profile_runs_on(spec, LinkLayer::thunderbolt())) << spec;
  }
  EXPECT_TRUE(profile_runs_on("ds4-linux", LinkLayer::ethernet()));
  EXPECT_FALSE(profile_runs_on("ds4-linux", LinkLayer::thunderbolt()));
  EXPECT_FALSE(profile_runs_on("ds4-linux", LinkLayer::infiniband()));
  for (const char* spec : {"auto", "auto:roce=v1", "first(jaccl|auto)"}) {
    EXPECT_TRUE(profile_runs_on(spec, LinkLayer::ethernet())) << spec;
    EXPECT_TRUE(profile_runs_on(spec, LinkLayer::thunderbolt())) << spec;
  }
}

// Stock JACCL: no variable steers it. Where it fails, the reason says what the table shows and
// what must hold on the host (the first IPv4-mapped GID at index 1); where it works, nothing.
TEST(StacksOnAPort, StockJacclOnTheMacMiniNeedsTheMappedGidAtIndex1) {
  const GidTable mac = test::macmini();
  const DriverModel model = DriverModel::for_table(mac);
  const auto why = unsteerable_failure(stack_row(StackId::jaccl), mac, model);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("no variable steers it (JACCL_GID_POLICY is read only by its patched fork)"),
            std::string::npos)
      << *why;
  EXPECT_NE(why->find("it advertises index 2 (::ffff:10.99.0.3, the first IPv4-mapped GID) and routes from "
                      "index 1, which is empty: it works once the first IPv4-mapped GID sits at index 1"),
            std::string::npos)
      << *why;
  EXPECT_NE(why->find("port's own interface (not bridge0) has an IPv4 address"), std::string::npos) << *why;
  EXPECT_TRUE(unsteerable_failure(stack_row(StackId::exo), mac, model));
  EXPECT_FALSE(unsteerable_failure(stack_row(StackId::jaccl), test::apple_ds4qa(),
                                   DriverModel::for_table(test::apple_ds4qa())));
  // A stack steered by its own variable, or one that does not run there: nothing to say.
  EXPECT_FALSE(unsteerable_failure(stack_row(StackId::libfabric), test::nccl_769(),
                                   DriverModel::for_table(test::nccl_769())));
  EXPECT_FALSE(unsteerable_failure(stack_row(StackId::jaccl), test::nccl_769(),
                                   DriverModel::for_table(test::nccl_769())));
  // No IPv4-mapped GID at all: JACCL's own error, which asks for an address.
  const auto none = unsteerable_failure(stack_row(StackId::jaccl), test::apple_noipv4(),
                                        DriverModel::for_table(test::apple_noipv4()));
  ASSERT_TRUE(none);
  EXPECT_NE(none->find("no variable steers it"), std::string::npos) << *none;
}

// Launch settings (read_launch): each variable read as its stack reads it, then predicted with.
std::uint32_t picked(StackId id, const GidTable& t, const StackLaunch& l) {
  auto prof = stack_profile_for(id, t, l);
  EXPECT_TRUE(prof.has_value());
  return predict_profile(prof.value(), t, DriverModel::for_table(t)).index;
}

TEST(StackLaunchSettings, NcclFamilyIsWhatTheNcclProfileWithThatFamilyPicks) {
  const GidTable t = test::nccl_769();
  const std::vector<LaunchSetting> env{{"NCCL_IB_ADDR_FAMILY", "AF_INET6", "the environment"}};
  const StackLaunch l = read_launch(StackId::nccl, env);
  ASSERT_EQ(l.read.size(), 1u);
  EXPECT_TRUE(l.read[0].applied);
  EXPECT_EQ(l.read[0].origin, "the environment");
  ASSERT_TRUE(l.inet6);
  EXPECT_TRUE(*l.inet6);
  const auto want = parse_profile("nccl:family=AF_INET6").value().plan(t).value().sgid_index;
  EXPECT_EQ(picked(StackId::nccl, t, l), want);
  EXPECT_EQ(picked(StackId::nccl, t, read_launch(StackId::nccl, {})), 3u);  // the default
  // NVSHMEM and UCX do not read NCCL's variable.
  EXPECT_TRUE(read_launch(StackId::nvshmem, env).read.empty());
  EXPECT_TRUE(read_launch(StackId::ucx, env).read.empty());
}

TEST(StackLaunchSettings, EachValueIsReadAsNcclParsesIt) {
  // Any family but the exact "AF_INET6" is AF_INET, silently.
  const StackLaunch f =
      read_launch(StackId::nccl, std::vector<LaunchSetting>{{"NCCL_IB_ADDR_FAMILY", "inet6", "x"}});
  ASSERT_TRUE(f.inet6);
  EXPECT_FALSE(*f.inet6);
  EXPECT_NE(f.read[0].reading.find("read as AF_INET"), std::string::npos) << f.read[0].reading;
  // A range that does not parse is ignored: the default prediction.
  const StackLaunch r =
      read_launch(StackId::nccl, std::vector<LaunchSetting>{{"NCCL_IB_ADDR_RANGE", "10.0.0.0/99x", "x"}});
  EXPECT_FALSE(r.range);
  EXPECT_NE(r.read[0].reading.find("ignored"), std::string::npos) << r.read[0].reading;
  EXPECT_EQ(picked(StackId::nccl, test::nccl_769(), r), 3u);
  // A range that parses steers the choice.
  const StackLaunch r2 =
      read_launch(StackId::nccl, std::vector<LaunchSetting>{{"NCCL_IB_ADDR_RANGE", "200.0.209.0/24", "x"}});
  ASSERT_TRUE(r2.range);
  EXPECT_EQ(picked(StackId::nccl, test::nccl_769(), r2), 3u);
  // strtoll(text, 0, 0) for the RoCE version: "0x1" is 1.
  const StackLaunch v =
      read_launch(StackId::nccl, std::vector<LaunchSetting>{{"NCCL_IB_ROCE_VERSION_NUM", "0x1", "x"}});
  ASSERT_TRUE(v.roce_version);
  EXPECT_EQ(*v.roce_version, 1);
  // A later setting of a name wins (an env file's line after the environment's).
  const StackLaunch last = read_launch(
      StackId::nccl, std::vector<LaunchSetting>{{"NCCL_IB_ADDR_FAMILY", "AF_INET6", "the environment"},
                                                {"NCCL_IB_ADDR_FAMILY", "AF_INET", "run.env:1"}});
  ASSERT_EQ(last.read.size(), 1u);
  EXPECT_EQ(last.read[0].origin, "run.env:1");
  EXPECT_FALSE(*last.inet6);
}

TEST(StackLaunchSettings, PinsDeviceListsAndTheMooncakeFallback) {
  const std::vector<LaunchSetting> env{{"NCCL_IB_GID_INDEX", "3", "e"}, {"NCCL_IB_HCA", "=mlx5_1", "e"}};
  const StackLaunch n = read_launch(StackId::nccl, env);
  EXPECT_EQ(n.pinned, 3);
  EXPECT_EQ(n.pin_variable, "NCCL_IB_GID_INDEX");
  ASSERT_TRUE(n.devices);
  EXPECT_FALSE(n.uses("mlx5_0", 1));
  EXPECT_TRUE(n.uses("mlx5_1", 1));
  // Mooncake reads NCCL's pin while its own is unset, and not once it is set.
  EXPECT_EQ(read_launch(StackId::mooncake, env).pinned, 3);
  auto with_own = env;
  with_own.push_back({"MC_GID_INDEX", "5", "e"});
  const StackLaunch m = read_launch(StackId::mooncake, with_own);
  EXPECT_EQ(m.pinned, 5);
  EXPECT_EQ(m.pin_variable, "MC_GID_INDEX");
  // UCX refuses an index that is neither "auto" nor a number, and then does not start.
  EXPECT_TRUE(read_launch(StackId::ucx, std::vector<LaunchSetting>{{"UCX_IB_GID_INDEX", "x", "e"}}).refused);
  // UCX's device list: exact device:port items.
  const StackLaunch u =
      read_launch(StackId::ucx, std::vector<LaunchSetting>{{"UCX_NET_DEVICES", "mlx5_1:1", "e"}});
  EXPECT_FALSE(u.uses("mlx5_0", 1));
  EXPECT_TRUE(u.uses("mlx5_1", 1));
  // A UCX subnet setting is read and reported, not applied (reachability, not the local choice).
  const StackLaunch s =
      read_launch(StackId::ucx, std::vector<LaunchSetting>{{"UCX_IB_ROCE_LOCAL_SUBNET", "y", "e"}});
  ASSERT_EQ(s.read.size(), 1u);
  EXPECT_FALSE(s.read[0].applied);
}

TEST(StackLaunchSettings, LaunchVariablesListEveryRowsPinsDevicesAndSettings) {
  const auto vars = launch_variables();
  for (const StackInfo& s : kStacks) {
    for (const PinVariable& p : s.pins) EXPECT_NE(std::find(vars.begin(), vars.end(), p.name), vars.end());
    for (const SettingVariable& v : s.settings)
      EXPECT_NE(std::find(vars.begin(), vars.end(), v.name), vars.end());
  }
  const auto devices = device_variables();
  for (const auto d : devices) EXPECT_NE(std::find(vars.begin(), vars.end(), d), vars.end());
}

TEST(StackLaunchSettings, WithoutThePinIsTheStacksOwnChoice) {
  const GidTable t = test::nccl_1573_pod(0);
  const StackLaunch l =
      read_launch(StackId::nccl, std::vector<LaunchSetting>{{"NCCL_IB_GID_INDEX", "2", "e"}});
  auto own = stack_profile_for(StackId::nccl, t, l, false);
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(predict_profile(own.value(), t, DriverModel::for_table(t)).index, 7u);
  EXPECT_EQ(picked(StackId::nccl, t, l), 2u);
}

}  // namespace
}  // namespace gidpolicy
