// Fuzz the mlx.distributed_config hostfile reader: never crash, never accept what is not JSON
// (nlohmann is the referee), stay within its bounds, and keep what Python's json keeps: when a
// host gives a key twice, the last value (checked against nlohmann, which keeps the last too).
#include <gidpolicy/fleet.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto f = gidpolicy::fleet::parse_mlx_hostfile(text, "h.json");
  if (!f) return 0;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) std::abort();
  const auto& hosts = j.is_array() ? j : j.at("hosts");
  if (hosts.size() != f.value().hosts.size() || f.value().hosts.size() > 4096) std::abort();
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const auto& h = f.value().hosts[i];
    if (hosts[i].at("ssh").get<std::string>() != h.ssh) std::abort();
    const auto ips = hosts[i].find("ips");
    if ((ips == hosts[i].end() ? 0 : ips->size()) != h.ips.size()) std::abort();
    for (const auto& ip : h.ips)
      if (ip.find('%') != std::string::npos && ip.find(':') == std::string::npos)
        std::abort();  // IPv4 + scope
    const auto rdma = hosts[i].find("rdma");
    if ((rdma == hosts[i].end() ? 0 : rdma->size()) != h.rdma.size()) std::abort();
  }
  return 0;
}
