// The doctor (doctor.hpp) and the interface seam it reads through (interfaces.hpp): the macOS
// path with Darwin's own numbers (AF_INET6 30, AF_LINK 18, interface flags, routing-socket
// errnos), fed through InterfaceSource as the live macOS source feeds it; the findings, their
// ranking and their commands per platform; hostile records refused by their bounds.
#include <gidpolicy/doctor.hpp>
#include <gidpolicy/interfaces.hpp>

#include "example_tables.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace gidpolicy {
namespace {

// Darwin's <sys/socket.h> and <net/if.h> numbers, written out: the test must not take them from
// the Linux headers it is built with.
constexpr int kDarwinAfInet = 2, kDarwinAfLink = 18, kDarwinAfInet6 = 30;
constexpr std::uint32_t kDarwinUp = 0x1, kDarwinLoopback = 0x8, kDarwinRunning = 0x40;
constexpr std::uint32_t kDarwinEther =
    0x8863;  // UP|BROADCAST|SMART|RUNNING|SIMPLEX|MULTICAST, as ifconfig shows en0

std::vector<std::uint8_t> v4(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
  return {a, b, c, d};
}
std::vector<std::uint8_t> v6(const char* text) {
  const Gid g = Gid::parse(text).value();
  return {g.bytes().begin(), g.bytes().end()};
}

/// A Mac Studio's interfaces as getifaddrs() lists them: lo0, en0 (Ethernet), en3 (Thunderbolt,
/// no IPv4, still in bridge0), en4 (only a self-assigned 169.254 address), en5 (a /30 per cable).
class DarwinInterfaces final : public InterfaceSource {
 public:
  std::vector<IfAddrRecord> recs;
  int fail_with = 0;
  DarwinInterfaces() {
    const std::uint32_t lo = kDarwinUp | kDarwinLoopback | kDarwinRunning | 0x8000;
    recs.push_back({"lo0", lo, kDarwinAfInet, v4(127, 0, 0, 1), v4(255, 0, 0, 0), 16384, 1, ""});
    recs.push_back(
        {"lo0", lo, kDarwinAfInet6, v6("::1"), v6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), 16384, 1, ""});
    recs.push_back({"en0", kDarwinEther, kDarwinAfLink, {}, {}, 1500, 4, ""});
    recs.push_back(
        {"en0", kDarwinEther, kDarwinAfInet, v4(192, 168, 1, 20), v4(255, 255, 255, 0), 1500, 4, ""});
    recs.push_back({"en3", kDarwinEther, kDarwinAfLink, {}, {}, 1500, 11, "bridge0"});
    recs.push_back({"en3", kDarwinEther, kDarwinAfInet6, v6("fe80::1cbb:aff:fe00:3"),
                    v6("ffff:ffff:ffff:ffff::"), 1500, 11, "bridge0"});
    recs.push_back(
        {"en4", kDarwinEther, kDarwinAfInet, v4(169, 254, 12, 34), v4(255, 255, 0, 0), 1500, 12, ""});
    recs.push_back(
        {"en5", kDarwinEther, kDarwinAfInet, v4(10, 0, 5, 1), v4(255, 255, 255, 252), 1500, 13, ""});
    // Family 10 is AF_CCITT on Darwin, not AF_INET6: such a record carries no address here.
    recs.push_back({"en5", kDarwinEther, 10, v6("fd00::99"), {}, 1500, 13, ""});
  }
  [[nodiscard]] Platform platform() const override { return Platform::darwin; }
  result<std::vector<IfAddrRecord>> records() override {
    if (fail_with) return fail_errno(fail_with, "getifaddrs()");
    return recs;
  }
};

GidTable tb_port(const std::string& dev, std::vector<GidEntry> entries) {
  PortInfo p{.device = dev,
             .port = 1,
             .state = PortState::active,
             .link_layer = LinkLayer::thunderbolt(),
             .gid_tbl_len = 16};
  return GidTable::make(p, std::move(entries)).value();
}
Gid g(const char* t) { return Gid::parse(t).value(); }

const Finding* find(const DoctorReport& r, FindingCode code, std::string_view device = {}) {
  for (const Finding& f : r.findings)
    if (f.code == code && (device.empty() || f.device == device)) return &f;
  return nullptr;
}
bool has_line(const Finding& f, std::string_view text) {
  return std::any_of(f.fix.begin(), f.fix.end(), [&](const std::string& l) { return l == text; });
}

DoctorInput mac_studio() {
  DarwinInterfaces src;
  DoctorInput in;
  in.interfaces = read_interfaces(src).value();
  in.platform = Platform::darwin;
  in.tables.push_back(tb_port("rdma_en3", {GidEntry::valid(0, g("fe80::1cbb:aff:fe00:3"), GidType::ib)}));
  in.tables.push_back(tb_port("rdma_en4", {GidEntry::valid(0, g("fe80::1cbb:aff:fe00:4"), GidType::ib),
                                           GidEntry::valid(1, g("::ffff:169.254.12.34"), GidType::ib)}));
  in.tables.push_back(tb_port("rdma_en5", {GidEntry::valid(0, g("fe80::1cbb:aff:fe00:5"), GidType::ib),
                                           GidEntry::valid(1, g("::ffff:10.0.5.1"), GidType::ib)}));
  return in;
}

TEST(Interfaces, DarwinNumbersAreReadAsDarwinsNotLinuxs) {
  DarwinInterfaces src;
  auto ifs = read_interfaces(src);
  ASSERT_TRUE(ifs) << ifs.error().what();
  ASSERT_EQ(ifs.value().size(), 5u);
  const HostInterface& lo0 = ifs.value()[0];
  EXPECT_TRUE(lo0.loopback && lo0.up && lo0.running);
  EXPECT_TRUE(lo0.holds(g("::1")));  // family 30 is AF_INET6 on Darwin
  const HostInterface& en3 = ifs.value()[2];
  EXPECT_EQ(en3.name, "en3");
  EXPECT_EQ(en3.bridge, "bridge0");
  EXPECT_FALSE(en3.has_ipv4());
  ASSERT_EQ(en3.addresses.size(), 1u);
  EXPECT_EQ(en3.addresses[0].prefix, 64u);
  EXPECT_TRUE(ifs.value()[3].has_ipv4());
  EXPECT_FALSE(ifs.value()[3].has_assigned_ipv4());  // 169.254/16 only
  const HostInterface& en5 = ifs.value()[4];
  ASSERT_EQ(en5.addresses.size(), 1u);  // family 10 (AF_CCITT on Darwin) carries no address
  EXPECT_EQ(en5.addresses[0].prefix, 30u);
  // The same records read with Linux's numbers: 30 is no address family there, 10 is AF_INET6.
  auto as_linux = interfaces_from_ifaddrs(src.recs, Platform::linux_kernel).value();
  EXPECT_FALSE(as_linux[0].holds(g("::1")));
  EXPECT_TRUE(as_linux[4].holds(g("fd00::99")));
}

TEST(Interfaces, SourceErrorsKeepTheirErrno) {
  DarwinInterfaces src;
  src.fail_with = EMFILE;
  auto r = read_interfaces(src);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().detail.find("getifaddrs()"), std::string::npos);
}

TEST(Interfaces, DarwinRoutingSocketErrnos) {
  const PeerAddress peer = PeerAddress::parse("10.0.5.2").value();
  auto none = route_from_errno(Platform::darwin, peer, 3);  // ESRCH: "not in table"
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, errc::no_route);
  EXPECT_NE(none.error().detail.find("ESRCH (3)"), std::string::npos);
  EXPECT_EQ(route_from_errno(Platform::darwin, peer, 51).error().code, errc::no_route);  // ENETUNREACH
  EXPECT_EQ(route_from_errno(Platform::darwin, peer, 65).value().type, RouteType::unreachable);
  // 65 means nothing of the kind on Linux (ENOPKG), and Linux's EHOSTUNREACH is 113.
  EXPECT_FALSE(route_from_errno(Platform::linux_kernel, peer, 65));
  EXPECT_EQ(route_from_errno(Platform::linux_kernel, peer, 113).value().type, RouteType::unreachable);
  EXPECT_EQ(route_from_errno(Platform::linux_kernel, peer, 22).value().type, RouteType::blackhole);
  auto other = route_from_errno(Platform::darwin, peer, 22);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().detail.find("EINVAL (22, darwin)"), std::string::npos) << other.error().detail;
}

TEST(Interfaces, HostileRecordsAreRefusedByTheirBounds) {
  std::vector<IfAddrRecord> many(kMaxIfAddrRecords + 1,
                                 IfAddrRecord{"en0", 1, 2, v4(10, 0, 0, 1), {}, 0, 0, ""});
  auto r = interfaces_from_ifaddrs(many, Platform::darwin);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().detail.find("at most 16384"), std::string::npos);
  std::vector<IfAddrRecord> addrs(kMaxAddressesPerInterface + 1,
                                  IfAddrRecord{"en0", 1, 2, v4(10, 0, 0, 1), {}, 0, 0, ""});
  EXPECT_NE(interfaces_from_ifaddrs(addrs, Platform::darwin).error().detail.find("more than 256 addresses"),
            std::string::npos);
  std::vector<IfAddrRecord> names;
  for (std::size_t i = 0; i <= kMaxInterfaces; ++i)
    names.push_back({"e" + std::to_string(i), 1, 18, {}, {}, 0, 0, ""});
  EXPECT_NE(interfaces_from_ifaddrs(names, Platform::darwin).error().detail.find("more than 4096 interfaces"),
            std::string::npos);
  const std::vector<IfAddrRecord> bad_mask{{"en0", 1, 2, v4(10, 0, 0, 1), v4(255, 0, 255, 0), 0, 0, ""}};
  EXPECT_NE(interfaces_from_ifaddrs(bad_mask, Platform::darwin).error().detail.find("not a prefix"),
            std::string::npos);
  const std::vector<IfAddrRecord> short_addr{{"en0", 1, 30, v4(10, 0, 0, 1), {}, 0, 0, ""}};
  EXPECT_NE(interfaces_from_ifaddrs(short_addr, Platform::darwin)
                .error()
                .detail.find("an address of 4 bytes, not 16"),
            std::string::npos);
  const std::vector<IfAddrRecord> bad_name{{"en\n0", 1, 2, v4(10, 0, 0, 1), {}, 0, 0, ""}};
  EXPECT_NE(
      interfaces_from_ifaddrs(bad_name, Platform::darwin).error().detail.find("netdev name \"en\\x0a0\""),
      std::string::npos)
      << interfaces_from_ifaddrs(bad_name, Platform::darwin).error().detail;
}

TEST(Doctor, MacStudioThunderboltPortsGetMacCommands) {
  DoctorInput in = mac_studio();
  in.peer_addresses.push_back(g("::ffff:192.168.200.2"));  // the hostfile's peer holds the first /30
  const DoctorReport r = examine(in);
  EXPECT_FALSE(r.ready());
  const Finding* no_ipv4 = find(r, FindingCode::no_ipv4, "rdma_en3");
  ASSERT_NE(no_ipv4, nullptr);
  EXPECT_EQ(no_ipv4->text, "rdma_en3 port 1: en3 has no IPv4 address, so the port has no ::ffff:a.b.c.d GID");
  EXPECT_NE(no_ipv4->why.find("EINVAL (22)"), std::string::npos);
  // Not the peer's /30 and never 169.254/16: the next /30.
  EXPECT_TRUE(
      has_line(*no_ipv4,
               "sudo ifconfig en3 inet 192.168.200.5 netmask 255.255.255.252 alias   # now; lost at reboot"));
  EXPECT_TRUE(has_line(*no_ipv4, "sudo networksetup -createnetworkservice 'RDMA en3' en3"));
  EXPECT_TRUE(has_line(*no_ipv4, "sudo networksetup -setmanual 'RDMA en3' 192.168.200.5 255.255.255.252"));
  const Finding* bridge = find(r, FindingCode::bridge_member, "rdma_en3");
  ASSERT_NE(bridge, nullptr);
  EXPECT_TRUE(has_line(*bridge, "sudo ifconfig bridge0 deletem en3   # now; lost at reboot"));
  const Finding* self = find(r, FindingCode::self_assigned, "rdma_en4");
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->severity, Severity::warning);
  EXPECT_EQ(find(r, FindingCode::no_ipv4, "rdma_en5"), nullptr);
  EXPECT_EQ(find(r, FindingCode::link_local_only, "rdma_en3"), nullptr);  // said once, as no_ipv4
  // Blockers before warnings; the bridge before the address (leave the bridge first).
  ASSERT_GE(r.findings.size(), 3u);
  EXPECT_EQ(r.findings[0].code, FindingCode::bridge_member);
  EXPECT_EQ(r.findings[1].code, FindingCode::no_ipv4);
  EXPECT_EQ(r.findings.back().severity, Severity::warning);
  // The four stacks a Mac runs (ds4, llama.cpp, JACCL, exo) on each of three Thunderbolt ports.
  EXPECT_EQ(r.stacks.size(), 12u);
}

TEST(Doctor, TheSameHostWithLinuxCommands) {
  DoctorInput in = mac_studio();
  in.platform = Platform::linux_kernel;
  const DoctorReport r = examine(in);
  const Finding* no_ipv4 = find(r, FindingCode::no_ipv4, "rdma_en3");
  ASSERT_NE(no_ipv4, nullptr);
  EXPECT_TRUE(has_line(*no_ipv4, "sudo ip addr add 192.168.200.1/30 dev en3   # now; lost at reboot"));
  EXPECT_TRUE(std::any_of(no_ipv4->fix.begin(), no_ipv4->fix.end(), [](const std::string& l) {
    return l.find("nmcli connection add") != std::string::npos;
  }));
  EXPECT_TRUE(has_line(*find(r, FindingCode::bridge_member), "sudo ip link set en3 nomaster   # now"));
}

TEST(Doctor, AWedgedDeviceIsReportedFirstAndTheRestGoesOn) {
  DoctorInput in = mac_studio();
  in.failures.push_back(DeviceFailure{"rdma_en6", 1, "ibv_query_port", true, 5000, ""});
  const DoctorReport r = examine(in);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].code, FindingCode::no_answer);
  EXPECT_EQ(r.findings[0].text,
            "rdma_en6 did not answer ibv_query_port within 5 s: the port may be wedged; replug the cable or "
            "reboot");
  EXPECT_NE(find(r, FindingCode::no_ipv4, "rdma_en3"), nullptr);  // the other ports are still examined
}

TEST(Doctor, RdmaDisabledOnAMacIsTheFirstCause) {
  DoctorInput in = mac_studio();
  in.rdma_enabled = false;
  const DoctorReport r = examine(in);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().code, FindingCode::rdma_disabled);
  EXPECT_TRUE(has_line(r.findings.front(), "rdma_ctl enable"));
  EXPECT_FALSE(r.ready());
}

TEST(Doctor, EnabledWithNoDeviceIsThunderbolt4sFinalState) {
  DoctorInput in;
  in.platform = Platform::darwin;
  in.rdma_enabled = true;
  const DoctorReport enabled = examine(in);  // kept: find() points into it
  const Finding* f = find(enabled, FindingCode::no_rdma_device);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->why.find("Thunderbolt 5"), std::string::npos);
  in.from_file = true;  // a table file says nothing of this host's devices
  EXPECT_EQ(find(examine(in), FindingCode::no_rdma_device), nullptr);
  in.from_file = false;
  in.rdma_enabled.reset();
  in.rdma_state_error = "/usr/bin/rdma_ctl did not answer within 2000 ms";
  const DoctorReport unknown = examine(in);
  ASSERT_NE(find(unknown, FindingCode::rdma_state_unknown), nullptr);
  EXPECT_EQ(find(unknown, FindingCode::rdma_state_unknown)->severity, Severity::note);
}

TEST(Doctor, BridgeMembershipThatCouldNotBeReadIsANote) {
  DoctorInput in = mac_studio();
  for (HostInterface& i : in.interfaces)
    if (i.name == "en5") i.bridge_unknown = "/sbin/ifconfig -a did not finish within 2 s";
  const DoctorReport r = examine(in);
  const Finding* f = find(r, FindingCode::bridge_unknown);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::note);
  EXPECT_EQ(f->netdev, "en5");
  EXPECT_EQ(f->text,
            "whether en5 is a bridge member could not be read: /sbin/ifconfig -a did not finish within 2 s");
  EXPECT_TRUE(has_line(*f, "ifconfig -a | grep 'member:'   # each line names a bridge member"));
  EXPECT_NE(find(r, FindingCode::bridge_member, "rdma_en3"), nullptr);
  // Several: one note naming them all (en4 and en5 here; en3's membership was read).
  for (HostInterface& i : in.interfaces)
    if (i.name == "en4") i.bridge_unknown = "/sbin/ifconfig -a did not finish within 2 s";
  const DoctorReport two = examine(in);
  EXPECT_EQ(std::count_if(two.findings.begin(), two.findings.end(),
                          [](const Finding& x) { return x.code == FindingCode::bridge_unknown; }),
            1);
  EXPECT_NE(find(two, FindingCode::bridge_unknown)->text.find("whether en4, en5 are a bridge member"),
            std::string::npos);
}

TEST(Doctor, ConsistentHostIsReady) {
  DoctorInput in = mac_studio();
  in.tables.erase(in.tables.begin(), in.tables.begin() + 2);  // rdma_en5 only
  const DoctorReport r = examine(in);
  EXPECT_TRUE(r.ready()) << (r.findings.empty() ? "" : r.findings[0].text);
  EXPECT_TRUE(r.findings.empty()) << r.findings[0].text;
}

TEST(Doctor, RequiredDevicesAndPeersAndPins) {
  DoctorInput in = mac_studio();
  in.tables.erase(in.tables.begin(), in.tables.begin() + 2);
  in.required_devices.emplace_back("rdma_en7", "hosts.json (rank 0)");
  Route via_en5{PeerAddress::parse("10.0.5.2").value(), "en5", 13, g("::ffff:10.0.5.1"), RouteType::unicast};
  in.peers.push_back(DoctorPeer{via_en5.peer, "--peer", via_en5});
  in.peers.push_back(
      DoctorPeer{PeerAddress::parse("10.9.9.9").value(), "--peer",
                 route_from_errno(Platform::darwin, PeerAddress::parse("10.9.9.9").value(), 3)});
  in.pins.push_back({"GGML_RDMA_GID", "0"});  // llama.cpp's: it runs on Thunderbolt, NCCL does not
  const DoctorReport r = examine(in);
  ASSERT_NE(find(r, FindingCode::device_missing), nullptr);
  EXPECT_EQ(find(r, FindingCode::device_missing)->text,
            "hosts.json (rank 0) names rdma_en7, which this host does not have");
  ASSERT_EQ(r.peers.size(), 2u);
  EXPECT_EQ(r.peers[0].summary, "through en5 (rdma_en5 port 1), source GID [1] 10.0.5.1");
  EXPECT_TRUE(r.peers[0].leaves_host);
  ASSERT_NE(find(r, FindingCode::peer_unreachable), nullptr);
  EXPECT_NE(find(r, FindingCode::peer_unreachable)->text.find("ESRCH (3)"), std::string::npos);
  const Finding* pin = find(r, FindingCode::stale_pin);
  ASSERT_NE(pin, nullptr);  // index 0 is the link-local GID: not the entry to use
  EXPECT_TRUE(has_line(*pin, "export GGML_RDMA_GID=1   # what gidpolicy's auto picks on rdma_en5 port 1"));
}

TEST(Doctor, ProposalsNeverTakeAPeersSubnetOrLinkLocal) {
  std::vector<IfAddress> taken{{g("::ffff:192.168.200.1"), 24}};  // a whole /24 in use
  auto a = propose_address(taken, 0);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->address.ipv4_string(), "192.168.201.1");
  EXPECT_EQ(a->prefix, 30u);
  EXPECT_EQ(propose_address({}, 2)->address.ipv4_string(), "192.168.200.9");
  for (unsigned k = 0; k < 64; ++k) EXPECT_FALSE(propose_address(taken, k)->address.is_ipv4_link_local());
  const std::vector<IfAddress> everything{{g("::ffff:192.168.0.0"), 16}};
  EXPECT_FALSE(propose_address(everything, 0));
}

TEST(Doctor, APinValueCannotForgeALineOfTheReport) {
  DoctorInput in = mac_studio();
  in.tables.erase(in.tables.begin(), in.tables.begin() + 2);
  in.pins.push_back({"GGML_RDMA_GID", "0\nREADY: 0 blockers, 0 warnings\x1b[2J"});
  const DoctorReport r = examine(in);
  const Finding* pin = find(r, FindingCode::stale_pin);
  ASSERT_NE(pin, nullptr);
  EXPECT_EQ(pin->text.find('\n'), std::string::npos) << pin->text;
  EXPECT_EQ(pin->text.find('\x1b'), std::string::npos) << pin->text;
  EXPECT_NE(pin->text.find("0\\nREADY"), std::string::npos) << pin->text;  // shown, escaped
}

// Another host's table (a pasted one): judged by what it says itself, never by this machine's
// interfaces, routes or pins, and what was not checked is listed.
TEST(Doctor, AnotherHostsThunderboltPortWithOnlyLinkLocalGidsHasNoIpv4) {
  DoctorInput in;
  in.tables.push_back(tb_port("rdma_en3", {{.index = 0, .gid = g("fe80::347c:94ff:fecd:45c4")}}));
  in.platform = Platform::darwin;
  in.from_file = true;
  in.host_checked = false;
  // This machine's interfaces and pins: not the table's host's, so none may be judged.
  in.interfaces.push_back(HostInterface{.name = "eth0", .up = true, .running = true});
  in.pins.push_back({"NCCL_IB_GID_INDEX", "7"});
  const DoctorReport r = examine(in);
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings.front();
  EXPECT_EQ(f.code, FindingCode::no_ipv4);
  EXPECT_EQ(f.device, "rdma_en3");
  EXPECT_EQ(f.netdev, "en3");
  EXPECT_NE(f.text.find("its interface en3 has no IPv4 address"), std::string::npos) << f.text;
  EXPECT_TRUE(has_line(
      f, "sudo ifconfig en3 inet 192.168.200.1 netmask 255.255.255.252 alias   # now; lost at reboot"));
  EXPECT_TRUE(has_line(f, "sudo networksetup -createnetworkservice 'RDMA en3' en3"));
  EXPECT_EQ(find(r, FindingCode::netdev_missing), nullptr);
  EXPECT_EQ(find(r, FindingCode::link_local_only), nullptr);  // no_ipv4 is the cause
  EXPECT_EQ(find(r, FindingCode::stale_pin), nullptr);
  EXPECT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.not_checked,
            (std::vector<std::string>{"interfaces", "bridge_membership", "routes", "pins", "rdma_ctl"}));
}

// A port whose only IPv4-mapped GID is self-assigned raises two findings that each propose an
// address; a report proposes one per interface, so the far end's .2 matches this end's .1.
TEST(Doctor, OneProposedAddressPerInterfacePerReport) {
  DoctorInput in;
  in.tables.push_back(tb_port("rdma_en3", {{.index = 0, .gid = g("fe80::347c:94ff:fecd:45c4")},
                                           {.index = 1, .gid = g("::ffff:169.254.7.9")}}));
  in.platform = Platform::darwin;
  in.from_file = true;
  in.host_checked = false;
  const DoctorReport r = examine(in);
  std::set<std::string> proposed;
  std::size_t proposing = 0;
  for (const Finding& f : r.findings) {
    bool any = false;
    for (const std::string& line : f.fix) {
      const auto at = line.find("inet 192.168.");
      if (at == std::string::npos) continue;
      proposed.insert(line.substr(at + 5, line.find(' ', at + 5) - (at + 5)));
      any = true;
    }
    proposing += any ? 1 : 0;
  }
  EXPECT_GE(proposing, 2u) << "the case needs two findings that propose an address";
  EXPECT_EQ(proposed, (std::set<std::string>{"192.168.200.1"}));
}

TEST(Doctor, AnotherHostsTablesAreNotJudgedByThisHostsInterfacesOrRoutes) {
  DoctorInput in;
  PortInfo p{.device = "mlx5_0",
             .port = 1,
             .state = PortState::active,
             .link_layer = LinkLayer::ethernet(),
             .gid_tbl_len = 16};
  in.tables.push_back(
      GidTable::make(p,
                     {{.index = 0, .gid = g("fe80::1"), .type = GidType::roce_v2, .netdev = "eth0"},
                      {.index = 1, .gid = g("::ffff:10.0.0.5"), .type = GidType::roce_v2, .netdev = "eth0"}})
          .value());
  in.from_file = true;
  in.host_checked = false;
  in.interfaces_known = false;  // would be interfaces_unknown on this host
  DoctorPeer peer{PeerAddress::parse("10.0.0.9").value(), "--peer"};
  in.peers.push_back(peer);  // its route (not looked up) would be peer_unreachable
  const DoctorReport r = examine(in);
  EXPECT_TRUE(r.ready());
  EXPECT_TRUE(r.findings.empty()) << r.findings.front().text;
  EXPECT_TRUE(r.peers.empty());
  EXPECT_EQ(r.not_checked, (std::vector<std::string>{"interfaces", "bridge_membership", "routes", "pins"}));
  // The same input as this host's: its interfaces and the peer are judged.
  in.host_checked = true;
  const DoctorReport here = examine(in);
  EXPECT_NE(find(here, FindingCode::interfaces_unknown), nullptr);
  EXPECT_NE(find(here, FindingCode::peer_unreachable), nullptr);
  EXPECT_TRUE(here.not_checked.empty());
}

// No RDMA device at all: one blocker per cause, with the commands of the platform.
TEST(Doctor, NoDeviceBecauseTheLibraryCannotBeLoaded) {
  DoctorInput in;
  in.no_device =
      NoDevice{.cause = NoDevice::Cause::library_missing, .detail = "dlopen(libibverbs.so.1): not found"};
  const DoctorReport r = examine(in);
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings.front();
  EXPECT_EQ(to_string(f.code), "verbs_library_missing");
  EXPECT_EQ(f.severity, Severity::blocker);
  EXPECT_FALSE(r.ready());
  EXPECT_NE(f.text.find("the verbs library cannot be loaded"), std::string::npos) << f.text;
  EXPECT_NE(f.text.find("dlopen(libibverbs.so.1): not found"), std::string::npos) << f.text;
  EXPECT_TRUE(has_line(f, "sudo apt install libibverbs1 ibverbs-providers   # Debian, Ubuntu"));
  EXPECT_TRUE(has_line(f, "sudo dnf install libibverbs   # RHEL, Fedora (the providers are in it)"));
  in.platform = Platform::darwin;
  const Finding mac = examine(in).findings.front();
  EXPECT_EQ(mac.code, FindingCode::verbs_library_missing);
  ASSERT_EQ(mac.fix.size(), 1u);
  EXPECT_EQ(mac.fix.front().rfind("sw_vers", 0), 0u) << mac.fix.front();
}

TEST(Doctor, NoDeviceBecauseTheKernelHasNoneNamesAnInterfaceForSoftRoce) {
  DoctorInput in;
  in.no_device = NoDevice{.cause = NoDevice::Cause::no_kernel_device, .netdev = "eth 0;x"};
  const DoctorReport r = examine(in);
  ASSERT_EQ(r.findings.size(), 1u);
  const Finding& f = r.findings.front();
  EXPECT_EQ(to_string(f.code), "no_kernel_rdma_device");
  EXPECT_NE(f.text.find("/sys/class/infiniband is absent or empty"), std::string::npos) << f.text;
  EXPECT_TRUE(
      has_line(f, "lspci | grep -i -e mellanox -e infiniband -e ethernet   # is there an RDMA-capable NIC?"));
  EXPECT_TRUE(
      has_line(f, "sudo modprobe mlx5_ib   # its RDMA driver, <driver>_ib (mlx5_ib: ConnectX-4 and later)"));
  // The interface is one shell word: pasted, the command changes that interface and runs nothing else.
  EXPECT_TRUE(has_line(f, "sudo modprobe rdma_rxe && sudo rdma link add rxe0 type rxe netdev 'eth 0;x'"));
  in.no_device->netdev.clear();
  EXPECT_TRUE(has_line(examine(in).findings.front(),
                       "sudo modprobe rdma_rxe && sudo rdma link add rxe0 type rxe netdev IF"));
}

TEST(Doctor, NoDeviceBecauseTheProviderOrTheUverbsNodeIsMissing) {
  DoctorInput in;
  in.no_device = NoDevice{.cause = NoDevice::Cause::provider_missing, .kernel_devices = {"mlx5_0", "mlx5_1"}};
  const Finding f = examine(in).findings.front();
  EXPECT_EQ(to_string(f.code), "verbs_provider_missing");
  EXPECT_NE(f.text.find("the kernel has RDMA devices (mlx5_0, mlx5_1)"), std::string::npos) << f.text;
  EXPECT_NE(f.text.find("no uverbs node"), std::string::npos) << f.text;
  ASSERT_FALSE(f.fix.empty());
  EXPECT_EQ(f.fix.front(), "sudo modprobe ib_uverbs   # /dev/infiniband/uverbsN: how programs open a device");
  EXPECT_TRUE(has_line(
      f,
      "sudo apt install ibverbs-providers   # Debian, Ubuntu (RHEL, Fedora: sudo dnf install libibverbs)"));
  // The nodes are there: the provider is what is missing, and ib_uverbs is not proposed.
  in.no_device->uverbs_nodes = true;
  const Finding p = examine(in).findings.front();
  EXPECT_NE(p.text.find("its user-space provider is missing"), std::string::npos) << p.text;
  EXPECT_FALSE(
      has_line(p, "sudo modprobe ib_uverbs   # /dev/infiniband/uverbsN: how programs open a device"));
}

}  // namespace

// JACCL as it ships routes from index 1; on the Mac mini whose IPv4-mapped GID sits at index 2
// that fails while ds4 works: a warning naming JACCL and exo with what must hold on the host,
// not a blocker. Where index 1 holds the GID (the ds4 QA Mac), nothing.
TEST(Doctor, StockJacclThatFailsWhereTheHostWorksIsAWarning) {
  DoctorInput in;
  in.tables = {test::macmini()};
  in.platform = Platform::darwin;
  in.host_checked = false;
  const DoctorReport r = examine(in);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].code, FindingCode::stock_stack_fails);
  EXPECT_EQ(r.findings[0].severity, Severity::warning);
  EXPECT_EQ(r.findings[0].text.rfind("JACCL and exo as they ship fail on rdma_en2 port 1: EINVAL (22)", 0),
            0u)
      << r.findings[0].text;
  EXPECT_TRUE(r.ready());
  in.tables = {test::apple_ds4qa()};
  EXPECT_TRUE(examine(in).findings.empty());
}

}  // namespace gidpolicy
