// write_sysfs is bounded in files and bytes, checked before its first file, and
// sysfs_footprint() counts exactly what it writes.
#include <gidpolicy/formats/sysfs.hpp>

#include "support/assert_ok.hpp"
#include "support/gid_literals.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace gidpolicy {
namespace {

namespace fs = std::filesystem;

fs::path bounds_dir(const std::string& name) {
  fs::path p =
      fs::temp_directory_path() / ("gidpolicy-sysfs-bounds-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  return p;
}

GidTable bounds_port(std::string device, std::uint32_t number, std::uint32_t len,
                     std::vector<GidEntry> entries) {
  PortInfo p;
  p.device = std::move(device);
  p.port = number;
  p.state = PortState::active;
  p.link_layer = LinkLayer::ethernet();
  p.gid_tbl_len = len;
  return GidTable::make(p, std::move(entries)).value();
}

/// Files (regular files and links) and content bytes under `root`, as written.
formats::SysfsFootprint count_tree(const fs::path& root) {
  formats::SysfsFootprint f;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const auto st = it->symlink_status();
    if (fs::is_directory(st)) {
      ++f.directories;
    } else {
      ++f.files;
      if (fs::is_regular_file(st)) f.bytes += fs::file_size(it->path());
    }
  }
  return f;
}

TEST(SysfsBounds, TheFootprintIsWhatIsWritten) {
  const std::vector<GidTable> tables{
      bounds_port("mlx5_0", 1, 8,
                  {GidEntry::valid(0, G("fe80::1"), GidType::roce_v1, "eth0"),
                   GidEntry::valid(1, G("::ffff:10.0.0.1"), GidType::roce_v2, "eth0"),
                   GidEntry::valid(2, G("::ffff:10.0.0.2")),  // no type: no types/ file
                   GidEntry::unreadable(3, std::make_error_code(std::errc::io_error)), GidEntry::empty(4)}),
      bounds_port("mlx5_1", 1, 3, {GidEntry::valid(0, G("fe80::2"), GidType::roce_v2)})};
  const fs::path root = bounds_dir("footprint");
  ASSERT_TRUE(formats::write_sysfs(tables, root).has_value());
  const auto want = formats::sysfs_footprint(tables);
  const auto have = count_tree(root);
  EXPECT_EQ(want.files, have.files);
  EXPECT_EQ(want.bytes, have.bytes);
  fs::remove_all(root);
  EXPECT_EQ(want.files, (3u + 8u + 2u + 2u) + (3u + 3u + 1u));  // attributes, slots, types, ndevs
}

// A 515-byte document of two ports with gid_tbl_len 65536 asked for 131,078 files (515 MB on
// disk). Refused with the count and the limit, and nothing is created, not even the root.
TEST(SysfsBounds, ATreeAboveTheLimitIsRefusedBeforeAnyFile) {
  const std::vector<GidTable> tables{bounds_port("a", 1, 65536, {}), bounds_port("a", 2, 65536, {})};
  EXPECT_EQ(formats::sysfs_footprint(tables).files, 131078u);
  const fs::path root = bounds_dir("refused");
  auto r = formats::write_sysfs(tables, root);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error(), errc::invalid_argument);
  EXPECT_NE(r.error().what().find("131078 files"), std::string::npos) << r.error().what();
  EXPECT_NE(r.error().what().find("limit of 65536 files"), std::string::npos) << r.error().what();
  EXPECT_FALSE(fs::exists(root));
  // The byte bound likewise.
  formats::SysfsWriteOptions small;
  small.max_bytes = 100;
  auto bytes = formats::write_sysfs({bounds_port("a", 1, 4, {})}, root, small);
  ASSERT_FALSE(bytes.has_value());
  EXPECT_NE(bytes.error().what().find("limit of 100 bytes"), std::string::npos) << bytes.error().what();
  EXPECT_FALSE(fs::exists(root));
  // Raised limits write the tree.
  formats::SysfsWriteOptions big;
  big.max_files = 200'000;
  ASSERT_TRUE(formats::check_sysfs_tree(tables, big).has_value());
}

}  // namespace
}  // namespace gidpolicy
