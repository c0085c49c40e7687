// Small entry points of the verbs ABI that need no device model: rate conversions, the sysfs
// root, fork protection of memory ranges, the P_Key index lookup, and the provider registration
// hook that libmlx5's and libefa's constructors call when a program (perftest) loads them.
#include "fakelib.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#pragma GCC visibility push(default)
extern "C" {
// rdma-core private declarations (driver.h); the public headers do not declare them.
const char* ibv_get_sysfs_path(void);
int ibv_dontfork_range(void* base, size_t size);
int ibv_dofork_range(void* base, size_t size);
struct verbs_device_ops;
void verbs_register_driver_34(const struct verbs_device_ops* ops);
}
#pragma GCC visibility pop

namespace gidpolicy::fakelib {

namespace {

struct RateRow {
  ibv_rate rate;
  int mult;  // multiple of 2.5 Gb/s; 0: the rate is not one (14, 56 Gb/s ...: FDR/EDR lanes)
  int mbps;  // the effective data rate rdma-core reports, after line encoding
};
constexpr std::array<RateRow, 23> kRates{{
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},         {IBV_RATE_10_GBPS, 4, 10000},
    {IBV_RATE_20_GBPS, 8, 20000},     {IBV_RATE_30_GBPS, 12, 30000},      {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},      {IBV_RATE_120_GBPS, 48, 120000},
    {IBV_RATE_14_GBPS, 0, 14062},     {IBV_RATE_56_GBPS, 0, 56250},       {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},   {IBV_RATE_25_GBPS, 0, 25781},       {IBV_RATE_100_GBPS, 0, 103125},
    {IBV_RATE_200_GBPS, 0, 206250},   {IBV_RATE_300_GBPS, 0, 309375},     {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},    {IBV_RATE_400_GBPS, 160, 425000},   {IBV_RATE_600_GBPS, 240, 637500},
    {IBV_RATE_800_GBPS, 320, 850000}, {IBV_RATE_1200_GBPS, 480, 1275000},
}};

const RateRow* rate_row(ibv_rate rate) noexcept {
  for (const RateRow& r : kRates)
    if (r.rate == rate) return &r;
  return nullptr;
}

// Providers registered by their constructors. A fixed array, no allocation and no Library:
// the constructors run while the program is still being loaded, before main, and a program that
// never opens a device must not configure the fake (which would print its "no devices" line).
constexpr std::size_t kMaxProviders = 16;
std::array<std::array<char, 32>, kMaxProviders> g_providers{};
std::atomic<std::size_t> g_provider_count{0};

}  // namespace

std::vector<std::string> registered_providers() {
  std::vector<std::string> out;
  const std::size_t n = std::min(g_provider_count.load(), kMaxProviders);
  for (std::size_t i = 0; i < n; ++i) out.emplace_back(g_providers[i].data());
  return out;
}

}  // namespace gidpolicy::fakelib

using namespace gidpolicy::fakelib;

extern "C" {

int ibv_rate_to_mult(enum ibv_rate rate) {
  const RateRow* r = rate_row(rate);
  return r && r->mult != 0 ? r->mult : -1;
}

enum ibv_rate mult_to_ibv_rate(int mult) {
  for (const RateRow& r : kRates)
    if (r.mult != 0 && r.mult == mult) return r.rate;
  return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate) {
  const RateRow* r = rate_row(rate);
  return r ? r->mbps : -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const RateRow& r : kRates)
    if (r.mbps == mbps) return r.rate;
  return IBV_RATE_MAX;
}

// rdma-core's rule: $SYSFS_PATH without trailing slashes (unless set-uid), else /sys. The fake's
// devices have their own ibdev_path; this is only the root other rdma-core code starts from.
const char* ibv_get_sysfs_path(void) {
  static const std::string path = [] {
    const char* env = ::getuid() == ::geteuid() ? std::getenv("SYSFS_PATH") : nullptr;
    if (!env) return std::string("/sys");
    std::string p(env, ::strnlen(env, 256));
    while (!p.empty() && p.back() == '/') p.pop_back();
    return p;
  }();
  return path.c_str();
}

// Nothing is pinned (the data path copies through sockets), so a fork never loses a memory
// region: like rdma-core when fork protection is not needed (ibv_is_fork_initialized reports
// IBV_FORK_UNNEEDED), both succeed without doing anything.
int ibv_dontfork_range(void*, size_t) { return 0; }
int ibv_dofork_range(void*, size_t) { return 0; }

// rdma-core's semantics: the index of `pkey` in the port's P_Key table, or a negative value.
int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
  constexpr int kMaxPkeys = 1 << 16;  // P_Key indexes are 16-bit: the bound of the walk
  for (int i = 0; i < kMaxPkeys; ++i) {
    __be16 at = 0;
    if (ibv_query_pkey(context, port_num, i, &at) != 0) return -1;
    if (at == pkey) return i;
  }
  return -1;
}

// A provider (libmlx5, libefa ...) announcing itself from its constructor. The fake's devices
// come from the GID table, never from a provider, so the registration is only remembered (its
// name is logged when the fake is configured): accepting it is all a provider needs.
void verbs_register_driver_34(const struct verbs_device_ops* ops) {
  if (!ops) return;
  // struct verbs_device_ops is rdma-core-private; its first member is the provider's name.
  const char* name = nullptr;
  std::memcpy(&name, ops, sizeof name);
  const std::size_t slot = g_provider_count.fetch_add(1);
  if (slot >= kMaxProviders || !name) return;
  std::array<char, 32>& dst = g_providers[slot];
  const std::size_t len = ::strnlen(name, dst.size() - 1);
  std::memcpy(dst.data(), name, len);
  dst[len] = '\0';
}

}  // extern "C"
