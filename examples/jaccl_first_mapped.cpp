// JacclFirstMapped: what JACCL's info() advertises (the first ::ffff:a.b.c.d entry, any type,
// index 0 allowed), and whether JACCL's RTR, which routes from the literal index 1, agrees.
//
//   jaccl_first_mapped TABLE
#include <gidpolicy/policies/jaccl_first_mapped.hpp>
#include <gidpolicy/profiles.hpp>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: jaccl_first_mapped TABLE\n";
    return 2;
  }
  auto tables = example::load(argv[1]);
  if (!tables) return 2;
  int status = 0;
  for (const auto& t : *tables) {
    auto sel = gidpolicy::JacclFirstMapped{}.select(t);
    if (!example::report(t, "jaccl", sel)) {
      status = 1;
      continue;
    }
    // JACCL as it ships: the same selection, routed from index 1.
    auto plan = gidpolicy::profiles::jaccl().plan(t).value();
    std::cout << "  JACCL routes from sgid_index 1: " << (plan.agrees() ? "agrees" : "DISAGREES: ")
              << (plan.agrees() ? "" : plan.agreement.explanation) << "\n";
    if (!plan.agrees()) status = 1;
  }
  return status;
}
