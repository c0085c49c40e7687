// Ds4Linux: ds4's tp_rdma_linux_gid: RoCE v2, non-zero, the control socket's local address
// scoring 2; a forced index is checked (range, readable, v2, non-zero) and never falls back.
//
//   ds4_linux TABLE [--local ADDR] [--index N] [--explain]
#include <gidpolicy/policies/ds4_linux.hpp>

#include "example_support.hpp"

#include <charconv>
#include <cstring>
#include <string_view>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: ds4_linux TABLE [--local ADDR] [--index N] [--explain]\n";
    return 2;
  }
  gidpolicy::Ds4Linux policy;
  bool explain = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--explain") {
      explain = true;
    } else if (a == "--local" && i + 1 < argc) {
      auto g = gidpolicy::parse_address(argv[++i]);
      if (!g) {
        std::cerr << "--local: " << g.error().what() << "\n";
        return 2;
      }
      policy.local = g.value();
    } else if (a == "--index" && i + 1 < argc) {
      std::int32_t n = 0;
      const char* s = argv[++i];
      if (std::from_chars(s, s + std::strlen(s), n).ec != std::errc()) {
        std::cerr << "--index: not an int: " << s << "\n";
        return 2;
      }
      policy.index = n;
    } else {
      std::cerr << "unknown argument: " << a << "\n";
      return 2;
    }
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  for (const auto& t : *tables)
    if (!example::report(t, policy.spec(), policy.select(t, {.trace = explain}), explain)) status = 1;
  return status;
}
