// The C API's ibv_context* entry points: gidpolicy::c_verbs, the only part of the C API that
// links libibverbs (through gidpolicy::verbs). Kept apart so that gidpolicy::c stays usable by
// programs that dlopen libibverbs or Apple's librdma and never link either (ds4, JACCL).
#include <gidpolicy/gidpolicy.h>

#include "capi_internal.hpp"

#include <gidpolicy/verbs/libibverbs_api.hpp>

extern "C" {

void gidpolicy_verbs_fns_libibverbs(gidpolicy_verbs_fns* fns) {
  if (!fns) return;
  // linked_libibverbs_functions() wraps verbs.h's macro and inlines (ibv_query_port,
  // ibv_query_gid_ex), so an extended verbs_context's own query_port is used when it has one.
  const gidpolicy::verbs::VerbsFunctions f = gidpolicy::verbs::linked_libibverbs_functions();
  *fns = gidpolicy_verbs_fns{};
  fns->query_port = f.query_port;
  fns->query_gid = f.query_gid;
  fns->query_gid_ex = f.query_gid_ex;
  fns->query_gid_ex_sized = f.query_gid_ex_sized;
  fns->get_device_name = f.get_device_name;
}

gidpolicy_status gidpolicy_snapshot_context(struct ibv_context* context, uint32_t port, unsigned flags,
                                            gidpolicy_table** out, char* err, size_t errlen) {
  gidpolicy_verbs_fns fns;
  gidpolicy_verbs_fns_libibverbs(&fns);
  return gidpolicy_snapshot(&fns, context, port, flags, out, err, errlen);
}

gidpolicy_status gidpolicy_watch_open_context(struct ibv_context* context, uint32_t port,
                                              const gidpolicy_plan* follow, gidpolicy_watch** out, char* err,
                                              size_t errlen) {
  gidpolicy_verbs_fns fns;
  gidpolicy_verbs_fns_libibverbs(&fns);
  const gidpolicy::verbs::VerbsFunctions f = gidpolicy::verbs::linked_libibverbs_functions();
  const gidpolicy_async_fns async_fns{f.get_async_event, f.ack_async_event};
  return gidpolicy_watch_open(&fns, &async_fns, context, port, follow, out, err, errlen);
}

}  // extern "C"
