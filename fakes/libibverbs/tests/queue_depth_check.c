/* fakelib_queue_depth: work queues and CQs hold what their depth says, as an HCA's rings do.
 *
 *   fakelib_queue_depth <device> <index>
 *
 * Two RC QPs of one process, A -> B, connected from the GID at <index>.
 * 1. A's send queue is 4 deep: a chain of 6 signaled sends posts 4 and fails the 5th with
 *    ENOMEM (*bad_wr = the 5th); a million more posts, nothing polled, all fail (nothing grows);
 *    once the 4 completions are polled, the queue takes 4 again.
 * 2. Unsignaled sends hold their slots until a later signaled one is polled: 4 unsignaled sends
 *    fill the queue for good; the 5th fails with ENOMEM even after they have all arrived.
 * 3. B's receive queue is 4 deep: a receive consumed by a message keeps its slot until its
 *    completion is polled.
 * 4. An SRQ of max_wr 2 takes 2 receives, the 3rd is ENOMEM; a receive a QP of the SRQ consumed
 *    keeps its slot until its completion is polled.
 * 5. A CQ of 2 entries that gets 3 completions overruns: IBV_EVENT_CQ_ERR arrives on the
 *    context's async fd with element.cq = that CQ, the QP using it moves to the error state,
 *    and polling it returns at most 2 completions.
 * Exit 0 when all hold, 1 otherwise, 2 on a setup failure.
 */
#include "check.h"
#include "qp_pair.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>

#define BUF 64

static struct ibv_context* ctx;
static struct ibv_pd* pd;
static struct ibv_mr* mr;
static char buf[BUF * 16];

static void send_wr(struct ibv_send_wr* wr, struct ibv_sge* sge, uint64_t id, int signaled) {
  memset(wr, 0, sizeof *wr);
  sge->addr = (uintptr_t)buf;
  sge->length = 8;
  sge->lkey = mr->lkey;
  wr->wr_id = id;
  wr->sg_list = sge;
  wr->num_sge = 1;
  wr->opcode = IBV_WR_SEND;
  wr->send_flags = signaled ? IBV_SEND_SIGNALED : 0;
}

static int post_recv(struct ibv_qp* qp, uint64_t id) {
  struct ibv_sge sge = {(uintptr_t)(buf + BUF), BUF, mr->lkey};
  struct ibv_recv_wr wr, *bad = NULL;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return ibv_post_recv(qp, &wr, &bad);
}

struct pair {
  struct ibv_cq *scq, *rcq;
  struct ibv_qp *a, *b;
};

static int make_pair(struct pair* p, int send_cqe, uint8_t index) {
  p->scq = ibv_create_cq(ctx, send_cqe, NULL, NULL, 0);
  p->rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
  if (!p->scq || !p->rcq) return 1;
  p->a = pair_qp(pd, IBV_QPT_RC, p->scq, p->rcq, 4, 4);
  p->b = pair_qp(pd, IBV_QPT_RC, p->rcq, p->rcq, 4, 4);
  if (!p->a || !p->b || pair_init(p->a) || pair_init(p->b)) return 1;
  return pair_connect(ctx, p->a, p->b->qp_num, index) || pair_connect(ctx, p->b, p->a->qp_num, index);
}

static void free_pair(struct pair* p) {
  ibv_destroy_qp(p->a);
  ibv_destroy_qp(p->b);
  ibv_destroy_cq(p->scq);
  ibv_destroy_cq(p->rcq);
}

/* Post receives on B and poll them back after they are consumed. */
static int refill(struct ibv_qp* b, int n) {
  for (int i = 0; i < n; ++i)
    if (post_recv(b, 100 + (uint64_t)i)) return 1;
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <device> <index>\n", argv[0]);
    return 2;
  }
  const uint8_t index = (uint8_t)atoi(argv[2]);
  ctx = pair_open(argv[1]);
  if (!ctx || !(pd = ibv_alloc_pd(ctx))) return 2;
  mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  struct pair p;
  if (!mr || make_pair(&p, 64, index) || refill(p.b, 4)) {
    fprintf(stderr, "setup failed\n");
    return 2;
  }

  /* 1. A chain of 6 on a 4-deep send queue. */
  struct ibv_send_wr wrs[6], *bad = NULL;
  struct ibv_sge sges[6];
  for (int i = 0; i < 6; ++i) {
    send_wr(&wrs[i], &sges[i], (uint64_t)i, 1);
    wrs[i].next = i < 5 ? &wrs[i + 1] : NULL;
  }
  int rc = ibv_post_send(p.a, wrs, &bad);
  CHECK(rc == ENOMEM && bad == &wrs[4],
        "a chain of 6 on a 4-deep send queue: ENOMEM at the 5th (rc %d, bad_wr #%d)", rc,
        bad ? (int)(bad - wrs) : -1);
  long taken = 0;
  for (long i = 0; i < 1000000; ++i) {
    struct ibv_send_wr w;
    struct ibv_sge s;
    send_wr(&w, &s, 1000, 1);
    if (ibv_post_send(p.a, &w, &bad) == 0) ++taken;
  }
  CHECK(taken == 0, "a million posts on the full queue, nothing polled: %ld taken (want 0)", taken);
  struct ibv_wc wc[8];
  int got = pair_poll(p.scq, 4, PAIR_WAIT_S, wc);
  CHECK(got == 4 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 0 && wc[3].wr_id == 3,
        "the 4 posted sends complete in order (%d)", got);
  CHECK(pair_poll(p.rcq, 4, PAIR_WAIT_S, wc) == 4, "B received the 4 messages");
  /* 3. B's receive queue: consumed but unpolled receives keep their slots. */
  if (refill(p.b, 4)) return 2;
  struct ibv_send_wr w;
  struct ibv_sge s;
  send_wr(&w, &s, 7, 1);
  rc = ibv_post_send(p.a, &w, &bad);
  CHECK(rc == 0, "after polling the 4 completions the send queue takes work again (rc %d)", rc);
  CHECK(pair_poll(p.scq, 1, PAIR_WAIT_S, wc) == 1, "send 7 completes");
  rc = post_recv(p.b, 200);
  CHECK(rc == ENOMEM, "B: 3 posted + 1 consumed, unpolled, on a 4-deep receive queue: ENOMEM (rc %d)", rc);
  CHECK(pair_poll(p.rcq, 1, PAIR_WAIT_S, wc) == 1, "B polls the receive of send 7");
  rc = post_recv(p.b, 201);
  CHECK(rc == 0, "after polling it the receive queue takes one again (rc %d)", rc);

  /* 2. Unsignaled sends: the slots stay taken until a signaled completion is polled. */
  for (int i = 0; i < 4; ++i) {
    send_wr(&w, &s, 300 + (uint64_t)i, 0);
    if (ibv_post_send(p.a, &w, &bad)) return 2;
  }
  CHECK(pair_poll(p.rcq, 4, PAIR_WAIT_S, wc) == 4, "B received the 4 unsignaled sends");
  send_wr(&w, &s, 304, 1);
  rc = ibv_post_send(p.a, &w, &bad);
  CHECK(rc == ENOMEM && bad == &w, "4 unsignaled sends delivered, none polled: the 5th is ENOMEM (rc %d)",
        rc);
  free_pair(&p);

  /* 4. SRQ depth. */
  struct ibv_srq_init_attr sa;
  memset(&sa, 0, sizeof sa);
  sa.attr.max_wr = 2;
  sa.attr.max_sge = 1;
  struct ibv_srq* srq = ibv_create_srq(pd, &sa);
  if (!srq) return 2;
  struct ibv_sge rs = {(uintptr_t)buf, BUF, mr->lkey};
  struct ibv_recv_wr rw[3], *rbad = NULL;
  memset(rw, 0, sizeof rw);
  for (int i = 0; i < 3; ++i) {
    rw[i].wr_id = (uint64_t)i;
    rw[i].sg_list = &rs;
    rw[i].num_sge = 1;
    rw[i].next = i < 2 ? &rw[i + 1] : NULL;
  }
  rc = ibv_post_srq_recv(srq, rw, &rbad);
  CHECK(rc == ENOMEM && rbad == &rw[2], "3 receives on an SRQ of max_wr 2: ENOMEM at the 3rd (rc %d)", rc);
  /* A receive an SRQ QP consumed keeps its SRQ slot until its completion is polled. */
  struct ibv_cq* scq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  struct ibv_cq* rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  struct ibv_qp_init_attr ia;
  memset(&ia, 0, sizeof ia);
  ia.send_cq = scq;
  ia.recv_cq = rcq;
  ia.srq = srq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = 4;
  ia.cap.max_send_sge = 1;
  struct ibv_qp* sb = ibv_create_qp(pd, &ia);
  struct ibv_qp* sa_qp = pair_qp(pd, IBV_QPT_RC, scq, scq, 4, 4);
  if (!scq || !rcq || !sb || !sa_qp || pair_init(sa_qp) || pair_init(sb) ||
      pair_connect(ctx, sa_qp, sb->qp_num, index) || pair_connect(ctx, sb, sa_qp->qp_num, index))
    return 2;
  send_wr(&w, &s, 500, 1);
  if (ibv_post_send(sa_qp, &w, &bad)) return 2;
  CHECK(pair_poll(scq, 1, PAIR_WAIT_S, wc) == 1 && wc[0].status == IBV_WC_SUCCESS,
        "a send to the SRQ QP completes");
  rw[0].next = NULL;
  rc = ibv_post_srq_recv(srq, rw, &rbad);
  CHECK(rc == ENOMEM, "SRQ: 1 posted + 1 consumed, unpolled, of max_wr 2: ENOMEM (rc %d)", rc);
  CHECK(pair_poll(rcq, 1, PAIR_WAIT_S, wc) == 1, "the SRQ receive is polled");
  rc = ibv_post_srq_recv(srq, rw, &rbad);
  CHECK(rc == 0, "then the SRQ takes one again (rc %d)", rc);
  ibv_destroy_qp(sb);
  ibv_destroy_qp(sa_qp);
  ibv_destroy_cq(scq);
  ibv_destroy_cq(rcq);
  ibv_destroy_srq(srq);

  /* 5. CQ overrun: A's send CQ has 2 entries, A's send queue 4. */
  if (make_pair(&p, 2, index) || refill(p.b, 4)) return 2;
  for (int i = 0; i < 3; ++i) {
    send_wr(&w, &s, 400 + (uint64_t)i, 1);
    if (ibv_post_send(p.a, &w, &bad)) return 2;
  }
  CHECK(pair_poll(p.rcq, 3, PAIR_WAIT_S, wc) == 3, "B received the 3 messages");
  const int fl = fcntl(ctx->async_fd, F_GETFL);
  fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
  struct ibv_async_event ev;
  int have = 0;
  const double end = pair_now_s() + PAIR_WAIT_S;
  while (!have && pair_now_s() < end) {
    struct pollfd pf = {ctx->async_fd, POLLIN, 0};
    poll(&pf, 1, 50);
    if (ibv_get_async_event(ctx, &ev) == 0) {
      if (ev.event_type == IBV_EVENT_CQ_ERR) have = 1;
      ibv_ack_async_event(&ev);
    } else {
      /* Polling the other CQ keeps the fake's progress going without touching the full one. */
      pair_poll(p.rcq, 1, 0.01, wc);
    }
  }
  CHECK(have && ev.element.cq == p.scq, "3 completions into a 2-entry CQ: IBV_EVENT_CQ_ERR for that CQ");
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  CHECK(ibv_query_qp(p.a, &qa, IBV_QP_STATE, &qi) == 0 && qa.qp_state == IBV_QPS_ERR,
        "the QP using the overrun CQ is in the error state (%d)", (int)qa.qp_state);
  /* Every completion there will be is already queued (B received all 3, the overrun is
   * signalled): polling longer could only find more on a wrong fake, never fewer on a right one. */
  got = pair_poll(p.scq, 8, 0.5, wc);
  CHECK(got <= 2, "the overrun CQ holds at most its 2 entries (%d polled)", got);
  free_pair(&p);

  ibv_dereg_mr(mr);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  printf("%s\n", failures ? "queue depth checks FAILED" : "queue depth checks passed");
  return failures ? 1 : 0;
}
