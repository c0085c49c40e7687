// Addresses: bind, resolve_addr, resolve_route and getaddrinfo. An address becomes a device,
// port and sgid_index by gidpolicy::rdma_cm_source (the kernel's rule, include/gidpolicy/rdma_cm.hpp)
// over the fake's table; the netdev owning an address, and the route to a destination, are the
// calling process's network namespace's own (getifaddrs, rtnetlink).
#include "cm.hpp"

#include <gidpolicy/kernel_routes.hpp>
#include <gidpolicy/network.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <random>

namespace fakecm {
namespace {

gidpolicy::Gid gid_of(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return gidpolicy::Gid::ipv4_mapped(ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr));
  return gidpolicy::Gid::from_bytes(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
}

bool is_any(const sockaddr* a) { return gid_of(a).is_zero() || gid_of(a) == gidpolicy::Gid::ipv4_mapped(0); }

bool is_loopback(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  const auto& s6 = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(&s6);
}

std::uint16_t port_of(const sockaddr* a) {
  return a->sa_family == AF_INET ? ntohs(reinterpret_cast<const sockaddr_in*>(a)->sin_port)
                                 : ntohs(reinterpret_cast<const sockaddr_in6*>(a)->sin6_port);
}

void set_port(sockaddr* a, std::uint16_t port) {
  if (a->sa_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(a)->sin_port = htons(port);
  else
    reinterpret_cast<sockaddr_in6*>(a)->sin6_port = htons(port);
}

std::uint16_t ephemeral_port() {
  static std::minstd_rand rng(static_cast<unsigned>(::getpid()) * 2654435761u);
  return static_cast<std::uint16_t>(32768 + rng() % (60999 - 32768));
}

// Whether nobody listens on the socket file `un` any more: its process died (a kill -9 leaves
// the file). Only ECONNREFUSED says so; a live listener accepts, or with a full backlog answers
// EAGAIN (the probe never blocks), and the fake's progress thread drops the probe's connection
// when it reads its end.
bool nobody_listens(const sockaddr_un& un) {
  const int probe = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  const bool refused =
      ::connect(probe, reinterpret_cast<const sockaddr*>(&un), sizeof un) != 0 && errno == ECONNREFUSED;
  ::close(probe);
  return refused;
}

// The directory's lock (flock on its `.lock`), held around a name's bind and listen, and around
// a sweep: between bind() and listen() a live name refuses connections too, and a sweep must
// never take it for a dead one. The kernel drops the lock with a killed process.
class DirLock {
 public:
  explicit DirLock(const std::string& dir)
      : fd_(::open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (fd_ >= 0)
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_;
};

bool is_cm_name(const char* name) {
  for (const char* prefix : {"tcp-", "udp-", "ib-", "ipoib-"})
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

const char* ps_name(rdma_port_space ps) {
  return ps == RDMA_PS_UDP ? "udp" : ps == RDMA_PS_IB ? "ib" : ps == RDMA_PS_IPOIB ? "ipoib" : "tcp";
}

}  // namespace

void sweep_stale_names(Library& l) {
  const DirLock lock(l.dir);
  DIR* d = ::opendir(l.dir.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    if (!is_cm_name(e->d_name)) continue;
    const std::string path = l.dir + "/" + e->d_name;
    struct stat st {};
    sockaddr_un un{};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) || path.size() >= sizeof un.sun_path)
      continue;
    un.sun_family = AF_UNIX;
    std::memcpy(un.sun_path, path.c_str(), path.size() + 1);
    if (nobody_listens(un)) ::unlink(path.c_str());
  }
  ::closedir(d);
}

socklen_t sockaddr_len(const sockaddr* a) {
  return a && a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

std::string netdev_owning(const sockaddr* a) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return {};
  std::string name;
  for (ifaddrs* p = list; p && name.empty(); p = p->ifa_next) {
    if (!p->ifa_addr || p->ifa_addr->sa_family != a->sa_family) continue;
    if (a->sa_family == AF_INET) {
      if (reinterpret_cast<sockaddr_in*>(p->ifa_addr)->sin_addr.s_addr ==
          reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr)
        name = p->ifa_name;
    } else {
      const auto* x = reinterpret_cast<sockaddr_in6*>(p->ifa_addr);
      const auto* y = reinterpret_cast<const sockaddr_in6*>(a);
      if (std::memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0 &&
          (!IN6_IS_ADDR_LINKLOCAL(&y->sin6_addr) || y->sin6_scope_id == 0 ||
           x->sin6_scope_id == y->sin6_scope_id))
        name = p->ifa_name;
    }
  }
  ::freeifaddrs(list);
  return name;
}

std::string socket_path(const Library& l, rdma_port_space ps, const sockaddr* a, bool any) {
  std::string addr = address_text(a);
  if (any) addr = "any:" + std::to_string(port_of(a));
  for (char& ch : addr)
    if (ch == '/' || ch == '[' || ch == ']') ch = '_';
  return l.dir + "/" + ps_name(ps) + "-" + addr;
}

void fill_path(Id* id) {
  ibv_sa_path_rec& p = id->path;
  p = ibv_sa_path_rec{};
  std::memcpy(&p.sgid, &id->pub.route.addr.addr.ibaddr.sgid, sizeof p.sgid);
  std::memcpy(&p.dgid, &id->pub.route.addr.addr.ibaddr.dgid, sizeof p.dgid);
  p.pkey = htons(0xffff);
  p.mtu = static_cast<std::uint8_t>(id->mtu);
  p.hop_limit = 64;
  p.traffic_class = id->tos;
  p.reversible = 1;
  p.numb_path = 1;
  p.sl = 0;
  p.packet_life_time = 18;
  id->pub.route.path_rec = &id->path;
  id->pub.route.num_paths = 1;
}

int acquire_device(Library& l, Id* id, const sockaddr* src, const std::string& netdev, std::string& reason) {
  const gidpolicy::Gid address = gid_of(src);
  std::size_t table = 0;
  const gidpolicy::GidEntry* entry = nullptr;
  gidpolicy::GidType mode = gidpolicy::GidType::roce_v2;
  if (is_loopback(src) || is_any(src)) {
    // rdma_cm binds a loopback address to the first active port of any device, GID index 0; so
    // does a resolution to the wildcard address (cma_resolve_loopback), and a request that
    // arrives for it.
    for (; table < l.tables.size(); ++table) {
      const auto& t = l.tables[table];
      if (t.port().state == gidpolicy::PortState::active && t.find(0u) && t.find(0u)->usable()) break;
    }
    if (table == l.tables.size()) {
      reason = "a loopback address binds to the first active port's GID 0, and no port has one";
      return ENODEV;
    }
    entry = l.tables[table].find(0u);
    mode = entry->type;
  } else {
    auto r = gidpolicy::rdma_cm_source(l.tables, address, netdev, l.modes);
    if (!r) {
      reason = r.error().detail;
      return ENODEV;
    }
    table = r.value().table;
    entry = r.value().entry;
    mode = r.value().mode;
  }
  const gidpolicy::PortInfo& port = l.tables[table].port();
  ibv_context* ctx = nullptr;
  for (ibv_context* c : l.contexts)
    if (port.device == ibv_get_device_name(c->device)) ctx = c;
  if (!ctx) {
    reason = "the fake libibverbs has no device " + port.device;
    return ENODEV;
  }
  // librdmacm gives every id on a device that device's PD (ucma_get_device), and programs use
  // it: UCX's rdmacm CM creates its placeholder QP on id->pd.
  ibv_pd*& pd = l.default_pds[ctx];
  if (!pd) pd = ibv_alloc_pd(ctx);
  if (!pd) {
    reason = "no protection domain on " + port.device;
    return ENOMEM;
  }
  id->pub.pd = pd;
  id->pub.verbs = ctx;
  id->pub.port_num = static_cast<std::uint8_t>(port.port);
  id->device = port.device;
  id->netdev = entry->netdev.empty() ? netdev : entry->netdev;
  id->sgid_index = static_cast<std::uint8_t>(entry->index);
  id->mode = mode;
  id->mtu = static_cast<ibv_mtu>(port.active_mtu);
  std::memcpy(&id->pub.route.addr.addr.ibaddr.sgid, entry->gid.bytes().data(), 16);
  id->pub.route.addr.addr.ibaddr.pkey = htons(0xffff);
  return 0;
}

int bind_id(Library& l, Id* id, const sockaddr* addr, const char* call) {
  if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
    return refuse(l, call, id, EAFNOSUPPORT, "only AF_INET and AF_INET6 addresses are modelled");
  if (id->state != State::idle) return refuse(l, call, id, EINVAL, "the id is already bound");
  sockaddr_storage a{};
  std::memcpy(&a, addr, sockaddr_len(addr));
  auto* sa = reinterpret_cast<sockaddr*>(&a);
  const bool any = is_any(sa);
  if (!any) {
    const std::string owner = is_loopback(sa) ? std::string("lo") : netdev_owning(sa);
    if (owner.empty())
      return refuse(l, call, id, EADDRNOTAVAIL,
                    address_text(sa) + " is not an address of any interface in this network namespace");
    std::string reason;
    if (const int e = acquire_device(l, id, sa, owner, reason); e) return refuse(l, call, id, e, reason);
  }
  // The name: a listening socket file, so a connect finds it and a stale one (its process
  // died) is told from a live one.
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return refuse(l, call, id, errno, "no socket for the bound name");
  const bool pick = port_of(sa) == 0;
  const DirLock lock(l.dir);  // bind and listen as one step, for other processes' sweeps
  int stale_removed = 0;
  for (int attempt = 0; attempt < 64; ++attempt) {
    if (pick) set_port(sa, ephemeral_port());
    const std::string path = socket_path(l, id->pub.ps, sa, any);
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    if (path.size() >= sizeof un.sun_path) {
      ::close(fd);
      return refuse(l, call, id, ENAMETOOLONG, "GIDPOLICY_FAKE_CM_DIR is too long for a socket path");
    }
    std::memcpy(un.sun_path, path.c_str(), path.size() + 1);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&un), sizeof un) == 0) {
      ::listen(fd, 4096);
      id->name = fd;
      id->name_path = path;
      id->name_pid = ::getpid();
      break;
    }
    if (errno == EADDRINUSE) {
      // Live, or left by a process that died? Only a dead one refuses a connection.
      if (nobody_listens(un) && stale_removed++ < 64) {
        ::unlink(path.c_str());
        --attempt;
        continue;
      }
      if (!pick) {
        ::close(fd);
        return refuse(l, call, id, EADDRINUSE, address_text(sa) + " is bound by another id");
      }
      continue;
    }
    const int e = errno;
    ::close(fd);
    return refuse(l, call, id, e, "cannot bind the name " + path + ": " + std::strerror(e));
  }
  if (id->name < 0) {
    ::close(fd);
    return refuse(l, call, id, EADDRINUSE, "no free port");
  }
  id->any = any;
  std::memcpy(&id->pub.route.addr.src_storage, &a, sizeof a);
  id->state = State::bound;
  watch(l, id);
  auto r = record(call, id);
  r["src"] = address_text(sa);
  r["result"] = 0;
  log_record(l, std::move(r));
  return 0;
}

}  // namespace fakecm

using namespace fakecm;

extern "C" {

__attribute__((visibility("default"))) int rdma_bind_addr(rdma_cm_id* id, sockaddr* addr) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    return bind_id(l, reinterpret_cast<Id*>(id), addr, "bind_addr");
  });
}

__attribute__((visibility("default"))) int rdma_resolve_addr(rdma_cm_id* id, sockaddr* src_addr,
                                                             sockaddr* dst_addr, int timeout_ms) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>& lk) -> int {
    if (!id || !dst_addr) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    if (dst_addr->sa_family != AF_INET && dst_addr->sa_family != AF_INET6)
      return refuse(l, "resolve_addr", i, EAFNOSUPPORT,
                    "only AF_INET and AF_INET6 destinations are modelled");
    if (src_addr && i->state == State::idle && !is_any(src_addr))
      if (bind_id(l, i, src_addr, "resolve_addr") != 0) return -1;
    if (i->state != State::idle && i->state != State::bound)
      return refuse(l, "resolve_addr", i, EINVAL, "the id's address is already resolved");
    (void)timeout_ms;  // the answer is immediate: the route is the namespace's and the neighbour is assumed
    std::memcpy(&i->pub.route.addr.dst_storage, dst_addr, sockaddr_len(dst_addr));
    auto* dst = reinterpret_cast<sockaddr*>(&i->pub.route.addr.dst_storage);
    int status = 0;
    std::string reason;
    if (i->pub.verbs == nullptr) {
      // Unbound: the source is the one the kernel's route to the destination prefers, on the
      // route's netdev; a local destination is its own source, on the netdev owning it.
      sockaddr_storage src{};
      std::string netdev;
      if (is_loopback(dst) || is_any(dst)) {
        // The kernel resolves the wildcard address (0.0.0.0, ::) as this host, through the
        // loopback binding (rdma_resolve_addr: cma_any_addr -> cma_resolve_loopback), and a
        // connect to it reaches a listener bound to the wildcard address.
        std::memcpy(&src, dst, sockaddr_len(dst));
        netdev = "lo";
      } else {
        gidpolicy::PeerAddress peer(gid_of(dst));
        if (dst->sa_family == AF_INET6) {
          const auto* d6 = reinterpret_cast<const sockaddr_in6*>(dst);
          char name[IF_NAMESIZE] = "";
          if (IN6_IS_ADDR_LINKLOCAL(&d6->sin6_addr) && d6->sin6_scope_id &&
              ::if_indextoname(d6->sin6_scope_id, name))
            peer.scope = name;
        }
        gidpolicy::KernelRoutes kernel;
        auto route = kernel.route_to(peer);
        if (!route) {
          status = route.error().code == gidpolicy::errc::no_route ? -ENETUNREACH : -EINVAL;
          reason = route.error().detail;
        } else {
          using gidpolicy::RouteType;
          switch (route.value().type) {
            case RouteType::unicast:
            case RouteType::local:
            // A routed multicast group resolves as a unicast peer does: the route's source on
            // its netdev (the kernel's addr4/addr6_resolve take any route the lookup gives, and
            // the group's neighbour is its mapped MAC, never an ARP).
            case RouteType::multicast:
              break;
            case RouteType::unreachable:
              status = -EHOSTUNREACH;
              break;
            case RouteType::prohibit:
              status = -EACCES;
              break;
            case RouteType::blackhole:
              status = -EINVAL;
              break;
            default:
              status = -ENETUNREACH;
              break;
          }
          if (status) {
            reason = "the route to " + address_text(dst) + " is " +
                     std::string(gidpolicy::to_string(route.value().type));
          } else if (route.value().type == RouteType::local) {
            std::memcpy(&src, dst, sockaddr_len(dst));
            netdev = netdev_owning(dst);
          } else if (!route.value().source) {
            status = -EADDRNOTAVAIL;
            reason = "the route to " + address_text(dst) + " names no source address";
          } else {
            netdev = route.value().netdev;
            src.ss_family = dst->sa_family;
            if (dst->sa_family == AF_INET) {
              reinterpret_cast<sockaddr_in*>(&src)->sin_addr.s_addr = htonl(*route.value().source->ipv4());
            } else {
              std::memcpy(&reinterpret_cast<sockaddr_in6*>(&src)->sin6_addr,
                          route.value().source->bytes().data(), 16);
              reinterpret_cast<sockaddr_in6*>(&src)->sin6_scope_id = route.value().ifindex;
            }
          }
        }
      }
      if (!status) {
        const int e = acquire_device(l, i, reinterpret_cast<sockaddr*>(&src), netdev, reason);
        if (e) status = -e;
      }
      if (!status) {
        set_port(reinterpret_cast<sockaddr*>(&src), ephemeral_port());
        std::memcpy(&i->pub.route.addr.src_storage, &src, sizeof src);
      }
    }
    if (!status) {
      const gidpolicy::Gid d = gid_of(dst);
      std::memcpy(&i->pub.route.addr.addr.ibaddr.dgid, d.bytes().data(), 16);
      if (is_loopback(dst) || is_any(dst))
        i->pub.route.addr.addr.ibaddr.dgid = i->pub.route.addr.addr.ibaddr.sgid;
      i->state = State::addr_resolved;
    }
    auto r = record("resolve_addr", i);
    r["src"] = address_text(&i->pub.route.addr.src_addr);
    r["dst"] = address_text(dst);
    r["result"] = status;
    if (status) {
      r["error"] = errno_name(-status);
      r["reason"] = reason;
    }
    log_record(l, std::move(r));
    queue_event(l, i, status ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED, status);
    if (i->sync) return wait_sync(lk, i, RDMA_CM_EVENT_ADDR_RESOLVED);
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_resolve_route(rdma_cm_id* id, int timeout_ms) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>& lk) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    (void)timeout_ms;
    auto* i = reinterpret_cast<Id*>(id);
    if (i->state != State::addr_resolved)
      return refuse(l, "resolve_route", i, EINVAL, "the address is not resolved");
    fill_path(i);
    i->state = State::route_resolved;
    auto r = record("resolve_route", i);
    r["result"] = 0;
    log_record(l, std::move(r));
    queue_event(l, i, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
    if (i->sync) return wait_sync(lk, i, RDMA_CM_EVENT_ROUTE_RESOLVED);
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_getaddrinfo(const char* node, const char* service,
                                                            const rdma_addrinfo* hints, rdma_addrinfo** res) {
  return unlocked_call(-1, [&]() -> int {
    if (!res) {
      errno = EINVAL;
      return -1;
    }
    auto copy = [](const sockaddr* a, socklen_t len) {
      auto* c = static_cast<sockaddr*>(std::calloc(1, sizeof(sockaddr_storage)));
      if (c) std::memcpy(c, a, std::min<std::size_t>(len, sizeof(sockaddr_storage)));
      return c;
    };
    if (!node && !service) {
      // The addresses come in the hints (libfabric's verbs provider asks this way).
      if (!hints || (!hints->ai_src_addr && !hints->ai_dst_addr)) {
        errno = EINVAL;
        return -1;
      }
      auto* out = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
      if (!out) {
        errno = ENOMEM;
        return -1;
      }
      out->ai_flags = hints->ai_flags;
      out->ai_family = hints->ai_src_addr ? hints->ai_src_addr->sa_family : hints->ai_dst_addr->sa_family;
      out->ai_qp_type = hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
      out->ai_port_space = hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
      if (hints->ai_src_addr && hints->ai_src_len > 0) {
        out->ai_src_addr = copy(hints->ai_src_addr, hints->ai_src_len);
        out->ai_src_len = hints->ai_src_len;
      }
      if (hints->ai_dst_addr && hints->ai_dst_len > 0) {
        out->ai_dst_addr = copy(hints->ai_dst_addr, hints->ai_dst_len);
        out->ai_dst_len = hints->ai_dst_len;
      }
      *res = out;
      return 0;
    }
    addrinfo h{};
    h.ai_flags = AI_ADDRCONFIG;
    if (hints && (hints->ai_flags & RAI_NUMERICHOST)) h.ai_flags |= AI_NUMERICHOST;
    if (hints && (hints->ai_flags & RAI_PASSIVE)) h.ai_flags |= AI_PASSIVE;
    h.ai_family = hints && hints->ai_family ? hints->ai_family : AF_UNSPEC;
    h.ai_socktype = SOCK_STREAM;
    h.ai_flags &= ~AI_ADDRCONFIG;
    addrinfo* ai = nullptr;
    if (const int rc = ::getaddrinfo(node, service, &h, &ai); rc != 0) {
      errno = rc == EAI_NONAME ? ENODEV : rc == EAI_MEMORY ? ENOMEM : EINVAL;
      return rc;
    }
    auto* out = static_cast<rdma_addrinfo*>(std::calloc(1, sizeof(rdma_addrinfo)));
    if (!out) {
      ::freeaddrinfo(ai);
      errno = ENOMEM;
      return EAI_MEMORY;
    }
    out->ai_flags = hints ? hints->ai_flags : 0;
    out->ai_family = ai->ai_family;
    out->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
    out->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space : RDMA_PS_TCP;
    if (out->ai_port_space == RDMA_PS_UDP && !(hints && hints->ai_qp_type)) out->ai_qp_type = IBV_QPT_UD;

    if (hints && (hints->ai_flags & RAI_PASSIVE)) {
      out->ai_src_addr = copy(ai->ai_addr, ai->ai_addrlen);
      out->ai_src_len = ai->ai_addrlen;
    } else {
      out->ai_dst_addr = copy(ai->ai_addr, ai->ai_addrlen);
      out->ai_dst_len = ai->ai_addrlen;
      if (hints && hints->ai_src_addr && hints->ai_src_len <= sizeof(sockaddr_storage)) {
        out->ai_src_addr = copy(hints->ai_src_addr, hints->ai_src_len);
        out->ai_src_len = hints->ai_src_len;
      }
    }
    ::freeaddrinfo(ai);
    *res = out;
    return 0;
  });
}

__attribute__((visibility("default"))) void rdma_freeaddrinfo(rdma_addrinfo* res) {
  unlocked_void_call([&] {
    while (res) {
      rdma_addrinfo* next = res->ai_next;
      std::free(res->ai_src_addr);
      std::free(res->ai_dst_addr);
      std::free(res->ai_src_canonname);
      std::free(res->ai_dst_canonname);
      std::free(res->ai_route);
      std::free(res->ai_connect);
      std::free(res);
      res = next;
    }
  });
}

}  // extern "C"
