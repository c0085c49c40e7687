// PerDevice: a policy per NIC (NVIDIA/nccl#890). Here mlx5_1 is pinned to its RoCE v1 IPv4
// entry (index 6: say, a peer that only speaks v1) and every other device uses auto.
//
//   per_device TABLE
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.per_device.NAME (table files are relative to tables/); the output must match the
// regex of the `example-expect:` lines that follow, joined by newlines.
// clang-format off
// example-run.pod: nccl-1573-pod.show_gids.txt
// example-expect: policy per-device\(mlx5_1=validated:index=6,type=roce_v1;\*=auto\)
// example-expect: mlx5_0 port 1: auto -> index 7 ::ffff:10\.152\.0\.12 \(roce_v2\)
// example-expect: mlx5_1 port 1: validated:index=6,type=roce_v1 -> index 6 ::ffff:10\.152\.4\.12 \(roce_v1\)
// clang-format on
#include <gidpolicy/policies/per_device.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: per_device TABLE\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  const gidpolicy::PerDevice policy{
      .by_device = {{"mlx5_1",
                     gidpolicy::ValidatedExplicit{.index = 6, .type = gidpolicy::TypeFilter::roce_v1}}},
      .fallback = gidpolicy::AnyPolicy(gidpolicy::Ranked{})};
  std::cout << "policy " << policy.spec() << "\n";
  int status = 0;
  for (const auto& t : *tables)
    if (!example::report(t, policy.policy_for(t.port().device)->spec(), policy.select(t))) status = 1;
  return status;
}
