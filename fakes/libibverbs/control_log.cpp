// The control log of the drop-in fake libibverbs.so.1 (GIDPOLICY_FAKE_LOG): one JSON object per
// line, one write() per record.
//
// The log is the fake's own I/O, not the program's, so it must never change how the program
// runs:
//  * it never blocks: the file is opened O_NONBLOCK (a FIFO without a reader would otherwise
//    block the first verbs call in open(), and a reader that stops reading would block every
//    call in write()); a FIFO that has no reader yet is opened when one comes;
//  * it never raises SIGPIPE: SIGPIPE is blocked in the writing thread around the write(), and
//    the one a broken pipe raised is taken back before the mask is restored, so a program whose
//    log reader exits lives on, with its own SIGPIPE disposition and signal mask as they were;
//  * it never changes errno (a verbs call reports its own errno, not the log's);
//  * it never loses a record silently: the first record that cannot be written (EAGAIN: the
//    reader is slow; ENOSPC; EPIPE: the reader left; ENXIO: no reader yet) is said once on
//    stderr, naming the file and the reason. Once, because a log that cannot be written would
//    otherwise turn every verbs call into a line on stderr.
#include "fakelib.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace gidpolicy::fakelib {
namespace {

constexpr std::int64_t kFifoRetryNs = 100'000'000;  // how often a reader-less FIFO is retried

std::int64_t monotonic_ns() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

int open_log(const std::string& path) noexcept {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
}

/// SIGPIPE blocked in this thread for the guard's lifetime. A SIGPIPE that a write() raised
/// meanwhile is taken back (unless one was already pending before: that one is the program's),
/// so restoring the mask delivers nothing. The disposition is never touched: it is the
/// program's, and process-wide.
class SigpipeBlocked {
 public:
  SigpipeBlocked() noexcept {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    was_pending_ = ::sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    blocked_ = ::pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;
  /// After a write() that failed with EPIPE: consume the SIGPIPE it raised.
  void take_back() noexcept {
    if (!blocked_ || was_pending_) return;
    const timespec zero{};
    while (::sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  ~SigpipeBlocked() {
    if (blocked_) ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool was_pending_ = false;
  bool blocked_ = false;
};

/// write() the whole buffer to `fd` without SIGPIPE; true when it all went. `err`: why not.
bool write_quietly(int fd, const char* data, std::size_t size, int& err) noexcept {
  SigpipeBlocked guard;
  ssize_t n;
  do {
    n = ::write(fd, data, size);
  } while (n < 0 && errno == EINTR);
  err = n < 0 ? errno : 0;
  if (n < 0 && err == EPIPE) guard.take_back();
  return n >= 0 && static_cast<std::size_t>(n) == size;
}

}  // namespace

ControlLog::~ControlLog() {
  if (fd_ >= 0) ::close(fd_);
}

int ControlLog::open(const std::string& path) noexcept {
  try {
    path_ = path;
  } catch (...) {
    return ENOMEM;
  }
  fd_ = open_log(path_);
  if (fd_ >= 0) return 0;
  const int err = errno;
  struct stat st {};
  // O_NONBLOCK | O_WRONLY on a FIFO nobody reads: ENXIO. Not a configuration error; the open
  // is retried when a record is written, so a reader started after the program gets the log.
  if (err == ENXIO && ::stat(path_.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) return 0;
  path_.clear();
  return err;
}

void ControlLog::lost(const char* reason) const noexcept {
  if (told_) return;
  told_ = true;
  try {
    const std::string line = "gidpolicy fake libibverbs: control log " + path_ + ": records lost: " + reason +
                             " (said once; later losses are not reported)\n";
    int err = 0;
    (void)write_quietly(STDERR_FILENO, line.data(), line.size(), err);  // stderr may be a pipe too
  } catch (...) {
  }
}

void ControlLog::write(const nlohmann::ordered_json& record) const noexcept {
  if (path_.empty()) return;
  const int saved = errno;  // logging never changes what the program sees
  try {
    std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    line += '\n';
    std::lock_guard lock(mu_);
    if (fd_ < 0) {
      const std::int64_t now = monotonic_ns();
      if (now >= next_open_ns_) {
        next_open_ns_ = now + kFifoRetryNs;
        fd_ = open_log(path_);
      }
      if (fd_ < 0) {
        lost("the FIFO has no reader (ENXIO)");
        errno = saved;
        return;
      }
    }
    // One write() per record: O_APPEND makes it land whole even with two writers; a pipe keeps
    // it whole up to PIPE_BUF bytes.
    int err = 0;
    if (!write_quietly(fd_, line.data(), line.size(), err)) {
      if (err == 0) {
        lost("a record was cut short (the pipe was full)");
      } else {
        const std::string why =
            std::string(std::strerror(err)) + " (" + errno_name(Platform::linux_kernel, err) + ")";
        lost(why.c_str());
      }
    }
  } catch (...) {
  }
  errno = saved;
}

}  // namespace gidpolicy::fakelib
