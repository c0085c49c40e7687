/* fakelib_idle_poll: an empty ibv_poll_cq answers however long the CQ has been idle, and
 * nothing that saves CPU while a program waits may keep a completion queued on another CQ from
 * being found. Two RC queue pairs in one process, connected; B's receive is posted.
 *
 *   fakelib_idle_poll <device> <index>
 *
 * 1. B's CQ is polled for 300 ms with nothing to complete (no completion may come out of
 *    nothing); then 2000 more empty polls, each timed: the median and 99th percentile are
 *    printed (hardware: under a microsecond; a poll that backs off into a wait takes ms).
 * 2. 100 CQs polled round robin, B's among them (the 58th): 20 sends from A, each found by the
 *    loop; the median and worst time from post to found are printed (a loop that waits on each
 *    idle CQ takes 100+ ms).
 * 3. fork() while a thread spins on an idle CQ of this pair: the child, on a pair of its own,
 *    still completes a send.
 * The times are figures, not verdicts: on a machine shared with other work a thread can be kept
 * from its core for milliseconds at any poll, so no bound on them tells a slow fake from a busy
 * machine. bench/fakelib_poll.c measures them (100,000 empty polls, a 100-CQ server, what an
 * idle spinner costs its peers); the README's table holds its results. What this test judges
 * is that every poll answers and every message is found (hang guards of 30-60 s).
 * Exit 0 when all hold, 1 otherwise, 2 on a setup failure.
 */
#include <infiniband/verbs.h>

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG "idle poll"
#define BUF 64

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_qp(struct ibv_qp* qp, uint32_t dest, const union ibv_gid* dgid, uint8_t index) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) return 1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.grh.dgid = *dgid;
  a.ah_attr.grh.sgid_index = index;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return 1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_MAX_QP_RD_ATOMIC);
}

/* One signaled send of MSG from `buf` (registered as `mr`) on `qp`. */
static int send_msg(struct ibv_qp* qp, struct ibv_mr* mr, char* buf) {
  struct ibv_sge sge;
  struct ibv_send_wr wr, *bad;
  sge.addr = (uintptr_t)buf;
  sge.length = sizeof MSG;
  sge.lkey = mr->lkey;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  return ibv_post_send(qp, &wr, &bad);
}

/* Two connected RC queue pairs on one context, B's receive posted. */
struct pair {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq *cq_a, *cq_b;
  struct ibv_qp *qp_a, *qp_b;
  struct ibv_mr *mr_a, *mr_b;
  char buf_a[BUF], buf_b[BUF];
};

static int pair_open(struct pair* p, struct ibv_device* dev, int index) {
  struct ibv_qp_init_attr init;
  union ibv_gid gid;
  memset(p, 0, sizeof *p);
  memcpy(p->buf_a, MSG, sizeof MSG);
  if (!(p->ctx = ibv_open_device(dev))) return 2;
  p->pd = ibv_alloc_pd(p->ctx);
  p->cq_a = ibv_create_cq(p->ctx, 4, NULL, NULL, 0);
  p->cq_b = ibv_create_cq(p->ctx, 4, NULL, NULL, 0);
  if (!p->pd || !p->cq_a || !p->cq_b) return 2;
  p->mr_a = ibv_reg_mr(p->pd, p->buf_a, BUF, IBV_ACCESS_LOCAL_WRITE);
  p->mr_b = ibv_reg_mr(p->pd, p->buf_b, BUF, IBV_ACCESS_LOCAL_WRITE);
  if (!p->mr_a || !p->mr_b) return 2;
  memset(&init, 0, sizeof init);
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 2;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  init.send_cq = init.recv_cq = p->cq_a;
  p->qp_a = ibv_create_qp(p->pd, &init);
  init.send_cq = init.recv_cq = p->cq_b;
  p->qp_b = ibv_create_qp(p->pd, &init);
  if (!p->qp_a || !p->qp_b || ibv_query_gid(p->ctx, 1, index, &gid)) return 2;
  if (connect_qp(p->qp_a, p->qp_b->qp_num, &gid, (uint8_t)index) ||
      connect_qp(p->qp_b, p->qp_a->qp_num, &gid, (uint8_t)index)) {
    fprintf(stderr, "cannot connect the queue pairs\n");
    return 2;
  }
  {
    struct ibv_sge sge = {(uintptr_t)p->buf_b, BUF, p->mr_b->lkey};
    struct ibv_recv_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = 2;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (ibv_post_recv(p->qp_b, &wr, &bad)) return 2;
  }
  return 0;
}

static void pair_close(struct pair* p) {
  ibv_destroy_qp(p->qp_a);
  ibv_destroy_qp(p->qp_b);
  ibv_dereg_mr(p->mr_a);
  ibv_dereg_mr(p->mr_b);
  ibv_destroy_cq(p->cq_a);
  ibv_destroy_cq(p->cq_b);
  ibv_dealloc_pd(p->pd);
  ibv_close_device(p->ctx);
}

/* Take A's send completion (a 30 s hang guard): 0 when it succeeded. */
static int rc_poll_a(struct pair* p) {
  struct ibv_wc wc;
  const double t0 = clock_s(CLOCK_MONOTONIC);
  int n = 0;
  while (n == 0 && clock_s(CLOCK_MONOTONIC) - t0 < 30.0) n = ibv_poll_cq(p->cq_a, 1, &wc);
  return n == 1 && wc.status == IBV_WC_SUCCESS ? 0 : 1;
}

/* Polls B's CQ of the pair until `stop` is set: a thread inside the library when fork() comes. */
struct idle_poller {
  struct pair* p;
  volatile int stop;
};

static void* poll_idle(void* arg) {
  struct idle_poller* ip = (struct idle_poller*)arg;
  struct ibv_wc wc;
  while (!ip->stop) ibv_poll_cq(ip->p->cq_b, 1, &wc);
  return NULL;
}

/* In the child of a fork: a pair of its own, one send, received (30 s, then alarm: hang guards;
 * a hang is a failure, killed by SIGALRM). */
static int child_traffic(struct ibv_device* dev, int index) {
  struct pair q;
  struct ibv_wc wc;
  double t0;
  int n = 0;
  alarm(60);
  if (pair_open(&q, dev, index) || send_msg(q.qp_a, q.mr_a, q.buf_a)) return 2;
  t0 = clock_s(CLOCK_MONOTONIC);
  while (n == 0 && clock_s(CLOCK_MONOTONIC) - t0 < 30.0) n = ibv_poll_cq(q.cq_b, 1, &wc);
  if (n != 1 || wc.status != IBV_WC_SUCCESS || memcmp(q.buf_b, MSG, sizeof MSG) != 0) return 1;
  pair_close(&q);
  return 0;
}

static int cmp_double(const void* x, const void* y) {
  const double a = *(const double*)x, b = *(const double*)y;
  return a < b ? -1 : a > b;
}

#define TIMED_POLLS 2000
#define RING 100
#define RING_AT 57
#define RING_MESSAGES 20

int main(int argc, char** argv) {
  struct ibv_device** list;
  struct ibv_device* dev = NULL;
  struct pair pr;
  struct ibv_wc wc;
  struct idle_poller ip;
  struct ibv_cq* ring[RING];
  static double lat[TIMED_POLLS];
  double per_msg[RING_MESSAGES];
  pthread_t thread;
  pid_t child;
  double wall0, cpu0, wall, cpu;
  int n, i, m, index, status = 0, child_status = 0;

  if (argc != 3) {
    fprintf(stderr, "usage: %s <device> <index>\n", argv[0]);
    return 2;
  }
  index = atoi(argv[2]);
  list = ibv_get_device_list(&n);
  for (i = 0; list && i < n; ++i)
    if (strcmp(ibv_get_device_name(list[i]), argv[1]) == 0) dev = list[i];
  if (!dev) {
    fprintf(stderr, "no device %s\n", argv[1]);
    return 2;
  }
  if (pair_open(&pr, dev, index)) return 2;

  /* 1. Idle for 300 ms, then each empty poll timed. */
  wall0 = clock_s(CLOCK_MONOTONIC);
  cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  while (clock_s(CLOCK_MONOTONIC) - wall0 < 0.3)
    if (ibv_poll_cq(pr.cq_b, 1, &wc) != 0) {
      fprintf(stderr, "a completion out of nothing\n");
      return 1;
    }
  wall = clock_s(CLOCK_MONOTONIC) - wall0;
  cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  printf("idle polling: %.0f ms of CPU in %.0f ms\n", cpu * 1e3, wall * 1e3);
  for (i = 0; i < TIMED_POLLS; ++i) {
    const double t = clock_s(CLOCK_MONOTONIC);
    if (ibv_poll_cq(pr.cq_b, 1, &wc) != 0) return 1;
    lat[i] = clock_s(CLOCK_MONOTONIC) - t;
  }
  qsort(lat, TIMED_POLLS, sizeof lat[0], cmp_double);
  printf("empty poll after 300 ms idle: median %.2f us, 99th percentile %.2f us (a figure: see the header)\n",
         lat[TIMED_POLLS / 2] * 1e6, lat[TIMED_POLLS * 99 / 100] * 1e6);

  /* 2. B's CQ among 100 polled in turn. A's CQ is drained after each message. */
  for (i = 0; i < RING; ++i) {
    ring[i] = i == RING_AT ? pr.cq_b : ibv_create_cq(pr.ctx, 4, NULL, NULL, 0);
    if (!ring[i]) return 2;
  }
  for (m = 0; m < RING_MESSAGES; ++m) {
    double posted, found = 0;
    struct ibv_sge sge = {(uintptr_t)pr.buf_b, BUF, pr.mr_b->lkey};
    struct ibv_recv_wr rwr, *rbad;
    if (m > 0) {
      memset(&rwr, 0, sizeof rwr);
      rwr.wr_id = 2;
      rwr.sg_list = &sge;
      rwr.num_sge = 1;
      if (ibv_post_recv(pr.qp_b, &rwr, &rbad)) return 2;
    }
    posted = clock_s(CLOCK_MONOTONIC);
    if (send_msg(pr.qp_a, pr.mr_a, pr.buf_a)) return 2;
    for (i = 0; found == 0 && clock_s(CLOCK_MONOTONIC) - posted < 30.0; i = (i + 1) % RING) {
      n = ibv_poll_cq(ring[i], 1, &wc);
      if (n < 0) return 2;
      if (n == 1) {
        if (i != RING_AT || wc.status != IBV_WC_SUCCESS) return 2;
        found = clock_s(CLOCK_MONOTONIC);
      }
    }
    if (found == 0) {
      printf("FAIL: message %d never found by the loop over %d CQs\n", m, RING);
      return 1;
    }
    per_msg[m] = found - posted;
    if (rc_poll_a(&pr)) return 2;
  }
  qsort(per_msg, RING_MESSAGES, sizeof per_msg[0], cmp_double);
  printf("a loop over %d CQs finds a message: median %.3f ms, worst %.3f ms (a figure: see the header)\n",
         RING, per_msg[RING_MESSAGES / 2] * 1e3, per_msg[RING_MESSAGES - 1] * 1e3);
  for (i = 0; i < RING; ++i)
    if (i != RING_AT) ibv_destroy_cq(ring[i]);

  /* 3. fork() while another thread spins on an idle CQ of this pair. */
  ip.p = &pr;
  ip.stop = 0;
  if (pthread_create(&thread, NULL, poll_idle, &ip)) return 2;
  {
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  child = fork();
  if (child < 0) return 2;
  if (child == 0) _exit(child_traffic(dev, index));
  if (waitpid(child, &child_status, 0) != child) return 2;
  ip.stop = 1;
  pthread_join(thread, NULL);
  if (WIFSIGNALED(child_status)) {
    printf("FAIL: the forked child hung (killed by signal %d) sending on a pair of its own\n",
           WTERMSIG(child_status));
    status = 1;
  } else if (WEXITSTATUS(child_status) != 0) {
    printf("FAIL: the forked child's send was not received (exit %d)\n", WEXITSTATUS(child_status));
    status = 1;
  } else {
    printf("after fork, with a thread polling in the parent: the child's send was received\n");
  }
  pair_close(&pr);
  ibv_free_device_list(list);
  return status;
}
