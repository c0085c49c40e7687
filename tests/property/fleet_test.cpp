// Fleet analysis properties: the fleet's constant-time per-pair judgement gives
// exactly the pair outcomes of the existing fabric simulation (FakeFabric, what `gidpolicy
// simulate` runs: snapshot, plan, UC QP, exchange, RtrBuilder, modify_qp through the fake's
// driver model, RTS, a message each way), for random fabrics of 2-8 hosts and every profile.
#include <gidpolicy/fakes/fake_fabric.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include "support/assert_ok.hpp"
#include "support/generators.hpp"
#include "support/policy_generators.hpp"  // showValue(Profile): every TU must see the same one
#include "support/scenario_generators.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gidpolicy {
namespace {

std::string fleet_host(std::size_t i) { return "h" + std::to_string(i); }

/// One fleet direction in the fabric's terms: delivered, and the RTR errno the fabric records
/// on the direction whose sender's modify_qp failed.
struct Seen {
  bool delivered;
  std::optional<int> rtr_errno;
  LinkOutcome outcome;  // both report the link judgment's outcome (link.hpp)
  friend bool operator==(const Seen&, const Seen&) = default;
};

std::string show(const Seen& s) {
  return std::string(s.delivered ? "delivered" : "not delivered") + " " + std::string(to_string(s.outcome)) +
         (s.rtr_errno ? " (RTR errno " + std::to_string(*s.rtr_errno) + ")" : "");
}

Seen fleet_direction(const fleet::Analysis& an, const fleet::Direction& d, std::uint32_t sender) {
  Seen s{d.ok(), std::nullopt, d.outcome};
  // The fabric keeps the errno on the sender's direction when the sender's own modify_qp failed
  // (a builder refusal has none).
  if (d.outcome == LinkOutcome::rtr_error && d.culprit == sender && an.causes()[d.cause].err != 0)
    s.rtr_errno = an.causes()[d.cause].err;
  return s;
}

/// What `gidpolicy show --json` prints on a host whose port is `t`: the table read through the
/// verbs seam (the fleet's real input; the fabric plans on the same read).
GidTable host_snapshot(const GidTable& t, const std::optional<DriverModel>& driver) {
  fakes::FakeVerbs v;
  RC_ASSERT(v.add_port(t, driver).has_value());
  auto s = verbs::snapshot(v, t.port().device, t.port().port, {.allow_inactive = true});
  RC_ASSERT(s.has_value());
  return VALUE_OR_FAIL(std::move(s));
}

/// The fleet's input for these hosts: each one's `show --json` snapshot under `driver`.
std::vector<fleet::HostSnapshot> host_snapshots(const std::vector<GidTable>& tables,
                                                const std::optional<DriverModel>& driver) {
  std::vector<fleet::HostSnapshot> hosts;
  for (std::size_t i = 0; i < tables.size(); ++i)
    hosts.push_back({fleet_host(i), "generated", {host_snapshot(tables[i], driver)}});
  return hosts;
}

/// `hosts` is host_snapshots(tables, driver): it depends on no profile, so a case that checks
/// several profiles on one fabric reads it once.
void check_same(const std::vector<GidTable>& tables, const std::vector<fleet::HostSnapshot>& hosts,
                const Profile& profile, fleet::Pairing topology, std::optional<DriverModel> driver) {
  fakes::FakeFabric fabric;
  for (std::size_t i = 0; i < tables.size(); ++i)
    RC_ASSERT(fabric.add_host({fleet_host(i), tables[i], profile, driver}).has_value());
  auto report = fabric.connect(topology);
  RC_ASSERT(report.has_value());

  fleet::Topology topo;
  topo.pairing = topology == fleet::Pairing::ring ? fleet::Pairing::ring : fleet::Pairing::mesh;
  // Each host has one port: "" selects it (its device name differs between hosts).
  auto an = fleet::Analysis::run(hosts, topo, {.profile = profile, .driver = driver, .threads = 2});
  RC_ASSERT(an.has_value());
  const auto& a = an.value();
  RC_ASSERT(a.link_count() == report.value().pairs.size());
  std::size_t connected = 0;
  for (std::uint64_t k = 0; k < a.link_count(); ++k) {
    const fleet::Link l = a.link(k);
    const auto& pair = report.value().pairs[k];
    const std::string ha = a.host(a.sides()[l.a].host).host, hb = a.host(a.sides()[l.b].host).host;
    RC_ASSERT(ha == pair.a);
    RC_ASSERT(hb == pair.b);
    const Seen fab_ab{pair.a_to_b.delivered, pair.a_to_b.rtr_errno, pair.a_to_b.outcome};
    const Seen fab_ba{pair.b_to_a.delivered, pair.b_to_a.rtr_errno, pair.b_to_a.outcome};
    const Seen fl_ab = fleet_direction(a, l.a_to_b, l.a);
    const Seen fl_ba = fleet_direction(a, l.b_to_a, l.b);
    if (!(fab_ab == fl_ab) || !(fab_ba == fl_ba)) {
      RC_FAIL(profile.spec() + " " + std::string(to_string(topology)) + ": " + ha + " <-> " + hb +
              ": fabric " + show(fab_ab) + " / " + show(fab_ba) + " (" + pair.why() + "), fleet " +
              show(fl_ab) + " / " + show(fl_ba) + " (" + a.describe(l.a_to_b) + "; " + a.describe(l.b_to_a) +
              ")\n" + report.value().to_string());
    }
    // The same plan on each side: what it advertises and routes from.
    RC_ASSERT(a.sides()[l.a].advertised == pair.a_advertised);
    RC_ASSERT(a.sides()[l.b].advertised == pair.b_advertised);
    RC_ASSERT(a.sides()[l.a].sgid_index == pair.a_sgid_index);
    RC_ASSERT(a.sides()[l.b].sgid_index == pair.b_sgid_index);
    connected += pair.connected() ? 1u : 0u;
  }
  RC_ASSERT(a.summary().connected == connected);
  RC_ASSERT(a.summary().links == report.value().pairs.size());
  RC_CLASSIFY(connected == a.link_count(), "all connected");
  RC_CLASSIFY(connected == 0, "none connected");
}

RC_GTEST_PROP(Fleet, prop_fleet_pairs_equal_the_fabric_simulation_for_every_profile, ()) {
  const auto tables = *test::gen_host_tables(2, 8);
  const auto topology = *rc::gen::element(fleet::Pairing::mesh, fleet::Pairing::ring);
  const auto hosts = host_snapshots(tables, std::nullopt);
  for (const Profile& profile : profiles::all()) check_same(tables, hosts, profile, topology, std::nullopt);
}

RC_GTEST_PROP(Fleet, prop_fleet_pairs_equal_the_fabric_simulation_for_random_profiles_and_drivers, ()) {
  // Profiles beyond the named ones (ranked options, literal source indices, first(...)) and a
  // driver forced on every host (`--platform`), as `simulate --platform` does.
  const auto tables = *test::gen_host_tables(2, 8);
  const auto topology = *rc::gen::element(fleet::Pairing::mesh, fleet::Pairing::ring);
  const Profile profile = *test::gen_profile();
  const auto driver =
      *rc::gen::element(std::optional<DriverModel>{}, std::optional(DriverModel::linux_kernel()),
                        std::optional(DriverModel::apple_thunderbolt()));
  check_same(tables, host_snapshots(tables, driver), profile, topology, driver);
}

RC_GTEST_PROP(Fleet, prop_fleet_mesh_judges_every_link_in_the_same_order_by_index_and_by_range, ()) {
  // link(k) (random access) and for_each_link (the streaming walk) agree: the two index
  // computations of the triangular mesh order cannot drift apart.
  const auto tables = *test::gen_host_tables(2, 8);
  const auto copies = *rc::gen::inRange<std::size_t>(1, 6);
  std::vector<fleet::HostSnapshot> hosts;
  for (std::size_t c = 0; c < copies; ++c)
    for (std::size_t i = 0; i < tables.size(); ++i)
      hosts.push_back({fleet_host(c * tables.size() + i), "generated", {tables[i]}});
  auto an = fleet::Analysis::run(hosts, {}, {.profile = profiles::jaccl()});
  RC_ASSERT(an.has_value());
  std::uint64_t k = 0;
  an.value().for_each_link(0, an.value().link_count(), [&](const fleet::Link& l) {
    const fleet::Link r = an.value().link(k);
    RC_ASSERT(l.index == k);
    RC_ASSERT(r.a == l.a);
    RC_ASSERT(r.b == l.b);
    RC_ASSERT(r.a_to_b.outcome == l.a_to_b.outcome);
    RC_ASSERT(r.b_to_a.cause == l.b_to_a.cause);
    ++k;
  });
  RC_ASSERT(k == hosts.size() * (hosts.size() - 1) / 2);
}

/// A `show --json` document of the shape printed before version 2 of the tables document (port
/// objects, each with its host: what clusters keep on disk), with a key a newer version might add.
nlohmann::ordered_json show_document(const std::vector<GidTable>& tables, const std::string& host) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::array();
  for (const auto& t : tables) {
    const PortInfo& p = t.port();
    nlohmann::ordered_json j;
    j["host"] = host;
    j["device"] = p.device;
    j["port"] = p.port;
    j["state"] = std::string(to_string(p.state));
    j["link_layer"] = to_string(p.link_layer);
    j["gid_tbl_len"] =
        p.gid_tbl_len ? nlohmann::ordered_json(*p.gid_tbl_len) : nlohmann::ordered_json(nullptr);
    j["active_mtu"] = mtu_bytes(p.active_mtu);
    j["lid"] = p.lid;
    j["holes"] = std::string(to_string(t.holes()));
    j["future"] = {{"nested", {1, 2.5e3, -3, true, nullptr, "x\u00e9\"y"}}};
    auto entries = nlohmann::ordered_json::array();
    for (const auto& e : t) {
      nlohmann::ordered_json je;
      je["index"] = e.index;
      je["state"] = std::string(to_string(e.state));
      je["gid"] = e.state == EntryState::valid ? nlohmann::ordered_json(e.gid.to_string())
                                               : nlohmann::ordered_json(nullptr);
      je["type"] = std::string(to_string(e.type));
      je["ipv4"] = nullptr;
      je["netdev"] = e.netdev.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.netdev);
      je["errno"] = e.state == EntryState::unreadable ? nlohmann::ordered_json(e.read_error.value())
                                                      : nlohmann::ordered_json(nullptr);
      je["flags"] = {"a", "b"};
      entries.push_back(std::move(je));
    }
    j["entries"] = std::move(entries);
    doc.push_back(std::move(j));
  }
  return doc;
}

RC_GTEST_PROP(Fleet, prop_snapshot_reader_reads_back_what_show_json_writes, ()) {
  // The one-pass snapshot reader against nlohmann's writer: every port and entry comes back
  // (what show --json carries: not the ifindex, and no netdev or type on a slot without a GID),
  // whatever the indentation, with unknown keys skipped.
  auto tables = *test::gen_table_set(4, 32);
  RC_PRE(!tables.empty());
  const std::string host = *rc::gen::element<std::string>("node7", "h\"q", "gpu-\xc3\xa9");
  const int indent = *rc::gen::element(-1, 0, 2);
  const std::string text = show_document(tables, host).dump(indent);
  auto snap = fleet::parse_snapshot(text, "gen.json");
  RC_ASSERT(snap.has_value());
  RC_ASSERT(snap.value().host == host);
  RC_ASSERT(snap.value().ports.size() == tables.size());
  for (std::size_t k = 0; k < tables.size(); ++k) {
    const GidTable& want = tables[k];
    const GidTable& got = snap.value().ports[k];
    RC_ASSERT(got.port() == want.port());
    RC_ASSERT(got.holes() == want.holes());
    RC_ASSERT(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      const GidEntry& w = want.entries()[i];
      const GidEntry& g = got.entries()[i];
      RC_ASSERT(g.index == w.index);
      RC_ASSERT(g.state == w.state);
      if (w.state == EntryState::valid) {
        RC_ASSERT(g.gid == w.gid);
        RC_ASSERT(g.type == w.type);
        RC_ASSERT(g.netdev == w.netdev);
      }
      if (w.state == EntryState::unreadable) RC_ASSERT(g.read_error.value() == w.read_error.value());
    }
  }
  // Cut anywhere, the document is an error, never a shorter host.
  const auto cut = *rc::gen::inRange<std::size_t>(0, text.size());
  RC_ASSERT(!fleet::parse_snapshot(std::string_view(text).substr(0, cut), "cut.json").has_value());
}

}  // namespace
}  // namespace gidpolicy
