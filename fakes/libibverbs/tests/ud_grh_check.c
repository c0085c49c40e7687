/* fakelib_ud_grh: UD through address handles, and the GRH in front of every UD receive.
 * Written against plain libibverbs (run it with LD_LIBRARY_PATH pointing at the fake).
 *
 *   fakelib_ud_grh <device> <gid_index> <ipv4|ipv6>
 *
 * Two UD QPs in one process. A sends to B through an AH built from <gid_index>; B's receive
 * must start with the 40-byte GRH holding A's source GID the way RoCE hardware writes it:
 * "ipv4" (a RoCE v2 IPv4-mapped GID) as an IPv4 header in the GRH's last 20 bytes, "ipv6" (any
 * other) as an IPv6 header with the source GID at bytes 8-23. B then answers through
 * ibv_create_ah_from_wc() (which reads that GRH back) and A must receive the answer.
 * The receive completion has IBV_WC_GRH and wc.sl as libmlx5 fills it for RoCE: the header type,
 * 2 for IPv4 (a RoCE v2 IPv4-mapped GID), 1 for IPv6 (RoCE v2), 0 for a GRH (RoCE v1 / IB).
 * A UD message is one packet: exactly the port's active MTU is delivered, one byte more ends
 * in IBV_WC_LOC_LEN_ERR at the sender.
 * Exit 0 when every check passes, 1 otherwise, 2 on a setup failure.
 */
#include <infiniband/verbs.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QKEY 0x11111111u
#define MSG "gidpolicy UD datagram"

static int failures = 0;

static void check(int ok, const char* what) {
  printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

static struct ibv_qp* ud_qp(struct ibv_pd* pd, struct ibv_cq* cq) {
  struct ibv_qp_init_attr init;
  struct ibv_qp_attr a;
  struct ibv_qp* qp;
  memset(&init, 0, sizeof init);
  init.qp_type = IBV_QPT_UD;
  init.cap.max_send_wr = 4;
  init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.send_cq = cq;
  init.recv_cq = cq;
  qp = ibv_create_qp(pd, &init);
  if (!qp) return NULL;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = QKEY;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) return NULL;
  a.qp_state = IBV_QPS_RTR;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE)) return NULL;
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 7;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) return NULL;
  return qp;
}

static int post_recv(struct ibv_qp* qp, char* buf, size_t len, uint32_t lkey) {
  struct ibv_sge sge = {(uintptr_t)buf, (uint32_t)len, lkey};
  struct ibv_recv_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp* qp, struct ibv_ah* ah, uint32_t qpn, char* buf, uint32_t lkey) {
  struct ibv_sge sge = {(uintptr_t)buf, sizeof MSG, lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = qpn;
  wr.wr.ud.remote_qkey = QKEY;
  return ibv_post_send(qp, &wr, &bad);
}

/* A signaled send of `len` bytes with work request id `id`. */
static int post_send_len(struct ibv_qp* qp, struct ibv_ah* ah, uint32_t qpn, char* buf, uint32_t len,
                         uint32_t lkey, uint64_t id) {
  struct ibv_sge sge = {(uintptr_t)buf, len, lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof wr);
  wr.wr_id = id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = qpn;
  wr.wr.ud.remote_qkey = QKEY;
  return ibv_post_send(qp, &wr, &bad);
}

/* Every wait below is for a completion that must come: generous bounds (20 s, whole seconds
 * of time() notwithstanding), since a loaded machine may keep this thread off its core. */

/* The completion of work request `id` on `cq` (others are skipped), or -1 after 20 s. */
static int wait_id(struct ibv_cq* cq, uint64_t id, struct ibv_wc* out) {
  time_t end = time(NULL) + 20;
  while (time(NULL) < end) {
    struct ibv_wc wc;
    if (ibv_poll_cq(cq, 1, &wc) > 0 && wc.wr_id == id) {
      *out = wc;
      return 0;
    }
  }
  return -1;
}

/* The next receive completion on `cq` (sends are skipped), or -1 after 20 s. */
static int wait_recv(struct ibv_cq* cq, struct ibv_wc* out) {
  time_t end = time(NULL) + 20;
  while (time(NULL) < end) {
    struct ibv_wc wc;
    if (ibv_poll_cq(cq, 1, &wc) > 0 && wc.opcode == IBV_WC_RECV) {
      *out = wc;
      return 0;
    }
  }
  return -1;
}

int main(int argc, char** argv) {
  struct ibv_device** list;
  struct ibv_context* ctx = NULL;
  struct ibv_pd* pd;
  struct ibv_cq *cq_a, *cq_b;
  struct ibv_qp *qp_a, *qp_b;
  struct ibv_mr* mr;
  struct ibv_ah *ah, *reply_ah;
  struct ibv_ah_attr attr;
  struct ibv_wc wc;
  union ibv_gid gid;
  static char buf[3 * 4096];
  char *rx_a = buf, *rx_b = buf + 4096, *tx = buf + 8192;
  const unsigned char* grh = (const unsigned char*)rx_b;
  int n, i, gidx, ipv4;
  if (argc != 4) {
    fprintf(stderr, "usage: %s <device> <gid_index> <ipv4|ipv6>\n", argv[0]);
    return 2;
  }
  gidx = atoi(argv[2]);
  ipv4 = strcmp(argv[3], "ipv4") == 0;
  list = ibv_get_device_list(&n);
  if (!list) return 2;
  for (i = 0; i < n; ++i)
    if (strcmp(ibv_get_device_name(list[i]), argv[1]) == 0) ctx = ibv_open_device(list[i]);
  if (!ctx) return 2;
  pd = ibv_alloc_pd(ctx);
  cq_a = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  cq_b = ibv_create_cq(ctx, 8, NULL, NULL, 0);
  mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  if (!pd || !cq_a || !cq_b || !mr) return 2;
  qp_a = ud_qp(pd, cq_a);
  qp_b = ud_qp(pd, cq_b);
  if (!qp_a || !qp_b || ibv_query_gid(ctx, 1, gidx, &gid)) return 2;

  memset(&attr, 0, sizeof attr);
  attr.port_num = 1;
  attr.is_global = 1;
  attr.grh.hop_limit = 64;
  attr.grh.dgid = gid;
  attr.grh.sgid_index = (uint8_t)gidx;
  ah = ibv_create_ah(pd, &attr);
  if (!ah) {
    perror("ibv_create_ah");
    return 2;
  }
  memcpy(tx, MSG, sizeof MSG);
  if (post_recv(qp_b, rx_b, 4096, mr->lkey) || post_send(qp_a, ah, qp_b->qp_num, tx, mr->lkey)) return 2;
  if (wait_recv(cq_b, &wc)) {
    check(0, "B received A's datagram");
    return 1;
  }
  check(wc.status == IBV_WC_SUCCESS && wc.byte_len == 40 + sizeof MSG,
        "B's receive holds the GRH and the payload");
  check((wc.wc_flags & IBV_WC_GRH) != 0, "the completion says a GRH is present");
  {
    /* libmlx5's wc.sl on RoCE: the L3 header type of the packet. */
    struct ibv_gid_entry entry;
    const int mapped = memcmp(gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0;
    unsigned want = 0;
    if (ibv_query_gid_ex(ctx, 1, (uint32_t)gidx, &entry, 0)) return 2;
    if (entry.gid_type == IBV_GID_TYPE_ROCE_V2) want = mapped ? 2 : 1;
    printf("wc.sl %u, expected %u\n", wc.sl, want);
    check(wc.sl == want, "wc.sl is the RoCE header type (2 IPv4, 1 IPv6, 0 GRH)");
  }
  check(wc.src_qp == qp_a->qp_num, "the completion names A's QP");
  check(memcmp(rx_b + 40, MSG, sizeof MSG) == 0, "the payload follows the 40-byte GRH");
  if (ipv4) {
    unsigned sum = 0;
    for (i = 20; i < 40; i += 2) sum += (unsigned)(grh[i] << 8 | grh[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    check(grh[20] == 0x45 && grh[29] == 17 && sum == 0xffff,
          "an IPv4 header (UDP, valid checksum) in bytes 20-39");
    check(memcmp(grh + 32, gid.raw + 12, 4) == 0, "its source address is A's IPv4 address");
  } else {
    check((grh[0] >> 4) == 6, "an IPv6 header / IBA GRH (version 6)");
    check(memcmp(grh + 8, gid.raw, 16) == 0, "its source GID (bytes 8-23) is A's");
    check(memcmp(grh + 24, gid.raw, 16) == 0, "its destination GID (bytes 24-39) is B's");
  }

  /* Answer through an AH made from the completion and the GRH, as a UD server does. */
  reply_ah = ibv_create_ah_from_wc(pd, &wc, (struct ibv_grh*)rx_b, 1);
  check(reply_ah != NULL, "ibv_create_ah_from_wc reads the GRH back");
  if (reply_ah) {
    if (ibv_init_ah_from_wc(ctx, 1, &wc, (struct ibv_grh*)rx_b, &attr) == 0)
      check(attr.is_global && attr.grh.sgid_index == gidx && memcmp(attr.grh.dgid.raw, gid.raw, 16) == 0,
            "ibv_init_ah_from_wc: the reply routes from the entry the datagram was addressed to");
    else
      check(0, "ibv_init_ah_from_wc succeeds");
    if (post_recv(qp_a, rx_a, 4096, mr->lkey) || post_send(qp_b, reply_ah, wc.src_qp, tx, mr->lkey)) return 2;
    check(wait_recv(cq_a, &wc) == 0 && wc.status == IBV_WC_SUCCESS && memcmp(rx_a + 40, MSG, sizeof MSG) == 0,
          "A received B's answer");
    ibv_destroy_ah(reply_ah);
  }
  {
    /* The path MTU: the port's active MTU is the largest UD message. */
    static char big[2][8192];
    struct ibv_port_attr pa;
    struct ibv_mr* big_mr = ibv_reg_mr(pd, big, sizeof big, IBV_ACCESS_LOCAL_WRITE);
    uint32_t mtu;
    if (!big_mr || ibv_query_port(ctx, 1, &pa)) return 2;
    mtu = 128u << pa.active_mtu;
    memset(big[1], 0x77, sizeof big[1]);
    if (post_recv(qp_b, big[0], sizeof big[0], big_mr->lkey) ||
        post_send_len(qp_a, ah, qp_b->qp_num, big[1], mtu, big_mr->lkey, 98))
      return 2;
    check(wait_recv(cq_b, &wc) == 0 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 40 + mtu &&
              (unsigned char)big[0][40 + mtu - 1] == 0x77,
          "a message of exactly the path MTU is delivered");
    printf("active MTU %u: sending %u bytes\n", mtu, mtu + 1);
    if (post_send_len(qp_a, ah, qp_b->qp_num, big[1], mtu + 1, big_mr->lkey, 99)) return 2;
    check(wait_id(cq_a, 99, &wc) == 0 && wc.status == IBV_WC_LOC_LEN_ERR,
          "one byte more than the path MTU ends in LOCAL LENGTH ERROR at the sender");
    ibv_dereg_mr(big_mr);
  }
  ibv_destroy_ah(ah);
  ibv_destroy_qp(qp_a);
  ibv_destroy_qp(qp_b);
  ibv_dereg_mr(mr);
  ibv_destroy_cq(cq_a);
  ibv_destroy_cq(cq_b);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  printf("%s\n", failures ? "UD checks FAILED" : "UD checks passed");
  return failures ? 1 : 0;
}
