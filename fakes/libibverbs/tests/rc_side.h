/* One side of an RC connection for the fake libibverbs' C test programs (C99, header only):
 * a context, PD, CQ, a registered buffer and an RC QP, connected to a peer QP by number with
 * the retry attributes a test chooses. Both sides use the same GID (one host on loopback).
 */
#ifndef GIDPOLICY_TESTS_FAKELIB_RC_SIDE_H
#define GIDPOLICY_TESTS_FAKELIB_RC_SIDE_H

#include <infiniband/verbs.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rc_side {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_qp* qp;
  struct ibv_mr* mr;
  unsigned char* buf;
  size_t size;
};

/* The retry attributes of a connection (RTR: min_rnr_timer; RTS: the rest). */
struct rc_attrs {
  uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
};

static inline double rc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void rc_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The device list, kept until rc_free_devices(): a device is valid while it is. */
static struct ibv_device** rc_devices;

static inline struct ibv_device* rc_find_device(const char* name) {
  int n = 0, i;
  if (!rc_devices) rc_devices = ibv_get_device_list(&n);
  for (i = 0; rc_devices && rc_devices[i]; ++i)
    if (strcmp(ibv_get_device_name(rc_devices[i]), name) == 0) return rc_devices[i];
  fprintf(stderr, "no device %s\n", name);
  return NULL;
}

static inline void rc_free_devices(void) {
  if (rc_devices) ibv_free_device_list(rc_devices);
  rc_devices = NULL;
}

/* 0 on success. `size` bytes of buffer, registered for local and remote access. */
static inline int rc_open(struct rc_side* s, struct ibv_device* dev, size_t size, int depth) {
  struct ibv_qp_init_attr init;
  memset(s, 0, sizeof *s);
  s->size = size;
  s->buf = calloc(1, size);
  if (!s->buf || !(s->ctx = ibv_open_device(dev)) || !(s->pd = ibv_alloc_pd(s->ctx)) ||
      !(s->cq = ibv_create_cq(s->ctx, 2 * depth, NULL, NULL, 0)))
    return 1;
  s->mr = ibv_reg_mr(
      s->pd, s->buf, size,
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  if (!s->mr) return 1;
  memset(&init, 0, sizeof init);
  init.qp_type = IBV_QPT_RC;
  init.send_cq = init.recv_cq = s->cq;
  init.cap.max_send_wr = init.cap.max_recv_wr = (uint32_t)depth;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  s->qp = ibv_create_qp(s->pd, &init);
  return s->qp ? 0 : 1;
}

/* INIT -> RTR -> RTS towards QP `dest`, both sides routing from GID `index` of port 1. */
static inline int rc_connect(struct rc_side* s, uint32_t dest, int index, const struct rc_attrs* at) {
  struct ibv_qp_attr a;
  union ibv_gid gid;
  if (ibv_query_gid(s->ctx, 1, index, &gid)) return 1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags =
      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return 1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = at->min_rnr_timer;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.grh.dgid = gid;
  a.ah_attr.grh.sgid_index = (uint8_t)index;
  if (ibv_modify_qp(s->qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return 1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = at->timeout;
  a.retry_cnt = at->retry_cnt;
  a.rnr_retry = at->rnr_retry;
  a.max_rd_atomic = 4;
  return ibv_modify_qp(s->qp, &a,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Post one signaled work request of `opcode` with wr_id `id`: `len` bytes at `off` of the own
 * buffer; remote operations target `raddr`/`rkey`. Returns ibv_post_send's result. */
static inline int rc_post(struct rc_side* s, enum ibv_wr_opcode opcode, uint64_t id, size_t off, uint32_t len,
                          uint64_t raddr, uint32_t rkey) {
  struct ibv_sge sge;
  struct ibv_send_wr wr, *bad;
  sge.addr = (uintptr_t)(s->buf + off);
  sge.length = len;
  sge.lkey = s->mr->lkey;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
    wr.wr.atomic.remote_addr = raddr;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = 1;
  } else {
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
  }
  return ibv_post_send(s->qp, &wr, &bad);
}

/* Post a receive of `len` bytes at `off` of the own buffer. */
static inline int rc_post_recv(struct rc_side* s, uint64_t id, size_t off, uint32_t len) {
  struct ibv_sge sge;
  struct ibv_recv_wr wr, *bad;
  sge.addr = (uintptr_t)(s->buf + off);
  sge.length = len;
  sge.lkey = s->mr->lkey;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return ibv_post_recv(s->qp, &wr, &bad);
}

/* Poll until `want` completions are in `wc` or `seconds` passed; returns how many arrived. */
static inline int rc_poll_for(struct ibv_cq* cq, struct ibv_wc* wc, int want, double seconds) {
  int got = 0;
  const double end = rc_now() + seconds;
  while (got < want && rc_now() < end) {
    const int n = ibv_poll_cq(cq, want - got, wc + got);
    if (n < 0) return got;
    got += n;
  }
  return got;
}

static inline void rc_close(struct rc_side* s) {
  if (s->qp) ibv_destroy_qp(s->qp);
  if (s->mr) ibv_dereg_mr(s->mr);
  if (s->cq) ibv_destroy_cq(s->cq);
  if (s->pd) ibv_dealloc_pd(s->pd);
  if (s->ctx) ibv_close_device(s->ctx);
  free(s->buf);
  memset(s, 0, sizeof *s);
}

#endif
