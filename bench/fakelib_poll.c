/* bench_fakelib_poll: what polling costs over the fake libibverbs.so.1.
 *
 *   GIDPOLICY_FAKE_TABLES=<table> LD_LIBRARY_PATH=<fake dir> bench_fakelib_poll [device] [gid_index]
 *
 * Prints three figures:
 *  1. empty ibv_poll_cq: the median and 99th percentile of 100,000 empty polls, timed one by
 *     one, on a CQ that has been idle for 300 ms (hardware: well under a microsecond; a poll
 *     that backs off into a wait after a short spin takes milliseconds);
 *  2. a server polling 100 CQs round robin (one RC QP each, a forked client with 100 QPs sends
 *     on them in turn and waits for each echo): the median time per message, the client's
 *     round trip (goal: under 1 ms);
 *  3. the same round trip with one QP, server and client pinned to one CPU, alone and beside a
 *     third process spinning on an empty CQ on that CPU: what an idle spinner costs its peers.
 * The figures are the fake's on this machine (note the load), not any hardware's.
 */
#define _GNU_SOURCE
#include "rc_side.h"

#include <sched.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define QPS 100
#define MESSAGES 400
#define MSG_BYTES 64

static int cmp_double(const void* x, const void* y) {
  const double a = *(const double*)x, b = *(const double*)y;
  return a < b ? -1 : a > b;
}

static int full_io(int fd, void* p, size_t n, int out) {
  char* c = p;
  while (n > 0) {
    const ssize_t r = out ? write(fd, c, n) : read(fd, c, n);
    if (r <= 0) return 1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

/* `n` RC QPs on one context, each with its own CQ, receives posted. */
struct many {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_mr* mr;
  unsigned char* buf;
  struct ibv_cq* cq[QPS];
  struct rc_side side[QPS]; /* ctx, pd, cq, qp, mr, buf shared: rc_connect/rc_post work on it */
  int n;
};

static int many_open(struct many* m, struct ibv_device* dev, int n) {
  int i;
  struct ibv_qp_init_attr init;
  memset(m, 0, sizeof *m);
  m->n = n;
  m->buf = calloc((size_t)n, 2 * MSG_BYTES);
  if (!m->buf || !(m->ctx = ibv_open_device(dev)) || !(m->pd = ibv_alloc_pd(m->ctx))) return 1;
  m->mr = ibv_reg_mr(m->pd, m->buf, (size_t)n * 2 * MSG_BYTES, IBV_ACCESS_LOCAL_WRITE);
  if (!m->mr) return 1;
  for (i = 0; i < n; ++i) {
    struct rc_side* s = &m->side[i];
    if (!(m->cq[i] = ibv_create_cq(m->ctx, 16, NULL, NULL, 0))) return 1;
    memset(&init, 0, sizeof init);
    init.qp_type = IBV_QPT_RC;
    init.send_cq = init.recv_cq = m->cq[i];
    init.cap.max_send_wr = init.cap.max_recv_wr = 4;
    init.cap.max_send_sge = init.cap.max_recv_sge = 1;
    s->ctx = m->ctx;
    s->pd = m->pd;
    s->cq = m->cq[i];
    s->mr = m->mr;
    s->buf = m->buf + (size_t)i * 2 * MSG_BYTES;
    s->size = 2 * MSG_BYTES;
    if (!(s->qp = ibv_create_qp(m->pd, &init))) return 1;
  }
  return 0;
}

static int many_connect(struct many* m, const uint32_t* dest, int index) {
  const struct rc_attrs at = {14, 7, 7, 12};
  int i;
  for (i = 0; i < m->n; ++i)
    if (rc_connect(&m->side[i], dest[i], index, &at) || rc_post_recv(&m->side[i], 1, MSG_BYTES, MSG_BYTES) ||
        rc_post_recv(&m->side[i], 1, MSG_BYTES, MSG_BYTES))
      return 1;
  return 0;
}

/* The server: polls its n CQs in turn and echoes every message on the QP it came in on. */
static int serve(struct many* m, int messages) {
  int done = 0, i = 0;
  while (done < messages) {
    struct ibv_wc wc;
    const int got = ibv_poll_cq(m->cq[i], 1, &wc);
    if (got < 0 || (got == 1 && wc.status != IBV_WC_SUCCESS)) return 1;
    if (got == 1 && wc.opcode == IBV_WC_RECV) {
      if (rc_post_recv(&m->side[i], 1, MSG_BYTES, MSG_BYTES) ||
          rc_post(&m->side[i], IBV_WR_SEND, 2, 0, MSG_BYTES, 0, 0))
        return 1;
      ++done;
    }
    i = (i + 1) % m->n;
  }
  return 0;
}

/* The client: a message on QP k (in turn), then its echo; returns the median round trip. */
static double client(struct many* m, int messages) {
  static double rtt[MESSAGES];
  int k;
  for (k = 0; k < messages; ++k) {
    const int q = (k * 37) % m->n;
    struct ibv_wc wc;
    double t0 = rc_now();
    int echoed = 0;
    if (rc_post(&m->side[q], IBV_WR_SEND, 1, 0, MSG_BYTES, 0, 0)) return -1;
    while (!echoed) {
      const int got = ibv_poll_cq(m->cq[q], 1, &wc);
      if (got < 0 || (got == 1 && wc.status != IBV_WC_SUCCESS)) return -1;
      if (got == 1 && wc.opcode == IBV_WC_RECV) {
        echoed = 1;
        if (rc_post_recv(&m->side[q], 1, MSG_BYTES, MSG_BYTES)) return -1;
      }
      if (rc_now() - t0 > 10.0) return -1;
    }
    rtt[k] = rc_now() - t0;
  }
  qsort(rtt, (size_t)messages, sizeof rtt[0], cmp_double);
  return rtt[messages / 2];
}

/* A forked server with n QPs against a client in this process: the median round trip. */
static double round_trip(struct ibv_device* dev, int index, int n, int messages) {
  int up[2], down[2], status;
  uint32_t theirs[QPS], mine[QPS];
  struct many m;
  pid_t pid;
  double median;
  int i;
  if (pipe(up) || pipe(down)) return -1;
  pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    struct many s;
    if (many_open(&s, dev, n)) _exit(2);
    for (i = 0; i < n; ++i) mine[i] = s.side[i].qp->qp_num;
    if (full_io(up[1], mine, sizeof mine[0] * (size_t)n, 1) ||
        full_io(down[0], theirs, sizeof theirs[0] * (size_t)n, 0) || many_connect(&s, theirs, index) ||
        full_io(up[1], "r", 1, 1))
      _exit(2);
    _exit(serve(&s, messages) ? 3 : 0);
  }
  if (many_open(&m, dev, n)) return -1;
  for (i = 0; i < n; ++i) mine[i] = m.side[i].qp->qp_num;
  if (full_io(up[0], theirs, sizeof theirs[0] * (size_t)n, 0) ||
      full_io(down[1], mine, sizeof mine[0] * (size_t)n, 1) || many_connect(&m, theirs, index) ||
      full_io(up[0], (char[1]){0}, 1, 0))
    return -1;
  median = client(&m, messages);
  waitpid(pid, &status, 0);
  close(up[0]);
  close(up[1]);
  close(down[0]);
  close(down[1]);
  return median;
}

static double empty_poll(struct ibv_device* dev, double* p99) {
  enum { POLLS = 100000 };
  static double lat[POLLS];
  struct rc_side s;
  struct ibv_wc wc;
  double t0 = rc_now();
  int i;
  if (rc_open(&s, dev, 4096, 4)) return -1;
  while (rc_now() - t0 < 0.3) ibv_poll_cq(s.cq, 1, &wc);
  for (i = 0; i < POLLS; ++i) {
    const double t = rc_now();
    ibv_poll_cq(s.cq, 1, &wc);
    lat[i] = rc_now() - t;
  }
  rc_close(&s);
  qsort(lat, POLLS, sizeof lat[0], cmp_double);
  *p99 = lat[POLLS * 99 / 100];
  return lat[POLLS / 2];
}

int main(int argc, char** argv) {
  const char* name = argc > 1 ? argv[1] : "ds4_test0";
  const int index = argc > 2 ? atoi(argv[2]) : 3;
  struct ibv_device* dev = rc_find_device(name);
  double p99 = 0, median, alone, beside;
  cpu_set_t one, all;
  pid_t spinner;
  int status;
  if (!dev) return 2;
  median = empty_poll(dev, &p99);
  printf("empty ibv_poll_cq after 300 ms idle: median %.2f us, 99th percentile %.2f us\n", median * 1e6,
         p99 * 1e6);
  median = round_trip(dev, index, QPS, MESSAGES);
  printf("server polling %d CQs round robin: %.3f ms per message (median round trip of %d)\n", QPS,
         median * 1e3, MESSAGES);

  /* 3. On one CPU: alone, then beside a spinner. */
  if (sched_getaffinity(0, sizeof all, &all)) return 2;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  if (sched_setaffinity(0, sizeof one, &one)) return 2;
  alone = round_trip(dev, index, 1, MESSAGES);
  spinner = fork();
  if (spinner == 0) {
    struct rc_side s;
    struct ibv_wc wc;
    if (rc_open(&s, dev, 4096, 4)) _exit(2);
    for (;;) ibv_poll_cq(s.cq, 1, &wc);
  }
  rc_sleep_ms(300);
  beside = round_trip(dev, index, 1, MESSAGES);
  kill(spinner, SIGKILL);
  waitpid(spinner, &status, 0);
  sched_setaffinity(0, sizeof all, &all);
  printf(
      "one QP, all on one CPU: %.3f ms per round trip alone, %.3f ms beside a process spinning on an empty "
      "CQ\n",
      alone * 1e3, beside * 1e3);
  rc_free_devices();
  return median < 0 || alone < 0 || beside < 0 ? 1 : 0;
}
