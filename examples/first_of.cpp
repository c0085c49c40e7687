// FirstOf: a configured index with an explicit, visible fallback, instead of NCCL's silent
// index 0: "index 3 if it is a valid IPv4 GID, otherwise the automatic choice". The trace shows
// why index 3 was refused before auto chose.
//
//   first_of TABLE
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.first_of.NAME (table files are relative to tables/); the output must match the
// regex of the `example-expect:` lines that follow, joined by newlines.
// clang-format off
// example-run.macmini: macmini-mapped-at-2.json
// example-expect: rdma_en2 port 1: first\(validated:index=3\|auto\) -> index 2 ::ffff:10\.99\.0\.3 \(unknown\)
// example-expect: validated:index=3: failed: GID entry is empty: rdma_en2 port 1: index 3 is empty
// example-expect:   \[3\] empty: empty slot
// example-expect: auto: selected
// example-expect:   \[0\] link_local
// clang-format on
#include <gidpolicy/policies/first_of.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: first_of TABLE\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  const gidpolicy::FirstOf policy{{gidpolicy::ValidatedExplicit{.index = 3}, gidpolicy::Ranked{}}};
  int status = 0;
  for (const auto& t : *tables)
    if (!example::report(t, policy.spec(), policy.select(t, {.trace = true}), true)) status = 1;
  return status;
}
