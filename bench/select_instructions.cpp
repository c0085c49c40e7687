// Instruction counts of select() per strategy beside the naive JACCL memcmp scan, for
// callgrind (scripts/bench-instructions runs it). Instructions are repeatable on a shared,
// loaded 2-core machine where wall time is not; Google Benchmark (bench_select) gives times.
// Same worst-case table as select_bench.cpp: the only IPv4-mapped pair as late as an sgid_index
// can reach, link-local pairs everywhere else. The explicit-index strategies are given the
// index of that pair's RoCE v2 entry.
//
//   bench_select_instructions --list            the strategy names, one per line
//   bench_select_instructions SIZE N            run every strategy N times on a SIZE-entry table
// Each strategy runs inside its own extern "C" function `bench_<name>`, so callgrind's
// --toggle-collect can count exactly one of them.
#include <gidpolicy/policies/any_policy.hpp>
#include <gidpolicy/policies/ds4_explicit_index.hpp>
#include <gidpolicy/policies/ds4_linux.hpp>
#include <gidpolicy/policies/ds4_scan.hpp>
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/policies/jaccl_legacy_index1.hpp>
#include <gidpolicy/policies/ranked.hpp>
#include <gidpolicy/policies/spec.hpp>
#include <gidpolicy/policies/validated_explicit.hpp>

#include "worst_case_table.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {
using namespace gidpolicy;

using bench::naive_jaccl_scan;
using bench::v2_index;
using bench::worst_case_table;

volatile std::uint32_t g_sink;

/// The policy is built once, outside the loop, as a program builds it once from its spec; each
/// call returns (and destroys) a whole Selection, the chosen entry copied out of the table.
template <class P>
void run(const P& p, const GidTable& t, int n, bool trace) {
  for (int i = 0; i < n; ++i) g_sink = p.select(t, {.trace = trace}).value().entry.index;
}

/// Every policy, built before counting starts (main), so only select() calls are counted.
struct Policies {
  explicit Policies(const GidTable& t)
      : ds4_explicit{v2_index(t)}, validated{.index = v2_index(t)}, any_auto(parse_policy("auto").value()) {}
  JacclFirstMapped first_mapped;
  JacclLegacyIndex1 jaccl_legacy;
  Ds4ExplicitIndex ds4_explicit;
  Ds4Scan ds4_scan;
  Ds4Linux ds4_linux;
  ValidatedExplicit validated;
  Ranked ranked;
  AnyPolicy any_auto;
};
const Policies* g_policies = nullptr;
}  // namespace

#define GIDPOLICY_BENCH(name, ...) \
  extern "C" __attribute__((noinline)) void bench_##name(const GidTable* t, int n) { __VA_ARGS__; }
// (extern "C" names so callgrind's --toggle-collect can name each loop exactly.)
GIDPOLICY_BENCH(naive, for (int i = 0; i < n; ++i) g_sink = static_cast<std::uint32_t>(naive_jaccl_scan(*t)))
GIDPOLICY_BENCH(first_mapped, run(g_policies->first_mapped, *t, n, false))
GIDPOLICY_BENCH(jaccl_legacy, run(g_policies->jaccl_legacy, *t, n, false))
GIDPOLICY_BENCH(ds4_explicit, run(g_policies->ds4_explicit, *t, n, false))
GIDPOLICY_BENCH(ds4_scan, run(g_policies->ds4_scan, *t, n, false))
GIDPOLICY_BENCH(ds4_linux, run(g_policies->ds4_linux, *t, n, false))
GIDPOLICY_BENCH(validated, run(g_policies->validated, *t, n, false))
GIDPOLICY_BENCH(ranked, run(g_policies->ranked, *t, n, false))
GIDPOLICY_BENCH(any_auto, run(g_policies->any_auto, *t, n, false))
GIDPOLICY_BENCH(first_mapped_trace, run(g_policies->first_mapped, *t, n, true))
GIDPOLICY_BENCH(ranked_trace, run(g_policies->ranked, *t, n, true))

namespace {
struct Bench {
  const char* name;
  void (*fn)(const GidTable*, int);
};
constexpr Bench kBenches[] = {
    {"naive", bench_naive},
    {"first_mapped", bench_first_mapped},
    {"jaccl_legacy", bench_jaccl_legacy},
    {"ds4_explicit", bench_ds4_explicit},
    {"ds4_scan", bench_ds4_scan},
    {"ds4_linux", bench_ds4_linux},
    {"validated", bench_validated},
    {"ranked", bench_ranked},
    {"any_auto", bench_any_auto},
    {"first_mapped_trace", bench_first_mapped_trace},
    {"ranked_trace", bench_ranked_trace},
};
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--list") {
    for (const Bench& b : kBenches) std::puts(b.name);
    return 0;
  }
  const auto size = argc > 1 ? static_cast<std::uint32_t>(std::atoi(argv[1])) : 256u;
  const int n = argc > 2 ? std::atoi(argv[2]) : 1000;
  const GidTable t = worst_case_table(size);
  const Policies policies(t);
  g_policies = &policies;
  for (const Bench& b : kBenches) b.fn(&t, n);
}
