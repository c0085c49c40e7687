// `gidpolicy convert`: tables from one format to another, saying what the target cannot hold,
// written by the one output path (output.hpp).
#include "commands.hpp"
#include "output.hpp"
#include "render.hpp"

#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/devinfo.hpp>
#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/formats/show_gids.hpp>
#include <gidpolicy/formats/sysfs.hpp>

#include <fmt/core.h>

#include <filesystem>
#include <optional>

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

}  // namespace

int run_convert(const ConvertArgs& o) {
  auto format = formats::format_from_string(o.to);
  if (!format) return usage_error("--to " + o.to + ": expected json, devinfo, show_gids or sysfs");
  if (*format == formats::Format::sysfs && !o.output)
    return usage_error("--to sysfs writes a directory tree: give it with --output DIR");
  // The output is looked at before the input is read: a target that cannot be written is said at
  // once.
  std::optional<Output> out;
  if (*format == formats::Format::sysfs) {
    if (auto err = check_tree(*o.output, "--output", o.replace)) return output_error(*err);
  } else {
    out.emplace(Output::open(o.output, "--output"));
    if (out->error()) return output_error(*out->error());
  }
  auto loaded = load_tables(o.source);
  if (!loaded) return usage_error(loaded.error());
  const auto& tables = loaded.value().tables;
  // A sysfs tree is bounded before anything is written (the temporary tree included).
  formats::SysfsWriteOptions tree;
  tree.max_files = o.max_files;
  tree.max_bytes = o.max_bytes;
  if (*format == formats::Format::sysfs) {
    if (auto r = formats::check_sysfs_tree(tables, tree); !r) {
      // The library states the bound; which option raises it is this command's to say.
      Error e = r.error();
      const formats::SysfsFootprint f = formats::sysfs_footprint(tables, tree);
      if (f.files > tree.max_files)
        e.detail += " (raise the limit: --max-files)";
      else if (f.bytes > tree.max_bytes)
        e.detail += " (raise the limit: --max-bytes)";
      return usage_error(e);
    }
  }
  // Say what the target cannot hold rather than dropping it silently.
  std::vector<GidTable> kept = tables;
  if (*format == formats::Format::devinfo) kept = formats::devinfo_view(tables);
  if (*format == formats::Format::show_gids) kept = formats::show_gids_view(tables);
  if (*format == formats::Format::sysfs) kept = formats::sysfs_view(tables);
  if (std::string loss = describe_loss(tables, kept); !loss.empty())
    print_error(fmt::format("note: {} cannot hold all of {}: {}", o.to, loaded.value().source, loss));
  if (*format == formats::Format::sysfs) {
    if (auto err = write_tree(*o.output, "--output", o.replace,
                              [&](const fs::path& dir) { return formats::write_sysfs(tables, dir, tree); }))
      return output_error(*err);
    return kExitOk;
  }
  if (*format == formats::Format::json) {
    // The document `show --json` prints (version 2), with the source read and the host where
    // known: a bundle's; a table file's is not known.
    formats::TablesDocument about;
    if (const auto& b = loaded.value().bundle_host; b && !b->host.empty()) about.host = b->host;
    about.source = loaded.value().source;
    out->write(formats::write_json(tables, about));
  } else {
    out->write(formats::write_tables(tables, *format).value());
  }
  if (auto err = out->commit()) return output_error(*err);
  return kExitOk;
}

}  // namespace gidpolicy::cli
