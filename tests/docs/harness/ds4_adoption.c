/* Harness for README "Adopting gidpolicy in a ds4 fork": a program shaped like ds4's Linux RoCE
 * transport (ds4_tp.c) -- it dlopen()s libibverbs into a struct of pointers, chooses the device
 * and GID for the control connection's local address, creates RC queue pairs (two on one device,
 * connected to each other as two hosts would be), takes them to RTS, then resets the bulk QP
 * and connects it again (ds4's tp_rdma_bulk_reset: a second RTR). The README's snippets are
 * included where a fork puts them (SNIPPET_STATE, SNIPPET_CHOOSE, SNIPPET_RTR, SNIPPET_RESET).
 *
 *   docs_ds4_adoption LIBIBVERBS CONTROL_ADDR GID_INDEX        (GID_INDEX -1: not forced)
 *
 * Prints "modify_qp(RTR) calls: N" last: a refused choice or RTR never reaches the driver. */
#define _POSIX_C_SOURCE 200809L

#include <gidpolicy/gidpolicy.h>

#include <infiniband/verbs.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct verbs_api {
  void* handle;
  struct ibv_device** (*get_device_list)(int* num_devices);
  void (*free_device_list)(struct ibv_device** list);
  const char* (*get_device_name)(struct ibv_device* device);
  struct ibv_context* (*open_device)(struct ibv_device* device);
  int (*close_device)(struct ibv_context* context);
  int (*query_port)(struct ibv_context* context, uint8_t port_num, struct ibv_port_attr* attr);
  int (*query_gid_ex)(struct ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      struct ibv_gid_entry* entry, uint32_t flags, size_t entry_size);
  struct ibv_pd* (*alloc_pd)(struct ibv_context* context);
  struct ibv_cq* (*create_cq)(struct ibv_context* context, int cqe, void* cq_context,
                              struct ibv_comp_channel* channel, int comp_vector);
  struct ibv_qp* (*create_qp)(struct ibv_pd* pd, struct ibv_qp_init_attr* attr);
  int (*modify_qp)(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask);
};

static struct verbs_api api;
static int rtr_calls;

/* The driver's modify_qp, counting the transitions to RTR. */
static int counting_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask) {
  if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR) rtr_calls++;
  return api.modify_qp(qp, attr, mask);
}

static int load(const char* lib) {
  const struct {
    const char* name;
    void* slot;
    size_t size;
  } syms[] = {
      {"ibv_get_device_list", &api.get_device_list, sizeof api.get_device_list},
      {"ibv_free_device_list", &api.free_device_list, sizeof api.free_device_list},
      {"ibv_get_device_name", &api.get_device_name, sizeof api.get_device_name},
      {"ibv_open_device", &api.open_device, sizeof api.open_device},
      {"ibv_close_device", &api.close_device, sizeof api.close_device},
      {"ibv_query_port", &api.query_port, sizeof api.query_port},
      {"_ibv_query_gid_ex", &api.query_gid_ex, sizeof api.query_gid_ex},
      {"ibv_alloc_pd", &api.alloc_pd, sizeof api.alloc_pd},
      {"ibv_create_cq", &api.create_cq, sizeof api.create_cq},
      {"ibv_create_qp", &api.create_qp, sizeof api.create_qp},
      {"ibv_modify_qp", &api.modify_qp, sizeof api.modify_qp},
  };
  size_t i;
  api.handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!api.handle) return fprintf(stderr, "dlopen(%s): %s\n", lib, dlerror()), -1;
  for (i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void* sym = dlsym(api.handle, syms[i].name);
    if (!sym) return fprintf(stderr, "%s: %s\n", syms[i].name, dlerror()), -1;
    memcpy(syms[i].slot, &sym, syms[i].size); /* no ISO C object-to-function pointer cast */
  }
  return 0;
}

#include SNIPPET_STATE
#include SNIPPET_CHOOSE
#include SNIPPET_RTR

struct transport {
  struct ds4_gp gp;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_qp* latency_qp; /* this side's QP */
  struct ibv_qp* bulk_qp;    /* the "peer host": same device, loopback */
  gidpolicy_peer latency_peer, bulk_peer;
};

static struct ibv_qp* create_rc_qp(struct transport* tp) {
  struct ibv_qp_init_attr init;
  struct ibv_qp_attr attr;
  struct ibv_qp* qp;
  memset(&init, 0, sizeof init);
  init.send_cq = tp->cq;
  init.recv_cq = tp->cq;
  init.qp_type = IBV_QPT_RC; /* ds4 on Linux: RC */
  init.cap.max_send_wr = 16;
  init.cap.max_recv_wr = 16;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  qp = api.create_qp(tp->pd, &init);
  if (!qp) return NULL;
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = (uint8_t)tp->gp.port;
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  if (api.modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return NULL;
  return qp;
}

static int to_rts(struct ibv_qp* qp) {
  struct ibv_qp_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = 7;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 1;
  return api.modify_qp(qp, &attr,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_MAX_QP_RD_ATOMIC);
}

/* ds4's tp_rdma_bulk_reset(): the bulk QP goes back to RESET and INIT and is connected again. */
static int bulk_reset(struct transport* tp, char* err, size_t errlen) {
  struct ibv_qp_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_RESET;
  if (api.modify_qp(tp->bulk_qp, &attr, IBV_QP_STATE)) return snprintf(err, errlen, "RESET failed"), -1;
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = (uint8_t)tp->gp.port;
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  if (api.modify_qp(tp->bulk_qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return snprintf(err, errlen, "INIT failed"), -1;
  {
    int (*modify_qp)(struct ibv_qp*, struct ibv_qp_attr*, int) = counting_modify_qp;
#include SNIPPET_RESET
  }
  return to_rts(tp->bulk_qp) ? (snprintf(err, errlen, "RTS failed"), -1) : 0;
}

int main(int argc, char** argv) {
  char err[1024] = "";
  struct ibv_context* ctxs[8];
  struct ibv_device** list;
  struct transport tp;
  int n = 0, nctx = 0, i, rc = 1;
  uint8_t gid[16];
  if (argc != 4) return fprintf(stderr, "usage: %s LIBIBVERBS CONTROL_ADDR GID_INDEX\n", argv[0]), 2;
  if (load(argv[1])) return 2;
  memset(&tp, 0, sizeof tp);
  list = api.get_device_list(&n);
  for (i = 0; list && i < n && nctx < 8; i++)
    if ((ctxs[nctx] = api.open_device(list[i])) != NULL) nctx++;

  ds4_gp_init(&tp.gp, api.query_port, api.query_gid_ex);
  if (ds4_gp_choose(&tp.gp, ctxs, nctx, argv[2], atoi(argv[3]), err, sizeof err) != 0) {
    printf("refused: %s\n", err);
    goto out;
  }
  printf("ds4-tp: rdma device %s, RoCEv2 GID %u, RC\n", api.get_device_name(tp.gp.ctx->device),
         (unsigned)gidpolicy_selection_index(tp.gp.sel));
  tp.pd = api.alloc_pd(tp.gp.ctx);
  tp.cq = tp.pd ? api.create_cq(tp.gp.ctx, 16, NULL, NULL, 0) : NULL;
  tp.latency_qp = tp.cq ? create_rc_qp(&tp) : NULL;
  tp.bulk_qp = tp.latency_qp ? create_rc_qp(&tp) : NULL;
  if (!tp.bulk_qp) {
    printf("setup failed: %s\n", strerror(errno));
    goto out;
  }
  /* The exchange: each side sends {qpn, psn, the selected GID}. */
  gidpolicy_selection_gid(tp.gp.sel, gid);
  tp.latency_peer.qpn = tp.bulk_qp->qp_num;
  tp.latency_peer.psn = 7;
  memcpy(tp.latency_peer.gid, gid, 16);
  tp.bulk_peer.qpn = tp.latency_qp->qp_num;
  tp.bulk_peer.psn = 7;
  memcpy(tp.bulk_peer.gid, gid, 16);
  if (ds4_gp_rtr(&tp.gp, tp.latency_qp, &tp.latency_peer, counting_modify_qp, err, sizeof err) ||
      ds4_gp_rtr(&tp.gp, tp.bulk_qp, &tp.bulk_peer, counting_modify_qp, err, sizeof err)) {
    printf("RTR failed: %s\n", err);
    goto out;
  }
  if (to_rts(tp.latency_qp) || to_rts(tp.bulk_qp)) {
    printf("RTS failed\n");
    goto out;
  }
  printf("connected: %d RTRs\n", rtr_calls);
  if (bulk_reset(&tp, err, sizeof err)) {
    printf("bulk reset failed: %s\n", err);
    goto out;
  }
  printf("bulk reset: RTR ok\n");
  rc = 0;
out:
  printf("modify_qp(RTR) calls: %d\n", rtr_calls);
  ds4_gp_free(&tp.gp);
  for (i = 0; i < nctx; i++) api.close_device(ctxs[i]);
  if (list) api.free_device_list(list);
  return rc;
}
