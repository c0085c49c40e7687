// darwin.hpp on Linux: routing-socket messages built byte by byte from Darwin's <net/route.h>
// and <net/if_dl.h> (rt_msghdr is 92 bytes; sockaddrs padded to 4), `ifconfig -a` output as a
// Mac prints it, and `rdma_ctl status`. The offsets are written out here, independently of
// darwin.cpp's, so that a wrong offset there fails a test here.
#include <gidpolicy/darwin.hpp>
#include <gidpolicy/interfaces.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace gidpolicy {
// Named, not anonymous: the unit tests are a unity build, and other files have helpers of
// these names.
namespace darwin_test {

PeerAddress peer(const char* text) { return PeerAddress::parse(text).value(); }
Gid g(const char* t) { return Gid::parse(t).value(); }

template <class T>
void put(std::vector<std::uint8_t>& m, std::size_t at, T v) {
  std::memcpy(m.data() + at, &v, sizeof v);
}
template <class T>
T get(const std::vector<std::uint8_t>& m, std::size_t at) {
  T v{};
  std::memcpy(&v, m.data() + at, sizeof v);
  return v;
}

/// A Darwin reply, as the kernel writes it: rt_msghdr (version 5, RTM_GET 4) and the sockaddrs
/// of `addrs`, appended by the add_* calls in RTA_* bit order.
struct Reply {
  std::vector<std::uint8_t> m = std::vector<std::uint8_t>(92, 0);
  Reply(std::int32_t pid, std::int32_t seq, std::int32_t flags, std::uint16_t index, std::int32_t addrs) {
    m[2] = 5;
    m[3] = 4;
    put<std::uint16_t>(m, 4, index);
    put<std::int32_t>(m, 8, flags);
    put<std::int32_t>(m, 12, addrs);
    put<std::int32_t>(m, 16, pid);
    put<std::int32_t>(m, 20, seq);
  }
  void pad() {
    while (m.size() % 4) m.push_back(0);
  }
  void add_in(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {  // sockaddr_in, 16
    const std::size_t at = m.size();
    m.resize(at + 16, 0);
    m[at] = 16;
    m[at + 1] = 2;
    m[at + 4] = a;
    m[at + 5] = b;
    m[at + 6] = c;
    m[at + 7] = d;
  }
  void add_in6(const Gid& a) {  // sockaddr_in6, 28
    const std::size_t at = m.size();
    m.resize(at + 28, 0);
    m[at] = 28;
    m[at + 1] = 30;
    a.copy_to(m.data() + at + 8);
  }
  void add_mask() {  // a netmask sockaddr as the kernel abbreviates it: sa_len 0 takes 4 bytes
    m.resize(m.size() + 4, 0);
  }
  void add_dl(const std::string& name, std::uint16_t index) {  // sockaddr_dl: 8 + name + 6 (MAC)
    const std::size_t at = m.size();
    const std::size_t len = 8 + name.size() + 6;
    m.resize(at + len, 0);
    m[at] = static_cast<std::uint8_t>(len);
    m[at + 1] = 18;
    put<std::uint16_t>(m, at + 2, index);
    m[at + 4] = 6;  // IFT_ETHER
    m[at + 5] = static_cast<std::uint8_t>(name.size());
    m[at + 6] = 6;
    std::memcpy(m.data() + at + 8, name.data(), name.size());
    pad();
  }
  std::vector<std::uint8_t> done() {
    put<std::uint16_t>(m, 0, static_cast<std::uint16_t>(m.size()));
    return m;
  }
};

constexpr std::int32_t kUp = 0x1, kGateway = 0x2, kHost = 0x4, kReject = 0x8, kDone = 0x40,
                       kBlackhole = 0x1000, kLocal = 0x200000, kIfscope = 0x1000000;
constexpr std::int32_t kDst = 0x1, kGw = 0x2, kMask = 0x4, kIfp = 0x10, kIfa = 0x20;

TEST(DarwinRoute, RequestIsDarwinsRtMsghdrWithDstAndAnEmptyIfp) {
  const auto m = darwin::route_request(peer("192.168.200.2"), 7, 0);
  ASSERT_EQ(m.size(), 92u + 16 + 20);
  EXPECT_EQ(get<std::uint16_t>(m, 0), m.size());  // rtm_msglen
  EXPECT_EQ(m[2], 5);                             // RTM_VERSION
  EXPECT_EQ(m[3], 4);                             // RTM_GET
  EXPECT_EQ(get<std::int32_t>(m, 12), kDst | kIfp);
  EXPECT_EQ(get<std::int32_t>(m, 20), 7);  // rtm_seq
  EXPECT_EQ(get<std::int32_t>(m, 8) & kIfscope, 0);
  // RTA_DST: sockaddr_in {16, AF_INET 2, port 0, 192.168.200.2}.
  EXPECT_EQ(m[92], 16);
  EXPECT_EQ(m[93], 2);
  EXPECT_EQ((std::vector<std::uint8_t>(m.begin() + 96, m.begin() + 100)),
            (std::vector<std::uint8_t>{192, 168, 200, 2}));
  // RTA_IFP: an empty sockaddr_dl {20, AF_LINK 18}.
  EXPECT_EQ(m[108], 20);
  EXPECT_EQ(m[109], 18);
}

TEST(DarwinRoute, ScopedIpv6PeerIsAskedOnItsInterface) {
  const auto m = darwin::route_request(peer("fe80::1%en3"), 1, 11);
  ASSERT_EQ(m.size(), 92u + 28 + 20);
  EXPECT_EQ(get<std::uint16_t>(m, 4), 11);  // rtm_index
  EXPECT_NE(get<std::int32_t>(m, 8) & kIfscope, 0);
  EXPECT_EQ(m[92], 28);
  EXPECT_EQ(m[93], 30);  // Darwin's AF_INET6
  EXPECT_EQ(Gid::from_bytes(m.data() + 100), g("fe80::1"));
  EXPECT_EQ(get<std::uint32_t>(m, 92 + 24), 11u);  // sin6_scope_id
}

TEST(DarwinRoute, ReplyGivesTheInterfaceAndTheSourceTheKernelWouldUse) {
  // `route -n get 192.168.200.2` on a Mac whose en5 holds 192.168.200.1/30: DST, GATEWAY (the
  // link), NETMASK (abbreviated), IFP en5, IFA 192.168.200.1.
  Reply r(4242, 3, kUp | kHost | kDone, 13, kDst | kGw | kMask | kIfp | kIfa);
  r.add_in(192, 168, 200, 2);
  r.add_dl("", 13);
  r.add_mask();
  r.add_dl("en5", 13);
  r.add_in(192, 168, 200, 1);
  const auto got = darwin::route_reply(r.done(), peer("192.168.200.2"), 4242, 3);
  ASSERT_TRUE(got) << got.error().detail;
  ASSERT_TRUE(got.value().has_value());
  const Route& route = *got.value();
  EXPECT_EQ(route.type, RouteType::unicast);
  EXPECT_EQ(route.netdev, "en5");
  EXPECT_EQ(route.ifindex, 13u);
  ASSERT_TRUE(route.source);
  EXPECT_EQ(*route.source, g("::ffff:192.168.200.1"));
  EXPECT_EQ(route.peer, peer("192.168.200.2"));
}

TEST(DarwinRoute, Ipv6SourceAndInterfaceIndexFromTheSockaddrDl) {
  Reply r(1, 9, kUp | kGateway | kDone, 0, kDst | kIfp | kIfa);
  r.add_in6(g("fd00::2"));
  r.add_dl("en3", 11);
  r.add_in6(g("fd00::1"));
  const auto got = darwin::route_reply(r.done(), peer("fd00::2"), 1, 9);
  ASSERT_TRUE(got && got.value());
  EXPECT_EQ(got.value()->netdev, "en3");
  EXPECT_EQ(got.value()->ifindex, 11u);  // rtm_index 0: the sockaddr_dl's sdl_index
  EXPECT_EQ(got.value()->source, g("fd00::1"));
}

TEST(DarwinRoute, FlagsGiveTheRouteType) {
  const std::pair<std::int32_t, RouteType> cases[] = {{kUp | kBlackhole, RouteType::blackhole},
                                                      {kUp | kReject, RouteType::unreachable},
                                                      {kUp | kLocal, RouteType::local},
                                                      {kUp | kGateway, RouteType::unicast}};
  for (const auto& [flags, type] : cases) {
    Reply r(1, 1, flags, 4, kDst);
    r.add_in(10, 9, 9, 9);
    const auto got = darwin::route_reply(r.done(), peer("10.9.9.9"), 1, 1);
    ASSERT_TRUE(got && got.value()) << flags;
    EXPECT_EQ(got.value()->type, type) << flags;
  }
}

TEST(DarwinRoute, NotInTableIsNoRoute) {
  Reply r(1, 1, kUp | kHost, 0, kDst);
  put<std::int32_t>(r.m, 24, 3);  // rtm_errno ESRCH
  r.add_in(10, 9, 9, 9);
  const auto got = darwin::route_reply(r.done(), peer("10.9.9.9"), 1, 1);
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().code, errc::no_route);
  EXPECT_NE(got.error().detail.find("ESRCH (3)"), std::string::npos) << got.error().detail;
}

TEST(DarwinRoute, OtherProcessesAndAnnouncementsAreNotOurs) {
  Reply other(999, 1, kUp, 4, kDst);
  other.add_in(10, 9, 9, 9);
  EXPECT_FALSE(darwin::route_reply(other.done(), peer("10.9.9.9"), 1, 1).value().has_value());
  Reply seq(1, 2, kUp, 4, kDst);
  seq.add_in(10, 9, 9, 9);
  EXPECT_FALSE(darwin::route_reply(seq.done(), peer("10.9.9.9"), 1, 1).value().has_value());
  Reply ifinfo(0, 0, kUp, 4, 0);
  ifinfo.m[3] = 0xe;  // RTM_IFINFO, which every routing socket hears
  EXPECT_FALSE(darwin::route_reply(ifinfo.done(), peer("10.9.9.9"), 0, 0).value().has_value());
}

TEST(DarwinRoute, MalformedMessagesAreRefusedNamingTheField) {
  const PeerAddress p = peer("10.9.9.9");
  auto error_of = [&](const std::vector<std::uint8_t>& m) {
    auto r = darwin::route_reply(m, p, 1, 1);
    return r ? std::string("(accepted)") : r.error().detail;
  };
  EXPECT_NE(error_of(std::vector<std::uint8_t>(40, 0)).find("shorter than rt_msghdr (92)"),
            std::string::npos);
  Reply longer(1, 1, kUp, 4, kDst);
  longer.add_in(10, 9, 9, 9);
  auto m = longer.done();
  put<std::uint16_t>(m, 0, 200);
  EXPECT_NE(error_of(m).find("rtm_msglen 200 with 108 bytes read"), std::string::npos) << error_of(m);
  Reply version(1, 1, kUp, 4, kDst);
  version.add_in(10, 9, 9, 9);
  m = version.done();
  m[2] = 4;
  EXPECT_NE(error_of(m).find("rtm_version 4, not 5"), std::string::npos);
  Reply past(1, 1, kUp, 4, kDst | kIfp);  // IFP listed, no bytes for it
  past.add_in(10, 9, 9, 9);
  EXPECT_NE(error_of(past.done()).find("lists RTA_IFP, past the message's end"), std::string::npos);
  Reply overrun(1, 1, kUp, 4, kDst);
  overrun.add_in(10, 9, 9, 9);
  m = overrun.done();
  m[92] = 200;  // sa_len beyond rtm_msglen
  EXPECT_NE(error_of(m).find("RTA_DST (200 bytes at offset 92) runs past"), std::string::npos) << error_of(m);
  Reply name(1, 1, kUp, 4, kDst | kIfp);
  name.add_in(10, 9, 9, 9);
  name.add_dl("en\n5", 4);
  EXPECT_NE(error_of(name.done()).find("RTA_IFP names"), std::string::npos);
  Reply nlen(1, 1, kUp, 4, kDst | kIfp);
  nlen.add_in(10, 9, 9, 9);
  nlen.add_dl("en5", 4);
  m = nlen.done();
  m[92 + 16 + 5] = 60;  // sdl_nlen past the sockaddr_dl
  EXPECT_NE(error_of(m).find("RTA_IFP's name (60 bytes) runs past its sockaddr_dl"), std::string::npos);
}

TEST(DarwinRoute, EveryTruncationOfAReplyIsAnErrorNeverARead) {
  Reply r(1, 1, kUp, 13, kDst | kGw | kMask | kIfp | kIfa);
  r.add_in(192, 168, 200, 2);
  r.add_dl("", 13);
  r.add_mask();
  r.add_dl("en5", 13);
  r.add_in(192, 168, 200, 1);
  const auto whole = r.done();
  for (std::size_t n = 0; n < whole.size(); ++n) {
    std::vector<std::uint8_t> cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(darwin::route_reply(cut, peer("192.168.200.2"), 1, 1)) << n;  // msglen says more
    if (n >= 92) {
      put<std::uint16_t>(cut, 0, static_cast<std::uint16_t>(n));                 // and a header that agrees
      EXPECT_FALSE(darwin::route_reply(cut, peer("192.168.200.2"), 1, 1)) << n;  // a sockaddr is cut
    }
  }
}

// `ifconfig -a` of a Mac Studio: en2 and en3 in Thunderbolt Bridge, en5 out of it.
constexpr const char* kIfconfig =
    "lo0: flags=8049<UP,LOOPBACK,RUNNING,MULTICAST> mtu 16384\n"
    "\toptions=1203<RXCSUM,TXCSUM,TXSTATUS,SW_TIMESTAMP>\n"
    "\tinet 127.0.0.1 netmask 0xff000000\n"
    "en5: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
    "\tinet 192.168.200.1 netmask 0xfffffffc broadcast 192.168.200.3\n"
    "bridge0: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
    "\toptions=63<RXCSUM,TXCSUM,TSO4,TSO6>\n"
    "\tether 36:2f:1a:00:00:00\n"
    "\tConfiguration:\n"
    "\t\tid 0:0:0:0:0:0 priority 0 hellotime 0 fwddelay 0\n"
    "\tmember: en2 flags=3<LEARNING,DISCOVER>\n"
    "\t        ifmaxaddr 0 port 8 priority 0 path cost 0\n"
    "\tmember: en3 flags=3<LEARNING,DISCOVER>\n"
    "\t        ifmaxaddr 0 port 9 priority 0 path cost 0\n"
    "\tnd6 options=201<PERFORMNUD,DAD>\n"
    "\tmedia: <unknown type>\n"
    "\tstatus: inactive\n"
    "en2: flags=8963<UP,BROADCAST,SMART,RUNNING,PROMISC,SIMPLEX,MULTICAST> mtu 1500\n"
    "\tmedia: autoselect <full-duplex>\n";

TEST(DarwinIfconfig, MembersAreMappedToTheirBridge) {
  const auto m = darwin::bridge_members(kIfconfig);
  ASSERT_TRUE(m) << m.error().detail;
  EXPECT_EQ(m.value(), (std::map<std::string, std::string>{{"en2", "bridge0"}, {"en3", "bridge0"}}));
  EXPECT_TRUE(darwin::bridge_members("").value().empty());
}

TEST(DarwinIfconfig, HostileOutputIsRefusedNamingTheLine) {
  const auto before = darwin::bridge_members("\tmember: en2 flags=3<LEARNING>\n");
  ASSERT_FALSE(before);
  EXPECT_NE(before.error().detail.find("line 1: a member line before any interface"), std::string::npos);
  const auto bad = darwin::bridge_members("bridge0: flags=1<UP> mtu 1500\n\tmember: en\x01 flags=3\n");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().detail.find("line 2: member"), std::string::npos) << bad.error().detail;
  const auto iface = darwin::bridge_members("a/very/long/interface/name: flags=1<UP>\n");
  ASSERT_FALSE(iface);
  EXPECT_NE(iface.error().detail.find("line 1: interface"), std::string::npos);
  const std::string huge(darwin::kMaxToolOutputBytes + 1, 'x');
  EXPECT_FALSE(darwin::bridge_members(huge));
}

TEST(DarwinRdmaCtl, EnabledDisabledAndNothingElse) {
  EXPECT_EQ(darwin::rdma_ctl_enabled("enabled\n").value(), true);
  EXPECT_EQ(darwin::rdma_ctl_enabled("\n  disabled \r\n").value(), false);
  const auto other = darwin::rdma_ctl_enabled("rdma_ctl: command not found\n");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().detail.find("not \"enabled\" or \"disabled\""), std::string::npos);
  EXPECT_FALSE(darwin::rdma_ctl_enabled(""));
  EXPECT_FALSE(darwin::rdma_ctl_enabled("Enabled"));  // it prints lower case; a guess is not a read
}

}  // namespace darwin_test
}  // namespace gidpolicy
