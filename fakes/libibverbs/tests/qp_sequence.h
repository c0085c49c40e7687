/* One sequence of queue-pair calls, good and bad, run through both C fronts over the fake model:
 * the drop-in libibverbs.so.1 (fakelib_qp_fronts, a C program) and the in-process C ABI
 * (gidpolicy::fakes::c_abi, the unit test CFronts.InProcessQpCallsGiveTheSharedTranscript). Both
 * print the same transcript and compare it with the same expected file
 * (tests/data/c_fronts/<table>.qp.expected), so the two fronts cannot drift apart on
 * ibv_create_qp, ibv_query_qp or ibv_modify_qp: every return value, errno and reported
 * capability is in the transcript.
 *
 * The sequence, on the first device: ibv_create_qp without attributes, with a NULL send CQ, a
 * NULL receive CQ, a CQ no front handed out, an SRQ no front handed out, a QP type the fake does
 * not model, each capability one above the device's limit (ibv_query_device's figures: 4096 WRs,
 * 16 SGEs, 512 inline bytes) and exactly at it; then per QP type (RC, UC, UD) a good QP:
 * ibv_query_qp without attributes, without init_attr and whole (state, capabilities, type,
 * sq_sig_all, whether the CQs and qp_context come back), ibv_modify_qp with a NULL attr, without
 * IBV_QP_STATE, RESET->INIT missing a required bit, with a bit the type does not take there, a
 * wrong transition (RESET->RTR, INIT->RTS), a P_Key index and a port the device lacks, and the
 * good ones (RESET->INIT, INIT->INIT, INIT->ERR, ERR->RESET), each followed by the state query_qp
 * reports; then the calls on a destroyed QP. errno is set to 0 before each call and printed
 * after it, so a front that leaves errno alone differs from one that sets it.
 * C99 and C++: static functions over a table of function pointers, written to a FILE. */
#ifndef GIDPOLICY_TESTS_FAKELIB_QP_SEQUENCE_H
#define GIDPOLICY_TESTS_FAKELIB_QP_SEQUENCE_H

#include <infiniband/verbs.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct qp_fronts_ops {
  struct ibv_device** (*get_device_list)(int* num_devices);
  void (*free_device_list)(struct ibv_device** list);
  struct ibv_context* (*open_device)(struct ibv_device* device);
  int (*close_device)(struct ibv_context* context);
  struct ibv_pd* (*alloc_pd)(struct ibv_context* context);
  int (*dealloc_pd)(struct ibv_pd* pd);
  struct ibv_cq* (*create_cq)(struct ibv_context* context, int cqe, void* cq_context,
                              struct ibv_comp_channel* channel, int comp_vector);
  int (*destroy_cq)(struct ibv_cq* cq);
  struct ibv_qp* (*create_qp)(struct ibv_pd* pd, struct ibv_qp_init_attr* attr);
  int (*modify_qp)(struct ibv_qp* qp, struct ibv_qp_attr* attr, int attr_mask);
  int (*query_qp)(struct ibv_qp* qp, struct ibv_qp_attr* attr, int attr_mask,
                  struct ibv_qp_init_attr* init_attr);
  int (*destroy_qp)(struct ibv_qp* qp);
};

/* A distinctive qp_context: query_qp must hand it back. */
static int qp_seq_context_tag;

/* The good attributes of a QP of `type` on `cq`. */
static struct ibv_qp_init_attr qp_seq_init(enum ibv_qp_type type, struct ibv_cq* cq) {
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.qp_context = &qp_seq_context_tag;
  a.send_cq = cq;
  a.recv_cq = cq;
  a.qp_type = type;
  a.sq_sig_all = 1;
  a.cap.max_send_wr = 64;
  a.cap.max_recv_wr = 32;
  a.cap.max_send_sge = 2;
  a.cap.max_recv_sge = 3;
  a.cap.max_inline_data = 128;
  return a;
}

/* ibv_create_qp: the result (a QP or NULL) and errno; the QP is destroyed at once. */
static void qp_seq_create(FILE* out, const struct qp_fronts_ops* ops, struct ibv_pd* pd, const char* what,
                          struct ibv_qp_init_attr* attr) {
  struct ibv_qp* qp;
  int err;
  errno = 0;
  qp = ops->create_qp(pd, attr);
  err = errno;
  fprintf(out, "create_qp %s: %s errno %d\n", what, qp ? "qp" : "NULL", qp ? 0 : err);
  if (qp) ops->destroy_qp(qp);
}

/* ibv_query_qp, whole: the state and what the QP reports of its creation. */
static void qp_seq_query(FILE* out, const struct qp_fronts_ops* ops, struct ibv_qp* qp,
                         const struct ibv_qp_init_attr* made) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr i;
  int rc, err;
  memset(&a, 0xab, sizeof a);
  memset(&i, 0xab, sizeof i);
  errno = 0;
  rc = ops->query_qp(qp, &a, IBV_QP_STATE | IBV_QP_CAP, &i);
  err = errno;
  fprintf(out, "  query_qp: %d", rc);
  if (rc == 0)
    fprintf(out,
            " state %d cur_state %d cap %u %u %u %u %u init cap %u %u %u %u %u type %d sq_sig_all %d"
            " send_cq %s recv_cq %s qp_context %s srq %s qp.state %d",
            (int)a.qp_state, (int)a.cur_qp_state, a.cap.max_send_wr, a.cap.max_recv_wr, a.cap.max_send_sge,
            a.cap.max_recv_sge, a.cap.max_inline_data, i.cap.max_send_wr, i.cap.max_recv_wr,
            i.cap.max_send_sge, i.cap.max_recv_sge, i.cap.max_inline_data, (int)i.qp_type, i.sq_sig_all,
            i.send_cq == made->send_cq ? "same" : "other", i.recv_cq == made->recv_cq ? "same" : "other",
            i.qp_context == made->qp_context ? "same" : "other", i.srq ? "set" : "NULL", (int)qp->state);
  else
    fprintf(out, " errno %d", err);
  fprintf(out, "\n");
}

/* ibv_modify_qp: the return value and errno. */
static int qp_seq_modify(FILE* out, const struct qp_fronts_ops* ops, struct ibv_qp* qp, const char* what,
                         struct ibv_qp_attr* attr, int mask) {
  int rc, err;
  errno = 0;
  rc = ops->modify_qp(qp, attr, mask);
  err = errno;
  fprintf(out, "  modify_qp %s: %d errno %d\n", what, rc, err);
  return rc;
}

/* The INIT attributes of `type`: what RESET->INIT requires (ib_modify_qp_is_ok). */
static int qp_seq_init_attr(enum ibv_qp_type type, struct ibv_qp_attr* a) {
  memset(a, 0, sizeof *a);
  a->qp_state = IBV_QPS_INIT;
  a->pkey_index = 0;
  a->port_num = 1;
  if (type == IBV_QPT_UD) {
    a->qkey = 0x11111111;
    return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
  }
  a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}

static void qp_seq_one(FILE* out, const struct qp_fronts_ops* ops, struct ibv_pd* pd, struct ibv_cq* cq,
                       enum ibv_qp_type type, const char* name) {
  struct ibv_qp_init_attr made = qp_seq_init(type, cq);
  struct ibv_qp_attr a, q;
  struct ibv_qp_init_attr i;
  struct ibv_qp* qp;
  int mask, err, rc;
  errno = 0;
  qp = ops->create_qp(pd, &made);
  err = errno;
  fprintf(out, "%s: create_qp %s errno %d\n", name, qp ? "qp" : "NULL", qp ? 0 : err);
  if (!qp) return;
  errno = 0;
  rc = ops->query_qp(qp, NULL, IBV_QP_STATE, &i);
  fprintf(out, "  query_qp no attr: %d\n", rc);
  rc = ops->query_qp(qp, &q, IBV_QP_STATE, NULL);
  fprintf(out, "  query_qp no init_attr: %d\n", rc);
  qp_seq_query(out, ops, qp, &made);

  mask = qp_seq_init_attr(type, &a);
  qp_seq_modify(out, ops, qp, "NULL attr", NULL, mask);
  qp_seq_modify(out, ops, qp, "no STATE bit", &a, mask & ~IBV_QP_STATE);
  qp_seq_modify(out, ops, qp, "RESET->INIT without PORT", &a, mask & ~IBV_QP_PORT);
  qp_seq_modify(out, ops, qp, "RESET->INIT with PATH_MTU", &a, mask | IBV_QP_PATH_MTU);
  qp_seq_modify(out, ops, qp, "RESET->INIT with the other type's bit", &a,
                mask | (type == IBV_QPT_UD ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY));
  a.qp_state = IBV_QPS_RTR;
  qp_seq_modify(out, ops, qp, "RESET->RTR", &a, mask);
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 5;
  qp_seq_modify(out, ops, qp, "RESET->INIT pkey_index 5", &a, mask);
  a.pkey_index = 0;
  a.port_num = 9;
  qp_seq_modify(out, ops, qp, "RESET->INIT port 9", &a, mask);
  a.port_num = 1;
  qp_seq_query(out, ops, qp, &made);
  qp_seq_modify(out, ops, qp, "RESET->INIT", &a, mask);
  qp_seq_query(out, ops, qp, &made);
  qp_seq_modify(out, ops, qp, "INIT->INIT", &a, mask & ~IBV_QP_PORT);
  memset(&q, 0, sizeof q);
  q.qp_state = IBV_QPS_RTS;
  q.sq_psn = 1;
  qp_seq_modify(out, ops, qp, "INIT->RTS", &q, IBV_QP_STATE | IBV_QP_SQ_PSN);
  qp_seq_query(out, ops, qp, &made);
  q.qp_state = IBV_QPS_ERR;
  qp_seq_modify(out, ops, qp, "INIT->ERR", &q, IBV_QP_STATE);
  qp_seq_query(out, ops, qp, &made);
  qp_seq_modify(out, ops, qp, "ERR->INIT", &a, mask);
  q.qp_state = IBV_QPS_RESET;
  qp_seq_modify(out, ops, qp, "ERR->RESET", &q, IBV_QP_STATE);
  qp_seq_query(out, ops, qp, &made);
  fprintf(out, "  destroy_qp: %d\n", ops->destroy_qp(qp));
}

/* Run the sequence; 0 when a device could be opened. */
static int qp_sequence(const struct qp_fronts_ops* ops, FILE* out) {
  struct ibv_device** list;
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_cq foreign_cq;
  struct ibv_srq foreign_srq;
  struct ibv_qp_init_attr attr;
  int num = 0;

  list = ops->get_device_list(&num);
  fprintf(out, "devices %d\n", num);
  if (!list || num < 1) return -1;
  ctx = ops->open_device(list[0]);
  if (!ctx) return -1;
  pd = ops->alloc_pd(ctx);
  cq = ops->create_cq(ctx, 256, NULL, NULL, 0);
  fprintf(out, "alloc_pd %s create_cq %s\n", pd ? "pd" : "NULL", cq ? "cq" : "NULL");
  if (!pd || !cq) return -1;
  memset(&foreign_cq, 0, sizeof foreign_cq);
  foreign_cq.context = ctx;
  memset(&foreign_srq, 0, sizeof foreign_srq);
  foreign_srq.context = ctx;
  foreign_srq.pd = pd;

  qp_seq_create(out, ops, pd, "no attr", NULL);
  attr = qp_seq_init(IBV_QPT_UC, cq);
  attr.send_cq = NULL;
  qp_seq_create(out, ops, pd, "NULL send_cq", &attr);
  attr = qp_seq_init(IBV_QPT_UC, cq);
  attr.recv_cq = NULL;
  qp_seq_create(out, ops, pd, "NULL recv_cq", &attr);
  attr = qp_seq_init(IBV_QPT_UC, &foreign_cq);
  qp_seq_create(out, ops, pd, "foreign CQ", &attr);
  attr = qp_seq_init(IBV_QPT_UC, cq);
  attr.srq = &foreign_srq;
  qp_seq_create(out, ops, pd, "foreign SRQ", &attr);
  attr = qp_seq_init(IBV_QPT_RAW_PACKET, cq);
  qp_seq_create(out, ops, pd, "raw packet", &attr);
  attr = qp_seq_init(IBV_QPT_UC, cq);
  attr.cap.max_send_wr = 4097;
  qp_seq_create(out, ops, pd, "max_send_wr 4097", &attr);
  attr = qp_seq_init(IBV_QPT_UC, cq);
  attr.cap.max_recv_wr = 1u << 20;
  qp_seq_create(out, ops, pd, "max_recv_wr 1048576", &attr);
  attr = qp_seq_init(IBV_QPT_UC, cq);
  attr.cap.max_send_sge = 17;
  qp_seq_create(out, ops, pd, "max_send_sge 17", &attr);
  attr = qp_seq_init(IBV_QPT_UC, cq);
  attr.cap.max_recv_sge = 17;
  qp_seq_create(out, ops, pd, "max_recv_sge 17", &attr);
  attr = qp_seq_init(IBV_QPT_UC, cq);
  attr.cap.max_inline_data = 513;
  qp_seq_create(out, ops, pd, "max_inline_data 513", &attr);
  attr = qp_seq_init(IBV_QPT_UC, cq);
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 4096;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 16;
  attr.cap.max_inline_data = 512;
  qp_seq_create(out, ops, pd, "every capability at the limit", &attr);

  qp_seq_one(out, ops, pd, cq, IBV_QPT_RC, "rc");
  qp_seq_one(out, ops, pd, cq, IBV_QPT_UC, "uc");
  qp_seq_one(out, ops, pd, cq, IBV_QPT_UD, "ud");

  /* A destroyed QP is refused, never read (the fronts look handles up). */
  {
    struct ibv_qp_init_attr made = qp_seq_init(IBV_QPT_UC, cq);
    struct ibv_qp_attr a;
    struct ibv_qp* qp = ops->create_qp(pd, &made);
    int mask = qp_seq_init_attr(IBV_QPT_UC, &a);
    if (qp && ops->destroy_qp(qp) == 0) {
      struct ibv_qp_init_attr i;
      fprintf(out, "destroyed: query_qp %d\n", ops->query_qp(qp, &a, IBV_QP_STATE, &i));
      qp_seq_modify(out, ops, qp, "destroyed", &a, mask);
      fprintf(out, "destroyed: destroy_qp %d\n", ops->destroy_qp(qp));
    }
  }
  fprintf(out, "destroy_cq %d\n", ops->destroy_cq(cq));
  fprintf(out, "dealloc_pd %d\n", ops->dealloc_pd(pd));
  fprintf(out, "close %d\n", ops->close_device(ctx));
  ops->free_device_list(list);
  return 0;
}

#endif
