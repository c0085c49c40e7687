// darwin.hpp: Darwin's routing messages, `ifconfig`'s bridge members and `rdma_ctl status`,
// read as values. Pure: the live sources do the system calls and hand the bytes in.
//
// The routing message layout is Darwin's <net/route.h> (struct rt_msghdr, struct rt_metrics)
// and <net/if_dl.h> (struct sockaddr_dl), written out here as offsets so that the code builds
// and is tested on Linux, whose headers have neither; every field is read with memcpy, never
// through a cast.
#include <gidpolicy/darwin.hpp>
#include <gidpolicy/interfaces.hpp>
#include <gidpolicy/names.hpp>

#include <array>
#include <cstring>

namespace gidpolicy::darwin {
namespace {

// struct rt_msghdr: u_short msglen; u_char version, type; u_short index; (2 bytes of padding)
// int flags, addrs; pid_t pid; int seq, errno, use; u_int32_t inits; struct rt_metrics (56).
constexpr std::size_t kMsglen = 0, kVersion = 2, kType = 3, kIndex = 4, kFlags = 8, kAddrs = 12, kPid = 16,
                      kSeq = 20, kErrno = 24;
constexpr std::uint8_t kRtmVersion = 5;
constexpr std::uint8_t kRtmGet = 0x4;
// rtm_flags.
constexpr std::int32_t kRtfUp = 0x1, kRtfHost = 0x4, kRtfReject = 0x8, kRtfBlackhole = 0x1000,
                       kRtfLocal = 0x200000, kRtfBroadcast = 0x400000, kRtfMulticast = 0x800000,
                       kRtfIfscope = 0x1000000;
// rtm_addrs: one bit per sockaddr, in this order (RTAX_DST ... RTAX_BRD).
constexpr std::int32_t kRtaDst = 0x1, kRtaIfp = 0x10, kRtaIfa = 0x20;
constexpr std::array<const char*, 8> kRtaNames{"RTA_DST", "RTA_GATEWAY", "RTA_NETMASK", "RTA_GENMASK",
                                               "RTA_IFP", "RTA_IFA",     "RTA_AUTHOR",  "RTA_BRD"};
// Darwin's address families (<sys/socket.h>): AF_INET 2, AF_INET6 30, AF_LINK 18.
constexpr std::uint8_t kAfInet = 2, kAfInet6 = 30, kAfLink = 18;
constexpr std::uint8_t kSockaddrInBytes = 16, kSockaddrIn6Bytes = 28, kSockaddrDlBytes = 20;

/// Darwin's ROUNDUP32: a sockaddr takes its length rounded up to 4 bytes, and 4 when it is 0.
constexpr std::size_t roundup32(std::size_t n) { return n == 0 ? 4 : 1 + ((n - 1) | 3); }

template <class T>
T load(std::span<const std::uint8_t> m, std::size_t at) {
  T v{};
  std::memcpy(&v, m.data() + at, sizeof v);
  return v;
}
template <class T>
void store(std::vector<std::uint8_t>& m, std::size_t at, T v) {
  std::memcpy(m.data() + at, &v, sizeof v);
}

std::string where(const PeerAddress& peer) { return "routing socket reply for " + peer.to_string(); }

/// The address of a sockaddr_in / sockaddr_in6 (IPv4 as ::ffff:a.b.c.d), or nullopt.
std::optional<Gid> address_of(std::span<const std::uint8_t> sa) {
  if (sa.size() >= 8 && sa[1] == kAfInet) {
    std::array<std::uint8_t, 16> b{};
    b[10] = b[11] = 0xff;
    std::memcpy(b.data() + 12, sa.data() + 4, 4);
    return Gid::from_bytes(b.data());
  }
  if (sa.size() >= 24 && sa[1] == kAfInet6) return Gid::from_bytes(sa.data() + 8);
  return std::nullopt;
}

}  // namespace

std::vector<std::uint8_t> route_request(const PeerAddress& peer, std::int32_t seq,
                                        std::uint32_t scope_ifindex) {
  const bool v4 = peer.address.is_ipv4_mapped();
  const std::size_t dst = v4 ? kSockaddrInBytes : kSockaddrIn6Bytes;
  std::vector<std::uint8_t> m(kRouteHeaderBytes + roundup32(dst) + roundup32(kSockaddrDlBytes), 0);
  store<std::uint16_t>(m, kMsglen, static_cast<std::uint16_t>(m.size()));
  m[kVersion] = kRtmVersion;
  m[kType] = kRtmGet;
  std::int32_t flags = kRtfUp | kRtfHost;
  if (scope_ifindex != 0 && scope_ifindex <= 0xffff) {
    store<std::uint16_t>(m, kIndex, static_cast<std::uint16_t>(scope_ifindex));
    flags |= kRtfIfscope;
  }
  store<std::int32_t>(m, kFlags, flags);
  store<std::int32_t>(m, kAddrs, kRtaDst | kRtaIfp);
  store<std::int32_t>(m, kSeq, seq);
  // RTA_DST: sockaddr_in {len, family, port, addr, zero[8]} or sockaddr_in6 {len, family, port,
  // flowinfo, addr[16], scope_id}.
  std::size_t at = kRouteHeaderBytes;
  std::array<std::uint8_t, 16> raw{};
  peer.address.copy_to(raw.data());
  m[at] = static_cast<std::uint8_t>(dst);
  m[at + 1] = v4 ? kAfInet : kAfInet6;
  if (v4) {
    std::memcpy(m.data() + at + 4, raw.data() + 12, 4);
  } else {
    std::memcpy(m.data() + at + 8, raw.data(), 16);
    if (scope_ifindex != 0) store<std::uint32_t>(m, at + 24, scope_ifindex);
  }
  at += roundup32(dst);
  // RTA_IFP: an empty sockaddr_dl asks the kernel to name the interface (route(8) does this).
  m[at] = kSockaddrDlBytes;
  m[at + 1] = kAfLink;
  return m;
}

result<std::optional<Route>> route_reply(std::span<const std::uint8_t> message, const PeerAddress& peer,
                                         std::int32_t pid, std::int32_t seq) {
  const std::string what = where(peer);
  if (message.size() < kRouteHeaderBytes)
    return fail(errc::io_error, what + ": " + std::to_string(message.size()) +
                                    " bytes, shorter than rt_msghdr (" + std::to_string(kRouteHeaderBytes) +
                                    ")");
  const auto msglen = load<std::uint16_t>(message, kMsglen);
  if (msglen < kRouteHeaderBytes || msglen > message.size())
    return fail(errc::io_error, what + ": rtm_msglen " + std::to_string(msglen) + " with " +
                                    std::to_string(message.size()) + " bytes read (at least " +
                                    std::to_string(kRouteHeaderBytes) + ")");
  const auto m = message.first(msglen);
  if (m[kVersion] != kRtmVersion)
    return fail(errc::io_error, what + ": rtm_version " + std::to_string(m[kVersion]) + ", not " +
                                    std::to_string(kRtmVersion));
  if (m[kType] != kRtmGet || load<std::int32_t>(m, kPid) != pid || load<std::int32_t>(m, kSeq) != seq)
    return std::optional<Route>{};  // not ours: the socket hears every process's messages
  if (const auto err = load<std::int32_t>(m, kErrno); err != 0) {
    GIDPOLICY_TRY(refused, route_from_errno(Platform::darwin, peer, err));
    return std::optional<Route>{std::move(refused)};
  }
  Route r;
  r.peer = peer;
  r.ifindex = load<std::uint16_t>(m, kIndex);
  const auto flags = load<std::int32_t>(m, kFlags);
  if (flags & kRtfBlackhole)
    r.type = RouteType::blackhole;
  else if (flags & kRtfReject)
    r.type = RouteType::unreachable;
  else if (flags & kRtfLocal)
    r.type = RouteType::local;
  else if (flags & kRtfBroadcast)
    r.type = RouteType::broadcast;
  else if (flags & kRtfMulticast)
    r.type = RouteType::multicast;
  const auto addrs = load<std::int32_t>(m, kAddrs);
  std::size_t at = kRouteHeaderBytes;
  for (std::size_t bit = 0; bit < kRtaNames.size(); ++bit) {
    if (!(addrs & (1 << bit))) continue;
    if (at >= m.size())
      return fail(errc::io_error, what + ": rtm_addrs lists " + kRtaNames[bit] + ", past the message's end");
    const std::size_t len = m[at];
    const std::size_t step = roundup32(len);
    if (at + std::max<std::size_t>(len, 2) > m.size())
      return fail(errc::io_error, what + ": " + kRtaNames[bit] + " (" + std::to_string(len) +
                                      " bytes at offset " + std::to_string(at) + ") runs past rtm_msglen " +
                                      std::to_string(msglen));
    const auto sa = m.subspan(at, len);
    if (bit == 4 && len >= 8 && sa[1] == kAfLink) {
      // sockaddr_dl: u_char len, family; u_short index; u_char type, nlen, alen, slen; data[].
      const std::size_t nlen = sa[5];
      if (8 + nlen > len)
        return fail(errc::io_error, what + ": RTA_IFP's name (" + std::to_string(nlen) +
                                        " bytes) runs past its sockaddr_dl (" + std::to_string(len) + ")");
      if (nlen > 0) {
        const std::string name(sa.begin() + 8, sa.begin() + 8 + static_cast<std::ptrdiff_t>(nlen));
        if (auto why = name_problem(name, NameKind::netdev))
          return fail(errc::io_error, what + ": RTA_IFP names " + quote_name(name) + ": " + *why);
        r.netdev = name;
      }
      if (r.ifindex == 0) r.ifindex = load<std::uint16_t>(sa, 2);
    } else if (bit == 5) {
      r.source = address_of(sa);
    }
    at += step;
  }
  return std::optional<Route>{std::move(r)};
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

result<std::map<std::string, std::string>> bridge_members(std::string_view out) {
  if (out.size() > kMaxToolOutputBytes)
    return fail(errc::invalid_argument, "ifconfig output: " + std::to_string(out.size()) +
                                            " bytes, more than " + std::to_string(kMaxToolOutputBytes));
  std::map<std::string, std::string> members;
  std::string current;  // the interface whose block the line is in
  std::size_t line_no = 0;
  while (!out.empty()) {
    const auto nl = out.find('\n');
    const std::string_view line = out.substr(0, nl);
    out = nl == std::string_view::npos ? std::string_view{} : out.substr(nl + 1);
    ++line_no;
    const std::string at = "ifconfig output line " + std::to_string(line_no);
    if (line.empty()) continue;
    if (line.front() != ' ' && line.front() != '\t') {
      // "bridge0: flags=8863<UP,...> mtu 1500": an interface's first line.
      const auto colon = line.find(':');
      if (colon == std::string_view::npos || colon == 0) {
        current.clear();
        continue;
      }
      current = std::string(line.substr(0, colon));
      if (auto why = name_problem(current, NameKind::netdev))
        return fail(errc::invalid_argument, at + ": interface " + quote_name(current) + ": " + *why);
      continue;
    }
    const std::string_view body = trim(line);
    constexpr std::string_view kMember = "member: ";
    if (body.substr(0, kMember.size()) != kMember) continue;
    if (current.empty()) return fail(errc::invalid_argument, at + ": a member line before any interface");
    std::string_view rest = body.substr(kMember.size());
    const auto end = rest.find_first_of(" \t");
    const std::string name(rest.substr(0, end));
    if (auto why = name_problem(name, NameKind::netdev))
      return fail(errc::invalid_argument,
                  at + ": member " + quote_name(name) + " of " + current + ": " + *why);
    members[name] = current;
  }
  return members;
}

result<bool> rdma_ctl_enabled(std::string_view out) {
  if (out.size() > kMaxToolOutputBytes)
    return fail(errc::invalid_argument,
                "rdma_ctl status: " + std::to_string(out.size()) + " bytes of output");
  while (!out.empty()) {
    const auto nl = out.find('\n');
    const std::string_view line = trim(out.substr(0, nl));
    out = nl == std::string_view::npos ? std::string_view{} : out.substr(nl + 1);
    if (line.empty()) continue;
    if (line == "enabled") return true;
    if (line == "disabled") return false;
    return fail(errc::invalid_argument,
                "rdma_ctl status said " + quote_name(line, 60) + ", not \"enabled\" or \"disabled\"");
  }
  return fail(errc::invalid_argument, "rdma_ctl status printed nothing");
}

}  // namespace gidpolicy::darwin
