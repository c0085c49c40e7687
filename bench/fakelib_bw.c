/* bench_fakelib_bw: ib_write_bw- and ib_send_bw-shaped bandwidth over the fake libibverbs.so.1.
 *
 *   GIDPOLICY_FAKE_TABLES=<table> LD_LIBRARY_PATH=<fake dir> \
 *     bench_fakelib_bw [device] [gid_index] [sizes, e.g. 4096,65536,1048576]
 *
 * Two processes (the target is forked), one RC queue pair each, on loopback through the fake's
 * transport. Like perftest: the initiator keeps up to 128 work requests outstanding (every one
 * signalled); "write" is RDMA writes into a region of the target, which posts and polls nothing
 * while they land; "send" is sends into receives the target keeps posted. Each run moves about
 * 256 MiB (at least 256 messages); each point is run 5 times. Prints one line per point:
 * operation, size, messages per run, then the median and the best run in MB/s (10^6 bytes) and
 * GB/s. The median is the figure to quote; the spread shows how busy the machine was.
 * Written against plain libibverbs; the figures are the fake's, not any hardware's.
 */
#include <infiniband/verbs.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DEPTH 128
#define MAX_SIZE (1u << 20)
#define TOTAL (256u << 20)

struct Info {
  uint32_t qpn;
  union ibv_gid gid;
  uint64_t addr;
  uint32_t rkey;
};

struct Command {
  int op; /* 0 write, 1 send, -1 stop */
  uint32_t size;
  uint32_t iters;
};

struct Side {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_qp* qp;
  struct ibv_mr* mr;
  unsigned char* buf;
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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

static int open_side(struct Side* s, const char* name) {
  int n, i;
  struct ibv_device** list = ibv_get_device_list(&n);
  struct ibv_qp_init_attr init;
  struct ibv_qp_attr a;
  if (!list) return -1;
  s->ctx = NULL;
  for (i = 0; i < n; ++i)
    if (strcmp(ibv_get_device_name(list[i]), name) == 0) s->ctx = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  if (!s->ctx) return -1;
  s->pd = ibv_alloc_pd(s->ctx);
  s->cq = ibv_create_cq(s->ctx, 2 * DEPTH, NULL, NULL, 0);
  s->buf = malloc(MAX_SIZE);
  if (!s->pd || !s->cq || !s->buf) return -1;
  memset(s->buf, 0x42, MAX_SIZE);
  s->mr = ibv_reg_mr(s->pd, s->buf, MAX_SIZE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!s->mr) return -1;
  memset(&init, 0, sizeof init);
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = DEPTH;
  init.cap.max_recv_wr = DEPTH;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.send_cq = s->cq;
  init.recv_cq = s->cq;
  s->qp = ibv_create_qp(s->pd, &init);
  if (!s->qp) return -1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  return ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int connect_qp(struct Side* s, const struct Info* peer, int gidx) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = peer->qpn;
  a.max_dest_rd_atomic = 16;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.grh.dgid = peer->gid;
  a.ah_attr.grh.sgid_index = (uint8_t)gidx;
  if (ibv_modify_qp(s->qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return -1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 16;
  return ibv_modify_qp(s->qp, &a,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post_recv(struct Side* s, uint32_t size) {
  struct ibv_sge sge = {(uintptr_t)s->buf, size, s->mr->lkey};
  struct ibv_recv_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return ibv_post_recv(s->qp, &wr, &bad);
}

/* The target's half of the connection: send its QP and region, take the initiator's QP. */
static int exchange(struct Side* s, const char* dev, int gidx, int out, int in) {
  struct Info mine, peer;
  char r;
  if (open_side(s, dev)) return -1;
  memset(&mine, 0, sizeof mine);
  mine.qpn = s->qp->qp_num;
  mine.addr = (uintptr_t)s->buf;
  mine.rkey = s->mr->rkey;
  if (ibv_query_gid(s->ctx, 1, gidx, &mine.gid)) return -1;
  if (write(out, &mine, sizeof mine) != (ssize_t)sizeof mine || full_read(in, &peer, sizeof peer)) return -1;
  if (connect_qp(s, &peer, gidx)) return -1;
  if (write(out, "r", 1) != 1 || full_read(in, &r, 1)) return -1;
  return 0;
}

static int target(const char* dev, int gidx, int out, int in) {
  struct Side s;
  struct Command c;
  char ok = 'd';
  if (exchange(&s, dev, gidx, out, in)) return 2;
  for (;;) {
    uint32_t posted = 0, done = 0;
    if (full_read(in, &c, sizeof c) || c.op < 0) break;
    if (c.op == 1) {
      /* ib_send_bw's server: keep receives posted, repost on each completion. */
      while (posted < c.iters && posted < DEPTH)
        if (post_recv(&s, c.size) == 0) ++posted;
      if (write(out, "r", 1) != 1) return 2;
      while (done < c.iters) {
        struct ibv_wc wc[16];
        int i, n = ibv_poll_cq(s.cq, 16, wc);
        for (i = 0; i < n; ++i) {
          if (wc[i].status != IBV_WC_SUCCESS) return 3;
          ++done;
          if (posted < c.iters && post_recv(&s, c.size) == 0) ++posted;
        }
      }
    } else {
      /* ib_write_bw's server: passive, no verb while the writes land. */
      if (write(out, "r", 1) != 1) return 2;
      if (full_read(in, &ok, 1)) return 2;
    }
    if (write(out, &ok, 1) != 1) return 2;
  }
  return 0;
}

#define REPS 5

/* One run: seconds, or a negative number on failure. */
static double run_once(struct Side* s, const struct Info* peer, int op, uint32_t size, int out, int in,
                       uint32_t* iters_out) {
  struct Command c;
  uint32_t iters = TOTAL / size, posted = 0, done = 0;
  double t0, t1;
  char r;
  if (iters < 256) iters = 256;
  if (iters > 65536) iters = 65536;
  c.op = op;
  c.size = size;
  c.iters = iters;
  *iters_out = iters;
  if (write(out, &c, sizeof c) != (ssize_t)sizeof c || full_read(in, &r, 1)) return -1;
  t0 = now_s();
  while (done < iters) {
    while (posted < iters && posted - done < DEPTH) {
      struct ibv_sge sge = {(uintptr_t)s->buf, size, s->mr->lkey};
      struct ibv_send_wr wr, *bad;
      memset(&wr, 0, sizeof wr);
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.opcode = op ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
      wr.wr.rdma.remote_addr = peer->addr;
      wr.wr.rdma.rkey = peer->rkey;
      if (ibv_post_send(s->qp, &wr, &bad)) return -1;
      ++posted;
    }
    {
      struct ibv_wc wc[16];
      int i, n = ibv_poll_cq(s->cq, 16, wc);
      if (n < 0) return -1;
      for (i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) {
          fprintf(stderr, "completion failed: %s\n", ibv_wc_status_str(wc[i].status));
          return -1;
        }
        ++done;
      }
    }
  }
  t1 = now_s();
  if (op == 0 && write(out, "d", 1) != 1) return -1;
  if (full_read(in, &r, 1)) return -1;
  return t1 - t0;
}

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static int run_point(struct Side* s, const struct Info* peer, int op, uint32_t size, int out, int in) {
  double secs[REPS], median, best;
  uint32_t iters = 0;
  int i;
  for (i = 0; i < REPS; ++i) {
    secs[i] = run_once(s, peer, op, size, out, in, &iters);
    if (secs[i] < 0) return -1;
  }
  qsort(secs, REPS, sizeof secs[0], cmp_double);
  median = (double)size * iters / secs[REPS / 2];
  best = (double)size * iters / secs[0];
  printf("%-5s %8u bytes  %6u messages  median %8.1f MB/s (%5.2f GB/s)  best %8.1f MB/s (%5.2f GB/s)\n",
         op ? "send" : "write", size, iters, median / 1e6, median / 1e9, best / 1e6, best / 1e9);
  return 0;
}

int main(int argc, char** argv) {
  const char* dev = argc > 1 ? argv[1] : "ds4_test0";
  int gidx = argc > 2 ? atoi(argv[2]) : 3;
  const char* sizes = argc > 3 ? argv[3] : "4096,65536,1048576";
  int to_init[2], to_target[2], status, op, rc = 0;
  struct Side s;
  struct Info peer;
  pid_t child;
  char r;
  setvbuf(stdout, NULL, _IONBF, 0);
  if (pipe(to_init) || pipe(to_target)) return 2;
  child = fork();
  if (child < 0) return 2;
  if (child == 0) _exit(target(dev, gidx, to_init[1], to_target[0]));
  if (open_side(&s, dev)) return 2;
  {
    struct Info mine;
    memset(&mine, 0, sizeof mine);
    mine.qpn = s.qp->qp_num;
    mine.addr = (uintptr_t)s.buf;
    mine.rkey = s.mr->rkey;
    if (ibv_query_gid(s.ctx, 1, gidx, &mine.gid)) return 2;
    if (full_read(to_init[0], &peer, sizeof peer) ||
        write(to_target[1], &mine, sizeof mine) != (ssize_t)sizeof mine)
      return 2;
  }
  if (connect_qp(&s, &peer, gidx) || full_read(to_init[0], &r, 1) || write(to_target[1], "r", 1) != 1)
    return 2;
  printf("fake libibverbs bandwidth, RC, %d outstanding, loopback between two processes\n", DEPTH);
  for (op = 0; op < 2 && rc == 0; ++op) {
    const char* p = sizes;
    while (*p && rc == 0) {
      uint32_t size = (uint32_t)strtoul(p, NULL, 10);
      if (size == 0 || size > MAX_SIZE) return 2;
      rc = run_point(&s, &peer, op, size, to_target[1], to_init[0]);
      p = strchr(p, ',');
      if (!p) break;
      ++p;
    }
  }
  {
    struct Command stop = {-1, 0, 0};
    if (write(to_target[1], &stop, sizeof stop) != (ssize_t)sizeof stop) rc = -1;
  }
  waitpid(child, &status, 0);
  return rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
