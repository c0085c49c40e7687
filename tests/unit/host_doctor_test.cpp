// host_doctor.hpp: the doctor's reads of this host. `rdma_ctl status` is a Mac's program, so its
// reader is given other programs in its place (echo, sleep, yes, false, a missing path), the way
// the live Mac path runs /usr/bin/rdma_ctl: every answer is a state or a reason, within the
// deadline and the output bound. The routes come from a RouteSource the test controls.
#include <gidpolicy/host_doctor.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gidpolicy {
// Named, not anonymous: the unit tests are a unity build, and other files have helpers of
// these names.
namespace host_doctor_test {

using std::chrono::milliseconds;
// Where the deadline is not what a test is about, it is a hang guard: a loaded machine may take
// longer than rdma_ctl's own 2 s to start /bin/echo, and that must not read as "did not answer".
constexpr milliseconds kGuard{60000};

TEST(HostDoctor, RdmaStateIsWhatTheProgramSaid) {
  DoctorInput on, off;
  read_rdma_state(on, {"/bin/echo", "enabled"}, kGuard);
  EXPECT_EQ(on.rdma_enabled, true);
  EXPECT_EQ(on.rdma_state_error, "");
  read_rdma_state(off, {"/bin/echo", "disabled"}, kGuard);
  EXPECT_EQ(off.rdma_enabled, false);
}

TEST(HostDoctor, RdmaStateThatCannotBeReadIsAReasonNeverAGuess) {
  struct Case {
    std::vector<std::string> command;
    const char* says;
  };
  const Case cases[] = {{{"/bin/echo", "Enabled"}, "not \"enabled\" or \"disabled\""},
                        {{"/bin/false"}, "exited 1"},
                        {{"/nonexistent/rdma_ctl", "status"}, "not installed here"},
                        {{"/usr/bin/yes", "enabled"}, "printed more than 4 KiB"},
                        {{}, "no program"}};
  for (const Case& c : cases) {
    DoctorInput in;
    read_rdma_state(in, c.command, kGuard);
    EXPECT_FALSE(in.rdma_enabled.has_value()) << c.says;
    EXPECT_NE(in.rdma_state_error.find(c.says), std::string::npos) << in.rdma_state_error;
  }
}

TEST(HostDoctor, ARdmaCtlThatHangsIsKilledAtItsDeadline) {
  DoctorInput in;
  const auto t0 = std::chrono::steady_clock::now();
  read_rdma_state(in, {"/bin/sleep", "30"}, milliseconds(300));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, std::chrono::seconds(60));  // a hang guard, not a timing: the kill is what is tested
  EXPECT_FALSE(in.rdma_enabled.has_value());
  EXPECT_NE(in.rdma_state_error.find("did not answer within 300 ms"), std::string::npos)
      << in.rdma_state_error;
}

class Routes final : public RouteSource {
 public:
  std::vector<PeerAddress> asked;
  result<std::vector<NetInterface>> interfaces() override { return std::vector<NetInterface>{}; }
  result<Route> route_to(const PeerAddress& p) override {
    asked.push_back(p);
    Route r;
    r.peer = p;
    r.netdev = "en5";
    return r;
  }
};

TEST(HostDoctor, PeersAreRoutedAfterTheirCheckAndRefusedOnesAreNotAsked) {
  DoctorInput in;
  in.peers.push_back({PeerAddress::parse("192.168.200.2").value(), "--peer"});
  in.peers.push_back({PeerAddress::parse("0.0.0.0").value(), "--peer"});
  Routes routes;
  route_peers(in, routes);
  ASSERT_EQ(routes.asked.size(), 1u);
  EXPECT_EQ(routes.asked[0], in.peers[0].address);
  ASSERT_TRUE(in.peers[0].route);
  EXPECT_EQ(in.peers[0].route.value().netdev, "en5");
  EXPECT_FALSE(in.peers[1].route);
}

TEST(HostDoctor, InterfacesOfThisNamespaceAreRead) {
  DoctorInput in;
  in.interfaces_known = false;
  read_host_interfaces(in);
  ASSERT_TRUE(in.interfaces_known) << in.interfaces_error;
  // Every namespace has its loopback; getifaddrs() lists it.
  bool lo = false;
  for (const HostInterface& i : in.interfaces) lo = lo || i.loopback;
  EXPECT_TRUE(lo);
}

// Which of the three layers is missing when no device is listed, from the errc and what the
// host's directories hold (given here as temporary ones in /sys/class/infiniband's and
// /dev/infiniband's place).
TEST(HostDoctor, NoDeviceIsClassifiedByTheErrorCodeAndTheKernelsDevices) {
  const std::filesystem::path root =
      std::filesystem::path(::testing::TempDir()) / ("no_device_" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  const std::string cls = (root / "infiniband").string(), dev = (root / "dev").string();
  const Error none(errc::no_devices, "ibv_get_device_list() found 0 devices");

  DoctorInput lib;
  ASSERT_TRUE(read_no_device(lib, Error(errc::library_unavailable, "dlopen: gone"), cls, dev));
  ASSERT_TRUE(lib.no_device);
  EXPECT_EQ(lib.no_device->cause, NoDevice::Cause::library_missing);
  EXPECT_EQ(lib.no_device->detail, "dlopen: gone");

  DoctorInput absent;  // no /sys/class/infiniband at all; an interface to name for soft-RoCE
  absent.interfaces.push_back(HostInterface{.name = "lo", .up = true, .loopback = true});
  absent.interfaces.push_back(HostInterface{.name = "down0", .up = false});
  HostInterface eth{.name = "eth1", .up = true};
  eth.addresses.push_back({Gid::ipv4_mapped(0x0a000001), 24});
  absent.interfaces.push_back(eth);
  ASSERT_TRUE(read_no_device(absent, none, cls, dev));
  EXPECT_EQ(absent.no_device->cause, NoDevice::Cause::no_kernel_device);
  EXPECT_EQ(absent.no_device->netdev, "eth1");

  std::filesystem::create_directories(cls);  // there, but empty
  DoctorInput empty;
  ASSERT_TRUE(read_no_device(empty, none, cls, dev));
  EXPECT_EQ(empty.no_device->cause, NoDevice::Cause::no_kernel_device);

  std::filesystem::create_directories(std::filesystem::path(cls) / "mlx5_0");
  DoctorInput kernel;
  ASSERT_TRUE(read_no_device(kernel, none, cls, dev));
  EXPECT_EQ(kernel.no_device->cause, NoDevice::Cause::provider_missing);
  EXPECT_EQ(kernel.no_device->kernel_devices, std::vector<std::string>{"mlx5_0"});
  EXPECT_FALSE(kernel.no_device->uverbs_nodes);
  std::filesystem::create_directories(dev);
  std::ofstream(std::filesystem::path(dev) / "uverbs0").put('\n');
  DoctorInput nodes;
  ASSERT_TRUE(read_no_device(nodes, none, cls, dev));
  EXPECT_TRUE(nodes.no_device->uverbs_nodes);

  // Any other failure is not a missing device: nothing is set, the caller reports it.
  DoctorInput other;
  EXPECT_FALSE(read_no_device(other, Error(errc::symbol_missing, "lacks ibv_query_gid"), cls, dev));
  EXPECT_FALSE(other.no_device);
  // macOS: rdma_ctl says why a Mac lists none; only a library that cannot load is said here.
  DoctorInput mac;
  mac.platform = Platform::darwin;
  EXPECT_TRUE(read_no_device(mac, none, cls, dev));
  EXPECT_FALSE(mac.no_device);
  std::filesystem::remove_all(root);
}

}  // namespace host_doctor_test
}  // namespace gidpolicy
