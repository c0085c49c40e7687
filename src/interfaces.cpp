// getifaddrs() records as HostInterface values, in either platform's numbers (interfaces.hpp).
#include <gidpolicy/interfaces.hpp>
#include <gidpolicy/names.hpp>

#include <algorithm>
#include <array>

namespace gidpolicy {

bool HostInterface::has_ipv4() const noexcept {
  return std::any_of(addresses.begin(), addresses.end(),
                     [](const IfAddress& a) { return a.address.is_ipv4_mapped(); });
}

bool HostInterface::has_assigned_ipv4() const noexcept {
  return std::any_of(addresses.begin(), addresses.end(), [](const IfAddress& a) {
    return a.address.is_ipv4_mapped() && !a.address.is_ipv4_link_local();
  });
}

bool HostInterface::holds(const Gid& a) const noexcept {
  return std::any_of(addresses.begin(), addresses.end(), [&](const IfAddress& x) { return x.address == a; });
}

IfaddrsNumbers IfaddrsNumbers::for_platform(Platform p) noexcept {
  IfaddrsNumbers n;
  n.af_inet6 = p == Platform::darwin ? 30 : 10;
  return n;
}

namespace {

/// The prefix length of a netmask, or -1 when its bits are not 1s then 0s.
int prefix_of(const std::vector<std::uint8_t>& mask) {
  int bits = 0;
  bool zero_seen = false;
  for (std::uint8_t b : mask)
    for (int k = 7; k >= 0; --k) {
      const bool one = ((b >> k) & 1) != 0;
      if (one && zero_seen) return -1;
      if (one)
        ++bits;
      else
        zero_seen = true;
    }
  return bits;
}

}  // namespace

result<std::vector<HostInterface>> interfaces_from_ifaddrs(std::span<const IfAddrRecord> records,
                                                           Platform platform) {
  if (records.size() > kMaxIfAddrRecords)
    return fail(errc::invalid_argument, std::to_string(records.size()) + " interface records: at most " +
                                            std::to_string(kMaxIfAddrRecords));
  const IfaddrsNumbers n = IfaddrsNumbers::for_platform(platform);
  std::vector<HostInterface> out;
  for (std::size_t r = 0; r < records.size(); ++r) {
    const IfAddrRecord& rec = records[r];
    const std::string at = "interface record " + std::to_string(r);
    if (auto why = name_problem(rec.name, NameKind::netdev))
      return fail(errc::invalid_argument, at + ": netdev name " + quote_name(rec.name) + ": " + *why);
    auto it =
        std::find_if(out.begin(), out.end(), [&](const HostInterface& i) { return i.name == rec.name; });
    if (it == out.end()) {
      if (out.size() == kMaxInterfaces)
        return fail(errc::invalid_argument,
                    at + " (" + rec.name + "): more than " + std::to_string(kMaxInterfaces) + " interfaces");
      out.push_back(HostInterface{rec.name});
      it = out.end() - 1;
    }
    HostInterface& i = *it;
    // Flags are the interface's; every record of it carries them.
    i.up = (rec.flags & n.iff_up) != 0;
    i.running = (rec.flags & n.iff_running) != 0;
    i.loopback = (rec.flags & n.iff_loopback) != 0;
    if (rec.mtu) i.mtu = rec.mtu;
    if (rec.ifindex) i.ifindex = rec.ifindex;
    if (!rec.bridge.empty()) {
      if (auto why = name_problem(rec.bridge, NameKind::netdev))
        return fail(errc::invalid_argument,
                    at + " (" + rec.name + "): bridge name " + quote_name(rec.bridge) + ": " + *why);
      i.bridge = rec.bridge;
    }
    // The reason is the source's own text (bounded there); only its length is checked here.
    if (!rec.bridge_unknown.empty()) i.bridge_unknown = rec.bridge_unknown.substr(0, 200);
    const bool v4 = rec.family == n.af_inet, v6 = rec.family == n.af_inet6;
    if (!v4 && !v6) continue;  // the link-level record (AF_PACKET / AF_LINK) and others
    const std::size_t len = v4 ? 4 : 16;
    const char* fam = v4 ? "AF_INET" : "AF_INET6";
    if (rec.address.size() != len)
      return fail(errc::invalid_argument, at + " (" + rec.name + ", " + fam + "): an address of " +
                                              std::to_string(rec.address.size()) + " bytes, not " +
                                              std::to_string(len));
    if (!rec.netmask.empty() && rec.netmask.size() != len)
      return fail(errc::invalid_argument, at + " (" + rec.name + ", " + fam + "): a netmask of " +
                                              std::to_string(rec.netmask.size()) + " bytes, not " +
                                              std::to_string(len));
    const int prefix = rec.netmask.empty() ? static_cast<int>(len * 8) : prefix_of(rec.netmask);
    if (prefix < 0)
      return fail(errc::invalid_argument,
                  at + " (" + rec.name + ", " + fam + "): the netmask is not a prefix (1s, then 0s)");
    std::array<std::uint8_t, 16> b{};
    if (v4) {
      b[10] = 0xff;
      b[11] = 0xff;
      std::copy(rec.address.begin(), rec.address.end(), b.begin() + 12);
    } else {
      std::copy(rec.address.begin(), rec.address.end(), b.begin());
    }
    if (i.addresses.size() == kMaxAddressesPerInterface)
      return fail(errc::invalid_argument, at + " (" + rec.name + "): more than " +
                                              std::to_string(kMaxAddressesPerInterface) + " addresses");
    i.addresses.push_back({Gid::from_bytes(b.data()), static_cast<unsigned>(prefix)});
  }
  return out;
}

result<Route> route_from_errno(Platform platform, const PeerAddress& peer, int err) {
  Route r;
  r.peer = peer;
  const Errnos e = Errnos::of(platform);
  const std::string p = peer.to_string();
  const std::string name = errno_name(platform, err);
  if (platform == Platform::darwin) {
    // Darwin's routing socket (RTM_GET): ESRCH (3) "not in table" when nothing covers the
    // address; a reject route (RTF_REJECT) answers EHOSTUNREACH (65); ENETUNREACH (51).
    constexpr int kDarwinEsrch = 3, kDarwinEhostunreach = 65;
    if (err == kDarwinEsrch || err == e.enetunreach)
      return fail(errc::no_route, "no route to " + p + ": the kernel's routing table has none (" +
                                      (err == kDarwinEsrch ? std::string("ESRCH (3), \"not in table\"")
                                                           : "ENETUNREACH (" + std::to_string(err) + ")") +
                                      ")");
    if (err == kDarwinEhostunreach) {
      r.type = RouteType::unreachable;
      return r;
    }
  } else {
    constexpr int kLinuxEhostunreach = 113, kLinuxEacces = 13;
    if (err == e.enetunreach)
      return fail(errc::no_route, "no route to " + p + ": the kernel's routing table has none (ENETUNREACH)");
    if (err == e.einval) {
      r.type = RouteType::blackhole;
      return r;
    }
    if (err == kLinuxEhostunreach) {
      r.type = RouteType::unreachable;
      return r;
    }
    if (err == kLinuxEacces) {
      r.type = RouteType::prohibit;
      return r;
    }
  }
  return fail(errc::io_error, "route to " + p + ": the lookup failed with " + name + " (" +
                                  std::to_string(err) + ", " + std::string(to_string(platform)) + ")");
}

result<std::vector<HostInterface>> read_interfaces(InterfaceSource& source) {
  GIDPOLICY_TRY(recs, source.records());
  return interfaces_from_ifaddrs(recs, source.platform());
}

}  // namespace gidpolicy
