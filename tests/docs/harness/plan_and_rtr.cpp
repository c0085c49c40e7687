// Harness for README "Example": plan on a table, advertise, build RTR.
#include <gidpolicy/gidpolicy.hpp>
#include <gidpolicy/rtr.hpp>

#include <infiniband/verbs.h>

#include <iostream>

void send_to_peer(const gidpolicy::Gid& gid);
void snippet(const gidpolicy::GidTable& table, const gidpolicy::PeerInfo& peer, ibv_qp* qp);
void snippet(const gidpolicy::GidTable& table, const gidpolicy::PeerInfo& peer, ibv_qp* qp) {
#include SNIPPET_MAIN
}
