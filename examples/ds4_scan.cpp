// Ds4Scan: ds4 without an index: the first IPv4-mapped entry, routed from where it was found.
//
//   ds4_scan TABLE
#include <gidpolicy/policies/ds4_scan.hpp>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: ds4_scan TABLE\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  for (const auto& t : *tables)
    if (!example::report(t, "ds4", gidpolicy::Ds4Scan{}.select(t))) status = 1;
  return status;
}
