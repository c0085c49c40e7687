// Asynchronous events of the drop-in fake libibverbs.so.1.
//
// ibv_context::async_fd is the model's eventfd for the context (readable while an event is
// pending), so poll()/epoll on it works as with a real device. ibv_get_async_event blocks
// unless the program made async_fd O_NONBLOCK (then -1 + EAGAIN), as libibverbs does. The events
// are raised by the model when a port's table changes: the table file is rewritten while the
// program runs (table_watch.cpp).
#include "fakelib.hpp"

#include <cerrno>
#include <mutex>

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
