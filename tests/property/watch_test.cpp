// Stateful property of the table watch: random sequences of GID table changes as the kernel makes them
// (an address removed, re-added first-free or at another index, its RoCE v1 twin flapping, the
// port going down and up) applied to the fake, whose events a GidWatcher turns into reports.
// After every step: the watcher reported exactly the change an independent reference computes,
// replan() followed or re-selected as documented, and a connect attempt with whatever plan the
// application holds never lets a stale GID reach modify_qp.
#include <gidpolicy/change.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/apply.hpp>
#include <gidpolicy/verbs/watch.hpp>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include "support/assert_ok.hpp"

#include <poll.h>

#include <map>
#include <optional>
#include <sstream>
#include <vector>

namespace gidpolicy {
namespace {

using verbs::VerbsCall;

constexpr std::uint32_t kLength = 16;
const char* const kDevice = "mlx5_0";

Gid address(int which) { return VALUE_OR_FAIL(Gid::parse("::ffff:10.0." + std::to_string(which) + ".1")); }

/// One kernel action on the port.
struct Step {
  enum class Op { remove, add_first_free, add_v2_at, flap_twin, port_down, port_up } op = Op::remove;
  int addr = 0;          // 0..2
  std::uint32_t at = 0;  // add_v2_at: the slot (used when free)
};

std::string to_string(const Step& s) {
  static const char* const names[] = {"remove",    "add_first_free", "add_v2_at",
                                      "flap_twin", "port_down",      "port_up"};
  return std::string(names[static_cast<int>(s.op)]) + " " + address(s.addr).to_string() +
         (s.op == Step::Op::add_v2_at ? " @" + std::to_string(s.at) : "");
}

/// The reference: where a (GID, type) sits in a table (entries are unique by construction).
std::optional<std::uint32_t> where(const std::map<std::uint32_t, GidEntry>& t, const Gid& g, GidType type) {
  for (const auto& [i, e] : t)
    if (e.gid == g && e.type == type) return i;
  return std::nullopt;
}

std::optional<std::uint32_t> first_free(const std::map<std::uint32_t, GidEntry>& t, std::uint32_t from = 0) {
  for (std::uint32_t i = from; i < kLength; ++i)
    if (!t.count(i)) return i;
  return std::nullopt;
}

/// The mutations the kernel's action makes, applied to the reference table `t` as well.
std::vector<fakes::TableMutation> mutations_for(const Step& s, std::map<std::uint32_t, GidEntry>& t,
                                                PortState& state) {
  std::vector<fakes::TableMutation> out;
  const Gid g = address(s.addr);
  auto remove = [&](GidType type) {
    if (auto i = where(t, g, type)) {
      t.erase(*i);
      out.push_back(fakes::TableMutation::emptied(kDevice, 1, *i));
    }
  };
  auto add = [&](GidType type, std::optional<std::uint32_t> at) {
    if (where(t, g, type) || !at || t.count(*at)) return;
    GidEntry e = GidEntry::valid(*at, g, type, "eth0", 4);
    t[*at] = e;
    out.push_back(fakes::TableMutation::set(kDevice, 1, e));
  };
  switch (s.op) {
    case Step::Op::remove:
      remove(GidType::roce_v1);
      remove(GidType::roce_v2);
      break;
    case Step::Op::add_first_free:  // mlx5: v1 then v2, each first-free
      add(GidType::roce_v1, first_free(t));
      add(GidType::roce_v2, first_free(t));
      break;
    case Step::Op::add_v2_at:
      add(GidType::roce_v2, s.at);
      break;
    case Step::Op::flap_twin:
      remove(GidType::roce_v1);
      add(GidType::roce_v1, first_free(t, 2));
      break;
    case Step::Op::port_down:
      state = PortState::down;
      out.push_back(fakes::TableMutation::port_state(kDevice, 1, state));
      break;
    case Step::Op::port_up:
      state = PortState::active;
      out.push_back(fakes::TableMutation::port_state(kDevice, 1, state));
      break;
  }
  return out;
}

/// The reference's classification, written from the definitions in change.hpp.
ChangeKind expected_kind(const std::map<std::uint32_t, GidEntry>& before,
                         const std::map<std::uint32_t, GidEntry>& after, const GidEntry& followed) {
  const auto b = where(before, followed.gid, followed.type);
  const auto a = where(after, followed.gid, followed.type);
  const GidType twin = followed.type == GidType::roce_v2 ? GidType::roce_v1 : GidType::roce_v2;
  const bool twin_moved = where(before, followed.gid, twin) != where(after, followed.gid, twin);
  if (b && a)
    return *b != *a ? ChangeKind::moved : (twin_moved ? ChangeKind::twin_changed : ChangeKind::unchanged);
  if (b) return ChangeKind::disappeared;
  if (a) return ChangeKind::reappeared;
  return twin_moved ? ChangeKind::twin_changed : ChangeKind::unchanged;
}

void showValue(const Step& s, std::ostream& os) { os << to_string(s); }

rc::Gen<Step> gen_step() {
  return rc::gen::build<Step>(
      rc::gen::set(&Step::op, rc::gen::weightedElement<Step::Op>({{4, Step::Op::remove},
                                                                  {3, Step::Op::add_first_free},
                                                                  {3, Step::Op::add_v2_at},
                                                                  {3, Step::Op::flap_twin},
                                                                  {1, Step::Op::port_down},
                                                                  {2, Step::Op::port_up}})),
      rc::gen::set(&Step::addr, rc::gen::inRange(0, 3)),
      rc::gen::set(&Step::at, rc::gen::inRange<std::uint32_t>(2, kLength)));
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

RC_GTEST_PROP(Watch, prop_watcher_reports_and_replans_every_change_and_no_stale_gid_reaches_modify_qp, ()) {
  const auto steps = *rc::gen::resize(40, rc::gen::container<std::vector<Step>>(gen_step()));
  // Start: link-local v1/v2 at 0/1, address 0 at 2/3 (v1/v2), as mlx5 lays them out.
  std::map<std::uint32_t, GidEntry> ref;
  const Gid ll = VALUE_OR_FAIL(Gid::parse("fe80::1"));
  ref[0] = GidEntry::valid(0, ll, GidType::roce_v1, "eth0", 4);
  ref[1] = GidEntry::valid(1, ll, GidType::roce_v2, "eth0", 4);
  ref[2] = GidEntry::valid(2, address(0), GidType::roce_v1, "eth0", 4);
  ref[3] = GidEntry::valid(3, address(0), GidType::roce_v2, "eth0", 4);
  PortState state = PortState::active;
  PortInfo port{kDevice, 1, state, LinkLayer::ethernet(), kLength, Mtu::mtu_1024, 0};
  std::vector<GidEntry> initial;
  for (const auto& [i, e] : ref) initial.push_back(e);

  fakes::FakeVerbs fake;
  RC_ASSERT(fake.add_port(VALUE_OR_FAIL(GidTable::make(port, initial))).has_value());
  auto dev = VALUE_OR_FAIL(fake.open_device(kDevice));
  auto watcher = VALUE_OR_FAIL(verbs::GidWatcher::open(fake, dev, {1}));
  const Profile profile = VALUE_OR_FAIL(parse_profile("auto:roce=v2"));
  GidTable plan_table = *watcher.table(1);
  std::optional<Plan> plan = VALUE_OR_FAIL(profile.plan(plan_table));
  RC_ASSERT(plan->selection.entry.gid == address(0));
  RC_ASSERT(watcher.follow(1, plan->selection.entry).has_value());
  GidEntry followed = plan->selection.entry;
  const PeerInfo peer{0x123, 7, VALUE_OR_FAIL(Gid::parse("::ffff:10.0.9.9")), 0, std::nullopt, std::nullopt};

  std::ostringstream story;
  for (const Step& step : steps) {
    story << to_string(step) << "; ";
    RC_LOG() << to_string(step) << "\n";
    const auto before = ref;
    const PortState state_before = state;
    const auto muts = mutations_for(step, ref, state);
    bool events = false;  // the kernel raises one per GID written, and one per link change
    for (const auto& m : muts) {
      RC_ASSERT(fake.apply(m).has_value());
      events = events || m.kind != fakes::TableMutation::Kind::port_state || state_before != state;
    }
    // Net change: a twin removed and re-added at its old slot raises events and changes nothing.
    const bool changed = before != ref || state_before != state;
    // The event-loop contract: the fd is readable exactly when something is pending.
    RC_ASSERT(readable(watcher.fd()) == events);
    auto changes = watcher.process();
    RC_ASSERT(changes.has_value());
    RC_ASSERT(!readable(watcher.fd()));
    RC_ASSERT(fake.unacked_events() == 0u);
    RC_ASSERT(changes.value().size() == (changed ? 1u : 0u));
    if (!changed) continue;
    const GidChange& c = changes.value().front();
    RC_ASSERT(c.table == VALUE_OR_FAIL(fake.table(kDevice, 1)));
    RC_ASSERT(c.port_state == state);
    const ChangeKind want = expected_kind(before, ref, followed);
    RC_ASSERT(c.kind == want);
    if (want == ChangeKind::moved || want == ChangeKind::reappeared)
      RC_ASSERT(c.new_index == where(ref, followed.gid, followed.type));

    auto next = replan(profile, *plan, c);
    if (state != PortState::active) {
      RC_ASSERT(!next);
      RC_ASSERT(next.error() == errc::port_not_active);
    } else if (auto at = where(ref, plan->selection.entry.gid, plan->selection.entry.type)) {
      // Still there (maybe elsewhere): auto:roce=v2 accepts any non-link-local v2 entry, so the
      // same GID is followed and the peer needs no news.
      RC_ASSERT(next.has_value());
      RC_ASSERT(next.value().followed);
      RC_ASSERT(!next.value().tell_peer);
      RC_ASSERT(next.value().plan.sgid_index == *at);
    } else {
      // Re-selected: what the profile picks on the new table, told to the peer when it differs.
      auto fresh = profile.plan(c.table);
      RC_ASSERT(next.has_value() == fresh.has_value());
      if (next) {
        RC_ASSERT(next.value().plan.selection.entry == fresh.value().selection.entry);
        RC_ASSERT(next.value().tell_peer == (fresh.value().selection.entry.gid != plan->selection.entry.gid));
      }
    }
    // A re-plan is never stale: its slot holds its GID, as the selected RoCE version.
    if (next) {
      const auto slot = ref.find(next.value().plan.sgid_index);
      RC_ASSERT(slot != ref.end());
      RC_ASSERT(slot->second.gid == next.value().plan.selection.entry.gid);
      RC_ASSERT(slot->second.type == next.value().plan.selection.entry.type);
      RC_ASSERT(next.value().plan.agrees());
    }
    if (next) {
      plan = next.value().plan;
      plan_table = c.table;
      followed = plan->selection.entry;
      RC_ASSERT(watcher.follow(1, followed).has_value());
    }

    // Connect with the plan the application holds (stale when replan failed).
    if (state != PortState::active || !plan) continue;
    auto qp = VALUE_OR_FAIL(fake.create_qp(dev, QpKind::uc));
    ibv_qp_attr init{};
    init.qp_state = IBV_QPS_INIT;
    init.port_num = 1;
    RC_ASSERT(fake.modify_qp(qp, init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
                  .has_value());
    const unsigned modify_before = fake.calls(VerbsCall::modify_qp);
    auto rtr = RtrBuilder(QpKind::uc, plan_table, *plan).remote(peer).build();
    RC_ASSERT(rtr.has_value());
    auto r = verbs::apply_rtr(fake, qp, dev, 1, rtr.value());
    const auto slot = ref.find(plan->sgid_index);
    const bool fresh = slot != ref.end() && slot->second.gid == plan->selection.entry.gid &&
                       slot->second.type == plan->selection.entry.type;
    if (fresh) {
      RC_ASSERT(r.has_value());
      RC_ASSERT(VALUE_OR_FAIL(fake.qp(qp)).source_gid == std::optional<Gid>(plan->selection.entry.gid));
    } else {
      RC_ASSERT(!r);
      RC_ASSERT(r.error() == errc::gid_changed);
      RC_ASSERT(fake.calls(VerbsCall::modify_qp) == modify_before);  // refused before the driver
      RC_ASSERT(VALUE_OR_FAIL(fake.qp(qp)).state == IBV_QPS_INIT);
    }
    RC_ASSERT(fake.destroy_qp(qp).has_value());
  }
  RC_TAG(steps.size() > 10 ? "long" : "short");
  RC_CLASSIFY(story.str().find("flap_twin") != std::string::npos, "twin flapped");
}

}  // namespace
}  // namespace gidpolicy
