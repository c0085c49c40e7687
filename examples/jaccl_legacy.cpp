// JacclLegacyIndex1: JACCL before April 2026 advertised whatever index 1 held and routed from
// it. Consistent, but it happily advertises a link-local GID or an empty slot's zeros.
//
//   jaccl_legacy TABLE
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.jaccl_legacy.NAME (table files are relative to tables/); the output must match the
// regex of the `example-expect:` lines that follow, joined by newlines.
// clang-format off
// example-run.nccl769: nccl-769.devinfo.txt
// example-expect: mlx5_bond_0 port 1: jaccl-legacy -> index 1 fe80::ac0:ebff:feda:1cfb \(roce_v2\)
// example-expect:   warning: advertising a link-local GID
// example-run.macmini: macmini-mapped-at-2.json
// example-expect: rdma_en2 port 1: jaccl-legacy -> index 1 <zero GID> \(unknown\)
// example-expect:   warning: advertising the zero GID of an empty slot
// clang-format on
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: jaccl_legacy TABLE\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  for (const auto& t : *tables) {
    auto r = gidpolicy::JacclLegacyIndex1{}.select(t);
    if (!example::report(t, "jaccl-legacy", r)) {
      status = 1;
      continue;
    }
    const auto& g = r.value().entry.gid;
    if (g.is_zero())
      std::cout << "  warning: advertising the zero GID of an empty slot\n";
    else if (g.is_link_local())
      std::cout << "  warning: advertising a link-local GID\n";
  }
  return status;
}
