// select_spec: any behaviour by its spec string (the grammar the CLI, the C API and
// environment variables share), with the index it routes from and whether that agrees.
//
//   select_spec TABLE SPEC        e.g. select_spec t.json 'first(validated:index=3|auto)'
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.select_spec.NAME (table files are relative to tables/); the output must match the
// regex of the `example-expect:` lines that follow, joined by newlines.
// clang-format off
// example-run.jaccl: macmini-mapped-at-2.json jaccl
// example-expect: rdma_en2 port 1: jaccl advertises index 2 ::ffff:10\.99\.0\.3, routes from sgid_index 1: DISAGREES \(sgid_index 1 is empty; the advertised GID ::ffff:10\.99\.0\.3 is at index 2\)
// example-run.first: nccl-769.devinfo.txt 'first(validated:index=3,type=roce_v2|auto)'
// example-expect: mlx5_bond_0 port 1: first\(validated:index=3,type=roce_v2\|auto\) advertises index 3 ::ffff:200\.0\.209\.6, routes from sgid_index 3: agrees
// example-run.bad_spec: nccl-769.devinfo.txt validated:idx=3
// example-expect: select_spec: invalid policy spec: at position 10: expected an option of validated \(index, type, family, allow-link-local\), found 'idx'
// clang-format on
#include <gidpolicy/profiles.hpp>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: select_spec TABLE SPEC\n";
    return 2;
  }
  auto profile = gidpolicy::parse_profile(argv[2]);
  if (!profile) {
    std::cerr << "select_spec: " << profile.error().what() << "\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  for (const auto& t : *tables) {
    auto plan = profile.value().plan(t);
    if (!plan) {
      std::cout << example::where(t) << ": " << profile.value().spec() << " failed: " << plan.error().what()
                << "\n";
      status = 1;
      continue;
    }
    const auto& p = plan.value();
    std::cout << example::where(t) << ": " << profile.value().spec() << " advertises index "
              << p.selection.entry.index << " " << p.selection.entry.gid.to_string()
              << ", routes from sgid_index " << unsigned{p.sgid_index} << ": "
              << (p.agrees() ? "agrees" : "DISAGREES (" + p.agreement.explanation + ")") << "\n";
    if (!p.agrees()) status = 1;
  }
  return status;
}
