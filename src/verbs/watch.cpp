#include <gidpolicy/verbs/watch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/eventfd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <utility>

namespace gidpolicy::verbs {
namespace {

// The stop signal, {read end, write end}. Linux: one eventfd. Elsewhere (macOS has no eventfd):
// a self-pipe. Both ends non-blocking and close-on-exec. The pipe version is compiled on Linux
// too, so the portable branch cannot rot unbuilt.
[[maybe_unused]] result<std::pair<int, int>> open_stop_pipe() {
  int p[2];
  if (::pipe(p) != 0) return fail_errno(errno, "WatchThread: pipe");
  for (const int fd : p) {
    const int fl = ::fcntl(fd, F_GETFL);
    if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 || fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
      const int err = errno;
      ::close(p[0]);
      ::close(p[1]);
      return fail_errno(err, "WatchThread: fcntl on the stop pipe");
    }
  }
  return std::pair{p[0], p[1]};
}

result<std::pair<int, int>> open_stop_signal() {
#if defined(__linux__)
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return fail_errno(errno, "WatchThread: eventfd");
  return std::pair{fd, fd};
#else
  return open_stop_pipe();
#endif
}

}  // namespace

result<GidWatcher> GidWatcher::open(VerbsApi& api, DeviceHandle device, std::vector<std::uint32_t> ports) {
  GIDPOLICY_TRY(fd, api.async_event_fd(device));
  if (ports.empty()) ports.push_back(1);
  std::sort(ports.begin(), ports.end());
  ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  GidWatcher w(api, device, fd);
  for (std::uint32_t p : ports) {
    GIDPOLICY_TRY(t, snapshot(api, device, p, {.allow_inactive = true}));
    w.tables_.emplace(p, std::move(t));
  }
  w.ports_ = std::move(ports);
  return w;
}

result<void> GidWatcher::follow(std::uint32_t port, const GidEntry& advertised) {
  if (!tables_.count(port))
    return fail(errc::invalid_argument,
                "GidWatcher::follow: port " + std::to_string(port) + " is not watched");
  followed_[port] = advertised;
  return success();
}

void GidWatcher::unfollow(std::uint32_t port) { followed_.erase(port); }

std::optional<GidEntry> GidWatcher::followed(std::uint32_t port) const {
  auto it = followed_.find(port);
  if (it == followed_.end()) return std::nullopt;
  return it->second;
}

const GidTable* GidWatcher::table(std::uint32_t port) const {
  auto it = tables_.find(port);
  return it == tables_.end() ? nullptr : &it->second;
}

result<std::vector<GidChange>> GidWatcher::process() {
  for (std::size_t i = 0; i < kMaxEventsPerProcess; ++i) {
    GIDPOLICY_TRY(ev, api_->read_async_event(device_));
    if (!ev) break;
    ++events_seen_;
    GIDPOLICY_TRYV(api_->ack_async_event(device_, *ev));
    switch (ev->type) {
      case IBV_EVENT_GID_CHANGE:
      case IBV_EVENT_PORT_ACTIVE:
      case IBV_EVENT_PORT_ERR:
        if (tables_.count(ev->port)) dirty_[ev->port].insert(async_event_name(ev->type));
        break;
      default:
        break;  // QP/CQ/SRQ events and LID/P_Key changes say nothing about GIDs
    }
  }
  std::vector<GidChange> out;
  while (!dirty_.empty()) {
    const auto it = dirty_.begin();
    const std::uint32_t port = it->first;
    // Fails leave the port dirty: the next process() retries it.
    GIDPOLICY_TRY(now, snapshot(*api_, device_, port, {.allow_inactive = true}));
    std::string cause;
    for (const auto& c : it->second) cause += (cause.empty() ? "" : ", ") + c;
    dirty_.erase(it);
    GidTable& before = tables_[port];
    if (now == before) continue;  // an event that changed nothing visible
    std::optional<GidEntry> adv;
    if (auto f = followed_.find(port); f != followed_.end()) adv = f->second;
    GidChange c = classify_change(before, now, adv, std::move(cause));
    // Keep following the same GID; its index hint moves with it.
    if (adv && c.new_index) followed_[port].index = *c.new_index;
    before = std::move(now);
    out.push_back(std::move(c));
  }
  return out;
}

// ---- WatchThread ---------------------------------------------------------------------------

result<std::unique_ptr<WatchThread>> WatchThread::start(GidWatcher watcher, OnChange on_change,
                                                        OnError on_error) {
  GIDPOLICY_TRY(stop_fds, open_stop_signal());
  std::unique_ptr<WatchThread> t(new WatchThread(std::move(watcher), std::move(on_change),
                                                 std::move(on_error), stop_fds.first, stop_fds.second));
  try {
    t->thread_ = std::thread([p = t.get()] { p->run(); });
  } catch (const std::system_error& e) {  // no thread resource: a value, not an exception
    return fail(Error(e.code(), "WatchThread: cannot start a thread"));
  }
  return t;
}

WatchThread::WatchThread(GidWatcher watcher, OnChange on_change, OnError on_error, int stop_read_fd,
                         int stop_write_fd)
    : watcher_(std::move(watcher)),
      on_change_(std::move(on_change)),
      on_error_(std::move(on_error)),
      stop_read_fd_(stop_read_fd),
      stop_write_fd_(stop_write_fd) {}

WatchThread::~WatchThread() {
  stop();
  if (stop_write_fd_ >= 0 && stop_write_fd_ != stop_read_fd_) ::close(stop_write_fd_);
  if (stop_read_fd_ >= 0) ::close(stop_read_fd_);
}

void WatchThread::stop() {
  if (!thread_.joinable()) return;
  const std::uint64_t one = 1;
  // 8 bytes: what an eventfd requires; a pipe takes them as well.
  [[maybe_unused]] const ssize_t n = ::write(stop_write_fd_, &one, sizeof one);
  thread_.join();
}

void WatchThread::run() {
  int timeout_ms = -1;
  while (true) {
    pollfd fds[2] = {{stop_read_fd_, POLLIN, 0}, {watcher_.fd(), POLLIN, 0}};
    const int n = ::poll(fds, 2, timeout_ms);
    if (n < 0 && errno != EINTR) {
      if (on_error_) on_error_(Error(std::error_code(errno, std::generic_category()), "WatchThread: poll"));
      return;
    }
    if (fds[0].revents & POLLIN) return;
    auto changes = watcher_.process();
    if (!changes) {
      if (on_error_) on_error_(changes.error());
      timeout_ms = 100;  // the failed port stays marked: retry soon, without a new event
      continue;
    }
    timeout_ms = -1;
    for (const GidChange& c : changes.value())
      if (on_change_) on_change_(watcher_, c);
  }
}

}  // namespace gidpolicy::verbs
