// sysfs reader and writer: the committed fixture (symlinked devices, empty slots whose type
// cannot be read, an old kernel without gid_attrs, an IB port) and trees built per test.
#include <gidpolicy/formats/sysfs.hpp>

#include "support/assert_ok.hpp"
#include "support/files.hpp"
#include "support/gid_literals.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

namespace gidpolicy {
namespace {

namespace fs = std::filesystem;
using formats::read_sysfs;
using formats::write_sysfs;

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gidpolicy-sysfs-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data()) ? fs::path(tmpl) : fs::path();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

void expect_sysfs_entry(const GidTable& t, std::uint32_t index, const char* gid, GidType type,
                        const char* netdev) {
  const GidEntry* e = t.find(index);
  ASSERT_NE(e, nullptr) << t.port().device << " index " << index;
  EXPECT_EQ(e->state, EntryState::valid);
  EXPECT_EQ(e->gid, G(gid)) << "index " << index;
  EXPECT_EQ(e->type, type) << "index " << index;
  EXPECT_EQ(e->netdev, netdev) << "index " << index;
}

TEST(FormatsSysfs, ReadsTheFixtureWithTheKernelsQuirks) {
  auto r = read_sysfs(test::test_data_dir() / "sysfs" / "class" / "infiniband");
  ASSERT_OK(r);
  const auto& tables = r.value();
  ASSERT_EQ(tables.size(), 4u);  // devices by name, ports by number

  const GidTable& ib = tables[0];
  EXPECT_EQ(ib.port().device, "ibp0s4");
  EXPECT_EQ(ib.port().link_layer, LinkLayer::infiniband());
  EXPECT_EQ(ib.port().lid, 0x1cu);
  EXPECT_EQ(ib.port().gid_tbl_len, 4u);
  ASSERT_EQ(ib.size(), 1u);
  expect_sysfs_entry(ib, 0, "fe80::2:c903:10:a1b1", GidType::ib, "");  // "IB/RoCE v1" on InfiniBand

  const GidTable& old = tables[1];
  EXPECT_EQ(old.port().device, "mlx4_0");
  ASSERT_EQ(old.size(), 2u);
  // No gid_attrs/: an old kernel, every GID IB/RoCE v1, which on Ethernet is RoCE v1.
  expect_sysfs_entry(old, 0, "fe80::202:c9ff:fe00:1", GidType::roce_v1, "");
  expect_sysfs_entry(old, 1, "::ffff:192.168.1.5", GidType::roce_v1, "");

  const GidTable& pod = tables[2];
  EXPECT_EQ(pod.port().device, "mlx5_0");
  EXPECT_EQ(pod.port().port, 1u);
  EXPECT_EQ(pod.port().state, PortState::active);
  EXPECT_EQ(pod.port().link_layer, LinkLayer::ethernet());
  EXPECT_EQ(pod.port().gid_tbl_len, 8u);
  EXPECT_EQ(pod.holes(), Holes::empty);
  ASSERT_EQ(pod.size(), 4u);
  for (std::uint32_t i = 0; i < 4; ++i)
    EXPECT_EQ(pod.find(i), nullptr) << "zeros with an unreadable type: empty";
  expect_sysfs_entry(pod, 4, "fe80::a4ed:ccff:fe8b:1994", GidType::roce_v1, "net1");
  expect_sysfs_entry(pod, 5, "fe80::a4ed:ccff:fe8b:1994", GidType::roce_v2, "net1");
  expect_sysfs_entry(pod, 6, "::ffff:10.152.0.12", GidType::roce_v1, "net1");
  expect_sysfs_entry(pod, 7, "::ffff:10.152.0.12", GidType::roce_v2, "net1");

  const GidTable& down = tables[3];
  EXPECT_EQ(down.port().port, 2u);
  EXPECT_EQ(down.port().state, PortState::down);
  EXPECT_EQ(down.size(), 0u);
  EXPECT_EQ(down.port().gid_tbl_len, 4u);
}

TEST(FormatsSysfs, ReadsOneDeviceDirectoryGivenDirectly) {
  auto r = read_sysfs(test::test_data_dir() / "sysfs" / "class" / "infiniband" / "mlx5_0");
  ASSERT_OK(r);
  ASSERT_EQ(r.value().size(), 2u);
  EXPECT_EQ(r.value()[0].port().device, "mlx5_0");
}

TEST(FormatsSysfs, TypeUnreadableForAReadFailureNotOnlyAMissingFile) {
  // A directory where the type file should be: open() works and read() fails (EISDIR), the
  // closest a plain file system gets to the kernel's EINVAL.
  TempDir tmp;
  fs::path port = tmp.path() / "rxe0" / "ports" / "1";
  put(port / "state", "4: ACTIVE\n");
  put(port / "link_layer", "Ethernet\n");
  put(port / "gids" / "0", "0000:0000:0000:0000:0000:0000:0000:0000\n");
  fs::create_directories(port / "gid_attrs" / "types" / "0");
  put(port / "gids" / "1", "0000:0000:0000:0000:0000:ffff:0a00:0001\n");
  fs::create_directories(port / "gid_attrs" / "types" / "1");
  put(port / "gid_attrs" / "ndevs" / "1", "eth0\n");
  // A stored zero GID whose type is readable is an entry, not an empty slot (ds4's index 4).
  put(port / "gids" / "2", "0000:0000:0000:0000:0000:0000:0000:0000\n");
  put(port / "gid_attrs" / "types" / "2", "RoCE v2\n");
  // A type the kernel may add later: unknown, not an error.
  put(port / "gids" / "3", "fe80:0000:0000:0000:0000:0000:0000:0003\n");
  put(port / "gid_attrs" / "types" / "3", "RoCE v3\n");
  auto r = read_sysfs(tmp.path());
  ASSERT_OK(r);
  const GidTable& t = r.value().at(0);
  EXPECT_EQ(t.find(0u), nullptr);
  expect_sysfs_entry(t, 1, "::ffff:10.0.0.1", GidType::unknown, "eth0");
  expect_sysfs_entry(t, 2, "::", GidType::roce_v2, "");
  expect_sysfs_entry(t, 3, "fe80::3", GidType::unknown, "");
}

TEST(FormatsSysfs, AnUnreadableGidIsAnUnreadableEntryWithItsErrno) {
  TempDir tmp;
  fs::path port = tmp.path() / "mlx5_0" / "ports" / "1";
  put(port / "state", "4: ACTIVE\n");
  put(port / "link_layer", "Ethernet\n");
  put(port / "gids" / "0", "fe80:0000:0000:0000:0000:0000:0000:0001\n");
  fs::create_directories(port / "gids" / "1");  // read() fails with EISDIR
  auto r = read_sysfs(tmp.path());
  ASSERT_OK(r);
  const GidEntry* e = r.value()[0].find(1u);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->state, EntryState::unreadable);
  EXPECT_EQ(e->read_error, std::errc::is_a_directory);
}

TEST(FormatsSysfs, WriteLaysOutTheKernelsFiles) {
  PortInfo p{.device = "mlx5_0",
             .port = 1,
             .state = PortState::active,
             .link_layer = LinkLayer::ethernet(),
             .gid_tbl_len = 4,
             .lid = 0};
  auto t = VALUE_OR_FAIL(
      GidTable::make(p, {GidEntry::valid(1, G("fe80::1"), GidType::roce_v2, "eth0"), GidEntry::empty(2)}));
  TempDir tmp;
  ASSERT_TRUE(write_sysfs({t}, tmp.path()));
  fs::path port = tmp.path() / "mlx5_0" / "ports" / "1";
  EXPECT_EQ(test::read_file(port / "state"), "4: ACTIVE\n");
  EXPECT_EQ(test::read_file(port / "link_layer"), "Ethernet\n");
  EXPECT_EQ(test::read_file(port / "gids" / "0"), "0000:0000:0000:0000:0000:0000:0000:0000\n");
  EXPECT_EQ(test::read_file(port / "gids" / "1"), "fe80:0000:0000:0000:0000:0000:0000:0001\n");
  EXPECT_EQ(test::read_file(port / "gids" / "3"), "0000:0000:0000:0000:0000:0000:0000:0000\n");
  EXPECT_FALSE(fs::exists(port / "gids" / "4"));
  EXPECT_EQ(test::read_file(port / "gid_attrs" / "types" / "1"), "RoCE v2\n");
  EXPECT_EQ(test::read_file(port / "gid_attrs" / "ndevs" / "1"), "eth0\n");
  EXPECT_FALSE(fs::exists(port / "gid_attrs" / "types" / "2")) << "an empty slot's type cannot be read";
  EXPECT_EQ(VALUE_OR_FAIL(read_sysfs(tmp.path())), formats::sysfs_view({t}));
}

TEST(FormatsSysfs, RateFileIsTheKernelsTextBothWays) {
  // The kernel's rate_show(): lanes x lane rate, "%d%s Gb/sec (%dX%s)".
  EXPECT_EQ(formats::sysfs_rate_text({.width = 2, .speed = 32}), "100 Gb/sec (4X EDR)");
  EXPECT_EQ(formats::sysfs_rate_text({.width = 1, .speed = 1}), "2.5 Gb/sec (1X SDR)");
  EXPECT_EQ(formats::sysfs_rate_text({.width = 2, .speed = 16}), "56 Gb/sec (4X FDR)");
  EXPECT_EQ(formats::sysfs_rate_text({.width = 8, .speed = 4}), "120 Gb/sec (12X QDR)");
  EXPECT_EQ(formats::sysfs_rate_text({.width = 16, .speed = 64}), "100 Gb/sec (2X HDR)");
  EXPECT_EQ(formats::sysfs_rate_text({.width = 3, .speed = 32}), std::nullopt);

  PortInfo p{.device = "mlx5_0", .port = 1, .link_layer = LinkLayer::ethernet(), .gid_tbl_len = 2};
  p.link_rate = LinkRate{.width = 2, .speed = 64};
  auto t = VALUE_OR_FAIL(GidTable::make(p, {GidEntry::valid(1, G("fe80::1"), GidType::roce_v2)}));
  TempDir tmp;
  ASSERT_TRUE(write_sysfs({t}, tmp.path()));
  const fs::path port = tmp.path() / "mlx5_0" / "ports" / "1";
  EXPECT_EQ(test::read_file(port / "rate"), "200 Gb/sec (4X HDR)\n");
  auto back = VALUE_OR_FAIL(read_sysfs(tmp.path()));
  EXPECT_EQ(back[0].port().link_rate, p.link_rate);
  EXPECT_EQ(back, formats::sysfs_view({t}));
  // A rate the kernel would not print for these names is a damaged tree, refused by file.
  for (const char* bad :
       {"100 Gb/sec (4X HDR)\n", "200 Gb/sec (4XHDR)\n", "fast\n", "200 Gb/sec (4X XDR)\n"}) {
    put(port / "rate", bad);
    auto r = read_sysfs(tmp.path());
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error(), errc::invalid_field);
    EXPECT_NE(r.error().what().find("rate:1: expected the kernel's rate text"), std::string::npos)
        << r.error().what();
  }
  // No rate file: the tree did not say.
  fs::remove(port / "rate");
  EXPECT_EQ(VALUE_OR_FAIL(read_sysfs(tmp.path()))[0].port().link_rate, std::nullopt);
}

TEST(FormatsSysfs, RejectsWhatIsNotASysfsTree) {
  TempDir tmp;
  auto none = read_sysfs(tmp.path());
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error(), errc::unknown_format);
  EXPECT_NE(none.error().what().find("expected a /sys/class/infiniband-like tree"), std::string::npos);

  auto missing = read_sysfs(tmp.path() / "nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), errc::io_error);

  fs::path port = tmp.path() / "mlx5_0" / "ports" / "1";
  put(port / "state", "ACTIVE\n");
  put(port / "link_layer", "Ethernet\n");
  fs::create_directories(port / "gids");
  auto bad_state = read_sysfs(tmp.path());
  ASSERT_FALSE(bad_state);
  EXPECT_EQ(bad_state.error(), errc::invalid_field);
  EXPECT_NE(bad_state.error().what().find("state:1: expected '<n>: <STATE>'"), std::string::npos)
      << bad_state.error().what();

  put(port / "state", "4: ACTIVE\n");
  put(port / "gids" / "0", "fe80:0000:00\n");  // a truncated copy of a tree
  auto bad_gid = read_sysfs(tmp.path());
  ASSERT_FALSE(bad_gid);
  EXPECT_EQ(bad_gid.error(), errc::parse_error);
  EXPECT_NE(bad_gid.error().what().find("gids/0:1: expected a GID"), std::string::npos)
      << bad_gid.error().what();

  put(port / "gids" / "0", "fe80:0000:0000:0000:0000:0000:0000:0001\n");
  put(port / "gids" / "README", "x");
  auto stray = read_sysfs(tmp.path());
  ASSERT_FALSE(stray);
  EXPECT_EQ(stray.error(), errc::invalid_field);

  fs::remove(port / "gids" / "README");
  fs::remove(port / "link_layer");
  auto no_ll = read_sysfs(tmp.path());
  ASSERT_FALSE(no_ll);
  EXPECT_EQ(no_ll.error(), errc::io_error);
  EXPECT_NE(no_ll.error().what().find("link_layer"), std::string::npos);
}

}  // namespace
}  // namespace gidpolicy
