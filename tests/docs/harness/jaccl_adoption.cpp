// Harness for docs/adopting-jaccl.md: a program shaped like JACCL's
// connection setup (mlx/distributed/jaccl/lib/jaccl/rdma.{h,cpp}): an IBVWrapper of dlopen()ed
// verbs, a Destination exchanged over the side channel, and a Connection per peer whose info()
// chooses the GID and whose queue_pair_rtr() routes from it. The guide's snippets are the header
// part (SNIPPET_HEADER: the Connection declaration) and the source part (SNIPPET_SOURCE: the
// members that change); the rest of Connection is written here the way JACCL writes it.
//
//   docs_jaccl_adoption LIBIBVERBS        (JACCL_GID_POLICY in the environment, as in JACCL)
//
// Two Connections on the first device connect to each other (loopback, as two hosts would), one
// of them moved into a vector first, as create_connections() does. Prints "modify_qp(RTR) calls:
// N" last: a refused selection or RTR never reaches the driver.
#include <gidpolicy/gidpolicy.h>

#include <infiniband/verbs.h>

#include <dlfcn.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace jaccl {

struct IBVWrapper {
  ibv_device** (*get_device_list)(int*);
  ibv_context* (*open_device)(ibv_device*);
  void (*free_device_list)(ibv_device**);
  int (*close_device)(ibv_context*);
  ibv_pd* (*alloc_pd)(ibv_context*);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroy_cq)(ibv_cq*);
  int (*destroy_qp)(ibv_qp*);
  int (*dealloc_pd)(ibv_pd*);
  int (*query_port)(ibv_context*, uint8_t, ibv_port_attr*);
  int (*query_gid)(ibv_context*, uint8_t, int, ibv_gid*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
};

IBVWrapper& ibv() {
  static IBVWrapper w{};
  return w;
}

struct Destination {
  int local_id;
  int queue_pair_number;
  int packet_sequence_number;
  ibv_gid global_identifier;
};

}  // namespace jaccl

#include SNIPPET_HEADER

namespace jaccl {

// Connection as JACCL writes it, except the members the guide changes.
Connection::Connection(ibv_context* ctx_)
    : ctx(ctx_), protection_domain(nullptr), completion_queue(nullptr), queue_pair(nullptr) {
  src.local_id = -1;
}

void Connection::allocate_protection_domain() {
  protection_domain = ibv().alloc_pd(ctx);
  if (protection_domain == nullptr) throw std::runtime_error("[jaccl] Couldn't allocate protection domain");
}

void Connection::create_completion_queue(int num_entries) {
  completion_queue = ibv().create_cq(ctx, num_entries, nullptr, nullptr, 0);
  if (completion_queue == nullptr) throw std::runtime_error("[jaccl] Couldn't create completion queue");
}

void Connection::create_queue_pair() {
  ibv_qp_init_attr init_attr{};
  init_attr.qp_context = ctx;
  init_attr.send_cq = completion_queue;
  init_attr.recv_cq = completion_queue;
  init_attr.cap.max_send_wr = 32;
  init_attr.cap.max_recv_wr = 32;
  init_attr.cap.max_send_sge = 1;
  init_attr.cap.max_recv_sge = 1;
  init_attr.qp_type = IBV_QPT_UC;
  queue_pair = ibv().create_qp(protection_domain, &init_attr);
  if (queue_pair == nullptr) throw std::runtime_error("[jaccl] Creating the queue pair failed");
}

void Connection::queue_pair_init() {
  ibv_qp_attr attr = {};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  attr.pkey_index = 0;
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  const int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  if (int status = ibv().modify_qp(queue_pair, &attr, mask); status != 0)
    throw std::invalid_argument("[jaccl] Changing queue pair to INIT failed with errno " +
                                std::to_string(status));
}

void Connection::queue_pair_rts() {
  ibv_qp_attr attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = static_cast<uint32_t>(src.packet_sequence_number);
  if (int status = ibv().modify_qp(queue_pair, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN); status != 0)
    throw std::invalid_argument("[jaccl] Changing queue pair to RTS failed with errno " +
                                std::to_string(status));
}

}  // namespace jaccl

#include SNIPPET_SOURCE

namespace {

int rtr_calls = 0;
int (*real_modify_qp)(ibv_qp*, ibv_qp_attr*, int) = nullptr;

int counting_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR) ++rtr_calls;
  return real_modify_qp(qp, attr, mask);
}

template <class F>
void load(void* handle, const char* name, F& slot) {
  void* sym = dlsym(handle, name);
  if (!sym) throw std::runtime_error(std::string(name) + ": " + dlerror());
  std::memcpy(&slot, &sym, sizeof slot);
}

void load_verbs(const char* lib) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) throw std::runtime_error(std::string("dlopen: ") + dlerror());
  auto& w = jaccl::ibv();
  load(h, "ibv_get_device_list", w.get_device_list);
  load(h, "ibv_open_device", w.open_device);
  load(h, "ibv_free_device_list", w.free_device_list);
  load(h, "ibv_close_device", w.close_device);
  load(h, "ibv_alloc_pd", w.alloc_pd);
  load(h, "ibv_create_qp", w.create_qp);
  load(h, "ibv_create_cq", w.create_cq);
  load(h, "ibv_destroy_cq", w.destroy_cq);
  load(h, "ibv_destroy_qp", w.destroy_qp);
  load(h, "ibv_dealloc_pd", w.dealloc_pd);
  load(h, "ibv_query_port", w.query_port);
  load(h, "ibv_query_gid", w.query_gid);
  load(h, "ibv_modify_qp", real_modify_qp);
  w.modify_qp = counting_modify_qp;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: %s LIBIBVERBS\n", argv[0]), 2;
  int rc = 1;
  ibv_device** list = nullptr;  // freed on every path, the refusals included
  try {
    load_verbs(argv[1]);
    int n = 0;
    list = jaccl::ibv().get_device_list(&n);
    if (!list || n < 1) throw std::runtime_error("no RDMA device");
    std::vector<jaccl::Connection> conns;
    for (int k = 0; k < 2; ++k) {
      jaccl::Connection c(jaccl::ibv().open_device(list[0]));
      c.allocate_protection_domain();
      c.create_completion_queue(8);
      c.create_queue_pair();
      if (k == 0) (void)c.info();  // choose before the move: the selection must move with it
      conns.push_back(std::move(c));
      if (c.gid_selection != nullptr)
        throw std::runtime_error("the moved-from Connection kept its selection");
    }
    jaccl::ibv().free_device_list(list);
    list = nullptr;
    const jaccl::Destination a = conns[0].info();
    const jaccl::Destination b = conns[1].info();
    char text[GIDPOLICY_GID_STRLEN];
    gidpolicy_gid_to_string(a.global_identifier.raw, text, sizeof text);
    std::printf("advertise %s from index %u\n", text, gidpolicy_plan_index(conns[0].gid_selection));
    for (auto& c : conns) c.queue_pair_init();
    conns[0].queue_pair_rtr(b);
    conns[1].queue_pair_rtr(a);
    for (auto& c : conns) c.queue_pair_rts();
    std::printf("connected: %d RTRs\n", rtr_calls);
    rc = 0;
  } catch (const std::exception& e) {
    std::printf("refused: %s\n", e.what());
  }
  if (list != nullptr) jaccl::ibv().free_device_list(list);
  std::printf("modify_qp(RTR) calls: %d\n", rtr_calls);
  return rc;
}
