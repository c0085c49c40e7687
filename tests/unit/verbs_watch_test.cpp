// verbs/watch.hpp: GidWatcher and WatchThread over the fake's events, and the async-event calls
// of every backend. (What a change means, change.hpp, is change_test.cpp's; the network view,
// auto:peer and diagnose's namespace cause are in network_test.cpp, policies_ranked_test.cpp and
// diagnose_test.cpp.)
#include <gidpolicy/change.hpp>
#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/fakes/fake_c_abi.hpp>
#include <gidpolicy/fakes/fake_routes.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/fakes/testing/mock_verbs.hpp>
#include <gidpolicy/network.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/verbs/function_table_api.hpp>
#include <gidpolicy/verbs/watch.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include "support/assert_ok.hpp"

#include <poll.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace gidpolicy {
namespace {

using fakes::TableMutation;
using verbs::VerbsCall;

Gid gid(const char* s) { return VALUE_OR_FAIL(Gid::parse(s)); }

PortInfo roce_port(std::uint32_t len = 16) {
  return PortInfo{"mlx5_0", 1, PortState::active, LinkLayer::ethernet(), len, Mtu::mtu_1024, 0};
}

/// mlx5's layout: link-local v1/v2 at 0/1, 10.0.0.1 v1/v2 at 2/3.
GidTable mlx5_table() {
  return VALUE_OR_FAIL(
      GidTable::make(roce_port(), {GidEntry::valid(0, gid("fe80::1"), GidType::roce_v1, "eth0"),
                                   GidEntry::valid(1, gid("fe80::1"), GidType::roce_v2, "eth0"),
                                   GidEntry::valid(2, gid("::ffff:10.0.0.1"), GidType::roce_v1, "eth0"),
                                   GidEntry::valid(3, gid("::ffff:10.0.0.1"), GidType::roce_v2, "eth0")}));
}

GidTable with(const GidTable& t, std::vector<GidEntry> entries, PortState state = PortState::active) {
  PortInfo p = t.port();
  p.state = state;
  return VALUE_OR_FAIL(GidTable::make(p, std::move(entries)));
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

// ---- the fake's events and the watcher -----------------------------------------------------

TEST(FakeVerbsEvents, MutationsRaiseGidChangeAndPortEventsOnEveryHandle) {
  fakes::FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(mlx5_table()).has_value());
  ASSERT_OK_AND_ASSIGN(auto d1, fake.open_device("mlx5_0"));
  ASSERT_OK_AND_ASSIGN(auto d2, fake.open_device("mlx5_0"));
  ASSERT_OK_AND_ASSIGN(const int fd, fake.async_event_fd(d1));
  EXPECT_FALSE(readable(fd));
  ASSERT_TRUE(fake.apply(TableMutation::emptied("mlx5_0", 1, 3)).has_value());
  ASSERT_TRUE(fake.apply(TableMutation::port_state("mlx5_0", 1, PortState::down)).has_value());
  ASSERT_TRUE(
      fake.apply(TableMutation::port_state("mlx5_0", 1, PortState::down)).has_value());  // no crossing
  ASSERT_TRUE(fake.apply(TableMutation::netdev_gone("mlx5_0", 1, 2)).has_value());       // no GID changed
  EXPECT_TRUE(readable(fd));
  for (auto d : {d1, d2}) {
    auto e1 = VALUE_OR_FAIL(fake.read_async_event(d));
    ASSERT_TRUE(e1.has_value());
    EXPECT_EQ(e1->type, IBV_EVENT_GID_CHANGE);
    EXPECT_EQ(e1->port, 1u);
    auto e2 = VALUE_OR_FAIL(fake.read_async_event(d));
    ASSERT_TRUE(e2.has_value());
    EXPECT_EQ(e2->type, IBV_EVENT_PORT_ERR);
    EXPECT_FALSE(VALUE_OR_FAIL(fake.read_async_event(d)).has_value());
    EXPECT_EQ(fake.unacked_events(), 2u);  // the previous handle's were acked
    ASSERT_TRUE(fake.ack_async_event(d, *e1).has_value());
    ASSERT_TRUE(fake.ack_async_event(d, *e2).has_value());
  }
  EXPECT_FALSE(readable(fd));
  EXPECT_EQ(fake.unacked_events(), 0u);
  EXPECT_FALSE(fake.ack_async_event(d1, {}).has_value());  // an ack without a read
  ASSERT_TRUE(fake.apply(TableMutation::port_state("mlx5_0", 1, PortState::active)).has_value());
  EXPECT_EQ(VALUE_OR_FAIL(fake.read_async_event(d1))->type, IBV_EVENT_PORT_ACTIVE);
}

TEST(FakeVerbsEvents, ReplacePortIsOneEventAndAllOrNothing) {
  fakes::FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(mlx5_table()).has_value());
  ASSERT_OK_AND_ASSIGN(auto d, fake.open_device("mlx5_0"));
  const GidTable t = mlx5_table();
  EXPECT_FALSE(VALUE_OR_FAIL(fake.replace_port(t)));  // same table: nothing, no event
  EXPECT_FALSE(VALUE_OR_FAIL(fake.read_async_event(d)).has_value());
  const GidTable moved = with(t, {*t.find(0), *t.find(1), *t.find(2),
                                  GidEntry::valid(7, gid("::ffff:10.0.0.1"), GidType::roce_v2, "eth0")});
  EXPECT_TRUE(VALUE_OR_FAIL(fake.replace_port(moved)));
  EXPECT_EQ(VALUE_OR_FAIL(fake.read_async_event(d))->type, IBV_EVENT_GID_CHANGE);
  EXPECT_FALSE(VALUE_OR_FAIL(fake.read_async_event(d)).has_value());
  const GidTable too_far = VALUE_OR_FAIL(
      GidTable::make(PortInfo{"mlx5_0", 1, PortState::active, LinkLayer::ethernet(), 64, Mtu::mtu_1024, 0},
                     {GidEntry::valid(40, gid("::ffff:10.0.0.9"))}));
  EXPECT_FALSE(fake.replace_port(too_far).has_value());
  EXPECT_EQ(VALUE_OR_FAIL(fake.table("mlx5_0", 1)), moved);
}

TEST(GidWatcher, EventLoopFormReportsOneChangePerBurstAndAcksEverything) {
  fakes::FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(mlx5_table()).has_value());
  ASSERT_OK_AND_ASSIGN(auto dev, fake.open_device("mlx5_0"));
  ASSERT_OK_AND_ASSIGN(auto w, verbs::GidWatcher::open(fake, dev, {1}));
  ASSERT_OK_AND_ASSIGN(const Plan plan, profiles::automatic().plan(*w.table(1)));
  ASSERT_TRUE(w.follow(1, plan.selection.entry).has_value());
  EXPECT_FALSE(w.follow(2, plan.selection.entry).has_value());  // port 2 is not watched
  EXPECT_TRUE(VALUE_OR_FAIL(w.process()).empty());

  // A port flap: the address leaves and comes back first-free elsewhere, in one burst.
  ASSERT_TRUE(fake.apply(TableMutation::moved_index("mlx5_0", 1, 3, 9)).has_value());
  ASSERT_TRUE(fake.apply(TableMutation::moved_index("mlx5_0", 1, 2, 8)).has_value());
  EXPECT_TRUE(readable(w.fd()));
  ASSERT_OK_AND_ASSIGN(auto changes, w.process());
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, ChangeKind::moved);
  EXPECT_EQ(changes[0].new_index, 9u);
  EXPECT_EQ(changes[0].cause, "gid_change");
  EXPECT_EQ(w.events_seen(), 2u);
  EXPECT_EQ(fake.unacked_events(), 0u);
  EXPECT_FALSE(readable(w.fd()));
  // The watcher keeps following the same GID: the next move is from 9.
  ASSERT_TRUE(fake.apply(TableMutation::moved_index("mlx5_0", 1, 9, 4)).has_value());
  changes = VALUE_OR_FAIL(w.process());
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].old_index, 9u);
  EXPECT_EQ(changes[0].new_index, 4u);
  // Events that change nothing visible report nothing.
  ASSERT_TRUE(fake.raise_event("mlx5_0", 1, IBV_EVENT_GID_CHANGE).has_value());
  ASSERT_TRUE(fake.raise_event("mlx5_0", 1, IBV_EVENT_LID_CHANGE).has_value());
  EXPECT_TRUE(VALUE_OR_FAIL(w.process()).empty());
  EXPECT_EQ(fake.unacked_events(), 0u);
}

TEST(GidWatcher, AFailedReReadIsRetriedWithoutANewEvent) {
  fakes::FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(mlx5_table()).has_value());
  ASSERT_OK_AND_ASSIGN(auto dev, fake.open_device("mlx5_0"));
  ASSERT_OK_AND_ASSIGN(auto w, verbs::GidWatcher::open(fake, dev, {1}));
  ASSERT_TRUE(w.follow(1, *w.table(1)->find(3)).has_value());
  ASSERT_TRUE(fake.apply(TableMutation::emptied("mlx5_0", 1, 3)).has_value());
  fake.fail_nth(VerbsCall::port_attributes, 1, EIO);
  auto r = w.process();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), std::errc::io_error);
  ASSERT_OK_AND_ASSIGN(auto again, w.process());
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].kind, ChangeKind::disappeared);
}

TEST(GidWatcher, NotSupportedByABackendWithoutEvents) {
  fakes::FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(mlx5_table()).has_value());
  ASSERT_OK_AND_ASSIGN(auto dev, fake.open_device("mlx5_0"));
  testing::NiceMock<fakes::MockVerbs> mock(fake);
  ON_CALL(mock, async_event_fd).WillByDefault([&](verbs::DeviceHandle d) {
    return mock.VerbsApi::async_event_fd(d);
  });
  auto w = verbs::GidWatcher::open(mock, dev, {1});
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error(), errc::not_supported);
}

TEST(GidWatcher, MockSeesOneAckPerEventRead) {
  fakes::FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(mlx5_table()).has_value());
  testing::NiceMock<fakes::MockVerbs> mock(fake);
  ASSERT_OK_AND_ASSIGN(auto dev, mock.open_device("mlx5_0"));
  ASSERT_OK_AND_ASSIGN(auto w, verbs::GidWatcher::open(mock, dev, {1}));
  ASSERT_TRUE(fake.apply(TableMutation::emptied("mlx5_0", 1, 0)).has_value());
  ASSERT_TRUE(fake.apply(TableMutation::emptied("mlx5_0", 1, 1)).has_value());
  EXPECT_CALL(mock, read_async_event).Times(3);  // two events, then "none pending"
  EXPECT_CALL(mock, ack_async_event).Times(2);
  EXPECT_CALL(mock, modify_qp).Times(0);
  EXPECT_EQ(VALUE_OR_FAIL(w.process()).size(), 1u);
}

TEST(WatchThread, CallsBackOnItsThreadAndStops) {
  fakes::FakeVerbs fake;  // thread-safe: the watch thread and this one share it
  ASSERT_TRUE(fake.add_port(mlx5_table()).has_value());
  ASSERT_OK_AND_ASSIGN(auto dev, fake.open_device("mlx5_0"));
  ASSERT_OK_AND_ASSIGN(auto w, verbs::GidWatcher::open(fake, dev, {1}));
  ASSERT_TRUE(w.follow(1, *w.table(1)->find(3)).has_value());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<GidChange> seen;
  auto t = VALUE_OR_FAIL(verbs::WatchThread::start(std::move(w), [&](verbs::GidWatcher&, const GidChange& c) {
    std::lock_guard lock(mu);
    seen.push_back(c);
    cv.notify_all();
  }));
  ASSERT_TRUE(fake.apply(TableMutation::moved_index("mlx5_0", 1, 3, 11)).has_value());
  std::unique_lock lock(mu);
  // A hang guard: the watch thread calls back as soon as it is scheduled.
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return !seen.empty(); }));
  EXPECT_EQ(seen[0].kind, ChangeKind::moved);
  EXPECT_EQ(seen[0].new_index, 11u);
  lock.unlock();
  t->stop();
  t->stop();  // idempotent
}

TEST(FunctionTableApiEvents, ReadsTheFakeThroughTheCAbiWithoutBlocking) {
  fakes::FakeVerbs fake;
  ASSERT_TRUE(fake.add_port(mlx5_table()).has_value());
  fakes::c_abi::Binding bind(fake);
  verbs::FunctionTableApi api(fakes::c_abi::functions(), {"c-abi", false});
  ASSERT_OK_AND_ASSIGN(auto dev, api.open_device("mlx5_0"));
  EXPECT_GE(VALUE_OR_FAIL(api.async_event_fd(dev)), 0);
  EXPECT_FALSE(VALUE_OR_FAIL(api.read_async_event(dev)).has_value());  // nothing pending: no block
  ASSERT_OK_AND_ASSIGN(auto w, verbs::GidWatcher::open(api, dev, {1}));
  ASSERT_TRUE(w.follow(1, *w.table(1)->find(3)).has_value());
  ASSERT_TRUE(fake.apply(TableMutation::emptied("mlx5_0", 1, 3)).has_value());
  ASSERT_OK_AND_ASSIGN(auto changes, w.process());
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].kind, ChangeKind::disappeared);
  // A table without the event calls says so instead of failing later.
  verbs::VerbsFunctions f = fakes::c_abi::functions();
  f.get_async_event = nullptr;
  verbs::FunctionTableApi bare(f, {"bare", false});
  ASSERT_OK_AND_ASSIGN(auto d2, bare.open_device("mlx5_0"));
  EXPECT_EQ(bare.async_event_fd(d2).error(), errc::not_supported);
}

}  // namespace
}  // namespace gidpolicy
