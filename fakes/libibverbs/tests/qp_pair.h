/* Setup shared by the fake libibverbs' resource tests: open a device by name and bring RC/UC
 * queue pairs of one process through INIT, RTR and RTS with the masks the kernel requires, so
 * that two QPs of one process talk to each other over the fake's loopback data path. */
#ifndef GIDPOLICY_TESTS_FAKELIB_QP_PAIR_H
#define GIDPOLICY_TESTS_FAKELIB_QP_PAIR_H

#include <infiniband/verbs.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static inline double pair_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The context of the device called `name`, or NULL (printed). */
static inline struct ibv_context* pair_open(const char* name) {
  int n = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  struct ibv_context* ctx = NULL;
  for (int i = 0; list && i < n && !ctx; ++i)
    if (strcmp(ibv_get_device_name(list[i]), name) == 0) ctx = ibv_open_device(list[i]);
  if (list) ibv_free_device_list(list);
  if (!ctx) fprintf(stderr, "setup: no device %s\n", name);
  return ctx;
}

static inline int pair_init(struct ibv_qp* qp) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* INIT -> RTR -> RTS towards `dest`, routing from `index` to the GID at `index` (one port). */
static inline int pair_connect(struct ibv_context* ctx, struct ibv_qp* qp, uint32_t dest, uint8_t index) {
  union ibv_gid gid;
  if (ibv_query_gid(ctx, 1, index, &gid)) return 1;
  const int rc = qp->qp_type == IBV_QPT_RC;
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.grh.dgid = gid;
  a.ah_attr.grh.sgid_index = index;
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  if (rc) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (ibv_modify_qp(qp, &a, mask)) return 1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (rc) mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  return ibv_modify_qp(qp, &a, mask);
}

/* A QP of `type` on `pd` with the given CQs and depths. */
static inline struct ibv_qp* pair_qp(struct ibv_pd* pd, enum ibv_qp_type type, struct ibv_cq* scq,
                                     struct ibv_cq* rcq, uint32_t send_wr, uint32_t recv_wr) {
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = scq;
  ia.recv_cq = rcq;
  ia.qp_type = type;
  ia.cap.max_send_wr = send_wr;
  ia.cap.max_recv_wr = recv_wr;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  return ibv_create_qp(pd, &ia);
}

/* How long a completion that is due may take: a hang guard, far above the milliseconds loopback
 * takes, as the suite shares its cores with other work. */
#define PAIR_WAIT_S 30.0

/* Poll `cq` until `want` completions arrived or `seconds` passed; returns how many. */
static inline int pair_poll(struct ibv_cq* cq, int want, double seconds, struct ibv_wc* out) {
  int got = 0;
  const double end = pair_now_s() + seconds;
  while (got < want && pair_now_s() < end) {
    struct ibv_wc wc;
    const int n = ibv_poll_cq(cq, 1, &wc);
    if (n < 0) return -1;
    if (n == 1) {
      if (out) out[got] = wc;
      ++got;
    }
  }
  return got;
}

#endif
