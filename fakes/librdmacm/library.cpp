// Configuration, the control log, event channels, ids, events and the accessors.
#include "cm.hpp"

#include <gidpolicy/formats/detect.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

namespace fakecm {

Library& lib() noexcept {
  // Never destroyed: the progress thread may outlive statics. Constructed in static storage, so
  // getting it allocates nothing and cannot throw (its members' constructors allocate nothing).
  alignas(Library) static unsigned char storage[sizeof(Library)];
  static Library* const l = ::new (static_cast<void*>(storage)) Library;
  return *l;
}

const char* errno_name(int e) {
  switch (e) {
    case 0:
      return "0";
    case EINVAL:
      return "EINVAL";
    case ENODEV:
      return "ENODEV";
    case EADDRNOTAVAIL:
      return "EADDRNOTAVAIL";
    case EADDRINUSE:
      return "EADDRINUSE";
    case ENETUNREACH:
      return "ENETUNREACH";
    case EHOSTUNREACH:
      return "EHOSTUNREACH";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    case EOPNOTSUPP:
      return "EOPNOTSUPP";
    case EBUSY:
      return "EBUSY";
    case ENOMEM:
      return "ENOMEM";
    case ECONNREFUSED:
      return "ECONNREFUSED";
    case EAGAIN:
      return "EAGAIN";
    case ENOSYS:
      return "ENOSYS";
    case EACCES:
      return "EACCES";
    case ENODATA:
      return "ENODATA";
    case EISCONN:
      return "EISCONN";
    case ENOTCONN:
      return "ENOTCONN";
    default:
      return "errno";
  }
}

std::string address_text(const sockaddr* a) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (!a) return "(none)";
  if (a->sa_family == AF_INET) {
    const auto* s = reinterpret_cast<const sockaddr_in*>(a);
    ::inet_ntop(AF_INET, &s->sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(ntohs(s->sin_port));
  }
  if (a->sa_family == AF_INET6) {
    const auto* s = reinterpret_cast<const sockaddr_in6*>(a);
    ::inet_ntop(AF_INET6, &s->sin6_addr, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(ntohs(s->sin6_port));
  }
  return "family " + std::to_string(a->sa_family);
}

bool ensure_loaded(Library& l) {
  if (l.loaded) return l.config_error.empty();
  l.loaded = true;
  const char* tables = std::getenv("GIDPOLICY_FAKE_TABLES");
  if (!tables || !*tables) {
    l.config_error = "GIDPOLICY_FAKE_TABLES is not set (the table file the fake libibverbs serves)";
  } else if (auto t = gidpolicy::formats::read_tables_file(tables); !t) {
    l.config_error = t.error().detail;
  } else {
    l.tables = std::move(t).value();
  }
  if (const char* m = std::getenv("GIDPOLICY_FAKE_ROCE_MODE"); l.config_error.empty() && m && *m) {
    if (auto modes = gidpolicy::parse_roce_modes(m); !modes)
      l.config_error = "GIDPOLICY_FAKE_ROCE_MODE: " + modes.error().detail;
    else
      l.modes = std::move(modes).value();
  }
  // The fabric's directory (gidpolicy fake-host's --fabric, where the fake libibverbs' QP
  // sockets live) holds the listeners too, so one directory is the whole fake fabric.
  if (const char* d = std::getenv("GIDPOLICY_FAKE_CM_DIR"); d && *d) {
    l.dir = d;
  } else if (const char* f = std::getenv("GIDPOLICY_FAKE_FABRIC"); f && *f) {
    ::mkdir(f, 0700);
    l.dir = std::string(f) + "/rdmacm";
  } else {
    l.dir = "/tmp/gidpolicy-fake-rdmacm-" + std::to_string(::getuid());
  }
  if (l.config_error.empty() && ::mkdir(l.dir.c_str(), 0700) != 0 && errno != EEXIST)
    l.config_error = "GIDPOLICY_FAKE_CM_DIR " + l.dir + ": " + std::strerror(errno);
  // Listeners killed before they could remove their names left them behind: no later run
  // would, and the directory would only grow.
  if (l.config_error.empty()) sweep_stale_names(l);
  if (l.config_error.empty()) {
    // librdmacm opens every device at its first call (ucma_init) and keeps them open.
    int n = 0;
    if (ibv_device** list = ibv_get_device_list(&n)) {
      for (int i = 0; i < n; ++i)
        if (ibv_context* c = ibv_open_device(list[i])) l.contexts.push_back(c);
      ibv_free_device_list(list);
    }
    if (l.contexts.empty()) l.config_error = "the fake libibverbs lists no device";
  }
  if (!l.config_error.empty()) {
    std::fprintf(stderr, "gidpolicy fake librdmacm: %s\n", l.config_error.c_str());
    errno = ENODEV;
    return false;
  }
  return true;
}

nlohmann::json record(const char* call, const Id* id) {
  // An object from the start: nlohmann's operator[] on a null value marks it an object before it
  // allocates the map, and a std::bad_alloc there leaves a value whose destructor asserts (an
  // abort in a debug build, inside the guard). Constructed as an object, a failed allocation
  // leaves no value behind.
  nlohmann::json r = nlohmann::json::object();
  r["pid"] = ::getpid();
  r["lib"] = "rdmacm";
  r["call"] = call;
  if (id) {
    r["id"] = reinterpret_cast<std::uintptr_t>(id) & 0xffffffu;
    if (!id->device.empty()) {
      r["device"] = id->device;
      r["port_num"] = id->pub.port_num;
      r["netdev"] = id->netdev;
      r["sgid_index"] = id->sgid_index;
      r["gid_type"] = id->mode == gidpolicy::GidType::roce_v1 ? "RoCE v1" : "RoCE v2";
    }
  }
  return r;
}

void log_record(Library& l, nlohmann::json r) {
  if (l.log_fd == -2) {
    const char* p = std::getenv("GIDPOLICY_FAKE_LOG");
    l.log_fd = p && *p ? ::open(p, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644) : -1;
  }
  if (l.log_fd < 0) return;
  const int saved = errno;
  std::string line = r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // Never SIGPIPE the program for the fake's own log (a FIFO whose reader left).
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  [[maybe_unused]] const ssize_t n = ::write(l.log_fd, line.data(), line.size());
  if (n < 0 && errno == EPIPE) {
    const timespec zero{};
    sigtimedwait(&block, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
}

int refuse(Library& l, const char* call, const Id* id, int e, const std::string& reason) {
  auto r = record(call, id);
  r["result"] = e;
  r["error"] = errno_name(e);
  r["reason"] = reason;
  log_record(l, std::move(r));
  errno = e;
  return -1;
}

Channel* new_channel() {
  auto* c = new (std::nothrow) Channel;
  if (!c) return nullptr;
  c->own = ::eventfd(0, EFD_CLOEXEC);
  // The program's fd shares the eventfd's open file (its level and its O_NONBLOCK flag, which
  // the program may set on it) but not the number the fake writes to.
  c->pub.fd = c->own < 0 ? -1 : ::fcntl(c->own, F_DUPFD_CLOEXEC, 0);
  if (c->pub.fd < 0) {
    if (c->own >= 0) ::close(c->own);
    delete c;
    return nullptr;
  }
  lib().channels.insert(c);
  return c;
}

void free_channel(Channel* c) {
  for (Event* e : c->queue) delete e;
  c->queue.clear();
  lib().channels.erase(c);
  ::close(c->own);
  // librdmacm's rdma_destroy_event_channel closes channel->fd: the program's number is closed
  // here too, whatever it names by now.
  ::close(c->pub.fd);
  delete c;
}

void settle(Channel& c) {
  if (!c.queue.empty()) return;
  // The lock is held, so nothing is queued meanwhile (queue_event writes again when it finds
  // the queue empty); the fd is blocking, so it is read only when poll says it holds a count.
  pollfd q{c.own, POLLIN, 0};
  std::uint64_t v = 0;
  if (::poll(&q, 1, 0) == 1) [[maybe_unused]]
    auto n = ::read(c.own, &v, sizeof v);
}

void wake(Channel& c) {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(c.own, &one, sizeof one);
}

Event* queue_event(Library& l, Id* id, rdma_cm_event_type type, int status, Id* listen) {
  auto* e = new (std::nothrow) Event;
  if (!e) return nullptr;
  e->id = id;
  e->pub.id = &id->pub;
  e->pub.listen_id = listen ? &listen->pub : nullptr;
  e->pub.event = type;
  e->pub.status = status;
  const bool was_empty = id->channel->queue.empty();
  id->channel->queue.push_back(e);
  if (was_empty) wake(*id->channel);
  auto r = record("event", id);
  r["event"] = rdma_event_str(type);
  r["status"] = status;
  log_record(l, std::move(r));
  return e;
}

namespace {

// Takes the next event of `c`, waiting as the channel's fd says (blocking unless O_NONBLOCK).
int next_event(std::unique_lock<std::mutex>& lk, Channel* c, Event** out, bool force_block) {
  for (;;) {
    if (!c->queue.empty()) {
      Event* e = c->queue.front();
      c->queue.pop_front();
      settle(*c);  // a poll of the fd now says whether another event waits, as the kernel's
      e->delivered = true;
      e->id->unacked++;
      *out = e;
      return 0;
    }
    // The eventfd is readable while events are queued (a level, not a count): wait for it
    // without the lock, as librdmacm's read() of the ucma fd waits in the kernel.
    // O_NONBLOCK is the open file's, shared by the program's dup: read it on the fake's own.
    const int fd = c->own;
    const bool nonblock = (::fcntl(fd, F_GETFL) & O_NONBLOCK) != 0;
    if (nonblock && !force_block) {
      errno = EAGAIN;
      return -1;
    }
    ++c->waiters;
    lk.unlock();
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, -1);
    const int err = errno;
    lk.lock();
    --c->waiters;
    if (rc < 0 && err == EINTR) {
      errno = EINTR;
      return -1;
    }
    settle(*c);
  }
}

}  // namespace

int wait_sync(std::unique_lock<std::mutex>& lk, Id* id, rdma_cm_event_type expect) {
  if (id->pub.event) {
    // The previous operation's event is acked by the next one (librdmacm's ucma_complete).
    auto* prev = reinterpret_cast<Event*>(id->pub.event);
    id->pub.event = nullptr;
    prev->id->unacked--;
    delete prev;
  }
  Event* e = nullptr;
  if (next_event(lk, id->channel, &e, true) != 0) return -1;
  id->pub.event = &e->pub;
  if (e->pub.status) {
    if (e->pub.event == RDMA_CM_EVENT_REJECTED)
      errno = ECONNREFUSED;
    else
      errno = e->pub.status < 0 ? -e->pub.status : e->pub.status;
    return -1;
  }
  if (e->pub.event != expect) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}

}  // namespace fakecm

using namespace fakecm;

extern "C" {

__attribute__((visibility("default"))) rdma_event_channel* rdma_create_event_channel(void) {
  return locked_call<rdma_event_channel*>(
      nullptr, [&](Library& l, std::unique_lock<std::mutex>&) -> rdma_event_channel* {
        if (!ensure_loaded(l)) return nullptr;
        Channel* c = new_channel();
        if (!c) {
          errno = ENOMEM;
          return nullptr;
        }
        auto r = record("create_event_channel", nullptr);
        r["fd"] = c->pub.fd;
        log_record(l, std::move(r));
        return &c->pub;
      });
}

__attribute__((visibility("default"))) void rdma_destroy_event_channel(rdma_event_channel* channel) {
  locked_void_call([&](Library& l, std::unique_lock<std::mutex>&) {
    if (!channel) return;
    auto* c = reinterpret_cast<Channel*>(channel);
    if (c->ids > 0) {
      // librdmacm closes the fd under ids that still use it, and their next event is lost in the
      // kernel; here the channel stays (leaked) so those ids keep working, and the log says so.
      refuse(l, "destroy_event_channel", nullptr, EBUSY,
             std::to_string(c->ids) + " id(s) still use this channel: it is kept");
      return;
    }
    for (Event* e : c->queue) delete e;
    c->queue.clear();
    l.channels.erase(c);  // from here on the channel is gone for the program (EBADF)
    if (c->waiters > 0) {
      // A thread is blocked reading it. The kernel keeps a file that a blocked read holds, and
      // that read never returns; so here the channel (and its fd) stay, unreachable, and the
      // waiting thread stays blocked, instead of waking into freed memory.
      c->closed = true;
      return;
    }
    free_channel(c);
  });
}

__attribute__((visibility("default"))) int rdma_get_cm_event(rdma_event_channel* channel,
                                                             rdma_cm_event** event) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>& lk) -> int {
    if (!channel || !event) {
      errno = EINVAL;
      return -1;
    }
    auto* c = reinterpret_cast<Channel*>(channel);
    if (!l.channels.contains(c)) {
      // Destroyed: librdmacm reads the closed fd, and read() fails with EBADF. (rping of
      // rdma-core 44 races its own teardown into this; rdma-core f3ae6534a fixed rping.)
      return refuse(l, "get_cm_event", nullptr, EBADF, "the event channel was destroyed");
    }
    Event* e = nullptr;
    if (next_event(lk, c, &e, false) != 0) return -1;
    *event = &e->pub;
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_ack_cm_event(rdma_cm_event* event) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!event) {
      errno = EINVAL;
      return -1;
    }
    auto* e = reinterpret_cast<Event*>(event);
    e->id->unacked--;
    delete e;
    l.acked.notify_all();
    return 0;
  });
}

__attribute__((visibility("default"))) const char* rdma_event_str(rdma_cm_event_type event) {
  return unlocked_call<const char*>("UNKNOWN EVENT", [&]() -> const char* {
    switch (event) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        return "RDMA_CM_EVENT_ADDR_RESOLVED";
      case RDMA_CM_EVENT_ADDR_ERROR:
        return "RDMA_CM_EVENT_ADDR_ERROR";
      case RDMA_CM_EVENT_ROUTE_RESOLVED:
        return "RDMA_CM_EVENT_ROUTE_RESOLVED";
      case RDMA_CM_EVENT_ROUTE_ERROR:
        return "RDMA_CM_EVENT_ROUTE_ERROR";
      case RDMA_CM_EVENT_CONNECT_REQUEST:
        return "RDMA_CM_EVENT_CONNECT_REQUEST";
      case RDMA_CM_EVENT_CONNECT_RESPONSE:
        return "RDMA_CM_EVENT_CONNECT_RESPONSE";
      case RDMA_CM_EVENT_CONNECT_ERROR:
        return "RDMA_CM_EVENT_CONNECT_ERROR";
      case RDMA_CM_EVENT_UNREACHABLE:
        return "RDMA_CM_EVENT_UNREACHABLE";
      case RDMA_CM_EVENT_REJECTED:
        return "RDMA_CM_EVENT_REJECTED";
      case RDMA_CM_EVENT_ESTABLISHED:
        return "RDMA_CM_EVENT_ESTABLISHED";
      case RDMA_CM_EVENT_DISCONNECTED:
        return "RDMA_CM_EVENT_DISCONNECTED";
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        return "RDMA_CM_EVENT_DEVICE_REMOVAL";
      case RDMA_CM_EVENT_MULTICAST_JOIN:
        return "RDMA_CM_EVENT_MULTICAST_JOIN";
      case RDMA_CM_EVENT_MULTICAST_ERROR:
        return "RDMA_CM_EVENT_MULTICAST_ERROR";
      case RDMA_CM_EVENT_ADDR_CHANGE:
        return "RDMA_CM_EVENT_ADDR_CHANGE";
      case RDMA_CM_EVENT_TIMEWAIT_EXIT:
        return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
    }
    return "UNKNOWN EVENT";
  });
}

__attribute__((visibility("default"))) int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id,
                                                          void* context, rdma_port_space ps) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    if (!ensure_loaded(l)) return -1;
    if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB && ps != RDMA_PS_IPOIB)
      return refuse(l, "create_id", nullptr, EINVAL, "unknown port space " + std::to_string(ps));
    if (channel && !l.channels.contains(reinterpret_cast<Channel*>(channel)))
      return refuse(l, "create_id", nullptr, EBADF, "the event channel was destroyed");
    auto* i = new (std::nothrow) Id;
    if (!i) {
      errno = ENOMEM;
      return -1;
    }
    if (channel) {
      i->channel = reinterpret_cast<Channel*>(channel);
    } else {
      i->channel = new_channel();  // a synchronous id: its own channel, waited on by each call
      i->sync = true;
      if (!i->channel) {
        delete i;
        errno = ENOMEM;
        return -1;
      }
    }
    i->channel->ids++;
    i->pub.channel = &i->channel->pub;
    i->pub.context = context;
    i->pub.ps = ps;
    i->pub.qp_type = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
    i->local_psn = static_cast<std::uint32_t>(std::rand()) & 0xffffffu;
    *id = &i->pub;
    auto r = record("create_id", i);
    r["ps"] = ps == RDMA_PS_TCP ? "TCP" : ps == RDMA_PS_UDP ? "UDP" : ps == RDMA_PS_IB ? "IB" : "IPOIB";
    r["sync"] = i->sync;
    log_record(l, std::move(r));
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_destroy_id(rdma_cm_id* id) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>& lk) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    // A sync id's last event is its own to ack.
    if (i->sync && i->pub.event) {
      auto* prev = reinterpret_cast<Event*>(i->pub.event);
      i->pub.event = nullptr;
      i->unacked--;
      delete prev;
    }
    // librdmacm waits, without bound, until every event it handed out for this id is acked (the
    // kernel may still own their memory); a program that never acks hangs there. The fake waits
    // up to 2 s for another thread to ack, then refuses with EBUSY and keeps the id.
    if (i->unacked > 0 && !l.acked.wait_for(lk, std::chrono::seconds(2), [&] { return i->unacked <= 0; }))
      return refuse(l, "destroy_id", i, EBUSY,
                    std::to_string(i->unacked) + " event(s) of this id are not acked: the id is kept");
    // Undelivered events of this id are discarded, as the kernel drops a closed context's queue.
    auto& q = i->channel->queue;
    for (auto it = q.begin(); it != q.end();) {
      if ((*it)->id == i) {
        delete *it;
        it = q.erase(it);
      } else {
        ++it;
      }
    }
    // Requests a sync listener holds, and children that name it as their listener.
    for (Id* child : i->backlog) child->listener = nullptr;
    // The QP stays the program's: librdmacm's rdma_destroy_id destroys no QP (rdma_destroy_qp
    // and rdma_destroy_ep do), and a program may still use or destroy it with ibv_destroy_qp.
    if (i->state == State::connected || i->state == State::accepted || i->state == State::responded ||
        i->state == State::connecting) {
      Msg m{};
      m.type = MsgType::dreq;
      if (i->sock >= 0) send_msg(i->sock, m);
    }
    close_id_sockets(l, i);
    log_record(l, record("destroy_id", i));
    Channel* c = i->channel;
    c->ids--;
    if (i->sync && c->ids == 0)
      free_channel(c);
    else
      settle(*c);
    delete i;
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>& lk) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    if (channel && !l.channels.contains(reinterpret_cast<Channel*>(channel)))
      return refuse(l, "migrate_id", i, EBADF, "the event channel was destroyed");
    Channel* to = channel ? reinterpret_cast<Channel*>(channel) : new_channel();
    if (!to) {
      errno = ENOMEM;
      return -1;
    }
    // As librdmacm: the id's events handed out must be acked first (bounded here, as destroy).
    if (i->unacked > (i->pub.event ? 1 : 0) && !l.acked.wait_for(lk, std::chrono::seconds(2), [&] {
          return i->unacked <= (i->pub.event ? 1 : 0);
        })) {
      if (!channel) free_channel(to);
      return refuse(l, "migrate_id", i, EBUSY, "events of this id are not acked");
    }
    Channel* from = i->channel;
    for (auto it = from->queue.begin(); it != from->queue.end();) {
      if ((*it)->id == i) {
        const bool was_empty = to->queue.empty();
        to->queue.push_back(*it);
        if (was_empty) wake(*to);
        it = from->queue.erase(it);
      } else {
        ++it;
      }
    }
    from->ids--;
    to->ids++;
    const bool from_sync = i->sync;
    i->channel = to;
    i->pub.channel = &to->pub;
    i->sync = channel == nullptr;
    if (from_sync && from->ids == 0)
      free_channel(from);
    else
      settle(*from);
    log_record(l, record("migrate_id", i));
    return 0;
  });
}

}  // extern "C"
