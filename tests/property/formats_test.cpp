// Properties of the table formats: write-then-read round trips for ibv_devinfo, show_gids,
// sysfs and JSON (each text format through detection too), no invented entries from a cut
// paste, and no crash on arbitrary text.
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/formats/show_gids.hpp>
#include <gidpolicy/formats/sysfs.hpp>

#include "support/assert_ok.hpp"
#include "support/families.hpp"
#include "support/generators.hpp"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

namespace gidpolicy {
namespace {

namespace fs = std::filesystem;
using formats::Format;

std::string show(const std::vector<GidTable>& ts) {
  std::ostringstream os;
  for (const auto& t : ts) os << test::show_table(t);
  return os.str();
}

// Tables as users have them (realistic families) and as generators can make them (anything),
// distinctly named, in an order that may interleave the ports of one device.
rc::Gen<std::vector<GidTable>> gen_tables() {
  return rc::gen::exec([] {
    std::vector<GidTable> ts = *rc::gen::oneOf(
        test::gen_table_set(4, 32), rc::gen::container<std::vector<GidTable>>(
                                        *rc::gen::inRange<std::size_t>(1, 4), test::gen_realistic_table()));
    std::vector<GidTable> out;
    for (std::size_t k = 0; k < ts.size(); ++k) {
      PortInfo p = ts[k].port();
      p.device = "dev" + std::to_string(k % 2);
      p.port = static_cast<std::uint32_t>(1 + k / 2);
      out.push_back(VALUE_OR_FAIL(GidTable::make(p, {ts[k].begin(), ts[k].end()}, ts[k].holes())));
    }
    if (*rc::gen::arbitrary<bool>()) std::reverse(out.begin(), out.end());
    return out;
  });
}

RC_GTEST_PROP(Formats, prop_devinfo_write_then_read_gives_the_devinfo_view, ()) {
  auto ts = *gen_tables();
  std::string text = formats::write_devinfo(ts);
  auto back = formats::read_devinfo(text, "written");
  if (!back) RC_FAIL(back.error().what() + "\n" + text);
  RC_LOG() << text << "\nexpected:\n" << show(formats::devinfo_view(ts)) << "read:\n" << show(back.value());
  RC_ASSERT(back.value() == formats::devinfo_view(ts));
}

RC_GTEST_PROP(Formats, prop_devinfo_view_is_what_the_text_can_hold, ()) {
  auto ts = *gen_tables();
  auto view = formats::devinfo_view(ts);
  // A table already in view form comes back exactly, and the view is a projection.
  RC_ASSERT(VALUE_OR_FAIL(formats::read_devinfo(formats::write_devinfo(view), "view")) == view);
  RC_ASSERT(formats::devinfo_view(view) == view);
}

// ibv_devinfo prints RoCE v2 GIDs through glibc's inet_ntop: the written line must be the
// text glibc gives for those bytes, the 8x4 form otherwise.
RC_GTEST_PROP(Formats, prop_devinfo_gid_text_is_what_rdma_core_prints, (const Gid& g, const GidType& type)) {
  RC_PRE(g.interface_id() != 0);
  RC_PRE(type != GidType::unknown);
  PortInfo p{.device = "mlx5_0", .port = 1, .link_layer = LinkLayer::ethernet()};
  auto t = VALUE_OR_FAIL(GidTable::make(p, {GidEntry::valid(7, g, type)}));
  std::string text = formats::write_devinfo({t});
  std::uint8_t raw[16];
  g.copy_to(raw);
  char buf[INET6_ADDRSTRLEN] = {};
  RC_ASSERT(::inet_ntop(AF_INET6, raw, buf, sizeof buf) != nullptr);
  std::string line = type == GidType::roce_v2 ? std::string("\t\t\tGID[  7]:\t\t") + buf + ", RoCE v2\n"
                                              : "\t\t\tGID[  7]:\t\t" + g.to_full_string() + ", RoCE v1\n";
  RC_LOG() << text;
  RC_ASSERT(text.find(line) != std::string::npos);
}

RC_GTEST_PROP(Formats, prop_show_gids_write_then_read_gives_the_show_gids_view, ()) {
  auto ts = *gen_tables();
  std::string text = formats::write_show_gids(ts);
  auto back = formats::read_show_gids(text, "written");
  if (!back) RC_FAIL(back.error().what() + "\n" + text);
  RC_LOG() << text << "\nexpected:\n" << show(formats::show_gids_view(ts)) << "read:\n" << show(back.value());
  RC_ASSERT(back.value() == formats::show_gids_view(ts));
  auto view = formats::show_gids_view(ts);
  RC_ASSERT(VALUE_OR_FAIL(formats::read_show_gids(formats::write_show_gids(view), "view")) == view);
}

RC_GTEST_PROP(Formats, prop_json_write_then_read_is_identity, ()) {
  auto ts = *gen_tables();
  auto back = formats::read_json(formats::write_json(ts), "written");
  RC_ASSERT(back.has_value());
  RC_ASSERT(back.value() == ts);
}

// Every text writer's output is recognised as its own format and read back through detection.
RC_GTEST_PROP(Formats, prop_detection_reads_what_each_writer_writes, ()) {
  auto ts = *gen_tables();
  for (Format f : {Format::json, Format::devinfo, Format::show_gids}) {
    std::string text = VALUE_OR_FAIL(formats::write_tables(ts, f));
    auto detected = formats::detect_format(text, "written");
    RC_ASSERT(detected.has_value());
    RC_ASSERT(detected.value() == f);
    auto back = formats::read_tables(text, "written");
    if (!back) RC_FAIL(back.error().what() + "\n" + text);
    const auto expected = f == Format::json      ? ts
                          : f == Format::devinfo ? formats::devinfo_view(ts)
                                                 : formats::show_gids_view(ts);
    RC_ASSERT(back.value() == expected);
  }
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "gidpolicy-prop-XXXXXX").string();
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

RC_GTEST_PROP(Formats, prop_sysfs_write_then_read_gives_the_sysfs_view, ()) {
  // Smaller tables: every slot is a file.
  auto ts = *test::gen_table_set(2, 12);
  formats::SysfsWriteOptions options{.gid_attrs = *rc::gen::weightedElement<bool>({{3, true}, {1, false}})};
  TempDir tmp;
  RC_ASSERT(!tmp.path().empty());
  RC_ASSERT(formats::write_sysfs(ts, tmp.path(), options).has_value());
  auto back = formats::read_sysfs(tmp.path());
  if (!back) RC_FAIL(back.error().what());
  RC_LOG() << "gid_attrs " << options.gid_attrs << "\nexpected:\n"
           << show(formats::sysfs_view(ts, options)) << "read:\n"
           << show(back.value());
  RC_ASSERT(back.value() == formats::sysfs_view(ts, options));
}

// A paste cut at any byte never invents anything: show_gids output with its header fails unless
// the cut falls after the footer's digits, and a devinfo paste cut between lines yields only
// entries the whole text holds.
RC_GTEST_PROP(Formats, prop_cut_show_gids_output_is_rejected, ()) {
  auto ts = *gen_tables();
  // With no row, "n_gids_found=" cut from "n_gids_found=0" is the script's own spelling of 0.
  RC_PRE(!formats::show_gids_view(ts).empty());
  std::string text = formats::write_show_gids(ts);
  auto cut = *rc::gen::inRange<std::size_t>(0, text.size() - 1);  // keep at most all but the last '\n'
  RC_ASSERT(!formats::read_show_gids(text.substr(0, cut), "cut").has_value());
}

RC_GTEST_PROP(Formats, prop_devinfo_cut_between_lines_invents_nothing, ()) {
  auto ts = *gen_tables();
  std::string text = formats::write_devinfo(ts);
  auto whole = VALUE_OR_FAIL(formats::read_devinfo(text, "whole"));
  std::vector<std::size_t> ends;
  for (std::size_t k = 0; k < text.size(); ++k)
    if (text[k] == '\n') ends.push_back(k + 1);
  auto cut = *rc::gen::elementOf(ends);
  auto part = formats::read_devinfo(text.substr(0, cut), "cut");
  if (!part) return;
  for (const auto& t : part.value()) {
    auto same = std::find_if(whole.begin(), whole.end(), [&](const GidTable& w) {
      return w.port().device == t.port().device && w.port().port == t.port().port;
    });
    RC_ASSERT(same != whole.end());
    for (const auto& e : t) {
      const GidEntry* w = same->find(e.index);
      RC_ASSERT(w != nullptr);
      RC_ASSERT(*w == e);
    }
  }
}

RC_GTEST_PROP(Formats, prop_any_text_is_read_or_rejected_without_crashing, (const std::string& text)) {
  auto r = formats::read_tables(text, "arbitrary");
  if (!r) RC_ASSERT(!r.error().detail.empty());
}

}  // namespace
}  // namespace gidpolicy
