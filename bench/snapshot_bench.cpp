// Snapshot cost in driver calls, per read method and table size, from the fake's counters,
// beside JACCL's per-index loop (one port query, then ibv_query_gid for 0..k until the first
// IPv4-mapped GID at k).
//
// Counters printed per benchmark: driver_calls (every VerbsApi call snapshot() made, including
// opening and closing the device by name), gid_reads, and jaccl_loop_calls (1 + k + 1 for the
// same table). Wall time is printed too, but the fake answers from memory: the figure that
// transfers to hardware is the call count (each is a syscall/ioctl on a real device).
#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>

namespace {

using namespace gidpolicy;
using gidpolicy::verbs::ReadMethod;

// An mlx5-shaped table of n slots: link-local v1/v2 pairs, the IPv4 pair at k, k+1.
GidTable table(std::uint32_t n, std::uint32_t k) {
  PortInfo p;
  p.device = "mlx5_0";
  p.link_layer = LinkLayer::ethernet();
  p.gid_tbl_len = n;
  std::vector<GidEntry> entries;
  for (std::uint32_t i = 0; i + 1 < n; i += 2) {
    Gid::Bytes b{0xfe, 0x80};
    b[14] = static_cast<std::uint8_t>(i >> 8);
    b[15] = static_cast<std::uint8_t>(i | 1);
    Gid g = i == k ? Gid::ipv4_mapped(0x0a000001u) : Gid(b);
    entries.push_back(GidEntry::valid(i, g, GidType::roce_v1, "eth0", 2));
    entries.push_back(GidEntry::valid(i + 1, g, GidType::roce_v2, "eth0", 2));
  }
  return GidTable::make(p, std::move(entries)).value();
}

void run(benchmark::State& state, ReadMethod method, bool first_mapped) {
  const auto n = static_cast<std::uint32_t>(state.range(0));
  const std::uint32_t k = std::min<std::uint32_t>(n - 2, 2);  // mlx5's usual place: index 2
  fakes::FakeVerbs fake;
  if (!fake.add_port(table(n, k))) {
    state.SkipWithError("add_port failed");
    return;
  }
  verbs::SnapshotReport report;
  verbs::SnapshotOptions opts;
  opts.method = method;
  opts.report = &report;
  if (first_mapped) opts.stop_after = verbs::stop_at_first_ipv4_mapped();
  for (auto _ : state) {
    auto t = verbs::snapshot(fake, std::string_view("mlx5_0"), 1, opts);
    if (!t) {
      state.SkipWithError(t.error().what().c_str());
      return;
    }
    benchmark::DoNotOptimize(t);
  }
  state.counters["driver_calls"] = report.driver_calls;
  state.counters["gid_reads"] = report.gid_reads;
  // JACCL: query_port, then query_gid(0..k) stopping at the first mapped GID.
  state.counters["jaccl_loop_calls"] = 1 + k + 1;
}

void BM_snapshot_table_call(benchmark::State& s) { run(s, ReadMethod::gid_table, false); }
void BM_snapshot_gid_ex_full(benchmark::State& s) { run(s, ReadMethod::gid_entry, false); }
void BM_snapshot_gid_ex_first_mapped(benchmark::State& s) { run(s, ReadMethod::gid_entry, true); }
void BM_snapshot_legacy_first_mapped(benchmark::State& s) { run(s, ReadMethod::gid_legacy, true); }

#define GIDPOLICY_SIZES ->Arg(4)->Arg(64)->Arg(256)->Arg(1024)
BENCHMARK(BM_snapshot_table_call) GIDPOLICY_SIZES;
BENCHMARK(BM_snapshot_gid_ex_full) GIDPOLICY_SIZES;
BENCHMARK(BM_snapshot_gid_ex_first_mapped) GIDPOLICY_SIZES;
BENCHMARK(BM_snapshot_legacy_first_mapped) GIDPOLICY_SIZES;

}  // namespace

BENCHMARK_MAIN();
