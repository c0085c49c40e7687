// The fake host's netdevs (--netns): each netdev the table binds GIDs to becomes a veth (the
// kernel this runs on may have no dummy driver; a veth's carrier needs its peer up, so the peer
// is always up and the netdev follows its port), holding the addresses its GIDs encode: an
// IPv4-mapped GID's IPv4 address (/24) and every other GID as an IPv6 address (/64, without
// duplicate address detection, so it is usable at once). The kernel's own link-local address
// is turned off (addrgenmode none): the table's fe80:: GIDs are the link-local addresses, and a
// link-local GID in EUI-64 form sets the netdev's MAC, as a NIC's MAC made that GID.
#include "fake_host.hpp"

#include <fcntl.h>
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
#include <string>
#include <vector>

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

// One `ip` run per change, its words as argv: never `ip -batch`, whose line reader cuts a line
// at `#` (a comment) and has no quoting that survives it, so a netdev named `fh#0` (a valid Linux
// name) would become `fh`. The first failure stops the rest and is the error, in ip's words.
result<void> run_ip(const std::vector<std::string>& words, bool in_user_namespace) {
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) return fail_errno(errno, "pipe");
  std::vector<char*> argv;
  static char ip_name[] = "ip";
  argv.push_back(ip_name);
  for (const std::string& w : words) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(err[0]);
    ::close(err[1]);
    return fail_errno(errno, "fork");
  }
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, 0);
    ::dup2(err[1], 2);
    ::dup2(err[1], 1);
    if (in_user_namespace) keep_net_admin();
    ::execvp("ip", argv.data());
    std::fprintf(stderr, "cannot run ip (iproute2): %s\n", std::strerror(errno));
    ::_exit(127);
  }
  ::close(err[1]);
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
  if (const auto nl = out.find('\n'); nl != std::string::npos) out.resize(nl);
  std::string cmd = "ip";
  for (const std::string& w : words) cmd += " " + w;
  return fail(errc::io_error,
              "setting up the netdevs: " + cmd + ": " + (out.empty() ? std::string("failed") : out));
}

}  // namespace

result<void> apply_netdevs(const std::vector<GidTable>& tables, NetdevState& state) {
  const std::map<std::string, Netdev> devs = netdevs_of(tables);
  std::vector<std::vector<std::string>> script;
  auto add = [&](std::vector<std::string> words) { script.push_back(std::move(words)); };
  if (!state.loopback_up) add({"link", "set", "dev", "lo", "up"});
  for (const auto& [name, n] : devs) {
    // IFNAMSIZ: 15 bytes and the NUL; ip refuses longer names less clearly.
    if (name.size() > 15 || name.find_first_of(" /\t\n:") != std::string::npos)
      return fail(errc::invalid_field, "netdev " + name + ": not a Linux interface name (at most 15 bytes)");
    // Loopback exists in every network namespace (a table may bind GIDs to it): it gets the
    // addresses, and stays up whatever the port does, since the namespace's own traffic needs it.
    const bool loopback = name == "lo";
    if (!loopback && !state.created.count(name)) {
      std::string peer = "gpfh" + std::to_string(state.peers++);
      while (devs.count(peer)) peer += "p";
      add({"link", "add", name, "type", "veth", "peer", "name", peer});
      add({"link", "set", "dev", name, "addrgenmode", "none"});
      add({"link", "set", "dev", peer, "addrgenmode", "none"});
      if (n.mac) add({"link", "set", "dev", name, "address", *n.mac});
      add({"link", "set", "dev", peer, "up"});
    }
    // Only what this fake host added is taken away again (never loopback's own 127.0.0.1/8).
    for (const std::string& a : state.added[name])
      if (!n.addresses.count(a)) add({"addr", "del", a, "dev", name});
    for (const std::string& a : n.addresses) {
      if (a.find(':') != std::string::npos)
        add({"addr", "replace", a, "dev", name, "nodad"});
      else
        add({"addr", "replace", a, "dev", name});
    }
    if (!loopback) add({"link", "set", "dev", name, n.up ? "up" : "down"});
  }
  // A netdev the new table no longer names keeps existing, without its addresses, down.
  for (const auto& [name, added] : state.added) {
    if (devs.count(name)) continue;
    for (const std::string& a : added) add({"addr", "del", a, "dev", name});
    if (name != "lo") add({"link", "set", "dev", name, "down"});
  }
  for (const auto& words : script) GIDPOLICY_TRYV(run_ip(words, state.in_user_namespace));
  state.loopback_up = true;
  for (auto& [name, added] : state.added) added.clear();
  for (const auto& [name, n] : devs) {
    if (name != "lo") state.created.insert(name);
    state.added[name] = n.addresses;
  }
  return success();
}

}  // namespace gidpolicy::cli::fake_host
