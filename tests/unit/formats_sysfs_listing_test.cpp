// read_sysfs_listing: the sysfs tree as a host bundle lists it ("PATH:TEXT" lines, as
// gidpolicy-collect prints them) reads as the tree itself does, for every example table; and a
// listing that is not one of GID files is refused, naming its line.
#include <gidpolicy/formats/sysfs.hpp>

#include "example_tables.hpp"
#include "support/assert_ok.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gidpolicy {
namespace sysfs_listing_test {

namespace fs = std::filesystem;

// What the collector prints of a tree: every regular file's first line, "PATH:LINE", PATH
// relative to the root; files that cannot be read and empty ones are left out.
std::string listing_of(const fs::path& root) {
  std::vector<std::string> lines;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::follow_directory_symlink);
       it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file()) continue;
    std::ifstream f(it->path());
    std::string line;
    if (!std::getline(f, line) || line.empty()) continue;
    lines.push_back(fs::relative(it->path(), root).string() + ":" + line);
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(FormatsSysfsListing, EveryExampleTableReadsAsItsTreeDoes) {
  for (const auto& [name, table] : test::all_example_tables()) {
    if (table.port().link_layer.kind() == LinkLayer::Kind::thunderbolt) continue;  // no sysfs on a Mac
    std::string tmpl = (fs::temp_directory_path() / "gidpolicy-listing-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    const fs::path dir(tmpl);
    ASSERT_OK(formats::write_sysfs({table}, dir));
    const auto from_tree = VALUE_OR_FAIL(formats::read_sysfs(dir));
    const auto from_listing = VALUE_OR_FAIL(formats::read_sysfs_listing(listing_of(dir), name));
    EXPECT_EQ(from_listing, from_tree) << name;
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
}

TEST(FormatsSysfsListing, AbsolutePathsBelowTheClassDirectoryAreTheSameTree) {
  const auto t = VALUE_OR_FAIL(formats::read_sysfs_listing(
      "/sys/class/infiniband/rxe0/ports/1/state:4: ACTIVE\n"
      "/sys/class/infiniband/rxe0/ports/1/link_layer:Ethernet\n"
      "/sys/class/infiniband/rxe0/ports/1/gids/0:fe80:0000:0000:0000:0000:0000:0000:0001\n"
      "/sys/class/infiniband/rxe0/ports/1/gids/1:0000:0000:0000:0000:0000:ffff:0a00:0001\n"
      "/sys/class/infiniband/rxe0/ports/1/gid_attrs/types/1:RoCE v2\n"
      "/sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1:eth0\n",
      "l"));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].port().device, "rxe0");
  // Index 0's type was not listed (the collector leaves out what cannot be read): its GID is
  // kept, typed unknown, as read_sysfs keeps a non-zero GID whose type read fails.
  ASSERT_NE(t[0].find(0), nullptr);
  EXPECT_EQ(t[0].find(0)->type, GidType::unknown);
  ASSERT_NE(t[0].find(1), nullptr);
  EXPECT_EQ(t[0].find(1)->netdev, "eth0");
  EXPECT_EQ(t[0].find(1)->type, GidType::roce_v2);
}

TEST(FormatsSysfsListing, AListingOfAnythingElseIsRefusedNamingItsLine) {
  const auto error = [](const std::string& text) {
    auto r = formats::read_sysfs_listing(text, "part sysfs_gids");
    return r ? std::string("(no error)") : r.error().detail;
  };
  EXPECT_NE(
      error("mlx5_0/ports/1/state:4: ACTIVE\nno colon here\n").find("part sysfs_gids:2: expected PATH:VALUE"),
      std::string::npos);
  EXPECT_NE(error("../../etc/shadow:root\n").find("part sysfs_gids:1: expected a path DEVICE/ports/PORT"),
            std::string::npos);
  EXPECT_NE(error("mlx5_0/ports/1/device/uevent:x\n").find("expected a path"), std::string::npos);
  EXPECT_NE(error("mlx5_0/ports/x/state:4: ACTIVE\n").find("expected a path"), std::string::npos);
  EXPECT_NE(error("bad\x01name/ports/1/state:4: ACTIVE\n").find("device name"), std::string::npos);
  std::string page = "mlx5_0/ports/1/state:4: ACTIVE\n";
  for (int i = 0; i < 300; ++i) page += "mlx5_0/ports/1/state:" + std::string(16, 'x') + "\n";
  EXPECT_NE(error(page).find("at most one page"), std::string::npos);
  EXPECT_NE(error(std::string(formats::kMaxSysfsListingBytes + 1, 'x')).find("bytes of sysfs listing"),
            std::string::npos);
  // A port without its state file is read_sysfs's error, naming the file.
  EXPECT_NE(error("mlx5_0/ports/1/link_layer:Ethernet\n").find("/sys/class/infiniband/mlx5_0/ports/1/state"),
            std::string::npos);
}

}  // namespace sysfs_listing_test
}  // namespace gidpolicy
