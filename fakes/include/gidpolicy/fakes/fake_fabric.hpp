// FakeFabric: N fake hosts connected the way JACCL connects them, to see which pairs work.
//
// Each host has its own FakeVerbs (its GID table, its driver model) and a gidpolicy Profile
// (what it advertises and which sgid_index it routes from: profiles::jaccl(), jaccl_fixed(),
// automatic()...). connect() does, for every pair of the topology, what a JACCL-style program
// does: snapshot the port through the VerbsApi, plan (select + source index), create and INIT a UC
// QP, exchange {QPN, PSN, GID, MTU}, build the RTR with RtrBuilder, modify_qp to RTR and RTS.
// Whether a message from A reaches B is the link judgment (link.hpp) the fleet analysis applies
// too: both QPs are up, the driver model did not say the traffic times out, and the delivery rule
// holds (A's entry at its sgid_index, in A's table at send time, is the GID B was told about).
//
// The gotcha this reproduces: MLX PR 3389. A Mac mini with its IPv4-mapped GID at index 2
// advertises that GID but JACCL routes from the literal index 1, so every pair involving that
// Mac fails (Apple's driver: errno 22 at RTR) while the other pairs connect.
//
// Example:
//   gidpolicy::fakes::FakeFabric fabric;
//   fabric.add_host({.name = "mac-a", .table = before, .profile = gidpolicy::profiles::jaccl()});
//   fabric.add_host({.name = "mac-b", .table = after, .profile = gidpolicy::profiles::jaccl()});
//   auto report = fabric.connect(gidpolicy::fleet::Pairing::mesh).value();
//   std::cout << report.to_string();   // one line per pair: connected, or why not
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/link.hpp>
#include <gidpolicy/profiles.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::fakes {

/// Who pairs with whom: the fleet's Pairing (fleet.hpp). The fabric connects one port per host,
/// so it takes JACCL's two: every pair (mesh), or each host with its successor (ring).
using fleet::Pairing;

/// One host: its port's table, what it runs, and its driver.
struct FabricHost {
  std::string name;  ///< "mac-a"
  GidTable table;    ///< the port it uses (device and port number come from table.port())
  Profile profile = profiles::automatic();
  /// Default: DriverModel::for_table(table).
  std::optional<DriverModel> driver;
};

/// How connect() runs.
struct FabricOptions {
  /// Run gidpolicy's preflight before each modify_qp (apply_rtr) instead of the bare driver
  /// call a program like JACCL makes: disagreeing or stale attributes are then refused before
  /// the driver sees them.
  bool preflight = false;
  std::uint32_t psn = 7;  ///< JACCL's constant PSN
};

/// One direction of a pair.
struct DirectionResult {
  bool delivered = false;
  LinkOutcome outcome = LinkOutcome::unusable;  ///< ok exactly when delivered (link.hpp)
  std::string why;                              ///< empty when delivered
  std::optional<int> rtr_errno;                 ///< the sender's RTR errno when modify_qp failed
};

/// One pair of the topology.
struct PairResult {
  std::string a, b;
  std::optional<Gid> a_advertised, b_advertised;
  std::optional<std::uint8_t> a_sgid_index, b_sgid_index;
  DirectionResult a_to_b, b_to_a;
  [[nodiscard]] bool connected() const noexcept { return a_to_b.delivered && b_to_a.delivered; }
  /// "" when connected, otherwise the reasons of the failed directions.
  [[nodiscard]] std::string why() const;
  /// Whether `host` is one end of this pair.
  [[nodiscard]] bool involves(std::string_view host) const noexcept { return a == host || b == host; }
};

/// What connect() found.
struct FabricReport {
  Pairing pairing = Pairing::mesh;
  std::vector<PairResult> pairs;
  [[nodiscard]] bool all_connected() const noexcept;
  [[nodiscard]] std::size_t connected_count() const noexcept;
  /// The pair of two hosts in either order, or nullptr.
  [[nodiscard]] const PairResult* pair(std::string_view x, std::string_view y) const noexcept;
  /// One line per pair: "mac-a <-> mac-b: connected (sgid 1 / 2)" or "...: FAILED: <why>".
  [[nodiscard]] std::string to_string() const;
};

/// N fake hosts. Not copyable (each host owns a FakeVerbs).
class FakeFabric {
 public:
  FakeFabric();
  ~FakeFabric();
  FakeFabric(const FakeFabric&) = delete;
  FakeFabric& operator=(const FakeFabric&) = delete;

  /// Add a host. errc::invalid_argument for a duplicate or empty name or a table the fake
  /// refuses (port out of range).
  result<void> add_host(FabricHost host);
  [[nodiscard]] std::vector<std::string> hosts() const;
  /// A host's fake, to inject faults or mutate its table before connect(). nullptr if unknown.
  [[nodiscard]] FakeVerbs* verbs(std::string_view host) noexcept;

  /// Connect every pair of `pairing` and report. Fails only for fewer than two hosts or a
  /// pairing other than mesh and ring (errc::invalid_argument); every per-host or per-pair
  /// problem is a result in the report. QPs are destroyed at the end.
  result<FabricReport> connect(Pairing pairing, const FabricOptions& options = {});

 private:
  struct Host;
  struct Side;
  void open_and_plan();
  void bring_up(Side& self, const Side& peer, const FabricOptions& options);
  [[nodiscard]] PairResult connect_pair(Host& a, Host& b, const FabricOptions& options);
  void tear_down();
  std::vector<std::unique_ptr<Host>> hosts_;
};

}  // namespace gidpolicy::fakes
