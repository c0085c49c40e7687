// SystemInterfaces: the InterfaceSource (interfaces.hpp) that asks this host: getifaddrs() for
// the interfaces, their flags and addresses, SIOCGIFMTU for each one's MTU. In the `host` layer
// (docs/concepts.md, "Layers"), beside KernelRoutes: only code that asks the live host includes it.
//
// Example:
//   gidpolicy::SystemInterfaces system;
//   auto ifs = gidpolicy::read_interfaces(system);   // errc::io_error naming getifaddrs on failure
#pragma once

#include <gidpolicy/interfaces.hpp>

namespace gidpolicy {

/// This host's interfaces (of the caller's network namespace), in the numbers of the platform
/// gidpolicy was built for (Platform::darwin on macOS, else Linux). Bridge membership: on Linux
/// from sysfs, a netdev with /sys/class/net/<if>/brport/ being a port of the bridge its master
/// link names. sysfs shows the network namespace of whoever mounted it, so an entry is used only
/// when its ifindex is this namespace's for that name; otherwise (another namespace's sysfs, no
/// sysfs) IfAddrRecord::bridge stays empty and bridge_unknown says why. On macOS from the
/// "member:" lines of `/sbin/ifconfig -a` (run for at most 2 s; its failure, too, is a
/// bridge_unknown reason).
class SystemInterfaces final : public InterfaceSource {
 public:
  [[nodiscard]] Platform platform() const override;
  result<std::vector<IfAddrRecord>> records() override;
};

}  // namespace gidpolicy
