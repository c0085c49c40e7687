// gidpolicy_spec_table: prints a generated table of the docs. Not installed: scripts/update-docs
// runs it and writes its output between the page's marker lines.
//   gidpolicy_spec_table                  README.md's spec table, made from the policy registry
//                                         (builtin_spec_table(), policies/registry.hpp)
//   gidpolicy_spec_table doctor-findings  docs/doctor.md's table of the checks, made from the
//                                         doctor's table of findings (doctor_findings_table())
#include <gidpolicy/doctor.hpp>
#include <gidpolicy/policies/registry.hpp>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  const bool findings = argc == 2 && std::strcmp(argv[1], "doctor-findings") == 0;
  if (argc > 2 || (argc == 2 && !findings)) {
    std::fprintf(stderr,
                 "usage: %s [doctor-findings] (prints README.md's spec table, or docs/doctor.md's table of "
                 "the checks; scripts/update-docs writes them)\n",
                 argv[0]);
    return 2;
  }
  const std::string table = findings ? gidpolicy::doctor_findings_table() : gidpolicy::builtin_spec_table();
  // Every byte checked: a table cut short by a full disk must not be written into the page.
  if (std::fwrite(table.data(), 1, table.size(), stdout) != table.size() || std::fflush(stdout) != 0) {
    std::perror("gidpolicy_spec_table: stdout");
    return 2;
  }
  return 0;
}
