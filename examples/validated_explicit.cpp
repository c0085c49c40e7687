// ValidatedExplicit: the explicit index NCCL_IB_GID_INDEX and friends should have checked:
// in range, <= 255, not empty or zero, IPv4-mapped by default, not link-local on RoCE.
//
//   validated_explicit TABLE N [ipv4|ipv6|any]
#include <gidpolicy/policies/validated_explicit.hpp>

#include "example_support.hpp"

#include <charconv>
#include <cstring>

int main(int argc, char** argv) {
  std::uint32_t index = 0;
  if (argc < 3 || argc > 4 ||
      std::from_chars(argv[2], argv[2] + std::strlen(argv[2]), index).ec != std::errc()) {
    std::cerr << "usage: validated_explicit TABLE N [ipv4|ipv6|any]\n";
    return 2;
  }
  gidpolicy::ValidatedExplicit policy{.index = index};
  if (argc == 4) {
    auto f = gidpolicy::family_filter_from_string(argv[3]);
    if (!f) {
      std::cerr << "family: ipv4, ipv6 or any\n";
      return 2;
    }
    policy.family = *f;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  for (const auto& t : *tables)
    if (!example::report(t, policy.spec(), policy.select(t))) status = 1;
  return status;
}
