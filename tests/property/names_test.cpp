// Device and netdev names: whatever name a reader accepts, every writer
// writes a text or tree that reads back to the same tables (each format's view), and a name
// one reader refuses is refused by the others for the same reason (one rule, text.hpp).
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/formats/show_gids.hpp>
#include <gidpolicy/formats/sysfs.hpp>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include "support/assert_ok.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>

namespace gidpolicy {
namespace {

namespace fs = std::filesystem;

// Names as a hostile paste has them: short and long, with controls, spaces, '/', ':' and '.'.
rc::Gen<std::string> gen_name() {
  return rc::gen::oneOf(
      rc::gen::element<std::string>("mlx5_0", "eth0", "bond0.100", "a", ".", "..", "", "rocep1s0f0",
                                    std::string(15, 'n'), std::string(16, 'n'), std::string(63, 'd'),
                                    std::string(64, 'd'), "1em\r\r\r", "a\x0b", "e th0", "a/b", "eth0:1"),
      rc::gen::container<std::string>(rc::gen::inRange<char>(0, 127)),
      rc::gen::container<std::string>(rc::gen::element('a', 'Z', '0', '-', '_', '.', ':', '/', ' ', '\t',
                                                       '\r', '\n', '\x0b', '\x7f', '@')));
}

struct Tree {
  fs::path path;
  Tree() {
    std::string tmpl = (fs::temp_directory_path() / "gidpolicy-names-XXXXXX").string();
    path = ::mkdtemp(tmpl.data()) ? fs::path(tmpl) : fs::path();
  }
  ~Tree() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  Tree(const Tree&) = delete;
  Tree& operator=(const Tree&) = delete;
};

RC_GTEST_PROP(Names, prop_every_writer_reads_back_any_accepted_name, ()) {
  const std::string device = *gen_name();
  const std::string netdev = *gen_name();
  nlohmann::ordered_json doc = {
      {"schema", "gidpolicy.tables"},
      {"version", 1},
      {"ports",
       {{{"device", device},
         {"port", 1},
         {"link_layer", "ethernet"},
         {"gid_tbl_len", 8},
         {"entries",
          {{{"index", 2}, {"gid", "::ffff:10.0.0.2"}, {"type", "roce_v2"}, {"netdev", netdev}},
           {{"index", 3}, {"gid", "fe80::1:2"}, {"type", "roce_v1"}, {"netdev", netdev}}}}}}}};
  auto tables = formats::read_json(doc.dump(), "names.json");
  if (!tables) {
    // Refused for its name, naming which one.
    const std::string& d = tables.error().detail;
    RC_ASSERT(d.find("device name") != std::string::npos || d.find("netdev name") != std::string::npos);
    return;
  }
  const auto& ts = tables.value();
  RC_ASSERT(VALUE_OR_FAIL(formats::read_json(formats::write_json(ts), "j")) == ts);
  auto devinfo = formats::read_devinfo(formats::write_devinfo(ts), "d");
  if (!devinfo) RC_FAIL(devinfo.error().what());
  RC_ASSERT(devinfo.value() == formats::devinfo_view(ts));
  auto show = formats::read_show_gids(formats::write_show_gids(ts), "s");
  if (!show) RC_FAIL(show.error().what());
  RC_ASSERT(show.value() == formats::show_gids_view(ts));
  Tree tree;
  RC_ASSERT(formats::write_sysfs(ts, tree.path).has_value());
  auto sysfs = formats::read_sysfs(tree.path);
  if (!sysfs) RC_FAIL(sysfs.error().what());
  RC_ASSERT(sysfs.value() == formats::sysfs_view(ts));
}

}  // namespace
}  // namespace gidpolicy
