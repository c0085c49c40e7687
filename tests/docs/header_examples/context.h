/* What the C API's `Example:` lines in gidpolicy.h are given (see context.hpp for the C++
 * headers): each is the body of a function returning gidpolicy_status that starts with
 * EXAMPLE_CONTEXT. */
#ifndef GIDPOLICY_TESTS_HEADER_EXAMPLES_CONTEXT_H
#define GIDPOLICY_TESTS_HEADER_EXAMPLES_CONTEXT_H

#include <gidpolicy/gidpolicy.h>

#include <infiniband/verbs.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A program's own table of verbs entry points (ds4's `api`). */
struct example_api {
  int (*query_port)(struct ibv_context*, uint8_t, struct ibv_port_attr*);
  int (*query_gid)(struct ibv_context*, uint8_t, int, union ibv_gid*);
  int (*get_async_event)(struct ibv_context*, struct ibv_async_event*);
  void (*ack_async_event)(struct ibv_async_event*);
};

struct example_context {
  const struct example_api* api;
  struct ibv_context* ctx;
  struct ibv_qp* qp;
  const gidpolicy_profile* pol;
  const gidpolicy_table* const* tables;
  size_t n;
  const gidpolicy_plan* sel;
  gidpolicy_peer peer;
  gidpolicy_verbs_fns fns;
  gidpolicy_watch* w;
  void* state;
  const uint8_t* my_gid;
  uint32_t sgid_index;
};

void on_change(void* user, gidpolicy_change_kind kind, uint32_t index, const char* description);

#define EXAMPLE_CONTEXT(x)                                                                                  \
  const struct example_api* api = (x)->api;                                                                 \
  struct ibv_context* ctx = (x)->ctx;                                                                       \
  struct ibv_qp* qp = (x)->qp;                                                                              \
  const gidpolicy_profile* pol = (x)->pol;                                                                  \
  const gidpolicy_table* const* tables = (x)->tables;                                                       \
  size_t n = (x)->n;                                                                                        \
  size_t k = 0;                                                                                             \
  const gidpolicy_plan* sel = (x)->sel;                                                                     \
  gidpolicy_plan* plan = NULL;                                                                              \
  gidpolicy_peer peer = (x)->peer;                                                                          \
  gidpolicy_verbs_fns fns = (x)->fns;                                                                       \
  gidpolicy_table* table = NULL;                                                                            \
  gidpolicy_watch* w = (x)->w;                                                                              \
  gidpolicy_watch_thread* t = NULL;                                                                         \
  void* state = (x)->state;                                                                                 \
  const uint8_t* my_gid = (x)->my_gid;                                                                      \
  char err[256] = {0};                                                                                      \
  int rc = 0;                                                                                               \
  struct ibv_qp_attr attr = {0};                                                                            \
  uint32_t sgid_index = (x)->sgid_index;                                                                    \
  (void)api, (void)ctx, (void)qp, (void)pol, (void)tables, (void)n, (void)k, (void)sel, (void)plan,         \
      (void)peer, (void)fns, (void)table, (void)w, (void)t, (void)state, (void)my_gid, (void)err, (void)rc, \
      (void)attr, (void)sgid_index

#endif
