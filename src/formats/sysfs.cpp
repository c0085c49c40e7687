#include <gidpolicy/formats/sysfs.hpp>
#include <gidpolicy/quoting.hpp>

#include "text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <utility>

namespace gidpolicy::formats {
namespace fs = std::filesystem;

namespace {

using detail::excerpt;
using detail::trim;

// sysfs attributes are at most one page; a larger regular file is not a sysfs attribute.
constexpr std::size_t kMaxAttributeBytes = 4096;

// A read attempt: the text, or the errno of a failed open/read (the datum: EINVAL for the type
// of an empty slot, EACCES, EIO). A file that is not a regular file (a FIFO, a device, a
// directory) or is larger than a page is refused outright: reading it could block forever or
// never end.
struct FileRead {
  std::string text;
  std::error_code err;
};

// POSIX read, not iostreams: the errno of a failed read is the datum, and iostreams throw it
// away. O_NONBLOCK: opening a FIFO without a writer must not block (fstat then refuses it, as
// it refuses devices and sockets: anything that could block or never end).
// Symlinks are followed (sysfs trees written by write_sysfs mark an unreadable slot with a
// dangling link, whose open fails with ENOENT); what the link reaches is checked by fstat.
result<FileRead> read_small_file(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return FileRead{{}, std::error_code(errno, std::generic_category())};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    std::error_code ec(errno, std::generic_category());
    ::close(fd);
    return FileRead{{}, ec};
  }
  // A directory cannot block: read() fails at once with EISDIR, an unreadable slot like any
  // failed read (tests use it to stand in for the kernel's EINVAL, which a plain file system
  // cannot produce).
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return FileRead{{}, std::make_error_code(std::errc::is_a_directory)};
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return fail(errc::io_error, p.string() + ": expected a regular file (a sysfs attribute), found " + kind);
  }
  std::string out;
  char buf[kMaxAttributeBytes + 1];
  while (out.size() <= kMaxAttributeBytes) {
    ssize_t n = ::read(fd, buf, sizeof buf - out.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      std::error_code ec(errno, std::generic_category());
      ::close(fd);
      return FileRead{{}, ec};
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (out.size() > kMaxAttributeBytes)
    return fail(errc::invalid_field, p.string() + ": more than " + std::to_string(kMaxAttributeBytes) +
                                         " bytes: a sysfs attribute is at most one page");
  return FileRead{std::move(out), {}};
}

std::string_view first_line(std::string_view s) {
  std::size_t nl = s.find('\n');
  return trim(s.substr(0, nl));
}

// Where read_port() and read_device() read from: a directory on disk (read_sysfs), or the lines
// `grep -H` printed of one (read_sysfs_listing, a host bundle's sysfs part). One reader over
// both, so the kernel's quirks below are encoded once.
class Tree {
 public:
  virtual ~Tree() = default;
  virtual result<FileRead> read(const fs::path& p) const = 0;
  virtual bool is_directory(const fs::path& p) const = 0;
  // The numerically named children of `dir` (ports, GID indices), sorted by number.
  virtual result<std::vector<std::pair<std::uint32_t, fs::path>>> numbered(const fs::path& dir,
                                                                           std::uint64_t max) const = 0;
};

// Numerically named children of `dir` (ports, GID indices), sorted by number.
result<std::vector<std::pair<std::uint32_t, fs::path>>> numbered_on_disk(const fs::path& dir,
                                                                         std::uint64_t max) {
  std::error_code ec;
  std::vector<std::pair<std::uint32_t, fs::path>> out;
  fs::directory_iterator it(dir, ec), end;
  if (ec) return fail(errc::io_error, dir.string() + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return fail(errc::io_error, dir.string() + ": " + ec.message());
    std::string name = it->path().filename().string();
    auto n = detail::parse_decimal(name, max);
    if (!n)
      return fail(errc::invalid_field, it->path().string() + ": expected only numbered entries in " +
                                           dir.string() + ", found " + excerpt(name));
    out.emplace_back(static_cast<std::uint32_t>(*n), it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class DiskTree final : public Tree {
 public:
  result<FileRead> read(const fs::path& p) const override { return read_small_file(p); }
  bool is_directory(const fs::path& p) const override {
    std::error_code ec;
    return fs::is_directory(p, ec);
  }
  result<std::vector<std::pair<std::uint32_t, fs::path>>> numbered(const fs::path& dir,
                                                                   std::uint64_t max) const override {
    return numbered_on_disk(dir, max);
  }
};

// The tree a `grep -H . FILES` listing describes: each line "PATH:TEXT" is a line of the file
// PATH (relative to /sys/class/infiniband, as a host bundle lists it); directories are what the
// paths pass through. A file the listing leaves out cannot be read (ENOENT), as the types and
// netdevs of empty slots cannot be read on the host (EINVAL): read_port treats both alike.
class ListingTree final : public Tree {
 public:
  result<FileRead> read(const fs::path& p) const override {
    const auto it = files_.find(p.string());
    if (it == files_.end()) return FileRead{{}, std::make_error_code(std::errc::no_such_file_or_directory)};
    return FileRead{it->second, {}};
  }
  bool is_directory(const fs::path& p) const override { return children_.count(p.string()) != 0; }
  result<std::vector<std::pair<std::uint32_t, fs::path>>> numbered(const fs::path& dir,
                                                                   std::uint64_t max) const override {
    std::vector<std::pair<std::uint32_t, fs::path>> out;
    const auto it = children_.find(dir.string());
    if (it == children_.end()) return fail(errc::io_error, dir.string() + ": not in the listing");
    for (const std::string& name : it->second) {
      auto n = detail::parse_decimal(name, max);
      if (!n)
        return fail(errc::invalid_field, (dir / name).string() + ": expected only numbered entries in " +
                                             dir.string() + ", found " + excerpt(name));
      out.emplace_back(static_cast<std::uint32_t>(*n), dir / name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // Adds one line of `path` (relative, checked by the caller).
  result<void> add(const std::string& rel, std::string_view text) {
    const std::string full = std::string(kSysfsRoot) + rel;
    std::string& content = files_[full];
    if (content.size() + text.size() + 1 > kMaxAttributeBytes)
      return fail(errc::invalid_field, full + ": more than " + std::to_string(kMaxAttributeBytes) +
                                           " bytes: a sysfs attribute is at most one page");
    content.append(text).push_back('\n');
    // Each directory the path passes through lists the next component.
    std::string dir(kSysfsRoot, std::string_view(kSysfsRoot).size() - 1);
    for (std::size_t b = 0; b < rel.size();) {
      const std::size_t slash = rel.find('/', b);
      const std::string name = rel.substr(b, slash == std::string::npos ? std::string::npos : slash - b);
      children_[dir].insert(name);
      if (slash == std::string::npos) break;
      dir += "/" + name;
      b = slash + 1;
    }
    return success();
  }

  std::vector<std::string> devices() const {
    const auto it = children_.find(std::string(kSysfsRoot, std::string_view(kSysfsRoot).size() - 1));
    if (it == children_.end()) return {};
    return {it->second.begin(), it->second.end()};
  }

  static constexpr const char* kSysfsRoot = "/sys/class/infiniband/";

 private:
  std::map<std::string, std::string> files_;
  std::map<std::string, std::set<std::string>> children_;
};

GidType type_from_sysfs(std::string_view text, LinkLayer ll) {
  if (text == "RoCE v2") return GidType::roce_v2;
  if (text == "IB/RoCE v1" || text == "RoCE v1" || text == "IB") {
    // One kernel type for two things; the port says which.
    if (ll.kind() == LinkLayer::Kind::infiniband) return GidType::ib;
    if (ll.kind() == LinkLayer::Kind::ethernet) return GidType::roce_v1;
  }
  return GidType::unknown;
}

// Whether a gid_attrs/types file says something the kernel could print: its own names, or a
// later version in the same shape ("RoCE v3", read as unknown). Anything else is refused.
bool kernel_type_text(std::string_view text) {
  if (text == "IB" || text == "RoCE v2" || text == "RoCE v1" || text == "IB/RoCE v1") return true;
  for (std::string_view prefix : {"RoCE v", "IB/RoCE v"})
    if (text.starts_with(prefix) && detail::parse_decimal(text.substr(prefix.size()), 255)) return true;
  return false;
}

result<GidTable> read_port(const Tree& tree, const std::string& device, std::uint32_t port,
                           const fs::path& dir) {
  PortInfo info;
  info.device = device;
  info.port = port;

  const fs::path state_path = dir / "state";
  GIDPOLICY_TRY(state_read, tree.read(state_path));
  auto& [state_text, state_err] = state_read;
  if (state_err) return fail(errc::io_error, state_path.string() + ": " + state_err.message());
  {
    // "4: ACTIVE"
    std::string_view s = first_line(state_text);
    auto n = detail::parse_decimal(trim(s.substr(0, s.find(':'))), 5);
    if (!n)
      return fail(
          errc::invalid_field,
          state_path.string() + ":1: expected '<n>: <STATE>' such as '4: ACTIVE', found " + excerpt(s));
    info.state = static_cast<PortState>(*n);
  }
  const fs::path ll_path = dir / "link_layer";
  GIDPOLICY_TRY(ll_read, tree.read(ll_path));
  auto& [ll_text, ll_err] = ll_read;
  if (ll_err) return fail(errc::io_error, ll_path.string() + ": " + ll_err.message());
  {
    std::string_view s = first_line(ll_text);
    if (s.empty())
      return fail(errc::invalid_field,
                  ll_path.string() + ":1: expected Ethernet or InfiniBand, found an empty file");
    // The kernel prints "Unknown" for a link layer it does not name: that reads as unknown.
    // Text it never prints ("Banana") is refused (docs/formats.md, leniency rule).
    auto ll = link_layer_from_string(s);
    if (!ll)
      return fail(errc::invalid_field,
                  ll_path.string() + ":1: expected Ethernet, InfiniBand, Thunderbolt or Unknown, found " +
                      excerpt(s));
    info.link_layer = ll->kind() != LinkLayer::Kind::unknown ? *ll : LinkLayer::from_raw(0);
  }
  GIDPOLICY_TRY(lid_read, tree.read(dir / "lid"));
  if (auto& [lid_text, lid_err] = lid_read; !lid_err) {
    auto lid = detail::parse_hex(first_line(lid_text), 0xffff);
    if (!lid)
      return fail(errc::invalid_field, (dir / "lid").string() + ":1: expected a hex LID such as 0x0, found " +
                                           excerpt(first_line(lid_text)));
    info.lid = static_cast<std::uint16_t>(*lid);
  }

  // rate: "100 Gb/sec (4X EDR)". Optional (a tree made by an older writer has none); text the
  // kernel would not print for its own names is refused, as for every other attribute.
  GIDPOLICY_TRY(rate_read, tree.read(dir / "rate"));
  if (auto& [rate_text, rate_err] = rate_read; !rate_err) {
    const std::string_view s = first_line(rate_text);
    std::optional<LinkRate> rate;
    if (const std::size_t open = s.rfind('('); open != std::string_view::npos && s.ends_with(')')) {
      const std::string_view inside = s.substr(open + 1, s.size() - open - 2);
      if (const std::size_t space = inside.find(' '); space != std::string_view::npos)
        rate = LinkRate::from_names(inside.substr(0, space), inside.substr(space + 1));
    }
    if (!rate || sysfs_rate_text(*rate) != s)
      return fail(errc::invalid_field,
                  (dir / "rate").string() +
                      ":1: expected the kernel's rate text such as '100 Gb/sec (4X EDR)', found " +
                      excerpt(s));
    info.link_rate = rate;
  }

  GIDPOLICY_TRY(slots, tree.numbered(dir / "gids", 0x7fffffffu));
  info.gid_tbl_len = slots.empty() ? 0u : slots.back().first + 1;
  const fs::path attrs = dir / "gid_attrs";
  // No gid_attrs/: a kernel from before RoCE v2 support, where every GID is IB/RoCE v1.
  const bool have_attrs = tree.is_directory(attrs);

  std::vector<GidEntry> entries;
  for (const auto& [index, path] : slots) {
    GIDPOLICY_TRY(gid_read, tree.read(path));
    auto& [gid_text, gid_err] = gid_read;
    if (gid_err) {
      entries.push_back(GidEntry::unreadable(index, gid_err));
      continue;
    }
    std::string_view g = first_line(gid_text);
    auto gid = Gid::parse(g);
    if (!gid)
      return fail(errc::parse_error,
                  path.string() + ":1: expected a GID (8 groups of 4 hex digits): " + gid.error().detail);
    GidEntry e = GidEntry::valid(index, gid.value());
    if (have_attrs) {
      const std::string name = std::to_string(index);
      GIDPOLICY_TRY(type_read, tree.read(attrs / "types" / name));
      auto& [type_text, type_err] = type_read;
      // The kernel refuses (EINVAL) to say the type of an empty slot: zeros plus that refusal
      // is the empty slot. Zeros with a readable type is a stored zero GID.
      if (type_err) {
        if (e.gid.is_zero()) continue;
      } else {
        const std::string_view t = first_line(type_text);
        if (!kernel_type_text(t))
          return fail(errc::invalid_field, (attrs / "types" / name).string() +
                                               ":1: expected IB/RoCE v1 or RoCE v2 (or RoCE vN), found " +
                                               excerpt(t));
        e.type = type_from_sysfs(t, info.link_layer);
      }
      GIDPOLICY_TRY(ndev_read, tree.read(attrs / "ndevs" / name));
      if (auto& [ndev_text, ndev_err] = ndev_read; !ndev_err) {
        const std::string_view nd = first_line(ndev_text);
        if (!nd.empty())
          if (auto why = detail::name_problem(nd, detail::NameKind::netdev))
            return fail(errc::invalid_field,
                        (attrs / "ndevs" / name).string() + ":1: netdev name " + excerpt(nd) + ": " + *why);
        e.netdev = std::string(nd);
      }
    } else {
      if (e.gid.is_zero()) continue;
      e.type = type_from_sysfs("IB/RoCE v1", info.link_layer);
    }
    entries.push_back(std::move(e));
  }
  auto table = GidTable::make(std::move(info), std::move(entries), Holes::empty);
  if (!table) return fail(Error(table.error().code, dir.string() + ": " + table.error().detail));
  return table;
}

result<void> read_device(const Tree& tree, const std::string& name, const fs::path& dir,
                         std::vector<GidTable>& out) {
  if (auto why = detail::name_problem(name, detail::NameKind::device))
    return fail(errc::invalid_field, dir.string() + ": device name " + excerpt(name) + ": " + *why);
  GIDPOLICY_TRY(ports, tree.numbered(dir / "ports", 255));
  if (ports.empty())
    return fail(errc::invalid_field, (dir / "ports").string() + ": expected at least one port directory");
  for (const auto& [port, path] : ports) {
    if (port == 0) return fail(errc::invalid_field, path.string() + ": expected port numbers from 1");
    GIDPOLICY_TRY(t, read_port(tree, name, port, path));
    out.push_back(std::move(t));
  }
  return success();
}

std::string kernel_state_name(PortState s) {
  switch (s) {
    case PortState::nop:
      return "NOP";
    case PortState::down:
      return "DOWN";
    case PortState::init:
      return "INIT";
    case PortState::armed:
      return "ARMED";
    case PortState::active:
      return "ACTIVE";
    case PortState::active_defer:
      return "ACTIVE_DEFER";
  }
  return "NOP";
}

// Write failures carry the errno (ENOSPC, EACCES): errc::io_error would read "cannot read input".
result<void> write_file(const fs::path& p, const std::string& content) {
  errno = 0;
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << content;
  f.close();
  if (!f) return fail_errno(errno ? errno : EIO, p.string() + ": cannot write");
  return success();
}

result<void> make_dirs(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p, ec);
  if (ec) return fail(Error(ec, p.string() + ": cannot create the directory"));
  return success();
}

// A sysfs tree holds one file per slot below gid_tbl_len; a hostile length must not become
// billions of files. Real ports have at most 256 slots.
constexpr std::uint32_t kMaxSysfsSlots = 65536;

const char* sysfs_type_text(GidType t) {
  switch (t) {
    case GidType::ib:
    case GidType::roce_v1:
      return "IB/RoCE v1";
    case GidType::roce_v2:
      return "RoCE v2";
    case GidType::unknown:
      break;
  }
  return nullptr;
}

// The sysfs-relevant normalisation of one table (see sysfs_view).
GidTable view_one(const GidTable& t, SysfsWriteOptions options) {
  PortInfo p;
  p.device = t.port().device;
  p.port = t.port().port;
  p.state = t.port().state;
  p.link_layer =
      t.port().link_layer.kind() == LinkLayer::Kind::unknown ? LinkLayer::from_raw(0) : t.port().link_layer;
  p.gid_tbl_len = t.length();
  p.lid = t.port().lid;
  // Only a rate the kernel can print survives.
  if (t.port().link_rate && t.port().link_rate->known()) p.link_rate = t.port().link_rate;
  std::vector<GidEntry> entries;
  for (const auto& e : t) {
    if (e.state == EntryState::empty) continue;
    if (e.state == EntryState::unreadable) {
      entries.push_back(
          GidEntry::unreadable(e.index, std::make_error_code(std::errc::no_such_file_or_directory)));
      continue;
    }
    GidEntry v = GidEntry::valid(e.index, e.gid);
    if (options.gid_attrs) {
      const char* text = sysfs_type_text(e.type);
      if (!text && e.gid.is_zero()) continue;
      if (text) v.type = type_from_sysfs(text, p.link_layer);
      v.netdev = e.netdev;
    } else {
      if (e.gid.is_zero()) continue;
      v.type = type_from_sysfs("IB/RoCE v1", p.link_layer);
    }
    entries.push_back(std::move(v));
  }
  return GidTable::make(std::move(p), std::move(entries), Holes::empty).value();
}

}  // namespace

std::optional<std::string> sysfs_rate_text(LinkRate rate) {
  if (!rate.known()) return std::nullopt;
  const unsigned half = *rate.lanes() * *rate.lane_half_gbps();  // 0.5 Gb/s units
  return std::to_string(half / 2) + (half % 2 ? ".5" : "") + " Gb/sec (" + std::to_string(*rate.lanes()) +
         "X " + std::string(rate.speed_name()) + ")";
}

result<std::vector<GidTable>> read_sysfs(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return fail(errc::io_error, root.string() + ": " + (ec ? ec.message() : std::string("not a directory")));
  std::vector<GidTable> out;
  if (fs::is_directory(root / "ports", ec)) {
    // One device directory given directly: its name is the directory's.
    fs::path norm = fs::absolute(root, ec).lexically_normal();
    std::string name =
        norm.filename().empty() ? norm.parent_path().filename().string() : norm.filename().string();
    GIDPOLICY_TRYV(read_device(DiskTree{}, name, root, out));
    return out;
  }
  std::vector<std::pair<std::string, fs::path>> devices;
  fs::directory_iterator it(root, ec), end;
  if (ec) return fail(errc::io_error, root.string() + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return fail(errc::io_error, root.string() + ": " + ec.message());
    std::error_code ec2;
    // /sys/class/infiniband/<dev> are symlinks into /sys/devices: is_directory follows them.
    if (fs::is_directory(it->path() / "ports", ec2))
      devices.emplace_back(it->path().filename().string(), it->path());
  }
  if (devices.empty())
    return fail(errc::unknown_format, root.string() +
                                          ": no device directory: expected a /sys/class/infiniband-like tree "
                                          "(<dev>/ports/<port>/gids/<index>)");
  std::sort(devices.begin(), devices.end());
  const DiskTree disk;
  for (const auto& [name, path] : devices) GIDPOLICY_TRYV(read_device(disk, name, path, out));
  return out;
}

namespace {

// What write_sysfs makes of one port: its directories, files and the links of unreadable slots.
template <class Dir, class File, class Link>
result<void> lay_out(const GidTable& t, const fs::path& dir, SysfsWriteOptions options, Dir&& mkdir,
                     File&& file, Link&& link) {
  const PortInfo& p = t.port();
  GIDPOLICY_TRYV(mkdir(dir / "gids"));
  GIDPOLICY_TRYV(file(dir / "state", std::to_string(static_cast<unsigned>(p.state)) + ": " +
                                         kernel_state_name(p.state) + "\n"));
  GIDPOLICY_TRYV(file(dir / "link_layer", std::string(detail::link_layer_name(p.link_layer)) + "\n"));
  char lid[16];
  std::snprintf(lid, sizeof lid, "0x%x\n", unsigned{p.lid});
  GIDPOLICY_TRYV(file(dir / "lid", lid));
  if (p.link_rate)
    if (auto rate = sysfs_rate_text(*p.link_rate)) GIDPOLICY_TRYV(file(dir / "rate", *rate + "\n"));
  if (options.gid_attrs) {
    GIDPOLICY_TRYV(mkdir(dir / "gid_attrs" / "types"));
    GIDPOLICY_TRYV(mkdir(dir / "gid_attrs" / "ndevs"));
  }
  const std::uint32_t len = t.length();
  for (std::uint32_t i = 0; i < len; ++i) {
    const std::string name = std::to_string(i);
    const GidEntry* e = t.find(i);
    if (e && e->state == EntryState::unreadable) {
      GIDPOLICY_TRYV(link(dir / "gids" / name));
      continue;
    }
    const bool valid = e && e->state == EntryState::valid;
    GIDPOLICY_TRYV(file(dir / "gids" / name, (valid ? e->gid : Gid{}).to_full_string() + "\n"));
    if (!valid || !options.gid_attrs) continue;
    if (const char* type = sysfs_type_text(e->type))
      GIDPOLICY_TRYV(file(dir / "gid_attrs" / "types" / name, std::string(type) + "\n"));
    if (!e->netdev.empty()) GIDPOLICY_TRYV(file(dir / "gid_attrs" / "ndevs" / name, e->netdev + "\n"));
  }
  return success();
}

result<void> check_port(const GidTable& t) {
  const PortInfo& p = t.port();
  // The device name is a directory's name in the tree: a file name, never a path (quoting.hpp).
  if (auto why = file_name_problem(p.device))
    return fail(errc::invalid_argument,
                "device name " + excerpt(p.device) + " cannot be a directory name: " + *why);
  if (t.length() > kMaxSysfsSlots)
    return fail(errc::invalid_argument, port_name(p) + ": gid_tbl_len " + std::to_string(t.length()) +
                                            " would be " + std::to_string(t.length()) +
                                            " files; a sysfs tree holds at most " +
                                            std::to_string(kMaxSysfsSlots) + " slots per port");
  return success();
}

fs::path port_dir(const fs::path& root, const PortInfo& p) {
  return root / p.device / "ports" / std::to_string(p.port);
}

}  // namespace

SysfsFootprint sysfs_footprint(const std::vector<GidTable>& tables, SysfsWriteOptions options) {
  // Counted from the entries, not the slots: the cost of the count is the table's size in
  // memory, not the tree it asks for. Must match lay_out (a unit test writes a tree and counts).
  constexpr std::uint64_t kGidFileBytes = 40;  // to_full_string(): 8 groups of 4 hex digits, 7 ':', '\n'
  SysfsFootprint f;
  for (const auto& t : tables) {
    const PortInfo& p = t.port();
    f.directories += options.gid_attrs ? 7 : 4;
    f.files += 3;
    char lid[16];
    f.bytes += std::to_string(static_cast<unsigned>(p.state)).size() + 2 + kernel_state_name(p.state).size() +
               1 + std::string_view(detail::link_layer_name(p.link_layer)).size() + 1 +
               static_cast<std::uint64_t>(std::snprintf(lid, sizeof lid, "0x%x\n", unsigned{p.lid}));
    if (p.link_rate)
      if (auto rate = sysfs_rate_text(*p.link_rate)) {
        ++f.files;
        f.bytes += rate->size() + 1;
      }
    const std::uint64_t len = t.length();
    std::uint64_t links = 0;
    for (const auto& e : t) {
      if (e.index >= len) continue;
      if (e.state == EntryState::unreadable) {
        ++links;
        continue;
      }
      if (e.state != EntryState::valid || !options.gid_attrs) continue;
      if (const char* type = sysfs_type_text(e.type)) {
        ++f.files;
        f.bytes += std::string_view(type).size() + 1;
      }
      if (!e.netdev.empty()) {
        ++f.files;
        f.bytes += e.netdev.size() + 1;
      }
    }
    f.files += len;  // a gids file or link per slot
    f.bytes += (len - links) * kGidFileBytes;
  }
  return f;
}

result<void> check_sysfs_tree(const std::vector<GidTable>& tables, SysfsWriteOptions options) {
  for (const auto& t : tables) GIDPOLICY_TRYV(check_port(t));
  // The whole tree's size before its first file: a gid_tbl_len makes files whether or not its
  // slots hold anything, so a short document can ask for a large tree.
  const SysfsFootprint f = sysfs_footprint(tables, options);
  if (f.files > options.max_files)
    return fail(errc::invalid_argument, "the sysfs tree would be " + std::to_string(f.files) +
                                            " files (gid_tbl_len makes one per slot), " +
                                            "more than the limit of " + std::to_string(options.max_files) +
                                            " files; nothing was written");
  if (f.bytes > options.max_bytes)
    return fail(errc::invalid_argument,
                "the sysfs tree would be " + std::to_string(f.bytes) + " bytes, more than the limit of " +
                    std::to_string(options.max_bytes) + " bytes; nothing was written");
  return success();
}

result<void> write_sysfs(const std::vector<GidTable>& tables, const fs::path& root,
                         SysfsWriteOptions options) {
  GIDPOLICY_TRYV(check_sysfs_tree(tables, options));
  for (const auto& t : tables) {
    GIDPOLICY_TRYV(lay_out(
        t, port_dir(root, t.port()), options, [](const fs::path& d) { return make_dirs(d); },
        [](const fs::path& p, const std::string& content) { return write_file(p, content); },
        [](const fs::path& p) -> result<void> {
          // A plain directory cannot make read() fail on demand; a dangling link makes open() fail.
          std::error_code ec;
          fs::remove(p, ec);
          fs::create_symlink("unreadable-slot", p, ec);
          if (ec) return fail(Error(ec, p.string() + ": cannot create the link"));
          return success();
        }));
  }
  return success();
}

std::vector<GidTable> sysfs_view(const std::vector<GidTable>& tables, SysfsWriteOptions options) {
  std::vector<GidTable> out;
  out.reserve(tables.size());
  for (const auto& t : tables) out.push_back(view_one(t, options));
  // read_sysfs lists devices by name and ports by number.
  std::stable_sort(out.begin(), out.end(), [](const GidTable& a, const GidTable& b) {
    if (a.port().device != b.port().device) return a.port().device < b.port().device;
    return a.port().port < b.port().port;
  });
  return out;
}

result<std::vector<GidTable>> read_sysfs_listing(std::string_view listing, const std::string& source) {
  if (listing.size() > kMaxSysfsListingBytes)
    return fail(errc::invalid_argument,
                source + ": more than " + std::to_string(kMaxSysfsListingBytes) + " bytes of sysfs listing");
  ListingTree tree;
  std::size_t line_no = 0;
  for (std::size_t pos = 0; pos < listing.size();) {
    const std::size_t nl = listing.find('\n', pos);
    std::string_view line =
        listing.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? listing.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::string at = source + ":" + std::to_string(line_no) + ": ";
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      return fail(errc::parse_error, at + "expected PATH:VALUE (grep -H output), found " + excerpt(line));
    std::string_view rel = line.substr(0, colon);
    if (rel.starts_with(ListingTree::kSysfsRoot))
      rel.remove_prefix(std::string_view(ListingTree::kSysfsRoot).size());
    // DEV/ports/P/(state|link_layer|lid|rate|gids/N|gid_attrs/types/N|gid_attrs/ndevs/N), and
    // nothing else: a path that climbs out of the tree, or names another file, is not a listing
    // of the GID files.
    std::vector<std::string_view> parts;
    for (std::size_t b = 0; b <= rel.size();) {
      const std::size_t slash = rel.find('/', b);
      parts.push_back(rel.substr(b, slash == std::string_view::npos ? std::string_view::npos : slash - b));
      if (slash == std::string_view::npos) break;
      b = slash + 1;
    }
    const auto is_number = [](std::string_view x) {
      return detail::parse_decimal(x, 0x7fffffffu).has_value();
    };
    const bool port_file = parts.size() == 4 && (parts[3] == "state" || parts[3] == "link_layer" ||
                                                 parts[3] == "lid" || parts[3] == "rate");
    const bool gid_file = parts.size() == 5 && parts[3] == "gids" && is_number(parts[4]);
    const bool attr_file = parts.size() == 6 && parts[3] == "gid_attrs" &&
                           (parts[4] == "types" || parts[4] == "ndevs") && is_number(parts[5]);
    if (parts.size() < 4 || parts[1] != "ports" || !is_number(parts[2]) ||
        !(port_file || gid_file || attr_file))
      return fail(errc::invalid_field,
                  at +
                      "expected a path DEVICE/ports/PORT/{state,link_layer,lid,rate,gids/N,gid_attrs/types/N,"
                      "gid_attrs/ndevs/N}, found " +
                      excerpt(rel));
    if (auto why = detail::name_problem(parts[0], detail::NameKind::device))
      return fail(errc::invalid_field, at + "device name " + excerpt(parts[0]) + ": " + *why);
    GIDPOLICY_TRYV(tree.add(std::string(rel), line.substr(colon + 1)));
  }
  std::vector<GidTable> out;
  for (const std::string& name : tree.devices())
    GIDPOLICY_TRYV(read_device(tree, name, fs::path(ListingTree::kSysfsRoot) / name, out));
  return out;
}

}  // namespace gidpolicy::formats
