// gidpolicy/fleet.hpp: host snapshots, JACCL device files, pairing models and the
// acceptance cases of the fleet analysis (JACCL's documented 4-rank device file; a rail broken on one host).
#include <gidpolicy/fakes/fake_fabric.hpp>
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/profiles.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

namespace gidpolicy {
namespace {

namespace fs = std::filesystem;
using fleet::Analysis;
using fleet::HostSnapshot;
using fleet::Pairing;

fs::path jaccl_dir() { return test::example_tables_dir().parent_path() / "fleet" / "jaccl"; }

std::vector<HostSnapshot> jaccl_hosts() {
  const std::vector<std::string> args{(jaccl_dir() / "hosts").string()};
  auto hosts = fleet::read_snapshots(args);
  EXPECT_TRUE(hosts.has_value()) << hosts.error().what();
  return hosts ? VALUE_OR_FAIL(std::move(hosts)) : std::vector<HostSnapshot>{};
}

fleet::Topology jaccl_topology(bool prefer_ring = false) {
  fleet::Topology t;
  t.pairing = Pairing::jaccl;
  auto d = fleet::read_jaccl_devices((jaccl_dir() / "devices.json").string());
  EXPECT_TRUE(d.has_value()) << d.error().what();
  if (d) t.jaccl = VALUE_OR_FAIL(std::move(d));
  t.jaccl_prefer_ring = prefer_ring;
  return t;
}

/// The host names at the two ends of every failed link.
std::vector<std::pair<std::string, std::string>> failed_links(const Analysis& an) {
  std::vector<std::pair<std::string, std::string>> out;
  an.for_each_link(0, an.link_count(), [&](const fleet::Link& l) {
    if (!l.connected())
      out.emplace_back(an.host(an.sides()[l.a].host).host, an.host(an.sides()[l.b].host).host);
  });
  return out;
}

// ---- acceptance: JACCL's documented device file over four Macs, one with its mapped GID at 2

TEST(FleetJaccl, DocumentedDeviceFileParsesAsJacclReadsIt) {
  auto t = jaccl_topology();
  ASSERT_EQ(t.jaccl.ranks(), 4u);
  EXPECT_TRUE(t.jaccl.names[0][0].empty());
  EXPECT_EQ(t.jaccl.names[0][1], std::vector<std::string>{"rdma_en5"});
  EXPECT_EQ(t.jaccl.names[3][2], std::vector<std::string>{"rdma_en5"});
  EXPECT_TRUE(t.jaccl.valid_mesh());
  EXPECT_TRUE(t.jaccl.valid_ring());
}

TEST(FleetJaccl, UnderJacclExactlyTheLinksTouchingTheMappedAtTwoHostFail) {
  auto an = Analysis::run(jaccl_hosts(), jaccl_topology(), {.profile = profiles::jaccl()});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  EXPECT_EQ(an.value().topology_name(), "jaccl-mesh");
  EXPECT_EQ(an.value().link_count(), 6u);
  const auto failed = failed_links(an.value());
  ASSERT_EQ(failed.size(), 3u);
  for (const auto& [a, b] : failed) EXPECT_TRUE(a == "m3-ultra-3" || b == "m3-ultra-3") << a << " <-> " << b;
  // One cause per device of that Mac, each from its RTR (Apple's errno 22, index 1 empty).
  ASSERT_EQ(an.value().summary().groups.size(), 3u);
  for (const auto& g : an.value().summary().groups) {
    const auto& c = an.value().causes()[g.cause];
    EXPECT_EQ(c.outcome, LinkOutcome::rtr_error);
    EXPECT_EQ(c.err, 22);
    EXPECT_EQ(g.hosts, 1u);
    EXPECT_EQ(g.links, 1u);
    EXPECT_NE(c.text.find("sgid_index 1 is empty"), std::string::npos) << c.text;
    EXPECT_NE(
        an.value().describe(g).find("on 1 host (m3-ultra-3): RTR from sgid_index 1 failed: EINVAL (22)"),
        std::string::npos)
        << an.value().describe(g);
  }
}

TEST(FleetJaccl, UnderAutoEveryLinkConnects) {
  auto an = Analysis::run(jaccl_hosts(), jaccl_topology(), {.profile = profiles::automatic()});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  EXPECT_TRUE(an.value().summary().all_connected());
  EXPECT_EQ(an.value().summary().connected, 6u);
}

TEST(FleetJaccl, RingUseConnectsEachRankWithItsNeighboursOnly) {
  // JACCL_RING set and the file a valid ring: rank i's device towards i+1 with rank i+1's
  // device towards i, one link per neighbour pair.
  auto an = Analysis::run(jaccl_hosts(), jaccl_topology(true), {.profile = profiles::jaccl()});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  EXPECT_EQ(an.value().topology_name(), "jaccl-ring");
  ASSERT_EQ(an.value().link_count(), 4u);
  std::set<std::string> devices;
  for (std::uint64_t k = 0; k < 4; ++k) {
    const auto l = an.value().link(k);
    const auto& a = an.value().sides()[l.a];
    const auto& b = an.value().sides()[l.b];
    EXPECT_EQ(a.host, k);
    EXPECT_EQ(b.host, (k + 1) % 4);
    // devices[i][i+1] on rank i, devices[i+1][i] on rank i+1 (the documented file).
    const char* expected_a[] = {"rdma_en5", "rdma_en3", "rdma_en5", "rdma_en3"};
    const char* expected_b[] = {"rdma_en5", "rdma_en3", "rdma_en5", "rdma_en3"};
    EXPECT_EQ(a.device, expected_a[k]);
    EXPECT_EQ(b.device, expected_b[k]);
  }
  // m3-ultra-3 is rank 2: the ring links 1-2 and 2-3 fail.
  EXPECT_EQ(failed_links(an.value()).size(), 2u);
}

// One rank's devices under JACCL's choice of layout: what `env --for jaccl` checks on one host
// and what the fleet lays out per rank.
TEST(FleetJaccl, UsesRingAndDevicesOfFollowJacclsChoice) {
  const auto mesh_and_ring = jaccl_topology().jaccl;
  EXPECT_EQ(mesh_and_ring.uses_ring(false).value(), false);  // both valid: the mesh unless asked
  EXPECT_EQ(mesh_and_ring.uses_ring(true).value(), true);
  EXPECT_EQ(mesh_and_ring.devices_of(0, false),
            (std::vector<std::string>{"rdma_en3", "rdma_en4", "rdma_en5"}));
  // Ring: rank 0 towards rank 3 (rdma_en3) and rank 1 (rdma_en5).
  EXPECT_EQ(mesh_and_ring.devices_of(0, true), (std::vector<std::string>{"rdma_en3", "rdma_en5"}));
  EXPECT_TRUE(mesh_and_ring.devices_of(4, false).empty());
  // Only a ring: taken even when not asked for; its lists are read whole.
  auto ring = fleet::parse_jaccl_devices(R"([[null, ["en2", "en10"], null, "en7"], ["en7", null, "en2", null],
                                             [null, "en7", null, "en2"], ["en2", null, "en7", null]])");
  ASSERT_TRUE(ring.has_value()) << ring.error().what();
  ASSERT_FALSE(ring.value().valid_ring());  // rank 0 has two devices towards rank 1, one towards 3
  auto ring2 = fleet::parse_jaccl_devices(R"([[null, "en2", null, "en10"], ["en7", null, "en2", null],
                                              [null, "en7", null, "en2"], ["en2", null, "en7", null]])");
  ASSERT_TRUE(ring2.has_value());
  EXPECT_EQ(ring2.value().uses_ring(false).value(), true);
  EXPECT_EQ(ring2.value().devices_of(0, true), (std::vector<std::string>{"en2", "en10"}));  // natural order
  auto neither = fleet::parse_jaccl_devices(R"([[null, "a", null, null], ["a", null, null, null],
                                               [null, null, null, "b"], [null, null, "b", null]])");
  ASSERT_TRUE(neither.has_value());
  ASSERT_FALSE(neither.value().uses_ring(false).has_value());
  EXPECT_NE(neither.value().uses_ring(false).error().what().find("neither a valid mesh"), std::string::npos);
}

TEST(FleetJaccl, AFileThatIsNeitherMeshNorRingIsRefusedAsJacclWould) {
  fleet::Topology t;
  t.pairing = Pairing::jaccl;
  auto d = fleet::parse_jaccl_devices(R"([[null, "a", null, null], ["a", null, null, null],
                                          [null, null, null, "b"], [null, null, "b", null]])");
  ASSERT_TRUE(d.has_value());
  t.jaccl = d.value();
  auto an = Analysis::run(jaccl_hosts(), t, {});
  ASSERT_FALSE(an.has_value());
  EXPECT_NE(an.error().what().find("neither a valid mesh"), std::string::npos) << an.error().what();
  EXPECT_NE(an.error().what().find("rank 0 has no device to rank 2"), std::string::npos) << an.error().what();
}

TEST(FleetJaccl, RankCountMustMatchHostCount) {
  auto hosts = jaccl_hosts();
  hosts.pop_back();
  auto an = Analysis::run(std::move(hosts), jaccl_topology(), {});
  ASSERT_FALSE(an.has_value());
  EXPECT_NE(an.error().what().find("4 ranks but 3 hosts"), std::string::npos) << an.error().what();
}

TEST(FleetJaccl, DeviceFileErrorsNameTheEntry) {
  auto bad_row = fleet::parse_jaccl_devices(R"([[null, "a"], ["a"]])", "dev.json");
  ASSERT_FALSE(bad_row.has_value());
  EXPECT_NE(bad_row.error().what().find("dev.json: [1]: has 1 entries"), std::string::npos)
      << bad_row.error().what();
  auto bad_name = fleet::parse_jaccl_devices(R"([[null, 3], ["a", null]])", "dev.json");
  ASSERT_FALSE(bad_name.has_value());
  EXPECT_NE(bad_name.error().what().find("dev.json: [0][1]"), std::string::npos) << bad_name.error().what();
  auto syntax = fleet::parse_jaccl_devices("[[null,\n \"a\"", "dev.json");
  ASSERT_FALSE(syntax.has_value());
  EXPECT_NE(syntax.error().what().find("dev.json:2:"), std::string::npos) << syntax.error().what();
  auto deep = fleet::parse_jaccl_devices("[[[[[\"a\"]]]]]", "dev.json");
  ASSERT_FALSE(deep.has_value());
  // Several names per entry (JACCL's ring with several cables per neighbour).
  auto multi = fleet::parse_jaccl_devices(R"([[null, ["a", "b"]], [["c", "d"], null]])");
  ASSERT_TRUE(multi.has_value());
  EXPECT_EQ(multi.value().names[1][0], (std::vector<std::string>{"c", "d"}));
}

// ---- acceptance: rail-aligned 8-NIC hosts, one host's NIC 5 lost its IPv4 GID

GidTable nic(int host, int k, bool lost_ipv4) {
  PortInfo p;
  p.device = "mlx5_" + std::to_string(k);
  p.link_layer = LinkLayer::ethernet();
  p.gid_tbl_len = 256;
  const Gid ll = VALUE_OR_FAIL(Gid::parse("fe80::2:" + std::to_string(host) + ":" + std::to_string(k)));
  std::vector<GidEntry> e{GidEntry::valid(0, ll, GidType::roce_v1), GidEntry::valid(1, ll, GidType::roce_v2)};
  if (!lost_ipv4) {
    const Gid v4 =
        VALUE_OR_FAIL(Gid::parse("::ffff:10." + std::to_string(k) + ".0." + std::to_string(host + 1)));
    e.push_back(GidEntry::valid(2, v4, GidType::roce_v1));
    e.push_back(GidEntry::valid(3, v4, GidType::roce_v2));
  }
  return VALUE_OR_FAIL(GidTable::make(p, std::move(e)));
}

std::vector<HostSnapshot> rail_hosts(int n, int broken_host, int broken_nic) {
  std::vector<HostSnapshot> hosts;
  for (int h = 0; h < n; ++h) {
    HostSnapshot s{"gpu" + std::to_string(h), "synthetic", {}};
    // Listed out of order on purpose: rails follow natural name order, not file order.
    for (int k = 7; k >= 0; --k) s.ports.push_back(nic(h, k, h == broken_host && k == broken_nic));
    hosts.push_back(std::move(s));
  }
  return hosts;
}

TEST(FleetRail, ExactlyTheBrokenRailsLinksFromThatHostFail) {
  // Every profile that connects the healthy fleet through its IPv4 GIDs (auto, jaccl-fixed, ds4
  // on this mlx5 layout; JACCL's literal index 1 routes from the fe80 entry and fails everywhere)
  // fails exactly the n-1 links of rail 5 that touch the host whose NIC 5 lost its IPv4 address.
  const int n = 6, broken = 3;
  fleet::Topology t;
  t.pairing = Pairing::rail;
  std::set<std::string> checked;
  for (const Profile& profile : profiles::all()) {
    auto healthy = Analysis::run(rail_hosts(n, -1, -1), t, {.profile = profile});
    ASSERT_TRUE(healthy.has_value()) << healthy.error().what();
    if (!healthy.value().summary().all_connected()) continue;
    checked.insert(profile.spec());
    auto an = Analysis::run(rail_hosts(n, broken, 5), t, {.profile = profile});
    ASSERT_TRUE(an.has_value()) << an.error().what();
    const auto& a = an.value();
    if (a.summary().all_connected()) {
      // Only profiles that never use the IPv4 GID: both route from the fe80 v2 entry at index 1
      // (JACCL before April 2026, and ds4 on Linux without a control address to match).
      EXPECT_TRUE(profile.spec() == "jaccl-legacy" || profile.spec() == "ds4-linux") << profile.spec();
      continue;
    }
    EXPECT_EQ(a.link_count(), 8u * n * (n - 1) / 2) << profile.spec();
    std::size_t failed = 0;
    a.for_each_link(0, a.link_count(), [&](const fleet::Link& l) {
      const bool on_broken = l.lane == 5 && (a.sides()[l.a].host == broken || a.sides()[l.b].host == broken);
      EXPECT_EQ(a.sides()[l.a].device, "mlx5_" + std::to_string(l.lane)) << a.describe_link(l);
      EXPECT_EQ(a.sides()[l.b].device, "mlx5_" + std::to_string(l.lane)) << a.describe_link(l);
      EXPECT_EQ(!l.connected(), on_broken) << profile.spec() << ": " << a.describe_link(l) << ": "
                                           << a.describe(l.a_to_b) << " / " << a.describe(l.b_to_a);
      failed += l.connected() ? 0u : 1u;
    });
    EXPECT_EQ(failed, static_cast<std::size_t>(n - 1)) << profile.spec();
    ASSERT_EQ(a.summary().groups.size(), 1u) << profile.spec();
    EXPECT_EQ(a.causes()[a.summary().groups[0].cause].device, "mlx5_5");
    EXPECT_EQ(a.summary().groups[0].hosts, 1u);
    EXPECT_EQ(a.summary().groups[0].links, static_cast<std::uint64_t>(n - 1));
  }
  EXPECT_TRUE(checked.count("auto") && checked.count("jaccl-fixed") && checked.count("ds4"))
      << "profiles that connect the healthy fleet: " << checked.size();
}

TEST(FleetRail, NamedRailsAndAMissingDevice) {
  auto hosts = rail_hosts(3, -1, -1);
  hosts[1].ports.erase(hosts[1].ports.begin());  // gpu1 has no mlx5_7
  fleet::Topology t;
  t.pairing = Pairing::rail;
  t.rails = {"mlx5_7", "mlx5_0"};
  auto an = Analysis::run(std::move(hosts), t, {});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  EXPECT_EQ(an.value().link_count(), 6u);
  EXPECT_EQ(an.value().summary().connected, 4u);
  ASSERT_EQ(an.value().summary().groups.size(), 1u);
  const auto& g = an.value().summary().groups[0];
  EXPECT_EQ(an.value().causes()[g.cause].outcome, LinkOutcome::unusable);
  EXPECT_EQ(an.value().describe(g),
            "mlx5_7 on 1 host (gpu1): has no mlx5_7 port 1 in its snapshot -> 2 links fail");
}

TEST(FleetNaturalOrder, DigitRunsCompareByValue) {
  EXPECT_TRUE(fleet::natural_less("mlx5_2", "mlx5_10"));
  EXPECT_FALSE(fleet::natural_less("mlx5_10", "mlx5_2"));
  EXPECT_TRUE(fleet::natural_less("a", "b"));
  EXPECT_TRUE(fleet::natural_less("node9", "node010"));
  EXPECT_FALSE(fleet::natural_less("x", "x"));
  EXPECT_TRUE(fleet::natural_less("x", "x1"));
}

// ---- the QP cap of Apple's driver at fleet size: same pairs as the fabric

TEST(FleetMesh, ApplesQpCapFailsTheSamePairsAsTheFabric) {
  // 13 Thunderbolt hosts in one mesh over one device: each needs 12 QPs, the driver allows 10,
  // so each host's 11th and 12th pairs (in the fabric's pair order) fail to create a QP. One
  // host cannot take part at all, which shifts the others' counts.
  fakes::FakeFabric fabric;
  std::vector<HostSnapshot> hosts;
  for (int h = 0; h < 13; ++h) {
    PortInfo p;
    p.device = "rdma_en2";
    p.link_layer = LinkLayer::thunderbolt();
    p.gid_tbl_len = 16;
    std::vector<GidEntry> e{GidEntry::valid(0, VALUE_OR_FAIL(Gid::parse("fe80::1:" + std::to_string(h))))};
    if (h != 4)
      e.push_back(GidEntry::valid(1, VALUE_OR_FAIL(Gid::parse("::ffff:10.0.0." + std::to_string(h + 1)))));
    const auto t = VALUE_OR_FAIL(GidTable::make(p, std::move(e)));
    ASSERT_TRUE(fabric.add_host({"h" + std::to_string(h), t, profiles::jaccl(), std::nullopt}).has_value());
    hosts.push_back({"h" + std::to_string(h), "synthetic", {t}});
  }
  auto report = fabric.connect(fleet::Pairing::mesh);
  ASSERT_TRUE(report.has_value());
  auto an = Analysis::run(hosts, {}, {.profile = profiles::jaccl()});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  ASSERT_EQ(an.value().link_count(), report.value().pairs.size());
  std::size_t refused = 0;
  for (std::uint64_t k = 0; k < an.value().link_count(); ++k) {
    const auto l = an.value().link(k);
    const auto& p = report.value().pairs[k];
    EXPECT_EQ(l.a_to_b.ok(), p.a_to_b.delivered) << p.a << " <-> " << p.b << ": " << p.why();
    EXPECT_EQ(l.b_to_a.ok(), p.b_to_a.delivered) << p.a << " <-> " << p.b << ": " << p.why();
    if (l.a_to_b.outcome == LinkOutcome::qp_refused || l.b_to_a.outcome == LinkOutcome::qp_refused) {
      ++refused;
      EXPECT_NE(p.why().find("cannot create a QP"), std::string::npos) << p.why();
    }
  }
  EXPECT_GT(refused, 0u);
}

// ---- fleet-wide conflicts: one address on several hosts, rails that share a range

std::vector<HostSnapshot> copies_of(const GidTable& t, int n, const std::string& prefix = "node") {
  std::vector<HostSnapshot> hosts;
  for (int h = 0; h < n; ++h) hosts.push_back({prefix + std::to_string(h), "synthetic", {t}});
  return hosts;
}

GidTable nccl769_table() {
  auto tables = formats::read_tables_file(test::example_tables_dir() / "nccl-769.devinfo.txt");
  EXPECT_TRUE(tables.has_value());
  return tables ? tables.value().at(0) : GidTable{};
}

TEST(FleetConflicts, HostsMadeFromOneTableShareAnAddressAndNoLinkIsReliable) {
  auto an = Analysis::run(copies_of(nccl769_table(), 3), {}, {.profile = profiles::automatic()});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  const Analysis& a = an.value();
  // The fabric model connects every pair; the fleet knows better.
  EXPECT_TRUE(a.summary().all_connected());
  EXPECT_EQ(a.summary().unreliable, 3u);
  EXPECT_FALSE(a.ok());
  ASSERT_EQ(a.conflicts().size(), 1u);
  const fleet::Conflict& c = a.conflicts()[0];
  EXPECT_EQ(c.kind, fleet::ConflictKind::duplicate_address);
  EXPECT_TRUE(c.fatal);
  EXPECT_EQ(c.gid_count, 1u)
      << "the fe80 GIDs repeat too, but link-local ones are not addresses to answer for";
  EXPECT_EQ(c.gids.at(0), VALUE_OR_FAIL(Gid::parse("::ffff:200.0.209.6")));
  EXPECT_EQ(c.host_count, 3u);
  EXPECT_EQ(c.hosts, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(c.links, 3u);
  a.for_each_link(0, a.link_count(), [&](const fleet::Link& l) {
    EXPECT_TRUE(l.connected());
    EXPECT_FALSE(l.reliable()) << a.describe_link(l);
    EXPECT_EQ(l.conflict, 0u);
  });
  const std::string text = a.describe(c);
  for (const char* want : {"::ffff:200.0.209.6 (200.0.209.6)", "on 3 hosts (node0, node1, node2)",
                           "mlx5_bond_0 on node0", "3 links not reliably connected"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
}

TEST(FleetConflicts, DistinctTablesHaveNoConflict) {
  fleet::Topology t;
  t.pairing = Pairing::rail;
  auto an = Analysis::run(rail_hosts(4, -1, -1), t, {.profile = profiles::automatic()});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  EXPECT_TRUE(an.value().conflicts().empty());
  EXPECT_EQ(an.value().summary().unreliable, 0u);
  EXPECT_TRUE(an.value().ok());
}

TEST(FleetConflicts, TwoThousandClonesAreOneGroupedFindingNamingAFewHosts) {
  auto an = Analysis::run(copies_of(nccl769_table(), 2000), {}, {.profile = profiles::automatic()});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  const Analysis& a = an.value();
  EXPECT_EQ(a.link_count(), 1999000u);
  EXPECT_EQ(a.summary().connected, 1999000u);
  EXPECT_EQ(a.summary().unreliable, 1999000u);
  ASSERT_EQ(a.conflicts().size(), 1u);
  EXPECT_EQ(a.conflicts()[0].host_count, 2000u);
  EXPECT_EQ(a.conflicts()[0].hosts.size(), fleet::kConflictNamed);
  EXPECT_EQ(a.conflicts()[0].links, 1999000u);
  const std::string text = a.describe(a.conflicts()[0]);
  EXPECT_NE(text.find("on 2000 hosts (node0, node1, node2, node3, node4, ...)"), std::string::npos) << text;
  EXPECT_LT(text.size(), 400u) << text;
}

TEST(FleetConflicts, AddressesSharedByTheSameHostsGroupAndGroupsSortByHostCount) {
  // Three clones of an 8-NIC host (8 addresses, one finding) and two clones of another whose
  // NIC 0 alone is duplicated (a second finding); the rail topology is otherwise healthy.
  std::vector<HostSnapshot> hosts;
  for (int h = 0; h < 3; ++h) {
    HostSnapshot s{"a" + std::to_string(h), "synthetic", {}};
    for (int k = 0; k < 8; ++k) s.ports.push_back(nic(0, k, false));
    hosts.push_back(std::move(s));
  }
  for (int h = 0; h < 2; ++h) {
    HostSnapshot s{"b" + std::to_string(h), "synthetic", {}};
    for (int k = 0; k < 8; ++k) s.ports.push_back(nic(k == 0 ? 50 : 10 + 10 * h, k, false));
    hosts.push_back(std::move(s));
  }
  fleet::Topology t;
  t.pairing = Pairing::rail;
  auto an = Analysis::run(std::move(hosts), t, {.profile = profiles::automatic()});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  const Analysis& a = an.value();
  ASSERT_EQ(a.conflicts().size(), 2u);
  EXPECT_EQ(a.conflicts()[0].host_count, 3u);
  EXPECT_EQ(a.conflicts()[0].gid_count, 8u);
  EXPECT_EQ(a.conflicts()[0].gids.size(), fleet::kConflictNamed);
  EXPECT_EQ(a.conflicts()[1].host_count, 2u);
  EXPECT_EQ(a.conflicts()[1].gid_count, 1u);
  EXPECT_EQ(a.conflicts()[1].gids.at(0), VALUE_OR_FAIL(Gid::parse("::ffff:10.0.0.51")));
  EXPECT_EQ(a.conflicts()[1].device, "mlx5_0");
  EXPECT_NE(a.describe(a.conflicts()[0]).find("8 GIDs ("), std::string::npos) << a.describe(a.conflicts()[0]);
  // Every link with an a-host's side (its addresses are held thrice) and, on rail 0, the b0-b1
  // link too: rail 0's 10 links, and 3 + 6 links on each of rails 1-7.
  EXPECT_EQ(a.summary().unreliable, 10u + 7u * 9u);
  EXPECT_EQ(a.conflicts()[0].links, 9u * 8u);
  EXPECT_EQ(a.conflicts()[1].links, 7u);
  EXPECT_FALSE(a.ok());
}

TEST(FleetConflicts, ADuplicateOnAPortNoLinkUsesStillFailsTheFleet) {
  // mlx5_0 (the mesh's device) is distinct; mlx5_9 holds one global IPv6 GID on both hosts.
  std::vector<HostSnapshot> hosts;
  for (int h = 0; h < 2; ++h) {
    PortInfo p;
    p.device = "mlx5_9";
    p.link_layer = LinkLayer::ethernet();
    const Gid g = VALUE_OR_FAIL(Gid::parse("2001:db8::5"));
    const GidTable extra = VALUE_OR_FAIL(GidTable::make(p, {GidEntry::valid(0, g, GidType::roce_v2)}));
    hosts.push_back({"h" + std::to_string(h), "synthetic", {nic(h, 0, false), extra}});
  }
  fleet::Topology t;
  t.device = "mlx5_0";
  auto an = Analysis::run(std::move(hosts), t, {.profile = profiles::automatic()});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  const Analysis& a = an.value();
  EXPECT_TRUE(a.summary().all_connected());
  EXPECT_EQ(a.summary().unreliable, 0u);
  ASSERT_EQ(a.conflicts().size(), 1u);
  EXPECT_EQ(a.conflicts()[0].links, 0u);
  EXPECT_EQ(a.conflicts()[0].device, "mlx5_9");
  EXPECT_FALSE(a.ok());
  EXPECT_NE(a.describe(a.conflicts()[0]).find("no link of this topology advertises it"), std::string::npos);
}

TEST(FleetConflicts, LinkLocalRepeatsAreNoConflict) {
  // Same fe80 GIDs (and IPv4 169.254 ones) on both hosts, distinct routable addresses.
  std::vector<HostSnapshot> hosts;
  for (int h = 0; h < 2; ++h) {
    PortInfo p;
    p.device = "rdma_en2";
    p.link_layer = LinkLayer::thunderbolt();
    p.gid_tbl_len = 16;
    const GidTable t = VALUE_OR_FAIL(GidTable::make(
        p, {GidEntry::valid(0, VALUE_OR_FAIL(Gid::parse("fe80::1"))),
            GidEntry::valid(1, VALUE_OR_FAIL(Gid::parse("::ffff:169.254.1.1"))),
            GidEntry::valid(2, VALUE_OR_FAIL(Gid::parse("::ffff:10.0.0." + std::to_string(h + 1))))}));
    hosts.push_back({"mac" + std::to_string(h), "synthetic", {t}});
  }
  auto an = Analysis::run(std::move(hosts), {}, {.profile = profiles::automatic()});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  EXPECT_TRUE(an.value().conflicts().empty());
}

TEST(FleetConflicts, RailsWhoseRangesInterleaveAreAWarningNamingTheHosts) {
  // gpu2's NIC 1 took an address inside rail 0's range (10.0.0.x): rail 0 spans 10.0.0.1-5,
  // rail 1 10.0.0.3-10.1.0.5, so they interleave.
  auto hosts = rail_hosts(5, -1, -1);
  for (auto& p : hosts[2].ports) {
    if (p.port().device != "mlx5_1") continue;
    std::vector<GidEntry> e(p.begin(), p.end());
    const Gid moved = VALUE_OR_FAIL(Gid::parse("::ffff:10.0.0.3"));
    for (auto& x : e)
      if (x.gid.is_ipv4_mapped()) x.gid = moved;
    p = VALUE_OR_FAIL(GidTable::make(p.port(), std::move(e)));
  }
  fleet::Topology t;
  t.pairing = Pairing::rail;
  auto an = Analysis::run(std::move(hosts), t, {.profile = profiles::automatic()});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  const Analysis& a = an.value();
  // gpu2's rail-1 address is gpu2's own rail-0 address too: that is a duplicate only within a
  // host, not across hosts, so the one finding is the overlap.
  ASSERT_EQ(a.conflicts().size(), 1u);
  const fleet::Conflict& c = a.conflicts()[0];
  EXPECT_EQ(c.kind, fleet::ConflictKind::rail_subnet_overlap);
  EXPECT_FALSE(c.fatal);
  EXPECT_EQ(c.device, "rail 0 (mlx5_0)");
  EXPECT_EQ(c.other_device, "rail 1 (mlx5_1)");
  EXPECT_EQ(c.detail, "10.0.0.1-10.0.0.5 and 10.0.0.3-10.1.0.5");
  EXPECT_GE(c.host_count, 1u);
  EXPECT_NE(std::find(c.hosts.begin(), c.hosts.end(), 2u), c.hosts.end());
  EXPECT_TRUE(a.ok()) << "a warning: flat subnets with source routing exist";
}

// ---- snapshots

TEST(FleetSnapshot, ReadsShowJsonAndNamesTheHost) {
  const std::string one = R"({"host": "node7", "device": "mlx5_0", "port": 1, "state": "active",
    "link_layer": "ethernet", "gid_tbl_len": 256, "active_mtu": 4096, "lid": 0, "holes": "empty",
    "some_future_key": {"ignored": true},
    "entries": [{"index": 3, "state": "valid", "gid": "::ffff:10.0.0.7", "type": "roce_v2", "ipv4": "10.0.0.7",
                 "netdev": "eth0", "errno": null, "flags": ["ipv4-mapped"]},
                {"index": 4, "state": "empty", "gid": null, "type": "unknown", "flags": ["empty"]},
                {"index": 5, "state": "unreadable", "gid": null, "errno": 22}]})";
  auto s = fleet::parse_snapshot(one, "/tmp/x/node7-file.json");
  ASSERT_TRUE(s.has_value()) << s.error().what();
  EXPECT_EQ(s.value().host, "node7");
  ASSERT_EQ(s.value().ports.size(), 1u);
  const GidTable& t = s.value().ports[0];
  EXPECT_EQ(t.port().active_mtu, Mtu::mtu_4096);
  EXPECT_EQ(t.find(3)->gid, VALUE_OR_FAIL(Gid::parse("::ffff:10.0.0.7")));
  EXPECT_EQ(t.find(3)->type, GidType::roce_v2);
  EXPECT_EQ(t.find(3)->netdev, "eth0");
  EXPECT_EQ(t.find(4)->state, EntryState::empty);
  EXPECT_EQ(t.find(5)->read_error.value(), 22);
  // HOST=FILE wins; without any name, the file name.
  EXPECT_EQ(VALUE_OR_FAIL(fleet::parse_snapshot(one, "x.json", "override")).host, "override");
  const std::string unnamed = R"([{"host": null, "device": "d", "port": 1, "entries": []}])";
  EXPECT_EQ(VALUE_OR_FAIL(fleet::parse_snapshot(unnamed, "/a/b/gpu12.json")).host, "gpu12");
}

// The tables document (version 2 is what `show --json` prints; version 1 what `convert --to json`
// printed) reads as the port objects do, its "host" naming the host.
TEST(FleetSnapshot, ReadsTheTablesDocumentOfEitherVersion) {
  PortInfo p{.device = "mlx5_0", .port = 1, .link_layer = LinkLayer::ethernet(), .gid_tbl_len = 8};
  GidEntry e{.index = 3, .gid = VALUE_OR_FAIL(Gid::parse("::ffff:10.0.0.7")), .type = GidType::roce_v2};
  e.netdev = "eth0";
  GidEntry empty{.index = 4, .state = EntryState::empty};
  const GidTable t = VALUE_OR_FAIL(GidTable::make(p, {e, empty}));
  const std::string v2 = formats::write_json({t}, {.host = "node9", .source = "live devices (libibverbs)"});
  auto s = fleet::parse_snapshot(v2, "/tmp/x/file.json");
  ASSERT_TRUE(s.has_value()) << s.error().what();
  EXPECT_EQ(s.value().host, "node9");
  ASSERT_EQ(s.value().ports.size(), 1u);
  EXPECT_EQ(s.value().ports[0], t);
  // Version 1: no host, so the file name names it.
  const std::string v1 = R"({"schema": "gidpolicy.tables", "version": 1, "ports": [{"device": "mlx5_0",
    "port": 1, "link_layer": "ethernet", "gid_tbl_len": 8, "entries": [{"index": 3,
    "gid": "::ffff:10.0.0.7", "type": "roce_v2", "netdev": "eth0"}, {"index": 4, "state": "empty"}]}]})";
  auto old = fleet::parse_snapshot(v1, "/a/b/gpu12.json");
  ASSERT_TRUE(old.has_value()) << old.error().what();
  EXPECT_EQ(old.value().host, "gpu12");
  EXPECT_EQ(old.value().ports[0], t);
  // Another schema or version is refused, naming the field.
  auto wrong = fleet::parse_snapshot(R"({"schema": "gidpolicy.check", "version": 3, "ports": []})", "c.json");
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.error().detail.find("c.json: schema: expected"), std::string::npos) << wrong.error().what();
  auto future =
      fleet::parse_snapshot(R"({"schema": "gidpolicy.tables", "version": 9, "ports": []})", "f.json");
  ASSERT_FALSE(future.has_value());
  EXPECT_EQ(future.error(), errc::unsupported_version);
  auto bad = fleet::parse_snapshot(
      R"({"schema": "gidpolicy.tables", "version": 2, "ports": [{"device": "d", "port": 1,
      "entries": [{"index": 1, "gid": "nope"}]}]})",
      "b.json");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().detail.find("b.json: ports[0].entries[0].gid"), std::string::npos)
      << bad.error().what();
}

// Found by fuzz_fleet_snapshot: a number no double holds, in a field the reader ignores, was
// accepted where the canonical JSON reader (nlohmann) refuses the document.
TEST(FleetSnapshot, RegressionFuzzNumberOutOfRangeInAnIgnoredField) {
  const std::string doc = R"({"host":"h","device":"d","port":1,"entries":[)"
                          R"({"index":0,"gid":"::ffff:10.0.0.1","type":"roce_v2","x":[16e6675]}]})";
  auto s = fleet::parse_snapshot(doc, "big.json");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().what().find("number out of range"), std::string::npos) << s.error().what();
  EXPECT_FALSE(nlohmann::json::accept(doc));
  // A small exponent and a tiny one are numbers a double holds (or rounds to zero): accepted.
  std::string ok = doc;
  ok.replace(ok.find("16e6675"), 7, "1.5e-999");
  EXPECT_TRUE(fleet::parse_snapshot(ok, "small.json").has_value());
}

TEST(FleetSnapshot, ErrorsNameFilePortEntryAndField) {
  const std::string bad = R"([{"device": "mlx5_0", "port": 1, "entries": []},
                              {"device": "mlx5_1", "port": 1, "entries": [{"index": 0, "gid": "fe80::zz"}]}])";
  auto s = fleet::parse_snapshot(bad, "h3.json");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().what().find("h3.json: [1].entries[0].gid: "), std::string::npos) << s.error().what();
  auto no_device = fleet::parse_snapshot(R"({"port": 1, "entries": []})", "h.json");
  ASSERT_FALSE(no_device.has_value());
  EXPECT_NE(no_device.error().what().find("h.json: port.device: missing"), std::string::npos)
      << no_device.error().what();
  auto syntax = fleet::parse_snapshot("{\n\"device\": ", "h.json");
  ASSERT_FALSE(syntax.has_value());
  EXPECT_NE(syntax.error().what().find("h.json:2:"), std::string::npos) << syntax.error().what();
  auto deep = fleet::parse_snapshot(std::string(100000, '[') + std::string(100000, ']'), "deep.json");
  ASSERT_FALSE(deep.has_value());
  EXPECT_NE(deep.error().what().find("nested deeper"), std::string::npos) << deep.error().what();
  // JSON text is UTF-8: a stray byte in a host name would break every document written later.
  auto bad_utf8 = fleet::parse_snapshot(
      "{\"host\": \"n\xff\", \"device\": \"d\", \"port\": 1, \"entries\": []}", "u.json");
  ASSERT_FALSE(bad_utf8.has_value());
  EXPECT_NE(bad_utf8.error().what().find("u.json:1:12: invalid JSON: invalid UTF-8"), std::string::npos)
      << bad_utf8.error().what();
  EXPECT_EQ(VALUE_OR_FAIL(
                fleet::parse_snapshot(
                    "{\"host\": \"n\xc3\xa9\", \"device\": \"d\", \"port\": 1, \"entries\": []}", "u.json"))
                .host,
            "n\xc3\xa9");
  auto dup = fleet::parse_snapshot(
      R"({"device": "d", "port": 1, "entries": [{"index": 1, "state": "empty"}, {"index": 1, "state": "empty"}]})",
      "dup.json");
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.error().what().find("dup.json: port: "), std::string::npos) << dup.error().what();
}

class FleetFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gidpolicy-fleet-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  static std::string port(const std::string& host) {
    return R"({"host": )" + (host.empty() ? std::string("null") : "\"" + host + "\"") +
           R"(, "device": "mlx5_0", "port": 1, "entries": []})";
  }
  fs::path dir_;
};

TEST_F(FleetFiles, DirectoryInNaturalOrderWithFileNamesAsFallback) {
  write("node10.json", port(""));
  write("node2.json", port(""));
  write("node1.json", port("first"));
  write("notes.txt", "not a snapshot");
  const std::vector<std::string> args{dir_.string()};
  auto hosts = fleet::read_snapshots(args);
  ASSERT_TRUE(hosts.has_value()) << hosts.error().what();
  ASSERT_EQ(hosts.value().size(), 3u);
  EXPECT_EQ(hosts.value()[0].host, "first");
  EXPECT_EQ(hosts.value()[1].host, "node2");
  EXPECT_EQ(hosts.value()[2].host, "node10");
}

TEST_F(FleetFiles, HostEqualsFileAndDuplicates) {
  const auto a = write("a.json", port("same"));
  const auto b = write("b.json", port("same"));
  const std::vector<std::string> dup{a.string(), b.string()};
  auto r = fleet::read_snapshots(dup);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("host 'same' appears twice: " + a.string() + " and " + b.string()),
            std::string::npos)
      << r.error().what();
  const std::vector<std::string> named{a.string(), "renamed=" + b.string()};
  auto ok = fleet::read_snapshots(named);
  ASSERT_TRUE(ok.has_value()) << ok.error().what();
  EXPECT_EQ(ok.value()[1].host, "renamed");
}

// Found by trying the tool as an outsider: `gidpolicy fleet FIFO` blocked in open() (a non-regular
// input, as a FIFO in a sysfs tree is). A hang here is caught by the unit tests' ctest timeout.
TEST_F(FleetFiles, AFifoIsRefusedNotWaitedOn) {
  const fs::path fifo = dir_ / "host.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::vector<std::string> one{fifo.string()};
  auto r = fleet::read_snapshots(one);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("host.json: not a regular file"), std::string::npos) << r.error().what();
  auto devices = fleet::read_jaccl_devices(fifo.string());
  ASSERT_FALSE(devices.has_value());
  EXPECT_NE(devices.error().what().find("not a regular file"), std::string::npos) << devices.error().what();
}

TEST_F(FleetFiles, BoundsOnSizeAndCount) {
  const auto big = write("big.json", port("x") + std::string(2000, ' '));
  fleet::ReadLimits limits;
  limits.max_file_bytes = 1000;
  const std::vector<std::string> one{big.string()};
  auto r = fleet::read_snapshots(one, limits);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().what().find("larger than 1000 bytes"), std::string::npos) << r.error().what();
  for (int i = 0; i < 5; ++i) write("h" + std::to_string(i) + ".json", port(""));
  limits = {};
  limits.max_hosts = 3;
  const std::vector<std::string> all{dir_.string()};
  auto many = fleet::read_snapshots(all, limits);
  ASSERT_FALSE(many.has_value());
  EXPECT_NE(many.error().what().find("more than 3"), std::string::npos) << many.error().what();
  const std::vector<std::string> missing{(dir_ / "nope.json").string()};
  auto gone = fleet::read_snapshots(missing);
  ASSERT_FALSE(gone.has_value());
  EXPECT_NE(gone.error().what().find("nope.json: cannot open"), std::string::npos) << gone.error().what();
}

TEST(FleetMesh, MissingDeviceAndDownPortMakeASideUnusable) {
  auto hosts = rail_hosts(4, -1, -1);
  for (auto& p : hosts[2].ports) {
    if (p.port().device != "mlx5_3") continue;
    PortInfo info = p.port();
    info.state = PortState::down;
    p = VALUE_OR_FAIL(GidTable::make(info, std::vector<GidEntry>(p.begin(), p.end())));
  }
  fleet::Topology t;
  t.device = "mlx5_3";
  auto an = Analysis::run(hosts, t, {});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  EXPECT_EQ(an.value().summary().connected, 3u);
  ASSERT_EQ(an.value().summary().groups.size(), 1u);
  EXPECT_NE(an.value().describe(an.value().summary().groups[0]).find("gpu2): mlx5_3 port 1 is down"),
            std::string::npos)
      << an.value().describe(an.value().summary().groups[0]);
  EXPECT_FALSE(Analysis::run({hosts[0]}, t, {}).has_value());
}

// ---- RoCE v1 against v2: tests/data/roce_versions (a v1-only host, hosts with v1/v2 pairs)

std::vector<HostSnapshot> roce_version_hosts(const std::vector<std::string>& files) {
  std::vector<std::string> args;
  for (const auto& f : files) args.push_back((test::test_data_dir() / "roce_versions" / f).string());
  auto hosts = fleet::read_snapshots(args);
  EXPECT_TRUE(hosts.has_value()) << hosts.error().what();
  return hosts ? VALUE_OR_FAIL(std::move(hosts)) : std::vector<HostSnapshot>{};
}

TEST(FleetMesh, RoceV1HostAgainstV2HostTimesOutNamingBothTypes) {
  // auto picks the v1-only host's IPv4 entry at 1 (RoCE v1) and the other's at 3 (RoCE v2):
  // both RTRs pass, each port answers only its own framing, each sender's retries run out.
  const auto hosts = roce_version_hosts({"v1-only-a.json", "v2-a.json"});
  ASSERT_EQ(hosts.size(), 2u);
  auto an = Analysis::run(hosts, {}, {});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  const Analysis& a = an.value();
  ASSERT_EQ(a.link_count(), 1u);
  const fleet::Link l = a.link(0);
  EXPECT_EQ(a.sides()[l.a].sgid_index, 1);
  EXPECT_EQ(a.sides()[l.b].sgid_index, 3);
  EXPECT_EQ(l.a_to_b.outcome, LinkOutcome::times_out);
  EXPECT_EQ(l.b_to_a.outcome, LinkOutcome::times_out);
  EXPECT_EQ(a.describe(l.a_to_b),
            "v1-only-a mlx5_bond_0: sends RoCE v1 frames (sgid_index 1); the peer's port routes RoCE v2: "
            "nothing is delivered, the sender's retries run out");
  EXPECT_EQ(a.describe(l.b_to_a),
            "v2-a mlx5_bond_0: sends RoCE v2 frames (sgid_index 3); the peer's port routes RoCE v1: "
            "nothing is delivered, the sender's retries run out");
  EXPECT_EQ(a.summary().connected, 0u);
  EXPECT_FALSE(a.ok());
  // Each side's cause is one group, counted once per link.
  ASSERT_EQ(a.summary().groups.size(), 2u);
  for (const auto& g : a.summary().groups) {
    EXPECT_EQ(g.links, 1u);
    EXPECT_EQ(a.causes()[g.cause].outcome, LinkOutcome::times_out);
  }
}

TEST(FleetMesh, RoceVersionsAgreeWithTheFabric) {
  // v1<->v1 and v2<->v2 connect, every v1<->v2 link times out, as the fake fabric runs them.
  const std::vector<std::string> files{"v1-only-a.json", "v1-only-b.json", "v2-a.json", "v2-b.json"};
  const auto hosts = roce_version_hosts(files);
  ASSERT_EQ(hosts.size(), 4u);
  auto an = Analysis::run(hosts, {}, {});
  ASSERT_TRUE(an.has_value()) << an.error().what();
  const Analysis& a = an.value();
  fakes::FakeFabric fabric;
  for (const auto& h : hosts)
    ASSERT_OK(fabric.add_host({h.host, h.ports.at(0), profiles::automatic(), std::nullopt}));
  auto report = fabric.connect(Pairing::mesh);
  ASSERT_OK(report);
  ASSERT_EQ(a.link_count(), report.value().pairs.size());
  for (std::uint64_t k = 0; k < a.link_count(); ++k) {
    const fleet::Link l = a.link(k);
    const auto& p = report.value().pairs[k];
    const bool same = p.a.substr(0, 2) == p.b.substr(0, 2);  // "v1" / "v2"
    EXPECT_EQ(l.connected(), same) << p.a << " <-> " << p.b << ": " << a.describe(l.a_to_b);
    EXPECT_EQ(p.connected(), same) << p.a << " <-> " << p.b << ": " << p.why();
    EXPECT_EQ(l.a_to_b.outcome, p.a_to_b.outcome) << p.a << " <-> " << p.b;
    EXPECT_EQ(l.b_to_a.outcome, p.b_to_a.outcome) << p.a << " <-> " << p.b;
    if (!same) {
      EXPECT_EQ(p.a_to_b.why,
                a.describe(l.a_to_b).substr(0, p.a.size()) + " " + a.causes()[l.a_to_b.cause].text);
    }
  }
  EXPECT_EQ(a.summary().connected, 2u);
}

}  // namespace
}  // namespace gidpolicy
