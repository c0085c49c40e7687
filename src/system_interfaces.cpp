// SystemInterfaces (system_interfaces.hpp): getifaddrs() and SIOCGIFMTU, the same calls on Linux
// and macOS; the numbers they carry are read by interfaces_from_ifaddrs() with the build's platform.
// Bridge membership: on Linux from sysfs (/sys/class/net/<if>/master and brport/), on macOS from
// `ifconfig -a`'s member lines.
#include <gidpolicy/darwin.hpp>
#include <gidpolicy/system_interfaces.hpp>

#include "run_command.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <map>

namespace gidpolicy {

Platform SystemInterfaces::platform() const {
#if defined(__APPLE__)
  return Platform::darwin;
#else
  return Platform::linux_kernel;
#endif
}

namespace {

std::vector<std::uint8_t> bytes_of(const sockaddr* sa) {
  if (!sa) return {};
  if (sa->sa_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, sa, sizeof in);
    std::vector<std::uint8_t> out(4);
    std::memcpy(out.data(), &in.sin_addr, 4);
    return out;
  }
  if (sa->sa_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, sa, sizeof in6);
    std::vector<std::uint8_t> out(16);
    std::memcpy(out.data(), &in6.sin6_addr, 16);
    return out;
  }
  return {};
}

/// What the host says of an interface's bridge: the bridge, or why it cannot tell.
struct BridgeOf {
  std::string bridge;
  std::string unknown;
};

/// Every bridge member `ifconfig -a` lists (darwin.hpp reads it): the bridge ioctl's structures
/// are not in the public SDK, and `ifconfig` is what Apple's own documentation has operators read.
/// At most 2 s and 1 MiB; a failure makes every interface's membership unknown, with the reason.
struct DarwinBridges {
  std::map<std::string, std::string> members;
  std::string unknown;
};
// Compiled on every platform (the Linux builds check it), called on macOS.
[[maybe_unused]] DarwinBridges darwin_bridges() {
  DarwinBridges b;
  auto out = host_detail::run_command({"/sbin/ifconfig", "-a"}, std::chrono::seconds(2),
                                      darwin::kMaxToolOutputBytes);
  if (!out) {
    b.unknown = "/sbin/ifconfig -a: " + out.error().detail;
  } else if (out.value().timed_out || out.value().truncated || out.value().exit_status != 0) {
    b.unknown = "/sbin/ifconfig -a " + std::string(out.value().timed_out   ? "did not finish within 2 s"
                                                   : out.value().truncated ? "printed more than 1 MiB"
                                                                           : "failed");
  } else if (auto m = darwin::bridge_members(out.value().out)) {
    b.members = std::move(m).value();
  } else {
    b.unknown = m.error().detail;
  }
  return b;
}

#if !defined(__APPLE__)
/// The bridge `name` is a port of, read from sysfs: a bridge port has brport/ and its master
/// link names the bridge (a bond's or VRF's member has a master but no brport/, and is not one).
/// sysfs shows the network namespace of whoever mounted it, so the entry is believed only when
/// its ifindex is this namespace's ifindex for that name; otherwise membership is unknown, and
/// `unknown` says why. Every read is bounded: one small file, one readlink into a PATH_MAX buffer.
BridgeOf linux_bridge_of(const std::string& name, std::uint32_t ifindex) {
  if (ifindex == 0 || name.empty() || name.size() >= IF_NAMESIZE || name.find('/') != std::string::npos ||
      name == "." || name == "..")
    return {};
  const std::string dir = "/sys/class/net/" + name;
  const int fd = ::open((dir + "/ifindex").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return {"", dir +
                    " is missing: the sysfs mounted here is another network namespace's (or none is "
                    "mounted)"};
  char buf[32] = {};
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return {"", dir + "/ifindex could not be read"};
  char* end = nullptr;
  const unsigned long v = std::strtoul(buf, &end, 10);
  if (end == buf || v != ifindex)
    return {"", dir + " is another network namespace's " + name + " (ifindex " + std::to_string(v) +
                    ", here " + std::to_string(ifindex) + "): sysfs was mounted in another namespace"};
  struct stat st {};
  if (::stat((dir + "/brport").c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return {};
  char target[PATH_MAX];
  const ssize_t len = ::readlink((dir + "/master").c_str(), target, sizeof target - 1);
  if (len <= 0) return {"", dir + " has brport/ but no readable master link"};
  const std::string link(target, static_cast<std::size_t>(len));
  const auto slash = link.rfind('/');
  return {slash == std::string::npos ? link : link.substr(slash + 1), ""};
}
#endif

}  // namespace

result<std::vector<IfAddrRecord>> SystemInterfaces::records() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return fail_errno(errno, "getifaddrs()");
  // One socket for the MTU ioctls; an MTU that cannot be read stays 0 (unknown).
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  std::map<std::string, std::uint32_t> mtus;
#if defined(__APPLE__)
  const DarwinBridges darwin = darwin_bridges();  // one ifconfig for all interfaces
#else
  std::map<std::string, BridgeOf> bridges;  // asked once per interface, not once per record
#endif
  std::vector<IfAddrRecord> out;
  bool too_many = false;
  for (const ifaddrs* p = list; p; p = p->ifa_next) {
    if (!p->ifa_name) continue;
    if (out.size() == kMaxIfAddrRecords) {
      too_many = true;
      break;
    }
    IfAddrRecord r;
    r.name = p->ifa_name;
    r.flags = p->ifa_flags;
    r.family = p->ifa_addr ? p->ifa_addr->sa_family : 0;
    r.address = bytes_of(p->ifa_addr);
    if (r.family == AF_INET || r.family == AF_INET6) r.netmask = bytes_of(p->ifa_netmask);
    if (!r.netmask.empty() && r.netmask.size() != r.address.size()) r.netmask.clear();
    auto m = mtus.find(r.name);
    if (m == mtus.end()) {
      std::uint32_t mtu = 0;
      ifreq req{};
      if (fd >= 0 && r.name.size() < sizeof req.ifr_name) {
        std::memcpy(req.ifr_name, r.name.c_str(), r.name.size() + 1);
        if (::ioctl(fd, SIOCGIFMTU, &req) == 0 && req.ifr_mtu > 0)
          mtu = static_cast<std::uint32_t>(req.ifr_mtu);
      }
      m = mtus.emplace(r.name, mtu).first;
    }
    r.mtu = m->second;
    r.ifindex = ::if_nametoindex(r.name.c_str());
#if defined(__APPLE__)
    if (auto b = darwin.members.find(r.name); b != darwin.members.end()) r.bridge = b->second;
    r.bridge_unknown = darwin.unknown;
#else
    auto b = bridges.find(r.name);
    if (b == bridges.end()) b = bridges.emplace(r.name, linux_bridge_of(r.name, r.ifindex)).first;
    r.bridge = b->second.bridge;
    r.bridge_unknown = b->second.unknown;
#endif
    out.push_back(std::move(r));
  }
  if (fd >= 0) ::close(fd);
  ::freeifaddrs(list);
  if (too_many)
    return fail(errc::invalid_argument,
                "getifaddrs(): more than " + std::to_string(kMaxIfAddrRecords) + " interface records");
  return out;
}

}  // namespace gidpolicy
