// `gidpolicy fake-host --tables FILE [--netns] [--driver D] [--fabric DIR] -- COMMAND [ARGS...]`
//
// What the command sees, and why each piece is there:
//  * /sys/class/infiniband/<dev>/... and /sys/class/infiniband_verbs/uverbsN: written from the
//    table (fake_host_sysfs.cpp) on a private tmpfs and bind-mounted read-only. UCX reads every
//    GID's type and netdev from sysfs, never through verbs, and skips the device's NUMA
//    locality without device/; rdma-core's tools read the port attributes. Where the machine
//    has no /sys/class/infiniband, a read-only overlay of /sys/class (this tree's two
//    directories over the real ones) gives the mount points without touching sysfs.
//  * /dev/infiniband/uverbsN: /dev/null bind-mounted there. UCX opens no device file but skips
//    a device whose uverbs node is not a readable, writable character device. Where the
//    machine has no /dev/infiniband, a read-only overlay of /dev provides it; /dev's own
//    submounts (/dev/shm, /dev/pts, /dev/mqueue) are moved onto the overlay, so shared memory
//    and terminals work as before.
//  * With --netns: a private network namespace holding the table's netdevs (fake_host_net.cpp)
//    and a sysfs mounted for it (so /sys/class/net lists them), loopback up.
//  * The fake libibverbs first on LD_LIBRARY_PATH; GIDPOLICY_FAKE_TABLES (the table),
//    GIDPOLICY_FAKE_SYSFS (/sys/class: the devices' sysfs paths) and GIDPOLICY_FAKE_FABRIC (the
//    directory of the QPs' sockets: abstract Unix addresses belong to one network namespace,
//    socket files are reached from any, so processes in different fake hosts still talk). The
//    rest of the environment passes through, so mpirun and its ranks inherit all of it.
// Everything is mounted in a private mount namespace with private propagation: the caller's
// /dev and /sys never change. fake-host stays as the command's parent: it forwards signals,
// follows the table file (a rewrite rewrites the sysfs view and the netdevs, as a rewrite
// changes what the fake libibverbs answers) and exits with the command's status.
#include "fake_host.hpp"
#include "subcommands.hpp"

#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/formats/sysfs.hpp>

#include <fmt/core.h>

#ifdef __linux__
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

extern char** environ;

namespace gidpolicy::cli {

namespace {
int say_usage(const std::string& line) {
  std::cerr << "gidpolicy fake-host: " << line << "\n";
  return kExitFakeHostFailed;
}
}  // namespace

FakeHostCommand::FakeHostCommand(CLI::App& app) {
  cmd_ = add_subcommand(app, "fake-host");
  cmd_->add_option("--tables", o_.tables, "The table: any format gidpolicy reads, or a sysfs-like directory")
      ->required();
  cmd_->add_flag("--netns", o_.netns,
                 "Also a private network namespace with the table's netdevs (veth) and their addresses");
  cmd_->add_option("--driver", o_.driver, "The fake's driver model (default: by link layer)")
      ->check(CLI::IsMember({"linux", "apple_thunderbolt"}));
  cmd_->add_option("--fabric", o_.fabric,
                   "Directory of the fake QPs' sockets, shared by every fake host that talks to this one "
                   "(default: /tmp/gidpolicy-fabric-<uid>)");
  // Only to refuse a command given without `--` (take_command() keeps what follows `--` away
  // from CLI11, which would read brackets and commas as lists).
  cmd_->add_option("command", o_.stray, "-- COMMAND [ARGS...]: the command, after --, passed verbatim");
}

int FakeHostCommand::take_command(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "fake-host") return argc;
  for (int i = 2; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      o_.command.assign(argv + i + 1, argv + argc);
      return i;
    }
  }
  return argc;
}

int FakeHostCommand::run() const {
  if (!o_.stray.empty())
    return say_usage("the command goes after --: gidpolicy fake-host --tables FILE -- " + o_.stray.front() +
                     " ... ('" + o_.stray.front() + "' was given without --)");
  return run_fake_host(o_);
}

#ifndef __linux__

int run_fake_host(const FakeHostArgs&) {
  std::cerr << "gidpolicy fake-host: needs Linux namespaces; on this system run the program with "
               "the fake libibverbs on the library path and GIDPOLICY_FAKE_TABLES set\n";
  return kExitFakeHostFailed;
}

#else

namespace {

namespace fs = std::filesystem;

#ifdef GIDPOLICY_FAKE_LIB_DIRS
constexpr const char* kFakeLibDirs = GIDPOLICY_FAKE_LIB_DIRS;
constexpr const char* kCliBuildDir = GIDPOLICY_CLI_BUILD_DIR;
constexpr const char* kFakeInstallRelDir = GIDPOLICY_FAKE_INSTALL_RELDIR;
#else
constexpr const char* kFakeLibDirs = "";
constexpr const char* kCliBuildDir = "";
constexpr const char* kFakeInstallRelDir = "";
#endif

// Where the fake libraries are. The build tree's binary uses the build tree's fakes; an installed
// binary finds them relative to itself (<prefix>/bin/gidpolicy -> <prefix>/<libdir>/gidpolicy/fake,
// never a directory the dynamic linker searches, so they cannot shadow the real libibverbs or
// librdmacm), so a package or `cmake --install --prefix DIR` works wherever it lands. Which of
// the two is decided by where the running binary is, never by which directory happens to exist.
result<fs::path> fake_lib_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fail(Error(ec, "/proc/self/exe: cannot tell where this gidpolicy is installed"));
  const fs::path build_dir = fs::weakly_canonical(kCliBuildDir, ec);
  if (!ec && exe.parent_path() == build_dir)
    return fs::path(std::string(kFakeLibDirs).substr(0, std::string(kFakeLibDirs).find(':')));
  return (exe.parent_path() / kFakeInstallRelDir).lexically_normal();
}

int say(const std::string& line) {
  std::cerr << "gidpolicy fake-host: " << line << "\n";
  return kExitFakeHostFailed;
}

// ---- mounts ---------------------------------------------------------------------------------

struct MountLine {
  int id = 0, parent = 0;
  std::string point;
};

std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<MountLine> mounts() {
  std::vector<MountLine> out;
  std::ifstream f("/proc/self/mountinfo");
  std::string line;
  while (std::getline(f, line) && out.size() < 100000) {
    std::istringstream in(line);
    MountLine m;
    std::string devno, root, point;
    if (in >> m.id >> m.parent >> devno >> root >> point) {
      m.point = unescape(point);
      out.push_back(std::move(m));
    }
  }
  return out;
}

// The mount points directly on the mount now visible at `target` (/dev: /dev/shm, /dev/pts, ...).
std::vector<std::string> child_mounts(const std::string& target) {
  const std::vector<MountLine> all = mounts();
  int top = -1;
  for (const MountLine& m : all)
    if (m.point == target) top = m.id;  // the last one mounted there is the one seen
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const MountLine& m : all)
    if (m.parent == top && m.point != target && seen.insert(m.point).second) out.push_back(m.point);
  return out;
}

std::string err_text(int e) { return std::strerror(e); }

// Mount something new at `target` (do_mount), keeping the mounts that were on it: each is
// bound aside first and moved onto the new mount afterwards.
result<void> remount_keeping_children(const std::string& target, const fs::path& keep_dir,
                                      const std::function<result<void>()>& do_mount) {
  std::vector<std::pair<std::string, fs::path> > kept;
  std::error_code ec;
  for (const std::string& child : child_mounts(target)) {
    const fs::path aside = keep_dir / std::to_string(kept.size());
    fs::create_directories(aside, ec);
    if (::mount(child.c_str(), aside.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      return fail_errno(errno, "cannot bind " + child + " aside");
    kept.emplace_back(child, aside);
  }
  GIDPOLICY_TRYV(do_mount());
  for (const auto& [child, aside] : kept) {
    if (::mount(aside.c_str(), child.c_str(), nullptr, MS_MOVE, nullptr) != 0) {
      // The new mount has no directory for it (a submount of an empty directory): drop it.
      ::umount2(aside.c_str(), MNT_DETACH);
    }
  }
  return success();
}

result<void> bind_read_only(const fs::path& from, const std::string& to) {
  if (::mount(from.c_str(), to.c_str(), nullptr, MS_BIND, nullptr) != 0)
    return fail_errno(errno, "cannot bind-mount " + from.string() + " on " + to);
  if (::mount(nullptr, to.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, nullptr) != 0)
    return fail_errno(errno, "cannot make " + to + " read-only");
  return success();
}

result<void> overlay(const std::string& target, const fs::path& upper_dirs, bool in_user_namespace) {
  // Two lower layers and no upper one: read-only, the stub's directories over the real ones.
  const std::string opts = "lowerdir=" + upper_dirs.string() + ":" + target;
  if (::mount("overlay", target.c_str(), "overlay", MS_RDONLY, opts.c_str()) != 0) {
    const int e = errno;
    if (!in_user_namespace) return fail_errno(e, "cannot mount an overlay on " + target);
    // Without root, the overlay is mounted inside a user namespace: the kernel (or the file
    // system under target) must allow overlayfs there. Say what is missing and what works.
    const std::string missing = target == "/dev" ? "/dev/infiniband" : "/sys/class/infiniband";
    return fail_errno(e,
                      "cannot mount an overlay on " + target + " inside a user namespace (not root), which " +
                          "this machine needs since it has no " + missing +
                          ": the kernel refuses an unprivileged overlay there (it needs Linux 5.11 or later "
                          "and an underlying file system that allows it); run fake-host as root (sudo "
                          "gidpolicy fake-host ...)");
  }
  return success();
}

// ---- the environment ------------------------------------------------------------------------

std::vector<std::string> child_environment(const fs::path& libdir, const std::string& tables,
                                           const std::string& fabric,
                                           const std::optional<std::string>& driver) {
  std::map<std::string, std::string> set;
  std::string libpath = libdir.string();
  if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old) libpath += std::string(":") + old;
  set["LD_LIBRARY_PATH"] = libpath;
  set["GIDPOLICY_FAKE_TABLES"] = tables;
  set["GIDPOLICY_FAKE_SYSFS"] = "/sys/class";
  set["GIDPOLICY_FAKE_FABRIC"] = fabric;
  if (driver) set["GIDPOLICY_FAKE_DRIVER"] = *driver;
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (!set.count(key)) env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

// ---- the table watch ------------------------------------------------------------------------

// What changes when the table changes: the file's identity, size and times (for a sysfs-like
// directory, every entry's), bounded like the fake's own reader.
std::string fingerprint(const fs::path& p) {
  std::string out;
  auto add = [&](const fs::path& q) {
    struct stat st {};
    if (::stat(q.c_str(), &st) != 0) {
      out += q.string() + ":missing;";
      return;
    }
    out += fmt::format("{}:{}:{}:{}.{}:{}.{};", q.string(), st.st_ino, st.st_size, st.st_mtim.tv_sec,
                       st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
  };
  add(p);
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    std::size_t n = 0;
    for (auto it = fs::recursive_directory_iterator(p, ec);
         !ec && it != fs::recursive_directory_iterator() && n < 70000; it.increment(ec), ++n)
      add(it->path());
  }
  return out;
}

std::set<std::pair<std::string, std::uint32_t> > ports_of(const std::vector<GidTable>& tables) {
  std::set<std::pair<std::string, std::uint32_t> > out;
  for (const GidTable& t : tables) out.emplace(t.port().device, t.port().port);
  return out;
}

// Where the private tmpfs is mounted during the set-up (in the private mount namespace), and its
// size: the sysfs view of the largest table the readers accept fits (formats.md: bounds).
constexpr const char* kWorkMount = "/tmp";
constexpr const char* kWorkTmpfsOptions = "mode=0755,size=64m";
constexpr const char* kWorkTmpfsSize = "64 MiB";

// A full tmpfs is the fake host's private one, not the caller's /tmp.
std::string no_space_is_the_tmpfs(const Error& e) {
  if (e.code == std::errc::no_space_on_device || e.code == std::errc::file_too_large)
    return fmt::format("the fake host's private tmpfs ({}, a fixed size) is full: {}", kWorkTmpfsSize,
                       e.what());
  return e.what();
}

// fake-host has no option to raise the sysfs view's bound (its tmpfs is sized for it).
static_assert(formats::SysfsWriteOptions{}.max_files == 65'536 &&
                  formats::SysfsWriteOptions{}.max_bytes == 16u << 20,
              "kFixedTreeBound states these bounds");
constexpr const char* kFixedTreeBound =
    " (the fake host's sysfs view has a fixed bound of 65,536 files and 16 MiB of content: give a "
    "smaller gid_tbl_len)";

struct Host {
  fs::path work;  // the private tmpfs (after the set-up: through a descriptor, /proc/self/fd/N)
  fs::path live;  // <work>/class: infiniband/, infiniband_verbs/ (bind-mounted into /sys/class)
  std::string tables_path;
  std::vector<GidTable> tables;
  bool netns = false;
  fake_host::NetdevState net;
};

// A rewritten table: the new sysfs view (and netdevs) once the file parses whole and names the
// devices and ports the host started with; otherwise the view stays and one line says why.
void apply_rewrite(Host& h) {
  auto tables = formats::read_tables_file(h.tables_path);
  std::string why;
  if (!tables) {
    why = tables.error().what();
  } else if (ports_of(tables.value()) != ports_of(h.tables)) {
    why =
        "it names other devices or ports than when the fake host started (they cannot appear or "
        "disappear while programs run)";
  } else if (auto ok = formats::check_sysfs_tree(tables.value()); !ok) {
    why = ok.error().what() + kFixedTreeBound;
  }
  if (why.empty()) {
    const fs::path staged = h.work / "staged";
    std::error_code ec;
    fs::remove_all(staged, ec);
    fs::create_directories(staged, ec);
    auto written = fake_host::write_class_tree(tables.value(), staged);
    if (written) written = fake_host::sync_tree(staged, h.live);
    fs::remove_all(staged, ec);
    if (written && h.netns) written = fake_host::apply_netdevs(tables.value(), h.net);
    if (!written) why = written.error().what();
  }
  if (!why.empty()) {
    say(h.tables_path + " changed; the sysfs view is unchanged: " + why);
    return;
  }
  h.tables = std::move(tables.value());
}

// ---- namespaces -----------------------------------------------------------------------------

bool write_proc(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// A private mount namespace (and network namespace): directly as root, else inside a user
// namespace that maps the caller's own uid and gid (the command keeps its identity).
result<bool> enter_namespaces(bool netns) {
  const int flags = CLONE_NEWNS | (netns ? CLONE_NEWNET : 0);
  if (::unshare(flags) == 0) return false;
  const int direct = errno;
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(flags | CLONE_NEWUSER) == 0) {
    if (write_proc("/proc/self/setgroups", "deny") &&
        write_proc("/proc/self/uid_map", fmt::format("{0} {0} 1\n", uid)) &&
        write_proc("/proc/self/gid_map", fmt::format("{0} {0} 1\n", gid)))
      return true;
    return fail_errno(errno, "cannot map the user namespace's ids");
  }
  return fail(
      Error(std::error_code(direct, std::generic_category()), std::string("unshare: ") + err_text(direct)));
}

}  // namespace

int run_fake_host(const FakeHostArgs& o) {
  if (o.command.empty()) return say("no command: give it after --");
  if (!*kFakeLibDirs)
    return say("this gidpolicy was built without the fake libibverbs (GIDPOLICY_BUILD_FAKES)");
  std::error_code ec;
  auto found = fake_lib_dir();
  if (!found) return say(found.error().what());
  const fs::path libdir = found.value();
  if (!fs::exists(libdir / "libibverbs.so.1", ec))
    return say("the fake libibverbs is not installed: " + (libdir / "libibverbs.so.1").string() +
               " is missing (built with GIDPOLICY_BUILD_FAKES; Debian: the gidpolicy-fake package)");

  Host h;
  h.netns = o.netns;
  h.tables_path = fs::absolute(o.tables, ec).string();
  auto tables = formats::read_tables_file(h.tables_path);
  if (!tables) return say("--tables " + o.tables + ": " + tables.error().what());
  h.tables = std::move(tables.value());
  if (h.tables.empty()) return say("--tables " + o.tables + ": no device in the table");
  if (auto ok = formats::check_sysfs_tree(h.tables); !ok)
    return say("--tables " + o.tables + ": " + ok.error().what() + kFixedTreeBound);

  // The fabric directory: one per user, shared by every fake host of that user.
  const std::string fabric =
      o.fabric ? fs::absolute(*o.fabric, ec).string() : fmt::format("/tmp/gidpolicy-fabric-{}", ::geteuid());
  if (fabric.size() + 11 > sizeof(sockaddr_un{}.sun_path))
    return say("--fabric " + fabric + ": too long for a Unix socket address (at most 97 bytes)");
  if (::mkdir(fabric.c_str(), 0700) != 0 && errno != EEXIST)
    return say("--fabric " + fabric + ": cannot create it: " + err_text(errno));
  {
    struct stat st {};
    // A given --fabric may be a symbolic link to a directory (followed); the default path is
    // in a shared /tmp, where a link could have been planted by another user: never followed.
    if ((o.fabric ? ::stat(fabric.c_str(), &st) : ::lstat(fabric.c_str(), &st)) != 0)
      return say("--fabric " + fabric + ": " + err_text(errno));
    if (!o.fabric && S_ISLNK(st.st_mode))
      return say(fabric +
                 " is a symbolic link, which fake-host does not follow in /tmp (another user could "
                 "have made it): remove it, or give a directory of your own with --fabric");
    if (!S_ISDIR(st.st_mode)) return say("--fabric " + fabric + ": not a directory");
    if (!o.fabric && st.st_uid != ::geteuid())
      return say(fabric + " belongs to another user: give a directory of your own with --fabric");
  }

  // Socket files of QPs whose processes were killed (nothing listens on them any more): gone,
  // so the directory does not grow without bound. At most 65536 entries are looked at.
  {
    std::size_t n = 0;
    for (auto it = fs::directory_iterator(fabric, ec); !ec && it != fs::directory_iterator() && n < 65536;
         it.increment(ec), ++n) {
      const std::string path = it->path().string();
      if (it->path().filename().string().rfind("qp-", 0) != 0 ||
          path.size() >= sizeof(sockaddr_un{}.sun_path))
        continue;
      sockaddr_un a{};
      a.sun_family = AF_UNIX;
      std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
      const int probe = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      if (probe < 0) break;
      if (::connect(probe, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 && errno == ECONNREFUSED)
        ::unlink(path.c_str());
      ::close(probe);
    }
    ec.clear();
  }

  auto in_userns = enter_namespaces(o.netns);
  if (!in_userns)
    return say(fmt::format(
        "cannot create a private mount{} namespace ({}): it needs root, CAP_SYS_ADMIN{} (a container: "
        "--cap-add SYS_ADMIN{}) or unprivileged user namespaces; without them, programs that need no sysfs "
        "or /dev entries (ibverbs-utils, perftest) run with LD_LIBRARY_PATH={} GIDPOLICY_FAKE_TABLES={}",
        o.netns ? " and network" : "", in_userns.error().detail, o.netns ? " and CAP_NET_ADMIN" : "",
        o.netns ? " --cap-add NET_ADMIN" : "", libdir.string(), h.tables_path));
  h.net.in_user_namespace = in_userns.value();

  auto setup = [&]() -> result<void> {
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return fail_errno(errno, "cannot make the mounts private");
    // The private tmpfs: mounted on /tmp in this namespace only, for the set-up (nothing is
    // created on the caller's file systems, so nothing is left behind, even after SIGKILL), then
    // detached from /tmp before the command starts (the command sees the caller's /tmp). The
    // mounts made from it keep it alive; fake-host reaches it through a descriptor.
    if (::mount("tmpfs", kWorkMount, "tmpfs", MS_NOSUID, kWorkTmpfsOptions) != 0)
      return fail_errno(errno, std::string("cannot mount the fake host's private tmpfs on ") + kWorkMount +
                                   " (in its own mount namespace)");
    h.work = fs::path(kWorkMount) / "gidpolicy-fake-host";
    h.live = h.work / "class";
    const fs::path keep = h.work / "keep";
    const fs::path class_stub = h.work / "class-stub";
    const fs::path dev_stub = h.work / "dev-stub";
    std::error_code e;
    for (const fs::path& d : {h.live, keep, class_stub / "infiniband", class_stub / "infiniband_verbs",
                              dev_stub / "infiniband"}) {
      fs::create_directories(d, e);
      if (e) return fail(Error(e, d.string() + ": cannot create the directory"));
    }
    GIDPOLICY_TRYV(fake_host::write_class_tree(h.tables, h.live));
    if (o.netns) {
      GIDPOLICY_TRYV(fake_host::apply_netdevs(h.tables, h.net));
      // A sysfs of the new network namespace: /sys/class/net lists its netdevs.
      GIDPOLICY_TRYV(remount_keeping_children("/sys", keep / "sys", [&]() -> result<void> {
        if (::mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
          return fail_errno(errno, "cannot mount a sysfs for the network namespace");
        return success();
      }));
    }
    if (!fs::is_directory("/sys/class/infiniband", e) || !fs::is_directory("/sys/class/infiniband_verbs", e))
      GIDPOLICY_TRYV(remount_keeping_children("/sys/class", keep / "class", [&] {
        return overlay("/sys/class", class_stub, h.net.in_user_namespace);
      }));
    GIDPOLICY_TRYV(bind_read_only(h.live / "infiniband", "/sys/class/infiniband"));
    GIDPOLICY_TRYV(bind_read_only(h.live / "infiniband_verbs", "/sys/class/infiniband_verbs"));

    const std::size_t n_devices = fake_host::device_order(h.tables).size();
    if (fs::is_directory("/dev/infiniband", e)) {
      // A machine with real devices: a private directory over its /dev/infiniband.
      if (::mount("tmpfs", "/dev/infiniband", "tmpfs", MS_NOSUID, "mode=0755,size=64k") != 0)
        return fail_errno(errno, "cannot mount a tmpfs on /dev/infiniband");
      for (std::size_t i = 0; i < n_devices; ++i) std::ofstream("/dev/infiniband/uverbs" + std::to_string(i));
    } else {
      for (std::size_t i = 0; i < n_devices; ++i)
        std::ofstream(dev_stub / "infiniband" / ("uverbs" + std::to_string(i)));
      GIDPOLICY_TRYV(remount_keeping_children(
          "/dev", keep / "dev", [&] { return overlay("/dev", dev_stub, h.net.in_user_namespace); }));
    }
    for (std::size_t i = 0; i < n_devices; ++i) {
      const std::string node = "/dev/infiniband/uverbs" + std::to_string(i);
      if (::mount("/dev/null", node.c_str(), nullptr, MS_BIND, nullptr) != 0)
        return fail_errno(errno, "cannot bind /dev/null on " + node);
    }
    return success();
  };
  if (auto ok = setup(); !ok) {
    std::string why = no_space_is_the_tmpfs(ok.error());
    if (h.net.in_user_namespace)
      why += fmt::format(
          "; without fake-host, programs that need no sysfs or /dev entries (ibverbs-utils, perftest) run "
          "with "
          "LD_LIBRARY_PATH={} GIDPOLICY_FAKE_TABLES={}",
          libdir.string(), h.tables_path);
    return say(why);
  }
  {
    const int root = ::open(kWorkMount, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) return say(std::string("cannot open the private tmpfs: ") + err_text(errno));
    if (::umount2(kWorkMount, MNT_DETACH) != 0)
      return say(std::string("cannot detach the private tmpfs from ") + kWorkMount + ": " + err_text(errno));
    h.work = fs::path(fmt::format("/proc/self/fd/{}", root)) / "gidpolicy-fake-host";
    h.live = h.work / "class";
  }

  // Signals: the parent takes every catchable one synchronously and forwards it to the command
  // (as timeout(1) and tini do), so a USR1, ALRM or TERM meant for the command reaches it and
  // never ends fake-host with the command orphaned. Not taken: the ones a fault raises, and the
  // terminal's job control ones, which stop fake-host as they stop the command. The child gets
  // the caller's mask back.
  sigset_t taken, old_mask;
  sigfillset(&taken);
  for (int s : {SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT, SIGTSTP, SIGTTIN,
                SIGTTOU, SIGCONT})
    sigdelset(&taken, s);
  ::sigprocmask(SIG_BLOCK, &taken, &old_mask);
  const pid_t parent = ::getpid();

  const std::vector<std::string> env = child_environment(libdir, h.tables_path, fabric, o.driver);
  std::vector<char*> envp, argv;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  const pid_t child = ::fork();
  if (child < 0) return say(std::string("fork: ") + err_text(errno));
  if (child == 0) {
    // A fake-host killed by SIGKILL (which it cannot forward) takes the command with it: the
    // command must not outlive the fake view's owner. Checked after the request, in case the
    // parent died before it.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(kExitFakeHostFailed);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    environ = envp.data();
    ::execvp(argv[0], argv.data());
    const int e = errno;
    std::fprintf(stderr, "gidpolicy fake-host: cannot run %s: %s\n", argv[0], std::strerror(e));
    ::_exit(e == ENOENT ? 127 : 126);
  }

  std::string seen = fingerprint(h.tables_path);
  std::string pending = seen;
  auto pending_since = std::chrono::steady_clock::now();
  for (;;) {
    timespec tick{0, 100 * 1000 * 1000};
    siginfo_t info{};
    const int sig = ::sigtimedwait(&taken, &info, &tick);
    if (sig == SIGCHLD || sig < 0) {
      int status = 0;
      const pid_t r = ::waitpid(child, &status, WNOHANG);
      if (r == child) {
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      }
    } else if (sig > 0) {
      // A terminal's ^C, ^\ or resize reached the child already (same process group, sent by
      // the kernel); a kill(1) did not.
      const bool from_terminal =
          info.si_code == SI_KERNEL && (sig == SIGINT || sig == SIGQUIT || sig == SIGWINCH);
      if (!from_terminal) ::kill(child, sig);
    }
    // The table: applied once it has been quiet for 200 ms (a file written line by line is read
    // when the writer is done).
    const std::string now = fingerprint(h.tables_path);
    if (now != pending) {
      pending = now;
      pending_since = std::chrono::steady_clock::now();
    } else if (pending != seen &&
               std::chrono::steady_clock::now() - pending_since >= std::chrono::milliseconds(200)) {
      seen = pending;
      apply_rewrite(h);
    }
  }
}

#endif

}  // namespace gidpolicy::cli
