// Fuzz the host-bundle readers (bundle.hpp): the framing, then every part read by its tool's
// reader (sysfs listing, ip -j JSON, ifconfig, networksetup, netstat, system_profiler, sw_vers,
// ibv_devinfo, the environment) and the doctor's judgement of the result. Never crash, never
// hang; a bundle that reads is judged, and its routing table answers any peer.
#include <gidpolicy/bundle.hpp>

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto bundle = gidpolicy::parse_bundle(text, "fuzz.bundle");
  if (!bundle) return 0;
  auto host = gidpolicy::read_bundle_host(bundle.value());
  if (!host) return 0;
  const gidpolicy::DoctorReport report = gidpolicy::examine(gidpolicy::doctor_input(host.value()));
  (void)report.ready();
  gidpolicy::BundleRoutes routes(host.value());
  for (const char* peer : {"192.168.200.2", "10.0.0.1", "fd00::1"})
    if (auto p = gidpolicy::PeerAddress::parse(peer)) (void)routes.route_to(p.value());
  return 0;
}
