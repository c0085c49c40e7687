#include <gidpolicy/verbs/libibverbs_api.hpp>

#include <infiniband/verbs.h>

namespace gidpolicy::verbs {
namespace {

// verbs.h makes these macros or static inlines: wrap them so the table holds real functions
// and the inline's logic (extended contexts, entry sizes) is kept.
int query_port_inline(ibv_context* ctx, std::uint8_t port, ibv_port_attr* attr) {
  return ibv_query_port(ctx, port, attr);
}
int query_gid_ex_inline(ibv_context* ctx, std::uint32_t port, std::uint32_t index, ibv_gid_entry* entry,
                        std::uint32_t flags) {
  return ibv_query_gid_ex(ctx, port, index, entry, flags);
}
ssize_t query_gid_table_inline(ibv_context* ctx, ibv_gid_entry* entries, std::size_t max,
                               std::uint32_t flags) {
  return ibv_query_gid_table(ctx, entries, max, flags);
}

}  // namespace

VerbsFunctions linked_libibverbs_functions() noexcept {
  VerbsFunctions f;
  f.get_device_list = &ibv_get_device_list;
  f.free_device_list = &ibv_free_device_list;
  f.get_device_name = &ibv_get_device_name;
  f.open_device = &ibv_open_device;
  f.close_device = &ibv_close_device;
  f.query_port = &query_port_inline;
  f.query_gid = &ibv_query_gid;
  f.query_gid_ex = &query_gid_ex_inline;
  f.query_gid_table = &query_gid_table_inline;
  f.alloc_pd = &ibv_alloc_pd;
  f.dealloc_pd = &ibv_dealloc_pd;
  f.create_cq = &ibv_create_cq;
  f.destroy_cq = &ibv_destroy_cq;
  f.create_qp = &ibv_create_qp;
  f.modify_qp = &ibv_modify_qp;
  f.query_qp = &ibv_query_qp;
  f.destroy_qp = &ibv_destroy_qp;
  // The exported function behind verbs.h's ibv_reg_mr macro (the name is not followed by "(").
  f.reg_mr = &ibv_reg_mr;
  f.dereg_mr = &ibv_dereg_mr;
  f.get_async_event = &ibv_get_async_event;
  f.ack_async_event = &ibv_ack_async_event;
  return f;
}

}  // namespace gidpolicy::verbs
