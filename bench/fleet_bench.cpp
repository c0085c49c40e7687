// Fleet analysis figures, printed beside today's per-pair cost of the fake fabric.
//
//   bench_fleet [--hosts N]... [--no-today] [--mesh-only]   (default sizes: 1024 and 10000)
//
// Prints, for the release build docs/performance.md quotes:
//  * today: FakeFabric::connect (what `gidpolicy simulate` runs) on meshes of 50-200 hosts,
//    its time per pair growing with the host count;
//  * fleet: Analysis::run (plan each host once, judge every pair from the two plans, count per
//    cause) on meshes of 1,024 and 10,000 hosts with 8 RoCE NICs each and a few broken hosts,
//    on 2 threads, with the peak resident memory after each size;
//  * reading: 10,000 host snapshot files of 8 NICs each (the JSON `gidpolicy show --json`
//    prints) through read_snapshots() on 2 threads, in MB/s.
// Goals: 1,024 hosts < 1 s, 10,000 hosts < 10 s, memory linear in hosts, reading >= 100 MB/s.
#include <gidpolicy/fakes/fake_fabric.hpp>
#include <gidpolicy/fleet.hpp>
#include <gidpolicy/profiles.hpp>

#include <sys/resource.h>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace gidpolicy;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// User + system CPU seconds of this process (all threads): what load on a shared machine
/// does not inflate, unlike wall time.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

long peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// An mlx5 RoCE port as Linux lays it out: fe80 v1/v2 at 0/1, the IPv4 pair at 2/3. `broken`
// drops the IPv4 address (the NIC whose interface lost it).
GidTable roce_port(int host, int nic, bool broken) {
  PortInfo p;
  p.device = "mlx5_" + std::to_string(nic);
  p.port = 1;
  p.link_layer = LinkLayer::ethernet();
  p.gid_tbl_len = 256;
  p.active_mtu = Mtu::mtu_4096;
  std::array<std::uint8_t, 16> ll{0xfe, 0x80};
  ll[8] = 0x02;
  ll[13] = static_cast<std::uint8_t>(nic);
  ll[14] = static_cast<std::uint8_t>(host >> 8);
  ll[15] = static_cast<std::uint8_t>(host);
  const Gid link_local = Gid::from_bytes(ll.data());
  std::vector<GidEntry> e{GidEntry::valid(0, link_local, GidType::roce_v1, "eth" + std::to_string(nic)),
                          GidEntry::valid(1, link_local, GidType::roce_v2, "eth" + std::to_string(nic))};
  if (!broken) {
    const std::string ip = "::ffff:10." + std::to_string(nic) + "." + std::to_string(host / 250) + "." +
                           std::to_string(1 + host % 250);
    const Gid v4 = Gid::parse(ip).value();
    e.push_back(GidEntry::valid(2, v4, GidType::roce_v1, "eth" + std::to_string(nic)));
    e.push_back(GidEntry::valid(3, v4, GidType::roce_v2, "eth" + std::to_string(nic)));
  }
  return GidTable::make(p, std::move(e)).value();
}

std::vector<fleet::HostSnapshot> make_hosts(int n) {
  std::vector<fleet::HostSnapshot> hosts;
  hosts.reserve(static_cast<std::size_t>(n));
  for (int h = 0; h < n; ++h) {
    fleet::HostSnapshot s;
    s.host = "gpu" + std::to_string(h);
    s.source = "bench";
    // One host in 97 lost NIC 0's IPv4 address: the fleet has failures to count.
    for (int k = 0; k < 8; ++k) s.ports.push_back(roce_port(h, k, k == 0 && h % 97 == 5));
    hosts.push_back(std::move(s));
  }
  return hosts;
}

// The text `gidpolicy show --json` prints for one host (same keys and layout, dump(2)).
std::string show_json(const fleet::HostSnapshot& s) {
  std::string out = "[\n";
  for (std::size_t k = 0; k < s.ports.size(); ++k) {
    const GidTable& t = s.ports[k];
    out +=
        "  {\n    \"host\": \"" + s.host + "\",\n    \"device\": \"" + t.port().device +
        "\",\n    \"port\": 1,\n    \"state\": \"active\",\n    \"link_layer\": \"ethernet\",\n"
        "    \"gid_tbl_len\": 256,\n    \"active_mtu\": 4096,\n    \"lid\": 0,\n    \"holes\": \"empty\",\n"
        "    \"entries\": [\n";
    for (std::size_t i = 0; i < t.size(); ++i) {
      const GidEntry& e = t.entries()[i];
      const bool mapped = e.gid.is_ipv4_mapped();
      out += "      {\n        \"index\": " + std::to_string(e.index) +
             ",\n        \"state\": \"valid\",\n        \"gid\": \"" + e.gid.to_string() +
             "\",\n        \"type\": \"" + std::string(to_string(e.type)) +
             "\",\n        \"ipv4\": " + (mapped ? "\"" + e.gid.ipv4_string() + "\"" : std::string("null")) +
             ",\n        \"netdev\": \"" + e.netdev +
             "\",\n        \"errno\": null,\n        \"flags\": [\n          \"" +
             (mapped ? "ipv4-mapped" : "link-local") + "\"\n        ]\n      }" +
             (i + 1 < t.size() ? ",\n" : "\n");
    }
    out += "    ]\n  }" + std::string(k + 1 < s.ports.size() ? ",\n" : "\n");
  }
  return out + "]\n";
}

void today(int n) {
  fakes::FakeFabric fabric;
  const GidTable t = roce_port(1, 0, false);
  for (int h = 0; h < n; ++h)
    (void)fabric.add_host(
        {"h" + std::to_string(h), roce_port(h, 0, false), profiles::automatic(), std::nullopt});
  (void)t;
  const double c0 = cpu_seconds();
  const auto t0 = Clock::now();
  auto r = fabric.connect(fleet::Pairing::mesh);
  const double s = seconds_since(t0);
  const double cpu = cpu_seconds() - c0;
  const double pairs = static_cast<double>(n) * (n - 1) / 2;
  std::printf(
      "  today  simulate mesh %6d hosts %12.0f pairs %8.3f s wall %8.3f s CPU %8.2f us/pair (CPU)  (%zu "
      "connected)\n",
      n, pairs, s, cpu, cpu / pairs * 1e6, r ? r.value().connected_count() : 0);
}

void fleet_mesh(int n, unsigned threads) {
  auto hosts = make_hosts(n);
  fleet::Topology topo;
  topo.device = "mlx5_0";
  const double c0 = cpu_seconds();
  const auto t0 = Clock::now();
  auto an =
      fleet::Analysis::run(std::move(hosts), topo, {.profile = profiles::automatic(), .threads = threads});
  const double s = seconds_since(t0);
  const double cpu = cpu_seconds() - c0;
  if (!an) {
    std::printf("  fleet failed: %s\n", an.error().what().c_str());
    return;
  }
  const auto& sum = an.value().summary();
  std::printf(
      "  fleet  mesh %9d hosts %12llu pairs %8.3f s wall %8.3f s CPU %8.4f us/pair  %u threads  peak RSS %ld "
      "MB  "
      "(%llu connected, %zu causes)\n",
      n, static_cast<unsigned long long>(sum.links), s, cpu, s / static_cast<double>(sum.links) * 1e6,
      threads, peak_rss_mb(), static_cast<unsigned long long>(sum.connected), sum.groups.size());
}

void fleet_rail(int n, unsigned threads) {
  auto hosts = make_hosts(n);
  fleet::Topology topo;
  topo.pairing = fleet::Pairing::rail;
  const auto t0 = Clock::now();
  auto an =
      fleet::Analysis::run(std::move(hosts), topo, {.profile = profiles::automatic(), .threads = threads});
  const double s = seconds_since(t0);
  if (!an) return;
  const auto& sum = an.value().summary();
  std::printf("  fleet  rail %9d hosts %12llu links %9.3f s %9.4f us/link  %d threads  peak RSS %ld MB\n", n,
              static_cast<unsigned long long>(sum.links), s, s / static_cast<double>(sum.links) * 1e6,
              threads, peak_rss_mb());
}

void reading(int n, unsigned threads) {
  const fs::path dir = fs::temp_directory_path() / ("gidpolicy-bench-fleet-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::size_t bytes = 0;
  {
    auto hosts = make_hosts(n);
    for (const auto& h : hosts) {
      const std::string text = show_json(h);
      bytes += text.size();
      std::ofstream(dir / (h.host + ".json"), std::ios::binary) << text;
    }
  }
  const std::vector<std::string> args{dir.string()};
  fleet::ReadLimits limits;
  limits.threads = threads;
  const double c0 = cpu_seconds();
  const auto t0 = Clock::now();
  auto hosts = fleet::read_snapshots(args, limits);
  const double s = seconds_since(t0);
  const double cpu = cpu_seconds() - c0;
  std::printf(
      "  read   %9d host files %8.1f MB (%zu B each) %7.3f s wall %8.1f MB/s  %7.3f s CPU %8.1f MB per CPU-s "
      " %u threads%s\n",
      n, static_cast<double>(bytes) / 1e6, bytes / static_cast<std::size_t>(n), s,
      static_cast<double>(bytes) / 1e6 / s, cpu, static_cast<double>(bytes) / 1e6 / cpu, threads,
      hosts ? "" : "  FAILED");
  if (!hosts) std::printf("    %s\n", hosts.error().what().c_str());
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  bool skip_today = false;
  bool mesh_only = false;  // one size, two threads: its peak RSS is that size's alone
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--hosts" && i + 1 < argc) sizes.push_back(std::atoi(argv[++i]));
    if (a == "--no-today") skip_today = true;
    if (a == "--mesh-only") mesh_only = true;
  }
  if (sizes.empty()) sizes = {1024, 10000};
  std::printf("gidpolicy fleet benchmark (hardware threads: %u)\n", std::thread::hardware_concurrency());
  if (mesh_only) {
    for (int n : sizes) fleet_mesh(n, 2);
    return 0;
  }
  if (!skip_today)
    for (int n : {50, 100, 200}) today(n);
  for (int n : sizes) fleet_mesh(n, 1);
  for (int n : sizes) fleet_mesh(n, 2);
  fleet_rail(1024, 2);
  reading(10000, 1);
  reading(10000, 2);
  return 0;
}
