/* Drives the fake librdmacm the way programs (and buggy programs) do.
 *   cm_probe bind ADDR    binds ADDR; prints "DEVICE PORT INDEX" (INDEX: the first slot of the
 *                         port holding the bound GID, read back through ibv_query_gid; the tests
 *                         take the sgid_index itself from the control log) or "errno N TEXT"
 *   cm_probe abuse ADDR   every misuse case below; exit 0 when each was an error return or an
 *                         event, as librdmacm gives, within bounded time
 *   cm_probe fd_reuse ADDR         the channel's fd closed and reused by a file: the file unchanged
 *   cm_probe fork ADDR             a fork()ed child's connections with its parent, both ways
 *   cm_probe listen ADDR PORT      listens, prints "listening", waits to be killed
 *   cm_probe kernel_answers ADDR GROUP  listen unbound, resolve 0.0.0.0 and GROUP, destroy_id
 *                                       leaving the QP: what the kernel accepts
 * Compiled against the real librdmacm headers, run on the fake.
 * Every time bound below is a hang guard (kWaitMs, kGuardS), far above what an idle machine
 * needs: the suite runs beside CPU-bound work. That nothing (more) arrives is shown by the next
 * event being a sentinel's, never by a quiet spell. */
#define _GNU_SOURCE /* clock_gettime and CLOCK_MONOTONIC under -std=c11 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The longest wait for an event that is due: resolve_addr and connect queue theirs before they
 * return, the fake's progress thread the others within milliseconds on an idle machine. */
enum { kWaitMs = 30000 };
/* What "at once" / "bounded" means for a call that must return rather than block (librdmacm's
 * own destroy_id waits forever for an ack): a hang guard, not a speed. */
static const double kGuardS = 30.0;

static int failures;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fputc('\n', stderr);                                 \
      ++failures;                                          \
    }                                                      \
  } while (0)

static int parse(const char* text, int port, struct sockaddr_storage* ss) {
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in* s4 = (struct sockaddr_in*)ss;
  struct sockaddr_in6* s6 = (struct sockaddr_in6*)ss;
  if (inet_pton(AF_INET, text, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons((unsigned short)port);
    return 0;
  }
  if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((unsigned short)port);
    return 0;
  }
  return -1;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The next event within `ms`, or NULL. */
static struct rdma_cm_event* next_event(struct rdma_event_channel* ch, int ms) {
  struct pollfd p = {ch->fd, POLLIN, 0};
  double end = now() + ms / 1000.0;
  for (;;) {
    int left = (int)((end - now()) * 1000);
    if (left <= 0 || poll(&p, 1, left) <= 0) return NULL;
    struct rdma_cm_event* e = NULL;
    int flags = fcntl(ch->fd, F_GETFL);
    fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK);
    int rc = rdma_get_cm_event(ch, &e);
    fcntl(ch->fd, F_SETFL, flags);
    if (rc == 0) return e;
  }
}

/* Resolves a fresh id (its event is queued before rdma_resolve_addr returns) and takes the next
 * event of `ch`: true when that is the fresh id's ADDR_RESOLVED, i.e. nothing was queued before
 * it. A positive signal for "no (more) events", where waiting for a quiet spell would let a
 * loaded machine decide. */
static int sentinel_is_next(struct rdma_event_channel* ch, const struct sockaddr_storage* ss) {
  struct rdma_cm_id* sentinel = NULL;
  struct rdma_cm_event* e = NULL;
  int ok;
  if (rdma_create_id(ch, &sentinel, NULL, RDMA_PS_UDP) != 0) return 0;
  if (rdma_resolve_addr(sentinel, NULL, (struct sockaddr*)ss, 1000) != 0) {
    rdma_destroy_id(sentinel);
    return 0;
  }
  e = next_event(ch, kWaitMs);
  ok = e && e->id == sentinel && e->event == RDMA_CM_EVENT_ADDR_RESOLVED;
  if (!ok)
    fprintf(stderr, "the next event is %s of %s, not the sentinel's ADDR_RESOLVED\n",
            e ? rdma_event_str(e->event) : "none",
            e ? (e->id == sentinel ? "the sentinel" : "another id") : "-");
  /* Whatever came first, take events up to the sentinel's, so the channel is left empty. */
  for (int left = 100; e && left > 0; --left) {
    const int mine = e->id == sentinel;
    rdma_ack_cm_event(e);
    e = mine ? NULL : next_event(ch, kWaitMs);
  }
  rdma_destroy_id(sentinel);
  return ok;
}

static int do_bind(const char* addr) {
  struct sockaddr_storage ss;
  if (parse(addr, 0, &ss) != 0) {
    fprintf(stderr, "not an address: %s\n", addr);
    return 1;
  }
  struct rdma_event_channel* ch = rdma_create_event_channel();
  if (!ch) {
    printf("errno %s\n", strerror(errno));
    return 2;
  }
  struct rdma_cm_id* id = NULL;
  if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0) return 2;
  if (rdma_bind_addr(id, (struct sockaddr*)&ss) != 0) {
    printf("errno %d %s\n", errno, strerror(errno));
    rdma_destroy_id(id);
    return 2;
  }
  /* Which slot holds the bound GID: the route's sgid, read back through the device. */
  int found = -1;
  for (int i = 0; i < 256 && found < 0; ++i) {
    union ibv_gid g;
    if (ibv_query_gid(id->verbs, id->port_num, i, &g) == 0 &&
        memcmp(&g, &id->route.addr.addr.ibaddr.sgid, sizeof g) == 0)
      found = i;
  }
  printf("%s %u %d\n", ibv_get_device_name(id->verbs->device), id->port_num, found);
  rdma_destroy_id(id);
  rdma_destroy_event_channel(ch);
  return 0;
}

static int abuse(const char* addr) {
  struct sockaddr_storage ss;
  if (parse(addr, 0, &ss) != 0) return 1;
  struct rdma_event_channel* ch = rdma_create_event_channel();
  CHECK(ch != NULL, "create_event_channel: %s", strerror(errno));
  if (!ch) return 1;

  /* 1. A non-blocking channel with nothing queued: EAGAIN at once, never a wait. */
  fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
  struct rdma_cm_event* e = NULL;
  double t0 = now();
  CHECK(rdma_get_cm_event(ch, &e) == -1 && errno == EAGAIN, "empty non-blocking channel: not EAGAIN");
  CHECK(now() - t0 < kGuardS, "empty non-blocking get_cm_event waited");
  fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) & ~O_NONBLOCK);

  /* 2. Events of an id destroyed before they were read are gone with it: the next event is
   * the sentinel's, resolved after the destroy (events come in the order they were queued). */
  struct rdma_cm_id* id = NULL;
  CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "create_id");
  CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr*)&ss, 1000) == 0, "resolve_addr: %s", strerror(errno));
  CHECK(rdma_destroy_id(id) == 0, "destroy_id with an unread event: %s", strerror(errno));
  CHECK(sentinel_is_next(ch, &ss), "an event of a destroyed id was delivered");

  /* 3. An id destroyed with an event handed out and not acked: an error (EBUSY) within a
   * bounded time, the id kept; after the ack it goes. (librdmacm itself waits forever.) */
  CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "create_id");
  CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr*)&ss, 1000) == 0, "resolve_addr");
  e = next_event(ch, kWaitMs);
  CHECK(e && e->event == RDMA_CM_EVENT_ADDR_RESOLVED, "no ADDR_RESOLVED");
  t0 = now();
  CHECK(rdma_destroy_id(id) == -1 && errno == EBUSY, "destroy_id with an unacked event: not EBUSY");
  /* The fake waits 2 s for another thread's ack; what is tested is that it returns at all. */
  CHECK(now() - t0 < kGuardS, "destroy_id waited %.1f s", now() - t0);
  if (e) rdma_ack_cm_event(e);
  CHECK(rdma_destroy_id(id) == 0, "destroy_id after the ack: %s", strerror(errno));

  /* 4. Thousands of ids, each resolved, then destroyed: every event arrives, nothing leaks fds. */
  enum { kIds = 3000 };
  static struct rdma_cm_id* ids[kIds];
  int made = 0, events = 0;
  for (int i = 0; i < kIds; ++i) {
    if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_UDP) != 0) break;
    ++made;
    if (rdma_resolve_addr(ids[i], NULL, (struct sockaddr*)&ss, 1000) != 0) break;
  }
  CHECK(made == kIds, "only %d of %d ids", made, kIds);
  while (events < made && (e = next_event(ch, kWaitMs)) != NULL) {
    ++events;
    rdma_ack_cm_event(e);
  }
  CHECK(events == made, "%d events for %d ids", events, made);
  CHECK(sentinel_is_next(ch, &ss), "more events than ids");
  for (int i = 0; i < made; ++i) CHECK(rdma_destroy_id(ids[i]) == 0, "destroy id %d", i);

  /* 5. Oversized private data: EINVAL from connect (REQ: 56 bytes), reject (148). */
  CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "create_id");
  CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr*)&ss, 1000) == 0, "resolve_addr");
  e = next_event(ch, kWaitMs);
  if (e) rdma_ack_cm_event(e);
  CHECK(rdma_resolve_route(id, 1000) == 0, "resolve_route");
  e = next_event(ch, kWaitMs);
  CHECK(e && e->event == RDMA_CM_EVENT_ROUTE_RESOLVED, "no ROUTE_RESOLVED");
  if (e) rdma_ack_cm_event(e);
  char big[200];
  memset(big, 'x', sizeof big);
  struct rdma_conn_param cp;
  memset(&cp, 0, sizeof cp);
  cp.private_data = big;
  cp.private_data_len = 57;
  cp.qp_num = 0x123;
  CHECK(rdma_connect(id, &cp) == -1 && errno == EINVAL, "57 bytes of REQ private data accepted");
  CHECK(rdma_reject(id, big, 149) == -1 && errno == EINVAL, "reject of no request accepted");
  /* 56 bytes is the most a REQ takes: nobody listens, so REJECTED (or UNREACHABLE), never a hang. */
  cp.private_data_len = 56;
  CHECK(rdma_connect(id, &cp) == 0, "56 bytes of private data refused: %s", strerror(errno));
  e = next_event(ch, kWaitMs);
  CHECK(e && (e->event == RDMA_CM_EVENT_REJECTED || e->event == RDMA_CM_EVENT_UNREACHABLE),
        "connect to no listener: %s", e ? rdma_event_str(e->event) : "no event");
  if (e) rdma_ack_cm_event(e);
  CHECK(rdma_destroy_id(id) == 0, "destroy");

  /* 6. A peer killed mid-handshake: the listener's request arrives, the requester dies before
   * the REP; accept answers, and the passive side gets UNREACHABLE (ETIMEDOUT) - or its accept
   * fails - never a hang. And the other way: a listener killed after the REQ. */
  struct rdma_cm_id* listener = NULL;
  struct sockaddr_storage ls = ss;
  CHECK(rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP) == 0, "create_id");
  CHECK(rdma_bind_addr(listener, (struct sockaddr*)&ls) == 0, "bind: %s", strerror(errno));
  CHECK(rdma_listen(listener, 8) == 0, "listen");
  unsigned short port = ntohs(rdma_get_src_port(listener));
  pid_t child = fork();
  if (child == 0) {
    struct rdma_event_channel* c2 = rdma_create_event_channel();
    struct rdma_cm_id* a = NULL;
    struct sockaddr_storage dst;
    parse(addr, port, &dst);
    rdma_create_id(c2, &a, NULL, RDMA_PS_TCP);
    rdma_resolve_addr(a, NULL, (struct sockaddr*)&dst, 1000);
    struct rdma_cm_event* ce = next_event(c2, kWaitMs);
    if (ce) rdma_ack_cm_event(ce);
    rdma_resolve_route(a, 1000);
    ce = next_event(c2, kWaitMs);
    if (ce) rdma_ack_cm_event(ce);
    struct rdma_conn_param p;
    memset(&p, 0, sizeof p);
    p.qp_num = 0x456;
    rdma_connect(a, &p);
    _exit(0); /* dies with the REQ sent */
  }
  int status = 0;
  waitpid(child, &status, 0);
  e = next_event(ch, kWaitMs);
  CHECK(e && e->event == RDMA_CM_EVENT_CONNECT_REQUEST, "no CONNECT_REQUEST: %s",
        e ? rdma_event_str(e->event) : "none");
  if (e && e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
    struct rdma_cm_id* passive = e->id;
    CHECK(e->param.conn.qp_num == 0x456, "the REQ's QP number %u", e->param.conn.qp_num);
    rdma_ack_cm_event(e);
    memset(&cp, 0, sizeof cp);
    cp.qp_num = 0x789;
    int rc = rdma_accept(passive, &cp);
    if (rc == 0) {
      e = next_event(ch, kWaitMs);
      CHECK(e && e->event == RDMA_CM_EVENT_UNREACHABLE && e->status == -ETIMEDOUT,
            "accepting a dead requester: %s %d", e ? rdma_event_str(e->event) : "no event",
            e ? e->status : 0);
      if (e) rdma_ack_cm_event(e);
    }
    CHECK(rdma_destroy_id(passive) == 0, "destroy passive");
  } else if (e) {
    rdma_ack_cm_event(e);
  }
  CHECK(rdma_destroy_id(listener) == 0, "destroy listener");

  /* 7. Unmodelled calls fail with EOPNOTSUPP. */
  CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0, "create_id");
  CHECK(rdma_join_multicast(id, (struct sockaddr*)&ss, NULL) == -1 && errno == EOPNOTSUPP, "join_multicast");
  CHECK(rdma_destroy_id(id) == 0, "destroy");

  /* 8. The fd is readable exactly while events wait, as the ucma fd's poll: a program that
   * polls it before each rdma_get_cm_event (UCX, rping since rdma-core 59) must not be told of
   * an event that was already taken, then block in rdma_get_cm_event. */
  struct rdma_cm_id* two[2] = {NULL, NULL};
  for (int i = 0; i < 2; ++i) {
    CHECK(rdma_create_id(ch, &two[i], NULL, RDMA_PS_UDP) == 0, "create_id");
    CHECK(rdma_resolve_addr(two[i], NULL, (struct sockaddr*)&ss, 1000) == 0, "resolve_addr");
  }
  struct pollfd pf = {ch->fd, POLLIN, 0};
  for (int i = 0; i < 2; ++i) {
    CHECK(poll(&pf, 1, kWaitMs) == 1, "event %d queued, the fd is not readable", i + 1);
    e = NULL;
    CHECK(rdma_get_cm_event(ch, &e) == 0 && e, "get_cm_event %d: %s", i + 1, strerror(errno));
    if (e) rdma_ack_cm_event(e);
  }
  pf.revents = 0;
  CHECK(poll(&pf, 1, 0) == 0, "both events taken, the fd still says readable");
  for (int i = 0; i < 2; ++i) CHECK(rdma_destroy_id(two[i]) == 0, "destroy");

  /* 9. A destroyed channel: its fd is closed, so librdmacm's read of it fails with EBADF at
   * once (rping of rdma-core 44 races its teardown into this). Never a wait, an EAGAIN, or a
   * read of freed memory. */
  struct rdma_event_channel* gone = rdma_create_event_channel();
  CHECK(gone != NULL, "create_event_channel");
  if (gone) {
    rdma_destroy_event_channel(gone);
    e = NULL;
    t0 = now();
    CHECK(rdma_get_cm_event(gone, &e) == -1 && errno == EBADF, "get_cm_event of a destroyed channel: %s",
          strerror(errno));
    CHECK(now() - t0 < kGuardS, "get_cm_event of a destroyed channel waited");
    CHECK(rdma_create_id(gone, &id, NULL, RDMA_PS_TCP) == -1 && errno == EBADF,
          "create_id on a destroyed channel: %s", strerror(errno));
  }
  rdma_destroy_event_channel(ch);
  if (failures == 0) printf("abuse: all cases answered (3000 ids, %d events)\n", events);
  return failures ? 1 : 0;
}

/* The program closes its event channel's fd and a file it opens next gets that number: events
 * queued on the channel afterwards must never write into the file (librdmacm only reads the
 * ucma fd). */
static int fd_reuse(const char* addr) {
  struct sockaddr_storage ss;
  if (parse(addr, 0, &ss) != 0) return 1;
  struct rdma_event_channel* ch = rdma_create_event_channel();
  CHECK(ch != NULL, "create_event_channel: %s", strerror(errno));
  if (!ch) return 1;
  const int number = ch->fd;
  close(ch->fd);
  char path[4096];
  const char* tmp = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/cm_probe_fd_reuse.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  const int file = mkstemp(path);
  CHECK(file == number, "the file got fd %d, not the channel's %d (the case needs the same number)", file,
        number);
  static const char kText[] = "the program's own data\n";
  CHECK(write(file, kText, sizeof kText - 1) == (ssize_t)(sizeof kText - 1), "write the file");
  struct rdma_cm_id* id = NULL;
  CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0, "create_id: %s", strerror(errno));
  for (int round = 0; id && round < 3; ++round) {
    /* Each resolution queues an event (a wake-up of the channel) before it returns. */
    struct rdma_cm_id* other = NULL;
    CHECK(rdma_create_id(ch, &other, NULL, RDMA_PS_UDP) == 0, "create_id");
    CHECK(other && rdma_resolve_addr(other, NULL, (struct sockaddr*)&ss, 1000) == 0, "resolve_addr: %s",
          strerror(errno));
    struct rdma_cm_event* e = NULL;
    CHECK(rdma_get_cm_event(ch, &e) == 0 && e && e->event == RDMA_CM_EVENT_ADDR_RESOLVED,
          "no ADDR_RESOLVED: %s", strerror(errno));
    if (e) rdma_ack_cm_event(e);
    if (other) CHECK(rdma_destroy_id(other) == 0, "destroy_id");
  }
  if (id) CHECK(rdma_destroy_id(id) == 0, "destroy_id");
  struct stat st;
  CHECK(fstat(file, &st) == 0 && st.st_size == (off_t)(sizeof kText - 1),
        "the file that reused the channel's fd has %lld bytes, not the %zu the program wrote",
        (long long)st.st_size, sizeof kText - 1);
  char back[64] = "";
  CHECK(pread(file, back, sizeof back, 0) == (ssize_t)(sizeof kText - 1) &&
            memcmp(back, kText, sizeof kText - 1) == 0,
        "the file's content changed");
  close(file);
  unlink(path);
  if (failures == 0) printf("fd_reuse: the file that took the channel's fd number is unchanged\n");
  return failures ? 1 : 0;
}

/* Takes the next event of `ch` and checks its type; NULL (and a failure) otherwise. */
static struct rdma_cm_event* expect_event(struct rdma_event_channel* ch, enum rdma_cm_event_type want,
                                          const char* who) {
  struct rdma_cm_event* e = next_event(ch, kWaitMs);
  CHECK(e && e->event == want && e->status == 0, "%s: wanted %s, got %s (status %d)", who,
        rdma_event_str(want), e ? rdma_event_str(e->event) : "no event", e ? e->status : 0);
  if (e && e->event != want) {
    rdma_ack_cm_event(e);
    return NULL;
  }
  return e;
}

/* A child fork()ed from a process that already used the library (its progress thread runs)
 * and never execs: it sets up connections of its own with its parent, both ways, and each side
 * gets its events. */
static int fork_child(const char* addr) {
  struct sockaddr_storage ss;
  if (parse(addr, 0, &ss) != 0) return 1;
  struct rdma_event_channel* ch = rdma_create_event_channel();
  struct rdma_cm_id* listener = NULL;
  CHECK(ch && rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP) == 0, "create_id: %s", strerror(errno));
  if (!listener) return 1;
  CHECK(rdma_bind_addr(listener, (struct sockaddr*)&ss) == 0 && rdma_listen(listener, 8) == 0,
        "parent listen: %s", strerror(errno));
  const unsigned short parent_port = ntohs(rdma_get_src_port(listener));
  int up[2], down[2]; /* child -> parent: its listener's port; parent -> child: "done" (EOF) */
  if (pipe(up) != 0 || pipe(down) != 0) return 1;
  fflush(NULL);
  const pid_t child = fork();
  if (child == 0) {
    /* The child: a listener of its own, which the parent connects to; then a connection of its
     * own to the parent's listener. Its exit status says whether every event came. */
    close(up[0]);
    close(down[1]);
    failures = 0;
    alarm(120); /* a hang guard: a child whose events never come is killed, and the parent says so */
    struct rdma_event_channel* c2 = rdma_create_event_channel();
    struct rdma_cm_id* l2 = NULL;
    CHECK(c2 && rdma_create_id(c2, &l2, NULL, RDMA_PS_TCP) == 0, "child create_id: %s", strerror(errno));
    if (!l2) _exit(1);
    CHECK(rdma_bind_addr(l2, (struct sockaddr*)&ss) == 0 && rdma_listen(l2, 8) == 0, "child listen: %s",
          strerror(errno));
    const unsigned short port = ntohs(rdma_get_src_port(l2));
    CHECK(write(up[1], &port, sizeof port) == (ssize_t)sizeof port, "tell the parent");
    struct rdma_cm_event* e = expect_event(c2, RDMA_CM_EVENT_CONNECT_REQUEST, "child (passive)");
    if (e) {
      struct rdma_cm_id* passive = e->id;
      rdma_ack_cm_event(e);
      struct rdma_conn_param p;
      memset(&p, 0, sizeof p);
      p.qp_num = 0x321;
      CHECK(rdma_accept(passive, &p) == 0, "child accept: %s", strerror(errno));
      if ((e = expect_event(c2, RDMA_CM_EVENT_ESTABLISHED, "child (passive)")) != NULL) rdma_ack_cm_event(e);
    }
    /* Active: without a QP the answer is CONNECT_RESPONSE, and rdma_establish's RTU establishes
     * the parent's side. */
    struct rdma_cm_id* a = NULL;
    struct sockaddr_storage dst;
    parse(addr, parent_port, &dst);
    CHECK(rdma_create_id(c2, &a, NULL, RDMA_PS_TCP) == 0, "child create_id");
    CHECK(rdma_resolve_addr(a, NULL, (struct sockaddr*)&dst, 1000) == 0, "child resolve_addr: %s",
          strerror(errno));
    if ((e = expect_event(c2, RDMA_CM_EVENT_ADDR_RESOLVED, "child (active)")) != NULL) rdma_ack_cm_event(e);
    CHECK(rdma_resolve_route(a, 1000) == 0, "child resolve_route");
    if ((e = expect_event(c2, RDMA_CM_EVENT_ROUTE_RESOLVED, "child (active)")) != NULL) rdma_ack_cm_event(e);
    struct rdma_conn_param p;
    memset(&p, 0, sizeof p);
    p.qp_num = 0x654;
    CHECK(rdma_connect(a, &p) == 0, "child connect: %s", strerror(errno));
    if ((e = expect_event(c2, RDMA_CM_EVENT_CONNECT_RESPONSE, "child (active)")) != NULL) {
      rdma_ack_cm_event(e);
      CHECK(rdma_establish(a) == 0, "child establish: %s", strerror(errno));
    }
    /* Stay until the parent has its events: this process's end would disconnect both. */
    char done;
    while (read(down[0], &done, 1) > 0) {
    }
    _exit(failures ? 1 : 0);
  }
  CHECK(child > 0, "fork: %s", strerror(errno));
  if (child <= 0) return 1;
  close(up[1]);
  close(down[0]);
  /* The parent: connects to the child's listener (the child's ESTABLISHED needs this RTU). */
  unsigned short port = 0;
  struct pollfd pf = {up[0], POLLIN, 0};
  CHECK(poll(&pf, 1, kWaitMs) == 1 && read(up[0], &port, sizeof port) == (ssize_t)sizeof port,
        "the child named no listener");
  struct rdma_cm_event* e = NULL;
  if (port) {
    struct rdma_cm_id* a = NULL;
    struct sockaddr_storage dst;
    parse(addr, port, &dst);
    CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0, "create_id");
    CHECK(rdma_resolve_addr(a, NULL, (struct sockaddr*)&dst, 1000) == 0, "resolve_addr: %s", strerror(errno));
    if ((e = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, "parent (active)")) != NULL) rdma_ack_cm_event(e);
    CHECK(rdma_resolve_route(a, 1000) == 0, "resolve_route");
    if ((e = expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, "parent (active)")) != NULL) rdma_ack_cm_event(e);
    struct rdma_conn_param p;
    memset(&p, 0, sizeof p);
    p.qp_num = 0x987;
    CHECK(rdma_connect(a, &p) == 0, "connect: %s", strerror(errno));
    if ((e = expect_event(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, "parent (active)")) != NULL) {
      rdma_ack_cm_event(e);
      CHECK(rdma_establish(a) == 0, "establish: %s", strerror(errno));
    }
    /* Passive: the child's connection to this listener. */
    if ((e = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, "parent (passive)")) != NULL) {
      struct rdma_cm_id* passive = e->id;
      rdma_ack_cm_event(e);
      memset(&p, 0, sizeof p);
      p.qp_num = 0xabc;
      CHECK(rdma_accept(passive, &p) == 0, "accept: %s", strerror(errno));
      if ((e = expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, "parent (passive)")) != NULL) rdma_ack_cm_event(e);
    }
  }
  close(down[1]);
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "the fork()ed child did not get its events (%s %d)", WIFSIGNALED(status) ? "signal" : "exit",
        WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
  if (failures == 0) printf("fork: the child's connections were established, both ways\n");
  return failures ? 1 : 0;
}

/* Listens on ADDR:PORT, says so on stdout, and waits (until killed). */
static int listen_forever(const char* addr, const char* port) {
  struct sockaddr_storage ss;
  if (parse(addr, atoi(port), &ss) != 0) return 1;
  struct rdma_event_channel* ch = rdma_create_event_channel();
  struct rdma_cm_id* id = NULL;
  if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0 ||
      rdma_bind_addr(id, (struct sockaddr*)&ss) != 0 || rdma_listen(id, 8) != 0) {
    printf("errno %d %s\n", errno, strerror(errno));
    return 2;
  }
  printf("listening %s:%s\n", addr, port);
  fflush(stdout);
  for (;;) pause();
}

/* What the kernel answers where a fake once refused: listen on an id never bound (the kernel
 * binds it to 0.0.0.0 and an ephemeral port), a resolution to the wildcard address (this host,
 * through the loopback binding) that then connects to that listener, a resolution to a routed
 * multicast group (GROUP: the case routes it), and rdma_destroy_id leaving the program's QP. */
static int kernel_answers(const char* addr, const char* group) {
  struct sockaddr_storage ss, any, mc;
  if (parse(addr, 0, &ss) != 0 || parse("0.0.0.0", 0, &any) != 0 || parse(group, 0, &mc) != 0) return 1;
  struct rdma_event_channel* ch = rdma_create_event_channel();
  if (!ch) return 1;
  struct rdma_cm_event* e = NULL;

  /* 1. rdma_listen on a fresh id. */
  struct rdma_cm_id* listener = NULL;
  CHECK(rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP) == 0, "create_id");
  CHECK(rdma_listen(listener, 8) == 0, "listen on an unbound id: %s (the kernel binds it to 0.0.0.0)",
        strerror(errno));
  const struct sockaddr_in* src = (const struct sockaddr_in*)rdma_get_local_addr(listener);
  CHECK(src->sin_family == AF_INET && src->sin_addr.s_addr == htonl(INADDR_ANY) && src->sin_port != 0,
        "the listener is not bound to 0.0.0.0 and a port");

  /* 2. A resolution to 0.0.0.0 at that port: ADDR_RESOLVED, and the connection reaches it. */
  ((struct sockaddr_in*)&any)->sin_port = src->sin_port;
  struct rdma_cm_id* a = NULL;
  CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0, "create_id");
  CHECK(rdma_resolve_addr(a, NULL, (struct sockaddr*)&any, 1000) == 0, "resolve_addr 0.0.0.0: %s",
        strerror(errno));
  if ((e = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, "resolve 0.0.0.0")) != NULL) rdma_ack_cm_event(e);
  CHECK(rdma_resolve_route(a, 1000) == 0, "resolve_route: %s", strerror(errno));
  if ((e = expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, "resolve 0.0.0.0")) != NULL) rdma_ack_cm_event(e);
  struct rdma_conn_param p;
  memset(&p, 0, sizeof p);
  p.qp_num = 0x111;
  CHECK(rdma_connect(a, &p) == 0, "connect to 0.0.0.0: %s", strerror(errno));
  if ((e = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, "listener of 0.0.0.0")) != NULL) {
    CHECK(e->listen_id == listener, "the request is not the unbound listener's");
    rdma_ack_cm_event(e);
  }
  CHECK(rdma_destroy_id(a) == 0, "destroy_id");

  /* 3. A multicast group with a route: resolved as the kernel resolves it. */
  CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_UDP) == 0, "create_id");
  CHECK(rdma_resolve_addr(a, NULL, (struct sockaddr*)&mc, 1000) == 0, "resolve_addr %s: %s", group,
        strerror(errno));
  if ((e = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, "resolve a routed multicast group")) != NULL)
    rdma_ack_cm_event(e);
  CHECK(rdma_destroy_id(a) == 0, "destroy_id");

  /* 4. rdma_destroy_id leaves the QP to the program: it answers, and the program destroys it
   * (and the CQs librdmacm made for it) itself. */
  CHECK(rdma_create_id(ch, &a, NULL, RDMA_PS_TCP) == 0, "create_id");
  CHECK(rdma_resolve_addr(a, NULL, (struct sockaddr*)&ss, 1000) == 0, "resolve_addr: %s", strerror(errno));
  if ((e = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, "resolve")) != NULL) rdma_ack_cm_event(e);
  struct ibv_qp_init_attr init;
  memset(&init, 0, sizeof init);
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  CHECK(rdma_create_qp(a, NULL, &init) == 0, "create_qp: %s", strerror(errno));
  struct ibv_qp* qp = a->qp;
  struct ibv_cq* cqs[2] = {a->send_cq, a->recv_cq};
  struct ibv_comp_channel* chans[2] = {a->send_cq_channel, a->recv_cq_channel};
  CHECK(rdma_destroy_id(a) == 0, "destroy_id with a QP: %s", strerror(errno));
  if (qp) {
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr got;
    CHECK(ibv_query_qp(qp, &attr, IBV_QP_STATE, &got) == 0 && attr.qp_state == IBV_QPS_INIT,
          "the QP did not outlive its id (librdmacm's rdma_destroy_id destroys no QP)");
    CHECK(ibv_destroy_qp(qp) == 0, "ibv_destroy_qp after rdma_destroy_id");
    for (int i = 0; i < 2; ++i) {
      if (cqs[i]) CHECK(ibv_destroy_cq(cqs[i]) == 0, "ibv_destroy_cq");
      if (chans[i]) CHECK(ibv_destroy_comp_channel(chans[i]) == 0, "ibv_destroy_comp_channel");
    }
  }
  CHECK(rdma_destroy_id(listener) == 0, "destroy listener");
  rdma_destroy_event_channel(ch);
  if (failures == 0) printf("kernel_answers: listen unbound, 0.0.0.0, %s, destroy_id keeps the QP\n", group);
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "bind") == 0) return do_bind(argv[2]);
  if (argc == 3 && strcmp(argv[1], "abuse") == 0) return abuse(argv[2]);
  if (argc == 3 && strcmp(argv[1], "fd_reuse") == 0) return fd_reuse(argv[2]);
  if (argc == 3 && strcmp(argv[1], "fork") == 0) return fork_child(argv[2]);
  if (argc == 4 && strcmp(argv[1], "listen") == 0) return listen_forever(argv[2], argv[3]);
  if (argc == 4 && strcmp(argv[1], "kernel_answers") == 0) return kernel_answers(argv[2], argv[3]);
  fprintf(stderr,
          "usage: cm_probe bind ADDR | abuse ADDR | fd_reuse ADDR | fork ADDR | listen ADDR PORT |"
          " kernel_answers ADDR GROUP\n");
  return 1;
}
