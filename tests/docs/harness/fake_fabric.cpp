// Harness for docs/testing.md "Fakes instead of RDMA hardware" (FakeFabric): hosts from tables, connected as
// a mesh.
#include <gidpolicy/fakes/fake_fabric.hpp>
#include <gidpolicy/profiles.hpp>

#include <iostream>

int snippet(const gidpolicy::GidTable& table_a, const gidpolicy::GidTable& macmini_mapped_at_2);
int snippet(const gidpolicy::GidTable& table_a, const gidpolicy::GidTable& macmini_mapped_at_2) {
  {  // the snippet's own indentation starts at column 1
#include SNIPPET_MAIN
  }
  return 0;
}
