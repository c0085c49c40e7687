// The fake host's netdevs (--netns): each netdev the table binds GIDs to becomes a veth (the
// kernel this runs on may have no dummy driver; a veth's carrier needs its peer up, so the peer
// is always up and the netdev follows its port), holding the addresses its GIDs encode: an
// IPv4-mapped GID's IPv4 address (/24) and every other GID as an IPv6 address (/64, without
// duplicate address detection, so it is usable at once). The kernel's own link-local address
// is turned off (addrgenmode none): the table's fe80:: GIDs are the link-local addresses, and a
// link-local GID in EUI-64 form sets the netdev's MAC, as a NIC's MAC made that GID.
#include "fake_host.hpp"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

namespace gidpolicy::cli::fake_host {

namespace {

struct Netdev {
  std::set<std::string> addresses;  // "10.0.0.1/24", "fd00::1/64"
  std::optional<std::string> mac;
  bool up = false;
};

std::string ipv6_text(const Gid& g) {
  char buf[INET6_ADDRSTRLEN];
  ::inet_ntop(AF_INET6, g.bytes().data(), buf, sizeof buf);
  return buf;
}

std::map<std::string, Netdev> netdevs_of(const std::vector<GidTable>& tables) {
  std::map<std::string, Netdev> out;
  for (const GidTable& t : tables) {
    for (const GidEntry& e : t) {
      if (!e.usable() || e.netdev.empty()) continue;
      Netdev& n = out[e.netdev];
      n.up = n.up || t.port().state == PortState::active;
      if (e.gid.is_ipv4_mapped()) {
        n.addresses.insert(e.gid.ipv4_string() + "/24");
        continue;
      }
      n.addresses.insert(ipv6_text(e.gid) + "/64");
      const auto& b = e.gid.bytes();
      if (e.gid.is_link_local() && b[11] == 0xff && b[12] == 0xfe && !n.mac) {
        char mac[32];
        std::snprintf(mac, sizeof mac, "%02x:%02x:%02x:%02x:%02x:%02x", b[8] ^ 0x02u, b[9], b[10], b[13],
                      b[14], b[15]);
        // Only a unicast MAC can be set (the low bit of the first byte clear).
        if (((b[8] ^ 0x02u) & 1u) == 0) n.mac = mac;
      }
    }
  }
  return out;
}

// Inside a user namespace, exec() of a program by a non-root uid drops every capability: `ip`
// gets CAP_NET_ADMIN back as an ambient capability (it is in our permitted set there).
void keep_net_admin() {
  __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct d[2]{};
  if (::syscall(SYS_capget, &h, d) != 0) return;
  d[0].inheritable |= 1u << CAP_NET_ADMIN;
  if (::syscall(SYS_capset, &h, d) != 0) return;
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_ADMIN, 0, 0);
}

// `ip -batch -` with these lines; its first error (ip stops there) is the failure.
result<void> run_ip(const std::string& script, bool in_user_namespace) {
  int in[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return fail_errno(errno, "pipe");
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return fail_errno(errno, "pipe");
  }
  const pid_t pid = ::fork();
  if (pid < 0) return fail_errno(errno, "fork");
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(err[1], 2);
    ::dup2(err[1], 1);
    if (in_user_namespace) keep_net_admin();
    const char* argv[] = {"ip", "-batch", "-", nullptr};
    ::execvp("ip", const_cast<char* const*>(argv));
    std::fprintf(stderr, "cannot run ip (iproute2): %s\n", std::strerror(errno));
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(err[1]);
  const char* p = script.data();
  std::size_t left = script.size();
  while (left > 0) {
    const ssize_t n = ::write(in[1], p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  ::close(in[1]);
  std::string out;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(err[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() < 4096) out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return success();
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (const auto nl = out.find('\n'); nl != std::string::npos) out = out.substr(0, nl);
  return fail(errc::io_error, "setting up the netdevs: ip: " + (out.empty() ? std::string("failed") : out));
}

}  // namespace

result<void> apply_netdevs(const std::vector<GidTable>& tables, NetdevState& state) {
  const std::map<std::string, Netdev> devs = netdevs_of(tables);
  std::string script;
  if (!state.loopback_up) script += "link set dev lo up\n";
  for (const auto& [name, n] : devs) {
    // IFNAMSIZ: 15 bytes and the NUL; ip refuses longer names less clearly.
    if (name.size() > 15 || name.find_first_of(" /\t\n:") != std::string::npos)
      return fail(errc::invalid_field, "netdev " + name + ": not a Linux interface name (at most 15 bytes)");
    if (!state.created.count(name)) {
      std::string peer = "gpfh" + std::to_string(state.peers++);
      while (devs.count(peer)) peer += "p";
      script += "link add " + name + " type veth peer name " + peer + "\n";
      script += "link set dev " + name + " addrgenmode none\n";
      script += "link set dev " + peer + " addrgenmode none\n";
      if (n.mac) script += "link set dev " + name + " address " + *n.mac + "\n";
      script += "link set dev " + peer + " up\n";
    } else {
      script += "addr flush dev " + name + "\n";
    }
    for (const std::string& a : n.addresses)
      script += "addr add " + a + " dev " + name + (a.find(':') != std::string::npos ? " nodad" : "") + "\n";
    script += "link set dev " + name + (n.up ? " up\n" : " down\n");
  }
  // A netdev the new table no longer names keeps existing, without addresses, down.
  for (const std::string& name : state.created)
    if (!devs.count(name)) script += "addr flush dev " + name + "\nlink set dev " + name + " down\n";
  GIDPOLICY_TRYV(run_ip(script, state.in_user_namespace));
  state.loopback_up = true;
  for (const auto& [name, n] : devs) state.created.insert(name);
  return success();
}

}  // namespace gidpolicy::cli::fake_host
