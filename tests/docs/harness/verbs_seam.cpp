// Harness for docs/live-hosts.md "The verbs seam": snapshot a live port, plan, build and apply RTR.
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/rtr.hpp>
#include <gidpolicy/verbs/apply.hpp>
#include <gidpolicy/verbs/dlopen_api.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <iostream>

int snippet(const gidpolicy::PeerInfo& peer, gidpolicy::verbs::QpHandle qp);
int snippet(const gidpolicy::PeerInfo& peer, gidpolicy::verbs::QpHandle qp) {
  {  // the snippet's own indentation starts at column 1
#include SNIPPET_MAIN
  }
  return 0;
}
