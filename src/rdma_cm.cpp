#include <gidpolicy/rdma_cm.hpp>

#include <charconv>
#include <string>

namespace gidpolicy {
namespace {

std::string rdma_cm_address_text(const Gid& a) {
  return a.is_ipv4_mapped() ? a.ipv4_string() : a.to_string();
}

std::string_view mode_name(GidType t) noexcept { return t == GidType::roce_v1 ? "RoCE v1" : "RoCE v2"; }

}  // namespace

result<std::vector<RoceModeSetting>> parse_roce_modes(std::string_view text) {
  std::vector<RoceModeSetting> out;
  std::size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, end - pos);
    const auto bad = [&](const std::string& why) {
      return fail(errc::invalid_field, "RoCE mode setting at position " + std::to_string(pos + 1) + " \"" +
                                           std::string(item) + "\": " + why +
                                           " (expected device[:port]=v1|v2, comma-separated)");
    };
    if (out.size() == 256) return bad("more than 256 settings");
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) return bad("no '='");
    std::string_view who = item.substr(0, eq);
    const std::string_view mode = item.substr(eq + 1);
    RoceModeSetting s;
    if (mode == "v1" || mode == "1")
      s.mode = GidType::roce_v1;
    else if (mode == "v2" || mode == "2")
      s.mode = GidType::roce_v2;
    else
      return bad("the mode must be v1 or v2");
    if (const std::size_t colon = who.find(':'); colon != std::string_view::npos) {
      const std::string_view p = who.substr(colon + 1);
      std::uint32_t n = 0;
      const auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), n);
      if (ec != std::errc() || ptr != p.data() + p.size() || n == 0 || n > 255)
        return bad("the port must be a number 1-255");
      s.port = n;
      who = who.substr(0, colon);
    }
    if (who.empty() || who.size() > 63) return bad("the device name must be 1-63 bytes");
    s.device = std::string(who);
    out.push_back(std::move(s));
    if (end == text.size()) break;
    pos = end + 1;
  }
  return out;
}

GidType default_roce_mode(const PortInfo& port, std::span<const RoceModeSetting> modes) noexcept {
  GidType mode = GidType::roce_v2;
  for (const RoceModeSetting& s : modes)
    if (s.device == port.device && (!s.port || *s.port == port.port)) mode = s.mode;
  return mode;
}

result<RdmaCmSource> rdma_cm_source(std::span<const GidTable> ports, const Gid& address,
                                    std::optional<std::string_view> netdev,
                                    std::span<const RoceModeSetting> modes) {
  if (address.is_zero())
    return fail(errc::invalid_argument, "rdma_cm: the unspecified address names no netdev");
  // Without a namespace, the first entry holding the address names its netdev (the table is
  // the host).
  std::string owner;
  if (netdev) {
    owner = std::string(*netdev);
  } else {
    for (const GidTable& t : ports) {
      if (!t.port().link_layer.is_ip_routed()) continue;
      if (const GidEntry* e = t.find(address); e && !e->netdev.empty()) {
        owner = e->netdev;
        break;
      }
    }
  }
  std::string why;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const GidTable& t = ports[i];
    const PortInfo& p = t.port();
    if (!t.port().link_layer.is_ip_routed()) {
      why += "; " + port_name(p) + ": " + to_string(p.link_layer) + " (IP addresses resolve through IPoIB)";
      continue;
    }
    const GidType mode = default_roce_mode(p, modes);
    // The last entry that held the address but was not it, and why: the message is made only
    // when the port fails, so a success allocates nothing (the rdma_cm policy's untraced path).
    const GidEntry* refused = nullptr;
    bool wrong_type = false;
    for (const GidEntry& e : t.sgid_entries()) {
      if (!e.usable() || e.gid != address) continue;
      if (e.type != mode) {
        refused = &e;
        wrong_type = true;
        continue;
      }
      if (owner.empty() || e.netdev != owner) {
        refused = &e;
        wrong_type = false;
        continue;
      }
      return RdmaCmSource{i, &e, mode};
    }
    if (refused) {
      const std::string port_why =
          wrong_type ? "holds it only as " + std::string(to_string(refused->type)) +
                           ", not the port's default " + std::string(mode_name(mode))
                     : "holds it on " +
                           (refused->netdev.empty() ? std::string("an unknown netdev") : refused->netdev) +
                           ", not on " + (owner.empty() ? std::string("the netdev owning it") : owner);
      why += "; " + port_name(p) + " " + port_why;
    }
  }
  std::string d = "ENODEV: rdma_cm finds no port whose GID table holds " + rdma_cm_address_text(address) +
                  " as a GID of the port's default RoCE mode on " + (owner.empty() ? "a netdev" : owner);
  if (why.empty())
    d += " (no port holds that address at all)";
  else
    d += " (" + why.substr(2) + ")";
  return fail(errc::no_candidate, std::move(d));
}

}  // namespace gidpolicy
