// The mlx.distributed_config hostfile reader (fleet.hpp: parse_mlx_hostfile, read_device_file):
// MLX's own layout is read, every error names the file, line:column and field, and hostile
// input (sizes, depth, counts) is refused by a bound, not by exhausting memory.
#include <gidpolicy/fleet.hpp>

#include "support/files.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace gidpolicy::fleet {
namespace {

std::string hostfile_path() { return (test::test_data_dir() / "fleet" / "mlx-hostfile.json").string(); }

std::string error_of(std::string_view text, std::optional<std::size_t> hosts = std::nullopt) {
  auto r = parse_mlx_hostfile(text, "h.json", hosts);
  EXPECT_FALSE(r) << "accepted: " << text.substr(0, 200);
  return r ? std::string() : r.error().detail;
}

TEST(FleetHostfile, ReadsTheFileMlxWrites) {
  auto f = read_mlx_hostfile(hostfile_path());
  ASSERT_TRUE(f) << f.error().what();
  EXPECT_EQ(f.value().backend, "jaccl");
  ASSERT_EQ(f.value().hosts.size(), 4u);
  EXPECT_EQ(f.value().hosts[1].ssh, "m3-ultra-2");
  EXPECT_EQ(f.value().hosts[1].ips, std::vector<std::string>{"192.168.1.12"});
  const JacclDevices d = f.value().devices();
  ASSERT_EQ(d.ranks(), 4u);
  EXPECT_TRUE(d.names[0][0].empty());
  EXPECT_EQ(d.names[0][1], std::vector<std::string>{"rdma_en5"});
  EXPECT_EQ(d.names[3][2], std::vector<std::string>{"rdma_en5"});
  EXPECT_TRUE(d.valid_mesh());
}

TEST(FleetHostfile, DeviceFileReaderTakesEitherShapeAndGivesTheSameMatrix) {
  const auto devices = test::example_tables_dir().parent_path() / "fleet" / "jaccl" / "devices.json";
  auto a = read_device_file(devices.string(), 4);
  auto b = read_device_file(hostfile_path(), 4);
  ASSERT_TRUE(a) << a.error().what();
  ASSERT_TRUE(b) << b.error().what();
  EXPECT_EQ(a.value().names, b.value().names);
  auto wrong = read_device_file(hostfile_path(), 3);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().detail.find("4 hosts but 3 snapshots"), std::string::npos) << wrong.error().detail;
}

TEST(FleetHostfile, OlderBareArrayAndRingListsAreRead) {
  auto f = parse_mlx_hostfile(R"([{"ssh":"a","ips":["10.0.0.1"],"rdma":[null,["rdma_en3","rdma_en4"]]},
                                  {"ssh":"b","ips":["fe80::1%en3"],"rdma":[["rdma_en3","rdma_en4"],null]}])");
  ASSERT_TRUE(f) << f.error().what();
  EXPECT_EQ(f.value().backend, "");
  EXPECT_EQ(f.value().devices().names[0][1], (std::vector<std::string>{"rdma_en3", "rdma_en4"}));
  // A host with no "rdma" (the ring backend's hostfile) is an empty row.
  auto ring =
      parse_mlx_hostfile(R"({"backend":"ring","hosts":[{"ssh":"a","ips":["10.0.0.1"]},{"ssh":"b"}]})");
  ASSERT_TRUE(ring) << ring.error().what();
  EXPECT_TRUE(ring.value().devices().names[1][0].empty());
}

TEST(FleetHostfile, ErrorsNameLineColumnAndField) {
  EXPECT_EQ(error_of("{\"hosts\": [\n  {\"ssh\": \"a\", \"ips\": [\"10.0.0.300\"]}]}"),
            "h.json:2:24: hosts[0].ips[0]: \"10.0.0.300\" is not an IPv4 or IPv6 address");
  EXPECT_EQ(error_of("{\"hosts\": [{\"ssh\": \"a\", \"rdma\": [null, 7]}, {\"ssh\": \"b\"}]}"),
            "h.json:1:40: hosts[0].rdma[1]: expected null, a device name or an array of device names, found "
            "number");
  EXPECT_EQ(error_of("{\"hosts\": [{\"ips\": []}]}"),
            "h.json:1:12: hosts[0].ssh: missing: every host names the machine mlx.launch reaches");
  EXPECT_EQ(error_of("{\"backend\": \"jaccl\"}"),
            "h.json:1:2: hosts: missing: a hostfile lists its hosts under \"hosts\"");
  EXPECT_EQ(
      error_of("{\"hosts\": [{\"ssh\": \"a\", \"rdma\": [null]}, {\"ssh\": \"b\", \"rdma\": [null, null]}]}"),
      "h.json:1:33: hosts[0].rdma: has 1 entries; it needs one per host (2)");
  EXPECT_EQ(error_of("{\"hosts\": [{\"ssh\": \"a\", \"rdma\": [null, \"bad\\nname\"]}, {\"ssh\": \"b\"}]}"),
            "h.json:1:40: hosts[0].rdma[1]: device name \"bad\\x0aname\": byte 4 is 0x0a (names are "
            "printable ASCII without spaces)");
  // Syntax errors name the spot too.
  EXPECT_EQ(error_of("{\"hosts\": [{\"ssh\": \"a\",}]}"),
            "h.json:1:24: invalid JSON: expected a string, found '}'");
  EXPECT_EQ(error_of(""), "h.json: empty: expected an mlx.distributed_config hostfile");
  EXPECT_EQ(
      error_of("[[null, \"x\"]]"),
      "h.json:1:2: hosts[0]: expected a host object {\"ssh\": ..., \"ips\": [...], \"rdma\": [...]}, found "
      "array");
}

// A key given twice keeps its last value, as Python's json.loads (MLX's reader) keeps it: the
// two "ips" lists used to be concatenated, and "hosts" given twice was refused.
TEST(FleetHostfile, AKeyGivenTwiceKeepsItsLastValueAsPythonsJsonDoes) {
  auto f = parse_mlx_hostfile(
      "{\"hosts\": [{\"ssh\": \"a\", \"ips\": [\"10.0.0.1\"], \"rdma\": [null, \"rdma_en3\"],"
      " \"ips\": [\"10.0.0.2\"], \"rdma\": [null, [\"rdma_en4\"]], \"ssh\": \"b\"},"
      " {\"ssh\": \"c\"}]}",
      "h.json");
  ASSERT_TRUE(f) << f.error().what();
  ASSERT_EQ(f.value().hosts.size(), 2u);
  EXPECT_EQ(f.value().hosts[0].ssh, "b");
  EXPECT_EQ(f.value().hosts[0].ips, std::vector<std::string>{"10.0.0.2"});
  ASSERT_EQ(f.value().hosts[0].rdma.size(), 2u);
  EXPECT_EQ(f.value().hosts[0].rdma[1], std::vector<std::string>{"rdma_en4"});
  // The top level too: the earlier "hosts" is only JSON to Python (a bad host in it is not read).
  auto top = parse_mlx_hostfile(
      "{\"hosts\": [{\"no\": 1}], \"backend\": \"ring\", \"hosts\": [{\"ssh\": \"x\"}], \"backend\": "
      "\"jaccl\"}",
      "h.json");
  ASSERT_TRUE(top) << top.error().what();
  EXPECT_EQ(top.value().backend, "jaccl");
  ASSERT_EQ(top.value().hosts.size(), 1u);
  EXPECT_EQ(top.value().hosts[0].ssh, "x");
  // Keys are compared as Python compares them: after their escapes are decoded.
  auto escaped =
      parse_mlx_hostfile("[{\"ssh\": \"a\", \"ips\": [\"10.0.0.1\"], \"i\\u0070s\": []}]", "h.json");
  ASSERT_TRUE(escaped) << escaped.error().what();
  EXPECT_TRUE(escaped.value().hosts[0].ips.empty());
  // A value given earlier must still be JSON, as it must for Python.
  EXPECT_EQ(error_of("[{\"ssh\": \"a\", \"ips\": [01], \"ips\": []}]"),
            "h.json:1:24: invalid JSON: expected ',' or ']', found '1'");
}

// An IPv4 address has no scope: "10.0.0.1%en3" used to be accepted here and then dropped by the
// doctor's address parser without a word.
TEST(FleetHostfile, AScopedIpv4AddressIsRefusedNamingTheField) {
  EXPECT_EQ(error_of("{\"hosts\": [{\"ssh\": \"a\"},\n {\"ssh\": \"b\", \"ips\": [\"fe80::1%en3\", "
                     "\"10.0.0.1%en3\"]}]}"),
            "h.json:2:37: hosts[1].ips[1]: \"10.0.0.1%en3\": an IPv4 address has no scope (the '%' part); "
            "write the address alone");
  auto v6 = parse_mlx_hostfile("[{\"ssh\": \"a\", \"ips\": [\"fe80::1%en3\"]}]", "h.json");
  ASSERT_TRUE(v6) << v6.error().what();
}

TEST(FleetHostfile, HostileInputIsBounded) {
  // Depth: a skipped key nested far deeper than any hostfile.
  std::string deep = "{\"envs\": " + std::string(100000, '[') + std::string(100000, ']') + ", \"hosts\": []}";
  EXPECT_NE(error_of(deep).find("nested deeper"), std::string::npos);
  // Hosts: 4,097 are refused at the 4,097th, not after building them all.
  std::string many = "{\"hosts\": [";
  for (int i = 0; i < 4097; ++i) many += std::string(i ? "," : "") + "{\"ssh\":\"h\"}";
  many += "]}";
  EXPECT_NE(error_of(many).find("hosts[4096]: more than 4096 hosts"), std::string::npos);
  // Addresses per host, names per entry, the length of one field.
  std::string ips = "{\"hosts\": [{\"ssh\":\"a\",\"ips\":[";
  for (int i = 0; i < 65; ++i) ips += std::string(i ? "," : "") + "\"10.0.0.1\"";
  ips += "]}]}";
  EXPECT_NE(error_of(ips).find("hosts[0].ips[64]: more than 64 addresses"), std::string::npos);
  std::string names = "{\"hosts\": [{\"ssh\":\"a\",\"rdma\":[[";
  for (int i = 0; i < 17; ++i) names += std::string(i ? "," : "") + "\"rdma_en3\"";
  names += "]]}]}";
  EXPECT_NE(error_of(names).find("hosts[0].rdma[0][16]: more than 16 device names"), std::string::npos);
  EXPECT_NE(
      error_of("{\"hosts\": [{\"ssh\": \"" + std::string(300, 'a') + "\"}]}").find("longer than 255 bytes"),
      std::string::npos);
  // A file past the size bound is refused before it is read.
  // A name of this process's own: the dev and ASan suites may run at once.
  const auto big = std::filesystem::temp_directory_path() /
                   ("gidpolicy-hostfile-big." + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(big);
    out << "{\"hosts\": []," << std::string((16u << 20) + 1, ' ') << "}";
  }
  auto r = read_mlx_hostfile(big.string());
  std::filesystem::remove(big);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().detail.find("larger than 16777216 bytes"), std::string::npos) << r.error().detail;
}

}  // namespace
}  // namespace gidpolicy::fleet
