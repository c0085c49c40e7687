// Ranked ("auto"): the recommended policy. Filters, then RoCE v2 over v1, IPv4-mapped over
// IPv6, lowest index; link-local refused on RoCE and Thunderbolt; Thunderbolt's index 0 last.
// A failure lists every entry and why it was refused.
//
//   ranked TABLE [--explain]
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.ranked.NAME (table files are relative to tables/); the output must match the
// regex of the `example-expect:` lines that follow, joined by newlines.
// clang-format off
// example-run.nccl769: nccl-769.devinfo.txt
// example-expect: mlx5_bond_0 port 1: auto -> index 3 ::ffff:200\.0\.209\.6 \(roce_v2\)
// example-run.pod: nccl-1573-pod.show_gids.txt
// example-expect: mlx5_0 port 1: auto -> index 7 ::ffff:10\.152\.0\.12 \(roce_v2\)
// example-expect: mlx5_1 port 1: auto -> index 7 ::ffff:10\.152\.4\.12 \(roce_v2\)
// example-run.ipv6only: mooncake-1617-ipv6only.show_gids.txt
// example-expect: rocep105s0 port 1: auto -> index 1 fd93:16d3:59b6:10d:690:81ff:fe39:e3e8 \(roce_v2\)
// example-expect: rocep121s0 port 1: auto -> index 1 .*
// example-expect: rocep193s0f0 port 1: auto failed: no acceptable GID: rocep193s0f0 port 1: no entry qualifies \(looked at: \[0\] link_local, \[1\] link_local\)
// example-run.thunderbolt_noipv4: apple-mlx4191-rdma_en3-noipv4.devinfo.txt --explain
// example-expect: rdma_en3 port 1: auto failed: no acceptable GID.*
// example-expect: auto: failed: .*
// example-expect:   \[0\] link_local: fe80::347c:94ff:fecd:45c4
// clang-format on
#include <gidpolicy/policies/ranked.hpp>

#include "example_support.hpp"

#include <string_view>

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::string_view(argv[2]) != "--explain")) {
    std::cerr << "usage: ranked TABLE [--explain]\n";
    return 2;
  }
  const bool explain = argc == 3;
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  const gidpolicy::Ranked policy;
  for (const auto& t : *tables)
    if (!example::report(t, policy.spec(), policy.select(t, {.trace = explain}), explain)) status = 1;
  return status;
}
