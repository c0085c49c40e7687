// GidWatcher: follow a device's GID tables as they change, from its asynchronous events.
//
// The kernel announces table changes as IBV_EVENT_GID_CHANGE on the device's async_fd, and link
// changes as IBV_EVENT_PORT_ERR / IBV_EVENT_PORT_ACTIVE. The watcher reads those events (and
// acks every one), re-reads each port they name once per batch, and reports what changed for the
// GID followed on that port (change.hpp: moved, disappeared, reappeared, twin_changed...).
// replan() turns such a report into the next plan; apply_rtr()'s preflight still refuses a stale
// plan, the watcher is how an application avoids reaching that refusal.
//
// Hardware gotchas encoded here:
//  * An event says only "something in port N's table changed", never what: the watcher keeps
//    the previous snapshot of each port and compares by GID value and type (indices are
//    reallocated first-free, NCCL 2157).
//  * Several events arrive for one change (mlx5 adds v1 and v2 entries one by one, a port flap
//    removes then re-adds): everything pending is drained and each port read once, so one
//    report covers a burst that was already queued. At most kMaxEventsPerProcess are read per
//    process() call; the fd stays readable if more wait.
//  * A port that is down is still read (SnapshotOptions::allow_inactive): its state is part of
//    the report, and replan() refuses to advertise from it.
//  * A re-read that fails (a driver error) keeps the port marked and is retried by the next
//    process(), even without a new event: no change is lost to a transient error.
//
// Two forms:
//   Event loop: poll(watcher.fd(), POLLIN) with the application's other fds; when readable,
//   call watcher.process() (never blocks).
//   Thread: WatchThread runs that loop and calls back. The VerbsApi must then be usable from
//   that thread while the application uses it (FakeVerbs is; libibverbs itself is, but
//   FunctionTableApi's bookkeeping is not): open a second VerbsApi for the watcher.
//
// Example:
//   auto w = gidpolicy::verbs::GidWatcher::open(api, dev, {1}).value();
//   if (auto f = w.follow(1, plan.selection.entry); !f) return f;
//   pollfd p{w.fd(), POLLIN, 0};
//   while (poll(&p, 1, -1) > 0)
//     for (const auto& c : w.process().value())
//       if (auto next = gidpolicy::replan(profile, plan, c); next && next.value().changed)
//         send_to_peer(next.value().plan.selection.entry.gid);
#pragma once

#include <gidpolicy/change.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/verbs/snapshot.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace gidpolicy::verbs {

/// Watches the ports of one open device. Not thread-safe; movable.
class GidWatcher {
 public:
  static constexpr std::size_t kMaxEventsPerProcess = 1024;

  /// Snapshot `ports` of `device` (every port 1..phys_port_cnt is not known to the seam: name
  /// them; an empty list means port 1) and start from there. Errors: the backend's
  /// async_event_fd() error (errc::not_supported when it has no events), the first snapshot's.
  static result<GidWatcher> open(VerbsApi& api, DeviceHandle device, std::vector<std::uint32_t> ports = {});

  /// Follow `advertised` on `port` from now on (after a replan, the new plan's entry).
  /// errc::invalid_argument for a port not watched.
  result<void> follow(std::uint32_t port, const GidEntry& advertised);
  /// Stop following a GID on `port` (changes are then reported as untracked).
  void unfollow(std::uint32_t port);
  [[nodiscard]] std::optional<GidEntry> followed(std::uint32_t port) const;

  /// Readable (POLLIN) while events are pending. Owned by the backend.
  [[nodiscard]] int fd() const noexcept { return fd_; }
  /// Drain pending events without blocking, re-read the ports they name, and report one
  /// GidChange per port whose table or state differs from the previous snapshot. Empty when
  /// nothing pending changed anything.
  result<std::vector<GidChange>> process();

  /// The last snapshot of a watched port, or nullptr.
  [[nodiscard]] const GidTable* table(std::uint32_t port) const;
  [[nodiscard]] const std::vector<std::uint32_t>& ports() const noexcept { return ports_; }
  /// Events read (and acked) so far.
  [[nodiscard]] unsigned long events_seen() const noexcept { return events_seen_; }

 private:
  GidWatcher(VerbsApi& api, DeviceHandle device, int fd) : api_(&api), device_(device), fd_(fd) {}

  VerbsApi* api_;
  DeviceHandle device_;
  int fd_ = -1;
  std::vector<std::uint32_t> ports_;
  std::map<std::uint32_t, GidTable> tables_;
  std::map<std::uint32_t, GidEntry> followed_;
  std::map<std::uint32_t, std::set<std::string>> dirty_;  // port -> causes not yet re-read
  unsigned long events_seen_ = 0;
};

/// The callback form: a thread that polls a GidWatcher and calls `on_change` for each change
/// (with the watcher, so the callback can follow() a re-planned entry) and `on_error` when
/// process() fails (it retries 100 ms later). Callbacks run on the watch thread.
/// The destructor stops and joins it.
///
/// Example:
///   auto t = WatchThread::start(std::move(watcher),
///       [&](GidWatcher& w, const GidChange& c) {
///         if (auto next = replan(profile, plan, c); next && next.value().changed)
///           (void)w.follow(c.port, next.value().plan.selection.entry);
///       },
///       [](const Error& e) { std::cerr << e.what() << "\n"; });
class WatchThread {
 public:
  using OnChange = std::function<void(GidWatcher&, const GidChange&)>;
  using OnError = std::function<void(const Error&)>;

  /// Errors: errno of the stop signal's creation (eventfd() on Linux, pipe() elsewhere), or of
  /// thread creation.
  static result<std::unique_ptr<WatchThread>> start(GidWatcher watcher, OnChange on_change,
                                                    OnError on_error = {});
  ~WatchThread();
  WatchThread(const WatchThread&) = delete;
  WatchThread& operator=(const WatchThread&) = delete;
  /// Stop and join (idempotent). Callbacks in progress finish first.
  void stop();

 private:
  WatchThread(GidWatcher watcher, OnChange on_change, OnError on_error, int stop_read_fd, int stop_write_fd);
  void run();

  GidWatcher watcher_;
  OnChange on_change_;
  OnError on_error_;
  int stop_read_fd_ = -1;   // polled by the thread
  int stop_write_fd_ = -1;  // written by stop(); the same descriptor when it is an eventfd
  std::thread thread_;
};

}  // namespace gidpolicy::verbs
