// ValidatedExplicit: the explicit index NCCL_IB_GID_INDEX and friends should have checked:
// in range, <= 255, not empty or zero, IPv4-mapped by default, not link-local on RoCE.
//
//   validated_explicit TABLE N [ipv4|ipv6|any]
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.validated_explicit.NAME (table files are relative to tables/); the output must match the
// regex of the `example-expect:` lines that follow, joined by newlines.
// clang-format off
// example-run.good: nccl-769.devinfo.txt 3
// example-expect: mlx5_bond_0 port 1: validated:index=3 -> index 3 ::ffff:200\.0\.209\.6 \(roce_v2\)
// example-run.link_local: nccl-769.devinfo.txt 1 any
// example-expect: validated:index=1,family=any failed: link-local GID rejected: mlx5_bond_0 port 1: index 1 holds fe80::ac0:ebff:feda:1cfb \(roce_v2\), a link-local GID: not routed on ethernet
// example-run.empty: macmini-mapped-at-2.json 1
// example-expect: rdma_en2 port 1: validated:index=1 failed: GID entry is empty: rdma_en2 port 1: index 1 is empty
// clang-format on
#include <gidpolicy/policies/validated_explicit.hpp>

#include "example_support.hpp"

#include <charconv>
#include <cstring>

int main(int argc, char** argv) {
  std::uint32_t index = 0;
  if (argc < 3 || argc > 4 ||
      std::from_chars(argv[2], argv[2] + std::strlen(argv[2]), index).ec != std::errc()) {
    std::cerr << "usage: validated_explicit TABLE N [ipv4|ipv6|any]\n";
    return 2;
  }
  gidpolicy::ValidatedExplicit policy{.index = index};
  if (argc == 4) {
    auto f = gidpolicy::family_filter_from_string(argv[3]);
    if (!f) {
      std::cerr << "family: ipv4, ipv6 or any\n";
      return 2;
    }
    policy.family = *f;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  for (const auto& t : *tables)
    if (!example::report(t, policy.spec(), policy.select(t))) status = 1;
  return status;
}
