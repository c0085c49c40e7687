// Connections: listen, connect, accept, reject, establish, disconnect, notify, get_request. One
// SOCK_SEQPACKET connection per rdma_cm connection carries REQ / REP / RTU / REJ / DREQ (SIDR
// REQ / REP for UD); progress.cpp turns what arrives into events.
#include "cm.hpp"

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

namespace fakecm {
namespace {

bool host_known(const Library& l, const sockaddr* a) {
  if (!netdev_owning(a).empty()) return true;
  std::string addr = address_text(a);
  addr.resize(addr.rfind(':') + 1);
  for (char& ch : addr)
    if (ch == '/' || ch == '[' || ch == ']') ch = '_';
  DIR* d = ::opendir(l.dir.c_str());
  if (!d) return false;
  bool found = false;
  while (dirent* e = ::readdir(d))
    if (std::strstr(e->d_name, addr.c_str())) found = true;
  ::closedir(d);
  return found;
}

// librdmacm's reading of responder resources and initiator depth: RDMA_MAX_RESP_RES /
// RDMA_MAX_INIT_DEPTH (0xFF) mean the device's maximum, anything else above it is EINVAL.
int take_depths(Id* id, const rdma_conn_param* p) {
  ibv_device_attr attr{};
  if (!id->pub.verbs || ibv_query_device(id->pub.verbs, &attr) != 0) return EINVAL;
  const auto resp_max = static_cast<unsigned>(attr.max_qp_rd_atom);
  const auto init_max = static_cast<unsigned>(attr.max_qp_init_rd_atom);
  const unsigned resp = p->responder_resources == RDMA_MAX_RESP_RES ? resp_max : p->responder_resources;
  const unsigned init = p->initiator_depth == RDMA_MAX_INIT_DEPTH ? init_max : p->initiator_depth;
  if (resp > resp_max || init > init_max) return EINVAL;
  id->responder_resources = static_cast<std::uint8_t>(resp);
  id->initiator_depth = static_cast<std::uint8_t>(init);
  return 0;
}

}  // namespace
}  // namespace fakecm

using namespace fakecm;

extern "C" {

__attribute__((visibility("default"))) int rdma_listen(rdma_cm_id* id, int backlog) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    if (i->state == State::idle) {
      // The kernel's rdma_listen binds an unbound id to the IPv4 wildcard address and an
      // ephemeral port first (as udaddy -p and libfabric's passive endpoints rely on).
      sockaddr_in any{};
      any.sin_family = AF_INET;
      if (bind_id(l, i, reinterpret_cast<const sockaddr*>(&any), "bind_addr") != 0) return -1;
    }
    if (i->state != State::bound && i->state != State::listening)
      return refuse(l, "listen", i, EINVAL, "rdma_listen needs an id that is bound or not yet used");
    i->state = State::listening;
    i->backlog_max = backlog;
    auto r = record("listen", i);
    r["src"] = address_text(&i->pub.route.addr.src_addr);
    r["backlog"] = backlog;
    r["result"] = 0;
    log_record(l, std::move(r));
    return 0;
  });
}

namespace {

// What a REQ (rdma_connect) and a REP (rdma_accept) take alike from the id and conn_param: the
// private data within the message's limit, a QP (the id's, or one conn_param names), the depths
// the device allows, the RNR retry count, the PSN, the Q_Key and the source GID. Refused (the
// kernel's EINVAL) before anything is sent or changed but the depths; 0 when `m` is filled.
int start_message(Library& l, const char* call, Id* i, const rdma_conn_param* conn_param, std::size_t limit,
                  Msg& m) {
  const bool ud = i->pub.qp_type == IBV_QPT_UD;
  const char* what = m.type == MsgType::req        ? "REQ"
                     : m.type == MsgType::sidr_req ? "SIDR REQ"
                     : m.type == MsgType::rep      ? "REP"
                                                   : "SIDR REP";
  if (conn_param && conn_param->private_data_len > limit)
    return refuse(l, call, i, EINVAL,
                  std::to_string(conn_param->private_data_len) + " bytes of private data: a " + what +
                      " carries at most " + std::to_string(limit));
  if (!ud && !i->pub.qp && !conn_param)
    return refuse(l, call, i, EINVAL, "no QP on the id and no conn_param naming one");
  m.qpn = i->pub.qp ? i->pub.qp->qp_num : conn_param ? conn_param->qp_num : 0;
  m.psn = i->local_psn;
  m.qkey = RDMA_UDP_QKEY;
  if (conn_param) {
    if (take_depths(i, conn_param) != 0)
      return refuse(l, call, i, EINVAL, "responder resources or initiator depth above the device's");
    m.responder_resources = i->responder_resources;
    m.initiator_depth = i->initiator_depth;
    m.rnr_retry = conn_param->rnr_retry_count;
    i->rnr_retry = conn_param->rnr_retry_count;
    m.private_len = conn_param->private_data_len;
    if (conn_param->private_data && m.private_len)
      std::memcpy(m.private_data, conn_param->private_data, m.private_len);
  }
  std::memcpy(m.gid, &i->pub.route.addr.addr.ibaddr.sgid, 16);
  return 0;
}

}  // namespace

__attribute__((visibility("default"))) int rdma_connect(rdma_cm_id* id, rdma_conn_param* conn_param) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>& lk) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    if (i->state != State::route_resolved)
      return refuse(l, "connect", i, EINVAL, "rdma_connect needs a resolved route");
    const bool ud = i->pub.qp_type == IBV_QPT_UD;
    Msg m{};
    m.type = ud ? MsgType::sidr_req : MsgType::req;
    if (int err = start_message(l, "connect", i, conn_param, ud ? kSidrReqPrivate : kReqPrivate, m); err != 0)
      return err;
    m.qp_type = static_cast<std::uint8_t>(i->pub.qp_type);
    if (conn_param) {
      m.retry = conn_param->retry_count;
      m.srq = conn_param->srq;
      i->retry = conn_param->retry_count;
    }
    std::memcpy(&m.src, &i->pub.route.addr.src_storage, sizeof m.src);
    std::memcpy(&m.dst, &i->pub.route.addr.dst_storage, sizeof m.dst);
    const auto* dst = &i->pub.route.addr.dst_addr;
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    bool connected = false;
    // The kernel's address and route resolution take a workqueue round and its REQ a MAD's
    // flight, where the fake's are instant; a REQ that finds no listener is looked for again for
    // up to 2 s (lock released) before it counts as rejected, so a server that listens again
    // right after a first connection (perftest -R) is found, as on hardware. 2 s, not the 100 ms
    // the kernel's own latency would suggest: on a busy machine the server's next rdma_listen may
    // come that late, and whether it is found must not depend on how busy the machine is. A REQ
    // to a port nobody ever listens on is rejected 2 s later than on hardware; nothing else is.
    for (int attempt = 0; fd >= 0 && !connected && attempt < 1000; ++attempt) {
      if (attempt > 0) {
        lk.unlock();
        ::usleep(2000);
        lk.lock();
      }
      for (bool any : {false, true}) {
        if (connected) break;
        const std::string path = socket_path(l, i->pub.ps, dst, any);
        sockaddr_un un{};
        un.sun_family = AF_UNIX;
        if (path.size() >= sizeof un.sun_path) continue;
        std::memcpy(un.sun_path, path.c_str(), path.size() + 1);
        connected = ::connect(fd, reinterpret_cast<sockaddr*>(&un), sizeof un) == 0;
      }
    }
    auto r = record("connect", i);
    r["src"] = address_text(&i->pub.route.addr.src_addr);
    r["dst"] = address_text(dst);
    r["qp_num"] = m.qpn;
    if (!connected || !send_msg(fd, m)) {
      if (fd >= 0) ::close(fd);
      // No listener: a host that is there answers with a REJ (invalid service ID); one nobody
      // knows never answers, and the CM's REQ times out.
      i->state = State::error;
      if (host_known(l, dst)) {
        r["result"] = "rejected";
        log_record(l, std::move(r));
        queue_event(l, i, RDMA_CM_EVENT_REJECTED, kRejInvalidServiceId);
      } else {
        r["result"] = "unreachable";
        log_record(l, std::move(r));
        queue_event(l, i, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
      }
    } else {
      i->sock = fd;
      i->state = State::connecting;
      watch(l, i);
      r["result"] = 0;
      log_record(l, std::move(r));
    }
    if (i->sync) return wait_sync(lk, i, RDMA_CM_EVENT_ESTABLISHED);
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_accept(rdma_cm_id* id, rdma_conn_param* conn_param) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>& lk) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    if (i->state != State::request) return refuse(l, "accept", i, EINVAL, "no connection request to accept");
    const bool ud = i->pub.qp_type == IBV_QPT_UD;
    Msg m{};
    m.type = ud ? MsgType::sidr_rep : MsgType::rep;
    if (int err = start_message(l, "accept", i, conn_param, ud ? kSidrRepPrivate : kRepPrivate, m); err != 0)
      return err;
    if (!ud && i->pub.qp && (modify_to(l, i, IBV_QPS_RTR) != 0 || modify_to(l, i, IBV_QPS_RTS) != 0))
      return refuse(l, "accept", i, errno, "the QP did not reach RTS");
    auto r = record("accept", i);
    r["qp_num"] = m.qpn;
    r["src"] = address_text(&i->pub.route.addr.src_addr);
    r["dst"] = address_text(&i->pub.route.addr.dst_addr);
    if (i->sock < 0 || !send_msg(i->sock, m)) {
      // The requester is gone: the REP is never answered.
      i->state = State::error;
      r["result"] = "unreachable";
      log_record(l, std::move(r));
      queue_event(l, i, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
    } else {
      r["result"] = 0;
      log_record(l, std::move(r));
      i->state = ud ? State::route_resolved : State::accepted;
    }
    if (ud) close_conn(l, i);
    if (i->sync && !ud) return wait_sync(lk, i, RDMA_CM_EVENT_ESTABLISHED);
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_reject(rdma_cm_id* id, const void* private_data,
                                                       uint8_t private_data_len) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    if (i->state != State::request) return refuse(l, "reject", i, EINVAL, "no connection request to reject");
    if (private_data_len > kRejPrivate)
      return refuse(l, "reject", i, EINVAL,
                    std::to_string(private_data_len) + " bytes of private data: a REJ carries at most " +
                        std::to_string(kRejPrivate));
    Msg m{};
    m.type = MsgType::rej;
    m.qpn = kRejConsumerDefined;
    m.private_len = private_data_len;
    if (private_data && private_data_len) std::memcpy(m.private_data, private_data, private_data_len);
    if (i->sock >= 0) send_msg(i->sock, m);
    close_conn(l, i);
    i->state = State::error;
    auto r = record("reject", i);
    r["private_data_len"] = private_data_len;
    r["result"] = 0;
    log_record(l, std::move(r));
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_establish(rdma_cm_id* id) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    if (i->state != State::responded)
      return refuse(l, "establish", i, EINVAL, "no connect response to establish");
    Msg rtu{};
    rtu.type = MsgType::rtu;
    if (i->sock < 0 || !send_msg(i->sock, rtu))
      return refuse(l, "establish", i, ENOTCONN, "the peer is gone");
    i->state = State::connected;
    auto r = record("establish", i);
    r["result"] = 0;
    log_record(l, std::move(r));
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_disconnect(rdma_cm_id* id) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>& lk) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    // librdmacm moves the QP to the error state first, flushing what is posted.
    if (i->pub.qp) modify_to(l, i, IBV_QPS_ERR);
    const bool live =
        i->state == State::connected || i->state == State::responded || i->state == State::accepted;
    if (!live && i->state != State::disconnected)
      return refuse(l, "disconnect", i, EINVAL, "the id is not connected");
    if (live) {
      Msg m{};
      m.type = MsgType::dreq;
      if (i->sock >= 0) send_msg(i->sock, m);
      close_conn(l, i);
      i->state = State::disconnected;
      queue_event(l, i, RDMA_CM_EVENT_DISCONNECTED, 0);
    }
    auto r = record("disconnect", i);
    r["result"] = 0;
    log_record(l, std::move(r));
    if (i->sync && live) return wait_sync(lk, i, RDMA_CM_EVENT_DISCONNECTED);
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_notify(rdma_cm_id* id, ibv_event_type event) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) -> int {
    if (!id) {
      errno = EINVAL;
      return -1;
    }
    auto* i = reinterpret_cast<Id*>(id);
    // The kernel passes a QP's first-packet event to the CM of a connection awaiting its RTU
    // (IB_EVENT_COMM_EST), which then counts as established.
    if (i->state == State::accepted && event == IBV_EVENT_COMM_EST) {
      i->state = State::connected;
      queue_event(l, i, RDMA_CM_EVENT_ESTABLISHED, 0);
    } else if (i->state != State::connected && i->state != State::accepted) {
      return refuse(l, "notify", i, EINVAL, "the id has no connection");
    }
    return 0;
  });
}

__attribute__((visibility("default"))) int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id) {
  return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>& lk) -> int {
    if (!listen || !id) {
      errno = EINVAL;
      return -1;
    }
    auto* li = reinterpret_cast<Id*>(listen);
    if (!li->sync)
      return refuse(l, "get_request", li, EINVAL, "rdma_get_request needs a synchronous listener");
    if (li->state != State::listening) return refuse(l, "get_request", li, EINVAL, "the id is not listening");
    for (;;) {
      if (li->pub.event) {
        auto* prev = reinterpret_cast<Event*>(li->pub.event);
        li->pub.event = nullptr;
        prev->id->unacked--;
        delete prev;
      }
      Event* e = nullptr;
      // The listener's channel carries its requests; wait as a blocking read does.
      Channel* c = li->channel;
      while (c->queue.empty()) {
        lk.unlock();
        pollfd p{c->own, POLLIN, 0};
        ::poll(&p, 1, -1);
        lk.lock();
        std::uint64_t v = 0;
        if (c->queue.empty()) {
          pollfd q{c->own, POLLIN, 0};
          if (::poll(&q, 1, 0) == 1) [[maybe_unused]]
            auto n = ::read(c->own, &v, sizeof v);
        }
      }
      e = c->queue.front();
      c->queue.pop_front();
      if (!c->queue.empty()) wake(*c);
      Id* child = e->id;
      if (e->pub.event != RDMA_CM_EVENT_CONNECT_REQUEST) {
        delete e;
        continue;
      }
      for (auto it = li->backlog.begin(); it != li->backlog.end(); ++it)
        if (*it == child) {
          li->backlog.erase(it);
          break;
        }
      // The child gets its own channel (librdmacm migrates it) and keeps the request as its event.
      Channel* own = new_channel();
      if (!own) {
        delete e;
        errno = ENOMEM;
        return -1;
      }
      li->channel->ids--;
      child->channel = own;
      own->ids++;
      child->pub.channel = &own->pub;
      child->sync = true;
      child->unacked++;
      e->delivered = true;
      child->pub.event = &e->pub;
      if (li->has_ep_qp) {
        ibv_qp_init_attr a = li->ep_qp;
        if (create_qp_locked(l, child, li->ep_pd, &a) != 0) return -1;
      }
      *id = &child->pub;
      return 0;
    }
  });
}

}  // extern "C"
