// Ds4Scan: ds4 without an index: the first IPv4-mapped entry, routed from where it was found.
//
//   ds4_scan TABLE
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.ds4_scan.NAME (table files are relative to tables/); the output must match the
// regex of the `example-expect:` lines that follow, joined by newlines.
// clang-format off
// example-run.ibm: ibm-pr4-cx6.show_gids.txt
// example-expect: mlx5_0 port 1: ds4 -> index 4 ::ffff:172\.19\.0\.60 \(roce_v1\)
// example-run.ipv6only: mooncake-1617-ipv6only.show_gids.txt
// example-expect: rocep105s0 port 1: ds4 failed: no IPv4-mapped GID.*
// example-expect: rocep121s0 port 1: ds4 failed.*
// example-expect: rocep193s0f0 port 1: ds4 failed
// clang-format on
#include <gidpolicy/policies/ds4_scan.hpp>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: ds4_scan TABLE\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  for (const auto& t : *tables)
    if (!example::report(t, "ds4", gidpolicy::Ds4Scan{}.select(t))) status = 1;
  return status;
}
