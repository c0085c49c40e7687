// darwin_tools.hpp: each reader on a public example of its tool's output (tests/data/bundle/darwin,
// sources in docs/bundle.md) and on hostile text: oversize input, malformed fields of the lines
// it reads (refused, naming the line), lines it knows to be irrelevant (skipped).
#include <gidpolicy/bundle.hpp>
#include <gidpolicy/darwin.hpp>
#include <gidpolicy/darwin_tools.hpp>
#include <gidpolicy/formats/devinfo.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace gidpolicy::darwin {
// Named, not anonymous: the unit tests are a unity build.
namespace darwin_tools_test {

std::string example(const char* name) {
  return test::read_file(test::test_data_dir() / "bundle" / "darwin" / name);
}
Gid g(const char* t) { return Gid::parse(t).value(); }
IfAddress v4(const char* a, unsigned prefix) { return {g((std::string("::ffff:") + a).c_str()), prefix}; }

const HostInterface* find(const std::vector<HostInterface>& ifs, const std::string& name) {
  for (const auto& i : ifs)
    if (i.name == name) return &i;
  return nullptr;
}

/// The error's detail holds `text` (the line, the field).
template <class R>
void expect_refused(const R& r, const std::string& text) {
  ASSERT_FALSE(r) << "accepted; expected an error mentioning " << text;
  EXPECT_EQ(r.error(), errc::invalid_argument);
  EXPECT_NE(r.error().detail.find(text), std::string::npos) << r.error().detail;
}

const std::string kOversize(kMaxToolOutputBytes + 1, 'x');

// ---- ifconfig -a ----

TEST(DarwinToolsIfconfig, ReadsThePublicExample) {
  ASSERT_OK_AND_ASSIGN(const auto ifs, ifconfig_interfaces(example("ifconfig-a.txt")));
  ASSERT_EQ(ifs.size(), 11U);
  EXPECT_EQ(ifs[0].name, "lo0");
  EXPECT_EQ(ifs[10].name, "en0");

  const HostInterface* lo = find(ifs, "lo0");
  ASSERT_NE(lo, nullptr);
  EXPECT_TRUE(lo->up && lo->running && lo->loopback);
  EXPECT_EQ(lo->mtu, 16384U);
  EXPECT_EQ(lo->addresses, (std::vector<IfAddress>{v4("127.0.0.1", 8), {g("::1"), 128}, {g("fe80::1"), 64}}));

  const HostInterface* gif = find(ifs, "gif0");
  ASSERT_NE(gif, nullptr);
  EXPECT_FALSE(gif->up);
  EXPECT_TRUE(find(ifs, "stf0")->addresses.empty());

  // The Thunderbolt ports: RUNNING among the flags, "status: inactive" (no cable), bridge members.
  for (const char* tb : {"en1", "en2"}) {
    const HostInterface* i = find(ifs, tb);
    ASSERT_NE(i, nullptr);
    EXPECT_TRUE(i->up);
    EXPECT_FALSE(i->running) << tb << ": status: inactive";
    EXPECT_EQ(i->bridge, "bridge0");
    EXPECT_TRUE(i->bridge_unknown.empty());
    EXPECT_TRUE(i->addresses.empty());
  }
  EXPECT_EQ(find(ifs, "bridge0")->bridge, "");

  const HostInterface* en0 = find(ifs, "en0");
  ASSERT_NE(en0, nullptr);
  EXPECT_TRUE(en0->running);
  EXPECT_EQ(en0->addresses,
            (std::vector<IfAddress>{{g("fe80::1c05:bcd3:6225:319"), 64}, v4("192.168.3.227", 24)}));
  EXPECT_TRUE(en0->has_assigned_ipv4());
  EXPECT_EQ(en0->ifindex, 4U);  // no " index N" in this release: the scope id of its link-local
  EXPECT_EQ(lo->ifindex, 1U);
  EXPECT_EQ(find(ifs, "en2")->ifindex, 0U);  // no index, no link-local: unknown
}

TEST(DarwinToolsIfconfig, ReadsTheIndexAndSkipsVerboseLines) {
  ASSERT_OK_AND_ASSIGN(const auto ifs, ifconfig_interfaces(example("ifconfig-index.txt")));
  ASSERT_EQ(ifs.size(), 2U);
  EXPECT_EQ(ifs[0].name, "en2");
  EXPECT_EQ(ifs[0].ifindex, 9U);
  EXPECT_EQ(ifs[0].bridge, "bridge0");
  EXPECT_FALSE(ifs[0].running);
  EXPECT_EQ(ifs[1].ifindex, 10U);
  EXPECT_FALSE(ifs[1].running);  // RUNNING, but "status: inactive": no member has a link
  EXPECT_EQ(ifs[1].bridge, "");
}

TEST(DarwinToolsIfconfig, ReadsAThunderboltPortWithAnAddress) {
  ASSERT_OK_AND_ASSIGN(
      const auto ifs,
      ifconfig_interfaces("en2: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n"
                          "\tinet6 fe80::3c51:2eff:fe10:a42%en2 prefixlen 64 scopeid 0x9\n"
                          "\tinet 192.168.200.1 netmask 0xfffffffc broadcast 192.168.200.3\n"
                          "\tinet 10.0.0.1 --> 10.0.0.2 netmask 0xffffffff\n"
                          "\tstatus: active"));
  ASSERT_EQ(ifs.size(), 1U);
  EXPECT_TRUE(ifs[0].running);
  EXPECT_EQ(ifs[0].addresses,
            (std::vector<IfAddress>{
                {g("fe80::3c51:2eff:fe10:a42"), 64}, v4("192.168.200.1", 30), v4("10.0.0.1", 32)}));
}

TEST(DarwinToolsIfconfig, EmptyOutputIsNoInterfaces) {
  ASSERT_OK_AND_ASSIGN(const auto ifs, ifconfig_interfaces(""));
  EXPECT_TRUE(ifs.empty());
}

TEST(DarwinToolsIfconfig, RefusesMalformedLinesWithTheirNumber) {
  const std::string en2 = "en2: flags=8863<UP,BROADCAST,SMART,RUNNING,SIMPLEX,MULTICAST> mtu 1500\n";
  expect_refused(ifconfig_interfaces(kOversize), "bytes, more than");
  expect_refused(ifconfig_interfaces(en2 + "\tinet 10.0.0.1 netmask 0xffff00ff\n"), "line 2");
  expect_refused(ifconfig_interfaces(en2 + "\tinet 10.0.0.1 netmask 0xffff00ff\n"), "not a prefix");
  expect_refused(ifconfig_interfaces(en2 + "\tinet 10.0.0.1 netmask 255.255.255.0\n"), "not 0xHEX");
  expect_refused(ifconfig_interfaces(en2 + "\tinet 10.0.0.1 broadcast 10.0.0.255\n"), "no netmask");
  expect_refused(ifconfig_interfaces(en2 + "\tinet 10.0.0.300 netmask 0xffffff00\n"), "is not a.b.c.d");
  expect_refused(ifconfig_interfaces(en2 + "\tinet6 fe80::1%en2 prefixlen 129\n"), "prefixlen");
  expect_refused(ifconfig_interfaces(en2 + "\tinet6 fe80::1%en2\n"), "no prefixlen");
  expect_refused(ifconfig_interfaces(en2 + "\tinet6 10.0.0.1 prefixlen 64\n"), "not an IPv6 address");
  expect_refused(ifconfig_interfaces(en2 + "\tinet6 fe80::1%en2 prefixlen 64 scopeid 9\n"),
                 "line 2 (en2): scopeid");
  expect_refused(ifconfig_interfaces("en2: flags=8863<UP,RUNNING> mtu 1500 index 9\n"
                                     "\tinet6 fe80::1%en2 prefixlen 64 scopeid 0xa\n"),
                 "is not its index 9");
  // bridge_members()'s rule: a member line before any interface.
  expect_refused(ifconfig_interfaces("\tmember: en2 flags=3<LEARNING,DISCOVER>\n" + en2), "line 1");
  expect_refused(ifconfig_interfaces("\tinet 10.0.0.1 netmask 0xffffff00\n" + en2), "before any interface");
  // Names under the netdev rule.
  expect_refused(ifconfig_interfaces("en\x1b[31m2: flags=8863<UP> mtu 1500\n"), "line 1: interface");
  expect_refused(ifconfig_interfaces("thunderbolt-bridge-0: flags=8863<UP> mtu 1500\n"), "interface");
  expect_refused(ifconfig_interfaces(en2 + "\tstatus: active\nhello world\n"), "line 3");
  expect_refused(ifconfig_interfaces("garbage: more garbage\n"), "no flags");
  expect_refused(ifconfig_interfaces("en2: flags=8863<UP mtu 1500\n"), "HEX<NAMES>");
  expect_refused(ifconfig_interfaces("en2: flags=8863<UP,RUNNING>\n"), "no mtu");
  expect_refused(ifconfig_interfaces("en2: flags=8863<UP,RUNNING> mtu big\n"), "mtu");
  // 0x8862 has no IFF_UP bit: the names were edited.
  expect_refused(ifconfig_interfaces("en2: flags=8862<UP,RUNNING> mtu 1500\n"), "disagree");
  expect_refused(ifconfig_interfaces(en2 + en2), "listed twice");
}

TEST(DarwinToolsIfconfig, BoundsInterfacesAndAddresses) {
  std::string many;
  for (std::size_t k = 0; k <= kMaxInterfaces; ++k) many += "e" + std::to_string(k) + ": flags=0<> mtu 0\n";
  expect_refused(ifconfig_interfaces(many), "more than 4096 interfaces");
  std::string addrs = "en2: flags=8863<UP,RUNNING> mtu 1500\n";
  for (std::size_t k = 0; k <= kMaxAddressesPerInterface; ++k) addrs += "\tinet6 fe80::1 prefixlen 64\n";
  expect_refused(ifconfig_interfaces(addrs), "more than 256 addresses");
}

// ---- networksetup -listallhardwareports ----

TEST(DarwinToolsHardwarePorts, ReadsThePublicExample) {
  ASSERT_OK_AND_ASSIGN(const auto ports, hardware_ports(example("listallhardwareports.txt")));
  ASSERT_EQ(ports.size(), 6U);
  EXPECT_EQ(ports[0], (HardwarePort{"Wi-Fi", "en0", "8c:85:90:90:6d:26"}));
  EXPECT_EQ(ports[3], (HardwarePort{"Thunderbolt 1", "en1", "82:f1:30:25:50:01"}));
  EXPECT_EQ(ports[5], (HardwarePort{"Thunderbolt Bridge", "bridge0", "82:f1:30:25:50:01"}));
  std::vector<std::string> tb;
  for (const auto& p : ports)
    if (is_thunderbolt_port(p)) tb.push_back(p.device);
  EXPECT_EQ(tb, (std::vector<std::string>{"en1", "en2"}));
}

TEST(DarwinToolsHardwarePorts, ThunderboltPortsAreNumbered) {
  EXPECT_TRUE(is_thunderbolt_port({"Thunderbolt 4", "en5", ""}));
  EXPECT_FALSE(is_thunderbolt_port({"Thunderbolt Bridge", "bridge0", ""}));
  EXPECT_FALSE(is_thunderbolt_port({"Thunderbolt Ethernet Slot 1", "en10", ""}));
  EXPECT_FALSE(is_thunderbolt_port({"Thunderbolt ", "en5", ""}));
  EXPECT_FALSE(is_thunderbolt_port({"Ethernet", "en0", ""}));
}

TEST(DarwinToolsHardwarePorts, StopsAtTheVlanTail) {
  ASSERT_OK_AND_ASSIGN(const auto ports,
                       hardware_ports("Hardware Port: Ethernet\nDevice: en0\nEthernet Address: N/A\n\n"
                                      "VLAN Configurations\n===================\n"
                                      "VLAN User Defined Name: lab\nParent Device: en0\n"
                                      "Device (\"Hardware\" Port): vlan0\nTag: 100\n"));
  ASSERT_EQ(ports.size(), 1U);
  EXPECT_EQ(ports[0].address, "N/A");
}

TEST(DarwinToolsHardwarePorts, RefusesMalformedLines) {
  expect_refused(hardware_ports(kOversize), "bytes, more than");
  expect_refused(hardware_ports("Device: en0\n"), "line 1: a Device line before any Hardware Port");
  expect_refused(
      hardware_ports("Hardware Port: Wi-Fi\nEthernet Address: 8c:85:90:90:6d:26\n\nHardware Port: X\n"),
      "line 1: hardware port \"Wi-Fi\" has no Device line");
  expect_refused(hardware_ports("Hardware Port: Wi-Fi\nDevice: en0\nDevice: en1\n"),
                 "line 3: a second Device");
  expect_refused(hardware_ports("Hardware Port: Wi-Fi\nDevice: en0\nEthernet Address: 8c:85:90:90:6d\n"),
                 "line 3");
  expect_refused(hardware_ports("Hardware Port: Wi-Fi\nDevice: en0\nEthernet Address: zz:85:90:90:6d:26\n"),
                 "not six hex bytes");
  expect_refused(hardware_ports("Hardware Port: Wi-Fi\nDevice: en 0\n"), "line 2: device");
  expect_refused(hardware_ports("Hardware Port: Wi\x01Fi\nDevice: en0\n"), "line 1: hardware port");
  expect_refused(hardware_ports("Hardware Port: Wi-Fi\ngarbage\n"), "line 2");
}

// ---- networksetup -listnetworkserviceorder ----

TEST(DarwinToolsServices, ReadsThePublicExample) {
  ASSERT_OK_AND_ASSIGN(const auto s, network_services(example("listnetworkserviceorder.txt")));
  ASSERT_EQ(s.size(), 6U);
  EXPECT_EQ(s[3], (NetworkService{4, "USB 10/100/1000 LAN 2", true, "USB 10/100/1000 LAN", "en11"}));
  EXPECT_EQ(s[4], (NetworkService{5, "Thunderbolt Bridge", true, "Thunderbolt Bridge", "bridge0"}));
  EXPECT_EQ(s[5].device, "en0");
}

TEST(DarwinToolsServices, ReadsDisabledServicesAndServicesWithoutADevice) {
  ASSERT_OK_AND_ASSIGN(const auto s,
                       network_services("An asterisk (*) denotes that a network service is disabled.\n"
                                        "(1) Ethernet\n(Hardware Port: Ethernet, Device: en0)\n\n"
                                        "(*) Thunderbolt Bridge\n"
                                        "(Hardware Port: Thunderbolt Bridge, Device: bridge0)\n\n"
                                        "(2) Lab VPN\n(Hardware Port: L2TP, Device: )\n"));
  ASSERT_EQ(s.size(), 3U);
  EXPECT_EQ(s[1], (NetworkService{0, "Thunderbolt Bridge", false, "Thunderbolt Bridge", "bridge0"}));
  EXPECT_EQ(s[2].device, "");
  EXPECT_EQ(s[2].order, 2U);
}

TEST(DarwinToolsServices, RefusesMalformedLines) {
  expect_refused(network_services(kOversize), "bytes, more than");
  expect_refused(network_services("(1) Wi-Fi\nWi-Fi is great\n"), "line 2");
  expect_refused(network_services("(Hardware Port: Wi-Fi, Device: en0)\n"),
                 "line 1: a Hardware Port line without");
  expect_refused(network_services("(1) Wi-Fi\n"), "line 1: service \"Wi-Fi\" has no Hardware Port line");
  expect_refused(network_services("(1) Wi-Fi\n(2) Ethernet\n"), "line 1: service \"Wi-Fi\"");
  expect_refused(network_services("(0) Wi-Fi\n"), "line 1: service number");
  expect_refused(network_services("(x) Wi-Fi\n"), "service number");
  expect_refused(network_services("(1) Wi-Fi\n(Hardware Port: Wi-Fi, Device: en:0)\n"), "line 2: device");
  expect_refused(network_services("(1) Wi-Fi\n(Hardware Port: Wi-Fi en0)\n"), "line 2: expected");
}

// ---- netstat -rn -f inet ----

TEST(DarwinToolsNetstat, ReadsThePublicExample) {
  ASSERT_OK_AND_ASSIGN(const auto r, netstat_routes(example("netstat-rn.txt")));
  ASSERT_EQ(r.size(), 14U);  // the Internet6 table is not read
  EXPECT_TRUE(r[0].is_default);
  EXPECT_EQ(r[0].destination, v4("0.0.0.0", 0));
  EXPECT_EQ(r[0].gateway, "192.168.3.1");
  EXPECT_EQ(r[0].flags, "UGSc");
  EXPECT_EQ(r[0].netif, "en0");
  EXPECT_EQ(r[1].destination, v4("127.0.0.0", 8));
  EXPECT_EQ(r[2].destination, v4("127.0.0.1", 32));  // flag H
  EXPECT_EQ(r[3].destination, v4("169.254.0.0", 16));
  EXPECT_EQ(r[3].gateway, "link#4");
  EXPECT_EQ(r[4].destination, v4("192.168.3.0", 24));
  EXPECT_EQ(r[5].destination, v4("192.168.3.1", 32));  // "/32" printed, no H
  EXPECT_EQ(r[6].gateway, "a4:9b:4e:9f:ea:18");
  EXPECT_EQ(r[10].destination, v4("224.0.0.0", 4));
  EXPECT_EQ(r[13].destination, v4("255.255.255.255", 32));
  for (const auto& x : r) EXPECT_FALSE(x.is_default && &x != &r[0]);
}

TEST(DarwinToolsNetstat, ReadsDestinationsAsNetstatAbbreviatesThem) {
  ASSERT_OK_AND_ASSIGN(const auto r,
                       netstat_routes("Internet:\n"
                                      "Destination        Gateway            Flags        Netif Expire\n"
                                      "0/1                utun0              UScg         utun0\n"
                                      "128.0/1            utun0              UScg         utun0\n"
                                      "10                 link#9             UCS            en2\n"
                                      "10/8               link#9             UCS            en2\n"
                                      "10/24              link#9             UCS            en2\n"
                                      "10.1/16            link#9             UCS            en2\n"
                                      "192.168.200/30     link#9             UCS            en2      !\n"
                                      "192.168.200.2      36:32:70:3f:d9:4   UHLWIi         en2   1180\n"
                                      "172.16             link#9             UCS            en2\n"));
  ASSERT_EQ(r.size(), 9U);
  EXPECT_EQ(r[0].destination, v4("0.0.0.0", 1));
  EXPECT_FALSE(r[0].is_default);
  EXPECT_EQ(r[0].gateway, "utun0");
  EXPECT_EQ(r[1].destination, v4("128.0.0.0", 1));
  EXPECT_EQ(r[2].destination, v4("10.0.0.0", 8));
  EXPECT_EQ(r[3].destination, v4("10.0.0.0", 8));
  EXPECT_EQ(r[4].destination, v4("10.0.0.0", 24));
  EXPECT_EQ(r[5].destination, v4("10.1.0.0", 16));
  EXPECT_EQ(r[6].destination, v4("192.168.200.0", 30));
  EXPECT_EQ(r[7].destination, v4("192.168.200.2", 32));
  EXPECT_EQ(r[8].destination, v4("172.16.0.0", 16));
}

TEST(DarwinToolsNetstat, ReadsTheOlderColumnsWithRefsAndUse) {
  ASSERT_OK_AND_ASSIGN(
      const auto r,
      netstat_routes("Routing tables\n\nInternet:\n"
                     "Destination        Gateway            Flags        Refs      Use   Netif Expire\n"
                     "default            172.16.16.1        UGSc           48        0     en0\n"
                     "127                127.0.0.1          UCS             0        0     lo0\n"
                     "127.0.0.1          127.0.0.1          UH              1    27779     lo0\n"));
  ASSERT_EQ(r.size(), 3U);
  EXPECT_EQ(r[0].netif, "en0");
  EXPECT_EQ(r[2].netif, "lo0");
}

TEST(DarwinToolsNetstat, RefusesMalformedRows) {
  const std::string head = "Internet:\nDestination        Gateway            Flags        Netif Expire\n";
  expect_refused(netstat_routes(kOversize), "bytes, more than");
  expect_refused(netstat_routes("default 192.168.3.1 UGSc en0\n"), "line 1");
  expect_refused(netstat_routes("Internet:\ndefault 192.168.3.1 UGSc en0\n"),
                 "line 2: expected the column header");
  expect_refused(netstat_routes(head + "default 192.168.3.1 UGSc\n"), "line 3: 3 columns");
  expect_refused(netstat_routes(head + "default 192.168.3.1 UGSc en0 ! extra\n"), "line 3: 6 columns");
  expect_refused(netstat_routes(head + "192.168 link#4 UCS en0\n"), "at least 3 octets");
  expect_refused(netstat_routes(head + "10.0.0.256 link#4 UCS en0\n"), "line 3: destination");
  expect_refused(netstat_routes(head + "192.168.3 link#4 UHS en0\n"), "host route");
  expect_refused(netstat_routes(head + "192.168.3.5/24 link#4 UCS en0\n"), "bits set past its /24");
  expect_refused(netstat_routes(head + "10&0xff00ff00 link#4 UCS en0\n"), "not a prefix");
  expect_refused(netstat_routes(head + "10/33 link#4 UCS en0\n"), "prefix length");
  // No "/N" means the classful mask (/8 for 10.x): netstat prints 10.1.0.0/16 as "10.1/16".
  expect_refused(netstat_routes(head + "10.1 link#4 UCS en0\n"), "bits set past its /8");
  expect_refused(netstat_routes(head + "default 192.168.3.1 UG!c en0\n"), "flags");
  expect_refused(netstat_routes(head + "default 192.168.3.1 UGSc en0123456789abcdef\n"), "interface");
  expect_refused(netstat_routes(head + "default 192.168.3.1\x7f UGSc en0\n"), "gateway");
}

// ---- system_profiler SPThunderboltDataType ----

TEST(DarwinToolsThunderbolt, ReadsAThunderbolt5Mac) {
  ASSERT_OK_AND_ASSIGN(const auto tb, thunderbolt_info(example("system_profiler-tb5.txt")));
  ASSERT_EQ(tb.buses.size(), 2U);
  const ThunderboltBus& b2 = tb.buses[0];
  EXPECT_EQ(b2.name, "Thunderbolt/USB4 Bus 2");
  EXPECT_EQ(b2.device_name, "Mac mini");
  EXPECT_EQ(b2.connected, "Mac Studio");
  ASSERT_EQ(b2.ports.size(), 1U);  // the Mac Studio's own blocks are not the bus's ports
  EXPECT_EQ(b2.ports[0], (ThunderboltPort{"Device connected", "80 Gb/s", 80, 1, false, 3}));
  const ThunderboltBus& b1 = tb.buses[1];
  EXPECT_EQ(b1.connected, "");
  ASSERT_EQ(b1.ports.size(), 1U);
  EXPECT_EQ(b1.ports[0], (ThunderboltPort{"No device connected", "Up to 120 Gb/s", 120, 1, true, 2}));
  EXPECT_EQ(thunderbolt_generation(tb), 5U);
}

TEST(DarwinToolsThunderbolt, ReadsAThunderbolt4Mac) {
  ASSERT_OK_AND_ASSIGN(const auto tb, thunderbolt_info(example("system_profiler-tb4.txt")));
  ASSERT_EQ(tb.buses.size(), 3U);
  for (const auto& b : tb.buses) {
    EXPECT_EQ(b.device_name, "MacBook Pro");
    ASSERT_EQ(b.ports.size(), 1U);
    EXPECT_EQ(b.ports[0].speed, "Up to 40 Gb/s x1");
    EXPECT_EQ(b.ports[0].gbps, 40U);
    EXPECT_EQ(b.ports[0].lanes, 1U);
    EXPECT_TRUE(b.ports[0].capability);
  }
  EXPECT_EQ(tb.buses[2].ports[0].receptacle, 1U);
  EXPECT_EQ(thunderbolt_generation(tb), 4U);
}

TEST(DarwinToolsThunderbolt, ReadsOutputWithoutBlankLines) {
  std::string text = example("system_profiler-tb5.txt"), packed;
  for (std::size_t at = 0; at < text.size();) {
    const auto nl = text.find('\n', at);
    const std::string line = text.substr(at, nl - at);
    if (line.find_first_not_of(' ') != std::string::npos) packed += line + "\n";
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  ASSERT_OK_AND_ASSIGN(const auto a, thunderbolt_info(text));
  ASSERT_OK_AND_ASSIGN(const auto b, thunderbolt_info(packed));
  EXPECT_EQ(a, b);
}

TEST(DarwinToolsThunderbolt, GenerationReadsOnlyTheMacsOwnPorts) {
  // A Thunderbolt 4 Mac (idle port "Up to 40") with a Thunderbolt 5 dock down a 40 Gb/s link: the
  // dock's "Up to 120 Gb/s" ports are its own, not the Mac's.
  const std::string dock =
      "Thunderbolt/USB4:\n"
      "    Thunderbolt/USB4 Bus 1:\n"
      "      Device Name: Mac mini\n"
      "      Port:\n"
      "          Status: Device connected\n"
      "          Speed: 40 Gb/s\n"
      "        TS5 Plus:\n"
      "          Device Name: TS5 Plus\n"
      "          Port:\n"
      "              Speed: Up to 120 Gb/s\n"
      "    Thunderbolt/USB4 Bus 0:\n"
      "      Port:\n"
      "          Status: No device connected\n"
      "          Speed: Up to 40 Gb/s x1\n";
  ASSERT_OK_AND_ASSIGN(const auto tb, thunderbolt_info(dock));
  ASSERT_EQ(tb.buses.size(), 2U);
  EXPECT_EQ(tb.buses[0].connected, "TS5 Plus");
  ASSERT_EQ(tb.buses[0].ports.size(), 1U);
  EXPECT_EQ(tb.buses[0].ports[0].gbps, 40U);
  EXPECT_EQ(thunderbolt_generation(tb), 4U);

  // Only linked ports at 40: a Thunderbolt 5 port linked to a Thunderbolt 4 peer says that too.
  ASSERT_OK_AND_ASSIGN(const auto linked, thunderbolt_info("Thunderbolt/USB4:\n    Thunderbolt/USB4 Bus 0:\n"
                                                           "      Port:\n          Speed: 40 Gb/s\n"));
  EXPECT_EQ(thunderbolt_generation(linked), std::nullopt);
  EXPECT_EQ(thunderbolt_generation(ThunderboltInfo{}), std::nullopt);
  ASSERT_OK_AND_ASSIGN(const auto none, thunderbolt_info(""));
  EXPECT_TRUE(none.buses.empty());
}

TEST(DarwinToolsThunderbolt, RefusesMalformedLines) {
  const std::string bus = "Thunderbolt/USB4:\n    Thunderbolt/USB4 Bus 0:\n      Port:\n";
  expect_refused(thunderbolt_info(kOversize), "bytes, more than");
  expect_refused(thunderbolt_info(bus + "          Speed: fast\n"), "line 4: Speed");
  expect_refused(thunderbolt_info(bus + "          Speed: Up to 40 Gbit/s\n"), "line 4: Speed");
  expect_refused(thunderbolt_info(bus + "          Speed: 40 Gb/s x\n"), "line 4: Speed");
  expect_refused(thunderbolt_info(bus + "          Receptacle: one\n"), "line 4: Receptacle");
  expect_refused(thunderbolt_info(bus + "          no colon here\n"), "line 4");
  expect_refused(thunderbolt_info(bus + "\t  Speed: 40 Gb/s\n"), "line 4: a tab");
  expect_refused(thunderbolt_info("Thunderbolt/USB4:\n  Port:\n"), "line 2: a Port heading outside a bus");
  expect_refused(thunderbolt_info(bus + "        Dock\x1b[0m:\n"), "line 4: device");
}

// ---- sw_vers ----

TEST(DarwinToolsSwVers, ReadsThePublicExamples) {
  ASSERT_OK_AND_ASSIGN(const auto v26, mac_version(example("sw_vers-26.txt")));
  EXPECT_EQ(v26, (MacVersion{"macOS", "26.6.2", "25G83"}));
  EXPECT_TRUE(rdma_release(v26));
  ASSERT_OK_AND_ASSIGN(const auto old, mac_version(example("sw_vers-catalina.txt")));
  EXPECT_EQ(old, (MacVersion{"Mac OS X", "10.15.5", "19F101"}));
  EXPECT_FALSE(rdma_release(old));
  ASSERT_OK_AND_ASSIGN(const auto rsr, mac_version("ProductName:\tmacOS\nProductVersion:\t26.2\n"
                                                   "ProductVersionExtra:\t(a)\nBuildVersion:\t25C56\n"));
  EXPECT_EQ(rsr.version, "26.2");
}

TEST(DarwinToolsSwVers, ComparesReleasesNumberByNumber) {
  auto rel = [](const char* v) { return rdma_release(MacVersion{"macOS", v, "x"}); };
  EXPECT_TRUE(rel("26.2"));
  EXPECT_TRUE(rel("26.2.1"));
  EXPECT_TRUE(rel("26.10"));
  EXPECT_TRUE(rel("27.0"));
  EXPECT_TRUE(rel("27"));
  EXPECT_FALSE(rel("26.1.9"));
  EXPECT_FALSE(rel("26"));
  EXPECT_FALSE(rel("25.9"));
  EXPECT_FALSE(rel("15.7.1"));
  EXPECT_FALSE(rel("26.x"));
  EXPECT_FALSE(rel(""));
}

TEST(DarwinToolsSwVers, RefusesMalformedLines) {
  expect_refused(mac_version(kOversize), "bytes, more than");
  expect_refused(mac_version("ProductName:\tmacOS\n"), "no ProductVersion");
  expect_refused(mac_version("ProductVersion:\t26.2.1.4\n"), "line 1: ProductVersion");
  expect_refused(mac_version("ProductVersion:\t26.x\n"), "line 1: ProductVersion");
  expect_refused(mac_version("ProductVersion:\t26.2\nProductVersion:\t26.3\n"),
                 "line 2: a second ProductVersion");
  expect_refused(mac_version("ProductVersion:\t26.2\nmacOS Tahoe\n"), "line 2");
  expect_refused(mac_version("ProductName:\tmac\x1bOS\nProductVersion:\t26.2\n"), "line 1: ProductName");
}

// ---- every reader, on its examples cut short and edited byte by byte: a value or an error ----

TEST(DarwinToolsHostile, CutsAndEditsAreReadOrRefused) {
  // Each call must return (a value or an errc::invalid_argument), never throw or crash: a bundle
  // comes from another machine, and a pasted part may be cut anywhere.
  auto all = [](const std::string& t) {
    std::size_t refused = 0;
    for (bool ok :
         {ifconfig_interfaces(t).has_value(), hardware_ports(t).has_value(), network_services(t).has_value(),
          netstat_routes(t).has_value(), thunderbolt_info(t).has_value(), mac_version(t).has_value()})
      refused += ok ? 0 : 1;
    return refused;
  };
  for (const char* f :
       {"ifconfig-a.txt", "ifconfig-index.txt", "listallhardwareports.txt", "listnetworkserviceorder.txt",
        "netstat-rn.txt", "system_profiler-tb5.txt", "system_profiler-tb4.txt", "sw_vers-26.txt"}) {
    const std::string text = example(f);
    ASSERT_FALSE(text.empty()) << f;
    std::size_t calls = 0;
    for (std::size_t cut = 0; cut <= text.size(); ++cut)
      if (cut % 3 == 0 || text[cut - 1] == '\n') {  // every line end, and inside lines
        all(text.substr(0, cut));
        ++calls;
      }
    for (std::size_t at = 0; at < text.size(); at += 5)
      for (char c : {'\0', ':', '\n'}) {
        std::string edited = text;
        edited[at] = c;
        all(edited);
        ++calls;
      }
    EXPECT_GT(calls, text.size() / 3) << f;
  }
}

// ---- the scenario bundles (tests/data/bundle/mac-*.bundle): framed by parse_bundle(), every part
// reads with its tool's reader, and the parts agree ----

/// What a scenario bundle says, read with the readers under test.
struct Mac {
  Bundle bundle;
  bool rdma_enabled = false;
  MacVersion version;
  std::vector<HostInterface> interfaces;
  std::vector<HardwarePort> ports;
  std::vector<NetworkService> services;
  std::vector<RouteLine> routes;
  ThunderboltInfo thunderbolt;
  std::vector<GidTable> tables;
};

/// A part's output ("" when the bundle lacks the part: the caller's EXPECT says so).
std::string out(const Mac& m, const char* part) {
  const BundlePart* p = m.bundle.part(part);
  return p != nullptr ? p->output : std::string{};
}

Mac read_mac(const char* file) {
  Mac m;
  auto framed = parse_bundle(test::read_file(test::test_data_dir() / "bundle" / file), file);
  EXPECT_TRUE(framed.has_value()) << file << ": " << (framed ? "" : framed.error().detail);
  if (!framed) return m;
  m.bundle = std::move(framed).value();
  EXPECT_EQ(m.bundle.platform(), Platform::darwin);
  auto host = read_bundle_host(m.bundle);  // the bundle reader takes it whole, too
  EXPECT_TRUE(host.has_value()) << file << ": " << (host ? "" : host.error().detail);
  for (const char* p : {"sw_vers", "rdma_ctl", "ibv_devinfo", "ifconfig", "hardware_ports", "service_order",
                        "routes", "thunderbolt", "environment"})
    EXPECT_NE(m.bundle.part(p), nullptr) << file << ": no part " << p;
  auto ok = [&](auto r, const char* what) {
    EXPECT_TRUE(r.has_value()) << file << ": " << what << ": " << (r ? "" : r.error().detail);
    return r ? std::move(r).value() : decltype(std::move(r).value()){};
  };
  m.rdma_enabled = ok(rdma_ctl_enabled(out(m, "rdma_ctl")), "rdma_ctl");
  m.version = ok(mac_version(out(m, "sw_vers")), "sw_vers");
  m.interfaces = ok(ifconfig_interfaces(out(m, "ifconfig")), "ifconfig");
  m.ports = ok(hardware_ports(out(m, "hardware_ports")), "hardware_ports");
  m.services = ok(network_services(out(m, "service_order")), "service_order");
  m.routes = ok(netstat_routes(out(m, "routes")), "routes");
  m.thunderbolt = ok(thunderbolt_info(out(m, "thunderbolt")), "thunderbolt");
  if (m.bundle.part("ibv_devinfo")->ran())
    m.tables = ok(formats::read_devinfo(out(m, "ibv_devinfo"), file), "ibv_devinfo");
  return m;
}

const GidTable* table_of(const Mac& m, const std::string& device) {
  for (const auto& t : m.tables)
    if (t.port().device == device) return &t;
  return nullptr;
}

/// What every scenario must agree on: ports, services and routes name interfaces ifconfig lists;
/// each rdma_enN is a Thunderbolt port's enN; an RDMA port's IPv4-mapped GIDs are its enN's own
/// IPv4 addresses; fe80 at index 0 is the enN's EUI-64 (a bridge member has none of its own).
void expect_consistent(const char* file, const Mac& m) {
  SCOPED_TRACE(file);
  std::map<std::string, const HostInterface*> ifs;
  for (const auto& i : m.interfaces) ifs[i.name] = &i;
  std::set<std::string> tb;
  for (const auto& p : m.ports) {
    EXPECT_EQ(ifs.count(p.device), 1U) << "hardware port " << p.port << " on " << p.device;
    if (is_thunderbolt_port(p)) tb.insert(p.device);
  }
  for (const auto& s : m.services)
    if (!s.device.empty()) {
      EXPECT_EQ(ifs.count(s.device), 1U) << "service " << s.name;
    }
  for (const auto& r : m.routes) {
    EXPECT_EQ(ifs.count(r.netif), 1U) << "route via " << r.netif;
    if (r.gateway.rfind("link#", 0) == 0 && ifs.count(r.netif) != 0 && ifs[r.netif]->ifindex != 0) {
      EXPECT_EQ(r.gateway, "link#" + std::to_string(ifs[r.netif]->ifindex));
    }
  }
  for (const auto& t : m.tables) {
    const std::string dev = t.port().device;
    ASSERT_EQ(dev.rfind("rdma_", 0), 0U) << dev;
    const std::string en = dev.substr(5);
    EXPECT_EQ(tb.count(en), 1U) << dev << " is not a Thunderbolt port's device";
    ASSERT_EQ(ifs.count(en), 1U) << dev;
    const HostInterface& i = *ifs[en];
    for (const auto& e : t) {
      if (e.gid.is_ipv4_mapped()) {
        EXPECT_TRUE(i.holds(e.gid)) << dev << " GID " << e.gid.to_string() << " is not an address of " << en;
        EXPECT_TRUE(i.bridge.empty()) << dev << ": a bridge member gets no IPv4-mapped GID";
      }
    }
    for (const auto& a : i.addresses)
      if (a.address.is_ipv4_mapped()) {
        EXPECT_NE(t.find(a.address), nullptr) << en << " address without a GID";
      }
    if (t.port().state == PortState::active) {
      EXPECT_TRUE(i.running) << en << " has an active RDMA port but no link";
      ASSERT_NE(t.find(0), nullptr) << dev;
      EXPECT_EQ(t.find(0)->gid.bytes()[0], 0xfe) << dev;
      if (i.bridge.empty()) {
        EXPECT_TRUE(i.holds(t.find(0)->gid)) << en << " lacks the link-local of GID 0";
      }
    }
  }
  EXPECT_EQ(m.version, (MacVersion{"macOS", "26.2", "25C56"}));
  EXPECT_TRUE(rdma_release(m.version));
}

TEST(DarwinToolsScenarios, ReadyMac) {
  const Mac m = read_mac("mac-ready.bundle");
  expect_consistent("mac-ready.bundle", m);
  EXPECT_TRUE(m.rdma_enabled);
  EXPECT_EQ(thunderbolt_generation(m.thunderbolt), 5U);
  const HostInterface* en2 = find(m.interfaces, "en2");
  ASSERT_NE(en2, nullptr);
  EXPECT_TRUE(en2->running);
  EXPECT_EQ(en2->bridge, "");
  EXPECT_TRUE(en2->holds(g("::ffff:192.168.200.1")));
  const GidTable* t = table_of(m, "rdma_en2");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->port().state, PortState::active);
  ASSERT_NE(t->find(1), nullptr);
  EXPECT_EQ(t->find(1)->gid, g("::ffff:192.168.200.1"));
  bool route = false;
  for (const auto& r : m.routes)
    route = route || (r.destination == v4("192.168.200.0", 30) && r.netif == "en2");
  EXPECT_TRUE(route);
}

TEST(DarwinToolsScenarios, NoIpv4) {
  const Mac m = read_mac("mac-no-ipv4.bundle");
  expect_consistent("mac-no-ipv4.bundle", m);
  const HostInterface* en3 = find(m.interfaces, "en3");
  ASSERT_NE(en3, nullptr);
  EXPECT_TRUE(en3->up && en3->running);
  EXPECT_FALSE(en3->has_ipv4());
  EXPECT_EQ(en3->addresses, (std::vector<IfAddress>{{g("fe80::347c:94ff:fecd:45c4"), 64}}));
  const GidTable* t = table_of(m, "rdma_en3");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->size(), 1U);
  EXPECT_EQ(t->find(0)->gid, g("fe80::347c:94ff:fecd:45c4"));
}

TEST(DarwinToolsScenarios, BridgeMember) {
  const Mac m = read_mac("mac-bridge.bundle");
  expect_consistent("mac-bridge.bundle", m);
  const HostInterface* en2 = find(m.interfaces, "en2");
  const HostInterface* br = find(m.interfaces, "bridge0");
  ASSERT_TRUE(en2 != nullptr && br != nullptr);
  EXPECT_EQ(en2->bridge, "bridge0");
  EXPECT_TRUE(en2->addresses.empty());
  EXPECT_TRUE(br->holds(g("::ffff:192.168.200.1")));
  bool bridge_enabled = false;
  for (const auto& s : m.services) bridge_enabled = bridge_enabled || (s.device == "bridge0" && s.enabled);
  EXPECT_TRUE(bridge_enabled);
  const GidTable* t = table_of(m, "rdma_en2");
  ASSERT_NE(t, nullptr);
  for (const auto& e : *t) EXPECT_FALSE(e.gid.is_ipv4_mapped());
}

TEST(DarwinToolsScenarios, RdmaDisabled) {
  const Mac m = read_mac("mac-rdma-disabled.bundle");
  expect_consistent("mac-rdma-disabled.bundle", m);
  EXPECT_FALSE(m.rdma_enabled);
  EXPECT_TRUE(m.tables.empty());
  EXPECT_EQ(m.bundle.part("ibv_devinfo")->output, "");
  EXPECT_EQ(m.bundle.part("ibv_devinfo")->errors, "No IB devices found\n");
  EXPECT_EQ(m.bundle.part("ibv_devinfo")->exit_status, 255);
  EXPECT_EQ(thunderbolt_generation(m.thunderbolt), 5U);
}

TEST(DarwinToolsScenarios, Thunderbolt4Mac) {
  const Mac m = read_mac("mac-tb4.bundle");
  expect_consistent("mac-tb4.bundle", m);
  EXPECT_TRUE(m.rdma_enabled);
  EXPECT_TRUE(m.tables.empty());
  EXPECT_EQ(m.bundle.part("ibv_devinfo")->exit_status, 255);
  EXPECT_EQ(thunderbolt_generation(m.thunderbolt), 4U);
  EXPECT_TRUE(find(m.interfaces, "en2")->holds(g("::ffff:192.168.200.1")));
}

}  // namespace darwin_tools_test
}  // namespace gidpolicy::darwin
