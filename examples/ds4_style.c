/* ds4_style: a C program shaped like ds4's RDMA open path (ds4_tp.c), with its GID scan and its
 * forced-index handling replaced by gidpolicy's C API.
 *
 * Like ds4 it never links libibverbs: it dlopen()s the library into a struct of function
 * pointers (ds4's verbs API struct), opens the device, creates a UC queue pair, "exchanges" its
 * GID, QPN and PSN with the peer (here: the peer is given on the command line) and moves the QP
 * to RTR. What changed against ds4, marked "gidpolicy:" below:
 *   - the scan for the first IPv4-mapped GID (macOS) / the RoCE v2 scoring (Linux) is one
 *     gidpolicy_select() with a policy spec, and the trace explains the choice;
 *   - --rdma-gid-index N is "validated:index=N": an empty, zero or link-local slot is refused
 *     with a reason instead of being read, accepted and cast to uint8_t;
 *   - sgid_index in the RTR attributes comes from the same selection as the advertised GID;
 *   - the entry is re-read right before modify_qp, and a failed modify_qp is explained.
 *
 *   ds4_style [--device NAME] [--rdma-gid-index N] [--local-addr ADDR] [--policy SPEC]
 *             [--peer-gid GID] [--peer-qpn N] [--peer-psn N] [--verbs-lib PATH] [--trace] [--unchecked]
 *
 * Run on a table without hardware through gidpolicy's drop-in fake libibverbs:
 *   GIDPOLICY_FAKE_TABLES=examples/tables/macmini-mapped-at-2.json \
 *     ds4_style --verbs-lib build/dev/fakes/libibverbs/lib/libibverbs.so.1
 */
#define _POSIX_C_SOURCE 200809L

#include <gidpolicy/gidpolicy.h>

#include <infiniband/verbs.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ds4's verbs API struct: what it dlsym()s. */
struct ds4_tp_verbs_api {
  void* handle;
  struct ibv_device** (*get_device_list)(int* num_devices);
  void (*free_device_list)(struct ibv_device** list);
  const char* (*get_device_name)(struct ibv_device* device);
  struct ibv_context* (*open_device)(struct ibv_device* device);
  int (*close_device)(struct ibv_context* context);
  /* The exported ibv_query_port (ibv_query_port in verbs.h is a macro over an inline). */
  int (*query_port)(struct ibv_context* context, uint8_t port_num, struct ibv_port_attr* attr);
  int (*query_gid)(struct ibv_context* context, uint8_t port_num, int index, union ibv_gid* gid);
  /* The exported _ibv_query_gid_ex (rdma-core >= v32; NULL on older libraries). */
  int (*query_gid_ex)(struct ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      struct ibv_gid_entry* entry, uint32_t flags, size_t entry_size);
  struct ibv_pd* (*alloc_pd)(struct ibv_context* context);
  int (*dealloc_pd)(struct ibv_pd* pd);
  struct ibv_cq* (*create_cq)(struct ibv_context* context, int cqe, void* cq_context,
                              struct ibv_comp_channel* channel, int comp_vector);
  int (*destroy_cq)(struct ibv_cq* cq);
  struct ibv_qp* (*create_qp)(struct ibv_pd* pd, struct ibv_qp_init_attr* attr);
  int (*modify_qp)(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask);
  int (*destroy_qp)(struct ibv_qp* qp);
};

struct ds4_tp_rdma_opts {
  const char* device;     /* NULL: the first device */
  int gid_index;          /* --rdma-gid-index; -1: not given */
  const char* local_addr; /* the control socket's local address (Linux path); NULL: unknown */
  const char* policy;     /* a full gidpolicy spec; overrides the two above */
  const char* verbs_lib;
  uint8_t peer_gid[16];
  uint32_t peer_qpn;
  uint32_t peer_psn;
  int trace;
  int unchecked; /* skip gidpolicy's preflight (to see the driver's errno and its explanation) */
};

struct ds4_tp_rdma {
  struct ds4_tp_verbs_api api;
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_qp* qp;
  gidpolicy_profile* policy;
  gidpolicy_table* table;
  gidpolicy_plan* sel;
};

/* dlsym() into a function pointer without the ISO C object-to-function pointer cast. */
static int load_sym(void* handle, const char* name, void* slot, size_t size, int required, char* err,
                    size_t errlen) {
  void* sym = dlsym(handle, name);
  if (!sym && required) {
    snprintf(err, errlen, "%s: %s", name, dlerror());
    return -1;
  }
  memcpy(slot, &sym, size);
  return 0;
}
#define LOAD(api, field, name, required) \
  load_sym((api)->handle, name, &(api)->field, sizeof(api)->field, required, err, errlen)

static int ds4_tp_verbs_load(struct ds4_tp_verbs_api* api, const char* lib, char* err, size_t errlen) {
  memset(api, 0, sizeof *api);
  api->handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!api->handle) {
    snprintf(err, errlen, "dlopen(%s): %s", lib, dlerror());
    return -1;
  }
  if (LOAD(api, get_device_list, "ibv_get_device_list", 1) ||
      LOAD(api, free_device_list, "ibv_free_device_list", 1) ||
      LOAD(api, get_device_name, "ibv_get_device_name", 1) || LOAD(api, open_device, "ibv_open_device", 1) ||
      LOAD(api, close_device, "ibv_close_device", 1) || LOAD(api, query_port, "ibv_query_port", 1) ||
      LOAD(api, query_gid, "ibv_query_gid", 1) || LOAD(api, query_gid_ex, "_ibv_query_gid_ex", 0) ||
      LOAD(api, alloc_pd, "ibv_alloc_pd", 1) || LOAD(api, dealloc_pd, "ibv_dealloc_pd", 1) ||
      LOAD(api, create_cq, "ibv_create_cq", 1) || LOAD(api, destroy_cq, "ibv_destroy_cq", 1) ||
      LOAD(api, create_qp, "ibv_create_qp", 1) || LOAD(api, modify_qp, "ibv_modify_qp", 1) ||
      LOAD(api, destroy_qp, "ibv_destroy_qp", 1))
    return -1;
  return 0;
}

/* gidpolicy: the pointers gidpolicy needs are a subset of ds4's struct. */
static gidpolicy_verbs_fns gid_fns(const struct ds4_tp_verbs_api* api) {
  gidpolicy_verbs_fns fns;
  memset(&fns, 0, sizeof fns);
  fns.query_port = api->query_port;
  fns.query_gid = api->query_gid;
  fns.query_gid_ex_sized = api->query_gid_ex;
  fns.get_device_name = api->get_device_name;
  return fns;
}

static void ds4_tp_rdma_close(struct ds4_tp_rdma* tp) {
  if (tp->qp) tp->api.destroy_qp(tp->qp);
  if (tp->cq) tp->api.destroy_cq(tp->cq);
  if (tp->pd) tp->api.dealloc_pd(tp->pd);
  if (tp->ctx) tp->api.close_device(tp->ctx);
  gidpolicy_plan_free(tp->sel);
  gidpolicy_table_free(tp->table);
  gidpolicy_profile_free(tp->policy);
  /* The library stays loaded (no dlclose): libibverbs keeps process-wide state (provider
   * plugins, device lists) for the life of the process, and unloading it is not supported. */
  memset(tp, 0, sizeof *tp);
}

static int open_device(struct ds4_tp_rdma* tp, const char* name, char* err, size_t errlen) {
  int n = 0, i;
  struct ibv_device** list = tp->api.get_device_list(&n);
  if (!list) {
    snprintf(err, errlen, "ibv_get_device_list: %s", strerror(errno));
    return -1;
  }
  for (i = 0; i < n && list[i]; i++) {
    if (name && strcmp(tp->api.get_device_name(list[i]), name) != 0) continue;
    tp->ctx = tp->api.open_device(list[i]);
    if (!tp->ctx)
      snprintf(err, errlen, "ibv_open_device(%s): %s", tp->api.get_device_name(list[i]), strerror(errno));
    break;
  }
  if (!tp->ctx && i == n) snprintf(err, errlen, "no RDMA device %s", name ? name : "at all");
  tp->api.free_device_list(list);
  return tp->ctx ? 0 : -1;
}

static int create_uc_qp(struct ds4_tp_rdma* tp, char* err, size_t errlen) {
  struct ibv_qp_init_attr init;
  struct ibv_qp_attr attr;
  int rc;
  tp->pd = tp->api.alloc_pd(tp->ctx);
  if (!tp->pd) return snprintf(err, errlen, "ibv_alloc_pd: %s", strerror(errno)), -1;
  tp->cq = tp->api.create_cq(tp->ctx, 16, NULL, NULL, 0);
  if (!tp->cq) return snprintf(err, errlen, "ibv_create_cq: %s", strerror(errno)), -1;
  memset(&init, 0, sizeof init);
  init.send_cq = tp->cq;
  init.recv_cq = tp->cq;
  init.qp_type = IBV_QPT_UC; /* Apple's Thunderbolt RDMA has UC queue pairs only */
  init.cap.max_send_wr = 16;
  init.cap.max_recv_wr = 16;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  tp->qp = tp->api.create_qp(tp->pd, &init);
  if (!tp->qp) return snprintf(err, errlen, "ibv_create_qp: %s", strerror(errno)), -1;
  memset(&attr, 0, sizeof attr);
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = 1;
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  rc = tp->api.modify_qp(tp->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (rc) return snprintf(err, errlen, "ibv_modify_qp(INIT): errno %d (%s)", rc, strerror(rc)), -1;
  return 0;
}

static int ds4_tp_rdma_open(struct ds4_tp_rdma* tp, const struct ds4_tp_rdma_opts* o, char* err,
                            size_t errlen) {
  char spec[256], text[GIDPOLICY_GID_STRLEN];
  uint8_t gid[16];
  gidpolicy_verbs_fns fns;
  gidpolicy_peer peer;
  struct ibv_qp_attr attr;
  int mask, rc;
  gidpolicy_rtr_options options;

  memset(tp, 0, sizeof *tp);
  if (ds4_tp_verbs_load(&tp->api, o->verbs_lib, err, errlen) || open_device(tp, o->device, err, errlen))
    return -1;
  fns = gid_fns(&tp->api);

  /* gidpolicy: the policy replaces ds4's scan and its unchecked forced index. */
  if (o->policy)
    snprintf(spec, sizeof spec, "%s", o->policy);
  else if (o->gid_index >= 0)
    snprintf(spec, sizeof spec, "validated:index=%d", o->gid_index);
  else if (o->local_addr)
    snprintf(spec, sizeof spec, "auto:local=%s", o->local_addr);
  else
    snprintf(spec, sizeof spec, "auto");
  if (gidpolicy_profile_parse(spec, &tp->policy, err, errlen) != GIDPOLICY_OK) return -1;

  /* gidpolicy: one snapshot of port 1, then one decision on it. */
  if (gidpolicy_snapshot(&fns, tp->ctx, 1, GIDPOLICY_SNAPSHOT_NO_NETDEV_NAMES, &tp->table, err, errlen) !=
      GIDPOLICY_OK)
    return -1;
  if (gidpolicy_select(tp->policy, tp->table, &tp->sel, err, errlen) != GIDPOLICY_OK) return -1;
  gidpolicy_plan_gid(tp->sel, gid);
  gidpolicy_gid_to_string(gid, text, sizeof text);
  printf("policy %s: advertise %s from index %u\n", spec, text, (unsigned)gidpolicy_plan_index(tp->sel));
  if (o->trace) {
    char trace[4096];
    gidpolicy_plan_trace(tp->sel, trace, sizeof trace);
    printf("%s\n", trace);
  }

  if (create_uc_qp(tp, err, errlen)) return -1;
  /* ... ds4 sends {qpn, psn, gid} over its TCP control socket and reads the peer's ... */

  /* gidpolicy: RTR from the same selection: sgid_index cannot disagree with the GID sent. */
  memset(&peer, 0, sizeof peer);
  peer.qpn = o->peer_qpn;
  peer.psn = o->peer_psn;
  memcpy(peer.gid, o->peer_gid, sizeof peer.gid);
  gidpolicy_rtr_options_init(&options);
  options.qp_type = IBV_QPT_UC; /* the type create_uc_qp() used: the QP's own type, never a default */
  if (gidpolicy_rtr_fill(tp->sel, &peer, &options, &attr, &mask, err, errlen) != GIDPOLICY_OK) return -1;

  /* gidpolicy: refuse a disagreeing pair, and re-read the slot (a port flap may have moved the
   * GID since the snapshot): fail here, not in modify_qp. --unchecked skips this, to show what
   * the driver itself says. */
  if (!o->unchecked && gidpolicy_preflight_plan(&fns, tp->ctx, 1, tp->sel, err, errlen) != GIDPOLICY_OK)
    return -1;
  rc = tp->api.modify_qp(tp->qp, &attr, mask);
  if (rc) {
    char why[2048];
    gidpolicy_explain_errno(rc, GIDPOLICY_PLATFORM_AUTO, tp->sel, &peer, why, sizeof why);
    snprintf(err, errlen, "ibv_modify_qp(RTR): %s", why);
    return -1;
  }
  gidpolicy_gid_to_string(attr.ah_attr.grh.dgid.raw, text, sizeof text);
  printf("RTR ok: sgid_index %u dgid %s dest_qp_num 0x%x rq_psn %u\n", (unsigned)attr.ah_attr.grh.sgid_index,
         text, attr.dest_qp_num, attr.rq_psn);
  return 0;
}

static int parse_u32(const char* s, uint32_t* out) {
  char* end;
  unsigned long v;
  errno = 0;
  v = strtoul(s, &end, 0);
  if (errno || *end || v > 0xffffffffUL) return -1;
  *out = (uint32_t)v;
  return 0;
}

/* The verbs library ds4 dlopen()s: Apple's Thunderbolt RDMA (macOS >= 26.2) or rdma-core. */
#if defined(__APPLE__)
#define DS4_STYLE_VERBS_LIB "librdma.dylib"
#else
#define DS4_STYLE_VERBS_LIB "libibverbs.so.1"
#endif

int main(int argc, char** argv) {
  struct ds4_tp_rdma_opts o;
  struct ds4_tp_rdma tp;
  char err[4096];
  int i, rc;

  memset(&o, 0, sizeof o);
  o.gid_index = -1;
  o.verbs_lib = DS4_STYLE_VERBS_LIB;
  o.peer_qpn = 0x11;
  o.peer_psn = 7;
  if (gidpolicy_gid_parse("::ffff:10.99.0.4", o.peer_gid, err, sizeof err) != GIDPOLICY_OK) return 2;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (!strcmp(a, "--trace") || !strcmp(a, "--unchecked")) {
      *(a[2] == 't' ? &o.trace : &o.unchecked) = 1;
      continue;
    }
    if (!v)
      bad = 1;
    else if (!strcmp(a, "--device"))
      o.device = v;
    else if (!strcmp(a, "--rdma-gid-index"))
      o.gid_index = atoi(v);
    else if (!strcmp(a, "--local-addr"))
      o.local_addr = v;
    else if (!strcmp(a, "--policy"))
      o.policy = v;
    else if (!strcmp(a, "--verbs-lib"))
      o.verbs_lib = v;
    else if (!strcmp(a, "--peer-gid"))
      bad = gidpolicy_gid_parse(v, o.peer_gid, err, sizeof err) != GIDPOLICY_OK;
    else if (!strcmp(a, "--peer-qpn"))
      bad = parse_u32(v, &o.peer_qpn);
    else if (!strcmp(a, "--peer-psn"))
      bad = parse_u32(v, &o.peer_psn);
    else
      bad = 1;
    if (bad) {
      fprintf(stderr,
              "usage: ds4_style [--device NAME] [--rdma-gid-index N] [--local-addr ADDR] [--policy SPEC]\n"
              "                 [--peer-gid GID] [--peer-qpn N] [--peer-psn N] [--verbs-lib PATH] [--trace]\n"
              "                 [--unchecked]\n");
      return 2;
    }
    i++;
  }

  rc = ds4_tp_rdma_open(&tp, &o, err, sizeof err);
  if (rc) fprintf(stderr, "ds4_style: rdma open failed: %s\n", err);
  ds4_tp_rdma_close(&tp);
  return rc ? 1 : 0;
}
