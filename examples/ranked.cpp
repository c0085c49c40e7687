// Ranked ("auto"): the recommended policy. Filters, then RoCE v2 over v1, IPv4-mapped over
// IPv6, lowest index; link-local refused on RoCE and Thunderbolt; Thunderbolt's index 0 last.
// A failure lists every entry and why it was refused.
//
//   ranked TABLE [--explain]
#include <gidpolicy/policies/ranked.hpp>

#include "example_support.hpp"

#include <string_view>

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || (argc == 3 && std::string_view(argv[2]) != "--explain")) {
    std::cerr << "usage: ranked TABLE [--explain]\n";
    return 2;
  }
  const bool explain = argc == 3;
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  const gidpolicy::Ranked policy;
  for (const auto& t : *tables)
    if (!example::report(t, policy.spec(), policy.select(t, {.trace = explain}), explain)) status = 1;
  return status;
}
