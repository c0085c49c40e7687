/* fakelib_datapath: two queue pairs in one process, connected the way two hosts connect:
 * each side advertises one GID to the other and routes from one sgid_index. Written against
 * plain libibverbs (run it with LD_LIBRARY_PATH pointing at the fake libibverbs.so.1).
 *
 *   fakelib_datapath <device> <uc|rc> <send|write_imm|send_unposted> <a_advertised> <a_routed> <b_index>
 * <expect>
 *
 * send_unposted: B posts its receive only after A's send has left (JACCL's credit-less
 * pattern): the Linux model drops such a UC message, the Apple Thunderbolt model holds it until
 * the receive is posted.
 * Side A advertises the GID at <a_advertised> but routes from <a_routed>; side B advertises and
 * routes from <b_index>. A then sends one message to B. <expect> is what must happen:
 *   delivered        B receives the message intact
 *   dropped          A's send completes (or not), B receives nothing, and the control log says a
 *                    packet of this process's pair was dropped
 *   retry_exceeded   A's send completes with IBV_WC_RETRY_EXC_ERR, B receives nothing
 *   rtr_errno=N      A's modify_qp to RTR fails with errno N
 * Exit 0 when the outcome is the expected one, 1 otherwise, 2 on a setup failure.
 *
 * GIDPOLICY_FAKE_LOG must name the fake's control log: "dropped" is read from it (the fake's
 * "deliver" record with "result":"dropped"), as is the RNR NAK or drop that send_unposted waits
 * for before posting B's receive. Every outcome is a signal (a completion, a receive, a log
 * record); the only time bound is a hang guard.
 */
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MSG "gidpolicy fake libibverbs data path"
#define BUF 4096

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The fake's control log (GIDPOLICY_FAKE_LOG), read for this process's records. */
static const char* g_log;

/* Whether the control log has a "deliver" record of this process about QP `a` or `b` whose result
 * is `result` ("dropped", "rnr_nak"). */
static int log_says(const char* result, uint32_t a, uint32_t b) {
  char pid[48], qa[48], qb[48], res[64], line[4096];
  int found = 0;
  FILE* f = fopen(g_log, "r");
  if (!f) return 0;
  snprintf(pid, sizeof pid, "{\"pid\":%ld,\"call\":\"deliver\"", (long)getpid());
  snprintf(qa, sizeof qa, "\"qp_num\":%u,", a);
  snprintf(qb, sizeof qb, "\"qp_num\":%u,", b);
  snprintf(res, sizeof res, "\"result\":\"%s\"", result);
  while (!found && fgets(line, sizeof line, f))
    found =
        strncmp(line, pid, strlen(pid)) == 0 && (strstr(line, qa) || strstr(line, qb)) && strstr(line, res);
  fclose(f);
  if (found) printf("control log: %s", line);
  return found;
}

static int to_init(struct ibv_qp* qp) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int to_rtr(struct ibv_qp* qp, int rc, uint32_t dest, const union ibv_gid* dgid, uint8_t sgid_index) {
  struct ibv_qp_attr a;
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest;
  a.rq_psn = 7;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.grh.dgid = *dgid;
  a.ah_attr.grh.sgid_index = sgid_index;
  if (rc) {
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  }
  return ibv_modify_qp(qp, &a, mask);
}

static int to_rts(struct ibv_qp* qp, int rc) {
  struct ibv_qp_attr a;
  int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 7;
  if (rc) {
    a.timeout = 10; /* 4.096 us * 2^10 = 4 ms per try */
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  return ibv_modify_qp(qp, &a, mask);
}

static int post_b_recv(struct ibv_qp* qp, char* buf, struct ibv_mr* mr) {
  struct ibv_sge sge = {(uintptr_t)buf, BUF, mr->lkey};
  struct ibv_recv_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = 2;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return ibv_post_recv(qp, &wr, &bad);
}

static int verdict(const char* outcome, const char* expect) {
  printf("outcome: %s (expected %s)\n", outcome, expect);
  return strcmp(outcome, expect) == 0 ? 0 : 1;
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
  union ibv_gid gid_a_advertised, gid_b;
  static char buf_a[BUF], buf_b[BUF];
  int n, i, rc, write_imm, unposted, err, received = 0;
  int send_status = -1;
  long a_adv, a_routed, b_index;
  const char* expect;
  char outcome[64];
  double deadline, next_log_read = 0;
  int drop_logged = 0;

  if (argc != 8) {
    fprintf(stderr,
            "usage: %s <device> <uc|rc> <send|write_imm> <a_advertised> <a_routed> <b_index> <expect>\n",
            argv[0]);
    return 2;
  }
  rc = strcmp(argv[2], "rc") == 0;
  write_imm = strcmp(argv[3], "write_imm") == 0;
  unposted = strcmp(argv[3], "send_unposted") == 0;
  a_adv = strtol(argv[4], NULL, 10);
  a_routed = strtol(argv[5], NULL, 10);
  b_index = strtol(argv[6], NULL, 10);
  expect = argv[7];
  g_log = getenv("GIDPOLICY_FAKE_LOG");
  if (!g_log || !*g_log) {
    fprintf(stderr, "GIDPOLICY_FAKE_LOG must name the fake's control log (drops are read from it)\n");
    return 2;
  }
  {
    /* A fresh log per run (the library appends; records are also told apart by pid). */
    FILE* fresh = fopen(g_log, "w");
    if (!fresh) {
      perror(g_log);
      return 2;
    }
    fclose(fresh);
  }
  if (a_adv < 0 || a_adv > 255 || a_routed < 0 || a_routed > 255 || b_index < 0 || b_index > 255) return 2;

  list = ibv_get_device_list(&n);
  if (!list) {
    perror("ibv_get_device_list");
    return 2;
  }
  for (i = 0; i < n; ++i)
    if (strcmp(ibv_get_device_name(list[i]), argv[1]) == 0) dev = list[i];
  if (!dev) {
    fprintf(stderr, "no device %s\n", argv[1]);
    return 2;
  }
  ctx = ibv_open_device(dev);
  if (!ctx) return 2;
  pd = ibv_alloc_pd(ctx);
  cq_a = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  cq_b = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  mr_a = ibv_reg_mr(pd, buf_a, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  mr_b = ibv_reg_mr(pd, buf_b, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!pd || !cq_a || !cq_b || !mr_a || !mr_b) return 2;

  memset(&init, 0, sizeof init);
  init.qp_type = rc ? IBV_QPT_RC : IBV_QPT_UC;
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.send_cq = cq_a;
  init.recv_cq = cq_a;
  qp_a = ibv_create_qp(pd, &init);
  init.send_cq = cq_b;
  init.recv_cq = cq_b;
  qp_b = ibv_create_qp(pd, &init);
  if (!qp_a || !qp_b) {
    perror("ibv_create_qp");
    return 2;
  }
  if (to_init(qp_a) || to_init(qp_b)) return 2;

  if (!unposted && post_b_recv(qp_b, buf_b, mr_b)) return 2;

  /* The side channel: what each side tells the other. */
  if (ibv_query_gid(ctx, 1, (int)a_adv, &gid_a_advertised) || ibv_query_gid(ctx, 1, (int)b_index, &gid_b)) {
    fprintf(stderr, "cannot read the advertised GIDs\n");
    return 2;
  }

  err = to_rtr(qp_a, rc, qp_b->qp_num, &gid_b, (uint8_t)a_routed);
  if (err) {
    printf("A: RTR failed with errno %d\n", err);
    snprintf(outcome, sizeof outcome, "rtr_errno=%d", err);
    /* Closing the device releases every object of the context, as the kernel does. */
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return verdict(outcome, expect);
  }
  err = to_rtr(qp_b, rc, qp_a->qp_num, &gid_a_advertised, (uint8_t)b_index);
  if (err) {
    printf("B: RTR failed with errno %d\n", err);
    return 2;
  }
  if (to_rts(qp_a, rc) || to_rts(qp_b, rc)) return 2;

  memcpy(buf_a, MSG, sizeof MSG);
  {
    struct ibv_sge sge = {(uintptr_t)buf_a, sizeof MSG, mr_a->lkey};
    struct ibv_send_wr wr, *bad;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    if (write_imm) {
      wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      wr.imm_data = htonl(0x1234);
      wr.wr.rdma.remote_addr = (uintptr_t)buf_b;
      wr.wr.rdma.rkey = mr_b->rkey;
    } else {
      wr.opcode = IBV_WR_SEND;
    }
    if (ibv_post_send(qp_a, &wr, &bad)) {
      perror("ibv_post_send");
      return 2;
    }
  }

  /* An RC send always ends (acknowledged, or failed when its retry budget runs out), a message
   * that is to be delivered arrives, and a message that is dropped leaves its record in the
   * control log: each outcome is a signal. 20 s is only a hang guard (loopback takes
   * milliseconds): a run that sees none of them ends with "no outcome", which fails. */
  if (unposted) {
    if (rc || strcmp(expect, "dropped") == 0) {
      /* Before the receive exists the message must have reached B: RC NAKs it (RNR), the Linux
       * model's UC drops it. Both are logged, so that is waited for, not guessed. */
      deadline = now_s() + 20.0;
      while (!log_says(rc ? "rnr_nak" : "dropped", qp_a->qp_num, qp_b->qp_num) && now_s() < deadline) {
        struct timespec pause = {0, 5 * 1000 * 1000};
        nanosleep(&pause, NULL);
      }
    } else {
      /* The Apple model holds the message, which logs nothing: let it reach B (its progress
       * thread takes it) before the receive exists. A loaded machine may post the receive first,
       * and the run then shows an ordinary delivery: it can pass without showing the hold, never
       * fail a right model. */
      struct timespec pause = {0, 50 * 1000 * 1000};
      nanosleep(&pause, NULL);
    }
    if (post_b_recv(qp_b, buf_b, mr_b)) return 2;
  }
  deadline = now_s() + 20.0;
  while (now_s() < deadline && !(received && send_status >= 0) &&
         !(send_status >= 0 && send_status != IBV_WC_SUCCESS) && !(drop_logged && send_status >= 0)) {
    struct ibv_wc wc;
    if (ibv_poll_cq(cq_a, 1, &wc) > 0 && wc.wr_id == 1) {
      send_status = (int)wc.status;
      printf("A: send completion: %s\n", ibv_wc_status_str(wc.status));
    }
    if (ibv_poll_cq(cq_b, 1, &wc) > 0) {
      printf("B: receive completion: %s, %u bytes\n", ibv_wc_status_str(wc.status), wc.byte_len);
      if (wc.status == IBV_WC_SUCCESS && memcmp(buf_b, MSG, sizeof MSG) == 0 &&
          (!write_imm || (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && ntohl(wc.imm_data) == 0x1234)))
        received = 1;
    }
    if (!drop_logged && !rc && now_s() >= next_log_read) { /* UC: only the log tells a drop */
      drop_logged = log_says("dropped", qp_a->qp_num, qp_b->qp_num);
      next_log_read = now_s() + 0.01;
    }
  }
  {
    /* A drop is final: what B holds now is all it will get of this message. */
    struct ibv_wc wc;
    if (drop_logged && ibv_poll_cq(cq_b, 1, &wc) > 0) {
      printf("B: receive completion after the drop: %s, %u bytes\n", ibv_wc_status_str(wc.status),
             wc.byte_len);
      received = wc.status == IBV_WC_SUCCESS;
    }
  }
  if (received)
    snprintf(outcome, sizeof outcome, "delivered");
  else if (send_status == IBV_WC_RETRY_EXC_ERR)
    snprintf(outcome, sizeof outcome, "retry_exceeded");
  else if (drop_logged)
    snprintf(outcome, sizeof outcome, "dropped");
  else
    snprintf(outcome, sizeof outcome, "no outcome within 20 s");

  ibv_destroy_qp(qp_a);
  ibv_destroy_qp(qp_b);
  ibv_dereg_mr(mr_a);
  ibv_dereg_mr(mr_b);
  ibv_destroy_cq(cq_a);
  ibv_destroy_cq(cq_b);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return verdict(outcome, expect);
}
