// Stateful property: random sequences of GID table changes (addresses added, removed,
// moved to another index, replaced in place) interleaved with selection, preflight and RTR on
// the fake verbs. Invariant: a stale advertised GID is caught before modify_qp in every
// sequence. The fake's counters say whether modify_qp ran; a recording wrapper around the fake
// says what slot every INIT->RTR modify_qp routed from at the moment of the call.
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/apply.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include "support/assert_ok.hpp"
#include "support/families.hpp"
#include "support/generators.hpp"
#include "support/policy_generators.hpp"
#include "support/reference.hpp"
#include "support/scenario_generators.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

namespace gidpolicy {
namespace {

namespace ref = test::ref;
using test::AddressChange;
using verbs::VerbsCall;

/// Forwards every call to a FakeVerbs and records, for each modify_qp to RTR, the sgid_index it
/// carried and what the fake's table held at that index right then (read without a verbs call,
/// so the counters only count the application's calls).
class RecordingVerbs final : public verbs::VerbsApi {
 public:
  struct RtrCall {
    std::uint8_t sgid_index = 0;
    std::optional<GidEntry> slot;  // nullopt: nothing listed there
  };
  RecordingVerbs(fakes::FakeVerbs& fake, std::string device, std::uint32_t port)
      : fake_(fake), device_(std::move(device)), port_(port) {}

  std::vector<RtrCall> rtr_calls;

  [[nodiscard]] std::string backend_name() const override {
    return "recording(" + fake_.backend_name() + ")";
  }
  result<std::vector<std::string>> device_names() override { return fake_.device_names(); }
  result<verbs::DeviceHandle> open_device(std::string_view name) override { return fake_.open_device(name); }
  result<void> close_device(verbs::DeviceHandle d) override { return fake_.close_device(d); }
  [[nodiscard]] result<std::string> device_name(verbs::DeviceHandle d) const override {
    return fake_.device_name(d);
  }
  result<PortInfo> port_attributes(verbs::DeviceHandle d, std::uint32_t p) override {
    return fake_.port_attributes(d, p);
  }
  result<Gid> read_gid(verbs::DeviceHandle d, std::uint32_t p, std::uint32_t i) override {
    return fake_.read_gid(d, p, i);
  }
  result<GidEntry> read_gid_entry(verbs::DeviceHandle d, std::uint32_t p, std::uint32_t i) override {
    return fake_.read_gid_entry(d, p, i);
  }
  result<std::vector<verbs::GidTableRow>> read_gid_table(verbs::DeviceHandle d, std::uint32_t max) override {
    return fake_.read_gid_table(d, max);
  }
  [[nodiscard]] verbs::ReadSupport read_support(verbs::DeviceHandle d) const override {
    return fake_.read_support(d);
  }
  result<verbs::QpHandle> create_qp(verbs::DeviceHandle d, QpKind k) override {
    return fake_.create_qp(d, k);
  }
  result<void> modify_qp(verbs::QpHandle qp, const ibv_qp_attr& attr, int mask) override {
    if ((mask & IBV_QP_STATE) != 0 && attr.qp_state == IBV_QPS_RTR) {
      RtrCall c;
      c.sgid_index = attr.ah_attr.grh.sgid_index;
      const GidTable now = VALUE_OR_FAIL(fake_.table(device_, port_));
      if (const GidEntry* e = ref::at(now, c.sgid_index)) c.slot = *e;
      rtr_calls.push_back(c);
    }
    return fake_.modify_qp(qp, attr, mask);
  }
  result<verbs::QpInfo> query_qp(verbs::QpHandle qp) override { return fake_.query_qp(qp); }
  result<void> destroy_qp(verbs::QpHandle qp) override { return fake_.destroy_qp(qp); }

 private:
  fakes::FakeVerbs& fake_;
  std::string device_;
  std::uint32_t port_;
};

/// What the application believes: the table as the kernel holds it now, and what it last
/// selected and advertised (from a table that may have changed since).
struct Model {
  GidTable table;
  struct Advert {
    Profile profile;
    Plan plan;
  };
  std::optional<Advert> advert;
};

struct Sut {
  explicit Sut(const GidTable& t) : device(t.port().device), port(t.port().port), api(fake, device, port) {
    RC_ASSERT(fake.add_port(t).has_value());
    auto d = fake.open_device(device);
    RC_ASSERT(d.has_value());
    dev = d.value();
  }
  fakes::FakeVerbs fake;
  std::string device;
  std::uint32_t port;
  RecordingVerbs api;
  verbs::DeviceHandle dev;
  std::optional<verbs::PlannedPort> current;  // what the application selected through the seam
  // What the sequence exercised, for the distribution rapidcheck prints.
  unsigned refused_disagreement = 0, caught_stale = 0, caught_type_change = 0, reached_driver = 0;
};

using Cmd = rc::state::Command<Model, Sut>;

/// The slot at `index` of `t` still holds `gid` (the 16 bytes the peer learned).
bool holds(const GidTable& t, std::uint32_t index, const Gid& gid) {
  const GidEntry* e = ref::at(t, index);
  return e != nullptr && e->state == EntryState::valid && ref::raw(e->gid) == ref::raw(gid);
}

/// Not stale: the slot holds the GID, and, when both are known, as the RoCE version that was
/// selected (after a flap an address's v1 entry can land where its v2 entry was: same bytes,
/// other version, and the RTR would pass and then time out).
bool still_selected(const GidTable& t, std::uint32_t index, const Gid& gid, GidType selected_type) {
  if (!holds(t, index, gid)) return false;
  const GidType now = ref::at(t, index)->type;
  return selected_type == GidType::unknown || now == GidType::unknown || now == selected_type;
}

bool applies(const GidTable& t, const AddressChange& c) {
  const GidEntry* e = ref::at(t, c.index);
  const bool valid = e != nullptr && e->state == EntryState::valid;
  switch (c.kind) {
    case AddressChange::Kind::add:
      return test::first_free_slot(t) == c.entry.index;
    case AddressChange::Kind::remove:
    case AddressChange::Kind::replace:
      return valid;
    case AddressChange::Kind::move: {
      const GidEntry* to = ref::at(t, c.to_index);
      return valid && c.to_index < ref::length(t) && (to == nullptr || to->state == EntryState::empty);
    }
  }
  return false;
}

fakes::TableMutation to_mutation(const Sut& s, const AddressChange& c) {
  switch (c.kind) {
    case AddressChange::Kind::add:
      return fakes::TableMutation::set(s.device, s.port, c.entry);
    case AddressChange::Kind::remove:
      return fakes::TableMutation::emptied(s.device, s.port, c.index);
    case AddressChange::Kind::move:
      return fakes::TableMutation::moved_index(s.device, s.port, c.index, c.to_index);
    case AddressChange::Kind::replace:
      return fakes::TableMutation::stale_entry(s.device, s.port, c.index, c.entry.gid);
  }
  return {};
}

/// The kernel changes the table (NCCL 2157, 1819).
struct ChangeTable : Cmd {
  AddressChange change;
  explicit ChangeTable(const Model& m) : change(*test::gen_address_change(m.table)) {}
  void checkPreconditions(const Model& m) const override { RC_PRE(applies(m.table, change)); }
  void apply(Model& m) const override { m.table = test::apply_change(m.table, change); }
  void run(const Model& m, Sut& s) const override {
    RC_ASSERT(s.fake.apply(to_mutation(s, change)).has_value());
    // The fake now holds exactly what the kernel would.
    RC_ASSERT(VALUE_OR_FAIL(s.fake.table(s.device, s.port)) == test::apply_change(m.table, change));
  }
  void show(std::ostream& os) const override { os << "kernel: " << test::to_string(change); }
};

/// The application snapshots the port and selects (and would advertise the result).
struct Select : Cmd {
  Profile profile;
  // Mostly behaviours that usually select (so that connects follow), any profile otherwise.
  explicit Select(const Model&)
      : profile(*rc::gen::weightedOneOf<Profile>({{3, rc::gen::just(profiles::automatic())},
                                                  {1, rc::gen::just(profiles::jaccl_fixed())},
                                                  {3, test::gen_profile()}})) {}
  void apply(Model& m) const override {
    auto plan = profile.plan(m.table);
    if (plan)
      m.advert = Model::Advert{profile, plan.value()};
    else
      m.advert.reset();
  }
  void run(const Model& m, Sut& s) const override {
    const unsigned modify_before = s.fake.calls(VerbsCall::modify_qp);
    auto pp = verbs::plan_port(s.api, s.dev, s.port, profile);
    auto expected = profile.plan(m.table);
    RC_ASSERT(pp.has_value() == expected.has_value());
    // Selecting never touches a QP.
    RC_ASSERT(s.fake.calls(VerbsCall::modify_qp) == modify_before);
    if (!pp) {
      s.current.reset();
      return;
    }
    RC_ASSERT(pp.value().table == m.table);
    RC_ASSERT(pp.value().plan.selection.entry == expected.value().selection.entry);
    RC_ASSERT(pp.value().plan.sgid_index == expected.value().sgid_index);
    s.current = VALUE_OR_FAIL(std::move(pp));
  }
  void show(std::ostream& os) const override { os << "select " << profile.spec(); }
};

/// Preflight alone: re-read the slot and compare.
struct Preflight : Cmd {
  explicit Preflight(const Model& m) { RC_PRE(m.advert.has_value()); }
  void checkPreconditions(const Model& m) const override { RC_PRE(m.advert.has_value()); }
  void run(const Model& m, Sut& s) const override {
    const Plan& plan = s.current.value().plan;
    const unsigned modify_before = s.fake.calls(VerbsCall::modify_qp);
    auto r = verbs::preflight(s.api, s.dev, s.port, plan.sgid_index, plan.selection.entry.gid);
    const bool fresh = holds(m.table, plan.sgid_index, plan.selection.entry.gid);
    RC_ASSERT(r.has_value() == fresh);
    // A slot past gid_tbl_len (a literal @sgid=N) cannot be re-read: the driver's EINVAL.
    if (!fresh && plan.sgid_index < ref::length(m.table)) RC_ASSERT(r.error() == errc::gid_changed);
    if (!fresh && plan.sgid_index >= ref::length(m.table))
      RC_ASSERT(r.error() == std::errc::invalid_argument);
    RC_ASSERT(s.fake.calls(VerbsCall::modify_qp) == modify_before);
  }
  void show(std::ostream& os) const override { os << "preflight"; }
};

/// Create a UC QP, INIT it, build the RTR from the (possibly stale) selection and apply it with
/// gidpolicy's preflight, as apply_rtr() does in a program.
struct Connect : Cmd {
  PeerInfo peer;
  explicit Connect(const Model& m) {
    RC_PRE(m.advert.has_value());
    peer = *test::gen_peer_info_of_family(m.advert->plan.selection.entry.gid.is_ipv4_mapped());
  }
  void checkPreconditions(const Model& m) const override { RC_PRE(m.advert.has_value()); }
  void run(const Model& m, Sut& s) const override {
    const verbs::PlannedPort& cur = s.current.value();
    const Gid advertised = cur.plan.selection.entry.gid;
    auto qp = s.api.create_qp(s.dev, QpKind::uc);
    if (!qp) return;  // Apple's ~10-QP cap; nothing reached RTR
    ibv_qp_attr init{};
    init.qp_state = IBV_QPS_INIT;
    init.port_num = static_cast<std::uint8_t>(s.port);
    RC_ASSERT(
        s.api
            .modify_qp(qp.value(), init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
            .has_value());
    const unsigned modify_before = s.fake.calls(VerbsCall::modify_qp);
    const std::size_t recorded_before = s.api.rtr_calls.size();

    auto rtr = RtrBuilder(QpKind::uc, cur.table, cur.plan).remote(peer).build();
    result<void> r = rtr ? verbs::apply_rtr(s.api, qp.value(), s.dev, s.port, rtr.value())
                         : result<void>(fail(rtr.error()));
    const unsigned rtr_calls = s.fake.calls(VerbsCall::modify_qp) - modify_before;

    const bool agreed = cur.plan.agrees();  // at selection time (jaccl's literal 1 may not)
    // The type preflight follows: the selected slot's, as the snapshot listed it.
    const GidEntry* selected_slot = ref::at(cur.table, cur.plan.sgid_index);
    const GidType selected_type = selected_slot ? selected_slot->type : GidType::unknown;
    const bool fresh = still_selected(m.table, cur.plan.sgid_index, advertised, selected_type);
    const bool type_changed = holds(m.table, cur.plan.sgid_index, advertised) && !fresh;
    if (rtr && !agreed) {
      ++s.refused_disagreement;
      RC_ASSERT(!r);
      RC_ASSERT(r.error() == errc::disagreement);
    } else if (rtr && !fresh) {
      ++(type_changed ? s.caught_type_change : s.caught_stale);
      RC_ASSERT(!r);
      RC_ASSERT(r.error() == errc::gid_changed);
    } else if (rtr) {
      ++s.reached_driver;
      RC_ASSERT(rtr_calls == 1u);
    }
    // The invariant: modify_qp ran only when the slot held the advertised GID...
    if (!(rtr && agreed && fresh)) {
      RC_ASSERT(rtr_calls == 0u);
      RC_ASSERT(VALUE_OR_FAIL(s.fake.qp(qp.value())).state == IBV_QPS_INIT);
    }
    // ... and every RTR the driver ever saw routed from a slot holding that GID at that moment.
    for (std::size_t k = recorded_before; k < s.api.rtr_calls.size(); ++k) {
      const auto& call = s.api.rtr_calls[k];
      RC_ASSERT(call.sgid_index == cur.plan.sgid_index);
      RC_ASSERT(call.slot.has_value());
      RC_ASSERT(call.slot->state == EntryState::valid);
      RC_ASSERT(call.slot->gid == advertised);
      RC_ASSERT(still_selected(VALUE_OR_FAIL(GidTable::make(m.table.port(), {*call.slot})), call.sgid_index,
                               advertised, selected_type));
    }
    if (r) {
      const auto q = VALUE_OR_FAIL(s.fake.qp(qp.value()));
      RC_ASSERT(q.state == IBV_QPS_RTR);
      // With a GRH the packets carry the slot's GID: the advertised one. (InfiniBand inside one
      // subnet routes by LID, without a GRH and so without a source GID.)
      if (rtr.value().is_global()) {
        RC_ASSERT(q.source_gid.has_value());
        RC_ASSERT(*q.source_gid == advertised);
      }
    }
    RC_ASSERT(s.api.destroy_qp(qp.value()).has_value());
  }
  void show(std::ostream& os) const override {
    os << "connect to ";
    showValue(peer, os);
  }
};

RC_GTEST_PROP(Stateful, prop_stale_advertised_gid_is_caught_before_modify_qp, ()) {
  const GidTable generated = *test::gen_family_table();
  // The fake always reports a length (give the model the same one), and a snapshot lists only
  // slots holding a GID (with Holes::empty an unlisted slot is an empty one: the same table).
  PortInfo port = generated.port();
  if (!port.gid_tbl_len) port.gid_tbl_len = std::max<std::uint32_t>(generated.length(), 8);
  std::vector<GidEntry> listed;
  std::copy_if(generated.begin(), generated.end(), std::back_inserter(listed),
               [](const GidEntry& e) { return e.state != EntryState::empty; });
  const GidTable t = VALUE_OR_FAIL(GidTable::make(port, listed, generated.holes()));
  Model m0{t, std::nullopt};
  Sut sut(t);
  // Sequences of up to about 50 commands (half rapidcheck's default scale): long enough for
  // select / change / change / connect interleavings, short enough for the default suite.
  const auto commands = *rc::gen::scale(
      0.5, rc::state::gen::commands(m0, rc::state::gen::execOneOfWithArgs<ChangeTable, ChangeTable, Select,
                                                                          Preflight, Connect, Connect>()));
  rc::state::runAll(commands, m0, sut);
  // Every RTR the recording wrapper saw went through the fake (and was checked above).
  RC_ASSERT(sut.fake.calls(VerbsCall::modify_qp) >= sut.api.rtr_calls.size());
  RC_CLASSIFY(sut.caught_stale > 0, "a stale GID was caught");
  RC_CLASSIFY(sut.caught_type_change > 0, "the same GID as the other RoCE version was caught");
  RC_CLASSIFY(sut.refused_disagreement > 0, "a disagreeing RTR was refused");
  RC_CLASSIFY(sut.reached_driver > 0, "an RTR reached the driver");
}

}  // namespace
}  // namespace gidpolicy
