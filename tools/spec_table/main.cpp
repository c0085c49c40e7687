// gidpolicy_spec_table: prints README.md's spec table, made from the policy registry
// (builtin_spec_table(), policies/registry.hpp). Not installed: scripts/update-docs runs it and
// writes its output between the README's spec-table markers. Takes no arguments.
#include <gidpolicy/policies/registry.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 1) {
    std::fprintf(stderr, "usage: %s (prints README.md's spec table; scripts/update-docs writes it)\n",
                 argv[0]);
    return 2;
  }
  const std::string table = gidpolicy::builtin_spec_table();
  // Every byte checked: a table cut short by a full disk must not be written into the README.
  if (std::fwrite(table.data(), 1, table.size(), stdout) != table.size() || std::fflush(stdout) != 0) {
    std::perror("gidpolicy_spec_table: stdout");
    return 2;
  }
  return 0;
}
