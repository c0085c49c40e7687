// A small gidpolicy consumer, shared by the find_package, add_subdirectory, FetchContent and
// pkg-config consumer projects. It exercises the public headers and the compiled core through
// whichever packaging path built it, and prints a line the tests match.
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>

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
