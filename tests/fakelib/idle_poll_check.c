/* fakelib_idle_poll: a program that spins on ibv_poll_cq while nothing arrives (perftest,
 * the pingpongs, JACCL's collectives) must not take a core from its peer. Two RC queue pairs in
 * one process, connected; B's receive is posted, A sends nothing at first.
 *
 *   fakelib_idle_poll <device> <index>
 *
 * 1. B's CQ is polled in a tight loop for 400 ms with nothing to complete: the process may use
 *    at most a quarter of that in CPU time (a spinning fake uses all of it). The fake's poll
 *    backs off into a bounded wait after a short spin (data_path.cpp, poll_cq).
 * 2. While B's poller is in that back-off, another thread posts A's send: B's poll must return
 *    the receive completion within 100 ms of the post (the wait ends on a completion).
 * 3. fork() while a thread waits in the back-off: the child, on a pair of its own, still
 *    completes a send (the waiter did not survive the fork; the fake must not wait for it).
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

struct sender {
  struct ibv_qp* qp;
  struct ibv_mr* mr;
  char* buf;
  double posted_at; /* CLOCK_MONOTONIC, written before the post */
  int rc;
};

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

static void* send_later(void* arg) {
  struct sender* s = (struct sender*)arg;
  struct timespec pause = {0, 100 * 1000 * 1000}; /* well inside B's back-off */
  nanosleep(&pause, NULL);
  s->posted_at = clock_s(CLOCK_MONOTONIC);
  s->rc = send_msg(s->qp, s->mr, s->buf);
  return NULL;
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

/* Polls B's CQ of the pair until `stop` is set: a thread in the back-off when fork() comes. */
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

/* In the child of a fork: a pair of its own, one send, received within 2 s (alarm: a hang is a
 * failure, killed by SIGALRM). */
static int child_traffic(struct ibv_device* dev, int index) {
  struct pair q;
  struct ibv_wc wc;
  double t0;
  int n = 0;
  alarm(10);
  if (pair_open(&q, dev, index) || send_msg(q.qp_a, q.mr_a, q.buf_a)) return 2;
  t0 = clock_s(CLOCK_MONOTONIC);
  while (n == 0 && clock_s(CLOCK_MONOTONIC) - t0 < 2.0) n = ibv_poll_cq(q.cq_b, 1, &wc);
  if (n != 1 || wc.status != IBV_WC_SUCCESS || memcmp(q.buf_b, MSG, sizeof MSG) != 0) return 1;
  pair_close(&q);
  return 0;
}

int main(int argc, char** argv) {
  struct ibv_device** list;
  struct ibv_device* dev = NULL;
  struct pair pr;
  struct ibv_wc wc;
  struct sender s;
  struct idle_poller ip;
  pthread_t thread;
  pid_t child;
  double wall0, cpu0, wall, cpu, got_at = 0;
  int n, i, index, status = 0, child_status = 0;

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

  /* 1. Nothing to complete: poll as perftest does, measure what it costs. */
  wall0 = clock_s(CLOCK_MONOTONIC);
  cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  while (clock_s(CLOCK_MONOTONIC) - wall0 < 0.4)
    if (ibv_poll_cq(pr.cq_b, 1, &wc) != 0) {
      fprintf(stderr, "a completion out of nothing\n");
      return 1;
    }
  wall = clock_s(CLOCK_MONOTONIC) - wall0;
  cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  printf("idle polling: %.0f ms of CPU in %.0f ms\n", cpu * 1e3, wall * 1e3);
  if (cpu > wall / 4) {
    printf("FAIL: an idle poll loop takes more than a quarter of a core\n");
    status = 1;
  }

  /* 2. A completion while the poller backs off ends its wait. */
  memset(&s, 0, sizeof s);
  s.qp = pr.qp_a;
  s.mr = pr.mr_a;
  s.buf = pr.buf_a;
  if (pthread_create(&thread, NULL, send_later, &s)) return 2;
  wall0 = clock_s(CLOCK_MONOTONIC);
  while (clock_s(CLOCK_MONOTONIC) - wall0 < 5.0) {
    n = ibv_poll_cq(pr.cq_b, 1, &wc);
    if (n < 0) return 2;
    if (n == 1) {
      got_at = clock_s(CLOCK_MONOTONIC);
      break;
    }
  }
  pthread_join(thread, NULL);
  if (s.rc || got_at == 0 || wc.status != IBV_WC_SUCCESS || memcmp(pr.buf_b, MSG, sizeof MSG) != 0) {
    printf("FAIL: the send posted during the back-off was not received (post %d)\n", s.rc);
    return 1;
  }
  printf("receive completed %.1f ms after the post\n", (got_at - s.posted_at) * 1e3);
  if (got_at - s.posted_at > 0.1) {
    printf("FAIL: the poller did not wake within 100 ms of the completion\n");
    status = 1;
  }

  /* 3. fork() while another thread waits in the back-off on an idle CQ of this pair. */
  ip.p = &pr;
  ip.stop = 0;
  if (pthread_create(&thread, NULL, poll_idle, &ip)) return 2;
  {
    struct timespec pause = {0, 300 * 1000 * 1000}; /* well into its back-off */
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
    printf("after fork, with a poller waiting in the parent: the child's send was received\n");
  }
  pair_close(&pr);
  ibv_free_device_list(list);
  return status;
}
