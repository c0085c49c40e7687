// Live reads for `gidpolicy doctor` with a deadline per verbs call (doctor_live.hpp).
//
// Why a child process: a verbs call that never returns (a wedged port: ibv_devinfo hangs) holds
// its thread inside the driver, and nothing makes a thread leave a system call or a provider's
// spin loop; abandoning the thread would leave it holding the library's locks for the rest of
// the run. A forked child that is killed takes the call, its locks and its descriptors with it.
// The child writes "call NAME PORT" before each call and the result at the end over a pipe; the
// parent waits at most `deadline` after each line.
#include "doctor_live.hpp"

#include <gidpolicy/formats/json.hpp>
#include <gidpolicy/verbs/snapshot.hpp>

#include <poll.h>
#include <signal.h>
#if defined(__linux__)
#include <sys/prctl.h>  // PR_SET_PDEATHSIG: Linux only
#endif
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

namespace gidpolicy::cli {
// A named namespace, not an anonymous one: unity builds put this file in one translation unit
// with the other subcommands, whose helpers have the same names.
namespace doctor_live_detail {

using Clock = std::chrono::steady_clock;

void write_all(int fd, const std::string& s) {
  std::size_t at = 0;
  while (at < s.size()) {
    const ssize_t n = ::write(fd, s.data() + at, s.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent left: nothing to tell
    at += static_cast<std::size_t>(n);
  }
}

/// The seam, reporting each call (by its verbs name) to the parent before making it.
class ReportingApi final : public verbs::VerbsApi {
 public:
  ReportingApi(verbs::VerbsApi& api, int fd) : api_(api), fd_(fd) {}
  [[nodiscard]] std::string backend_name() const override { return api_.backend_name(); }
  result<std::vector<std::string>> device_names() override {
    say("ibv_get_device_list", 0);
    return api_.device_names();
  }
  result<verbs::DeviceHandle> open_device(std::string_view name) override {
    say("ibv_open_device", 0);
    return api_.open_device(name);
  }
  result<void> close_device(verbs::DeviceHandle d) override {
    say("ibv_close_device", 0);
    return api_.close_device(d);
  }
  [[nodiscard]] result<std::string> device_name(verbs::DeviceHandle d) const override {
    return api_.device_name(d);
  }
  result<PortInfo> port_attributes(verbs::DeviceHandle d, std::uint32_t port) override {
    say("ibv_query_port", port);
    return api_.port_attributes(d, port);
  }
  result<Gid> read_gid(verbs::DeviceHandle d, std::uint32_t port, std::uint32_t index) override {
    say("ibv_query_gid", port);
    return api_.read_gid(d, port, index);
  }
  result<GidEntry> read_gid_entry(verbs::DeviceHandle d, std::uint32_t port, std::uint32_t index) override {
    say("ibv_query_gid_ex", port);
    return api_.read_gid_entry(d, port, index);
  }
  result<std::vector<verbs::GidTableRow>> read_gid_table(verbs::DeviceHandle d, std::uint32_t max) override {
    say("ibv_query_gid_table", 0);
    return api_.read_gid_table(d, max);
  }
  [[nodiscard]] verbs::ReadSupport read_support(verbs::DeviceHandle d) const override {
    return api_.read_support(d);
  }
  result<verbs::QpHandle> create_qp(verbs::DeviceHandle d, QpKind k) override {
    say("ibv_create_qp", 0);
    return api_.create_qp(d, k);
  }
  result<void> modify_qp(verbs::QpHandle q, const ibv_qp_attr& a, int mask) override {
    say("ibv_modify_qp", 0);
    return api_.modify_qp(q, a, mask);
  }
  result<verbs::QpInfo> query_qp(verbs::QpHandle q) override {
    say("ibv_query_qp", 0);
    return api_.query_qp(q);
  }
  result<void> destroy_qp(verbs::QpHandle q) override {
    say("ibv_destroy_qp", 0);
    return api_.destroy_qp(q);
  }

 private:
  void say(const char* call, std::uint32_t port) const {
    write_all(fd_, "call " + std::string(call) + " " + std::to_string(port) + "\n");
  }
  verbs::VerbsApi& api_;
  int fd_;
};

/// What a child reported: its last call, and its result ("ok <payload>" or "error <detail>").
struct ChildOutcome {
  bool timed_out = false;
  std::string call = "ibv_get_device_list";
  std::uint32_t port = 0;
  bool finished = false;  // it wrote its result
  bool ok = false;
  std::string payload;  // names (one a line) or tables (JSON), or the error detail
  std::string ended;    // how it ended when it wrote no result ("was killed by signal 11")
};

/// Run `work` in a child process; the parent waits at most `deadline` after each call line.
template <class Work>
result<ChildOutcome> run_child(std::chrono::milliseconds deadline, Work work) {
  int fds[2];
  if (::pipe(fds) != 0) return fail_errno(errno, "doctor: pipe()");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return fail_errno(err, "doctor: fork()");
  }
  if (pid == 0) {
    // The child may be wedged in a driver call holding the device: it must never outlive the
    // doctor, however the doctor ends (a TERM or HUP it does not catch, a KILL, a crash), so the
    // kernel kills it when its parent dies. Its own process group keeps a terminal's ^C for the
    // doctor, whose death then takes the child. Checked after the request, in case the parent
    // died before it.
    ::setpgid(0, 0);
#if defined(__linux__)
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(1);
#else
    // No parent-death signal elsewhere (macOS has none; the browser build never forks): only
    // the deadline's kill of the child's group (below) ends a wedged child.
    if (::getppid() != parent) ::_exit(1);
#endif
    ::close(fds[0]);
    ::signal(SIGPIPE, SIG_IGN);
    std::string out;
    bool ok = false;
    try {
      ok = work(fds[1], out);
    } catch (...) {
      out = "internal error in the reading process";
    }
    write_all(fds[1], std::string(ok ? "ok\n" : "error\n") + out);
    ::_exit(0);  // not exit(): the parent's buffered output and atexit handlers are not the child's
  }
  ::close(fds[1]);
  ChildOutcome o;
  std::string buf;
  auto last = Clock::now();
  bool eof = false;
  while (!eof) {
    const auto left = deadline - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last);
    if (left.count() <= 0) {
      o.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      o.timed_out = true;
      break;
    }
    char chunk[65536];
    const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
      break;
    }
    buf.append(chunk, static_cast<std::size_t>(n));
    // Call lines until the result marker; each one restarts the clock.
    while (!o.finished) {
      const auto nl = buf.find('\n');
      if (nl == std::string::npos) break;
      const std::string line = buf.substr(0, nl);
      if (line.rfind("call ", 0) == 0) {
        const auto sp = line.find(' ', 5);
        o.call = line.substr(5, sp == std::string::npos ? std::string::npos : sp - 5);
        o.port = sp == std::string::npos
                     ? 0
                     : static_cast<std::uint32_t>(std::strtoul(line.c_str() + sp + 1, nullptr, 10));
        last = Clock::now();
        buf.erase(0, nl + 1);
      } else if (line == "ok" || line == "error") {
        o.finished = true;
        o.ok = line == "ok";
        buf.erase(0, nl + 1);
      } else {
        buf.erase(0, nl + 1);  // not ours: ignored
      }
    }
    // A result of tens of MiB is no table: bounded like any other input.
    if (buf.size() > formats::kDefaultMaxInputBytes) {
      o.finished = false;
      o.ended = "reported more than " + std::to_string(formats::kDefaultMaxInputBytes) + " bytes";
      break;
    }
  }
  ::close(fds[0]);
  if (o.timed_out || !eof) ::kill(-pid, SIGKILL);  // the child's group: whatever it started too
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (o.finished) o.payload = std::move(buf);
  if (!o.finished && !o.timed_out && o.ended.empty()) {
    if (WIFSIGNALED(status))
      o.ended =
          "the reading process was killed by signal " + std::to_string(WTERMSIG(status)) + " in " + o.call;
    else
      o.ended = "the reading process ended without a result in " + o.call;
  }
  return o;
}

DeviceFailure failure_of(const std::string& device, const ChildOutcome& c,
                         std::chrono::milliseconds deadline) {
  DeviceFailure f;
  f.device = device;
  f.port = c.port;
  f.call = c.call;
  f.timed_out = c.timed_out;
  f.deadline_ms = static_cast<std::uint32_t>(deadline.count());
  f.detail = c.finished ? c.payload : c.ended;
  return f;
}

}  // namespace doctor_live_detail

result<LiveRead> read_live(const SourceArgs& o, std::chrono::milliseconds deadline) {
  LiveRead out;
  std::vector<std::string> names;
  if (o.device) {
    names.push_back(*o.device);
  } else {
    // The error crosses the pipe with its code on a line of its own (errc's name, or "-" for a
    // driver errno): the doctor tells a library that cannot be loaded from one that lists no
    // device by the code, never by the wording.
    const auto coded = [](const Error& e, const std::string& detail) {
      const bool ours = e.code.category() == error_category();
      return std::string(ours ? to_string(static_cast<errc>(e.code.value())) : "-") + "\n" + detail;
    };
    const auto list = [&](int fd, std::string& result) {
      auto api = make_api(o.verbs);
      if (!api) {
        result = coded(api.error(), api.error().detail);
        return false;
      }
      doctor_live_detail::ReportingApi rep(*api.value(), fd);
      auto found = rep.device_names();
      if (!found) {
        result = coded(found.error(), api.value()->backend_name() + ": " + found.error().detail);
        return false;
      }
      for (const auto& n : found.value()) result += n + "\n";
      return true;
    };
    GIDPOLICY_TRY(c, doctor_live_detail::run_child(deadline, list));
    if (!c.finished || !c.ok) {
      if (c.timed_out) {
        out.failures.push_back(doctor_live_detail::failure_of("(all devices)", c, deadline));
        return out;
      }
      if (c.finished) {
        const auto nl = c.payload.find('\n');
        const std::optional<errc> code = errc_from_string(c.payload.substr(0, nl));
        const std::string detail = nl == std::string::npos ? std::string() : c.payload.substr(nl + 1);
        // No library, or no device: the caller finds out why (read_no_device()).
        if (code == errc::library_unavailable || code == errc::no_devices) return fail(*code, detail);
        // Any other failure of the listing (a driver errno, a library lacking a symbol) is the
        // listing's: reported as such, like one that crashed.
        DeviceFailure f = doctor_live_detail::failure_of("(all devices)", c, deadline);
        f.detail = detail;
        out.failures.push_back(std::move(f));
        return out;
      }
      out.failures.push_back(doctor_live_detail::failure_of("(all devices)", c, deadline));
      return out;
    }
    for (std::size_t at = 0; at < c.payload.size();) {
      const auto nl = c.payload.find('\n', at);
      if (nl == std::string::npos) break;
      names.push_back(c.payload.substr(at, nl - at));
      at = nl + 1;
    }
    if (names.empty()) return fail(errc::no_devices, "no RDMA devices (ibv_get_device_list listed none)");
  }
  for (const std::string& name : names) {
    const auto read_device = [&](int fd, std::string& result) {
      auto api = make_api(o.verbs);
      if (!api) {
        result = api.error().detail;
        return false;
      }
      doctor_live_detail::ReportingApi rep(*api.value(), fd);
      verbs::SnapshotOptions options{.allow_inactive = true};
      std::vector<GidTable> tables;
      for (std::uint32_t p = o.port.value_or(1); p <= (o.port ? *o.port : 255u); ++p) {
        auto t = verbs::snapshot(rep, name, p, options);
        if (!t) {
          if (p == o.port.value_or(1)) {
            result = t.error().detail;
            return false;
          }
          break;  // past the device's last port
        }
        tables.push_back(std::move(t).value());
      }
      result = formats::write_json(tables, -1);
      return true;
    };
    GIDPOLICY_TRY(c, doctor_live_detail::run_child(deadline, read_device));
    if (!c.finished || !c.ok) {
      out.failures.push_back(doctor_live_detail::failure_of(name, c, deadline));
      continue;
    }
    auto tables = formats::read_json(c.payload, name);
    if (!tables) {
      DeviceFailure f = doctor_live_detail::failure_of(name, c, deadline);
      f.detail = "its tables could not be read back: " + tables.error().detail;
      out.failures.push_back(std::move(f));
      continue;
    }
    for (auto& t : tables.value()) out.tables.push_back(std::move(t));
  }
  return out;
}

}  // namespace gidpolicy::cli
