// jaccl_reconnect: a JACCL-shaped program that survives its Thunderbolt IPv4 GID going away and
// coming back at another index (a link renegotiation: the self-assigned address is lost for a
// while and the kernel re-adds it first-free).
//
//   jaccl_reconnect <device> <removed-table> <returned-table>
//
// Run on the drop-in fake libibverbs (GIDPOLICY_FAKE_TABLES names the live table file). The two
// table arguments play the kernel: the program renames each over the live file in turn (the
// documented way to change a running fake's table) and everything else reacts only to what the
// device reports through its async events:
//   1. connect two ranks as jaccl_gidpolicy does (plan with jaccl-fixed, RTR from the plan);
//   2. watch the port (GidWatcher on the device's async fd); the GID disappears: replan() finds
//      nothing to advertise, and the stale plan is refused by preflight before any modify_qp;
//   3. the GID returns at another index: replan() follows it there, both ranks reconnect on new
//      queue pairs routing from the new index, and messages flow again.
#include "jaccl_steps.hpp"

#include <gidpolicy/change.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/apply.hpp>
#include <gidpolicy/verbs/libibverbs_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>
#include <gidpolicy/verbs/watch.hpp>

#include <poll.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

using namespace jaccl_shaped;

namespace {

gidpolicy::Gid advertised(const gidpolicy::Plan& p) { return p.selection.entry.gid; }

std::optional<gidpolicy::RtrAttributes> build_rtr(const gidpolicy::GidTable& table,
                                                  const gidpolicy::Plan& plan, Rank& peer) {
  auto rtr = gidpolicy::RtrBuilder(gidpolicy::QpKind::uc, table, plan)
                 .remote({.qpn = peer.qp_num(), .psn = kPsn, .gid = advertised(plan)})
                 .path_mtu(gidpolicy::Mtu::mtu_1024)
                 .hop_limit(1)
                 .build();
  if (!rtr) {
    std::printf("[jaccl] %s\n", rtr.error().what().c_str());
    return std::nullopt;
  }
  return rtr.value();
}

/// Both ranks on one device advertise the same plan (one port, one table): RTR each way, RTS,
/// one message each way.
int connect(Rank& a, Rank& b, gidpolicy::verbs::VerbsApi& api, gidpolicy::verbs::DeviceHandle dev,
            const gidpolicy::GidTable& table, const gidpolicy::Plan& plan) {
  for (Rank* r : {&a, &b}) {
    Rank& peer = r == &a ? b : a;
    auto rtr = build_rtr(table, plan, peer);
    if (!rtr) return 1;
    // The last check before modify_qp: the slot still holds the advertised GID.
    if (auto pre = gidpolicy::verbs::preflight(api, dev, 1, *rtr); !pre) {
      std::printf("[jaccl] rank %d: %s\n", r->id(), pre.error().what().c_str());
      return 1;
    }
    std::printf("rank %d routes from sgid_index %u\n", r->id(), rtr->sgid_index());
    if (!r->rtr(rtr->attr, rtr->mask)) return 1;
  }
  if (!a.rts() || !b.rts()) return 1;
  return exchange_messages(a, b);
}

/// The "kernel": replace the live table file atomically.
bool rewrite(const char* live, const char* next) {
  std::error_code ec;
  const std::string tmp = std::string(live) + ".next";
  std::filesystem::copy_file(next, tmp, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) std::filesystem::rename(tmp, live, ec);
  if (ec) std::printf("[kernel] cannot replace %s: %s\n", live, ec.message().c_str());
  return !ec;
}

/// Wait (at most 60 s, a hang guard) for the watcher to report a change.
std::optional<gidpolicy::GidChange> next_change(gidpolicy::verbs::GidWatcher& w) {
  for (int i = 0; i < 600; ++i) {
    pollfd p{w.fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    auto changes = w.process();
    if (!changes) {
      std::printf("[jaccl] watch: %s\n", changes.error().what().c_str());
      return std::nullopt;
    }
    if (!changes.value().empty()) return changes.value().front();
  }
  std::printf("[jaccl] no GID change reported within 60 s\n");
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  const char* live = std::getenv("GIDPOLICY_FAKE_TABLES");
  if (argc != 4 || !live) {
    std::fprintf(stderr, "usage: GIDPOLICY_FAKE_TABLES=FILE %s <device> <removed-table> <returned-table>\n",
                 argv[0]);
    return 2;
  }
  const char* device = argv[1];
  const gidpolicy::Profile profile = gidpolicy::profiles::jaccl_fixed();
  gidpolicy::verbs::LibibverbsApi api;
  auto dev = api.open_device(device);
  if (!dev) {
    std::printf("[jaccl] %s\n", dev.error().what().c_str());
    return 2;
  }
  auto watcher = gidpolicy::verbs::GidWatcher::open(api, dev.value(), {1});
  if (!watcher) {
    std::printf("[jaccl] %s\n", watcher.error().what().c_str());
    return 2;
  }
  gidpolicy::GidTable table = *watcher.value().table(1);
  auto first = profile.plan(table);
  if (!first) {
    std::printf("[jaccl] %s\n", first.error().what().c_str());
    return 1;
  }
  gidpolicy::Plan plan = first.value();
  (void)watcher.value().follow(1, plan.selection.entry);
  std::printf("both ranks advertise %s (index %u)\n", advertised(plan).to_string().c_str(), plan.sgid_index);
  {
    Rank r0(0, device), r1(1, device);
    if (!r0.ok() || !r1.ok() || connect(r0, r1, api, dev.value(), table, plan) != 0) return 1;
  }

  // The address goes away.
  if (!rewrite(live, argv[2])) return 2;
  auto gone = next_change(watcher.value());
  if (!gone) return 1;
  std::printf("watch: %s\n", gone->to_string().c_str());
  auto next = gidpolicy::replan(profile, plan, *gone);
  if (next) {
    std::printf("[jaccl] expected no plan while the address is gone\n");
    return 1;
  }
  std::printf("re-plan: none (%s)\n", next.error().what().c_str());
  // An application that missed the event would RTR from the old plan: refused before modify_qp.
  {
    Rank r0(0, device), r1(1, device);
    if (!r0.ok() || !r1.ok()) return 2;
    auto stale = build_rtr(table, plan, r1);
    if (!stale) return 1;
    auto pre = gidpolicy::verbs::preflight(api, dev.value(), 1, *stale);
    if (pre) {
      std::printf("[jaccl] a stale plan passed preflight\n");
      return 1;
    }
    std::printf("stale plan refused before modify_qp: %s\n", pre.error().what().c_str());
  }

  // It comes back, at another index.
  if (!rewrite(live, argv[3])) return 2;
  auto back = next_change(watcher.value());
  if (!back) return 1;
  std::printf("watch: %s\n", back->to_string().c_str());
  next = gidpolicy::replan(profile, plan, *back);
  if (!next) {
    std::printf("[jaccl] re-plan failed: %s\n", next.error().what().c_str());
    return 1;
  }
  plan = next.value().plan;
  table = back->table;
  (void)watcher.value().follow(1, plan.selection.entry);
  std::printf("re-plan: %s at index %u (%s, %s)\n", advertised(plan).to_string().c_str(), plan.sgid_index,
              next.value().followed ? "followed" : "selected",
              next.value().tell_peer ? "tell the peer" : "the peer already knows this GID");
  Rank r2(0, device), r3(1, device);
  if (!r2.ok() || !r3.ok()) return 2;
  const int rc = connect(r2, r3, api, dev.value(), table, plan);
  if (rc == 0) std::printf("reconnected after the GID moved\n");
  return rc;
}
