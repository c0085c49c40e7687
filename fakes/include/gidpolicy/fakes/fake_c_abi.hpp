// The FakeVerbs model behind libibverbs' C signatures.
//
// Functions with exactly the signatures (and return conventions) of the libibverbs entry points
// gidpolicy uses, operating on the FakeVerbs bound with c_abi::Binding. Two users:
//  * tests of FunctionTableApi: a JACCL-shaped or ds4-shaped struct of function pointers is filled
//    with these, so the backend's C-convention handling runs against the fake;
//  * tests of the C API (gidpolicy.h), which take the same pointers.
// The drop-in fake libibverbs.so.1 is the other front over the same core (fakes/libibverbs/).
// Return conventions are rdma-core 44's, on purpose: NULL + errno (get_device_list with no
// device: NULL + ENOSYS as on a machine without RDMA; open_device, alloc_pd, create_cq,
// create_qp), 0 / -1 + errno (query_gid, an empty slot reads as zeros), a positive errno
// (query_port, query_gid_ex with ENODATA for an empty slot, modify_qp, query_qp, destroy_*),
// a count or a negative errno (query_gid_table); modify_qp also leaves its errno in errno. Each
// convention is one call frame of the guard every C entry point of the fakes runs in
// (c_guard.hpp), and the answers of the GID reads (flags, entry sizes, gid_type, errnos) and of
// the QP calls (create_qp's checks of CQs, type, SRQ and capabilities against the device's
// limits; query_qp's attributes, capabilities and init_attr; modify_qp's errno) are the C core's
// (fake_c_core.hpp), which the drop-in library answers with too: the two fronts give the same
// answers.
//
// The binding is process-wide (libibverbs' own list has no user pointer) and not meant to change
// while calls are in flight; the model itself is thread-safe.
//
// Example:
//   gidpolicy::fakes::FakeVerbs fake;
//   if (auto ok = fake.load_file(path); !ok) return ok.error();
//   gidpolicy::fakes::c_abi::Binding bind(fake);
//   gidpolicy::verbs::FunctionTableApi api(gidpolicy::fakes::c_abi::functions(),
//                                          {.resolve_netdev_names = false});
#pragma once

#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/verbs/functions.hpp>

#include <infiniband/verbs.h>

#include <sys/types.h>
#include <cstddef>
#include <cstdint>

namespace gidpolicy::fakes::c_abi {

/// Route the functions below to `model` (nullptr: unbind; calls then behave as libibverbs
/// without RDMA). Objects handed out for a previous model must not be used afterwards.
void bind(FakeVerbs* model) noexcept;
[[nodiscard]] FakeVerbs* bound() noexcept;

/// RAII: bind on construction, restore the previous binding on destruction.
class Binding {
 public:
  explicit Binding(FakeVerbs& model) noexcept : previous_(bound()) { bind(&model); }
  ~Binding() { bind(previous_); }
  Binding(const Binding&) = delete;
  Binding& operator=(const Binding&) = delete;

 private:
  FakeVerbs* previous_;
};

ibv_device** get_device_list(int* num_devices);
void free_device_list(ibv_device** list);
const char* get_device_name(ibv_device* device);
ibv_context* open_device(ibv_device* device);
int close_device(ibv_context* context);
/// Fills the whole ibv_port_attr (state, MTUs, gid_tbl_len, lid, link_layer).
int query_port(ibv_context* context, std::uint8_t port_num, ibv_port_attr* attr);
int query_gid(ibv_context* context, std::uint8_t port_num, int index, ibv_gid* gid);
/// The exported _ibv_query_gid_ex form (entry_size must be at least sizeof(ibv_gid_entry)).
int query_gid_ex(ibv_context* context, std::uint32_t port_num, std::uint32_t gid_index, ibv_gid_entry* entry,
                 std::uint32_t flags, std::size_t entry_size);
/// The exported _ibv_query_gid_table form.
ssize_t query_gid_table(ibv_context* context, ibv_gid_entry* entries, std::size_t max_entries,
                        std::uint32_t flags, std::size_t entry_size);
ibv_pd* alloc_pd(ibv_context* context);
int dealloc_pd(ibv_pd* pd);
ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector);
int destroy_cq(ibv_cq* cq);
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask);
int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init_attr);
int destroy_qp(ibv_qp* qp);
/// 0 and the next event; blocks until one is pending unless async_fd is O_NONBLOCK (then -1 +
/// EAGAIN), as libibverbs does. async_fd is the model's eventfd for the context's handle.
int get_async_event(ibv_context* context, ibv_async_event* event);
/// Accepts any event (libibverbs only counts port and GID events).
void ack_async_event(ibv_async_event* event);

/// All of the above as a VerbsFunctions table (the sized GID-entry forms).
verbs::VerbsFunctions functions() noexcept;

}  // namespace gidpolicy::fakes::c_abi
