// The C API's watch entry points (gidpolicy.h, "Watching a port"): GidWatcher and replan()
// behind an opaque handle, over the caller's own function pointers.
#include <gidpolicy/gidpolicy.h>

#include "capi_internal.hpp"

#include <gidpolicy/change.hpp>
#include <gidpolicy/verbs/function_table_api.hpp>
#include <gidpolicy/verbs/watch.hpp>

#include <cstdint>
#include <memory>
#include <optional>

struct gidpolicy_watch {
  std::unique_ptr<gidpolicy::verbs::FunctionTableApi> api;  // the watcher points at it: never moves
  gidpolicy::verbs::DeviceHandle device;
  std::uint32_t port = 1;
  std::optional<gidpolicy::verbs::GidWatcher> watcher;
  std::optional<gidpolicy::GidChange> last;
};

struct gidpolicy_watch_thread {
  std::unique_ptr<gidpolicy_watch> watch;  // keeps the api the watcher points at alive
  std::unique_ptr<gidpolicy::verbs::WatchThread> thread;
};

namespace {

using gidpolicy::capi::guarded;
using gidpolicy::capi::null_argument;
using gidpolicy::capi::report;

}  // namespace

extern "C" {

gidpolicy_status gidpolicy_watch_open(const gidpolicy_verbs_fns* fns, const gidpolicy_async_fns* async_fns,
                                      struct ibv_context* context, uint32_t port,
                                      const gidpolicy_plan* follow, gidpolicy_watch** out, char* err,
                                      size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return null_argument("out", err, errlen);
    *out = nullptr;
    if (!fns) return null_argument("fns", err, errlen);
    if (!async_fns) return null_argument("async_fns", err, errlen);
    if (!context) return null_argument("context", err, errlen);
    if (port < 1 || port > 255)
      return report(GIDPOLICY_ERR_INVALID_ARGUMENT, "port " + std::to_string(port) + " is outside 1..255",
                    err, errlen);
    gidpolicy::verbs::VerbsFunctions f = gidpolicy::capi::functions_of(*fns);
    f.get_async_event = async_fns->get_async_event;
    f.ack_async_event = async_fns->ack_async_event;
    auto w = std::make_unique<gidpolicy_watch>();
    w->api = std::make_unique<gidpolicy::verbs::FunctionTableApi>(
        f, gidpolicy::verbs::FunctionTableApi::Options{"c-function-table", true});
    auto device = w->api->adopt(context);
    if (!device) return report(device.error(), err, errlen);
    w->device = device.value();
    w->port = port;
    auto watcher = gidpolicy::verbs::GidWatcher::open(*w->api, w->device, {port});
    if (!watcher) return report(watcher.error(), err, errlen);
    w->watcher.emplace(std::move(watcher).value());
    if (follow) (void)w->watcher->follow(port, follow->plan.selection.entry);
    *out = w.release();
    return GIDPOLICY_OK;
  });
}

int gidpolicy_watch_fd(const gidpolicy_watch* watch) {
  return watch && watch->watcher ? watch->watcher->fd() : -1;
}

gidpolicy_status gidpolicy_watch_process(gidpolicy_watch* watch, gidpolicy_change_kind* kind, uint32_t* index,
                                         char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!watch || !watch->watcher) return null_argument("watch", err, errlen);
    if (kind) *kind = GIDPOLICY_CHANGE_NONE;
    if (index) *index = UINT32_MAX;
    auto changes = watch->watcher->process();
    if (!changes) return report(changes.error(), err, errlen);
    if (changes.value().empty()) return GIDPOLICY_OK;
    watch->last = changes.value().back();  // one port: at most one change per call
    if (kind) *kind = gidpolicy::capi::change_kind_to_c(watch->last->kind);
    if (index && watch->last->new_index) *index = *watch->last->new_index;
    return GIDPOLICY_OK;
  });
}

size_t gidpolicy_watch_describe(const gidpolicy_watch* watch, char* buf, size_t len) {
  return gidpolicy::capi::guarded_text(
      buf, len, [&] { return watch && watch->last ? watch->last->to_string() : std::string(); });
}

gidpolicy_status gidpolicy_watch_replan(gidpolicy_watch* watch, const gidpolicy_profile* profile,
                                        const gidpolicy_plan* current, gidpolicy_plan** out, int* tell_peer,
                                        char* err, size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return null_argument("out", err, errlen);
    *out = nullptr;
    if (!watch || !watch->watcher) return null_argument("watch", err, errlen);
    if (!profile) return null_argument("profile", err, errlen);
    if (!current) return null_argument("current", err, errlen);
    const gidpolicy::GidTable& now = *watch->watcher->table(watch->port);
    gidpolicy::GidChange change =
        watch->last ? *watch->last : gidpolicy::classify_change(now, now, current->plan.selection.entry);
    auto next = gidpolicy::replan(profile->profile, current->plan, change, {.trace = true});
    if (!next) return report(next.error(), err, errlen);
    (void)watch->watcher->follow(watch->port, next.value().plan.selection.entry);
    if (tell_peer) *tell_peer = next.value().tell_peer ? 1 : 0;
    *out = new gidpolicy_plan{change.table, std::move(next.value().plan)};
    return GIDPOLICY_OK;
  });
}

void gidpolicy_watch_free(gidpolicy_watch* watch) { delete watch; }

gidpolicy_status gidpolicy_watch_thread_start(gidpolicy_watch** watch, gidpolicy_watch_callback callback,
                                              void* user, gidpolicy_watch_thread** out, char* err,
                                              size_t errlen) {
  return guarded(err, errlen, [&] {
    if (!out) return null_argument("out", err, errlen);
    *out = nullptr;
    if (!watch || !*watch || !(*watch)->watcher) return null_argument("watch", err, errlen);
    if (!callback) return null_argument("callback", err, errlen);
    auto t = std::make_unique<gidpolicy_watch_thread>();
    t->watch.reset(*watch);
    auto on_change = [callback, user](gidpolicy::verbs::GidWatcher&, const gidpolicy::GidChange& c) {
      try {
        const std::string line = c.to_string();
        callback(user, gidpolicy::capi::change_kind_to_c(c.kind), c.new_index ? *c.new_index : UINT32_MAX,
                 line.c_str());
      } catch (...) {
        callback(user, gidpolicy::capi::change_kind_to_c(c.kind), c.new_index ? *c.new_index : UINT32_MAX,
                 "");
      }
    };
    auto on_error = [callback, user](const gidpolicy::Error& e) {
      try {
        const std::string what = e.what();
        callback(user, GIDPOLICY_CHANGE_NONE, UINT32_MAX, what.c_str());
      } catch (...) {
        callback(user, GIDPOLICY_CHANGE_NONE, UINT32_MAX, "");
      }
    };
    auto started = gidpolicy::verbs::WatchThread::start(std::move(*t->watch->watcher), on_change, on_error);
    if (!started) {
      *watch = t->watch.release();  // not consumed: the caller still owns it
      return report(started.error(), err, errlen);
    }
    t->watch->watcher.reset();  // moved into the thread
    t->thread = std::move(started).value();
    *watch = nullptr;
    *out = t.release();
    return GIDPOLICY_OK;
  });
}

void gidpolicy_watch_thread_stop(gidpolicy_watch_thread* thread) {
  if (!thread) return;
  if (thread->thread) thread->thread->stop();
  delete thread;
}

}  // extern "C"
