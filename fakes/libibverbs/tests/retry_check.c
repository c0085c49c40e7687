/* fakelib_retry: the RC retry and RNR budgets of the fake libibverbs.so.1, as hardware keeps
 * them. Written against plain libibverbs (run with LD_LIBRARY_PATH at the fake).
 *
 *   fakelib_retry <device> <gid_index> <mode> [err|reset|destroy]
 *
 * Modes (the peer is a forked process where it dies, a second QP of this process otherwise):
 *   killed_stopped  the peer is stopped, then sends, writes, reads and atomics are posted
 *                   (the transport takes some, the rest wait for room), then the peer is
 *                   killed: every request completes, the first with IBV_WC_RETRY_EXC_ERR, the
 *                   rest with IBV_WC_WR_FLUSH_ERR (timeout 14: ~0.54 s; waited for 30 s). Then
 *                   the program's struct ibv_qp still says RTS, a send posted is taken and
 *                   flushed, and ibv_query_qp(IBV_QP_STATE) says ERR and writes it there.
 *   killed_streaming  the peer is killed while 1 MiB writes, reads and sends stream: what
 *                   completed before succeeded, then one RETRY_EXC_ERR, then flushes.
 *   killed_in_rnr   the peer posts no receive: the first SEND is RNR-NAKed (rnr_retry 7, it
 *                   waits), the requests behind it wait too; nothing completes in 200 ms; then
 *                   the peer is killed: all complete, and the QP reads, as above.
 *   timeout0        timeout 0 (wait forever): one QP as killed_stopped, with more requests
 *                   posted after the peer died, another whose peer died before its first post:
 *                   nothing completes in 1.5 s; the QPs are then destroyed cleanly.
 *   rnr_budget      rnr_retry 2 against a min_rnr_timer of 1.28 ms: the SEND ends in
 *                   IBV_WC_RNR_RETRY_EXC_ERR no sooner than two timers, the WRITE behind it is
 *                   flushed and its data never lands, and a receive posted later stays empty.
 *   rnr_forever     rnr_retry 7: nothing completes in 500 ms without a receive; once it is
 *                   posted the SEND and the WRITE behind it complete, in order, and both land.
 *   abandon X       the RNR-NAKed SEND's requester is moved to ERR (X = err: both requests
 *                   flushed), to RESET, or destroyed; a receive posted afterwards stays empty
 *                   and the WRITE that was queued behind the SEND never lands.
 *   abandon_unread  as abandon destroy, but the responder has not read its socket when the
 *                   receive is posted: the process is pinned to one CPU and its main thread
 *                   runs SCHED_FIFO, so the fake's progress thread cannot run between the
 *                   SEND, the requester's destroy and the receive. An HCA NAKs a SEND the
 *                   moment it arrives; the receive posted after it stays empty. Exit 77 (skip)
 *                   where real-time scheduling or the affinity is refused.
 *   big_send        a 300 MiB SEND (more than the fake ever buffers) posted before its
 *                   receive: once the receive is posted both sides complete, the data intact.
 * Exit 0 when everything holds, 1 on a failed check, 2 on a setup failure.
 *
 * Time: a completion that is due is waited for up to RC_WAIT_S, a hang guard far above what an
 * idle machine needs. "Nothing completes" is watched for a window (200 ms to 3 s) opened after
 * whatever could wrongly complete was posted: a loaded machine can only make such a completion
 * come too late to be seen, never make a right run fail. The pauses before a kill or an abandon
 * (5-100 ms) only let traffic move meanwhile; the checks hold however much moved.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET, sched_getcpu */
#endif
#include "check.h"
#include "rc_side.h"

#include <sched.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define SMALL (64u * 1024)
#define RC_WAIT_S 30.0
#define BIG (300u << 20)
#define WRITE_OFF 8192u

struct peer_info {
  uint32_t qpn, rkey;
  uint64_t addr;
};

struct peer {
  pid_t pid;
  struct peer_info info;
};

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

/* A forked peer process: its own RC QP connected to `self`, `receives` receives posted, then it
 * waits to be stopped or killed. */
static int spawn_peer_sized(struct peer* p, struct ibv_device* dev, int index, struct rc_side* self,
                            const struct rc_attrs* at, int receives, size_t size) {
  int up[2], down[2];
  char ready = 0;
  if (pipe(up) || pipe(down)) return 2;
  p->pid = fork();
  if (p->pid < 0) return 2;
  if (p->pid == 0) {
    struct rc_side s;
    struct peer_info mine;
    uint32_t dest = 0;
    int i;
    close(up[0]);
    close(down[1]);
    if (rc_open(&s, dev, size, 32)) _exit(2);
    mine.qpn = s.qp->qp_num;
    mine.rkey = s.mr->rkey;
    mine.addr = (uintptr_t)s.buf;
    if (full_io(up[1], &mine, sizeof mine, 1) || full_io(down[0], &dest, sizeof dest, 0)) _exit(2);
    if (rc_connect(&s, dest, index, at)) _exit(2);
    for (i = 0; i < receives; ++i)
      if (rc_post_recv(&s, 100 + (uint64_t)i, 4096u * (unsigned)i, 4096)) _exit(2);
    ready = 1;
    if (full_io(up[1], &ready, 1, 1)) _exit(2);
    for (;;) pause();
  }
  close(up[1]);
  close(down[0]);
  if (full_io(up[0], &p->info, sizeof p->info, 0) || full_io(down[1], &self->qp->qp_num, 4, 1) ||
      rc_connect(self, p->info.qpn, index, at) || full_io(up[0], &ready, 1, 0))
    return 2;
  close(up[0]);
  close(down[1]);
  return 0;
}

/* Stopped for certain (SIGSTOP takes effect asynchronously). */
static int stop_peer(struct peer* p) {
  int status;
  kill(p->pid, SIGSTOP);
  return waitpid(p->pid, &status, WUNTRACED) == p->pid && WIFSTOPPED(status) ? 0 : 2;
}

static int spawn_peer(struct peer* p, struct ibv_device* dev, int index, struct rc_side* self,
                      const struct rc_attrs* at, int receives) {
  return spawn_peer_sized(p, dev, index, self, at, receives, SMALL);
}

static void kill_peer(struct peer* p) {
  int status;
  kill(p->pid, SIGKILL);
  waitpid(p->pid, &status, 0);
}

/* Post `rounds` each of SEND, RDMA WRITE, RDMA READ and an atomic, wr_id 1, 2, ... in order. */
static int post_mix(struct rc_side* s, const struct peer_info* to, int rounds, uint64_t* next_id) {
  int r;
  for (r = 0; r < rounds; ++r) {
    const size_t off = 4096u * (unsigned)(r % 4);
    if (rc_post(s, IBV_WR_SEND, (*next_id)++, off, 64, 0, 0) ||
        rc_post(s, IBV_WR_RDMA_WRITE, (*next_id)++, off, 4096, to->addr + WRITE_OFF, to->rkey) ||
        rc_post(s, IBV_WR_RDMA_READ, (*next_id)++, 16384 + off, 4096, to->addr + WRITE_OFF, to->rkey) ||
        rc_post(s, IBV_WR_ATOMIC_FETCH_AND_ADD, (*next_id)++, 32768 + 8u * (unsigned)r, 8, to->addr,
                to->rkey))
      return 1;
  }
  return 0;
}

/* `n` completions of requests posted with wr_id 1..n: the first fails with `first`, in post order
 * the others are flushed. */
static void check_failed_in_order(const struct ibv_wc* wc, int got, int n, enum ibv_wc_status first,
                                  double elapsed) {
  int i, flushed = 0, in_order = 1;
  CHECK(got == n, "all %d outstanding requests completed (%d) within %.2f s", n, got, elapsed);
  if (got < 1) return;
  CHECK(wc[0].status == first && wc[0].wr_id == 1, "the oldest request ended first, in %s (got %s, wr %llu)",
        ibv_wc_status_str(first), ibv_wc_status_str(wc[0].status), (unsigned long long)wc[0].wr_id);
  for (i = 1; i < got; ++i) {
    if (wc[i].status == IBV_WC_WR_FLUSH_ERR) ++flushed;
    if (wc[i].wr_id != (uint64_t)i + 1) in_order = 0;
  }
  CHECK(flushed == got - 1, "the %d later requests were flushed (%d)", got - 1, flushed);
  CHECK(in_order, "the completions came in post order");
}

/* The HCA moved the QP to the error state; the program's struct ibv_qp still says RTS, because
 * only ibv_modify_qp and ibv_query_qp write its `state` (rdma-core's wrappers, on success, with
 * IBV_QP_STATE in the mask). UCX asserts qp->state == IBV_QPS_RTS before every post and keeps
 * posting after an error completion until its endpoint is torn down: a fake that wrote ERR
 * there aborted UCX where hardware does not. A send posted now is taken (0, not EINVAL) and
 * flushed; ibv_query_qp says ERR, and from then on so does the struct. */
static void check_error_state_unseen(struct rc_side* a, uint64_t id) {
  struct ibv_qp_attr attr;
  struct ibv_qp_init_attr init;
  struct ibv_wc wc[1];
  int rc, got;
  CHECK(a->qp->state == IBV_QPS_RTS, "after the error completions the struct still says RTS (%d)",
        (int)a->qp->state);
  rc = rc_post(a, IBV_WR_SEND, id, 0, 64, 0, 0);
  CHECK(rc == 0, "a send posted to the broken QP is taken (%d)", rc);
  got = rc_poll_for(a->cq, wc, 1, RC_WAIT_S);
  CHECK(got == 1 && wc[0].status == IBV_WC_WR_FLUSH_ERR && wc[0].wr_id == id,
        "... and flushed (%d completions, %s)", got, got ? ibv_wc_status_str(wc[0].status) : "none");
  memset(&attr, 0, sizeof attr);
  CHECK(ibv_query_qp(a->qp, &attr, IBV_QP_PORT, &init) == 0 && a->qp->state == IBV_QPS_RTS,
        "ibv_query_qp without IBV_QP_STATE leaves the struct's state alone (%d)", (int)a->qp->state);
  CHECK(ibv_query_qp(a->qp, &attr, IBV_QP_STATE, &init) == 0 && attr.qp_state == IBV_QPS_ERR,
        "ibv_query_qp reports the error state (%d)", (int)attr.qp_state);
  CHECK(a->qp->state == IBV_QPS_ERR, "... and writes it to the struct (%d)", (int)a->qp->state);
}

static int killed(struct ibv_device* dev, int index, int in_rnr) {
  struct rc_side a;
  struct peer p;
  struct rc_attrs at = {14, 7, 7, 12};
  struct ibv_wc wc[64];
  uint64_t id = 1;
  double t0;
  int got;
  if (rc_open(&a, dev, SMALL, 32) || spawn_peer(&p, dev, index, &a, &at, in_rnr ? 0 : 4)) return 2;
  if (!in_rnr && stop_peer(&p)) return 2; /* nothing it takes is answered */
  if (post_mix(&a, &p.info, 4, &id)) return 2;
  if (in_rnr) {
    got = rc_poll_for(a.cq, wc, 1, 0.2);
    CHECK(got == 0, "behind an RNR-NAKed SEND (rnr_retry 7) nothing completes in 200 ms (%d)", got);
  } else {
    rc_sleep_ms(100);
  }
  kill_peer(&p);
  t0 = rc_now();
  got = rc_poll_for(a.cq, wc, (int)id - 1, RC_WAIT_S);
  check_failed_in_order(wc, got, (int)id - 1, IBV_WC_RETRY_EXC_ERR, rc_now() - t0);
  check_error_state_unseen(&a, id);
  rc_close(&a);
  return 0;
}

/* Killed while 1 MiB writes, reads and sends stream to and from it: what completed before the
 * kill succeeded, then one RETRY_EXC_ERR, then flushes. */
static int killed_streaming(struct ibv_device* dev, int index) {
  enum { MIB = 1 << 20, ROUNDS = 8 };
  struct rc_side a;
  struct peer p;
  struct rc_attrs at = {14, 7, 7, 12};
  struct ibv_wc wc[64];
  uint64_t id = 1;
  double t0;
  int r, got, i, ok = 0, bad_order = 0;
  if (rc_open(&a, dev, 2u * MIB, 32) || spawn_peer_sized(&p, dev, index, &a, &at, ROUNDS, 8u * MIB)) return 2;
  for (r = 0; r < ROUNDS; ++r)
    if (rc_post(&a, IBV_WR_RDMA_WRITE, id++, 0, MIB, p.info.addr + (uint64_t)r * MIB, p.info.rkey) ||
        rc_post(&a, IBV_WR_RDMA_READ, id++, MIB, MIB, p.info.addr + (uint64_t)r * MIB, p.info.rkey) ||
        rc_post(&a, IBV_WR_SEND, id++, 0, 4096, 0, 0))
      return 2;
  rc_sleep_ms(5); /* some of it moves meanwhile (how much depends on the machine's load) */
  kill_peer(&p);
  t0 = rc_now();
  got = rc_poll_for(a.cq, wc, (int)id - 1, RC_WAIT_S);
  while (ok < got && wc[ok].status == IBV_WC_SUCCESS) ++ok;
  for (i = ok + 1; i < got; ++i)
    if (wc[i].status != IBV_WC_WR_FLUSH_ERR) bad_order = 1;
  printf("%d of %d requests completed before the kill\n", ok, (int)id - 1);
  CHECK(got == (int)id - 1, "all %d requests completed (%d) within %.2f s", (int)id - 1, got, rc_now() - t0);
  CHECK(ok == got || wc[ok].status == IBV_WC_RETRY_EXC_ERR, "the first one after the kill ended in %s (%s)",
        ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), ok < got ? ibv_wc_status_str(wc[ok].status) : "none");
  CHECK(!bad_order, "every later one was flushed");
  rc_close(&a);
  return 0;
}

static int timeout0(struct ibv_device* dev, int index) {
  struct rc_side a, a2;
  struct peer p, p2;
  struct rc_attrs at = {0, 7, 7, 12};
  struct ibv_wc wc[64];
  uint64_t id = 1, id2 = 1;
  int got, got2;
  if (rc_open(&a, dev, SMALL, 32) || spawn_peer(&p, dev, index, &a, &at, 4) || rc_open(&a2, dev, SMALL, 32) ||
      spawn_peer(&p2, dev, index, &a2, &at, 4))
    return 2;
  /* A: requests the transport took, then the peer dies, then requests it cannot deliver. */
  if (stop_peer(&p) || post_mix(&a, &p.info, 2, &id)) return 2;
  rc_sleep_ms(50);
  kill_peer(&p);
  if (post_mix(&a, &p.info, 2, &id)) return 2;
  /* A2: the peer is gone before the first post: every request is lost at once. */
  kill_peer(&p2);
  if (post_mix(&a2, &p2.info, 4, &id2)) return 2;
  got = rc_poll_for(a.cq, wc, 1, 1.5);
  got2 = rc_poll_for(a2.cq, wc + 1, 1, 0.1);
  CHECK(got == 0, "timeout 0, the peer died with requests taken: none of %d completed in 1.5 s (%d; %s)",
        (int)id - 1, got, got ? ibv_wc_status_str(wc[0].status) : "-");
  CHECK(got2 == 0, "timeout 0, the peer died before the posts: none of %d completed (%d; %s)", (int)id2 - 1,
        got2, got2 ? ibv_wc_status_str(wc[1].status) : "-");
  CHECK(ibv_destroy_qp(a.qp) == 0 && ibv_destroy_qp(a2.qp) == 0,
        "the QPs with requests outstanding are destroyed cleanly");
  a.qp = a2.qp = NULL;
  rc_close(&a);
  rc_close(&a2);
  return 0;
}

/* Two QPs of this process: A requests, B responds without a receive at first. */
static int pair(struct rc_side* a, struct rc_side* b, struct ibv_device* dev, int index, size_t size,
                uint8_t rnr_retry, uint8_t min_rnr_timer) {
  struct rc_attrs at = {14, 7, rnr_retry, min_rnr_timer};
  if (rc_open(a, dev, size, 8) || rc_open(b, dev, size, 8)) return 2;
  if (rc_connect(a, b->qp->qp_num, index, &at) || rc_connect(b, a->qp->qp_num, index, &at)) return 2;
  memset(a->buf, 0xab, size);
  return 0;
}

static int untouched(const unsigned char* p, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i)
    if (p[i] != 0) return 0;
  return 1;
}

/* SEND (wr 1, 64 bytes) then RDMA WRITE (wr 2, 4 KiB at B's WRITE_OFF). */
static int send_then_write(struct rc_side* a, struct rc_side* b) {
  return rc_post(a, IBV_WR_SEND, 1, 0, 64, 0, 0) ||
         rc_post(a, IBV_WR_RDMA_WRITE, 2, 0, 4096, (uintptr_t)b->buf + WRITE_OFF, b->mr->rkey);
}

static int rnr_budget(struct ibv_device* dev, int index) {
  struct rc_side a, b;
  struct ibv_wc wc[4];
  double t0, elapsed;
  int got;
  if (pair(&a, &b, dev, index, SMALL, 2, 14)) return 2;
  /* The clock starts before the post: the progress thread may run the whole RNR exchange
   * before this thread gets its core back, and a lower bound from before the post holds
   * however long that takes. */
  t0 = rc_now();
  if (send_then_write(&a, &b)) return 2;
  got = rc_poll_for(a.cq, wc, 2, RC_WAIT_S);
  elapsed = rc_now() - t0;
  check_failed_in_order(wc, got, 2, IBV_WC_RNR_RETRY_EXC_ERR, elapsed);
  CHECK(elapsed >= 0.002, "two RNR retries of 1.28 ms were waited for (%.2f ms)", elapsed * 1e3);
  if (rc_post_recv(&b, 9, 0, 4096)) return 2;
  got = rc_poll_for(b.cq, wc, 1, 0.3);
  CHECK(got == 0, "the abandoned SEND never reaches the receive posted later (%d)", got);
  CHECK(untouched(b.buf + WRITE_OFF, 4096), "the flushed WRITE's data never landed");
  rc_close(&a);
  rc_close(&b);
  return 0;
}

static int rnr_forever(struct ibv_device* dev, int index) {
  struct rc_side a, b;
  struct ibv_wc wc[4];
  int got;
  if (pair(&a, &b, dev, index, SMALL, 7, 12) || send_then_write(&a, &b)) return 2;
  got = rc_poll_for(a.cq, wc, 1, 0.5);
  CHECK(got == 0, "rnr_retry 7: nothing completes without a receive in 500 ms (%d)", got);
  CHECK(untouched(b.buf + WRITE_OFF, 4096), "the WRITE behind the waiting SEND has not landed before it");
  if (rc_post_recv(&b, 9, 0, 4096)) return 2;
  got = rc_poll_for(a.cq, wc, 2, RC_WAIT_S);
  CHECK(got == 2 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 1 && wc[1].status == IBV_WC_SUCCESS &&
            wc[1].wr_id == 2,
        "once the receive is posted the SEND and then the WRITE complete (%d)", got);
  got = rc_poll_for(b.cq, wc, 1, RC_WAIT_S);
  CHECK(got == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].byte_len == 64 && b.buf[0] == 0xab,
        "the receive holds the SEND's 64 bytes");
  CHECK(b.buf[WRITE_OFF] == 0xab && b.buf[WRITE_OFF + 4095] == 0xab, "the WRITE landed");
  rc_close(&a);
  rc_close(&b);
  return 0;
}

static int abandon(struct ibv_device* dev, int index, const char* how) {
  struct rc_side a, b;
  struct ibv_wc wc[4];
  struct ibv_qp_attr attr;
  int got;
  if (pair(&a, &b, dev, index, SMALL, 7, 12) || send_then_write(&a, &b)) return 2;
  rc_sleep_ms(100); /* NAKed and sent again several times meanwhile */
  memset(&attr, 0, sizeof attr);
  if (strcmp(how, "err") == 0) {
    attr.qp_state = IBV_QPS_ERR;
    if (ibv_modify_qp(a.qp, &attr, IBV_QP_STATE)) return 2;
    got = rc_poll_for(a.cq, wc, 2, RC_WAIT_S);
    CHECK(got == 2 && wc[0].status == IBV_WC_WR_FLUSH_ERR && wc[1].status == IBV_WC_WR_FLUSH_ERR,
          "moved to ERR, both requests are flushed (%d)", got);
  } else if (strcmp(how, "reset") == 0) {
    attr.qp_state = IBV_QPS_RESET;
    if (ibv_modify_qp(a.qp, &attr, IBV_QP_STATE)) return 2;
  } else {
    if (ibv_destroy_qp(a.qp)) return 2;
    a.qp = NULL;
  }
  if (rc_post_recv(&b, 9, 0, 4096)) return 2;
  got = rc_poll_for(b.cq, wc, 1, 0.3);
  CHECK(got == 0, "after the requester's %s, the receive posted later stays empty (%d)", how, got);
  CHECK(untouched(b.buf, 64), "no byte of the abandoned SEND arrived");
  CHECK(untouched(b.buf + WRITE_OFF, 4096), "no byte of the WRITE queued behind it arrived");
  rc_close(&a);
  rc_close(&b);
  return 0;
}

static int abandon_unread(struct ibv_device* dev, int index) {
  struct rc_side a, b;
  struct ibv_wc wc[4];
  struct sched_param fifo = {1}, normal = {0};
  cpu_set_t one;
  int got, cpu = sched_getcpu();
  CPU_ZERO(&one);
  CPU_SET((size_t)(cpu < 0 ? 0 : cpu), &one);
  /* Before the first QP starts the fake's progress thread, so the thread inherits the CPU. */
  if (sched_setaffinity(0, sizeof one, &one)) {
    perror("skipped: sched_setaffinity");
    return 77;
  }
  if (pair(&a, &b, dev, index, SMALL, 7, 12)) return 2;
  if (sched_setscheduler(0, SCHED_FIFO, &fifo)) {
    perror("skipped: SCHED_FIFO refused");
    rc_close(&a);
    rc_close(&b);
    return 77;
  }
  /* From here to the receive the progress thread (SCHED_OTHER, same CPU) cannot run: nothing
   * below blocks. The SEND goes out and sits unread in B's socket, no NAK yet. */
  got = rc_post(&a, IBV_WR_SEND, 1, 0, 64, 0, 0) || ibv_destroy_qp(a.qp);
  a.qp = NULL;
  got = got || rc_post_recv(&b, 9, 0, 4096);
  sched_setscheduler(0, SCHED_OTHER, &normal);
  if (got) return 2;
  got = rc_poll_for(b.cq, wc, 1, 0.3);
  CHECK(got == 0, "a SEND that arrived before its receive was posted never lands in it (%d)", got);
  CHECK(untouched(b.buf, 64), "no byte of the SEND arrived");
  rc_close(&a);
  rc_close(&b);
  return 0;
}

static int big_send(struct ibv_device* dev, int index) {
  struct rc_side a, b;
  struct ibv_wc wc[2];
  int got;
  size_t i;
  if (pair(&a, &b, dev, index, BIG, 7, 12)) return 2;
  for (i = 0; i < BIG; i += 4096) a.buf[i] = (unsigned char)(i >> 12);
  if (rc_post(&a, IBV_WR_SEND, 1, 0, BIG, 0, 0)) return 2;
  /* Long enough for the requester to have sent it all (and more than the fake would buffer). */
  got = rc_poll_for(a.cq, wc, 1, 3.0);
  CHECK(got == 0, "the %u MiB SEND waits for its receive for 3 s (%d)", BIG >> 20, got);
  if (rc_post_recv(&b, 9, 0, BIG)) return 2;
  got = rc_poll_for(b.cq, wc, 1, 60.0);
  CHECK(got == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].byte_len == BIG,
        "the receive posted later completes with all %u bytes", BIG);
  got = rc_poll_for(a.cq, wc, 1, RC_WAIT_S);
  CHECK(got == 1 && wc[0].status == IBV_WC_SUCCESS, "the SEND completes at the requester");
  for (i = 0; i < BIG; i += 4096)
    if (b.buf[i] != (unsigned char)(i >> 12)) break;
  CHECK(i >= BIG, "the data arrived intact (first difference at %zu)", i);
  rc_close(&a);
  rc_close(&b);
  return 0;
}

int main(int argc, char** argv) {
  struct ibv_device* dev;
  int index, setup;
  const char* mode;
  if (argc < 4) {
    fprintf(stderr, "usage: %s <device> <gid_index> <mode> [err|reset|destroy]\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  index = atoi(argv[2]);
  mode = argv[3];
  if (!(dev = rc_find_device(argv[1]))) return 2;
  if (strcmp(mode, "killed_stopped") == 0)
    setup = killed(dev, index, 0);
  else if (strcmp(mode, "killed_in_rnr") == 0)
    setup = killed(dev, index, 1);
  else if (strcmp(mode, "killed_streaming") == 0)
    setup = killed_streaming(dev, index);
  else if (strcmp(mode, "timeout0") == 0)
    setup = timeout0(dev, index);
  else if (strcmp(mode, "rnr_budget") == 0)
    setup = rnr_budget(dev, index);
  else if (strcmp(mode, "rnr_forever") == 0)
    setup = rnr_forever(dev, index);
  else if (strcmp(mode, "abandon") == 0 && argc == 5)
    setup = abandon(dev, index, argv[4]);
  else if (strcmp(mode, "abandon_unread") == 0)
    setup = abandon_unread(dev, index);
  else if (strcmp(mode, "big_send") == 0)
    setup = big_send(dev, index);
  else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  rc_free_devices();
  if (setup == 77) return 77;
  if (setup) {
    fprintf(stderr, "setup failed\n");
    return 2;
  }
  return failures ? 1 : 0;
}
