/* Harness for docs/adopting-ds4.md: a program shaped like the Linux RoCE path
 * of ds4's ds4_tp.c, with its struct, field and function names (ds4_tp, ds4_tp_rdma,
 * ds4_tp_verbs_api, ds4_tp_rdma_info, tp_rdma_load_api, tp_rdma_open,
 * tp_rdma_register_and_exchange, tp_rdma_recreate_qp, tp_rdma_close) so that the guide's
 * snippets compile here exactly as they are pasted there. The bodies are this project's own code,
 * reduced to what the GID choice and the queue pair transitions need.
 *
 * Two ranks run in one process, each with its own context on the same device; the "control
 * socket" exchange is a copy of one rank's ds4_tp_rdma_info into the other's r->peer. After both
 * RC queue pairs reach RTS, both ranks recreate theirs (tp_rdma_recreate_qp) and connect again: a
 * second RTR from the same selection. The guide's snippets are included where a fork puts them
 * (SNIPPET_STATE, SNIPPET_CHOOSE, SNIPPET_OPEN, SNIPPET_RTR, SNIPPET_CALL, SNIPPET_CLOSE).
 *
 *   docs_ds4_adoption LIBIBVERBS CONTROL_ADDR GID_INDEX        (GID_INDEX -1: not forced)
 *
 * CONTROL_ADDR is what getsockname() reports for the control socket (the test machine does not
 * hold the tables' addresses, so the harness answers getsockname() for the control descriptor).
 * Prints "modify_qp(RTR) calls: N" last: a refused choice or RTR never reaches the driver. */
#define _POSIX_C_SOURCE 200809L

#include <gidpolicy/gidpolicy.h>

#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef struct {
  const char* rdma_device;
  int rdma_gid_index;
  bool rdma_gid_index_set;
} ds4_tp_options;

/* What each rank sends over the control socket (ds4's field names). */
typedef struct {
  uint32_t qpn;
  uint32_t psn;
  uint32_t mtu;
  uint16_t lid;
  uint8_t gid[16];
  uint8_t link_layer;
} ds4_tp_rdma_info;

typedef struct {
  void* handle;
  struct ibv_device** (*get_device_list)(int*);
  void (*free_device_list)(struct ibv_device**);
  const char* (*get_device_name)(struct ibv_device*);
  struct ibv_context* (*open_device)(struct ibv_device*);
  int (*close_device)(struct ibv_context*);
  int (*query_port)(struct ibv_context*, uint8_t, struct ibv_port_attr*);
  int (*query_gid_ex)(struct ibv_context*, uint32_t, uint32_t, struct ibv_gid_entry*, uint32_t, size_t);
  struct ibv_pd* (*alloc_pd)(struct ibv_context*);
  int (*dealloc_pd)(struct ibv_pd*);
  struct ibv_cq* (*create_cq)(struct ibv_context*, int, void*, struct ibv_comp_channel*, int);
  int (*destroy_cq)(struct ibv_cq*);
  struct ibv_qp* (*create_qp)(struct ibv_pd*, struct ibv_qp_init_attr*);
  int (*destroy_qp)(struct ibv_qp*);
  int (*modify_qp)(struct ibv_qp*, struct ibv_qp_attr*, int);
} ds4_tp_verbs_api;

typedef struct {
  ds4_tp_verbs_api api;
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_qp* qp;
  struct ibv_port_attr port;
  union ibv_gid gid;
  int gid_index;
#include SNIPPET_STATE
  ds4_tp_rdma_info peer;
} ds4_tp_rdma;

typedef struct {
  ds4_tp_options opt;
  int control_fd;
  ds4_tp_rdma rdma;
} ds4_tp;

static void tp_set_err(char* err, size_t errlen, const char* fmt, ...) {
  va_list ap;
  if (!err || !errlen) return;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* The control socket's local address, as the test gives it ("-": getsockname() fails). */
static const char* control_addr;
enum { CONTROL_FD = 1000 };

static int harness_getsockname(int fd, struct sockaddr* addr, socklen_t* len) {
  struct sockaddr_in v4;
  struct sockaddr_in6 v6;
  memset(&v4, 0, sizeof v4);
  memset(&v6, 0, sizeof v6);
  if (fd != CONTROL_FD || strcmp(control_addr, "-") == 0) return errno = EBADF, -1;
  if (inet_pton(AF_INET, control_addr, &v4.sin_addr) == 1 && *len >= sizeof v4) {
    v4.sin_family = AF_INET;
    memcpy(addr, &v4, sizeof v4);
    *len = sizeof v4;
    return 0;
  }
  if (inet_pton(AF_INET6, control_addr, &v6.sin6_addr) == 1 && *len >= sizeof v6) {
    v6.sin6_family = AF_INET6;
    memcpy(addr, &v6, sizeof v6);
    *len = sizeof v6;
    return 0;
  }
  return errno = EINVAL, -1;
}
#define getsockname harness_getsockname

static int rtr_calls;
static int (*driver_modify_qp)(struct ibv_qp*, struct ibv_qp_attr*, int);

/* The driver's modify_qp, counting the transitions to RTR. */
static int counting_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask) {
  if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR) rtr_calls++;
  return driver_modify_qp(qp, attr, mask);
}

static int tp_rdma_load_api(ds4_tp_verbs_api* api, const char* lib) {
  const struct {
    const char* name;
    void* slot;
    size_t size;
  } syms[] = {
      {"ibv_get_device_list", &api->get_device_list, sizeof api->get_device_list},
      {"ibv_free_device_list", &api->free_device_list, sizeof api->free_device_list},
      {"ibv_get_device_name", &api->get_device_name, sizeof api->get_device_name},
      {"ibv_open_device", &api->open_device, sizeof api->open_device},
      {"ibv_close_device", &api->close_device, sizeof api->close_device},
      {"ibv_query_port", &api->query_port, sizeof api->query_port},
      {"_ibv_query_gid_ex", &api->query_gid_ex, sizeof api->query_gid_ex},
      {"ibv_alloc_pd", &api->alloc_pd, sizeof api->alloc_pd},
      {"ibv_dealloc_pd", &api->dealloc_pd, sizeof api->dealloc_pd},
      {"ibv_create_cq", &api->create_cq, sizeof api->create_cq},
      {"ibv_destroy_cq", &api->destroy_cq, sizeof api->destroy_cq},
      {"ibv_create_qp", &api->create_qp, sizeof api->create_qp},
      {"ibv_destroy_qp", &api->destroy_qp, sizeof api->destroy_qp},
      {"ibv_modify_qp", &api->modify_qp, sizeof api->modify_qp},
  };
  size_t i;
  api->handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!api->handle) return fprintf(stderr, "dlopen(%s): %s\n", lib, dlerror()), 0;
  for (i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void* sym = dlsym(api->handle, syms[i].name);
    if (!sym) return fprintf(stderr, "%s: %s\n", syms[i].name, dlerror()), 0;
    memcpy(syms[i].slot, &sym, syms[i].size); /* no ISO C object-to-function pointer cast */
  }
  driver_modify_qp = api->modify_qp;
  api->modify_qp = counting_modify_qp;
  return 1;
}

#include SNIPPET_CHOOSE
#include SNIPPET_RTR

static int tp_rdma_create_qp(ds4_tp_rdma* r) {
  struct ibv_qp_init_attr qia;
  memset(&qia, 0, sizeof qia);
  qia.send_cq = r->cq;
  qia.recv_cq = r->cq;
  qia.qp_type = IBV_QPT_RC; /* tp_rdma_qp_type() on Linux */
  qia.cap.max_send_wr = 64;
  qia.cap.max_recv_wr = 64;
  qia.cap.max_send_sge = 1;
  qia.cap.max_recv_sge = 1;
  r->qp = r->api.create_qp(r->pd, &qia);
  return r->qp != NULL;
}

static int tp_rdma_open(ds4_tp* tp, char* err, size_t errlen) {
  ds4_tp_rdma* r = &tp->rdma;
  int num = 0;
  struct ibv_device** devs = r->api.get_device_list(&num);
  const char* want_name = tp->opt.rdma_device;
  char states[256] = "";
  if (!devs || num == 0) {
    tp_set_err(err, errlen, "tp rdma: no verbs devices");
    if (devs) r->api.free_device_list(devs);
    return 0;
  }
#include SNIPPET_OPEN
  r->pd = r->api.alloc_pd(r->ctx);
  r->cq = r->pd ? r->api.create_cq(r->ctx, 512, NULL, NULL, 0) : NULL;
  if (!r->cq || !tp_rdma_create_qp(r)) {
    tp_set_err(err, errlen, "tp rdma: setup: %s", strerror(errno));
    return 0;
  }
  return 1;
}

/* ds4 sends these over the control socket; here the caller copies them into the peer's r->peer. */
static void tp_rdma_info(const ds4_tp* tp, ds4_tp_rdma_info* mine) {
  const ds4_tp_rdma* r = &tp->rdma;
  memset(mine, 0, sizeof *mine);
  mine->qpn = r->qp->qp_num;
  mine->psn = 7;
  mine->mtu = (uint32_t)r->port.active_mtu;
  mine->lid = r->port.lid;
  memcpy(mine->gid, r->gid.raw, 16); /* ds4: memcpy(mine.gid, r->gid.raw, 16) */
  mine->link_layer = r->port.link_layer;
}

/* The queue pair half of ds4's tp_rdma_register_and_exchange(), after r->peer was read. */
static int tp_rdma_register_and_exchange(ds4_tp* tp, char* err, size_t errlen) {
  ds4_tp_rdma* r = &tp->rdma;
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  if (r->api.modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) !=
      0) {
    tp_set_err(err, errlen, "tp rdma: modify INIT: %s", strerror(errno));
    return 0;
  }
#include SNIPPET_CALL
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 7;
  a.timeout = 14;
  a.retry_cnt = 3;
  a.rnr_retry = 3;
  a.max_rd_atomic = 1;
  if (r->api.modify_qp(r->qp, &a,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
    tp_set_err(err, errlen, "tp rdma: modify RTS: %s", strerror(errno));
    return 0;
  }
  return 1;
}

/* ds4's tp_rdma_recreate_qp(): a new queue pair on the same context (and the same GID). */
static int tp_rdma_recreate_qp(ds4_tp* tp, char* err, size_t errlen) {
  ds4_tp_rdma* r = &tp->rdma;
  if (r->qp) r->api.destroy_qp(r->qp);
  r->qp = NULL;
  if (!tp_rdma_create_qp(r)) {
    tp_set_err(err, errlen, "tp rdma: create_qp (retry): %s", strerror(errno));
    return 0;
  }
  return 1;
}

static void tp_rdma_close(ds4_tp* tp) {
  ds4_tp_rdma* r = &tp->rdma;
  if (r->qp) r->api.destroy_qp(r->qp);
  if (r->cq) r->api.destroy_cq(r->cq);
  if (r->pd) r->api.dealloc_pd(r->pd);
  if (r->ctx) r->api.close_device(r->ctx);
#include SNIPPET_CLOSE
  r->qp = NULL;
  r->cq = NULL;
  r->pd = NULL;
  r->ctx = NULL;
}

/* Both ranks exchange their info and connect (two RTRs). */
static int connect_pair(ds4_tp* tp, char* err, size_t errlen) {
  ds4_tp_rdma_info info0, info1;
  tp_rdma_info(&tp[0], &info0);
  tp_rdma_info(&tp[1], &info1);
  tp[0].rdma.peer = info1;
  tp[1].rdma.peer = info0;
  return tp_rdma_register_and_exchange(&tp[0], err, errlen) &&
         tp_rdma_register_and_exchange(&tp[1], err, errlen);
}

int main(int argc, char** argv) {
  char err[1024] = "";
  ds4_tp tp[2];
  int i, rc = 1;
  setvbuf(stdout, NULL, _IONBF, 0); /* stdout and ds4's stderr log in order */
  setvbuf(stderr, NULL, _IONBF, 0);
  if (argc != 4) return fprintf(stderr, "usage: %s LIBIBVERBS CONTROL_ADDR GID_INDEX\n", argv[0]), 2;
  control_addr = argv[2];
  memset(tp, 0, sizeof tp);
  for (i = 0; i < 2; i++) {
    tp[i].control_fd = CONTROL_FD;
    tp[i].opt.rdma_gid_index = atoi(argv[3]);
    tp[i].opt.rdma_gid_index_set = tp[i].opt.rdma_gid_index >= 0;
    if (!tp_rdma_load_api(&tp[i].rdma.api, argv[1])) return 2;
  }
  for (i = 0; i < 2; i++) {
    if (!tp_rdma_open(&tp[i], err, sizeof err)) {
      printf("refused: %s\n", err);
      goto out;
    }
  }
  if (!connect_pair(tp, err, sizeof err)) {
    printf("RTR failed: %s\n", err);
    goto out;
  }
  printf("connected: %d RTRs\n", rtr_calls);
  if (!tp_rdma_recreate_qp(&tp[0], err, sizeof err) || !tp_rdma_recreate_qp(&tp[1], err, sizeof err) ||
      !connect_pair(tp, err, sizeof err)) {
    printf("reconnect failed: %s\n", err);
    goto out;
  }
  printf("recreated: %d RTRs\n", rtr_calls);
  rc = 0;
out:
  printf("modify_qp(RTR) calls: %d\n", rtr_calls);
  for (i = 0; i < 2; i++) tp_rdma_close(&tp[i]);
  for (i = 0; i < 2; i++)
    if (tp[i].rdma.api.handle) dlclose(tp[i].rdma.api.handle);
  return rc;
}
