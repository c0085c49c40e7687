/* fakelib_keys: remote keys as an HCA checks them, and zero-length RDMA operations.
 * Written against plain libibverbs (run it with LD_LIBRARY_PATH pointing at the fake).
 *
 *   fakelib_keys <device> <gid_index> keys|zero_length
 *
 * keys: an initiator, a target and a third process, each with its own device context, register
 * one region each (so on a fake whose keys are the same numbers in every process, all three
 * would share a key). The initiator's RDMA write to the target must succeed with the target's
 * rkey and end in REMOTE ACCESS ERROR with the initiator's own rkey, with the third process's
 * rkey (never given to the target), and with the target's rkey after the target deregistered
 * that region and registered the same memory again; the new rkey works. The new key reuses the
 * old index with another variant byte (keys are <index, variant>, as mlx5's).
 * zero_length: an RDMA write and an RDMA read with no SGE, rkey 0 and remote address 0 (how UCX
 * flushes an endpoint) complete successfully, and the QP keeps working.
 * Exit 0 when every check passes, 1 otherwise, 2 on a setup failure.
 */
#include <infiniband/verbs.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define NQP 5
#define SIZE 4096

struct Info {
  uint32_t qpn[NQP];
  union ibv_gid gid;
  uint64_t addr;
  uint32_t rkey;
};

struct Side {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_qp* qp[NQP];
  struct ibv_mr* mr;
  unsigned char* buf;
};

static int open_side(struct Side* s, const char* name, int nqp) {
  int n, i;
  struct ibv_device** list = ibv_get_device_list(&n);
  struct ibv_qp_init_attr init;
  if (!list) return -1;
  s->ctx = NULL;
  for (i = 0; i < n; ++i)
    if (strcmp(ibv_get_device_name(list[i]), name) == 0) s->ctx = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  if (!s->ctx) return -1;
  s->pd = ibv_alloc_pd(s->ctx);
  s->cq = ibv_create_cq(s->ctx, 32, NULL, NULL, 0);
  s->buf = calloc(1, SIZE);
  if (!s->pd || !s->cq || !s->buf) return -1;
  /* The first region of every process: the same key number in each on a per-library counter. */
  s->mr = ibv_reg_mr(s->pd, s->buf, SIZE,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (!s->mr) return -1;
  memset(&init, 0, sizeof init);
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 8;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.send_cq = s->cq;
  init.recv_cq = s->cq;
  for (i = 0; i < nqp; ++i) {
    struct ibv_qp_attr a;
    s->qp[i] = ibv_create_qp(s->pd, &init);
    if (!s->qp[i]) return -1;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (ibv_modify_qp(s->qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return -1;
  }
  return 0;
}

static int connect_qp(struct ibv_qp* qp, uint32_t dest, const union ibv_gid* dgid, int gidx) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest;
  a.rq_psn = 7;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.grh.dgid = *dgid;
  a.ah_attr.grh.sgid_index = (uint8_t)gidx;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return -1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 7;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_MAX_QP_RD_ATOMIC);
}

static int full_read(int fd, void* p, size_t n) {
  char* c = p;
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r <= 0) return -1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

static struct Side me;

/* One signaled RDMA operation on QP `q`: `len` bytes from the start of the local buffer (no SGE
 * when 0); checks the completion's status. */
static void run(int q, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey, uint32_t len,
                enum ibv_wc_status want, const char* what) {
  struct ibv_sge sge = {(uintptr_t)me.buf, len, me.mr->lkey};
  struct ibv_send_wr wr, *bad;
  struct ibv_wc wc;
  time_t end = time(NULL) + 60;
  int n = 0;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = (uint64_t)q;
  wr.sg_list = len ? &sge : NULL;
  wr.num_sge = len ? 1 : 0;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  if (ibv_post_send(me.qp[q], &wr, &bad)) {
    CHECK(0, "%s: post_send (%s)", what, strerror(errno));
    return;
  }
  while (n == 0 && time(NULL) < end) n = ibv_poll_cq(me.cq, 1, &wc);
  if (n <= 0) {
    CHECK(0, "%s: a completion", what);
    return;
  }
  CHECK(wc.status == want, "%s: %s (%s)", what, ibv_wc_status_str(want), ibv_wc_status_str(wc.status));
}

/* The target: registers, connects, then re-registers its memory when told to ('r'). */
static int target(const char* dev, int gidx, int rd, int wr, int nqp) {
  struct Side s;
  struct Info mine, peer;
  char cmd;
  int i;
  if (open_side(&s, dev, nqp)) return 2;
  memset(&mine, 0, sizeof mine);
  for (i = 0; i < nqp; ++i) mine.qpn[i] = s.qp[i]->qp_num;
  if (ibv_query_gid(s.ctx, 1, gidx, &mine.gid)) return 2;
  mine.addr = (uintptr_t)s.buf;
  mine.rkey = s.mr->rkey;
  if (write(wr, &mine, sizeof mine) != (ssize_t)sizeof mine || full_read(rd, &peer, sizeof peer)) return 2;
  for (i = 0; i < nqp; ++i)
    if (connect_qp(s.qp[i], peer.qpn[i], &peer.gid, gidx)) return 2;
  if (write(wr, "c", 1) != 1) return 2;
  while (full_read(rd, &cmd, 1) == 0 && cmd == 'r') {
    uint32_t key;
    if (ibv_dereg_mr(s.mr)) return 2;
    s.mr = ibv_reg_mr(s.pd, s.buf, SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!s.mr) return 2;
    key = s.mr->rkey;
    if (write(wr, &key, sizeof key) != (ssize_t)sizeof key) return 2;
  }
  return 0;
}

int main(int argc, char** argv) {
  int to_t[2], from_t[2], from_f[2], to_f[2], gidx, keys, status, i;
  pid_t t, f = -1;
  struct Info peer, mine;
  uint32_t foreign_key = 0, new_key = 0;
  char c;
  if (argc != 4 || (strcmp(argv[3], "keys") != 0 && strcmp(argv[3], "zero_length") != 0)) {
    fprintf(stderr, "usage: %s <device> <gid_index> keys|zero_length\n", argv[0]);
    return 2;
  }
  gidx = atoi(argv[2]);
  keys = strcmp(argv[3], "keys") == 0;
  setvbuf(stdout, NULL, _IONBF, 0);
  if (pipe(to_t) || pipe(from_t) || pipe(from_f) || pipe(to_f)) return 2;
  t = fork();
  if (t < 0) return 2;
  if (t == 0) {
    /* Only its own ends: it stops when the initiator closes to_t. */
    close(to_t[1]);
    close(from_t[0]);
    close(to_f[1]);
    close(from_f[0]);
    alarm(120);
    _exit(target(argv[1], gidx, to_t[0], from_t[1], NQP));
  }
  if (keys) {
    f = fork();
    if (f < 0) return 2;
    if (f == 0) {
      /* The third process: one region, its key handed to the initiator only. */
      struct Side s;
      close(to_t[1]);
      close(to_f[1]);
      alarm(120);
      if (open_side(&s, argv[1], 0)) _exit(2);
      if (write(from_f[1], &s.mr->rkey, sizeof s.mr->rkey) != (ssize_t)sizeof s.mr->rkey) _exit(2);
      (void)full_read(to_f[0], &c, 1); /* its region stays registered until the initiator is done */
      _exit(0);
    }
    close(from_f[1]);
    if (full_read(from_f[0], &foreign_key, sizeof foreign_key)) return 2;
  }
  alarm(120);
  if (open_side(&me, argv[1], NQP)) return 2;
  if (full_read(from_t[0], &peer, sizeof peer)) return 2;
  memset(&mine, 0, sizeof mine);
  for (i = 0; i < NQP; ++i) mine.qpn[i] = me.qp[i]->qp_num;
  if (ibv_query_gid(me.ctx, 1, gidx, &mine.gid)) return 2;
  if (write(to_t[1], &mine, sizeof mine) != (ssize_t)sizeof mine) return 2;
  for (i = 0; i < NQP; ++i)
    if (connect_qp(me.qp[i], peer.qpn[i], &peer.gid, gidx)) return 2;
  if (full_read(from_t[0], &c, 1)) return 2;
  memset(me.buf, 0x5a, SIZE);

  if (keys) {
    printf("keys: initiator %#x, target %#x, third process %#x\n", me.mr->rkey, peer.rkey, foreign_key);
    CHECK(me.mr->rkey != peer.rkey && foreign_key != peer.rkey && foreign_key != me.mr->rkey,
          "each process's first region has its own key");
    run(0, IBV_WR_RDMA_WRITE, peer.addr, peer.rkey, 64, IBV_WC_SUCCESS, "write with the target's rkey");
    run(1, IBV_WR_RDMA_WRITE, peer.addr, me.mr->rkey, 64, IBV_WC_REM_ACCESS_ERR,
        "write with the initiator's own rkey");
    run(2, IBV_WR_RDMA_WRITE, peer.addr, foreign_key, 64, IBV_WC_REM_ACCESS_ERR,
        "write with a third process's rkey the target never issued");
    if (write(to_t[1], "r", 1) != 1 || full_read(from_t[0], &new_key, sizeof new_key)) return 2;
    printf("keys: the target's region re-registered: %#x -> %#x\n", peer.rkey, new_key);
    CHECK(new_key != peer.rkey && (new_key >> 8) == (peer.rkey >> 8),
          "the re-registered region reuses the freed index with another variant byte");
    run(3, IBV_WR_RDMA_WRITE, peer.addr, peer.rkey, 64, IBV_WC_REM_ACCESS_ERR,
        "write with the rkey of a region deregistered since");
    run(4, IBV_WR_RDMA_WRITE, peer.addr, new_key, 64, IBV_WC_SUCCESS, "write with the new rkey");
  } else {
    run(0, IBV_WR_RDMA_WRITE, 0, 0, 0, IBV_WC_SUCCESS, "zero-length RDMA write, rkey 0, address 0");
    run(0, IBV_WR_RDMA_READ, 0, 0, 0, IBV_WC_SUCCESS, "zero-length RDMA read, rkey 0, address 0");
    run(0, IBV_WR_RDMA_WRITE, peer.addr, peer.rkey, 64, IBV_WC_SUCCESS,
        "then a 64-byte write on the same QP");
    run(1, IBV_WR_RDMA_WRITE, peer.addr, 0, 64, IBV_WC_REM_ACCESS_ERR,
        "a 64-byte write with rkey 0 is refused");
  }
  close(to_t[1]);
  if (waitpid(t, &status, 0) != t) return 2;
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the target exited cleanly (status %#x)", status);
  if (f > 0) {
    close(to_f[1]);
    if (waitpid(f, &status, 0) != f) return 2;
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the third process exited cleanly (status %#x)",
          status);
  }
  if (failures == 0) printf("key checks passed\n");
  return failures ? 1 : 0;
}
