// The commands the doctor prints for each finding (internal to doctor.cpp), per platform: Linux
// (iproute2 for now, netplan / NetworkManager for what survives a reboot) and macOS (ifconfig for
// now, networksetup for a network service that survives one). Printed, never run: the operator
// decides what changes on the host.
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/interfaces.hpp>
#include <gidpolicy/network.hpp>
#include <gidpolicy/quoting.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::doctor_detail {

class Fixes {
 public:
  explicit Fixes(Platform p) : mac_(p == Platform::darwin) {}
  using Lines = std::vector<std::string>;

  /// Every value from the host (a netdev, a device, a bridge, a path) enters a command through
  /// here: Linux accepts "$(reboot)" or "a;b" as an interface name, and a pasted fix must change
  /// that interface and run nothing else (shell_quote(), quoting.hpp).
  static std::string q(std::string_view v) { return shell_quote(v); }
  static std::string text(const Gid& g) { return g.is_ipv4_mapped() ? g.ipv4_string() : g.to_string(); }
  /// 255.255.255.252 for a /30.
  static std::string mask(unsigned prefix) {
    const std::uint32_t m = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - std::min(prefix, 32u));
    return std::to_string(m >> 24) + "." + std::to_string((m >> 16) & 0xff) + "." +
           std::to_string((m >> 8) & 0xff) + "." + std::to_string(m & 0xff);
  }
  static std::string cidr(const IfAddress& a) { return text(a.address) + "/" + std::to_string(a.prefix); }

  [[nodiscard]] Lines wedged(const std::string& dev) const {
    if (mac_)
      return {"# replug the Thunderbolt cable of " + q(dev) + " (or reboot), then: ibv_devinfo -d " + q(dev)};
    return {"sudo dmesg | tail -n 50   # what the driver of " + q(dev) + " said",
            "# then reload its driver or reboot; ibv_devinfo -d " + q(dev) + " must answer"};
  }
  [[nodiscard]] Lines device_missing(const std::string& dev) const {
    if (mac_)
      return {"rdma_ctl status   # must say enabled (rdma_ctl enable works only from macOS Recovery)",
              "ibv_devices       # must list " + q(dev) + "; Thunderbolt 4 ports list none (no RDMA)"};
    return {"ibv_devices   # must list " + q(dev) + " (else check its driver: rdma link show)"};
  }
  [[nodiscard]] Lines port_down(const std::string& dev, std::uint32_t port, const std::string& n,
                                bool netdev_down, bool tb) const {
    Lines l;
    if (netdev_down && !n.empty())
      l.push_back(mac_ ? "sudo ifconfig " + q(n) + " up" : "sudo ip link set " + q(n) + " up");
    if (tb)
      l.push_back("# check the cable: RDMA needs Thunderbolt 5 at both ends (Thunderbolt 4 has none)");
    else
      l.push_back("# check the cable and the switch port; ibv_devinfo -d " + q(dev) + " -i " +
                  std::to_string(port) + " shows the state");
    return l;
  }
  [[nodiscard]] Lines netdev_elsewhere(const std::string& n) const {
    if (mac_) return {"ifconfig " + q(n) + "   # the interface must be there"};
    return {"# run the program in the network namespace that holds " + q(n) +
                ": ip netns exec NS ... or nsenter -n -t PID ...",
            "# or move " + q(n) + " into this one (from the namespace that holds it): sudo ip link set " +
                q(n) + " netns <this namespace's name or a PID in it>"};
  }
  [[nodiscard]] Lines netdev_missing(const std::string& n) const {
    if (mac_) return {"ifconfig " + q(n) + "   # not there: check the cable and System Settings > Network"};
    return {"ip link show " + q(n) + "   # not there: check the driver and the namespace"};
  }
  [[nodiscard]] Lines netdev_up(const std::string& n) const {
    return {mac_ ? "sudo ifconfig " + q(n) + " up" : "sudo ip link set " + q(n) + " up"};
  }
  /// One line for every netdev whose membership is unknown: the tool lists every bridge port.
  [[nodiscard]] Lines check_bridges() const {
    if (mac_) return {"ifconfig -a | grep 'member:'   # each line names a bridge member"};
    return {"bridge link show   # each line names a bridge port and its master (iproute2)"};
  }
  /// The verbs library itself: its packages (rdma-core's) on Linux; on macOS it ships with the
  /// system (26.2 and later), so an update is the fix.
  [[nodiscard]] Lines install_verbs() const {
    if (mac_)
      return {"sw_vers -productVersion   # librdma.dylib ships with macOS 26.2 and later: update macOS"};
    return {"sudo apt install libibverbs1 ibverbs-providers   # Debian, Ubuntu",
            "sudo dnf install libibverbs   # RHEL, Fedora (the providers are in it)"};
  }
  /// No RDMA device in the kernel: find the NIC and load its RDMA driver, or soft-RoCE over
  /// `n` (an interface of this host; "IF" when none is known) to try things out.
  [[nodiscard]] Lines no_kernel_device(const std::string& n) const {
    if (mac_) return device_missing("rdma_en<N>");
    const std::string netdev = n.empty() ? std::string("IF") : q(n);
    return {"lspci | grep -i -e mellanox -e infiniband -e ethernet   # is there an RDMA-capable NIC?",
            "sudo modprobe mlx5_ib   # its RDMA driver, <driver>_ib (mlx5_ib: ConnectX-4 and later)",
            "# no RDMA NIC: to try things out, soft-RoCE over an interface of this host:",
            "sudo modprobe rdma_rxe && sudo rdma link add rxe0 type rxe netdev " + netdev};
  }
  /// Devices in the kernel, none in the library: the uverbs nodes, then the providers.
  [[nodiscard]] Lines provider_missing(const std::vector<std::string>& devices, bool uverbs) const {
    std::string names;
    for (const std::string& d : devices) names += (names.empty() ? "" : " ") + q(d);
    Lines l;
    if (!uverbs)
      l.push_back("sudo modprobe ib_uverbs   # /dev/infiniband/uverbsN: how programs open a device");
    l.push_back(
        "sudo apt install ibverbs-providers   # Debian, Ubuntu (RHEL, Fedora: sudo dnf install libibverbs)");
    if (!names.empty()) l.push_back("rdma link show   # the kernel's devices: " + names);
    return l;
  }
  [[nodiscard]] Lines stock_stack(const std::string& dev, std::uint32_t port) const {
    return {"ibv_devinfo -v -d " + q(dev) + " -i " + std::to_string(port) +
                "   # index 1 must hold the first ::ffff:a.b.c.d GID, with none below it",
            "# or run a program that advertises and routes from one index: ds4, or JACCL patched "
            "(gidpolicy env --for jaccl)"};
  }
  [[nodiscard]] static Lines update_macos() {
    return {"sw_vers -productVersion   # must be 26.2 or later",
            "# System Settings > General > Software Update (or: softwareupdate --list, then --install)",
            "# then, from macOS Recovery: rdma_ctl enable"};
  }
  [[nodiscard]] static Lines enable_rdma() {
    return {"# restart into macOS Recovery (hold the power button), open Terminal, then:", "rdma_ctl enable",
            "# restart; then rdma_ctl status must say enabled and ibv_devices list rdma_enN"};
  }
  [[nodiscard]] Lines leave_bridge(const std::string& n, const std::string& bridge) const {
    if (mac_)
      return {"sudo ifconfig " + q(bridge) + " deletem " + q(n) + "   # now; lost at reboot",
              "# persistent: turn the Thunderbolt Bridge service off (System Settings > Network, or:)",
              "sudo networksetup -setnetworkserviceenabled \"Thunderbolt Bridge\" off"};
    return {"sudo ip link set " + q(n) + " nomaster   # now",
            "# persistent: remove " + q(n) + " from " + q(bridge) +
                " in netplan (bridges: interfaces) or NetworkManager (its bridge-slave connection)"};
  }
  [[nodiscard]] Lines add_address(const std::string& n, const IfAddress& a) const {
    const std::string peer = Gid::ipv4_mapped(*a.address.ipv4() + 1).ipv4_string();
    if (mac_) {
      const std::string service = "RDMA " + n;
      return {"sudo ifconfig " + q(n) + " inet " + text(a.address) + " netmask " + mask(a.prefix) +
                  " alias   # now; lost at reboot",
              "# persistent: a network service of its own for " + q(n) + ":",
              "sudo networksetup -createnetworkservice " + q(service) + " " + q(n),
              "sudo networksetup -setmanual " + q(service) + " " + text(a.address) + " " + mask(a.prefix),
              "# the Mac at the other end of this cable takes " + peer + " the same way"};
    }
    return {"sudo ip addr add " + cidr(a) + " dev " + q(n) + "   # now; lost at reboot",
            "# persistent: netplan (/etc/netplan/*.yaml, ethernets: " + q(n) + ": addresses: [" + cidr(a) +
                "], then sudo netplan apply)",
            "# or NetworkManager: sudo nmcli connection add type ethernet ifname " + q(n) +
                " con-name rdma-" + n + " ipv4.method manual ipv4.addresses " + cidr(a),
            "# the host at the other end of this link takes " + peer + " the same way"};
  }
  [[nodiscard]] Lines add_address_or_none(const std::string& n, const std::optional<IfAddress>& a) const {
    return a ? add_address(n, *a) : Lines{};
  }
  [[nodiscard]] Lines readd_address(const std::string& n, const IfAddress& a, bool from_file) const {
    if (from_file)
      return {
          "gidpolicy show --json > TABLE.json   # take the table again on the host, then: gidpolicy doctor "
          "--this-host --input TABLE.json"};
    const bool v4 = a.address.is_ipv4_mapped();
    if (mac_)
      return {v4 ? "sudo ifconfig " + q(n) + " inet " + text(a.address) + " -alias && sudo ifconfig " + q(n) +
                       " inet " + text(a.address) + " netmask " + mask(a.prefix) +
                       " alias   # the driver adds its GID again"
                 : "sudo ifconfig " + q(n) + " inet6 " + text(a.address) + " delete && sudo ifconfig " +
                       q(n) + " inet6 " + text(a.address) + " prefixlen " + std::to_string(a.prefix) +
                       " alias"};
    return {"sudo ip addr del " + cidr(a) + " dev " + q(n) + " && sudo ip addr add " + cidr(a) + " dev " +
                q(n) + "   # the kernel adds its GIDs again",
            "rdma link show   # if none appears: which netdev is this port's?"};
  }
  [[nodiscard]] Lines stale_gid(const std::string& n, const Gid& g, bool from_file) const {
    Lines l;
    if (from_file) {
      l.push_back(
          "gidpolicy show --json > TABLE.json   # take the table again on the host, then: gidpolicy doctor "
          "--this-host --input TABLE.json");
      l.push_back("# if the new table still lists it, the driver kept a GID whose address is gone:");
    }
    l.push_back(mac_ ? "sudo ifconfig " + q(n) + " down && sudo ifconfig " + q(n) +
                           " up   # the driver rebuilds the table"
                     : "sudo ip link set " + q(n) + " down && sudo ip link set " + q(n) +
                           " up   # the kernel rebuilds the table");
    l.push_back("# or give " + q(n) + " the address back if it should be there: " + text(g));
    return l;
  }
  [[nodiscard]] Lines mtu(const std::string& n, unsigned bytes) const {
    return {mac_ ? "sudo ifconfig " + q(n) + " mtu " + std::to_string(bytes)
                 : "sudo ip link set " + q(n) + " mtu " + std::to_string(bytes)};
  }
  [[nodiscard]] Lines roce_mode(const std::string& dev, std::uint32_t port) const {
    const std::string dir = "/sys/kernel/config/rdma_cm/" + q(dev);
    return {"sudo mkdir -p " + dir +
                "   # configfs (modprobe configfs; mount -t configfs none /sys/kernel/config)",
            "echo 'IB/RoCE v1' | sudo tee " + dir + "/ports/" + std::to_string(port) + "/default_roce_mode",
            "# or give the port RoCE v2 GIDs (its driver's RoCE v2 setting)"};
  }
  [[nodiscard]] Lines route(const PeerAddress& p) const {
    return {mac_ ? "route -n get " + q(p.to_string()) + "   # what the kernel does with it"
                 : "ip route get " + q(p.to_string()) + "   # what the kernel does with it"};
  }
  /// `n` empty: the host has several ports, and which one is on the cable to `p` is the operator's to say.
  [[nodiscard]] Lines pin_route(const PeerAddress& p, std::string n) const {
    if (n.empty()) n = "NETDEV";
    if (mac_)
      return {"sudo route change " + q(p.to_string()) + " -interface " + q(n) +
              "   # as mlx.distributed_config --auto-setup pins it"};
    return {"sudo ip route replace " + q(p.to_string()) + (p.address.is_ipv4_mapped() ? "/32" : "/128") +
            " dev " + q(n)};
  }
  [[nodiscard]] Lines move_subnet(const std::string& n, const IfAddress& old, const IfAddress& a) const {
    Lines l;
    if (mac_)
      l.push_back("sudo ifconfig " + q(n) + " inet " + text(old.address) + " -alias");
    else
      l.push_back("sudo ip addr del " + cidr(old) + " dev " + q(n));
    for (auto& x : add_address(n, a)) l.push_back(std::move(x));
    return l;
  }

 private:
  bool mac_;
};

}  // namespace gidpolicy::doctor_detail
