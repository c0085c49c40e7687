// The drop-in fake librdmacm's state and the calls between its files.
//
// What the kernel's rdma_cm does for librdmacm (the ucma device) is done here in user space:
//  * addresses become a device, port and sgid_index by gidpolicy::rdma_cm_source, the one rule
//    gidpolicy's own prediction uses, over the table GIDPOLICY_FAKE_TABLES names (the same the
//    fake libibverbs serves) and the network namespace's own interfaces and routes;
//  * the CM protocol (REQ, REP, RTU, REJ, DREQ; SIDR REQ/REP for UD) runs over one Unix
//    SOCK_SEQPACKET connection per rdma_cm connection, to a socket file named after the
//    listener's port space, address and port in a directory every fake process shares
//    (GIDPOLICY_FAKE_CM_DIR), so processes in different network namespaces meet as hosts on one
//    fabric do;
//  * a progress thread (started with the first socket) turns what arrives into events queued
//    on the id's event channel, whose fd (an eventfd) is readable while events are queued.
//
// Every exported function is one guarded call (locked_call and friends below, over the fakes'
// one guard, gidpolicy/fakes/c_guard.hpp, which the drop-in libibverbs runs in too): the lock,
// the exception boundary and errno are there, never written by hand in a function. Control-log
// records (nlohmann JSON, which allocates and may throw) are built only inside such a call.
#pragma once

#include <gidpolicy/fakes/c_guard.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/rdma_cm.hpp>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace fakecm {

/// The CM messages on a connection's socket.
enum class MsgType : std::uint8_t { req = 1, rep, rtu, rej, dreq, sidr_req, sidr_rep };

/// Private data bounds of the IB CM messages (IBA 12.6), less rdma_cm's 36-byte header where it
/// has one (REQ, SIDR REQ): what rdma_connect / accept / reject accept, and the length an event
/// reports (the kernel hands the whole field, zero-padded).
constexpr std::size_t kReqPrivate = 92 - 36, kRepPrivate = 196, kRejPrivate = 148, kSidrReqPrivate = 216 - 36,
                      kSidrRepPrivate = 136;
constexpr std::size_t kMaxPrivate = 196;

/// IB CM reject reasons the events carry in `status`.
constexpr int kRejInvalidServiceId = 8, kRejConsumerDefined = 28;

struct Msg {
  MsgType type{};
  std::uint8_t qp_type = 0;  // ibv_qp_type
  std::uint8_t responder_resources = 0, initiator_depth = 0, rnr_retry = 0, retry = 0, srq = 0;
  std::uint8_t private_len = 0;
  std::uint32_t qpn = 0, psn = 0, qkey = 0;
  std::uint8_t gid[16]{};  // the sender's source GID
  sockaddr_storage src{}, dst{};
  std::uint8_t private_data[kMaxPrivate]{};
};

struct Id;

struct Event {
  rdma_cm_event pub{};  // first: the pointer handed out is this
  Id* id = nullptr;
  std::uint8_t private_data[kMaxPrivate]{};
  bool delivered = false;
};

struct Channel {
  rdma_event_channel pub{};  // first
  // The eventfd the fake itself wakes, polls and reads; pub.fd is a dup of it, the program's.
  // A program that closes its fd (and reuses the number for a file) never receives the fake's
  // writes, as librdmacm only ever reads the ucma fd.
  int own = -1;
  std::deque<Event*> queue;
  int ids = 0;
  int waiters = 0;      // threads blocked in rdma_get_cm_event on it
  bool closed = false;  // destroyed while a thread waited: kept, and that thread stays blocked
};

enum class State : std::uint8_t {
  idle,
  bound,
  addr_resolved,
  route_resolved,
  listening,
  connecting,  // REQ sent
  responded,   // active: REP received, no RTU sent yet (no QP)
  request,     // passive: REQ received
  accepted,    // passive: REP sent, waiting for RTU
  connected,
  disconnected,
  error,
};

struct Id {
  rdma_cm_id pub{};  // first
  Channel* channel = nullptr;
  bool sync = false;  // created without a channel: each operation waits for its event
  State state = State::idle;
  int sock = -1;  // the connection's socket, or the listener's
  int name = -1;  // the bound name (a socket file) reserving the address and port
  std::string name_path;
  pid_t name_pid = 0;  // the process that bound it: only it removes the file (a fork()ed child never)
  bool any = false;    // bound to the wildcard address
  // The resolution.
  std::string device, netdev;
  std::uint8_t sgid_index = 0;
  gidpolicy::GidType mode = gidpolicy::GidType::roce_v2;
  ibv_mtu mtu = IBV_MTU_1024;
  ibv_sa_path_rec path{};
  // The peer's side of the connection.
  std::uint32_t remote_qpn = 0, remote_psn = 0, remote_qkey = 0, local_psn = 0;
  std::uint8_t responder_resources = 0, initiator_depth = 0, rnr_retry = 7, retry = 7;
  std::uint8_t tos = 0, ack_timeout = 14;
  bool reuseaddr = false, afonly = false;
  int unacked = 0;  // events handed out and not acked
  Id* listener = nullptr;
  std::deque<Id*> backlog;  // sync listeners: requests not yet taken by rdma_get_request
  int backlog_max = 0;
  // create_ep's listener: what rdma_get_request creates on each request.
  bool has_ep_qp = false;
  ibv_qp_init_attr ep_qp{};
  ibv_pd* ep_pd = nullptr;
  bool own_cqs = false;
  bool dead = false;  // destroyed while a progress step held it
};

/// The process's librdmacm state; every field under mu.
struct Library {
  std::mutex mu;
  std::condition_variable acked;  // an event was acked (rdma_destroy_id waits for its own)
  bool loaded = false;
  std::string config_error;  // why GIDPOLICY_FAKE_TABLES could not be used ("" = fine)
  std::vector<gidpolicy::GidTable> tables;
  std::vector<gidpolicy::RoceModeSetting> modes;
  std::vector<ibv_context*> contexts;           // one per device of the fake libibverbs
  std::map<ibv_context*, ibv_pd*> default_pds;  // rdma_create_qp with a NULL pd
  std::string dir;                              // GIDPOLICY_FAKE_CM_DIR
  std::map<int, Id*> by_sock;                   // progress thread's sockets
  std::map<int, Id*> pending;                   // accepted, REQ not read yet: fd -> listener
  std::set<Channel*> channels;                  // live ones: a destroyed channel's fd is closed (EBADF)
  int epoll = -1;
  bool progress = false;
  int log_fd = -2;  // -2: not opened yet
};

/// The process's state. Never destroyed (the progress thread may outlive statics) and never
/// heap-allocated, so the first call of any entry point cannot fail getting it.
Library& lib() noexcept;

/// The frame of every exported call that touches the state: `body(l, lock)` runs with l.mu held
/// (a call that waits releases and retakes `lock`) and answers as the C function does (errno
/// set where it fails). An exception releases the lock and becomes `failure` with its errno
/// (std::bad_alloc: ENOMEM, as librdmacm answers running out of memory), never a crash of the
/// program. Example: `return locked_call(-1, [&](Library& l, std::unique_lock<std::mutex>&) { ... });`
/// The lock of the process's state (the fork handlers' and the guard's).
std::mutex& lib_mutex() noexcept;
/// In a fork()ed child, with the lock held (c_guard::own_fork): the parent's progress thread did
/// not come along and its epoll instance and sockets are the parent's; the child forgets them,
/// and its first socket starts its own progress thread.
void after_fork_in_child() noexcept;

template <class Result, class Body>
Result locked_call(Result failure, Body&& body) noexcept {
  gidpolicy::fakes::c_guard::own_fork<&lib_mutex, &after_fork_in_child>();
  Library& l = lib();
  return gidpolicy::fakes::c_guard::locked(
      l.mu, failure, [&](std::unique_lock<std::mutex>& lock) -> Result { return body(l, lock); });
}
/// As locked_call, for a function that returns nothing: an exception leaves only its errno.
template <class Body>
void locked_void_call(Body&& body) noexcept {
  gidpolicy::fakes::c_guard::own_fork<&lib_mutex, &after_fork_in_child>();
  Library& l = lib();
  gidpolicy::fakes::c_guard::locked_void(l.mu, [&](std::unique_lock<std::mutex>& lock) { body(l, lock); });
}
/// The frame of an exported call that takes no lock itself: a pure answer (rdma_event_str), a
/// free, or a call made of other entry points (rdma_create_ep), each of which locks for itself.
template <class Result, class Body>
Result unlocked_call(Result failure, Body&& body) noexcept {
  return gidpolicy::fakes::c_guard::unlocked(failure, std::forward<Body>(body));
}
template <class Body>
void unlocked_void_call(Body&& body) noexcept {
  gidpolicy::fakes::c_guard::unlocked_void(std::forward<Body>(body));
}
/// Loads the tables, modes, devices and the directory once (under mu).
bool ensure_loaded(Library& l);
void log_record(Library& l, nlohmann::json r);
nlohmann::json record(const char* call, const Id* id);
const char* errno_name(int e);
std::string address_text(const sockaddr* a);
/// errno = e; returns -1 and logs the refusal with its reason.
int refuse(Library& l, const char* call, const Id* id, int e, const std::string& reason);

// library.cpp
Event* queue_event(Library& l, Id* id, rdma_cm_event_type type, int status, Id* listen = nullptr);
void wake(Channel& c);
/// Sync ids: waits for the id's next event (the lock is dropped while waiting); 0 or -1 errno.
int wait_sync(std::unique_lock<std::mutex>& lk, Id* id, rdma_cm_event_type expect);
Channel* new_channel();  // caller holds mu; registered in lib().channels
/// Closes the channel's fd and frees it and its queued events (caller holds mu).
void free_channel(Channel* c);
/// The fd is readable exactly while events are queued, as the ucma fd's poll: called after
/// events leave the queue, it clears the eventfd's level once the queue is empty.
void settle(Channel& c);

// resolve.cpp
/// The kernel's bind: EADDRNOTAVAIL when no interface of this namespace holds the address,
/// ENODEV when no port's table holds its GID (rdma_cm's rule), EADDRINUSE for a taken port.
int bind_id(Library& l, Id* id, const sockaddr* addr, const char* call);
/// Resolves `id`'s device for source `src` owned by `netdev`: 0 or a positive errno + reason.
int acquire_device(Library& l, Id* id, const sockaddr* src, const std::string& netdev, std::string& reason);
std::string netdev_owning(const sockaddr* a);
/// Removes the socket files in the directory that nobody listens on any more (their process
/// was killed), never a live one: once per process, at its first call.
void sweep_stale_names(Library& l);
socklen_t sockaddr_len(const sockaddr* a);
void fill_path(Id* id);

// progress.cpp
void close_conn(Library& l, Id* id);
void ensure_progress(Library& l);
void watch(Library& l, Id* id);
void unwatch(Library& l, Id* id);
bool send_msg(int fd, const Msg& m);
std::string socket_path(const Library& l, rdma_port_space ps, const sockaddr* a, bool any);
void close_id_sockets(Library& l, Id* id);

// qp.cpp
int modify_to(Library& l, Id* id, ibv_qp_state state);
int init_qp_attr(Id* id, ibv_qp_attr* attr, int* mask);
int create_qp_locked(Library& l, Id* id, ibv_pd* pd, ibv_qp_init_attr* attr);
void destroy_qp_locked(Id* id);

}  // namespace fakecm
