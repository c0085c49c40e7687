/* fakelib_mr_lifetime: a region deregistered (or unmapped) in the middle of a transfer. After
 * ibv_dereg_mr returns the HCA never touches that memory again, and the transfer ends in the
 * status hardware gives; memory the program unmapped while it was registered never crashes the
 * fake's progress thread on either side.
 * Written against plain libibverbs (run it with LD_LIBRARY_PATH pointing at the fake).
 *
 *   fakelib_mr_lifetime <device> <gid_index> <scenario>
 *
 * Two processes, one RC QP each, a 64 MiB transfer between 64 MiB mmap'd regions.
 *   write_dereg, write_munmap         the RDMA write's target region goes: REMOTE ACCESS ERROR
 *   send_dereg, send_munmap           the receive buffer's region goes: the receive completes in
 *                                     LOCAL PROTECTION ERROR, the sender gets REMOTE OPERATION
 *                                     ERROR (the responder's own memory failed it)
 *   read_dereg, read_munmap           the RDMA read's source region goes: REMOTE ACCESS ERROR
 *   read_sink_dereg, read_sink_munmap the read's local buffer goes: LOCAL PROTECTION ERROR
 *   send_source_dereg, _munmap        the send's local buffer goes: LOCAL PROTECTION ERROR
 * The process whose region goes (the parent) acts while the other is stopped (SIGSTOP) right
 * after the first bytes landed. Then: after a dereg, nothing lands in the region (it equals its
 * state when ibv_dereg_mr returned); nothing read after it arrives (the last half of the
 * receiving buffer keeps its canary); both processes survive (a child killed by a signal fails
 * the test).
 * "Right after" is up to the scheduler: on a loaded machine the process that saw the first bytes
 * may wait tens of milliseconds for a core while the transfer runs on, past the half the checks
 * rely on. So the parent measures, while the other side is stopped, how much of the receiving
 * buffer had landed (its own, or the child's through process_vm_readv): more than a quarter makes
 * that attempt inconclusive, not failed, and a fresh pair of processes tries again (at most
 * kAttempts). Everything still in flight then is at most a few MiB (the sender's socket buffer
 * and the receiver's datagram queue), far less than the quarter of margin the checks keep.
 * When every attempt is inconclusive the machine never let the scenario happen: nothing was
 * judged, so the run is skipped (exit 77), not failed - how busy the machine was is no verdict
 * on the fake.
 * Exit 0 when every check passes, 1 otherwise, 2 on a setup failure, 77 when no attempt counted.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include <infiniband/verbs.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define LEN ((size_t)64 << 20)
#define CANARY 0xcc
#define DATA 0x11
#define kAttempts 8
/* An attempt whose action came after more than this much had landed proves nothing. */
#define kLateBytes (LEN / 4)
/* The exit status of such an attempt. */
#define kInconclusive 3

struct Info {
  uint32_t qpn;
  uint32_t rkey;
  uint64_t addr;
  union ibv_gid gid;
};

struct Side {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_qp* qp;
  struct ibv_mr* mr;
  unsigned char* buf;
};

static int open_side(struct Side* s, const char* name, int fill) {
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
  s->cq = ibv_create_cq(s->ctx, 16, NULL, NULL, 0);
  s->buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (!s->pd || !s->cq || s->buf == MAP_FAILED) return -1;
  memset(s->buf, fill, LEN);
  s->mr = ibv_reg_mr(s->pd, s->buf, LEN,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (!s->mr) return -1;
  memset(&init, 0, sizeof init);
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.send_cq = s->cq;
  init.recv_cq = s->cq;
  s->qp = ibv_create_qp(s->pd, &init);
  if (!s->qp) return -1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  return ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int connect_qp(struct ibv_qp* qp, const struct Info* peer, int gidx) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = peer->qpn;
  a.rq_psn = 7;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.grh.dgid = peer->gid;
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

/* The next completion, or -1 after 60 s (the suite may load both cores). */
static int wait_wc(struct ibv_cq* cq, struct ibv_wc* wc) {
  time_t end = time(NULL) + 60;
  while (time(NULL) < end) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n < 0) return -1;
    if (n > 0) return 0;
  }
  return -1;
}

/* Until the first byte of `p` is no longer the canary (the transfer has begun). */
static int wait_landed(const volatile unsigned char* p) {
  time_t end = time(NULL) + 60;
  while (*p == CANARY)
    if (time(NULL) >= end) return -1;
  return 0;
}

static int untouched(const unsigned char* p, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i)
    if (p[i] != CANARY) return 0;
  return 1;
}

static const char* status_name(enum ibv_wc_status s) { return ibv_wc_status_str(s); }

/* How many bytes from the start of `pid`'s buffer at `addr` are no longer the canary: data lands
 * in order, so that is how far the transfer had got. -1 when the memory cannot be read. */
static long long landed_prefix(pid_t pid, uint64_t addr) {
  static unsigned char chunk[1 << 20];
  size_t done = 0;
  while (done < LEN) {
    struct iovec local = {chunk, sizeof chunk};
    struct iovec remote = {(void*)(uintptr_t)(addr + done), sizeof chunk};
    size_t i;
    const ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n <= 0) return -1;
    for (i = 0; i < (size_t)n; ++i)
      if (chunk[i] == CANARY) return (long long)(done + i);
    done += (size_t)n;
  }
  return (long long)LEN;
}

/* One attempt: a fresh pair of processes runs the scenario. Returns the exit status main gives
 * (0, 1, 2), or kInconclusive when the action came too late to show anything. */
static int attempt(const char* device, int gidx, const char* sc) {
  int to_parent[2], to_child[2], status = 0;
  int op_write, op_send, op_read, requester_acts, by_munmap, parent_is_requester, parent_receives;
  enum ibv_wc_status want;
  struct Side s;
  struct Info mine, peer;
  struct ibv_wc wc;
  unsigned char* snapshot = NULL;
  pid_t child;
  char token;
  op_write = strncmp(sc, "write_", 6) == 0;
  op_send = strncmp(sc, "send_", 5) == 0;
  op_read = strncmp(sc, "read_", 5) == 0;
  requester_acts = strncmp(sc, "read_sink_", 10) == 0 || strncmp(sc, "send_source_", 12) == 0;
  by_munmap = strstr(sc, "_munmap") != NULL;
  if (!(op_write || op_send || op_read) || (!by_munmap && !strstr(sc, "_dereg"))) {
    fprintf(stderr, "unknown scenario %s\n", sc);
    return 2;
  }
  /* The parent is the side whose region goes; the data lands at the responder of a write or a
   * send, at the requester of a read. */
  parent_is_requester = requester_acts;
  parent_receives = op_read ? parent_is_requester : !parent_is_requester;
  if (requester_acts)
    want = IBV_WC_LOC_PROT_ERR;
  else
    want = op_send ? IBV_WC_REM_OP_ERR : IBV_WC_REM_ACCESS_ERR;
  if (pipe(to_parent) || pipe(to_child)) return 2;
  child = fork();
  if (child < 0) return 2;
  alarm(150);
  {
    const int is_parent = child != 0;
    const int requester = is_parent ? parent_is_requester : !parent_is_requester;
    const int receives = is_parent ? parent_receives : !parent_receives;
    const int rd = is_parent ? to_parent[0] : to_child[0], wr = is_parent ? to_child[1] : to_parent[1];
    const char* who = is_parent ? "parent" : "child";
    if (open_side(&s, device, receives ? CANARY : DATA)) return 2;
    memset(&mine, 0, sizeof mine);
    mine.qpn = s.qp->qp_num;
    mine.rkey = s.mr->rkey;
    mine.addr = (uintptr_t)s.buf;
    if (ibv_query_gid(s.ctx, 1, gidx, &mine.gid)) return 2;
    if (write(wr, &mine, sizeof mine) != (ssize_t)sizeof mine || full_read(rd, &peer, sizeof peer)) return 2;
    if (op_send && !requester) {
      struct ibv_sge sge = {(uintptr_t)s.buf, (uint32_t)LEN, s.mr->lkey};
      struct ibv_recv_wr rwr, *bad;
      memset(&rwr, 0, sizeof rwr);
      rwr.wr_id = 2;
      rwr.sg_list = &sge;
      rwr.num_sge = 1;
      if (ibv_post_recv(s.qp, &rwr, &bad)) return 2;
    }
    if (connect_qp(s.qp, &peer, gidx)) return 2;
    token = 'c';
    if (write(wr, &token, 1) != 1 || full_read(rd, &token, 1)) return 2;
    if (requester) {
      struct ibv_sge sge = {(uintptr_t)s.buf, (uint32_t)LEN, s.mr->lkey};
      struct ibv_send_wr swr, *bad;
      memset(&swr, 0, sizeof swr);
      swr.wr_id = 1;
      swr.sg_list = &sge;
      swr.num_sge = 1;
      swr.opcode = op_write ? IBV_WR_RDMA_WRITE : op_read ? IBV_WR_RDMA_READ : IBV_WR_SEND;
      swr.send_flags = IBV_SEND_SIGNALED;
      swr.wr.rdma.remote_addr = peer.addr;
      swr.wr.rdma.rkey = peer.rkey;
      if (ibv_post_send(s.qp, &swr, &bad)) {
        printf("FAILED: %s: post_send: %s\n", who, strerror(errno));
        return 1;
      }
    }

    if (!is_parent) {
      /* The child stops itself once the data started landing in its memory; otherwise the
       * parent stops it. Either way the parent acts while it is stopped. */
      if (receives) {
        if (wait_landed(s.buf)) {
          printf("FAILED: child: no data landed\n");
          return 1;
        }
        raise(SIGSTOP);
      }
      if (requester) {
        if (wait_wc(s.cq, &wc)) {
          printf("FAILED: child: no completion for the transfer\n");
          return 1;
        }
        CHECK(wc.status == want, "child: the transfer ended in %s (%s)", status_name(want),
              status_name(wc.status));
        if (write(wr, "d", 1) != 1) return 2;
      } else if (full_read(rd, &token, 1)) {
        return 2; /* the parent says its request has ended */
      }
      if (receives)
        CHECK(untouched(s.buf + LEN / 2, LEN / 2),
              "child: nothing read after the region went arrived (the last 32 MiB keep their canary)");
      return failures ? 1 : 0;
    }

    /* Parent: stop the child in the middle of the transfer, then act. */
    if (receives) {
      if (wait_landed(s.buf)) {
        printf("FAILED: parent: no data landed\n");
        kill(child, SIGKILL);
        return 1;
      }
      kill(child, SIGSTOP);
    }
    if (waitpid(child, &status, WUNTRACED) != child || !WIFSTOPPED(status)) {
      printf("FAILED: parent: the child did not stop (status %#x)\n", status);
      return 1;
    }
    {
      /* The child is stopped and only a process's own threads write its memory, so this is how
       * far the transfer got, give or take what is still in flight. */
      const long long landed =
          receives ? landed_prefix(getpid(), (uintptr_t)s.buf) : landed_prefix(child, peer.addr);
      if (landed < 0) {
        printf("FAILED: parent: cannot read the receiving buffer (process_vm_readv: %s)\n", strerror(errno));
        kill(child, SIGKILL);
        return 2;
      }
      if (landed > (long long)kLateBytes) {
        printf(
            "inconclusive: the action came after %lld of %zu MiB had landed (the process that saw the first "
            "bytes waited for a core)\n",
            landed >> 20, LEN >> 20);
        kill(child, SIGKILL);
        (void)waitpid(child, &status, 0);
        return kInconclusive;
      }
      CHECK(1, "parent: acts after %lld KiB of %zu MiB had landed", landed >> 10, LEN >> 20);
    }
    if (by_munmap) {
      CHECK(munmap(s.buf, LEN) == 0, "parent: unmapped its registered region mid-transfer");
    } else {
      CHECK(ibv_dereg_mr(s.mr) == 0, "parent: deregistered its region mid-transfer");
      if (receives) {
        snapshot = malloc(LEN);
        if (!snapshot) return 2;
        memcpy(snapshot, s.buf, LEN);
      }
    }
    kill(child, SIGCONT);
    if (requester) {
      if (wait_wc(s.cq, &wc))
        CHECK(0, "parent: a completion for the transfer");
      else
        CHECK(wc.status == want, "parent: the transfer ended in %s (%s)", status_name(want),
              status_name(wc.status));
      if (write(wr, "d", 1) != 1) return 2;
    } else {
      if (full_read(rd, &token, 1)) CHECK(0, "parent: the child reported its completion");
      if (op_send) {
        if (wait_wc(s.cq, &wc))
          CHECK(0, "parent: a completion for the receive");
        else
          CHECK(wc.status == IBV_WC_LOC_PROT_ERR && wc.wr_id == 2, "parent: the receive ended in %s (%s)",
                status_name(IBV_WC_LOC_PROT_ERR), status_name(wc.status));
      }
    }
    if (waitpid(child, &status, 0) != child) return 2;
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: survived and its checks passed (status %#x)",
          status);
    if (snapshot) {
      usleep(100 * 1000); /* anything still in flight has had time to land */
      {
        struct ibv_wc extra;
        (void)ibv_poll_cq(s.cq, 1, &extra); /* drive the data path from this thread too */
      }
      CHECK(memcmp(snapshot, s.buf, LEN) == 0, "parent: nothing landed after ibv_dereg_mr returned");
      CHECK(!untouched(s.buf, 1) && untouched(s.buf + LEN / 2, LEN / 2),
            "parent: the region holds the first bytes and the canary behind them");
      free(snapshot);
    }
    CHECK(1, "parent: survived");
    if (failures == 0) printf("region lifetime checks passed\n");
    return failures ? 1 : 0;
  }
}

int main(int argc, char** argv) {
  int k;
  if (argc != 4) {
    fprintf(stderr, "usage: %s <device> <gid_index> <scenario>\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IONBF, 0);
  for (k = 1; k <= kAttempts; ++k) {
    int status = 0;
    const pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0)
      exit(attempt(argv[1], atoi(argv[2]), argv[3])); /* exit, not _exit: the fake cleans up at exit */
    if (waitpid(pid, &status, 0) != pid) return 2;
    if (!WIFEXITED(status)) {
      printf("FAILED: attempt %d died (status %#x)\n", k, status);
      return 1;
    }
    if (WEXITSTATUS(status) != kInconclusive) return WEXITSTATUS(status);
    printf("attempt %d of %d was inconclusive; again\n", k, kAttempts);
  }
  printf(
      "SKIPPED: in %d attempts the action never came before a quarter of the transfer had landed "
      "(the machine is too busy for this scenario; nothing was judged)\n",
      kAttempts);
  return 77;
}
