// jaccl_gidpolicy: the same JACCL connection, choosing the GID with gidpolicy.
//
//   jaccl_gidpolicy <device>
//
// The only changes to jaccl_plain: info() takes a snapshot of the port through gidpolicy's
// verbs seam and keeps the Plan that chose the advertised GID (profile jaccl-fixed: JACCL's own
// first-IPv4-mapped rule), and queue_pair_rtr() builds the RTR attributes from that same Plan,
// so sgid_index is the index of the advertised entry. Everything else is JACCL's: UC, PSN 7,
// path MTU 1024, hop limit 1, and plain ibv_modify_qp on the program's own queue pair.
#include "jaccl_steps.hpp"

#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/libibverbs_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <cstdio>
#include <optional>

using namespace jaccl_shaped;

namespace {

struct Chosen {
  gidpolicy::GidTable table;
  gidpolicy::Plan plan;
};

std::optional<Chosen> info(Rank& rank, const char* device, gidpolicy::verbs::VerbsApi& api,
                           Destination& out) {
  auto table = gidpolicy::verbs::snapshot(api, device, 1);
  if (!table) {
    std::printf("[jaccl] rank %d: %s\n", rank.id(), table.error().what().c_str());
    return std::nullopt;
  }
  auto plan = gidpolicy::profiles::jaccl_fixed().plan(table.value());
  if (!plan) {
    std::printf("[jaccl] rank %d: %s\n", rank.id(), plan.error().what().c_str());
    return std::nullopt;
  }
  out.queue_pair_number = rank.qp_num();
  out.packet_sequence_number = kPsn;
  plan.value().selection.entry.gid.copy_to(out.global_identifier.raw);
  std::printf("rank %d advertises %s (index %u)\n", rank.id(), gid_text(out.global_identifier).c_str(),
              plan.value().selection.entry.index);
  return Chosen{table.value(), plan.value()};
}

bool queue_pair_rtr(Rank& rank, const Chosen& chosen, const Destination& dst) {
  auto rtr = gidpolicy::RtrBuilder(gidpolicy::QpKind::uc, chosen.table, chosen.plan)
                 .remote({.qpn = dst.queue_pair_number,
                          .psn = dst.packet_sequence_number,
                          .gid = gidpolicy::Gid::from_bytes(dst.global_identifier.raw)})
                 .path_mtu(gidpolicy::Mtu::mtu_1024)
                 .hop_limit(1)
                 .build();
  if (!rtr) {
    std::printf("[jaccl] rank %d: %s\n", rank.id(), rtr.error().what().c_str());
    return false;
  }
  std::printf("rank %d routes from sgid_index %u\n", rank.id(), rtr.value().sgid_index());
  return rank.rtr(rtr.value().attr, rtr.value().mask);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <device>\n", argv[0]);
    return 2;
  }
  Rank r0(0, argv[1]), r1(1, argv[1]);
  if (!r0.ok() || !r1.ok()) return 2;
  gidpolicy::verbs::LibibverbsApi api;
  Destination d0, d1;
  auto c0 = info(r0, argv[1], api, d0);
  auto c1 = info(r1, argv[1], api, d1);
  if (!c0 || !c1) return 1;
  if (!queue_pair_rtr(r0, *c0, d1) || !queue_pair_rtr(r1, *c1, d0)) return 1;
  if (!r0.rts() || !r1.rts()) return 1;
  return exchange_messages(r0, r1);
}
