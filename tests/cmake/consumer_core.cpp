// A consumer of gidpolicy::core alone (or pkg-config's gidpolicy-core): the pure pipeline, from a
// table to the plan a profile makes on it, linked without the host library. The consumer tests
// also check that neither this program nor the core library holds process spawning, sockets,
// getifaddrs or dlopen (check_core_symbols.cmake).
#include <gidpolicy/core.hpp>
#include <gidpolicy/formats/json.hpp>

#include <cstdio>

static_assert(__cplusplus >= 202002L, "gidpolicy::core should have requested C++20");

int main() {
  // A Thunderbolt-like port: link-local at 0, an empty slot, the IPv4-mapped GID at 2.
  const char* doc = R"({"schema": "gidpolicy.tables", "version": 1, "ports": [
    {"device": "rdma_en2", "port": 1, "link_layer": "thunderbolt", "gid_tbl_len": 16,
     "entries": [{"index": 0, "gid": "fe80::1"}, {"index": 1, "state": "empty"},
                 {"index": 2, "gid": "::ffff:10.99.0.3"}]}]})";
  auto tables = gidpolicy::formats::read_json(doc, "consumer_core");
  if (!tables) {
    std::fprintf(stderr, "read_json: %s\n", tables.error().what().c_str());
    return 1;
  }
  auto profile = gidpolicy::parse_profile("auto");
  if (!profile) {
    std::fprintf(stderr, "parse_profile: %s\n", profile.error().what().c_str());
    return 1;
  }
  auto plan = profile.value().plan(tables.value().front());
  if (!plan) {
    std::fprintf(stderr, "plan: %s\n", plan.error().what().c_str());
    return 1;
  }
  std::printf("consumer core: auto advertises %s and routes from sgid_index %u\n",
              plan.value().selection.entry.gid.to_string().c_str(), unsigned{plan.value().sgid_index});
  return 0;
}
