// KernelRoutes: the kernel's route to a peer over rtnetlink, as `ip route get ADDR` asks it.
//
// Why a plain netlink socket: one request and one reply, a few attributes read; libnl-route-3
// would add a link dependency to the core library for that. Bounded: the reply buffer is 16 KiB
// (a route reply is well under 1 KiB), the socket times out after 2 s, and at most 8 messages
// are read while looking for the reply to our sequence number.
//
// Platforms: interfaces() is POSIX if_nameindex() everywhere. route_to() asks rtnetlink, which
// exists on Linux only; elsewhere (macOS: a PF_ROUTE RTM_GET would be the equivalent, not
// written) it fails with errc::not_supported, so `auto:peer=ADDR` says it cannot route rather
// than ranking without the route. This file is the only one that knows.
#include <gidpolicy/network.hpp>

#include <net/if.h>

#if defined(__linux__)
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#endif

#include <array>
#include <cerrno>
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

#if defined(__linux__)
namespace {

constexpr std::size_t align4(std::size_t n) { return (n + 3) & ~std::size_t{3}; }

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

}  // namespace

result<Route> KernelRoutes::route_to(const Gid& peer) {
  const std::string what = "route to " + peer.to_string() + " (rtnetlink RTM_GETROUTE)";
  const bool v4 = peer.is_ipv4_mapped();
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
  std::array<unsigned char, kHdr + kRt + kAttr + 16> req{};
  nlmsghdr nh{};
  nh.nlmsg_len = static_cast<std::uint32_t>(kHdr + kRt + kAttr + alen);
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
  std::memcpy(req.data() + kHdr + kRt, &dst, sizeof dst);
  std::memcpy(req.data() + kHdr + kRt + kAttr, v4 ? bytes + 12 : bytes, alen);

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
        return fail_errno(e.error < 0 ? -e.error : EIO, what);
      }
      if (h.nlmsg_type != RTM_NEWROUTE) continue;
      Route r;
      r.peer = peer;
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

#else

result<Route> KernelRoutes::route_to(const Gid& peer) {
  return fail(errc::not_supported,
              "route to " + peer.to_string() + ": KernelRoutes asks rtnetlink, which exists on Linux only");
}

#endif

}  // namespace gidpolicy
