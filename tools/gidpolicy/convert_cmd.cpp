// `gidpolicy convert`: tables from one format to another, saying what the target cannot hold,
// written atomically.
#include "commands.hpp"
#include "render.hpp"

#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/show_gids.hpp>
#include <gidpolicy/formats/sysfs.hpp>

#include <fmt/core.h>

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace gidpolicy::cli {

namespace {

namespace fs = std::filesystem;

// What a conversion loses, by comparing the tables with what the target format can hold.
std::string describe_loss(const std::vector<GidTable>& before, const std::vector<GidTable>& after) {
  std::size_t n_before = 0, n_after = 0;
  bool len = false, netdev = false, type = false, port_attrs = false, link = false, holes = false,
       ports = false;
  for (const auto& t : before) {
    // An explicitly empty slot and an unlisted one mean the same: count only what holds something.
    for (const auto& e : t) n_before += e.state != EntryState::empty;
    const GidTable* k = nullptr;
    for (const auto& a : after)
      if (a.port().device == t.port().device && a.port().port == t.port().port) k = &a;
    if (!k) {
      ports = true;
      continue;
    }
    len = len || (t.port().gid_tbl_len != k->port().gid_tbl_len);
    port_attrs = port_attrs || t.port().state != k->port().state ||
                 t.port().active_mtu != k->port().active_mtu || t.port().lid != k->port().lid;
    link = link || t.port().link_layer != k->port().link_layer;
    holes = holes || t.holes() != k->holes();
    for (const auto& e : t) {
      const GidEntry* ke = k->find(e.index);
      if (!ke) continue;
      netdev = netdev || (!e.netdev.empty() && ke->netdev != e.netdev) || e.ifindex != ke->ifindex;
      type = type || e.type != ke->type;
    }
  }
  for (const auto& a : after)
    for (const auto& e : a) n_after += e.state != EntryState::empty;
  std::vector<std::string> lost;
  if (n_after != n_before) lost.push_back(fmt::format("{} of {} entries kept", n_after, n_before));
  if (ports) lost.emplace_back("ports without a listed GID dropped");
  if (len) lost.emplace_back("gid_tbl_len changed or unknown");
  if (port_attrs) lost.emplace_back("port state/MTU/LID not kept");
  if (link) lost.emplace_back("link layer not kept");
  if (type) lost.emplace_back("GID types changed");
  if (netdev) lost.emplace_back("netdevs/ifindexes not kept");
  if (holes) lost.emplace_back("unlisted slots change meaning (empty vs not shown)");
  std::string out;
  for (const auto& l : lost) out += (out.empty() ? "" : "; ") + l;
  return out;
}

// A name next to `target` for a temporary file or tree: same directory, so rename() is atomic.
fs::path sibling(const fs::path& target, const char* what) {
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  return dir / ("." + target.filename().string() + ".gidpolicy-" + what + "-" + std::to_string(::getpid()));
}

// `target` without a trailing separator ("out/" names the directory "out").
fs::path output_path(const std::string& given) {
  fs::path p = fs::path(given).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p;
}

// Text to a temporary file, then rename over `target`: a failed or interrupted write leaves
// `target` as it was.
result<void> write_text_atomically(const fs::path& target, const std::string& text) {
  const fs::path tmp = sibling(target, "tmp");
  errno = 0;
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  std::error_code ec;
  if (!out) {
    const int err = errno ? errno : EIO;
    fs::remove(tmp, ec);
    return fail_errno(err, target.string() + ": cannot write");
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return fail(Error(ec, target.string() + ": cannot write (rename from " + tmp.string() + ")"));
  }
  return success();
}

// A sysfs tree into a fresh temporary directory, renamed into place when complete. An existing
// non-empty `target` is refused unless `replace`: merging would keep stale GIDs from an
// earlier tree.
result<void> write_tree_atomically(const std::vector<GidTable>& tables, const fs::path& target, bool replace,
                                   const formats::SysfsWriteOptions& options) {
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(target, ec));
  if (exists) {
    if (!fs::is_directory(fs::symlink_status(target, ec)))
      return fail(errc::invalid_argument, target.string() + " exists and is not a directory");
    if (!fs::is_empty(target, ec) && !replace)
      return fail(
          errc::invalid_argument,
          target.string() +
              " is not empty: writing into it would keep GIDs from what is there; give a new or empty "
              "directory, or --replace to replace it");
  }
  const fs::path tmp = sibling(target, "tmp");
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec) || ec)
    return fail(Error(ec ? ec : std::make_error_code(std::errc::io_error), tmp.string() + ": cannot create"));
  if (auto r = formats::write_sysfs(tables, tmp, options); !r) {
    fs::remove_all(tmp, ec);
    return r;
  }
  fs::path old;
  if (exists) {
    old = sibling(target, "old");
    fs::rename(target, old, ec);
    if (ec) {
      std::error_code ignored;
      fs::remove_all(tmp, ignored);
      return fail(Error(ec, target.string() + ": cannot move aside to replace it"));
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    if (!old.empty()) fs::rename(old, target, ignored);
    fs::remove_all(tmp, ignored);
    return fail(Error(ec, target.string() + ": cannot write (rename from " + tmp.string() + ")"));
  }
  if (!old.empty()) fs::remove_all(old, ec);
  return success();
}

}  // namespace

int run_convert(const ConvertArgs& o) {
  auto format = formats::format_from_string(o.to);
  if (!format) return usage_error("--to " + o.to + ": expected json, devinfo, show_gids or sysfs");
  if (*format == formats::Format::sysfs && !o.output)
    return usage_error("--to sysfs writes a directory tree: give it with --output DIR");
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  const auto& tables = loaded.value().tables;
  // A sysfs tree is bounded before anything is written (the temporary tree included).
  formats::SysfsWriteOptions tree;
  tree.max_files = o.max_files;
  tree.max_bytes = o.max_bytes;
  if (*format == formats::Format::sysfs)
    if (auto r = formats::check_sysfs_tree(tables, tree); !r) return usage_error(r.error());
  // Say what the target cannot hold rather than dropping it silently.
  std::vector<GidTable> kept = tables;
  if (*format == formats::Format::devinfo) kept = formats::devinfo_view(tables);
  if (*format == formats::Format::show_gids) kept = formats::show_gids_view(tables);
  if (*format == formats::Format::sysfs) kept = formats::sysfs_view(tables);
  if (std::string loss = describe_loss(tables, kept); !loss.empty())
    print_error(fmt::format("note: {} cannot hold all of {}: {}", o.to, loaded.value().source, loss));
  if (*format == formats::Format::sysfs) {
    auto r = write_tree_atomically(tables, output_path(*o.output), o.replace, tree);
    if (!r) return usage_error(r.error());
    return kExitOk;
  }
  std::string text = formats::write_tables(tables, *format).value();
  if (!o.output || *o.output == "-") {
    std::cout << text;
    return kExitOk;
  }
  if (auto r = write_text_atomically(output_path(*o.output), text); !r) return usage_error(r.error());
  return kExitOk;
}

}  // namespace gidpolicy::cli
