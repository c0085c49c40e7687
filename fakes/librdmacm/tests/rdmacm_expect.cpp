// What rdma_cm chooses for an address, by the library's rule (gidpolicy::rdma_cm_source): the
// tests compare the fake librdmacm's control log with this, so the two share one model.
//   rdmacm_expect TABLE ADDRESS NETDEV|- [MODES]  ->  "DEVICE PORT INDEX" (exit 0) or the error (exit 2)
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/rdma_cm.hpp>

#include <cstdio>
#include <optional>
#include <string>

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: rdmacm_expect TABLE ADDRESS NETDEV|- [MODES]\n");
    return 1;
  }
  auto tables = gidpolicy::formats::read_tables_file(argv[1]);
  if (!tables) {
    std::fprintf(stderr, "%s\n", tables.error().detail.c_str());
    return 1;
  }
  auto address = gidpolicy::parse_address(argv[2]);
  if (!address) {
    std::fprintf(stderr, "%s\n", address.error().detail.c_str());
    return 1;
  }
  std::vector<gidpolicy::RoceModeSetting> modes;
  if (argc == 5) {
    auto m = gidpolicy::parse_roce_modes(argv[4]);
    if (!m) {
      std::fprintf(stderr, "%s\n", m.error().detail.c_str());
      return 1;
    }
    modes = std::move(m).value();
  }
  const std::string netdev = argv[3];
  auto c = gidpolicy::rdma_cm_source(tables.value(), address.value(),
                                     netdev == "-" ? std::nullopt : std::optional<std::string_view>(netdev),
                                     modes);
  if (!c) {
    std::printf("%s\n", c.error().detail.c_str());
    return 2;
  }
  const auto& port = tables.value()[c.value().table].port();
  std::printf("%s %u %u\n", port.device.c_str(), port.port, c.value().entry->index);
  return 0;
}
