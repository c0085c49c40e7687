// The fleet's layout: the sides each host takes part with under a topology (fleet_layout.hpp).
#include "fleet_layout.hpp"

#include <algorithm>
#include <cctype>

namespace gidpolicy::fleet {

bool natural_less(std::string_view a, std::string_view b) noexcept {
  std::size_t i = 0, j = 0;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      // Compare digit runs by value: skip leading zeros, then by length, then lexically.
      std::size_t si = i, sj = j;
      while (si < a.size() && a[si] == '0') ++si;
      while (sj < b.size() && b[sj] == '0') ++sj;
      std::size_t ei = si, ej = sj;
      while (ei < a.size() && digit(a[ei])) ++ei;
      while (ej < b.size() && digit(b[ej])) ++ej;
      if (ei - si != ej - sj) return ei - si < ej - sj;
      const int c = a.substr(si, ei - si).compare(b.substr(sj, ej - sj));
      if (c != 0) return c < 0;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

namespace {

using Layout = Analysis::Layout;

/// The port a host uses for `device` (empty: its first port in natural order), or nullptr.
const GidTable* find_port(const HostSnapshot& h, const std::string& device, std::uint32_t port) {
  const GidTable* best = nullptr;
  for (const auto& t : h.ports) {
    if (device.empty()) {
      if (!best || natural_less(t.port().device, best->port().device) ||
          (t.port().device == best->port().device && t.port().port < best->port().port))
        best = &t;
    } else if (t.port().device == device && t.port().port == port) {
      return &t;
    }
  }
  return best;
}

/// A host's ports in natural order (rails by position).
std::vector<const GidTable*> natural_ports(const HostSnapshot& h) {
  std::vector<const GidTable*> v;
  for (const auto& t : h.ports) v.push_back(&t);
  std::stable_sort(v.begin(), v.end(), [](const GidTable* x, const GidTable* y) {
    if (x->port().device != y->port().device) return natural_less(x->port().device, y->port().device);
    return x->port().port < y->port().port;
  });
  return v;
}

/// rail: rails named by device, or each host's k-th port in natural order.
result<void> lay_out_rails(const std::vector<HostSnapshot>& hosts, const Topology& topo, Layout& L) {
  const auto n = static_cast<std::uint32_t>(hosts.size());
  std::vector<std::vector<const GidTable*>> ordered(n);
  std::size_t lanes = topo.rails.size();
  if (topo.rails.empty())
    for (std::uint32_t h = 0; h < n; ++h) {
      ordered[h] = natural_ports(hosts[h]);
      lanes = std::max(lanes, ordered[h].size());
    }
  if (lanes == 0) return fail(errc::invalid_argument, "rail: no host lists a port, so there is no rail");
  if (lanes > 4096)
    return fail(errc::invalid_argument, "rail: " + std::to_string(lanes) + " rails (at most 4096)");
  L.lanes = static_cast<std::uint32_t>(lanes);
  for (std::uint32_t h = 0; h < n; ++h)
    for (std::size_t k = 0; k < lanes; ++k) {
      if (!topo.rails.empty()) {
        L.want.push_back({h, find_port(hosts[h], topo.rails[k], topo.port), topo.rails[k], topo.port});
      } else {
        const GidTable* t = k < ordered[h].size() ? ordered[h][k] : nullptr;
        L.want.push_back({h, t, t ? t->port().device : "rail " + std::to_string(k), t ? t->port().port : 1});
      }
    }
  return success();
}

/// jaccl: JACCL's own checks and choice, then every device each rank uses.
result<void> lay_out_jaccl(const std::vector<HostSnapshot>& hosts, const Topology& topo, Layout& L) {
  const std::size_t n = hosts.size();
  const JacclDevices& J = topo.jaccl;
  if (J.ranks() != n)
    return fail(errc::invalid_argument, "the JACCL device file has " + std::to_string(J.ranks()) +
                                            " ranks but " + std::to_string(n) +
                                            " hosts were given (rank i is the i-th host)");
  // JACCL's own choice (jaccl::init): ring when asked and valid, else mesh, else ring.
  GIDPOLICY_TRY(ring, J.uses_ring(topo.jaccl_prefer_ring));
  L.jaccl_ring = ring;
  L.name = L.jaccl_ring ? "jaccl-ring" : "jaccl-mesh";
  L.jaccl_side.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    for (const auto& d : J.devices_of(i, L.jaccl_ring)) {
      L.jaccl_side[i].emplace(d, static_cast<std::uint32_t>(L.want.size()));
      // JACCL opens each device and uses port 1.
      L.want.push_back({i, find_port(hosts[i], d, 1), d, 1});
    }
  }
  return success();
}

}  // namespace

result<Layout> lay_out(const std::vector<HostSnapshot>& hosts, const Topology& topo) {
  Layout L;
  L.name = std::string(to_string(topo.pairing));
  if (topo.pairing == Pairing::mesh || topo.pairing == Pairing::ring) {
    for (std::uint32_t h = 0; h < hosts.size(); ++h)
      L.want.push_back({h, find_port(hosts[h], topo.device, topo.port), topo.device, topo.port});
  } else if (topo.pairing == Pairing::rail) {
    GIDPOLICY_TRYV(lay_out_rails(hosts, topo, L));
  } else {
    GIDPOLICY_TRYV(lay_out_jaccl(hosts, topo, L));
  }
  return L;
}

}  // namespace gidpolicy::fleet
