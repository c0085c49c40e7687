// select_spec: any behaviour by its spec string (the grammar the CLI, the C API and
// environment variables share), with the index it routes from and whether that agrees.
//
//   select_spec TABLE SPEC        e.g. select_spec t.json 'first(validated:index=3|auto)'
#include <gidpolicy/profiles.hpp>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: select_spec TABLE SPEC\n";
    return 2;
  }
  auto profile = gidpolicy::parse_profile(argv[2]);
  if (!profile) {
    std::cerr << "select_spec: " << profile.error().what() << "\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  for (const auto& t : *tables) {
    auto plan = profile.value().plan(t);
    if (!plan) {
      std::cout << example::where(t) << ": " << profile.value().spec() << " failed: " << plan.error().what()
                << "\n";
      status = 1;
      continue;
    }
    const auto& p = plan.value();
    std::cout << example::where(t) << ": " << profile.value().spec() << " advertises index "
              << p.selection.entry.index << " " << p.selection.entry.gid.to_string()
              << ", routes from sgid_index " << unsigned{p.sgid_index} << ": "
              << (p.agrees() ? "agrees" : "DISAGREES (" + p.agreement.explanation + ")") << "\n";
    if (!p.agrees()) status = 1;
  }
  return status;
}
