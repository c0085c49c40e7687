/* fakelib_onesided: RDMA write (with and without immediate), RDMA read, fetch-and-add and
 * compare-and-swap between two processes, where the target calls no verb while the data moves.
 * Written against plain libibverbs (run it with LD_LIBRARY_PATH pointing at the fake).
 *
 *   fakelib_onesided <device> <gid_index> [max]
 *
 * With "max", the large write is as long as the port's max_msg_sz (1 GiB on the fake; checked
 * at sampled offsets), and one byte more must end in IBV_WC_LOC_LEN_ERR.
 * The target (a forked child) opens the device, registers its regions, brings its QPs to RTS,
 * then blocks in read() on a pipe: it calls nothing until the initiator says it is done. The
 * initiator then checks:
 *   - a 4 KiB write, an 8 MiB write (many fragments) and a write with immediate land;
 *   - 4 KiB and 8 MiB reads return the target's bytes;
 *   - fetch-and-add returns the old value, compare-and-swap swaps only on a match;
 *   - violations end in the statuses hardware uses, each on its own QP (an error moves a QP to
 *     the error state): a bad rkey, a write past the region, a write to a region without remote
 *     write, a read without remote read, an atomic without remote atomic -> REMOTE ACCESS ERROR;
 *     a misaligned atomic -> REMOTE INVALID REQUEST ERROR.
 * Afterwards the target checks its memory: the data landed, the atomics' result is there, the
 * refused writes changed nothing; and its receive completed with the immediate.
 * Exit 0 when every check passes, 1 otherwise, 2 on a setup failure.
 */
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NQP 8
#define SMALL 4096
#define LARGE (8u << 20)

enum { Q_GOOD = 0, Q_BAD_RKEY, Q_BOUNDS, Q_RO_WRITE, Q_NO_READ, Q_NO_ATOMIC, Q_MISALIGNED, Q_TOO_LONG };

/* The large write's region: 8 MiB, or max_msg_sz + 1 in "max" mode. */
static size_t big = LARGE;
static int max_mode = 0;

/* Fill with pattern(i, seed): its period is 256 bytes, so double a filled prefix. */
static void fill(unsigned char* p, size_t n, unsigned seed);
/* Byte i of the large write, checked at every byte (8 MiB) or at sampled offsets (max mode). */
static size_t step(void) { return max_mode ? 4099 : 1; }

struct Info {
  uint32_t qpn[NQP];
  union ibv_gid gid;
  uint64_t rw_addr, ro_addr, noread_addr, atomic_addr, noatomic_addr;
  uint32_t rw_rkey, ro_rkey, noread_rkey, atomic_rkey, noatomic_rkey;
};

struct Side {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_qp* qp[NQP];
};

static int failures = 0;

static void check(int ok, const char* what) {
  printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

static int open_side(struct Side* s, const char* name) {
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
  s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
  if (!s->pd || !s->cq) return -1;
  memset(&init, 0, sizeof init);
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 16;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.send_cq = s->cq;
  init.recv_cq = s->cq;
  for (i = 0; i < NQP; ++i) {
    struct ibv_qp_attr a;
    s->qp[i] = ibv_create_qp(s->pd, &init);
    if (!s->qp[i]) return -1;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags =
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
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

static unsigned char pattern(size_t i, unsigned seed) { return (unsigned char)((i * 131u + seed) & 0xff); }

static void fill(unsigned char* p, size_t n, unsigned seed) {
  size_t i, done = n < 256 ? n : 256;
  for (i = 0; i < done; ++i) p[i] = pattern(i, seed);
  while (done < n) {
    size_t k = done < n - done ? done : n - done;
    memcpy(p + done, p, k);
    done += k;
  }
}

/* The port's max_msg_sz in "max" mode (every process asks its own device), else 8 MiB. */
static int size_large(struct ibv_context* ctx) {
  struct ibv_port_attr pa;
  if (!max_mode) return 0;
  if (ibv_query_port(ctx, 1, &pa)) return -1;
  if (pa.max_msg_sz < (1u << 30)) {
    printf("FAILED: max_msg_sz %u is below 1 GiB\n", pa.max_msg_sz);
    return -1;
  }
  big = (size_t)pa.max_msg_sz + 1;
  return 0;
}

/* ---- the target: sets up, then calls no verb until told the initiator is done ---- */
static int target(const char* dev, int gidx, int to_init, int from_init) {
  struct Side s;
  struct Info mine, peer;
  unsigned char *rw, *ro, *noread, *atomic, *noatomic;
  struct ibv_mr *rw_mr, *ro_mr, *noread_mr, *atomic_mr, *noatomic_mr;
  uint64_t v;
  size_t i;
  char go;
  int ok, got_imm = 0;
  time_t deadline;
  const unsigned rw_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (open_side(&s, dev) || size_large(s.ctx)) return 2;
  rw = calloc(1, big);
  ro = malloc(LARGE);
  noread = malloc(SMALL);
  atomic = aligned_alloc(64, 64);
  noatomic = aligned_alloc(64, 64);
  if (!rw || !ro || !noread || !atomic || !noatomic) return 2;
  for (i = 0; i < LARGE; ++i) ro[i] = pattern(i, 7);
  memset(noread, 0x5a, SMALL);
  memset(atomic, 0, 64);
  memset(noatomic, 0, 64);
  v = 100;
  memcpy(atomic, &v, 8);
  rw_mr = ibv_reg_mr(s.pd, rw, big, rw_access);
  ro_mr = ibv_reg_mr(s.pd, ro, LARGE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  noread_mr = ibv_reg_mr(s.pd, noread, SMALL, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  atomic_mr = ibv_reg_mr(s.pd, atomic, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  noatomic_mr = ibv_reg_mr(s.pd, noatomic, 64, rw_access);
  if (!rw_mr || !ro_mr || !noread_mr || !atomic_mr || !noatomic_mr) return 2;

  memset(&mine, 0, sizeof mine);
  for (i = 0; i < NQP; ++i) mine.qpn[i] = s.qp[i]->qp_num;
  if (ibv_query_gid(s.ctx, 1, gidx, &mine.gid)) return 2;
  mine.rw_addr = (uintptr_t)rw;
  mine.rw_rkey = rw_mr->rkey;
  mine.ro_addr = (uintptr_t)ro;
  mine.ro_rkey = ro_mr->rkey;
  mine.noread_addr = (uintptr_t)noread;
  mine.noread_rkey = noread_mr->rkey;
  mine.atomic_addr = (uintptr_t)atomic;
  mine.atomic_rkey = atomic_mr->rkey;
  mine.noatomic_addr = (uintptr_t)noatomic;
  mine.noatomic_rkey = noatomic_mr->rkey;
  if (write(to_init, &mine, sizeof mine) != (ssize_t)sizeof mine) return 2;
  if (full_read(from_init, &peer, sizeof peer)) return 2;
  {
    /* The write with immediate consumes one receive: posted now, polled only at the end. */
    struct ibv_sge sge = {(uintptr_t)noread, 0, noread_mr->lkey};
    struct ibv_recv_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = 77;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (ibv_post_recv(s.qp[Q_GOOD], &wr, &bad)) return 2;
  }
  for (i = 0; i < NQP; ++i)
    if (connect_qp(s.qp[i], peer.qpn[i], &peer.gid, gidx)) return 2;
  go = 'r';
  if (write(to_init, &go, 1) != 1) return 2;

  /* Passive: no verb until the initiator has finished. */
  if (full_read(from_init, &go, 1)) return 2;

  ok = 1;
  for (i = 0; i < SMALL && ok; ++i) ok = rw[i] == pattern(i, 1);
  check(ok, "target: the 4 KiB RDMA write landed");
  ok = 1;
  for (i = 0; i < big - SMALL - (size_t)max_mode && ok; i += step()) ok = rw[SMALL + i] == pattern(i, 2);
  ok = ok && rw[big - 1 - (size_t)max_mode] == pattern(big - SMALL - 1 - (size_t)max_mode, 2);
  check(ok, "target: the large RDMA write landed");
  memcpy(&v, atomic, 8);
  check(v == 7, "target: fetch-and-add then compare-and-swap left 7");
  memcpy(&v, atomic + 8, 8);
  check(v == 0, "target: the failed compare-and-swap changed nothing");
  ok = 1;
  for (i = 0; i < LARGE && ok; ++i) ok = ro[i] == pattern(i, 7);
  check(ok, "target: the refused write to a region without remote write changed nothing");
  memcpy(&v, noatomic, 8);
  check(v == 0, "target: the refused atomic changed nothing");
  /* Waits up to a minute (the suite may load both cores), not a fixed number of tries. */
  for (deadline = time(NULL) + 60; time(NULL) < deadline && !got_imm;) {
    struct ibv_wc wc;
    if (ibv_poll_cq(s.cq, 1, &wc) > 0 && wc.wr_id == 77)
      got_imm = wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
                ntohl(wc.imm_data) == 0xabcd;
    else
      usleep(1000);
  }
  check(got_imm, "target: the write with immediate completed a receive with the immediate");
  return failures ? 1 : 0;
}

/* ---- the initiator ---- */
static struct Side init_side;
static unsigned char* lbuf;
static struct ibv_mr* lmr;

static int run(int q, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey, size_t off, size_t len,
               uint64_t compare_add, uint64_t swap, enum ibv_wc_status expect, const char* what) {
  struct ibv_sge sge = {(uintptr_t)(lbuf + off), (uint32_t)len, lmr->lkey};
  struct ibv_send_wr wr, *bad;
  struct ibv_wc wc;
  /* Generous: a 1 GiB copy shares two cores with the rest of the suite. A hang is still
   * caught, by alarm() below and by ctest's TIMEOUT. */
  time_t deadline = time(NULL) + 120;
  int n;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = (uint64_t)q * 100 + (uint64_t)op;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
    wr.wr.atomic.remote_addr = raddr;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = compare_add;
    wr.wr.atomic.swap = swap;
  } else {
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
  }
  if (op == IBV_WR_RDMA_WRITE_WITH_IMM) wr.imm_data = htonl(0xabcd);
  if (ibv_post_send(init_side.qp[q], &wr, &bad)) {
    printf("FAILED: %s: post_send: %s\n", what, strerror(errno));
    ++failures;
    return -1;
  }
  do {
    n = ibv_poll_cq(init_side.cq, 1, &wc);
    if (n == 0) sched_yield(); /* let the fake's progress thread (or the peer) run */
  } while (n == 0 && time(NULL) < deadline);
  if (n <= 0) {
    printf("FAILED: %s: no completion\n", what);
    ++failures;
    return -1;
  }
  printf("%s: %s (%s)\n", wc.status == expect ? "ok" : "FAILED", what, ibv_wc_status_str(wc.status));
  if (wc.status != expect) ++failures;
  return wc.status == expect ? 0 : -1;
}

int main(int argc, char** argv) {
  int to_init[2], from_init[2], status, gidx;
  pid_t child;
  struct Info peer, mine;
  size_t i;
  uint64_t v;
  char go;
  int ok;
  if (argc == 4 && strcmp(argv[3], "max") == 0) max_mode = 1;
  if (argc != 3 && !(argc == 4 && max_mode)) {
    fprintf(stderr, "usage: %s <device> <gid_index> [max]\n", argv[0]);
    return 2;
  }
  gidx = atoi(argv[2]);
  setvbuf(stdout, NULL, _IONBF, 0);
  if (pipe(to_init) || pipe(from_init)) return 2;
  child = fork();
  if (child < 0) return 2;
  if (child == 0) {
    alarm(150);
    _exit(target(argv[1], gidx, to_init[1], from_init[0]));
  }
  alarm(150);
  if (open_side(&init_side, argv[1]) || size_large(init_side.ctx)) return 2;
  lbuf = calloc(1, big);
  if (!lbuf) return 2;
  lmr = ibv_reg_mr(init_side.pd, lbuf, big, IBV_ACCESS_LOCAL_WRITE);
  if (!lmr) return 2;
  if (full_read(to_init[0], &peer, sizeof peer)) return 2;
  memset(&mine, 0, sizeof mine);
  for (i = 0; i < NQP; ++i) mine.qpn[i] = init_side.qp[i]->qp_num;
  if (ibv_query_gid(init_side.ctx, 1, gidx, &mine.gid)) return 2;
  if (write(from_init[1], &mine, sizeof mine) != (ssize_t)sizeof mine) return 2;
  if (full_read(to_init[0], &go, 1)) return 2;
  for (i = 0; i < NQP; ++i)
    if (connect_qp(init_side.qp[i], peer.qpn[i], &peer.gid, gidx)) return 2;

  for (i = 0; i < SMALL; ++i) lbuf[i] = pattern(i, 1);
  run(Q_GOOD, IBV_WR_RDMA_WRITE, peer.rw_addr, peer.rw_rkey, 0, SMALL, 0, 0, IBV_WC_SUCCESS,
      "4 KiB RDMA write");
  fill(lbuf, big - SMALL - (size_t)max_mode, 2);
  run(Q_GOOD, IBV_WR_RDMA_WRITE, peer.rw_addr + SMALL, peer.rw_rkey, 0, big - SMALL - (size_t)max_mode, 0, 0,
      IBV_WC_SUCCESS, "large RDMA write");
  run(Q_GOOD, IBV_WR_RDMA_WRITE_WITH_IMM, peer.noread_addr, peer.noread_rkey, 0, 0, 0, 0, IBV_WC_SUCCESS,
      "RDMA write with immediate");
  memset(lbuf, 0, SMALL);
  if (run(Q_GOOD, IBV_WR_RDMA_READ, peer.ro_addr, peer.ro_rkey, 0, SMALL, 0, 0, IBV_WC_SUCCESS,
          "4 KiB RDMA read") == 0) {
    ok = 1;
    for (i = 0; i < SMALL && ok; ++i) ok = lbuf[i] == pattern(i, 7);
    check(ok, "the 4 KiB read returned the target's bytes");
  }
  memset(lbuf, 0, LARGE);
  if (run(Q_GOOD, IBV_WR_RDMA_READ, peer.ro_addr, peer.ro_rkey, 0, LARGE, 0, 0, IBV_WC_SUCCESS,
          "8 MiB RDMA read") == 0) {
    ok = 1;
    for (i = 0; i < LARGE && ok; ++i) ok = lbuf[i] == pattern(i, 7);
    check(ok, "the 8 MiB read returned the target's bytes");
  }
  if (run(Q_GOOD, IBV_WR_ATOMIC_FETCH_AND_ADD, peer.atomic_addr, peer.atomic_rkey, 0, 8, 5, 0, IBV_WC_SUCCESS,
          "fetch-and-add 5") == 0) {
    memcpy(&v, lbuf, 8);
    check(v == 100, "fetch-and-add returned the old value 100");
  }
  if (run(Q_GOOD, IBV_WR_ATOMIC_CMP_AND_SWP, peer.atomic_addr, peer.atomic_rkey, 0, 8, 105, 7, IBV_WC_SUCCESS,
          "compare-and-swap 105 -> 7") == 0) {
    memcpy(&v, lbuf, 8);
    check(v == 105, "compare-and-swap returned the old value 105");
  }
  if (run(Q_GOOD, IBV_WR_ATOMIC_CMP_AND_SWP, peer.atomic_addr + 8, peer.atomic_rkey, 0, 8, 1, 9,
          IBV_WC_SUCCESS, "compare-and-swap on a mismatch") == 0) {
    memcpy(&v, lbuf, 8);
    check(v == 0, "the mismatched compare-and-swap returned the current value 0");
  }

  run(Q_BAD_RKEY, IBV_WR_RDMA_WRITE, peer.rw_addr, peer.rw_rkey + 1000, 0, 64, 0, 0, IBV_WC_REM_ACCESS_ERR,
      "write with a bad rkey");
  run(Q_BOUNDS, IBV_WR_RDMA_WRITE, peer.rw_addr + big - 32, peer.rw_rkey, 0, 64, 0, 0, IBV_WC_REM_ACCESS_ERR,
      "write past the end of the region");
  run(Q_RO_WRITE, IBV_WR_RDMA_WRITE, peer.ro_addr, peer.ro_rkey, 0, 64, 0, 0, IBV_WC_REM_ACCESS_ERR,
      "write to a region without remote write");
  run(Q_NO_READ, IBV_WR_RDMA_READ, peer.noread_addr, peer.noread_rkey, 0, 64, 0, 0, IBV_WC_REM_ACCESS_ERR,
      "read from a region without remote read");
  run(Q_NO_ATOMIC, IBV_WR_ATOMIC_FETCH_AND_ADD, peer.noatomic_addr, peer.noatomic_rkey, 0, 8, 1, 0,
      IBV_WC_REM_ACCESS_ERR, "atomic on a region without remote atomic");
  run(Q_MISALIGNED, IBV_WR_ATOMIC_FETCH_AND_ADD, peer.atomic_addr + 4, peer.atomic_rkey, 0, 8, 1, 0,
      IBV_WC_REM_INV_REQ_ERR, "atomic on a misaligned address");

  if (max_mode)
    run(Q_TOO_LONG, IBV_WR_RDMA_WRITE, peer.rw_addr, peer.rw_rkey, 0, big, 0, 0, IBV_WC_LOC_LEN_ERR,
        "a write one byte above max_msg_sz");

  go = 'd';
  if (write(from_init[1], &go, 1) != 1) return 2;
  if (waitpid(child, &status, 0) != child) return 2;
  check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the target's own checks");
  printf("%s\n", failures ? "one-sided checks FAILED" : "one-sided checks passed");
  return failures ? 1 : 0;
}
