// A small gidpolicy consumer, shared by the find_package, add_subdirectory, FetchContent and
// pkg-config consumer projects. It includes the front door (<gidpolicy/gidpolicy.hpp>, everything
// public), exercises the core and the host library through whichever packaging path built it
// (gidpolicy::gidpolicy, or gidpolicy::host, which links the core), and prints lines the tests match.
#include <gidpolicy/gidpolicy.hpp>

#include <cstdio>
#include <string>

#if defined(GIDPOLICY_CONSUMER_VERBS)  // find_package consumer: also link gidpolicy::verbs
#include <gidpolicy/verbs/libibverbs_api.hpp>
#endif

// C++20 must come from gidpolicy's compile feature (cxx_std_20), not from the consumer: GCC 12
// and Clang 14 default to C++17, so this fails if the usage requirement is lost.
static_assert(__cplusplus >= 202002L, "gidpolicy::gidpolicy should have requested C++20");

int main() {
  // A Thunderbolt-like port: link-local at 0, an empty slot, the IPv4-mapped GID at 2.
  const char* doc = R"({"schema": "gidpolicy.tables", "version": 1, "ports": [
    {"device": "rdma_en2", "port": 1, "link_layer": "thunderbolt", "gid_tbl_len": 16,
     "entries": [{"index": 0, "gid": "fe80::1"}, {"index": 1, "state": "empty"},
                 {"index": 2, "gid": "::ffff:10.99.0.3"}]}]})";
  auto tables = gidpolicy::formats::read_json(doc, "consumer");
  if (!tables) {
    std::fprintf(stderr, "read_json: %s\n", tables.error().what().c_str());
    return 1;
  }
#if defined(GIDPOLICY_CONSUMER_VERBS)
  // The linked backend: on a machine without RDMA, errc::no_devices (a value, not a crash).
  gidpolicy::verbs::LibibverbsApi api;
  auto devices = api.device_names();
  std::printf("consumer: libibverbs backend: %s\n",
              devices ? (std::to_string(devices.value().size()) + " device(s)").c_str()
                      : devices.error().what().c_str());
#endif
  // The host library: its dlopen backend, asked for a library no machine has (a value, not a crash).
  gidpolicy::verbs::DlopenApi missing("libgidpolicy-consumer-no-such-verbs.so.1");
  if (missing.loaded() || !(missing.load_error() == gidpolicy::errc::library_unavailable)) {
    std::fprintf(stderr, "consumer: DlopenApi of a missing library: %s\n", missing.load_error().what().c_str());
    return 1;
  }
  std::printf("consumer: host library: a missing libibverbs is library_unavailable\n");
  const gidpolicy::GidTable& table = tables.value().front();
  for (const gidpolicy::GidEntry& e : table) {
    if (e.usable() && e.gid.is_ipv4_mapped()) {
      std::printf("consumer: ipv4-mapped GID %s at index %u of %u\n", e.gid.to_string().c_str(),
                  e.index, table.length());
      return 0;
    }
  }
  std::fprintf(stderr, "consumer: no IPv4-mapped GID found\n");
  return 1;
}
