// LibibverbsApi: the VerbsApi backend linked against libibverbs (target gidpolicy::verbs).
//
// Not in <gidpolicy/gidpolicy.hpp>: including it commits the program to linking gidpolicy::verbs
// and so libibverbs, which the front door (gidpolicy::gidpolicy) never links, so that a program
// built on it still starts where libibverbs is absent (DlopenApi reports that as a value).
//
// For programs that link libibverbs anyway. It calls the verbs.h inlines and macros themselves
// (ibv_query_port, ibv_query_gid_ex, ibv_query_gid_table), so an extended verbs_context's
// query_port is used when the provider has one, and prefers one ibv_query_gid_table call,
// then per-index ibv_query_gid_ex, then ibv_query_gid (see snapshot()).
//
// Hardware gotchas encoded here:
//  * On a machine without an RDMA kernel ibv_get_device_list returns NULL with errno ENOSYS:
//    every call that needs a device fails with errc::no_devices, never crashes.
//  * rdma-core older than v32 lacks ibv_query_gid_ex/_table: this backend then needs a
//    rebuild against it, while DlopenApi detects the missing symbols at run time.
//
// Example:
//   #include <gidpolicy/verbs/libibverbs_api.hpp>      // link gidpolicy::verbs
//   gidpolicy::verbs::LibibverbsApi api;
//   auto table = gidpolicy::verbs::snapshot(api, "mlx5_0", 1);
#pragma once

#include <gidpolicy/verbs/function_table_api.hpp>

namespace gidpolicy::verbs {

/// The libibverbs entry points this build was linked with (inline wrappers where verbs.h has
/// macros or inlines). Usable with FunctionTableApi directly.
VerbsFunctions linked_libibverbs_functions() noexcept;

/// VerbsApi over the linked libibverbs. Not thread-safe.
class LibibverbsApi final : public FunctionTableApi {
 public:
  LibibverbsApi() : FunctionTableApi(linked_libibverbs_functions(), Options{"libibverbs", true}) {}
};

}  // namespace gidpolicy::verbs
