// Unit tests of the table watch: change.hpp (classify_change, replan), verbs/watch.hpp (GidWatcher,
// WatchThread), the async-event calls of every backend, network.hpp (NetworkView, FakeRoutes,
// observe_network, peers_of), auto:peer=ADDR and the namespace ranking, and diagnose()'s ENODEV
// namespace cause.
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

// ---- classify_change ---------------------------------------------------------------------

TEST(ClassifyChange, MovedDisappearedReappearedTwinAndUntracked) {
  const GidTable before = mlx5_table();
  const GidEntry adv = *before.find(3);
  const GidEntry ll0 = *before.find(0), ll1 = *before.find(1);
  const Gid a = gid("::ffff:10.0.0.1");

  const GidTable moved = with(before, {ll0, ll1, GidEntry::valid(2, a, GidType::roce_v1, "eth0"),
                                       GidEntry::valid(5, a, GidType::roce_v2, "eth0")});
  auto c = classify_change(before, moved, adv, "gid_change");
  EXPECT_EQ(c.kind, ChangeKind::moved);
  EXPECT_EQ(c.old_index, 3u);
  EXPECT_EQ(c.new_index, 5u);
  EXPECT_EQ(c.to_string(), "mlx5_0 port 1: ::ffff:10.0.0.1 (roce_v2) moved from index 3 to 5 [gid_change]");

  const GidTable gone = with(before, {ll0, ll1});
  c = classify_change(before, gone, adv);
  EXPECT_EQ(c.kind, ChangeKind::disappeared);
  EXPECT_EQ(c.new_index, std::nullopt);

  c = classify_change(gone, moved, adv);
  EXPECT_EQ(c.kind, ChangeKind::reappeared);
  EXPECT_EQ(c.new_index, 5u);

  // The v1 twin moves, the v2 entry stays: nothing to tell the peer, but reported.
  const GidTable twin = with(before, {ll0, ll1, GidEntry::valid(3, a, GidType::roce_v2, "eth0"),
                                      GidEntry::valid(4, a, GidType::roce_v1, "eth0")});
  c = classify_change(before, twin, adv);
  EXPECT_EQ(c.kind, ChangeKind::twin_changed);
  EXPECT_EQ(c.twin_old_index, 2u);
  EXPECT_EQ(c.twin_new_index, 4u);

  // The same bytes as the other RoCE version at the old slot are not the advertised entry.
  const GidTable swapped = with(before, {ll0, ll1, GidEntry::valid(3, a, GidType::roce_v1, "eth0")});
  EXPECT_EQ(classify_change(before, swapped, adv).kind, ChangeKind::disappeared);

  EXPECT_EQ(classify_change(before, gone, std::nullopt).kind, ChangeKind::untracked);
  EXPECT_EQ(classify_change(before, before, adv).kind, ChangeKind::unchanged);

  const GidTable down = with(before, {ll0, ll1, *before.find(2), adv}, PortState::down);
  c = classify_change(before, down, adv, "port_error");
  EXPECT_EQ(c.kind, ChangeKind::unchanged);
  EXPECT_EQ(c.port_state, PortState::down);
  EXPECT_THAT(c.to_string(), testing::HasSubstr("port active -> down [port_error]"));
}

// ---- replan ------------------------------------------------------------------------------

TEST(Replan, FollowsTheSameGidWhenThePolicyAcceptsIt) {
  ASSERT_OK_AND_ASSIGN(const Profile profile, parse_profile("auto:roce=v2"));
  const GidTable before = mlx5_table();
  ASSERT_OK_AND_ASSIGN(const Plan plan, profile.plan(before));
  ASSERT_EQ(plan.sgid_index, 3);
  const GidTable after = with(before, {*before.find(0), *before.find(1),
                                       GidEntry::valid(6, gid("::ffff:10.0.0.1"), GidType::roce_v2, "eth0")});
  const auto r = replan(profile, plan, classify_change(before, after, plan.selection.entry));
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r.value().followed);
  EXPECT_FALSE(r.value().tell_peer);
  EXPECT_TRUE(r.value().changed);
  EXPECT_EQ(r.value().plan.sgid_index, 6);
  EXPECT_TRUE(r.value().plan.agrees());
}

TEST(Replan, ReselectsWhenThePolicyNamesAnIndexAndTellsThePeer) {
  // validated:index=3 accepts only index 3: the GID moved to 6, index 3 now holds another one.
  ASSERT_OK_AND_ASSIGN(const Profile profile, parse_profile("validated:index=3"));
  const GidTable before = mlx5_table();
  ASSERT_OK_AND_ASSIGN(const Plan plan, profile.plan(before));
  const GidTable after = with(
      before, {*before.find(0), *before.find(1), GidEntry::valid(3, gid("::ffff:10.0.0.7"), GidType::roce_v2),
               GidEntry::valid(6, gid("::ffff:10.0.0.1"), GidType::roce_v2)});
  const auto r = replan(profile, plan, classify_change(before, after, plan.selection.entry));
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r.value().followed);
  EXPECT_TRUE(r.value().tell_peer);
  EXPECT_EQ(r.value().plan.selection.entry.gid, gid("::ffff:10.0.0.7"));
}

TEST(Replan, RefusesADownPortAndFailsWithTheTraceWhenNothingQualifies) {
  const Profile profile = profiles::automatic();
  const GidTable before = mlx5_table();
  ASSERT_OK_AND_ASSIGN(const Plan plan, profile.plan(before));
  const GidTable down = with(before, {*before.find(0), *before.find(1)}, PortState::down);
  auto r = replan(profile, plan, classify_change(before, down, plan.selection.entry));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), errc::port_not_active);
  const GidTable gone = with(before, {*before.find(0), *before.find(1)});
  r = replan(profile, plan, classify_change(before, gone, plan.selection.entry));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), errc::no_candidate);
  EXPECT_TRUE(r.error().trace != nullptr);
}

TEST(Replan, LiteralSourceIndexIsSelectedAgainNotFollowed) {
  const Profile profile = profiles::jaccl();  // routes from the literal 1
  const GidTable before = VALUE_OR_FAIL(GidTable::make(
      PortInfo{"rdma_en2", 1, PortState::active, LinkLayer::thunderbolt(), 16, Mtu::mtu_1024, 0},
      {GidEntry::valid(0, gid("fe80::5")), GidEntry::valid(1, gid("::ffff:169.254.1.2"))}));
  ASSERT_OK_AND_ASSIGN(const Plan plan, profile.plan(before));
  const GidTable after = with(before, {*before.find(0), GidEntry::valid(2, gid("::ffff:169.254.1.2"))});
  const auto r = replan(profile, plan, classify_change(before, after, plan.selection.entry));
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r.value().followed);
  EXPECT_EQ(r.value().plan.sgid_index, 1);  // still JACCL's literal 1: the reproduced bug
  EXPECT_FALSE(r.value().plan.agrees());
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
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !seen.empty(); }));
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

// ---- network view, peer routes, namespaces ------------------------------------------------

TEST(NetworkView, ComparesNamesFirstThenIfindexesAndKnowsUnknown) {
  NetworkView v{{{"eth0", 2}, {"eth1", 3}}, {}};
  EXPECT_EQ(v.visibility(GidEntry::valid(0, gid("::ffff:10.0.0.1"), GidType::roce_v2, "eth1", 99)),
            Visibility::visible);  // the name wins over a file's foreign ifindex
  EXPECT_EQ(v.visibility(GidEntry::valid(0, gid("::ffff:10.0.0.1"), GidType::roce_v2, "eth9", 3)),
            Visibility::invisible);
  EXPECT_EQ(v.visibility(GidEntry::valid(0, gid("::ffff:10.0.0.1"), GidType::roce_v2, "", 3)),
            Visibility::visible);
  EXPECT_EQ(v.visibility(GidEntry::valid(0, gid("::ffff:10.0.0.1"), GidType::roce_v2, "", 7)),
            Visibility::invisible);
  EXPECT_EQ(v.visibility(GidEntry::valid(0, gid("::ffff:10.0.0.1"))), Visibility::unknown);
}

TEST(NetworkView, ObserveAsksEachPeerOnceAndFailsOnAnUnroutablePeer) {
  fakes::FakeRoutes routes;
  routes.links = {{"eth0", 2}, {"eth1", 3}};
  routes.routes = {{gid("::ffff:10.1.0.9"), "eth0", 2, gid("::ffff:10.1.0.1")},
                   {Gid{}, "eth1", 3, gid("::ffff:10.2.0.1")}};  // default route
  const std::vector<PeerAddress> peers{gid("::ffff:10.1.0.9"), gid("::ffff:192.0.2.1"),
                                       gid("::ffff:10.1.0.9")};
  ASSERT_OK_AND_ASSIGN(auto v, observe_network(routes, peers));
  EXPECT_EQ(routes.queries, 2u);
  ASSERT_NE(v.route_to(gid("::ffff:192.0.2.1")), nullptr);
  EXPECT_EQ(v.route_to(gid("::ffff:192.0.2.1"))->netdev, "eth1");
  routes.routes.pop_back();
  auto bad = observe_network(routes, std::vector<PeerAddress>{gid("::ffff:192.0.2.1")});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error(), std::errc::network_unreachable);
  EXPECT_THAT(bad.error().detail, testing::HasSubstr("192.0.2.1"));
  std::vector<PeerAddress> many(65, gid("::ffff:10.1.0.9"));
  EXPECT_EQ(observe_network(routes, many).error(), errc::invalid_argument);
}

GidTable two_netdevs() {
  return VALUE_OR_FAIL(
      GidTable::make(roce_port(), {GidEntry::valid(1, gid("::ffff:10.9.0.1"), GidType::roce_v2, "ghost0"),
                                   GidEntry::valid(2, gid("::ffff:10.1.0.1"), GidType::roce_v2, "eth0"),
                                   GidEntry::valid(3, gid("::ffff:10.1.0.5"), GidType::roce_v2, "eth0"),
                                   GidEntry::valid(4, gid("::ffff:10.2.0.1"), GidType::roce_v2, "eth1")}));
}

TEST(RankedPeer, PrefersTheRouteSourceOnTheRouteNetdevAndRoundTrips) {
  ASSERT_OK_AND_ASSIGN(const auto p, parse_policy("auto:peer=10.2.0.9"));
  EXPECT_EQ(p.spec(), "auto:peer=10.2.0.9");
  EXPECT_EQ(peers_of(p), std::vector<PeerAddress>{gid("::ffff:10.2.0.9")});
  EXPECT_EQ(peers_of(VALUE_OR_FAIL(parse_policy("first(validated:index=1|auto:peer=10.1.0.9)"))),
            std::vector<PeerAddress>{gid("::ffff:10.1.0.9")});
  const GidTable t = two_netdevs();
  NetworkView v{{{"eth0", 2}, {"eth1", 3}},
                {{gid("::ffff:10.2.0.9"), "eth1", 3, gid("::ffff:10.2.0.1")},
                 {gid("::ffff:10.1.0.9"), "eth0", 2, gid("::ffff:10.1.0.5")}}};
  EXPECT_EQ(VALUE_OR_FAIL(p.select(t, {.network = &v})).entry.index, 4u);
  // The source address decides between two GIDs on the route's netdev.
  EXPECT_EQ(VALUE_OR_FAIL(parse_policy("auto:peer=10.1.0.9")).select(t, {.network = &v}).value().entry.index,
            3u);
  // Without the kernel's route, peer= is an error, never a silent fallback.
  auto none = p.select(t);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error(), errc::invalid_argument);
  EXPECT_THAT(none.error().detail, testing::HasSubstr("needs the kernel's route"));
  EXPECT_EQ(VALUE_OR_FAIL(parse_policy("auto:peer=10.7.0.1")).select(t, {.network = &v}).error(),
            errc::invalid_argument);
  EXPECT_FALSE(parse_policy("auto:peer=banana").has_value());
}

TEST(RankedNamespace, InvisibleNetdevRanksBelowEveryVisibleCandidateWithTheReason) {
  const GidTable t = two_netdevs();
  ASSERT_OK_AND_ASSIGN(const auto automatic, parse_policy("auto"));
  EXPECT_EQ(VALUE_OR_FAIL(automatic.select(t)).entry.index, 1u);  // no view: the table order
  NetworkView v{{{"eth0", 2}, {"eth1", 3}}, {}};
  ASSERT_OK_AND_ASSIGN(auto s, automatic.select(t, {.trace = true, .network = &v}));
  EXPECT_EQ(s.entry.index, 2u);
  EXPECT_THAT(s.trace.to_string(), testing::HasSubstr("ghost0 is not in this network namespace"));
  // Only invisible candidates: still chosen (ranked, not rejected), the trace says why.
  NetworkView empty{{{"lo", 1}}, {}};
  ASSERT_OK_AND_ASSIGN(auto last, automatic.select(t, {.trace = true, .network = &empty}));
  EXPECT_EQ(last.entry.index, 1u);
  EXPECT_THAT(last.trace.to_string(), testing::HasSubstr("ranks below every visible candidate"));
}

TEST(DiagnoseNamespace, EnodevConfirmedWhenTheSlotsNetdevIsNotInTheNamespace) {
  const GidTable t = two_netdevs();
  NetworkView v{{{"eth0", 2}, {"eth1", 3}}, {}};
  DiagnoseContext c;
  c.table = &t;
  c.sgid_index = 1;
  c.network = &v;
  const Diagnosis d = diagnose(ENODEV, Platform::linux_kernel, c);
  ASSERT_FALSE(d.causes.empty());
  EXPECT_EQ(d.causes.front().id, "netdev_other_namespace");
  EXPECT_EQ(d.causes.front().likelihood, Likelihood::confirmed);
  EXPECT_THAT(d.causes.front().summary, testing::HasSubstr("ghost0"));
  c.sgid_index = 2;
  const Diagnosis ok = diagnose(ENODEV, Platform::linux_kernel, c);
  bool ruled_out = false;
  for (const auto& cause : ok.causes)
    if (cause.id == "netdev_other_namespace") ruled_out = cause.likelihood == Likelihood::ruled_out;
  EXPECT_TRUE(ruled_out);
  c.network = nullptr;  // no view: the cause is not claimed
  for (const auto& cause : diagnose(ENODEV, Platform::linux_kernel, c).causes)
    EXPECT_NE(cause.id, "netdev_other_namespace");
}

}  // namespace
}  // namespace gidpolicy
