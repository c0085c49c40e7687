// jaccl_plain: JACCL's connection as it ships, against plain libibverbs.
//
//   jaccl_plain <device>
//
// info() advertises the first IPv4-mapped GID it finds (it does not keep the index), and the
// RTR routes from the literal sgid_index 1. The two agree only when that GID sits at index 1.
// On a Mac mini whose mapped GID is at index 2 (MLX PR 3389) the RTR fails with errno 22 under
// Apple's Thunderbolt driver. Run it on a table with the fake libibverbs.so.1:
//
//   export LD_LIBRARY_PATH=<build>/fakes/libibverbs/lib
//   GIDPOLICY_FAKE_TABLES=examples/tables/macmini-mapped-at-2.json jaccl_plain rdma_en2
#include "jaccl_steps.hpp"

#include <cstdio>

using namespace jaccl_shaped;

namespace {

// JACCL's info(): scan [0, gid_tbl_len) for bytes 0-9 zero and 10-11 ff ff; take the first.
bool info(Rank& rank, Destination& out) {
  ibv_port_attr port{};
  if (ibv_query_port(rank.context(), 1, &port)) {
    std::printf("[jaccl] rank %d: couldn't query port 1\n", rank.id());
    return false;
  }
  for (int i = 0; i < port.gid_tbl_len; ++i) {
    ibv_gid gid{};
    if (ibv_query_gid(rank.context(), 1, i, &gid)) continue;
    bool mapped = gid.raw[10] == 0xff && gid.raw[11] == 0xff;
    for (int b = 0; b < 10; ++b) mapped = mapped && gid.raw[b] == 0;
    if (mapped) {
      out.queue_pair_number = rank.qp_num();
      out.packet_sequence_number = kPsn;
      out.global_identifier = gid;
      std::printf("rank %d advertises %s (found at index %d)\n", rank.id(), gid_text(gid).c_str(), i);
      return true;
    }
  }
  std::printf("[jaccl] rank %d: No IPv4-mapped GID found: assign a link-local address to the interface\n",
              rank.id());
  return false;
}

// JACCL's queue_pair_rtr(dst): the literal sgid_index 1.
bool queue_pair_rtr(Rank& rank, const Destination& dst) {
  ibv_qp_attr attr{};
  const int mask = jaccl_rtr_attributes(dst, attr);
  if (attr.ah_attr.is_global) attr.ah_attr.grh.sgid_index = 1;
  std::printf("rank %d routes from sgid_index 1\n", rank.id());
  return rank.rtr(attr, mask);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <device>\n", argv[0]);
    return 2;
  }
  Rank r0(0, argv[1]), r1(1, argv[1]);
  if (!r0.ok() || !r1.ok()) return 2;
  Destination d0, d1;
  if (!info(r0, d0) || !info(r1, d1)) return 1;
  if (!queue_pair_rtr(r0, d1) || !queue_pair_rtr(r1, d0)) return 1;
  if (!r0.rts() || !r1.rts()) return 1;
  return exchange_messages(r0, r1);
}
