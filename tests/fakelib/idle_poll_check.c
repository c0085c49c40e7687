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
 * Exit 0 when both hold, 1 otherwise, 2 on a setup failure.
 */
#include <infiniband/verbs.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static void* send_later(void* arg) {
  struct sender* s = (struct sender*)arg;
  struct timespec pause = {0, 100 * 1000 * 1000}; /* well inside B's back-off */
  struct ibv_sge sge;
  struct ibv_send_wr wr, *bad;
  nanosleep(&pause, NULL);
  sge.addr = (uintptr_t)s->buf;
  sge.length = sizeof MSG;
  sge.lkey = s->mr->lkey;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  s->posted_at = clock_s(CLOCK_MONOTONIC);
  s->rc = ibv_post_send(s->qp, &wr, &bad);
  return NULL;
}

int main(int argc, char** argv) {
  struct ibv_device** list;
  struct ibv_device* dev = NULL;
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq *cq_a, *cq_b;
  struct ibv_qp *qp_a, *qp_b;
  struct ibv_mr *mr_a, *mr_b;
  struct ibv_qp_init_attr init;
  struct ibv_wc wc;
  union ibv_gid gid;
  static char buf_a[BUF] = MSG, buf_b[BUF];
  struct sender s;
  pthread_t thread;
  double wall0, cpu0, wall, cpu, got_at = 0;
  int n, i, index, status = 0;

  if (argc != 3) {
    fprintf(stderr, "usage: %s <device> <index>\n", argv[0]);
    return 2;
  }
  index = atoi(argv[2]);
  list = ibv_get_device_list(&n);
  for (i = 0; list && i < n; ++i)
    if (strcmp(ibv_get_device_name(list[i]), argv[1]) == 0) dev = list[i];
  if (!dev || !(ctx = ibv_open_device(dev))) {
    fprintf(stderr, "no device %s\n", argv[1]);
    return 2;
  }
  pd = ibv_alloc_pd(ctx);
  cq_a = ibv_create_cq(ctx, 4, NULL, NULL, 0);
  cq_b = ibv_create_cq(ctx, 4, NULL, NULL, 0);
  mr_a = ibv_reg_mr(pd, buf_a, BUF, IBV_ACCESS_LOCAL_WRITE);
  mr_b = ibv_reg_mr(pd, buf_b, BUF, IBV_ACCESS_LOCAL_WRITE);
  if (!pd || !cq_a || !cq_b || !mr_a || !mr_b) return 2;
  memset(&init, 0, sizeof init);
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 2;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  init.send_cq = init.recv_cq = cq_a;
  qp_a = ibv_create_qp(pd, &init);
  init.send_cq = init.recv_cq = cq_b;
  qp_b = ibv_create_qp(pd, &init);
  if (!qp_a || !qp_b || ibv_query_gid(ctx, 1, index, &gid)) return 2;
  if (connect_qp(qp_a, qp_b->qp_num, &gid, (uint8_t)index) ||
      connect_qp(qp_b, qp_a->qp_num, &gid, (uint8_t)index)) {
    fprintf(stderr, "cannot connect the queue pairs\n");
    return 2;
  }
  {
    struct ibv_sge sge = {(uintptr_t)buf_b, BUF, mr_b->lkey};
    struct ibv_recv_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = 2;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (ibv_post_recv(qp_b, &wr, &bad)) return 2;
  }

  /* 1. Nothing to complete: poll as perftest does, measure what it costs. */
  wall0 = clock_s(CLOCK_MONOTONIC);
  cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  while (clock_s(CLOCK_MONOTONIC) - wall0 < 0.4)
    if (ibv_poll_cq(cq_b, 1, &wc) != 0) {
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
  s.qp = qp_a;
  s.mr = mr_a;
  s.buf = buf_a;
  if (pthread_create(&thread, NULL, send_later, &s)) return 2;
  wall0 = clock_s(CLOCK_MONOTONIC);
  while (clock_s(CLOCK_MONOTONIC) - wall0 < 5.0) {
    n = ibv_poll_cq(cq_b, 1, &wc);
    if (n < 0) return 2;
    if (n == 1) {
      got_at = clock_s(CLOCK_MONOTONIC);
      break;
    }
  }
  pthread_join(thread, NULL);
  if (s.rc || got_at == 0 || wc.status != IBV_WC_SUCCESS || memcmp(buf_b, MSG, sizeof MSG) != 0) {
    printf("FAIL: the send posted during the back-off was not received (post %d)\n", s.rc);
    return 1;
  }
  printf("receive completed %.1f ms after the post\n", (got_at - s.posted_at) * 1e3);
  if (got_at - s.posted_at > 0.1) {
    printf("FAIL: the poller did not wake within 100 ms of the completion\n");
    status = 1;
  }
  ibv_destroy_qp(qp_a);
  ibv_destroy_qp(qp_b);
  ibv_dereg_mr(mr_a);
  ibv_dereg_mr(mr_b);
  ibv_destroy_cq(cq_a);
  ibv_destroy_cq(cq_b);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return status;
}
