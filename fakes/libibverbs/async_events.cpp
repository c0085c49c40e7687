// Asynchronous events of the drop-in fake libibverbs.so.1, and how a running program's table
// changes: rewrite the table file.
//
//   GIDPOLICY_FAKE_TABLES=table.json some_program &      # the program opens a device
//   cp new.json table.json.tmp && mv table.json.tmp table.json
//   -> the program's ibv_get_async_event() returns IBV_EVENT_GID_CHANGE for each port whose
//      entries differ, IBV_EVENT_PORT_ERR / PORT_ACTIVE for a port whose state crossed active,
//      and its queries see the new table.
//
// How: the first ibv_open_device() starts one thread that watches the file's directory with
// inotify (IN_CLOSE_WRITE, IN_MOVED_TO: a rename over it or a completed write) and, where inotify
// is unavailable, polls the file's inode, size and mtime every 100 ms. On a change it re-reads
// the whole file and hands each port's table to the model (FakeVerbs::replace_port), which swaps
// it in under one lock and raises the events; nothing is half-applied (a file that does not
// parse, or names an entry beyond a port's gid_tbl_len, changes nothing and is logged). Devices
// and ports cannot appear or disappear: those in the new file that the process did not start
// with are ignored. Write the new file next to the old one and rename it over: a reader never
// sees a half-written file that way, and IN_MOVED_TO fires once.
//
// ibv_context::async_fd is the model's eventfd for the context (readable while an event is
// pending), so poll()/epoll on it works as with a real device. ibv_get_async_event blocks
// unless the program made async_fd O_NONBLOCK (then -1 + EAGAIN), as libibverbs does.
#include "fakelib.hpp"

#include <gidpolicy/formats/detect.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

namespace gidpolicy::fakelib {
namespace {

struct FileStamp {
  ino_t inode = 0;
  off_t size = 0;
  timespec mtime{};
  bool operator==(const FileStamp& o) const {
    return inode == o.inode && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
           mtime.tv_nsec == o.mtime.tv_nsec;
  }
};

FileStamp stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_ino, st.st_size, st.st_mtim};
}

/// Re-read the table file and hand every port the process knows to the model.
void reload(Library& lib, const std::string& path) {
  auto tables = formats::read_tables_file(path);
  nlohmann::ordered_json r = lib.record("table_reload", nullptr);
  r["file"] = path;
  if (!tables) {
    r["result"] = "unchanged";
    r["reason"] = tables.error().what();
    lib.log.write(r);
    return;
  }
  // Check every port first: a file with one bad port changes nothing at all.
  std::vector<const GidTable*> known;
  for (const GidTable& t : tables.value()) {
    auto current = lib.model.table(t.port().device, t.port().port);
    if (!current) continue;  // a device or port the process did not start with
    for (const GidEntry& e : t)
      if (e.index >= current.value().length()) {
        r["result"] = "unchanged";
        r["reason"] = t.port().device + " port " + std::to_string(t.port().port) + ": index " +
                      std::to_string(e.index) + " is not below gid_tbl_len " +
                      std::to_string(current.value().length());
        lib.log.write(r);
        return;
      }
    known.push_back(&t);
  }
  unsigned changed = 0;
  for (const GidTable* t : known) {
    auto c = lib.model.replace_port(*t);
    if (c && c.value()) ++changed;
  }
  r["result"] = "reloaded";
  r["ports_changed"] = changed;
  lib.log.write(r);
}

/// `in`/`wd`: the inotify instance and watch, set up before the thread starts so a rewrite
/// right after ibv_open_device() returns is never missed; wd < 0: poll the file's stamp.
[[noreturn]] void watch_file(Library* lib, const std::string& path, int in, int wd) {
  const std::string name = std::filesystem::path(path).filename().string();
  FileStamp last = stamp_of(path);
  while (true) {
    if (wd >= 0) {
      alignas(inotify_event) std::array<char, 4096> buf{};
      const ssize_t n = ::read(in, buf.data(), buf.size());
      if (n <= 0) continue;
      bool ours = false;
      for (ssize_t off = 0; off + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
        inotify_event ev{};
        std::memcpy(&ev, buf.data() + off, sizeof ev);
        if (ev.len > 0) {
          const char* fname = buf.data() + off + sizeof(inotify_event);
          if (name == std::string(fname, strnlen(fname, ev.len))) ours = true;
        }
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev.len);
      }
      if (!ours) continue;
    } else {
      ::poll(nullptr, 0, 100);  // no inotify (a restricted container): poll the file's stamp
      const FileStamp now = stamp_of(path);
      if (now == last) continue;
    }
    last = stamp_of(path);
    reload(*lib, path);
  }
}

}  // namespace

void start_table_watch(Library& lib) {
  static std::once_flag once;
  std::call_once(once, [&lib] {
    const char* env = std::getenv("GIDPOLICY_FAKE_TABLES");
    if (!env || !*env) return;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(env, ec)) return;  // a sysfs-like directory: not watched
    const std::filesystem::path p(env);
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    const int in = ::inotify_init1(IN_CLOEXEC);
    const int wd = in >= 0 ? ::inotify_add_watch(in, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO) : -1;
    std::thread(watch_file, &lib, std::string(env), in, wd).detach();
  });
}

}  // namespace gidpolicy::fakelib

using namespace gidpolicy;
using namespace gidpolicy::fakelib;

extern "C" {

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  verbs::DeviceHandle handle;
  int fd = -1;
  Library& lib = Library::get();
  {
    std::lock_guard lock(lib.mu);
    Context* c = lib.context(context);
    if (!c || !event) {
      errno = EINVAL;
      return -1;
    }
    handle = c->handle;
    fd = context->async_fd;
  }
  // Wait without the library's lock: the calls that change the table must go on meanwhile.
  auto ev = lib.model.wait_async_event(handle, fd);
  if (!ev) {
    errno = errno_of(ev.error());
    return -1;
  }
  *event = ev.value().raw;
  auto r = lib.record("get_async_event", nullptr);
  r["event"] = verbs::async_event_name(event->event_type);
  r["port"] = event->element.port_num;
  lib.log.write(r);
  return 0;
}

void ibv_ack_async_event(ibv_async_event* event) {
  // libibverbs counts acks of QP/CQ/SRQ events so destroying those objects can wait for them;
  // the fake raises port and GID events and IBV_EVENT_CQ_ERR (a CQ overrun), and its destroy
  // calls do not wait, so an ack has no effect.
  (void)event;
}

}  // extern "C"
