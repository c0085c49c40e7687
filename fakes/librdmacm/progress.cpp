// The progress thread: what arrives on the CM sockets (REQ on a name's socket; REP, RTU, REJ,
// DREQ or the end on a connection's) becomes events on the ids' channels, under Library::mu.
// A peer that dies closes its sockets, which is what the kernel's CM sees as a timeout or a DREQ.
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cstring>
#include <new>
#include <thread>
#include "cm.hpp"

namespace fakecm {
namespace {

void add_fd(Library& l, int fd, Id* id) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  ::epoll_ctl(l.epoll, EPOLL_CTL_ADD, fd, &ev);
  (void)id;
}

void drop_fd(Library& l, int fd) {
  if (fd < 0) return;
  if (l.epoll >= 0) ::epoll_ctl(l.epoll, EPOLL_CTL_DEL, fd, nullptr);
  l.by_sock.erase(fd);
  l.pending.erase(fd);
}

Event* conn_event(Library& l, Id* id, rdma_cm_event_type type, int status, const Msg* m, std::size_t field,
                  Id* listen = nullptr) {
  Event* e = queue_event(l, id, type, status, listen);
  if (!e || !m) return e;
  std::memcpy(e->private_data, m->private_data, std::min<std::size_t>(m->private_len, kMaxPrivate));
  if (id->pub.qp_type == IBV_QPT_UD) {
    e->pub.param.ud.private_data = e->private_data;
    e->pub.param.ud.private_data_len = static_cast<std::uint8_t>(field);
  } else {
    e->pub.param.conn.private_data = e->private_data;
    e->pub.param.conn.private_data_len = static_cast<std::uint8_t>(field);
    e->pub.param.conn.responder_resources = m->initiator_depth;
    e->pub.param.conn.initiator_depth = m->responder_resources;
    e->pub.param.conn.rnr_retry_count = m->rnr_retry;
    e->pub.param.conn.retry_count = m->retry;
    e->pub.param.conn.srq = m->srq;
    e->pub.param.conn.qp_num = m->qpn;
  }
  return e;
}

// A REQ (or SIDR REQ) on a name's socket.
void on_request(Library& l, int fd, Id* listener, const Msg& m) {
  Msg rej{};
  rej.type = MsgType::rej;
  rej.qpn = kRejInvalidServiceId;
  if (listener->state != State::listening || listener->dead) {
    send_msg(fd, rej);  // nobody listens: the CM answers "invalid service ID"
    return;
  }
  int waiting = 0;
  for (auto& [k, v] : l.by_sock)
    if (v->listener == listener && v->state == State::request) ++waiting;
  if (listener->backlog_max > 0 && waiting >= listener->backlog_max) {
    send_msg(fd, rej);
    return;
  }
  auto* c = new (std::nothrow) Id;
  if (!c) {
    send_msg(fd, rej);
    return;
  }
  c->channel = listener->channel;
  c->channel->ids++;
  c->pub.channel = &c->channel->pub;
  c->pub.context = listener->pub.context;
  c->pub.ps = listener->pub.ps;
  c->pub.qp_type = m.type == MsgType::sidr_req ? IBV_QPT_UD : static_cast<ibv_qp_type>(m.qp_type);
  c->listener = listener;
  c->local_psn = static_cast<std::uint32_t>(std::rand()) & 0xffffffu;
  std::memcpy(&c->pub.route.addr.src_storage, &m.dst, sizeof m.dst);
  std::memcpy(&c->pub.route.addr.dst_storage, &m.src, sizeof m.src);
  std::string reason;
  if (!listener->any) {
    c->pub.verbs = listener->pub.verbs;
    c->pub.pd = listener->pub.pd;
    c->pub.port_num = listener->pub.port_num;
    c->device = listener->device;
    c->netdev = listener->netdev;
    c->sgid_index = listener->sgid_index;
    c->mode = listener->mode;
    c->mtu = listener->mtu;
    c->pub.route.addr.addr.ibaddr = listener->pub.route.addr.addr.ibaddr;
  } else if (acquire_device(l, c, reinterpret_cast<const sockaddr*>(&m.dst),
                            netdev_owning(reinterpret_cast<const sockaddr*>(&m.dst)), reason) != 0) {
    refuse(l, "connect_request", c, ENODEV, reason);
    c->channel->ids--;
    delete c;
    send_msg(fd, rej);
    return;
  }
  std::memcpy(&c->pub.route.addr.addr.ibaddr.dgid, m.gid, 16);
  fill_path(c);
  c->remote_qpn = m.qpn;
  c->remote_psn = m.psn;
  c->remote_qkey = m.qkey;
  c->responder_resources = m.initiator_depth;
  c->initiator_depth = m.responder_resources;
  c->state = State::request;
  c->sock = fd;
  l.pending.erase(fd);
  l.by_sock[fd] = c;
  if (listener->sync) listener->backlog.push_back(c);
  conn_event(l, c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &m,
             m.type == MsgType::sidr_req ? kSidrReqPrivate : kReqPrivate, listener);
}

// A message (or the end) on a connection's socket.
void on_conn(Library& l, Id* id) {
  Msg m{};
  const ssize_t n = ::recv(id->sock, &m, sizeof m, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    // The peer is gone (its process died, or it destroyed the id).
    switch (id->state) {
      case State::connecting:
      case State::accepted:
        // The kernel's CM retries its REQ or REP and gives up: unreachable, timed out.
        id->state = State::error;
        queue_event(l, id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
        break;
      case State::connected:
      case State::responded:
        id->state = State::disconnected;
        queue_event(l, id, RDMA_CM_EVENT_DISCONNECTED, 0);
        break;
      default:
        break;
    }
    close_conn(l, id);
    return;
  }
  switch (m.type) {
    case MsgType::rep: {
      if (id->state != State::connecting) return;
      id->remote_qpn = m.qpn;
      id->remote_psn = m.psn;
      std::memcpy(&id->pub.route.addr.addr.ibaddr.dgid, m.gid, 16);
      fill_path(id);
      if (id->pub.qp) {
        // librdmacm moves its own QP to RTR and RTS and sends the RTU (ucma_process_conn_resp).
        if (modify_to(l, id, IBV_QPS_RTR) != 0 || modify_to(l, id, IBV_QPS_RTS) != 0) {
          Msg rej{};
          rej.type = MsgType::rej;
          rej.qpn = kRejConsumerDefined;
          send_msg(id->sock, rej);
          id->state = State::error;
          queue_event(l, id, RDMA_CM_EVENT_CONNECT_ERROR, -errno);
          return;
        }
        Msg rtu{};
        rtu.type = MsgType::rtu;
        send_msg(id->sock, rtu);
        id->state = State::connected;
        conn_event(l, id, RDMA_CM_EVENT_ESTABLISHED, 0, &m, kRepPrivate);
      } else {
        id->state = State::responded;
        conn_event(l, id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, &m, kRepPrivate);
      }
      return;
    }
    case MsgType::sidr_rep: {
      if (id->state != State::connecting) return;
      id->state = State::route_resolved;
      Event* e = conn_event(l, id, RDMA_CM_EVENT_ESTABLISHED, 0, &m, kSidrRepPrivate);
      if (e) {
        ibv_ah_attr& ah = e->pub.param.ud.ah_attr;
        ah.is_global = 1;
        std::memcpy(&ah.grh.dgid, m.gid, 16);
        ah.grh.sgid_index = id->sgid_index;
        ah.grh.hop_limit = 64;
        ah.grh.traffic_class = id->tos;
        ah.port_num = id->pub.port_num;
        e->pub.param.ud.qp_num = m.qpn;
        e->pub.param.ud.qkey = m.qkey;
      }
      close_conn(l, id);
      return;
    }
    case MsgType::rtu:
      if (id->state != State::accepted) return;
      id->state = State::connected;
      queue_event(l, id, RDMA_CM_EVENT_ESTABLISHED, 0);
      return;
    case MsgType::rej:
      if (id->state != State::connecting && id->state != State::accepted) return;
      id->state = State::error;
      conn_event(l, id, RDMA_CM_EVENT_REJECTED, static_cast<int>(m.qpn), &m, kRejPrivate);
      close_conn(l, id);
      return;
    case MsgType::dreq:
      if (id->state == State::connected || id->state == State::responded || id->state == State::accepted) {
        id->state = State::disconnected;
        queue_event(l, id, RDMA_CM_EVENT_DISCONNECTED, 0);
      } else if (id->state == State::connecting) {
        id->state = State::error;
        queue_event(l, id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
      }
      close_conn(l, id);
      return;
    default:
      return;
  }
}

void progress_loop() {
  Library& l = lib();
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  epoll_event evs[64];
  for (;;) {
    const int n = ::epoll_wait(l.epoll, evs, 64, -1);
    if (n < 0) continue;
    // The same guard as the exported calls (cm.hpp): an exception (running out of memory)
    // ends this batch, never the process; epoll reports what is still unread again.
    gidpolicy::fakes::c_guard::locked_void(l.mu, [&](std::unique_lock<std::mutex>&) {
      for (int k = 0; k < n; ++k) {
        const int fd = evs[k].data.fd;
        if (auto p = l.pending.find(fd); p != l.pending.end()) {
          Id* listener = p->second;
          Msg m{};
          const ssize_t got = ::recv(fd, &m, sizeof m, MSG_DONTWAIT);
          if (got < 0 && errno == EAGAIN) continue;
          drop_fd(l, fd);
          if (got > 0 && (m.type == MsgType::req || m.type == MsgType::sidr_req)) {
            on_request(l, fd, listener, m);
            if (l.by_sock.count(fd)) {
              add_fd(l, fd, nullptr);
              continue;
            }
          }
          ::close(fd);
          continue;
        }
        auto it = l.by_sock.find(fd);
        if (it == l.by_sock.end()) continue;
        Id* id = it->second;
        if (fd == id->name) {
          for (int taken = 0; taken < 256; ++taken) {
            const int c = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (c < 0) break;
            l.pending[c] = id;
            add_fd(l, c, id);
          }
        } else if (fd == id->sock) {
          on_conn(l, id);
        }
      }
    });
  }
}

}  // namespace

std::mutex& lib_mutex() noexcept { return lib().mu; }

void after_fork_in_child() noexcept {
  Library& l = lib();
  // An inherited epoll fd names the parent's instance: adding to it would hand the child's
  // sockets to the parent's thread, and the parent's messages would never reach the child.
  if (l.epoll >= 0) ::close(l.epoll);
  l.epoll = -1;
  l.progress = false;
  // Requests accepted for the parent and not read yet are the parent's (these are the child's
  // copies); the parent's sockets are not watched here, so the child never takes its messages.
  for (const auto& [fd, listener] : l.pending) ::close(fd);
  l.pending.clear();
  l.by_sock.clear();
  // Threads the parent had blocked in rdma_get_cm_event do not exist here.
  for (Channel* c : l.channels) c->waiters = 0;
}

void close_conn(Library& l, Id* id) {
  if (id->sock < 0) return;
  drop_fd(l, id->sock);
  ::close(id->sock);
  id->sock = -1;
}

bool send_msg(int fd, const Msg& m) {
  return ::send(fd, &m, sizeof m, MSG_DONTWAIT | MSG_NOSIGNAL) == sizeof m;
}

void ensure_progress(Library& l) {
  if (l.progress) return;
  l.epoll = ::epoll_create1(EPOLL_CLOEXEC);
  std::thread(progress_loop).detach();
  l.progress = true;
}

void watch(Library& l, Id* id) {
  ensure_progress(l);
  if (id->name >= 0 && !l.by_sock.count(id->name)) {
    l.by_sock[id->name] = id;
    add_fd(l, id->name, id);
  }
  if (id->sock >= 0 && !l.by_sock.count(id->sock)) {
    l.by_sock[id->sock] = id;
    add_fd(l, id->sock, id);
  }
}

void unwatch(Library& l, Id* id) {
  drop_fd(l, id->name);
  drop_fd(l, id->sock);
}

void close_id_sockets(Library& l, Id* id) {
  unwatch(l, id);
  if (id->sock >= 0) ::close(id->sock);
  if (id->name >= 0) {
    ::close(id->name);
    // A fork()ed child destroying an id it inherited closes its copy; the name stays the parent's.
    if (id->name_pid == ::getpid()) ::unlink(id->name_path.c_str());
  }
  id->sock = id->name = -1;
  // Requests accepted on this name whose REQ was not read yet.
  for (auto it = l.pending.begin(); it != l.pending.end();) {
    if (it->second == id) {
      if (l.epoll >= 0) ::epoll_ctl(l.epoll, EPOLL_CTL_DEL, it->first, nullptr);
      ::close(it->first);
      it = l.pending.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [fd, other] : l.by_sock)
    if (other->listener == id) other->listener = nullptr;
}

}  // namespace fakecm
