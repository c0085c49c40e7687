// What a Mac's own tools and kernel say, read as values on any machine: the routing socket's
// RTM_GET message (what `route -n get ADDR` writes and reads), the bridge members `ifconfig`
// lists, and `rdma_ctl status`. The live macOS sources (KernelRoutes, SystemInterfaces,
// host_doctor.hpp) hand their bytes and text to these functions, and a test on Linux hands in the
// same bytes and text built from Darwin's definitions: the conversion tested is the one a Mac runs.
//
// Hardware/OS facts encoded here:
//  * macOS has no rtnetlink. Its routing socket (PF_ROUTE, route(4)) answers an RTM_GET with the
//    route's flags (RTF_REJECT, RTF_BLACKHOLE, RTF_LOCAL...), the interface index, and, when the
//    request asks for RTA_IFP, the interface's name (a sockaddr_dl) and the source address the
//    kernel would use (RTA_IFA). Sockaddrs follow the 92-byte rt_msghdr, each padded to 4 bytes
//    (Darwin's ROUNDUP32, not the BSDs' long), and carry their own length (sa_len).
//  * "not in table" (ESRCH, 3) is macOS's answer when no route covers the address; a reject
//    route answers EHOSTUNREACH (65) when it is used (route_from_errno, interfaces.hpp).
//  * Thunderbolt Bridge (bridge0) takes the Thunderbolt interfaces as members by default; a
//    member's own address is not used, and JACCL and ds4 then find no IPv4-mapped GID on it.
//    `ifconfig` lists members as "member: enN flags=..." lines under the bridge.
//  * `rdma_ctl status` prints "enabled" or "disabled"; `rdma_ctl enable` works only from macOS
//    Recovery. A Thunderbolt 4 Mac says "enabled" and lists no RDMA device: that is final, its
//    hardware has no RDMA (github.com/jundot/omlx/issues/3037).
//
// Example:
//   auto peer = gidpolicy::PeerAddress::parse("192.168.200.2").value();
//   const std::vector<std::uint8_t> request = gidpolicy::darwin::route_request(peer, 1, 0);
//   std::vector<std::uint8_t> message(gidpolicy::darwin::kMaxRouteMessageBytes);
//   // write(PF_ROUTE socket, request); each message read back (resized to what read() got):
//   auto r = gidpolicy::darwin::route_reply(message, peer, /*pid=*/4242, /*seq=*/1);
//   if (!r) return r.error();            // a malformed message, or the kernel's refusal
//   if (r.value()) std::cout << "leaves through " << r.value()->netdev << "\n";
//   auto members = gidpolicy::darwin::bridge_members("bridge0: flags=8863<UP> mtu 1500\n"
//                                                    "\tmember: en2 flags=3<LEARNING,DISCOVER>\n");
//   auto enabled = gidpolicy::darwin::rdma_ctl_enabled("enabled\n");   // true
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/network.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::darwin {

/// sizeof(struct rt_msghdr) on macOS (arm64 and x86_64): 36 bytes of fields, then rt_metrics.
inline constexpr std::size_t kRouteHeaderBytes = 92;
/// The most a reply is read as: a route reply is a header and at most 8 sockaddrs of at most
/// 255 bytes each; anything longer is not a reply to RTM_GET.
inline constexpr std::size_t kMaxRouteMessageBytes = kRouteHeaderBytes + 8 * 256;

/// The RTM_GET message for `peer`, in Darwin's layout and the host's byte order (macOS runs on
/// little-endian machines only): RTA_DST, and an empty RTA_IFP so that the kernel names the
/// interface and the source address. A scoped peer (fe80::1%en3) is looked up on that
/// interface: `scope_ifindex` its index, sent as rtm_index with RTF_IFSCOPE.
std::vector<std::uint8_t> route_request(const PeerAddress& peer, std::int32_t seq,
                                        std::uint32_t scope_ifindex);

/// One message read from the routing socket, read as the reply to route_request(peer, seq) of
/// process `pid`: std::nullopt for another message (another process's, another sequence
/// number, a message that is not RTM_GET: every routing socket also hears the kernel's
/// announcements). The Route: its type from the flags (RTF_BLACKHOLE, RTF_REJECT, RTF_LOCAL,
/// RTF_BROADCAST, RTF_MULTICAST), ifindex from rtm_index, netdev from RTA_IFP, source from
/// RTA_IFA. A reply carrying rtm_errno is answered by route_from_errno(Platform::darwin, ...).
/// Errors (errc::io_error, naming the field): a message shorter than its header or than its
/// rtm_msglen, a version other than 5, a sockaddr that runs past the message, a RTA_IFP name
/// that breaks the netdev name rule.
result<std::optional<Route>> route_reply(std::span<const std::uint8_t> message, const PeerAddress& peer,
                                         std::int32_t pid, std::int32_t seq);

/// The most text bridge_members() and rdma_ctl_enabled() read (`ifconfig -a` on a Mac with a
/// few dozen interfaces is some 10 KiB).
inline constexpr std::size_t kMaxToolOutputBytes = 1 << 20;

/// Bridge membership from `ifconfig` (or `ifconfig -a`, `ifconfig bridge0`) output: each
/// interface a "member: NAME" line lists, mapped to the bridge whose block holds the line.
/// Errors (errc::invalid_argument, naming the line): more than kMaxToolOutputBytes, a member
/// line before any interface, a name that breaks the netdev name rule.
result<std::map<std::string, std::string>> bridge_members(std::string_view ifconfig_output);

/// `rdma_ctl status` output: true for "enabled", false for "disabled" (its first non-empty
/// line, trimmed). Errors (errc::invalid_argument): anything else, quoted (bounded).
result<bool> rdma_ctl_enabled(std::string_view status_output);

}  // namespace gidpolicy::darwin
