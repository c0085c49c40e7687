// Ds4Linux: ds4's tp_rdma_linux_gid: RoCE v2, non-zero, the control socket's local address
// scoring 2; a forced index is checked (range, readable, v2, non-zero) and never falls back.
//
//   ds4_linux TABLE [--local ADDR] [--index N] [--explain]
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.ds4_linux.NAME (table files are relative to tables/); the output must match the
// regex of the `example-expect:` lines that follow, joined by newlines.
// clang-format off
// ds4's own Linux unit table: local 127.0.0.1 -> 3; forced 2 -> 2; forced -1, 1, 4, 5, INT_MAX -> error.
// example-run.local: ds4-linux-unit.json --local 127.0.0.1
// example-expect: ds4_test0 port 1: ds4-linux:local=127\.0\.0\.1 -> index 3 ::ffff:127\.0\.0\.1 \(roce_v2\)
// example-run.forced2: ds4-linux-unit.json --local 127.0.0.1 --index 2
// example-expect: ds4-linux:local=127\.0\.0\.1,index=2 -> index 2 ::ffff:127\.0\.0\.2
// example-run.forced-1: ds4-linux-unit.json --local 127.0.0.1 --index -1
// example-expect: ds4-linux:local=127\.0\.0\.1,index=-1 failed: .
// example-run.forced1: ds4-linux-unit.json --local 127.0.0.1 --index 1
// example-expect: ds4-linux:local=127\.0\.0\.1,index=1 failed: .
// example-run.forced4: ds4-linux-unit.json --local 127.0.0.1 --index 4
// example-expect: ds4-linux:local=127\.0\.0\.1,index=4 failed: .
// example-run.forced5: ds4-linux-unit.json --local 127.0.0.1 --index 5
// example-expect: ds4-linux:local=127\.0\.0\.1,index=5 failed: .
// example-run.forced2147483647: ds4-linux-unit.json --local 127.0.0.1 --index 2147483647
// example-expect: ds4-linux:local=127\.0\.0\.1,index=2147483647 failed: .
// example-run.explain: ds4-linux-unit.json --explain
// example-expect: ds4-linux -> index 2 .*
// example-expect: .*
// example-expect:   \[0\] wrong_type: .*
// example-expect:   \[1\] wrong_type: .*
// example-expect:   \[2\] chosen: .*
// example-expect:   \[3\] lower_rank: .*
// example-expect:   \[4\] zero
// clang-format on
#include <gidpolicy/policies/ds4_linux.hpp>

#include "example_support.hpp"

#include <charconv>
#include <cstring>
#include <string_view>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: ds4_linux TABLE [--local ADDR] [--index N] [--explain]\n";
    return 2;
  }
  gidpolicy::Ds4Linux policy;
  bool explain = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--explain") {
      explain = true;
    } else if (a == "--local" && i + 1 < argc) {
      auto g = gidpolicy::parse_address(argv[++i]);
      if (!g) {
        std::cerr << "--local: " << g.error().what() << "\n";
        return 2;
      }
      policy.local = g.value();
    } else if (a == "--index" && i + 1 < argc) {
      std::int32_t n = 0;
      const char* s = argv[++i];
      if (std::from_chars(s, s + std::strlen(s), n).ec != std::errc()) {
        std::cerr << "--index: not an int: " << s << "\n";
        return 2;
      }
      policy.index = n;
    } else {
      std::cerr << "unknown argument: " << a << "\n";
      return 2;
    }
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  for (const auto& t : *tables)
    if (!example::report(t, policy.spec(), policy.select(t, {.trace = explain}), explain)) status = 1;
  return status;
}
