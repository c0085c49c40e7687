// print_table: load a GID table file (canonical JSON) and print each port as a grid.
// The smallest gidpolicy program: a snapshot is a value you can read from a file as well as
// from a live device, and every later step (selection, RTR) works on that value.
//
//   print_table examples/tables/macmini-mapped-at-2.json
//
// Checked runs: examples/policy_examples.cmake registers each `example-run.NAME: ARGS` as the
// test example.print_table.NAME (`example-run:` alone: example.print_table; table files are
// relative to tables/); the output must match the regex of the `example-expect:` lines that
// follow, joined by newlines.
// clang-format off
// example-run: macmini-mapped-at-2.json
// example-expect: rdma_en2 port 1  thunderbolt  active  gid_tbl_len 16
// example-expect:      0  fe80::14a2:7cff:fe31:9d05  unknown  link-local
// example-expect:      1  <empty>
// example-expect:      2  ::ffff:10.99.0.3  unknown  ipv4-mapped
// clang-format on
#include <gidpolicy/formats/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: print_table TABLE.json\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "print_table: cannot open " << argv[1] << "\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto tables = gidpolicy::formats::read_json(text.str(), argv[1]);
  if (!tables) {
    std::cerr << "print_table: " << tables.error().what() << "\n";
    return 2;
  }
  for (const auto& t : tables.value()) {
    const auto& p = t.port();
    std::cout << p.device << " port " << p.port << "  " << to_string(p.link_layer) << "  "
              << to_string(p.state) << "  gid_tbl_len "
              << (p.gid_tbl_len ? std::to_string(*p.gid_tbl_len) : std::string("unknown")) << "\n";
    for (const auto& e : t) {
      char idx[8];
      std::snprintf(idx, sizeof idx, "%4u", e.index);
      std::cout << "  " << idx << "  ";
      if (e.state != gidpolicy::EntryState::valid) {
        std::cout << "<" << to_string(e.state) << ">\n";
        continue;
      }
      std::cout << e.gid.to_string() << "  " << to_string(e.type);
      if (!e.netdev.empty()) std::cout << "  " << e.netdev;
      if (e.gid.is_ipv4_mapped()) std::cout << "  ipv4-mapped";
      if (e.gid.is_link_local()) std::cout << "  link-local";
      std::cout << "\n";
    }
  }
  return 0;
}
