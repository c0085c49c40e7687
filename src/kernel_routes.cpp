// KernelRoutes (kernel_routes.hpp): the kernel's route to a peer over rtnetlink, as
// `ip route get ADDR` asks it.
//
// Why a plain netlink socket: one request and one reply, a few attributes read; libnl-route-3
// would add a link dependency to the core library for that. Bounded: the reply buffer is 16 KiB
// (a route reply is well under 1 KiB), the socket times out after 2 s, and at most 8 messages
// are read while looking for the reply to our sequence number.
//
// Platforms: interfaces() is POSIX if_nameindex() everywhere. route_to() asks rtnetlink on Linux
// and the routing socket (PF_ROUTE, an RTM_GET: what `route -n get ADDR` asks) on macOS; the
// message is laid out and read by darwin.hpp, which the unit tests feed Darwin's bytes on Linux.
// The routing-socket code is compiled on every platform (so the Linux builds check it) and
// called only on macOS. Elsewhere route_to() fails with errc::not_supported, so
// `auto:peer=ADDR` says it cannot route rather than ranking without the route. This file is the
// only one that knows.
#include <gidpolicy/darwin.hpp>
#include <gidpolicy/interfaces.hpp>
#include <gidpolicy/kernel_routes.hpp>

#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/time.h>
#endif

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace gidpolicy {

result<std::vector<NetInterface>> KernelRoutes::interfaces() {
  struct if_nameindex* list = ::if_nameindex();
  if (!list) return fail_errno(errno, "if_nameindex()");
  std::vector<NetInterface> out;
  for (const struct if_nameindex* p = list; p->if_index != 0 && p->if_name; ++p)
    out.push_back({p->if_name, p->if_index});
  ::if_freenameindex(list);
  return out;
}

namespace {

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  [[nodiscard]] int fd() const { return fd_; }

 private:
  int fd_;
};

/// macOS: the route to `peer` from the routing socket. One RTM_GET written; replies read for
/// at most 2 s and at most 64 messages (the socket also carries every other process's
/// messages and the kernel's announcements), each at most darwin::kMaxRouteMessageBytes.
/// A refused write (ESRCH: not in table) is the kernel's answer, read with Darwin's numbers.
[[maybe_unused]] result<Route> routing_socket_route(const PeerAddress& peer) {
  const std::string what = "route to " + peer.to_string() + " (routing socket RTM_GET)";
  std::uint32_t scope = 0;
  if (!peer.scope.empty()) {
    scope = ::if_nametoindex(peer.scope.c_str());
    if (scope == 0)
      return fail(errc::invalid_argument, "peer " + peer.to_string() + ": the scope " + peer.scope +
                                              " names no interface of this host");
  }
  Socket s(::socket(PF_ROUTE, SOCK_RAW, AF_UNSPEC));
  if (s.fd() < 0) return fail_errno(errno, what + ": socket");
  ::fcntl(s.fd(), F_SETFD, FD_CLOEXEC);  // macOS has no SOCK_CLOEXEC
  static std::atomic<std::int32_t> next_seq{1};
  const std::int32_t seq = next_seq.fetch_add(1, std::memory_order_relaxed);
  const std::vector<std::uint8_t> req = darwin::route_request(peer, seq, scope);
  if (::write(s.fd(), req.data(), req.size()) < 0) return route_from_errno(Platform::darwin, peer, errno);
  const auto pid = static_cast<std::int32_t>(::getpid());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::vector<std::uint8_t> buf(darwin::kMaxRouteMessageBytes);
  for (int reads = 0; reads < 64; ++reads) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{s.fd(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return fail_errno(errno, what + ": poll");
    if (ready == 0) break;
    const ssize_t got = ::read(s.fd(), buf.data(), buf.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return fail_errno(errno, what + ": read");
    GIDPOLICY_TRY(reply,
                  darwin::route_reply(std::span(buf.data(), static_cast<std::size_t>(got)), peer, pid, seq));
    if (!reply) continue;
    Route r = std::move(*reply);
    if (r.netdev.empty() && r.ifindex != 0) {
      char name[IF_NAMESIZE] = {};
      if (::if_indextoname(r.ifindex, name)) r.netdev = name;
    }
    return r;
  }
  return fail_errno(ETIMEDOUT, what + ": no reply within 2 s");
}

}  // namespace

#if defined(__linux__)
namespace {

constexpr std::size_t align4(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

/// A GID from an address attribute: 4 bytes (IPv4, mapped) or 16.
std::optional<Gid> address_of(const void* data, std::size_t len) {
  std::array<unsigned char, 16> b{};
  if (len == 4) {
    b[10] = 0xff;
    b[11] = 0xff;
    std::memcpy(b.data() + 12, data, 4);
  } else if (len == 16) {
    std::memcpy(b.data(), data, 16);
  } else {
    return std::nullopt;
  }
  return Gid::from_bytes(b.data());
}

/// rtm_type as a RouteType.
RouteType route_type(unsigned char t) noexcept {
  switch (t) {
    case RTN_UNICAST:
      return RouteType::unicast;
    case RTN_LOCAL:
      return RouteType::local;
    case RTN_BROADCAST:
      return RouteType::broadcast;
    case RTN_ANYCAST:
      return RouteType::anycast;
    case RTN_MULTICAST:
      return RouteType::multicast;
    case RTN_BLACKHOLE:
      return RouteType::blackhole;
    case RTN_UNREACHABLE:
      return RouteType::unreachable;
    case RTN_PROHIBIT:
      return RouteType::prohibit;
    case RTN_THROW:
      return RouteType::throw_route;
    default:
      break;
  }
  return RouteType::other;
}

}  // namespace

result<Route> KernelRoutes::route_to(const PeerAddress& peer_address) {
  const Gid& peer = peer_address.address;
  const std::string what = "route to " + peer_address.to_string() + " (rtnetlink RTM_GETROUTE)";
  const bool v4 = peer.is_ipv4_mapped();
  // A scoped (link-local) peer is looked up on its netdev, as rdma_cm binds to sin6_scope_id.
  std::uint32_t oif = 0;
  if (!peer_address.scope.empty()) {
    oif = ::if_nametoindex(peer_address.scope.c_str());
    if (oif == 0)
      return fail(errc::invalid_argument, "peer " + peer_address.to_string() + ": the scope " +
                                              peer_address.scope +
                                              " names no netdev of this network namespace");
  }
  Socket s(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (s.fd() < 0) return fail_errno(errno, what + ": socket");
  timeval tv{2, 0};
  ::setsockopt(s.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

  // The request: nlmsghdr, rtmsg, one RTA_DST attribute. Laid out by hand with memcpy (the
  // NLMSG_*/RTA_* macros are C casts and int/unsigned mixes).
  const std::size_t alen = v4 ? 4 : 16;
  constexpr std::size_t kHdr = align4(sizeof(nlmsghdr));
  constexpr std::size_t kRt = align4(sizeof(rtmsg));
  constexpr std::size_t kAttr = align4(sizeof(rtattr));
  constexpr std::size_t kOif = kAttr + align4(sizeof(std::uint32_t));
  std::array<unsigned char, kHdr + kRt + kAttr + 16 + kOif> req{};
  const std::size_t dst_at = kHdr + kRt;
  const std::size_t oif_at = dst_at + align4(kAttr + alen);
  nlmsghdr nh{};
  nh.nlmsg_len = static_cast<std::uint32_t>(oif != 0 ? oif_at + kOif : dst_at + kAttr + alen);
  nh.nlmsg_type = RTM_GETROUTE;
  nh.nlmsg_flags = NLM_F_REQUEST;
  nh.nlmsg_seq = 1;
  rtmsg rt{};
  rt.rtm_family = v4 ? AF_INET : AF_INET6;
  rt.rtm_dst_len = static_cast<unsigned char>(alen * 8);
  rtattr dst{};
  dst.rta_type = RTA_DST;
  dst.rta_len = static_cast<unsigned short>(kAttr + alen);
  unsigned char bytes[16];
  peer.copy_to(bytes);
  std::memcpy(req.data(), &nh, sizeof nh);
  std::memcpy(req.data() + kHdr, &rt, sizeof rt);
  std::memcpy(req.data() + dst_at, &dst, sizeof dst);
  std::memcpy(req.data() + dst_at + kAttr, v4 ? bytes + 12 : bytes, alen);
  if (oif != 0) {
    rtattr oa{};
    oa.rta_type = RTA_OIF;
    oa.rta_len = static_cast<unsigned short>(kAttr + sizeof oif);
    std::memcpy(req.data() + oif_at, &oa, sizeof oa);
    std::memcpy(req.data() + oif_at + kAttr, &oif, sizeof oif);
  }

  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  sockaddr addr{};
  static_assert(sizeof kernel <= sizeof addr);
  std::memcpy(&addr, &kernel, sizeof kernel);
  if (::sendto(s.fd(), req.data(), nh.nlmsg_len, 0, &addr, sizeof kernel) < 0)
    return fail_errno(errno, what + ": sendto");

  std::array<unsigned char, 16384> buf{};
  for (int reads = 0; reads < 8; ++reads) {
    const ssize_t got = ::recv(s.fd(), buf.data(), buf.size(), 0);
    if (got < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return fail_errno(ETIMEDOUT, what + ": no answer within 2 s");
      return fail_errno(err, what + ": recv");
    }
    const auto n = static_cast<std::size_t>(got);
    for (std::size_t off = 0; off + sizeof(nlmsghdr) <= n;) {
      nlmsghdr h{};
      std::memcpy(&h, buf.data() + off, sizeof h);
      if (h.nlmsg_len < sizeof h || off + h.nlmsg_len > n) break;
      const std::size_t end = off + h.nlmsg_len;
      const std::size_t body = off + kHdr;
      off += align4(h.nlmsg_len);
      if (h.nlmsg_seq != 1) continue;
      if (h.nlmsg_type == NLMSG_ERROR) {
        nlmsgerr e{};
        if (body + sizeof e > end) return fail_errno(EIO, what + ": short error message");
        std::memcpy(&e, buf.data() + body, sizeof e);
        const int err = e.error < 0 ? -e.error : EIO;
        // The kernel answers a route that sends nothing with that route's errno (fib_props in
        // net/ipv4/fib_semantics.c; ip6_route_output likewise): turned back into its type here,
        // so that check_route() refuses it in gidpolicy's words, as it does for FakeRoutes.
        Route refused;
        refused.peer = peer_address;
        switch (err) {
          case ENETUNREACH:
            return fail(errc::no_route, "no route to " + peer_address.to_string() +
                                            ": the kernel's routing table has none, not even a default route "
                                            "(ENETUNREACH; rdma_resolve_addr fails the same way)");
          case EINVAL:
            refused.type = RouteType::blackhole;
            return refused;
          case EHOSTUNREACH:
            refused.type = RouteType::unreachable;
            return refused;
          case EACCES:
            refused.type = RouteType::prohibit;
            return refused;
          default:
            break;
        }
        return fail_errno(err, what);
      }
      if (h.nlmsg_type != RTM_NEWROUTE) continue;
      if (body + sizeof(rtmsg) > end) return fail_errno(EIO, what + ": short route message");
      rtmsg got_rt{};
      std::memcpy(&got_rt, buf.data() + body, sizeof got_rt);
      Route r;
      r.peer = peer_address;
      r.type = route_type(got_rt.rtm_type);
      for (std::size_t at = body + kRt; at + sizeof(rtattr) <= end;) {
        rtattr ra{};
        std::memcpy(&ra, buf.data() + at, sizeof ra);
        if (ra.rta_len < sizeof ra || at + ra.rta_len > end) break;
        const unsigned char* data = buf.data() + at + kAttr;
        const std::size_t len = ra.rta_len - kAttr;
        if (ra.rta_type == RTA_OIF && len >= sizeof(std::uint32_t)) {
          std::memcpy(&r.ifindex, data, sizeof r.ifindex);
        } else if (ra.rta_type == RTA_PREFSRC) {
          r.source = address_of(data, len);
        }
        at += align4(ra.rta_len);
      }
      if (r.ifindex != 0) {
        char name[IF_NAMESIZE] = {};
        if (::if_indextoname(r.ifindex, name)) r.netdev = name;
      }
      return r;
    }
  }
  return fail_errno(EIO, what + ": no route message in the kernel's answer");
}

#elif defined(__APPLE__)

result<Route> KernelRoutes::route_to(const PeerAddress& peer) { return routing_socket_route(peer); }

#else

result<Route> KernelRoutes::route_to(const PeerAddress& peer) {
  return fail(errc::not_supported, "route to " + peer.to_string() +
                                       ": KernelRoutes asks rtnetlink (Linux) or the routing socket (macOS), "
                                       "and this system is neither");
}

#endif

}  // namespace gidpolicy
