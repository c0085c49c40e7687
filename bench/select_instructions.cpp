// Instruction counts of select() per strategy beside the naive JACCL memcmp scan, for
// callgrind (scripts/bench-instructions runs it). Instructions are repeatable on a shared,
// loaded 2-core machine where wall time is not; Google Benchmark (bench_select) gives times.
// Same worst-case table as select_bench.cpp: the only IPv4-mapped pair as late as an sgid_index
// can reach, link-local pairs everywhere else.
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/ranked.hpp>

#include "worst_case_table.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace {
using namespace gidpolicy;

using bench::worst_case_table;

volatile std::uint32_t g_sink;

__attribute__((noinline)) int naive_jaccl_scan(const GidTable& t) {
  static const std::uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  for (const GidEntry& e : t) {
    std::uint8_t raw[16];
    e.gid.copy_to(raw);
    if (std::memcmp(raw, kPrefix, sizeof kPrefix) == 0) return static_cast<int>(e.index);
  }
  return -1;
}
}  // namespace

// extern "C" names so callgrind's --toggle-collect can name each loop exactly.
extern "C" __attribute__((noinline)) void bench_naive(const GidTable* t, int n) {
  for (int i = 0; i < n; ++i) g_sink = static_cast<std::uint32_t>(naive_jaccl_scan(*t));
}
// The policy is built once, outside the loop, as a program builds it once from its spec; each
// call returns (and destroys) a whole Selection, the chosen entry copied out of the table.
extern "C" __attribute__((noinline)) void bench_first_mapped(const GidTable* t, int n) {
  const JacclFirstMapped p;
  for (int i = 0; i < n; ++i) g_sink = p.select(*t).value().entry.index;
}
extern "C" __attribute__((noinline)) void bench_ranked(const GidTable* t, int n) {
  const Ranked p;
  for (int i = 0; i < n; ++i) g_sink = p.select(*t).value().entry.index;
}
extern "C" __attribute__((noinline)) void bench_first_mapped_trace(const GidTable* t, int n) {
  const JacclFirstMapped p;
  for (int i = 0; i < n; ++i) g_sink = p.select(*t, {.trace = true}).value().entry.index;
}
extern "C" __attribute__((noinline)) void bench_ranked_trace(const GidTable* t, int n) {
  const Ranked p;
  for (int i = 0; i < n; ++i) g_sink = p.select(*t, {.trace = true}).value().entry.index;
}

int main(int argc, char** argv) {
  const auto size = argc > 1 ? static_cast<std::uint32_t>(std::atoi(argv[1])) : 256u;
  const int n = argc > 2 ? std::atoi(argv[2]) : 1000;
  const GidTable t = worst_case_table(size);
  bench_naive(&t, n);
  bench_first_mapped(&t, n);
  bench_ranked(&t, n);
  bench_first_mapped_trace(&t, n);
  bench_ranked_trace(&t, n);
}
