// Ds4ExplicitIndex: ds4's `--rdma-gid-index N`: the index is read and accepted unchecked; an
// index above 255 is where ds4 would silently wrap, and gidpolicy reports it instead.
//
//   ds4_explicit_index TABLE N
#include <gidpolicy/policies/ds4_explicit_index.hpp>

#include "example_support.hpp"

#include <charconv>
#include <cstring>

int main(int argc, char** argv) {
  std::uint32_t index = 0;
  if (argc != 3 || std::from_chars(argv[2], argv[2] + std::strlen(argv[2]), index).ec != std::errc()) {
    std::cerr << "usage: ds4_explicit_index TABLE N\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  const gidpolicy::Ds4ExplicitIndex policy{index};
  for (const auto& t : *tables)
    if (!example::report(t, policy.spec(), policy.select(t))) status = 1;
  return status;
}
