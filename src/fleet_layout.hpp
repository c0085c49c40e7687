// The fleet's layout (internal): which sides each host takes part with, and how a topology
// pairs them. Split from fleet.cpp, which plans and judges the sides this lays out.
#pragma once

#include <gidpolicy/fleet.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gidpolicy::fleet {

/// The sides each host takes part with, in host-major order, and how the topology pairs them.
struct Analysis::Layout {
  struct Want {
    std::uint32_t host;
    const GidTable* table;
    std::string device;  // for a missing device
    std::uint32_t port;
  };
  std::vector<Want> want;
  std::uint32_t lanes = 1;
  std::string name;  // topology_name()
  // jaccl: (host, device name) -> side, and whether JACCL's ring is used
  std::vector<std::map<std::string, std::uint32_t>> jaccl_side;
  bool jaccl_ring = false;
};

/// The sides `topo` uses on `hosts`. Errors: a JACCL file that does not fit the hosts or forms
/// neither a valid mesh nor ring; rail with no rails or more than 4096.
result<Analysis::Layout> lay_out(const std::vector<HostSnapshot>& hosts, const Topology& topo);

}  // namespace gidpolicy::fleet
