// The stacks' own choices (nccl, ucx, perftest, mooncake, libfabric, rdma_cm) on a table: what
// each picks by itself, in its own terms, and whether the RTR then works (stacks.hpp).
//
//   stacks TABLE [SPEC...]        (default: the automatic choice of every stack that runs on the port)
//
// Checked runs (examples/policy_examples.cmake): UCX 1.13 rejects the pod's ports (gid[0] is
// empty) where NCCL takes 7; on an IPv6-only port NCCL keeps the link-local fe80 at 0, Mooncake
// the ULA.
// clang-format off
// example-run.nccl1573: nccl-1573-pod.show_gids.txt nccl ucx
// example-expect: mlx5_0 port 1: nccl -> index 7, ok
// example-expect: .*
// example-expect: mlx5_0 port 1: ucx -> nothing, rejects the port
// example-expect:   why: .*invalid gid\[0\] on mlx5_0:1
// example-run.ipv6only: mooncake-1617-ipv6only.show_gids.txt nccl mooncake
// example-expect: rocep105s0 port 1: nccl -> index 0, times out.*
// example-expect: .*
// example-expect: rocep105s0 port 1: mooncake -> index 1, ok
// clang-format on
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/stacks.hpp>

#include "example_support.hpp"

#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: stacks TABLE [SPEC...]\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  const std::vector<std::string> given(argv + 2, argv + argc);
  int status = 0;
  for (const auto& t : *tables) {
    // Without specs: each stack that runs on this port's link layer, by the path it takes there
    // (ds4's Linux path on RoCE, JACCL only on Thunderbolt).
    std::vector<std::string> specs = given;
    if (specs.empty())
      for (const auto& s : gidpolicy::stack_catalogue())
        if (s.predicted && s.runs_on.has(t.port().link_layer))
          specs.emplace_back(gidpolicy::automatic_spec(s, t.port().link_layer));
    for (const auto& spec : specs) {
      auto profile = gidpolicy::parse_profile(spec);
      if (!profile) {
        std::cerr << spec << ": " << profile.error().what() << "\n";
        return 2;
      }
      const gidpolicy::StackPrediction p = gidpolicy::predict_profile(
          profile.value(), t, gidpolicy::DriverModel::for_link_layer(t.port().link_layer));
      std::cout << t.port().device << " port " << t.port().port << ": " << spec << " -> "
                << (p.chose ? "index " + std::to_string(p.index) : std::string("nothing")) << ", "
                << p.outcome << "\n  why: " << p.why << "\n";
      if (!p.works) status = 1;
    }
  }
  return status;
}
