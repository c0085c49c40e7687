/* fakelib_modify_qp: ibv_modify_qp refuses what the kernel refuses (ib_modify_qp_is_ok and the
 * drivers' value checks), with EINVAL, and a refused call changes nothing.
 *
 *   fakelib_modify_qp <device> <index>
 *
 * The device's port 1 must have an active MTU of 1024 (the check asks for 4096 above it).
 * Per QP type and transition: a missing required bit, and a bit the type does not take there
 * (RESET->INIT with an RTR bit, UC INIT->RTR with each RC-only bit, UD INIT->RTR with an address
 * vector, RTS->RTS with QKEY on RC), are EINVAL; so are a transition that does not exist
 * (RESET->ERR, INIT->RTS), port 0 or 9, pkey_index 1, path_mtu 4096 on the 1024 port. Each
 * refusal leaves the QP where it was; the masks the pingpongs use then succeed.
 * Exit 0 when all hold, 1 otherwise, 2 on a setup failure.
 */
#include "check.h"
#include "qp_pair.h"

#include <errno.h>
#include <stdlib.h>

static enum ibv_qp_state state_of(struct ibv_qp* qp) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  memset(&a, 0, sizeof a);
  if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia)) return (enum ibv_qp_state) - 1;
  return a.qp_state;
}

static const int kInit = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
static const int kInitUd = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
static const int kRtrUc = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
static const int kRtrRc = kRtrUc | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
static const int kRtsRc = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                          IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

static struct ibv_qp_attr attr_for(enum ibv_qp_state to, const union ibv_gid* gid, uint8_t index,
                                   uint32_t dest) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = to;
  a.port_num = 1;
  a.qkey = 0x11111111;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.grh.dgid = *gid;
  a.ah_attr.grh.sgid_index = index;
  return a;
}

/* ibv_modify_qp must return EINVAL and leave the QP in `stays`. */
static void refused(struct ibv_qp* qp, struct ibv_qp_attr a, int mask, enum ibv_qp_state stays,
                    const char* what) {
  const int rc = ibv_modify_qp(qp, &a, mask);
  const enum ibv_qp_state now = state_of(qp);
  CHECK(rc == EINVAL && now == stays, "%s: EINVAL, state unchanged (rc %d, state %d)", what, rc, (int)now);
}

static void accepted(struct ibv_qp* qp, struct ibv_qp_attr a, int mask, const char* what) {
  const int rc = ibv_modify_qp(qp, &a, mask);
  CHECK(rc == 0 && state_of(qp) == a.qp_state, "%s: accepted (rc %d)", what, rc);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <device> <index>\n", argv[0]);
    return 2;
  }
  const uint8_t index = (uint8_t)atoi(argv[2]);
  struct ibv_context* ctx = pair_open(argv[1]);
  struct ibv_port_attr pa;
  union ibv_gid gid;
  if (!ctx || ibv_query_port(ctx, 1, &pa) || pa.active_mtu != IBV_MTU_1024 ||
      ibv_query_gid(ctx, 1, index, &gid)) {
    fprintf(stderr, "setup: the device's port 1 must be active at MTU 1024\n");
    return 2;
  }
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  struct ibv_cq* cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
  struct ibv_qp* rc = cq ? pair_qp(pd, IBV_QPT_RC, cq, cq, 1, 1) : NULL;
  struct ibv_qp* uc = cq ? pair_qp(pd, IBV_QPT_UC, cq, cq, 1, 1) : NULL;
  struct ibv_qp* ud = cq ? pair_qp(pd, IBV_QPT_UD, cq, cq, 1, 1) : NULL;
  if (!rc || !uc || !ud) return 2;
  const uint32_t peer = rc->qp_num; /* any QP number: RTR does not need the peer to exist */

  /* RESET -> INIT */
  struct ibv_qp_attr a = attr_for(IBV_QPS_INIT, &gid, index, peer);
  refused(rc, a, kInit | IBV_QP_PATH_MTU, IBV_QPS_RESET, "RC RESET->INIT with PATH_MTU");
  refused(rc, a, kInit | IBV_QP_QKEY, IBV_QPS_RESET, "RC RESET->INIT with QKEY");
  refused(rc, a, kInit & ~IBV_QP_ACCESS_FLAGS, IBV_QPS_RESET, "RC RESET->INIT without ACCESS_FLAGS");
  refused(ud, a, kInit, IBV_QPS_RESET, "UD RESET->INIT with ACCESS_FLAGS instead of QKEY");
  a.port_num = 0;
  refused(rc, a, kInit, IBV_QPS_RESET, "RESET->INIT on port 0");
  a.port_num = 9;
  refused(rc, a, kInit, IBV_QPS_RESET, "RESET->INIT on port 9");
  a.port_num = 1;
  a.pkey_index = 1;
  refused(rc, a, kInit, IBV_QPS_RESET, "RESET->INIT with pkey_index 1 (pkey_tbl_len 1)");
  a.pkey_index = 0;
  a.qp_state = IBV_QPS_ERR;
  refused(rc, a, IBV_QP_STATE, IBV_QPS_RESET, "RESET->ERR (no such transition)");
  a.qp_state = IBV_QPS_INIT;
  accepted(rc, a, kInit, "RC RESET->INIT");
  accepted(uc, a, kInit, "UC RESET->INIT");
  accepted(ud, a, kInitUd, "UD RESET->INIT");
  accepted(rc, a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, "RC INIT->INIT with ACCESS_FLAGS");
  refused(rc, a, IBV_QP_STATE | IBV_QP_QKEY, IBV_QPS_INIT, "RC INIT->INIT with QKEY");

  /* INIT -> RTR */
  a = attr_for(IBV_QPS_RTS, &gid, index, peer);
  refused(rc, a, kRtsRc, IBV_QPS_INIT, "INIT->RTS (no such transition)");
  a.qp_state = IBV_QPS_RTR;
  const int rc_only[] = {IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MIN_RNR_TIMER, IBV_QP_TIMEOUT,
                         IBV_QP_RETRY_CNT,          IBV_QP_RNR_RETRY,     IBV_QP_MAX_QP_RD_ATOMIC};
  const char* names[] = {"MAX_DEST_RD_ATOMIC", "MIN_RNR_TIMER", "TIMEOUT",
                         "RETRY_CNT",          "RNR_RETRY",     "MAX_QP_RD_ATOMIC"};
  for (int i = 0; i < 6; ++i) {
    char what[96];
    snprintf(what, sizeof what, "UC INIT->RTR with %s", names[i]);
    refused(uc, a, kRtrUc | rc_only[i], IBV_QPS_INIT, what);
  }
  refused(rc, a, kRtrRc | IBV_QP_TIMEOUT, IBV_QPS_INIT, "RC INIT->RTR with TIMEOUT (an RTS bit)");
  refused(rc, a, kRtrRc & ~IBV_QP_MIN_RNR_TIMER, IBV_QPS_INIT, "RC INIT->RTR without MIN_RNR_TIMER");
  refused(ud, a, IBV_QP_STATE | IBV_QP_AV, IBV_QPS_INIT, "UD INIT->RTR with an address vector");
  a.path_mtu = IBV_MTU_4096;
  refused(rc, a, kRtrRc, IBV_QPS_INIT, "RC INIT->RTR path_mtu 4096 on a port of active MTU 1024");
  refused(uc, a, kRtrUc, IBV_QPS_INIT, "UC INIT->RTR path_mtu 4096 on a port of active MTU 1024");
  a.path_mtu = IBV_MTU_1024;
  a.ah_attr.port_num = 9;
  refused(rc, a, kRtrRc, IBV_QPS_INIT, "RC INIT->RTR with ah_attr.port_num 9");
  a.ah_attr.port_num = 1;
  accepted(rc, a, kRtrRc, "RC INIT->RTR");
  accepted(uc, a, kRtrUc, "UC INIT->RTR");
  accepted(ud, a, IBV_QP_STATE, "UD INIT->RTR");

  /* RTR -> RTS, RTS -> RTS */
  a.qp_state = IBV_QPS_RTS;
  refused(uc, a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT, IBV_QPS_RTR, "UC RTR->RTS with TIMEOUT");
  refused(rc, a, IBV_QP_STATE | IBV_QP_SQ_PSN, IBV_QPS_RTR, "RC RTR->RTS without the RC retry bits");
  accepted(rc, a, kRtsRc, "RC RTR->RTS");
  accepted(uc, a, IBV_QP_STATE | IBV_QP_SQ_PSN, "UC RTR->RTS");
  accepted(ud, a, IBV_QP_STATE | IBV_QP_SQ_PSN, "UD RTR->RTS");
  refused(rc, a, IBV_QP_STATE | IBV_QP_QKEY, IBV_QPS_RTS, "RC RTS->RTS with QKEY");
  accepted(rc, a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER, "RC RTS->RTS with MIN_RNR_TIMER");
  a.qp_state = IBV_QPS_ERR;
  refused(rc, a, IBV_QP_STATE | IBV_QP_SQ_PSN, IBV_QPS_RTS, "RTS->ERR with SQ_PSN");
  accepted(rc, a, IBV_QP_STATE, "RTS->ERR");
  a.qp_state = IBV_QPS_RESET;
  accepted(rc, a, IBV_QP_STATE, "ERR->RESET");

  ibv_destroy_qp(rc);
  ibv_destroy_qp(uc);
  ibv_destroy_qp(ud);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  printf("%s\n", failures ? "modify_qp checks FAILED" : "modify_qp checks passed");
  return failures ? 1 : 0;
}
