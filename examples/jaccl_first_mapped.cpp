// JacclFirstMapped: what JACCL's info() advertises (the first ::ffff:a.b.c.d entry, any type,
// index 0 allowed), and whether JACCL's RTR, which routes from the literal index 1, agrees.
//
//   jaccl_first_mapped TABLE
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.jaccl_first_mapped.NAME (table files are relative to tables/); the output must match the
// regex of the `example-expect:` lines that follow, joined by newlines.
// clang-format off
// example-run.nccl769: nccl-769.devinfo.txt
// example-expect: mlx5_bond_0 port 1: jaccl -> index 2 ::ffff:200\.0\.209\.6 \(roce_v1\)
// example-expect:   JACCL routes from sgid_index 1: DISAGREES: sgid_index 1 holds fe80::ac0:ebff:feda:1cfb \(roce_v2\), not the advertised GID
// example-run.macmini: macmini-mapped-at-2.json
// example-expect: rdma_en2 port 1: jaccl -> index 2 ::ffff:10\.99\.0\.3 \(unknown\)
// example-expect:   JACCL routes from sgid_index 1: DISAGREES: sgid_index 1 is empty; the advertised GID ::ffff:10\.99\.0\.3 is at index 2
// example-run.ds4qa: apple-ds4qa-rdma_en1.devinfo.txt
// example-expect: rdma_en1 port 1: jaccl -> index 1 ::ffff:10\.99\.0\.2 \(unknown\)
// example-expect:   JACCL routes from sgid_index 1: agrees
// example-run.noipv4: apple-mlx4191-rdma_en3-noipv4.devinfo.txt
// example-expect: rdma_en3 port 1: jaccl failed: no IPv4-mapped GID: rdma_en3 port 1: no entry of \[0, 16\) holds an IPv4-mapped .*assign an IPv4 address
// clang-format on
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/profiles.hpp>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: jaccl_first_mapped TABLE\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  for (const auto& t : *tables) {
    auto sel = gidpolicy::JacclFirstMapped{}.select(t);
    if (!example::report(t, "jaccl", sel)) {
      status = 1;
      continue;
    }
    // JACCL as it ships: the same selection, routed from index 1.
    auto plan = gidpolicy::profiles::jaccl().plan(t).value();
    std::cout << "  JACCL routes from sgid_index 1: " << (plan.agrees() ? "agrees" : "DISAGREES: ")
              << (plan.agrees() ? "" : plan.agreement.explanation) << "\n";
    if (!plan.agrees()) status = 1;
  }
  return status;
}
