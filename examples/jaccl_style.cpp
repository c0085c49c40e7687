// jaccl_style: JACCL's info() / queue_pair_rtr() pair written with gidpolicy, run between two
// hosts whose GID tables are given as files.
//
// Stock JACCL (mlx/distributed/jaccl/lib/jaccl/rdma.cpp) scans for the first IPv4-mapped GID
// in info() and advertises it, then hard-codes `sgid_index = 1` in queue_pair_rtr(). With
// gidpolicy, info() keeps the Plan that chose the GID and queue_pair_rtr() builds the RTR from
// that same Plan, so the index routed from is the entry advertised. `--profile jaccl` runs
// JACCL's shipped behaviour for comparison: the disagreement is refused before the driver (on
// Thunderbolt, failed RTRs reportedly wedge the port), or with --unchecked predicted through the
// driver model the fake verbs share.
//
// In a real program the table comes from the device, `gidpolicy::verbs::snapshot(api, dev, 1)`,
// and the attributes go to `gidpolicy::verbs::apply_rtr(api, qp, dev, 1, rtr)`.
//
//   jaccl_style LOCAL_TABLE PEER_TABLE [--profile SPEC] [--unchecked]
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.jaccl_style.NAME (table files are relative to tables/); the output must match the
// regex of the `example-expect:` lines that follow, joined by newlines.
// clang-format off
// JACCL-style pair: fixed, it connects both ways; as shipped, the Mac mini side is refused
// before the driver (or, unchecked, predicted to fail with errno 22 as in MLX PR 3389).
// example-run.fixed: macmini-mapped-at-2.json apple-ds4qa-rdma_en1.devinfo.txt
// example-expect: rdma_en2 advertises ::ffff:10\.99\.0\.3; rdma_en1 advertises ::ffff:10\.99\.0\.2
// example-expect: rdma_en2: RTR sgid_index 2 dgid ::ffff:10\.99\.0\.2: predicted ok
// example-expect: rdma_en1: RTR sgid_index 1 dgid ::ffff:10\.99\.0\.3: predicted ok
// example-run.stock_refused: macmini-mapped-at-2.json apple-ds4qa-rdma_en1.devinfo.txt --profile jaccl
// example-expect: rdma_en2: refusing RTR: sgid_index does not hold the advertised GID: sgid_index 1 is empty; the advertised GID ::ffff:10\.99\.0\.3 is at index 2
// example-expect: rdma_en1: RTR sgid_index 1 dgid ::ffff:10\.99\.0\.3: predicted ok
// example-run.stock_unchecked: macmini-mapped-at-2.json apple-ds4qa-rdma_en1.devinfo.txt --profile jaccl --unchecked
// example-expect: rdma_en2: RTR sgid_index 1 dgid ::ffff:10\.99\.0\.2: predicted EINVAL \(22\): sgid_index 1 is empty
// example-expect: EINVAL \(22\) on darwin:
// example-expect:   \[confirmed\] sgid_index 1 is empty; the advertised GID ::ffff:10\.99\.0\.3 is at index 2
// example-run.noipv4: apple-mlx4191-rdma_en3-noipv4.devinfo.txt apple-ds4qa-rdma_en1.devinfo.txt
// example-expect: info\(\) failed: no IPv4-mapped GID: rdma_en3 port 1: .*assign an IPv4 address
// clang-format on
#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>

#include "example_support.hpp"

#include <string_view>

namespace {

/// What JACCL's Destination carries over the side channel, plus the MTU.
struct Destination {
  std::uint32_t queue_pair_number = 0;
  std::uint32_t packet_sequence_number = 0;
  gidpolicy::Gid global_identifier;
  gidpolicy::Mtu mtu = gidpolicy::Mtu::mtu_1024;
};

class Connection {
 public:
  Connection(gidpolicy::GidTable table, gidpolicy::Profile profile, std::uint32_t qpn)
      : table_(std::move(table)), profile_(std::move(profile)), qpn_(qpn) {}

  /// JACCL's info(): choose the GID to advertise, and keep the choice for the RTR.
  gidpolicy::result<Destination> info() {
    GIDPOLICY_TRY(plan, profile_.plan(table_));
    plan_ = plan;
    return Destination{qpn_, kPsn, plan.selection.entry.gid, table_.port().active_mtu};
  }

  /// JACCL's queue_pair_rtr(dst): UC, hop limit 1, PSN 7, as JACCL sets them; sgid_index from
  /// the plan made in info().
  gidpolicy::result<gidpolicy::RtrAttributes> queue_pair_rtr(const Destination& dst, bool unchecked) const {
    GIDPOLICY_TRY(rtr, gidpolicy::RtrBuilder(gidpolicy::QpKind::uc, table_, *plan_)
                           .remote({.qpn = dst.queue_pair_number,
                                    .psn = dst.packet_sequence_number,
                                    .gid = dst.global_identifier,
                                    .mtu = dst.mtu})
                           .hop_limit(1)
                           .build());
    if (!unchecked) GIDPOLICY_TRYV(rtr.agreement.to_result());
    return rtr;
  }

  [[nodiscard]] const gidpolicy::GidTable& table() const { return table_; }

 private:
  static constexpr std::uint32_t kPsn = 7;  // JACCL's constant
  gidpolicy::GidTable table_;
  gidpolicy::Profile profile_;
  std::uint32_t qpn_;
  std::optional<gidpolicy::Plan> plan_;
};

/// One direction of the exchange: `self` does its RTR towards `peer`'s Destination.
bool connect(const Connection& self, const Destination& peer, bool unchecked) {
  const std::string name = self.table().port().device;
  auto rtr = self.queue_pair_rtr(peer, unchecked);
  if (!rtr) {
    std::cout << name << ": refusing RTR: " << rtr.error().what() << "\n";
    return false;
  }
  const auto model = gidpolicy::DriverModel::for_table(self.table());
  const auto verdict = gidpolicy::predict_rtr(self.table(), rtr.value(), model);
  std::cout << name << ": RTR sgid_index " << unsigned{rtr.value().sgid_index()} << " dgid "
            << rtr.value().dgid().to_string() << ": predicted " << verdict.to_string(model.platform) << "\n";
  if (verdict.outcome == gidpolicy::RtrOutcome::ok) return true;
  const auto d = gidpolicy::diagnose(verdict.err, model,
                                     {.table = &self.table(),
                                      .sgid_index = rtr.value().sgid_index(),
                                      .advertised = rtr.value().agreement.advertised,
                                      .peer_gid = peer.global_identifier});
  std::cout << d.to_string();
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: jaccl_style LOCAL_TABLE PEER_TABLE [--profile SPEC] [--unchecked]\n";
    return 2;
  }
  std::string spec = "jaccl-fixed";
  bool unchecked = false;
  for (int i = 3; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--profile" && i + 1 < argc)
      spec = argv[++i];
    else if (a == "--unchecked")
      unchecked = true;
    else {
      std::cerr << "unknown argument: " << a << "\n";
      return 2;
    }
  }
  auto profile = gidpolicy::parse_profile(spec);
  if (!profile) {
    std::cerr << "jaccl_style: " << profile.error().what() << "\n";
    return 2;
  }
  auto local = example::load(argv[1]);
  auto remote = example::load(argv[2]);
  if (!local || !remote || local->empty() || remote->empty()) return 2;

  Connection a(local->front(), profile.value(), 0x11);
  Connection b(remote->front(), profile.value(), 0x22);
  auto ia = a.info();
  auto ib = b.info();
  for (const auto* i : {&ia, &ib})
    if (!*i) std::cout << "info() failed: " << i->error().what() << "\n";
  if (!ia || !ib) return 1;
  std::cout << a.table().port().device << " advertises " << ia.value().global_identifier.to_string() << "; "
            << b.table().port().device << " advertises " << ib.value().global_identifier.to_string() << "\n";
  const bool ok_a = connect(a, ib.value(), unchecked);
  const bool ok_b = connect(b, ia.value(), unchecked);
  return ok_a && ok_b ? 0 : 1;
}
