// Ds4ExplicitIndex: ds4's `--rdma-gid-index N`: the index is read and accepted unchecked; an
// index above 255 is where ds4 would silently wrap, and gidpolicy reports it instead.
//
//   ds4_explicit_index TABLE N
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.ds4_explicit_index.NAME (table files are relative to tables/); the output must match the
// regex of the `example-expect:` lines that follow, joined by newlines.
// clang-format off
// example-run.empty: macmini-mapped-at-2.json 1
// example-expect: rdma_en2 port 1: ds4:index=1 -> index 1 <zero GID>
// example-run.out_of_range: nccl-1573-pod.show_gids.txt 9
// example-expect: mlx5_0 port 1: ds4:index=9 failed: GID index out of range: mlx5_0 port 1: index 9 is not below the entries listed: 8.*
// example-expect: mlx5_1 port 1: ds4:index=9 failed
// example-run.not_shown: nccl-769.devinfo.txt 255
// example-expect: mlx5_bond_0 port 1: ds4:index=255 failed: GID entry not shown by the source
// clang-format on
#include <gidpolicy/policies/ds4_explicit_index.hpp>

#include "example_support.hpp"

#include <charconv>
#include <cstring>

int main(int argc, char** argv) {
  std::uint32_t index = 0;
  if (argc != 3 || std::from_chars(argv[2], argv[2] + std::strlen(argv[2]), index).ec != std::errc()) {
    std::cerr << "usage: ds4_explicit_index TABLE N\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  const gidpolicy::Ds4ExplicitIndex policy{index};
  for (const auto& t : *tables)
    if (!example::report(t, policy.spec(), policy.select(t))) status = 1;
  return status;
}
