// How a running program's table changes: rewrite GIDPOLICY_FAKE_TABLES while it runs.
//
//   GIDPOLICY_FAKE_TABLES=table.json some_program &      # the program opens a device
//   cp new.json table.json.tmp && mv table.json.tmp table.json
//   -> the program's ibv_get_async_event() returns IBV_EVENT_GID_CHANGE for each port whose
//      entries differ, IBV_EVENT_PORT_ERR / PORT_ACTIVE for a port whose state crossed active,
//      and its queries see the new table.
//
// What counts as a rewrite: anything that changes what the path names. The path is resolved
// component by component, following symbolic links, and every directory entry that resolution
// looks up is watched (inotify on its directory, filtered to that name): the file itself
// written in place or renamed over, a symlink anywhere on the path retargeted (a Kubernetes
// ConfigMap swaps its `..data` link to a new timestamped directory), a symlink's target
// rewritten, a directory on the path deleted and created again. After every change the path is
// resolved and watched afresh, then the file read, so a change made while the watches move is
// seen by the read. Where inotify is missing or a directory cannot be watched, the same entries
// are polled every 100 ms (their inodes, sizes and times); GIDPOLICY_FAKE_WATCH=poll asks for
// polling only.
//
// What is applied: only a table that is whole. A change is read once the path has been quiet
// for 200 ms (a file written line by line is read when the writer is done) and the file did not
// change during the read. Then it must parse completely, name every device and port the process
// started with (devices and ports cannot appear or disappear: new ones are ignored, a missing one
// means the file is not whole), list no entry beyond a port's gid_tbl_len, end with a newline if
// it is text, and, in a text format that cannot tell a cut-off file from a whole one (ibv_devinfo
// output, show_gids rows without their footer), list at least one GID. A file that fails any of
// these changes nothing: the previous table stays, and the control log's table_reload record says
// why. The same bytes are never applied or reported twice. A sysfs-like directory is not watched.
#include "fakelib.hpp"

#include <gidpolicy/formats/detect.hpp>

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>

namespace gidpolicy::fakelib {
namespace {

constexpr int kQuietMs = 200;     // a change is read once the path was quiet this long
constexpr int kPollMs = 100;      // the polling fallback's period
constexpr int kMaxSymlinks = 40;  // as the kernel's path walk (ELOOP beyond)
constexpr std::uint32_t kDirEvents = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE |
                                     IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

/// A directory entry that resolving the table's path looked up.
struct Lookup {
  std::string dir;
  std::string name;
};

/// What the path names now, and every entry looked up to find out.
struct Resolved {
  std::vector<Lookup> lookups;
  std::string file;  // empty: the path names no file now (`why` says what is missing)
  std::string why;
};

std::deque<std::string> components(const std::string& path) {
  std::deque<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::size_t end = slash == std::string::npos ? path.size() : slash;
    if (end > start) out.emplace_back(path, start, end - start);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

std::string join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string parent_of(const std::string& dir) {
  const std::size_t slash = dir.rfind('/');
  return slash == 0 || slash == std::string::npos ? std::string("/") : dir.substr(0, slash);
}

/// Walk the absolute `path` as the kernel does, one component at a time, following symlinks.
Resolved resolve(const std::string& path) {
  Resolved r;
  std::deque<std::string> todo = components(path);
  std::string cur = "/";
  int links = 0;
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c == ".") continue;
    if (c == "..") {
      cur = parent_of(cur);  // `cur` has no symlink left in it: its parent is lexical
      continue;
    }
    r.lookups.push_back({cur, c});
    const std::string next = join(cur, c);
    struct stat st {};
    if (::lstat(next.c_str(), &st) != 0) {
      r.why = next + ": " + std::strerror(errno);
      return r;
    }
    if (S_ISLNK(st.st_mode)) {
      std::array<char, PATH_MAX> buf{};
      const ssize_t n = ::readlink(next.c_str(), buf.data(), buf.size());
      if (n <= 0 || static_cast<std::size_t>(n) >= buf.size() || ++links > kMaxSymlinks) {
        r.why = next + ": " + (n <= 0 ? std::strerror(errno) : "too many or too long symbolic links");
        return r;
      }
      const std::string target(buf.data(), static_cast<std::size_t>(n));
      if (target.front() == '/') cur = "/";
      std::deque<std::string> more = components(target);
      todo.insert(todo.begin(), more.begin(), more.end());
      continue;
    }
    cur = next;
    if (!todo.empty() && !S_ISDIR(st.st_mode)) {
      r.why = next + ": not a directory";
      return r;
    }
  }
  r.file = cur;
  return r;
}

struct Stamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{};
  timespec ctime{};
  bool operator==(const Stamp& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec && ctime.tv_sec == o.ctime.tv_sec &&
           ctime.tv_nsec == o.ctime.tv_nsec;
  }
};

Stamp stamp_of(const std::string& path, bool follow) {
  struct stat st {};
  if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
}

std::string stamp_text(const Stamp& s) {
  return std::to_string(s.dev) + ":" + std::to_string(s.ino) + ":" + std::to_string(s.size) + ":" +
         std::to_string(s.mtime.tv_sec) + "." + std::to_string(s.mtime.tv_nsec) + ":" +
         std::to_string(s.ctime.tv_sec) + "." + std::to_string(s.ctime.tv_nsec);
}

std::int64_t now_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1'000'000;
}

class Watcher {
 public:
  Watcher(Library& lib, std::string path, int inotify_fd)
      : lib_(lib), path_(std::move(path)), in_(inotify_fd) {
    rewatch();
    if (auto text = formats::read_text_file(path_)) last_text_ = std::move(text).value();  // what was loaded
  }

  /// Until stop(): wait for a change, for quiet, then apply.
  void run() {
    while (!stopped()) {
      wait_for_change();
      do {
        wait_for_quiet();
        if (stopped()) return;
        rewatch();
      } while (!check());
    }
  }

  /// Wake run() and make it return (at exit, and when a program dlclose()s the library: a thread
  /// still running the library's code after its pages are unmapped would crash the process).
  void stop() {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(stop_, &one, sizeof one);
  }

 private:
  /// Place the watches on what the path names now (keeping those still needed, so their
  /// IN_IGNORED never looks like a change) and note the polling signature.
  void rewatch() {
    const Resolved r = resolve(path_);
    std::map<int, std::set<std::string>> next;
    bool failed = in_ < 0;
    if (in_ >= 0) {
      for (const Lookup& l : r.lookups) {
        const int wd = ::inotify_add_watch(in_, l.dir.c_str(), kDirEvents);
        if (wd < 0) {
          failed = true;  // ENOSPC (the user's watch limit), EACCES...: poll instead
        } else {
          next[wd].insert(l.name);
        }
      }
    }
    std::vector<int> gone;
    for (const auto& [wd, names] : names_)
      if (!next.count(wd)) gone.push_back(wd);
    names_ = std::move(next);
    for (int wd : gone) ::inotify_rm_watch(in_, wd);
    polling_ = failed;
    signature_ = signature(r);
  }

  /// What polling compares: the file the path names, and the inode and times of it and of every
  /// directory the path goes through (a directory's times change with its entries).
  static std::string signature(const Resolved& r) {
    std::string s = r.file + "|" + stamp_text(stamp_of(r.file, true));
    for (const Lookup& l : r.lookups) s += "|" + l.dir + "=" + stamp_text(stamp_of(l.dir, false));
    return s;
  }

  /// Read pending inotify events; true when one concerns an entry the path goes through.
  bool drain() {
    bool relevant = false;
    alignas(inotify_event) std::array<char, 8192> buf{};
    while (true) {
      const ssize_t n = ::read(in_, buf.data(), buf.size());
      if (n <= 0) break;
      for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
        inotify_event ev{};
        std::memcpy(&ev, buf.data() + off, sizeof ev);
        if (ev.mask & IN_Q_OVERFLOW) relevant = true;  // events were lost: look again
        auto it = names_.find(ev.wd);
        if (it != names_.end()) {
          if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT)) relevant = true;
          if (ev.len > 0) {
            const char* name = buf.data() + off + sizeof(inotify_event);
            if (it->second.count(std::string(name, strnlen(name, ev.len)))) relevant = true;
          }
        }
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev.len);
      }
    }
    return relevant;
  }

  /// Block for up to `ms` (-1: forever) for inotify events; true when a relevant one came or,
  /// when polling, the signature moved.
  bool changed_within(int ms) {
    pollfd p[2] = {{stop_, POLLIN, 0}, {in_, POLLIN, 0}};
    if (in_ >= 0) {
      const int wait = polling_ ? (ms < 0 ? kPollMs : std::min(ms, kPollMs)) : ms;
      if (::poll(p, 2, wait) > 0 && (p[0].revents || drain())) return true;
    } else {
      if (::poll(p, 1, ms < 0 ? kPollMs : std::min(ms, kPollMs)) > 0) return true;
    }
    if (stopped()) return true;
    if (polling_) {
      std::string now = signature(resolve(path_));
      if (now != signature_) {
        signature_ = std::move(now);
        return true;
      }
    }
    return false;
  }

  void wait_for_change() {
    while (!changed_within(-1) && !stopped()) {
    }
  }

  /// Until nothing on the path changed for kQuietMs.
  void wait_for_quiet() {
    std::int64_t deadline = now_ms() + kQuietMs;
    for (std::int64_t left = kQuietMs; left > 0 && !stopped(); left = deadline - now_ms())
      if (changed_within(static_cast<int>(left))) deadline = now_ms() + kQuietMs;
  }

  /// Read the file and apply it when it is whole and new. False: it changed while being read
  /// (wait for quiet and read again).
  bool check() {
    const Stamp before = stamp_of(path_, true);
    auto text = formats::read_text_file(path_);
    if (!(stamp_of(path_, true) == before)) return false;
    if (!text) {
      if (std::string why = text.error().what(); why != last_reason_) unchanged(why);
      return true;
    }
    last_reason_.clear();
    if (text.value() == last_text_) return true;  // touched, or written back as it was
    last_text_ = std::move(text).value();
    apply(last_text_);
    return true;
  }

  void unchanged(const std::string& why) {
    last_reason_ = why;
    nlohmann::ordered_json r = lib_.record("table_reload", nullptr);
    r["file"] = path_;
    r["result"] = "unchanged";
    r["reason"] = why;
    lib_.log.write(r);
  }

  /// Why `tables`, read from `text`, is not a whole table for this process; empty when it is.
  std::string not_whole(const std::string& text, const std::vector<GidTable>& tables) const {
    auto find = [&](const std::string& device, std::uint32_t port) -> const GidTable* {
      for (const GidTable& t : tables)
        if (t.port().device == device && t.port().port == port) return &t;
      return nullptr;
    };
    const auto format = formats::detect_format(text, path_);
    const bool is_text = !format || format.value() != formats::Format::json;
    if (is_text && (text.empty() || text.back() != '\n'))
      return "the file does not end with a newline (a write in progress?)";
    std::size_t gids = 0;
    std::size_t had = 0;
    for (const auto& d : lib_.devices)
      for (std::uint32_t port : d->ports) {
        const GidTable* t = find(d->name, port);
        if (!t)
          return port_name(d->name, port) +
                 " is not in the file (devices and ports cannot change while programs run; a partial file?)";
        auto current = lib_.model.table(d->name, port);
        if (!current) continue;
        for (const GidEntry& e : current.value())
          if (e.usable()) ++had;
        for (const GidEntry& e : *t) {
          if (e.index >= current.value().length())
            return entry_name(d->name, port, e.index) + " is not below gid_tbl_len " +
                   std::to_string(current.value().length());
          if (e.usable()) ++gids;
        }
      }
    // ibv_devinfo text, and show_gids rows without their n_gids_found footer, read the same cut
    // off after any line as whole: a file of one of them that lists no GID at all is most likely
    // one being written. JSON and show_gids with its footer say when they are whole.
    const bool has_end_marker =
        format &&
        (format.value() == formats::Format::json ||
         (format.value() == formats::Format::show_gids && text.find("n_gids_found=") != std::string::npos));
    if (gids == 0 && had > 0 && !has_end_marker)
      return "the file lists no GID at all, and its format cannot tell a cut-off file from a whole one "
             "(write JSON, or show_gids with its n_gids_found footer, to empty every table)";
    return {};
  }

  void apply(const std::string& text) {
    auto tables = formats::read_tables(text, path_);
    if (!tables) return unchanged(tables.error().what());
    if (std::string why = not_whole(text, tables.value()); !why.empty()) return unchanged(why);
    unsigned changed = 0;
    for (const GidTable& t : tables.value()) {
      if (!lib_.model.table(t.port().device, t.port().port)) continue;  // not one the process started with
      auto c = lib_.model.replace_port(t);
      if (c && c.value()) ++changed;
    }
    nlohmann::ordered_json r = lib_.record("table_reload", nullptr);
    r["file"] = path_;
    r["result"] = "reloaded";
    r["ports_changed"] = changed;
    lib_.log.write(r);
  }

  bool stopped() const {
    pollfd p{stop_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

  Library& lib_;
  const std::string path_;
  const int in_;                                // inotify instance; -1: poll only
  const int stop_ = ::eventfd(0, EFD_CLOEXEC);  // written once by stop()
  std::map<int, std::set<std::string>> names_;  // watch -> the names looked up in its directory
  bool polling_ = false;                        // some entry could not be watched
  std::string signature_;
  std::string last_text_;    // the bytes last applied or refused
  std::string last_reason_;  // the last read failure reported
};

}  // namespace

void start_table_watch(Library& lib) {
  static std::once_flag once;
  std::call_once(once, [&lib] {
    const char* env = std::getenv("GIDPOLICY_FAKE_TABLES");
    if (!env || !*env) return;
    std::error_code ec;
    if (std::filesystem::is_directory(env, ec)) return;  // a sysfs-like directory: not watched
    const std::string path = std::filesystem::absolute(env, ec).string();
    if (ec || path.empty()) return;
    // Watches placed and the loaded bytes noted before ibv_open_device() returns, so a rewrite
    // right after it is never missed.
    // GIDPOLICY_FAKE_WATCH=poll: the polling fallback even where inotify works (to test it, or
    // for a file system whose changes inotify does not see, such as NFS written by another host).
    const char* mode = std::getenv("GIDPOLICY_FAKE_WATCH");
    const bool poll_only = mode && std::strcmp(mode, "poll") == 0;
    const int in = poll_only ? -1 : ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    static Watcher* watcher = new Watcher(lib, path, in);  // lives as long as the process
    // Not a static std::thread: its destructor, an exit handler of its own, terminates the
    // process if it runs while the thread is joinable - and it does when two threads call
    // exit() at once (rping 44's event thread exits while main returns), glibc handing one the
    // join below and the other the destructor. Nothing here has a destructor.
    static std::thread* thread = new std::thread([] { watcher->run(); });
    // Run at exit and, because the library registers it, at dlclose() too (glibc runs a shared
    // object's atexit handlers when it is unloaded): the thread returns and is joined first.
    static std::atomic<bool> joined{false};
    std::atexit([] {
      watcher->stop();
      if (!joined.exchange(true) && thread->joinable()) thread->join();
    });
  });
}

}  // namespace gidpolicy::fakelib
