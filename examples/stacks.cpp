// The stacks' own choices (nccl, ucx, perftest, mooncake, libfabric, rdma_cm) on a table: what
// each picks by itself, in its own terms, and whether the RTR then works (stacks.hpp).
//
//   stacks TABLE [SPEC...]        (default: every stack's automatic choice)
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
  std::vector<std::string> specs(argv + 2, argv + argc);
  if (specs.empty())
    for (const auto& s : gidpolicy::stack_catalogue()) specs.emplace_back(s.spec);
  int status = 0;
  for (const auto& t : *tables) {
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
