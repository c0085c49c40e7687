// select() cost per strategy on tables of 4, 64, 256 and 1024 entries, beside a naive
// reference loop doing JACCL's scan with memcmp.
//
// The table is the worst case for every scanning strategy that can succeed: link-local v1/v2
// pairs fill every slot except the only IPv4-mapped pair, which sits as late as an sgid_index
// can reach (the last two slots, or 252/253 in a table longer than 256). JACCL's scan, the naive
// loop and first-mapped read every entry up to it; the ranked policy reads every entry.
// Printed counters: "ratio_to_naive" is the strategy's time divided by the naive loop's time for
// the same table size (measured in the same process, so machine noise largely cancels).
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>

#include "worst_case_table.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

namespace {

using namespace gidpolicy;

using bench::naive_jaccl_scan;
using bench::worst_case_table;

const GidTable& table_of(std::int64_t n) {
  static std::map<std::int64_t, GidTable> cache;
  auto it = cache.find(n);
  if (it == cache.end()) it = cache.emplace(n, worst_case_table(static_cast<std::uint32_t>(n))).first;
  return it->second;
}

// Naive time per table size, measured first, used for the ratio counters.
std::map<std::int64_t, double>& naive_ns() {
  static std::map<std::int64_t, double> m;
  return m;
}

void BM_naive_jaccl_scan(benchmark::State& state) {
  const GidTable& t = table_of(state.range(0));
  auto start = std::chrono::steady_clock::now();
  std::int64_t iters = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(naive_jaccl_scan(t));
    ++iters;
  }
  double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  naive_ns()[state.range(0)] = ns / static_cast<double>(iters);
  state.counters["entries"] = static_cast<double>(t.size());
}

template <class P>
void run_policy(benchmark::State& state, const P& policy, bool trace) {
  const GidTable& t = table_of(state.range(0));
  SelectOptions opts{.trace = trace};
  auto start = std::chrono::steady_clock::now();
  std::int64_t iters = 0;
  for (auto _ : state) {
    auto r = policy.select(t, opts);
    benchmark::DoNotOptimize(r);
    ++iters;
  }
  double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
              static_cast<double>(iters);
  auto base = naive_ns().find(state.range(0));
  if (base != naive_ns().end() && base->second > 0) state.counters["ratio_to_naive"] = ns / base->second;
  state.counters["entries"] = static_cast<double>(t.size());
}

// The explicit-index strategies are given the index of the mapped pair's RoCE v2 entry.
std::uint32_t v2_index(std::int64_t n) { return bench::v2_index(table_of(n)); }

void BM_jaccl_first_mapped(benchmark::State& s) { run_policy(s, JacclFirstMapped{}, false); }
void BM_jaccl_first_mapped_trace(benchmark::State& s) { run_policy(s, JacclFirstMapped{}, true); }
void BM_jaccl_legacy_index1(benchmark::State& s) { run_policy(s, JacclLegacyIndex1{}, false); }
void BM_ds4_explicit_index(benchmark::State& s) {
  run_policy(s, Ds4ExplicitIndex{v2_index(s.range(0))}, false);
}
void BM_ds4_scan(benchmark::State& s) { run_policy(s, Ds4Scan{}, false); }
void BM_ds4_linux(benchmark::State& s) { run_policy(s, Ds4Linux{}, false); }
void BM_validated_explicit(benchmark::State& s) {
  run_policy(s, ValidatedExplicit{.index = v2_index(s.range(0))}, false);
}
void BM_ranked(benchmark::State& s) { run_policy(s, Ranked{}, false); }
void BM_ranked_trace(benchmark::State& s) { run_policy(s, Ranked{}, true); }

#define GIDPOLICY_SIZES ->Arg(4)->Arg(64)->Arg(256)->Arg(1024)
BENCHMARK(BM_naive_jaccl_scan) GIDPOLICY_SIZES;
BENCHMARK(BM_jaccl_first_mapped) GIDPOLICY_SIZES;
BENCHMARK(BM_jaccl_first_mapped_trace) GIDPOLICY_SIZES;
BENCHMARK(BM_jaccl_legacy_index1) GIDPOLICY_SIZES;
BENCHMARK(BM_ds4_explicit_index) GIDPOLICY_SIZES;
BENCHMARK(BM_ds4_scan) GIDPOLICY_SIZES;
BENCHMARK(BM_ds4_linux) GIDPOLICY_SIZES;
BENCHMARK(BM_validated_explicit) GIDPOLICY_SIZES;
BENCHMARK(BM_ranked) GIDPOLICY_SIZES;
BENCHMARK(BM_ranked_trace) GIDPOLICY_SIZES;

}  // namespace

BENCHMARK_MAIN();
