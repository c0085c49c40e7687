// bundle.hpp: the collector's framing read back exactly (and every malformed frame refused with
// its line), the Linux parts read into the doctor's input (sysfs listing, ip -j addr/route, the
// environment), the causes of no device, and the bundle's routing table as a RouteSource. The
// bundles under tests/data/bundle/ are gidpolicy-collect's output on fake hosts made from the
// public tables of examples/tables (docs/bundle.md says which), some edited as the names say.
#include <gidpolicy/bundle.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace gidpolicy {
namespace bundle_test {

using test::test_data_dir;

std::string slurp(const std::string& name) {
  std::ifstream f(test_data_dir() / "bundle" / name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Bundle framed(const std::string& text) { return VALUE_OR_FAIL(parse_bundle(text, "t.bundle")); }

std::string error_of(const std::string& text) {
  auto b = parse_bundle(text, "t.bundle");
  return b ? std::string("(no error)") : b.error().detail;
}

const std::string kHead =
    "# gidpolicy-collect 1\n# host: h1\n# system: Linux 6.1.0 x86_64\n# date: 2026-12-07T00:00:00Z\n";

TEST(BundleFrame, ReadsTheHeaderAndEachPartWithItsErrorsAndStatus) {
  const Bundle b =
      framed(kHead +
             "=== begin os_release: cat /etc/os-release\nPRETTY_NAME=\"X\"\n=== end os_release: exit 0\n"
             "=== begin rdma_link: rdma -j link\n=== stderr rdma_link\nsh: rdma: not found\n"
             "=== end rdma_link: exit 127\n");
  EXPECT_EQ(b.version, 1u);
  EXPECT_EQ(b.host, "h1");
  EXPECT_EQ(b.system, "Linux 6.1.0 x86_64");
  EXPECT_EQ(b.date, "2026-12-07T00:00:00Z");
  ASSERT_EQ(b.parts.size(), 2u);
  EXPECT_EQ(b.parts[0].name, "os_release");
  EXPECT_EQ(b.parts[0].command, "cat /etc/os-release");
  EXPECT_EQ(b.parts[0].output, "PRETTY_NAME=\"X\"\n");
  EXPECT_EQ(b.parts[0].line, 5u);
  EXPECT_TRUE(b.parts[0].ran());
  EXPECT_EQ(b.parts[1].output, "");
  EXPECT_EQ(b.parts[1].errors, "sh: rdma: not found\n");
  EXPECT_EQ(b.parts[1].exit_status, 127);
  EXPECT_EQ(b.parts[1].failure(), "exit 127: sh: rdma: not found");
  EXPECT_EQ(b.platform(), Platform::linux_kernel);
}

TEST(BundleFrame, TakesBackTheSpaceTheCollectorPutBeforeAnOutputLineStartingWithThreeEquals) {
  // The collector writes " === end x: exit 0" for an output line "=== end x: exit 0" and
  // "   ===" for "  ===": nothing a program prints can end its part early.
  const Bundle b = framed(kHead + "=== begin x: echo\n === end x: exit 0\n   ===\n=== end x: exit 0\n");
  ASSERT_EQ(b.parts.size(), 1u);
  EXPECT_EQ(b.parts[0].output, "=== end x: exit 0\n  ===\n");
}

TEST(BundleFrame, APastedBundleKeepsItsMarkdownFenceAndCarriageReturns) {
  const Bundle b = framed("\n```\r\n" + kHead + "=== begin x: echo\r\nhi\r\n=== end x: exit 0\r\n```\n");
  ASSERT_EQ(b.parts.size(), 1u);
  EXPECT_EQ(b.parts[0].output, "hi\n");
}

TEST(BundleFrame, EveryMalformedFrameIsRefusedNamingItsLine) {
  EXPECT_EQ(
      error_of("hello\n"),
      "t.bundle:1: expected the bundle's first line '# gidpolicy-collect 1' (written by gidpolicy-collect), "
      "found \"hello\"");
  EXPECT_NE(error_of("# gidpolicy-collect 2\n").find("t.bundle:1: bundle version 2 is newer"),
            std::string::npos);
  EXPECT_NE(error_of("# gidpolicy-collect x\n").find("t.bundle:1: expected a version number"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + "stray\n").find("t.bundle:5: text outside any part"), std::string::npos);
  EXPECT_NE(error_of(kHead + "=== begin a: x\n").find("part a (line 5) has no end line"), std::string::npos);
  EXPECT_NE(error_of(kHead + "=== begin a: x\n=== begin b: y\n")
                .find("t.bundle:6: part a (line 5) has no end line"),
            std::string::npos);
  EXPECT_NE(
      error_of(kHead + "=== begin a: x\n=== end b: exit 0\n").find("t.bundle:6: expected the end of part a"),
      std::string::npos);
  EXPECT_NE(error_of(kHead + "=== begin a: x\n=== end a: exit 0\n=== begin a: x\n=== end a: exit 0\n")
                .find("t.bundle:7: part a appears twice"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + "=== begin a: x\n=== end a: exit 256\n")
                .find("t.bundle:6: expected '=== end a: exit N'"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + "=== begin A/../b: x\n").find("t.bundle:5: expected '=== begin NAME: COMMAND'"),
            std::string::npos);
  EXPECT_NE(error_of(kHead + "=== end a: exit 0\n").find("t.bundle:5: no part is open"), std::string::npos);
  EXPECT_NE(error_of(kHead + "=== begin a: x\n=== stderr a\n=== stderr a\n").find("a second stderr line"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("# gidpolicy-collect 1\n\0\n", 24)).find("NUL byte"), std::string::npos);
  EXPECT_NE(error_of("").find("empty: not a bundle"), std::string::npos);
}

TEST(BundleFrame, SizeAndPartCountAreBounded) {
  std::string many = kHead;
  for (std::size_t i = 0; i <= kMaxBundleParts; ++i)
    many += "=== begin p" + std::to_string(i) + ": x\n=== end p" + std::to_string(i) + ": exit 0\n";
  EXPECT_NE(error_of(many).find("more than 64 parts"), std::string::npos);
  const std::string big(kMaxBundleBytes + 1, '#');
  EXPECT_NE(error_of(big).find("a bundle is at most"), std::string::npos);
}

TEST(BundleHostLinux, AReadyHostFromItsSysfsListingAndIpJson) {
  const Bundle b = framed(slurp("linux-ready.bundle"));
  ASSERT_OK_AND_ASSIGN(const BundleHost h, read_bundle_host(b));
  EXPECT_EQ(h.platform, Platform::linux_kernel);
  EXPECT_EQ(h.host, "gpu-node-07");
  EXPECT_EQ(h.system, "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(h.tables_from, "sysfs_gids");
  ASSERT_EQ(h.tables.size(), 2u);
  EXPECT_EQ(h.tables[0].port().device, "mlx5_0");
  const GidEntry* e = h.tables[0].find(7);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->netdev, "net1");  // the sysfs ndevs name it; ibv_devinfo would not
  EXPECT_EQ(e->gid.to_string(), "::ffff:10.152.0.12");
  EXPECT_EQ(e->type, GidType::roce_v2);
  ASSERT_TRUE(h.interfaces_known);
  const auto net1 = std::find_if(h.interfaces.begin(), h.interfaces.end(),
                                 [](const HostInterface& i) { return i.name == "net1"; });
  ASSERT_NE(net1, h.interfaces.end());
  EXPECT_TRUE(net1->up);
  EXPECT_TRUE(net1->running);
  EXPECT_TRUE(net1->holds(VALUE_OR_FAIL(Gid::parse("::ffff:10.152.0.12"))));
  EXPECT_FALSE(h.no_device);
  const DoctorReport r = examine(doctor_input(h));
  EXPECT_TRUE(r.ready()) << (r.findings.empty() ? "" : r.findings.front().text);
}

TEST(BundleHostLinux, APinInTheBundlesEnvironmentIsJudgedNotThisProcesss) {
  const Bundle b = framed(slurp("linux-stale-pin.bundle"));
  ASSERT_OK_AND_ASSIGN(const BundleHost h, read_bundle_host(b));
  const auto pin = std::find_if(h.environment.begin(), h.environment.end(),
                                [](const auto& v) { return v.first == "NCCL_IB_GID_INDEX"; });
  ASSERT_NE(pin, h.environment.end());
  EXPECT_EQ(pin->second, "3");
  const DoctorInput in = doctor_input(h);
  ASSERT_EQ(in.pins.size(), 1u);  // NCCL_SOCKET_IFNAME is collected, but steers no GID
  const DoctorReport r = examine(in);
  EXPECT_FALSE(r.ready());
  EXPECT_TRUE(std::any_of(r.findings.begin(), r.findings.end(), [](const Finding& f) {
    return f.code == FindingCode::stale_pin &&
           f.text.find("index 3 is empty on mlx5_0 port 1") != std::string::npos;
  }));
}

TEST(BundleHostLinux, ABridgeMemberIsReadFromIpsDetailsAndReported) {
  ASSERT_OK_AND_ASSIGN(const BundleHost h, read_bundle_host(framed(slurp("linux-bridge.bundle"))));
  const auto port = std::find_if(h.interfaces.begin(), h.interfaces.end(),
                                 [](const HostInterface& i) { return i.name == "ens1f0"; });
  ASSERT_NE(port, h.interfaces.end());
  EXPECT_EQ(port->bridge, "br0");
  const DoctorReport r = examine(doctor_input(h));
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().code, FindingCode::bridge_member);
}

TEST(BundleHostLinux, NoDeviceIsClassifiedFromWhatTheHostShowed) {
  ASSERT_OK_AND_ASSIGN(const BundleHost none, read_bundle_host(framed(slurp("linux-no-rdma.bundle"))));
  ASSERT_TRUE(none.no_device);
  EXPECT_EQ(none.no_device->cause, NoDevice::Cause::no_kernel_device);
  EXPECT_EQ(none.no_device->netdev, "eth0");  // soft-RoCE is proposed over an interface it has
  ASSERT_OK_AND_ASSIGN(const BundleHost prov,
                       read_bundle_host(framed(slurp("linux-provider-missing.bundle"))));
  ASSERT_TRUE(prov.no_device);
  EXPECT_EQ(prov.no_device->cause, NoDevice::Cause::provider_missing);
  EXPECT_EQ(prov.no_device->kernel_devices, (std::vector<std::string>{"mlx5_0", "mlx5_1"}));
  EXPECT_TRUE(prov.no_device->uverbs_nodes);
  const DoctorReport r = examine(doctor_input(prov));
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().code, FindingCode::verbs_provider_missing);
}

TEST(BundleHostLinux, AMissingToolIsANoteAndAMalformedOutputAnErrorNamingThePart) {
  ASSERT_OK_AND_ASSIGN(const BundleHost h,
                       read_bundle_host(framed(
                           kHead + "=== begin ip_addr: ip -j -d addr\n=== stderr ip_addr\nsh: ip: not found\n"
                                   "=== end ip_addr: exit 127\n")));
  EXPECT_FALSE(h.interfaces_known);
  EXPECT_EQ(h.interfaces_error, "the bundle's ip -j -d addr failed: exit 127: sh: ip: not found");
  auto bad = read_bundle_host(
      framed(kHead + "=== begin ip_addr: ip -j -d addr\n[{\"ifname\": 7}]\n=== end ip_addr: exit 0\n"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().detail.find(
                "t.bundle: part ip_addr (ip -j -d addr, its output from line 6): interface [0] ifname"),
            std::string::npos)
      << bad.error().detail;
  auto deep = read_bundle_host(framed(kHead + "=== begin ip_addr: ip -j -d addr\n" + std::string(40, '[') +
                                      std::string(40, ']') + "\n=== end ip_addr: exit 0\n"));
  ASSERT_FALSE(deep);
  EXPECT_NE(deep.error().detail.find("nested deeper than 32 levels"), std::string::npos)
      << deep.error().detail;
  auto garbage = read_bundle_host(
      framed(kHead + "=== begin ip_route: ip -j route\nnot json\n=== end ip_route: exit 0\n"));
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().detail.find("part ip_route"), std::string::npos);
  auto listing = read_bundle_host(framed(
      kHead + "=== begin sysfs_gids: sysfs_gids\n../../etc/passwd:root\n=== end sysfs_gids: exit 0\n"));
  ASSERT_FALSE(listing);
  EXPECT_NE(listing.error().detail.find("part sysfs_gids"), std::string::npos);
  EXPECT_NE(listing.error().detail.find("expected a path DEVICE/ports/PORT"), std::string::npos);
  auto env = read_bundle_host(
      framed(kHead + "=== begin environment: rdma_variables\nNOT A VARIABLE\n=== end environment: exit 0\n"));
  ASSERT_FALSE(env);
  EXPECT_NE(env.error().detail.find("line 1: expected NAME=VALUE"), std::string::npos);
}

TEST(BundleRoutesTest, TheLongestPrefixOfThePeersFamilyWithItsSourceAndType) {
  BundleHost h;
  h.interfaces_known = true;
  h.routes_known = true;
  HostInterface eth;
  eth.name = "eth0";
  eth.ifindex = 2;
  eth.addresses = {{VALUE_OR_FAIL(Gid::parse("::ffff:10.0.0.5")), 24}};
  h.interfaces = {eth};
  const auto v4 = [](const char* a, unsigned len) {
    return IfAddress{VALUE_OR_FAIL(PeerAddress::parse(a)).address, len};
  };
  h.routes.push_back({v4("0.0.0.0", 0), true, "eth0", std::nullopt,
                      VALUE_OR_FAIL(Gid::parse("::ffff:10.0.0.1")), RouteType::unicast});
  h.routes.push_back({v4("10.0.0.0", 24), true, "eth0", std::nullopt, std::nullopt, RouteType::unicast});
  h.routes.push_back({v4("10.9.0.0", 16), true, "", std::nullopt, std::nullopt, RouteType::blackhole});
  BundleRoutes routes(h);
  ASSERT_OK_AND_ASSIGN(const Route near, routes.route_to(VALUE_OR_FAIL(PeerAddress::parse("10.0.0.7"))));
  EXPECT_EQ(near.netdev, "eth0");
  EXPECT_EQ(near.ifindex, 2u);
  ASSERT_TRUE(near.source);
  EXPECT_EQ(near.source->to_string(), "::ffff:10.0.0.5");  // the interface's address: no prefsrc given
  ASSERT_OK_AND_ASSIGN(const Route hole, routes.route_to(VALUE_OR_FAIL(PeerAddress::parse("10.9.1.1"))));
  EXPECT_EQ(hole.type, RouteType::blackhole);
  ASSERT_OK_AND_ASSIGN(const Route far, routes.route_to(VALUE_OR_FAIL(PeerAddress::parse("192.0.2.9"))));
  EXPECT_EQ(far.netdev, "eth0");  // the default route
  auto v6 = routes.route_to(VALUE_OR_FAIL(PeerAddress::parse("fd00::9")));
  ASSERT_FALSE(v6);  // no IPv6 route at all: an IPv4 default does not cover it
  EXPECT_EQ(v6.error().code, errc::no_route);
}

// The Mac scenarios (tests/data/bundle/mac-*.bundle, built from public macOS tool output:
// docs/bundle.md) judged whole: the cause each was made for, first, and nothing else blocking.
DoctorReport judged(const char* name) {
  auto host = read_bundle_host(framed(slurp(name)));
  if (!host) {
    ADD_FAILURE() << name << ": " << host.error().detail;
    return {};
  }
  EXPECT_EQ(host.value().platform, Platform::darwin) << name;
  return examine(doctor_input(host.value()));
}

std::vector<FindingCode> blocking(const DoctorReport& r) {
  std::vector<FindingCode> out;
  for (const Finding& f : r.findings)
    if (f.severity == Severity::blocker) out.push_back(f.code);
  return out;
}

TEST(BundleHostMac, AReadyMacIsReadyItsUncabledPortsNotes) {
  ASSERT_OK_AND_ASSIGN(const BundleHost h, read_bundle_host(framed(slurp("mac-ready.bundle"))));
  EXPECT_EQ(h.system, "macOS 26.2 (25C56)");
  EXPECT_EQ(h.release, "26.2");
  EXPECT_EQ(h.rdma_release, true);
  EXPECT_EQ(h.rdma_enabled, true);
  EXPECT_EQ(h.thunderbolt_generation, 5u);
  EXPECT_TRUE(h.routes_known);
  EXPECT_EQ(h.tables_from, "ibv_devinfo");
  EXPECT_FALSE(h.thunderbolt_interfaces.empty());
  const DoctorReport r = examine(doctor_input(h));
  EXPECT_TRUE(r.ready()) << (r.findings.empty() ? "" : r.findings.front().text);
  for (const Finding& f : r.findings) EXPECT_EQ(f.code, FindingCode::port_down_unused) << f.text;
  // The peer at the other end of en2's /30 is routed by the Mac's own table, out of en2.
  BundleRoutes routes(h);
  ASSERT_OK_AND_ASSIGN(const Route to_peer,
                       routes.route_to(VALUE_OR_FAIL(PeerAddress::parse("192.168.200.2"))));
  EXPECT_EQ(to_peer.netdev, "en2");
}

TEST(BundleHostMac, EachScenarioReportsItsCause) {
  EXPECT_EQ(blocking(judged("mac-no-ipv4.bundle")), std::vector<FindingCode>{FindingCode::no_ipv4});
  EXPECT_EQ(blocking(judged("mac-bridge.bundle")),
            (std::vector<FindingCode>{FindingCode::bridge_member, FindingCode::no_ipv4}));
  EXPECT_EQ(blocking(judged("mac-rdma-disabled.bundle")),
            std::vector<FindingCode>{FindingCode::rdma_disabled});
  const DoctorReport tb4 = judged("mac-tb4.bundle");
  ASSERT_EQ(blocking(tb4), std::vector<FindingCode>{FindingCode::no_rdma_device});
  EXPECT_NE(tb4.findings.front().text.find("system_profiler reports Thunderbolt 4"), std::string::npos)
      << tb4.findings.front().text;
}

TEST(BundleHostMac, AReleaseBeforeRdmaAndAFailedToolAreSaid) {
  std::string text = slurp("mac-tb4.bundle");
  const std::size_t at = text.find("ProductVersion:");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, text.find('\n', at) - at, "ProductVersion:\t\t15.7.1");
  ASSERT_OK_AND_ASSIGN(const BundleHost old, read_bundle_host(framed(text)));
  EXPECT_EQ(old.rdma_release, false);
  const DoctorReport r = examine(doctor_input(old));
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().code, FindingCode::macos_without_rdma);
  EXPECT_EQ(r.findings.front().text, "macOS 15.7.1 has no RDMA over Thunderbolt: it came with macOS 26.2");
  // ifconfig that did not run: the interfaces are unknown, said with the part's failure.
  ASSERT_OK_AND_ASSIGN(const BundleHost no_if,
                       read_bundle_host(framed("# gidpolicy-collect 1\n# system: Darwin 25.2.0 arm64\n"
                                               "=== begin ifconfig: ifconfig -a\n=== stderr ifconfig\n"
                                               "sh: ifconfig: not found\n=== end ifconfig: exit 127\n")));
  EXPECT_FALSE(no_if.interfaces_known);
  EXPECT_EQ(no_if.interfaces_error, "the bundle's ifconfig -a failed: exit 127: sh: ifconfig: not found");
  EXPECT_EQ(no_if.rdma_state_error, "the bundle has no rdma_ctl part");
}

}  // namespace bundle_test
}  // namespace gidpolicy
