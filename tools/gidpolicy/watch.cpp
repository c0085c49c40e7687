// `gidpolicy watch`: follow live GID tables through the devices' asynchronous events, print one
// line (or one JSON object) per change with the re-plan it leads to, until SIGINT or SIGTERM.
#include "commands.hpp"
#include "env_file.hpp"
#include "json_out.hpp"
#include "output.hpp"
#include "render.hpp"
#include "sources.hpp"

#include <gidpolicy/change.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/quoting.hpp>
#include <gidpolicy/stacks.hpp>
#include <gidpolicy/verbs/watch.hpp>

#include <fmt/core.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/signalfd.h>
#endif

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>

namespace gidpolicy::cli {
namespace {

struct Watched {
  std::string device;
  std::unique_ptr<verbs::GidWatcher> watcher;
  std::map<std::uint32_t, Plan> plans;       // ports with a plan; the watcher follows its entry
  std::map<std::uint32_t, GidTable> tables;  // with --stacks: each port's table before its next change
};

// One line out now (a script reads the lines as they come). False when stdout failed: watching
// on would only lose every later line, so the caller stops and finish_output() says why.
bool emit(const std::string& line, const Json& j, bool json) {
  Output& out = standard_output();
  // A JSON line stays UTF-8 (U+FFFD for a bad byte); a text line is shown as every report line is
  // (show_text(), quoting.hpp).
  out.write(
      (json ? j.dump(-1, ' ', false, Json::error_handler_t::replace) : show_text(line, std::string::npos)) +
      "\n");
  return out.flush();
}

// Version 4: every line carries the envelope (version 3 had it on the "watching" line only).
constexpr int kWatchVersion = 4;

Json json_change(const GidChange& c) {
  Json j;
  j["schema"] = "gidpolicy.watch";
  j["version"] = kWatchVersion;
  j["host"] = this_host_name();
  j["source"] = "live device " + c.device;
  j["event"] = "change";
  j["device"] = c.device;
  j["port"] = c.port;
  j["kind"] = std::string(to_string(c.kind));
  j["cause"] = c.cause;
  j["gid"] = c.kind == ChangeKind::untracked ? Json(nullptr) : Json(c.gid.to_string());
  j["type"] = c.kind == ChangeKind::untracked ? Json(nullptr) : Json(std::string(to_string(c.type)));
  j["old_index"] = c.old_index ? Json(*c.old_index) : Json(nullptr);
  j["new_index"] = c.new_index ? Json(*c.new_index) : Json(nullptr);
  j["twin_old_index"] = c.twin_old_index ? Json(*c.twin_old_index) : Json(nullptr);
  j["twin_new_index"] = c.twin_new_index ? Json(*c.twin_new_index) : Json(nullptr);
  j["port_state"] = std::string(to_string(c.port_state));
  return j;
}

// SIGINT/SIGTERM as a readable descriptor, so the poll loop ends cleanly and devices are closed.
// Linux: a signalfd over the blocked signals. Elsewhere (macOS has no signalfd): a self-pipe that
// a sigaction handler writes one byte to. The self-pipe is compiled on Linux too, so the portable
// branch cannot rot unbuilt. Both return the descriptor to poll, or -1 (errno set).
int g_stop_pipe_write = -1;  // the self-pipe's write end, for the handler

[[maybe_unused]] void on_stop_signal(int) {
  const int saved = errno;  // write() is async-signal-safe; errno is the interrupted code's
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_stop_pipe_write, &byte, 1);
  errno = saved;
}

[[maybe_unused]] int open_stop_pipe() {
  int p[2];
  if (::pipe(p) != 0) return -1;
  const int wfl = ::fcntl(p[1], F_GETFL);
  // Non-blocking write end: a handler must never block on a full pipe (one byte is enough).
  if (::fcntl(p[0], F_SETFD, FD_CLOEXEC) != 0 || ::fcntl(p[1], F_SETFD, FD_CLOEXEC) != 0 || wfl < 0 ||
      ::fcntl(p[1], F_SETFL, wfl | O_NONBLOCK) != 0) {
    ::close(p[0]);
    ::close(p[1]);
    return -1;
  }
  g_stop_pipe_write = p[1];
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (::sigaction(SIGINT, &sa, nullptr) != 0 || ::sigaction(SIGTERM, &sa, nullptr) != 0) return -1;
  return p[0];
}

int open_stop_signals() {
#if defined(__linux__)
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &mask, nullptr) != 0) return -1;
  return signalfd(-1, &mask, SFD_CLOEXEC);
#else
  return open_stop_pipe();
#endif
}

// With --stacks: what each stack that runs on the port, and opens it under its launch settings,
// does on this change (stack_on_change(), stacks.hpp), as report lines and JSON.
void stacks_on_change(const GidTable& before, const GidChange& c, const std::vector<StackLaunch>& launches,
                      std::vector<std::string>& lines, Json& j) {
  Json out = Json::array();
  const DriverModel model = driver_for(c.table, std::nullopt);
  for (const StackInfo& s : stack_catalogue()) {
    if (!s.runs_on.has(c.table.port().link_layer)) continue;
    const StackLaunch& launch = launches[static_cast<std::size_t>(s.id)];
    if (!launch.uses(c.device, c.port) || launch.refused) continue;
    if (!s.predicted && !launch.pinned) continue;  // llama.cpp without its index: nothing to follow
    const StackOnChange sc = stack_on_change(s.id, before, c.table, launch, model);
    lines.push_back("  " + sc.summary);
    Json js;
    js["stack"] = std::string(s.name);
    js["reselects"] = std::string(to_string(s.on_change.reselects));
    js["pinned"] = launch.pinned ? Json(*launch.pinned) : Json(nullptr);
    js["before"] = sc.before ? Json(*sc.before) : Json(nullptr);
    js["before_gid"] = sc.before ? Json(sc.before_gid.to_string()) : Json(nullptr);
    js["now_at_before"] = sc.now_at_before ? Json(sc.now_at_before->to_string()) : Json(nullptr);
    js["next"] = sc.next ? Json(*sc.next) : Json(nullptr);
    js["next_gid"] = sc.next ? Json(sc.next_gid.to_string()) : Json(nullptr);
    js["moved"] = sc.moved;
    js["stale_while_up"] = sc.stale_while_up;
    js["summary"] = sc.summary;
    out.push_back(std::move(js));
  }
  j["stacks"] = std::move(out);
}

std::string plan_text(const Plan& p) {
  return p.selection.entry.gid.to_string() + " (" + std::string(to_string(p.selection.entry.type)) +
         ") at index " + std::to_string(p.sgid_index);
}

}  // namespace

int run_watch(const WatchArgs& o) {
  auto profile = parse_profile(o.profile);
  if (!profile)
    return usage_error(Error(profile.error().code, "--profile " + o.profile + ": " + profile.error().detail));
  // Options a mode cannot use are refused, never ignored.
  if (!o.stacks && (o.env_file || o.no_env))
    return usage_error("watch: --env-file and --no-env are for --stacks");
  std::vector<StackLaunch> launches;
  if (o.stacks) {
    auto settings = read_launch_settings(!o.no_env, o.env_file);
    if (!settings) return usage_error(settings.error());
    launches = read_launches(settings.value());
  }
  auto api = make_api(o.verbs);
  if (!api) return usage_error(api.error());
  std::vector<std::string> names;
  if (o.device) {
    names.push_back(*o.device);
  } else {
    auto found = api.value()->device_names();
    if (!found) return usage_error(found.error());
    names = std::move(found).value();
  }

  const int sfd = open_stop_signals();
  if (sfd < 0) return usage_error(std::string("cannot watch SIGINT/SIGTERM: ") + std::strerror(errno));

  std::vector<Watched> watched;
  for (const auto& name : names) {
    auto dev = api.value()->open_device(name);
    if (!dev) return usage_error(Error(dev.error().code, name + ": " + dev.error().what()));
    std::vector<std::uint32_t> ports;
    if (o.port) {
      ports.push_back(*o.port);
    } else {
      for (std::uint32_t p = 1; p <= 255; ++p) {
        if (!api.value()->port_attributes(dev.value(), p)) break;
        ports.push_back(p);
      }
    }
    auto w = verbs::GidWatcher::open(*api.value(), dev.value(), ports);
    if (!w) return usage_error(Error(w.error().code, name + ": " + w.error().what()));
    Watched entry{name, std::make_unique<verbs::GidWatcher>(std::move(w).value()), {}};
    for (std::uint32_t p : entry.watcher->ports()) {
      const GidTable& t = *entry.watcher->table(p);
      if (o.stacks) entry.tables.insert_or_assign(p, t);
      auto plan = profile.value().plan(t);
      Json j;
      // Version 2: the spec's key is "profile" (version 1, unversioned, said "policy"). Each
      // port's stream starts with its "watching" line, so the version is read before any change.
      // Version 3: the common envelope first, "host" (this machine) and "source" (the live
      // device), then "event". Version 4: the envelope on every line, not only this one.
      j["schema"] = "gidpolicy.watch";
      j["version"] = kWatchVersion;
      j["host"] = this_host_name();
      j["source"] = "live device " + name;
      j["event"] = "watching";
      j["device"] = name;
      j["port"] = p;
      j["profile"] = profile.value().spec();
      if (plan) {
        (void)entry.watcher->follow(p, plan.value().selection.entry);
        j["gid"] = plan.value().selection.entry.gid.to_string();
        j["index"] = plan.value().sgid_index;
        if (!emit(fmt::format("{}: watching {} ({})", port_name(t), plan_text(plan.value()),
                              j["profile"].get<std::string>()),
                  j, o.json))
          return kExitUsage;
        entry.plans.emplace(p, std::move(plan).value());
      } else {
        j["gid"] = nullptr;
        j["index"] = nullptr;
        j["error"] = json_error(plan.error());
        if (!emit(fmt::format("{}: watching, no plan yet: {}", port_name(t), plan.error().what()), j, o.json))
          return kExitUsage;
      }
    }
    watched.push_back(std::move(entry));
  }

  std::vector<pollfd> fds;
  fds.push_back({sfd, POLLIN, 0});
  for (const auto& w : watched) fds.push_back({w.watcher->fd(), POLLIN, 0});
  int exit_code = kExitOk;
  while (true) {
    const int n = ::poll(fds.data(), fds.size(), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      exit_code = kExitUsage;
      break;
    }
    if (fds[0].revents & POLLIN) break;  // SIGINT / SIGTERM
    for (std::size_t i = 0; i < watched.size(); ++i) {
      if (!(fds[i + 1].revents & POLLIN)) continue;
      Watched& w = watched[i];
      auto changes = w.watcher->process();
      if (!changes) {
        std::cerr << "gidpolicy: " << w.device << ": " << changes.error().what() << "\n";
        continue;  // the port stays marked; the next event retries it
      }
      for (const GidChange& c : changes.value()) {
        Json j = json_change(c);
        std::string line = c.to_string();
        std::vector<std::string> stack_lines;
        if (o.stacks) {
          if (auto before = w.tables.find(c.port); before != w.tables.end())
            stacks_on_change(before->second, c, launches, stack_lines, j);
          w.tables.insert_or_assign(c.port, c.table);
        }
        auto current = w.plans.find(c.port);
        result<Replan> next = fail(errc::no_candidate, "no plan");
        if (current != w.plans.end()) {
          next = replan(profile.value(), current->second, c);
        } else if (auto first = profile.value().plan(c.table); first) {
          Replan r;
          r.plan = std::move(first).value();
          r.tell_peer = true;
          r.changed = true;
          r.why = "first plan on this port";
          next = std::move(r);
        } else {
          next = std::move(first).as_failure();
        }
        Json rj;
        if (next) {
          const Replan& r = next.value();
          line += "; re-plan: " + plan_text(r.plan) + (r.followed ? " (followed)" : " (selected)") +
                  (r.tell_peer ? ", tell the peer" : "");
          rj["ok"] = true;
          rj["gid"] = r.plan.selection.entry.gid.to_string();
          rj["index"] = r.plan.sgid_index;
          rj["followed"] = r.followed;
          rj["tell_peer"] = r.tell_peer;
          rj["why"] = r.why;
          (void)w.watcher->follow(c.port, r.plan.selection.entry);
          w.plans.insert_or_assign(c.port, r.plan);
        } else {
          // Keep following the old GID: its return is what this port waits for.
          line += "; re-plan: none (" + next.error().what() + ")";
          rj["ok"] = false;
          rj["error"] = json_error(next.error());
        }
        j["replan"] = std::move(rj);
        if (!emit(line, j, o.json)) {
          ::close(sfd);
          return kExitUsage;
        }
        if (!o.json)
          for (const std::string& l : stack_lines)
            if (!emit(l, j, false)) {
              ::close(sfd);
              return kExitUsage;
            }
      }
    }
  }
  ::close(sfd);
  return exit_code;
}

}  // namespace gidpolicy::cli
