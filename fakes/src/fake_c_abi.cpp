#include <gidpolicy/fakes/fake_c_abi.hpp>
#include <gidpolicy/fakes/fake_c_core.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace gidpolicy::fakes::c_abi {
namespace {

struct Context {
  std::unique_ptr<ibv_context> ctx;
  DeviceHandle handle;
};
struct Qp {
  std::unique_ptr<ibv_qp> qp;
  QpHandle handle;
  ibv_qp_init_attr created{};  // what ibv_query_qp reports back (the core's query_qp)
};

struct State {
  std::mutex mu;
  FakeVerbs* model = nullptr;
  // ibv_device objects live as long as the process (libibverbs keeps them alive across
  // free_device_list too: a program may open a device after freeing the list).
  std::map<std::string, std::unique_ptr<ibv_device>> devices;
  std::map<const ibv_context*, Context> contexts;
  std::map<const ibv_qp*, Qp> qps;
  std::set<const ibv_pd*> pds;
  std::set<const ibv_cq*> cqs;

  /// Drop everything handed out for a model (a rebinding invalidates it).
  void reset() {
    contexts.clear();
    qps.clear();
    for (const ibv_pd* p : pds) delete p;
    for (const ibv_cq* c : cqs) delete c;
    pds.clear();
    cqs.clear();
  }
  ~State() { reset(); }
};

State& state() {
  static State s;
  return s;
}

using c_core::to_errno;

ibv_device* device_object(State& s, const std::string& name, int index) {
  auto& slot = s.devices[name];
  if (!slot) {
    slot = std::make_unique<ibv_device>();
    c_core::describe_device(*s.model, name, index, slot.get());  // the core's, as the drop-in's
  }
  return slot.get();
}

Context* context_of(State& s, const ibv_context* ctx) {
  auto it = s.contexts.find(ctx);
  return it == s.contexts.end() ? nullptr : &it->second;
}

Qp* qp_of(State& s, const ibv_qp* qp) {
  auto it = s.qps.find(qp);
  return it == s.qps.end() ? nullptr : &it->second;
}

}  // namespace

void bind(FakeVerbs* model) noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.model != model) s.reset();
  s.model = model;
}

FakeVerbs* bound() noexcept {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.model;
}

ibv_device** get_device_list(int* num_devices) {
  return c_core::pointer_frame([&](int& err) -> ibv_device** {
    State& s = state();
    std::lock_guard lock(s.mu);
    if (num_devices) *num_devices = 0;
    if (!s.model) {
      err = ENOSYS;  // what libibverbs says on a machine without an RDMA kernel
      return nullptr;
    }
    auto names = s.model->device_names();
    std::vector<std::string> list;
    if (names) {
      list = std::move(names).value();
    } else if (!(names.error() == errc::no_devices)) {
      err = to_errno(names.error());
      return nullptr;
    }
    auto* out = new ibv_device*[list.size() + 1];
    for (std::size_t i = 0; i < list.size(); ++i) out[i] = device_object(s, list[i], static_cast<int>(i));
    out[list.size()] = nullptr;
    if (num_devices) *num_devices = static_cast<int>(list.size());
    return out;
  });
}

void free_device_list(ibv_device** list) { delete[] list; }

const char* get_device_name(ibv_device* device) { return device ? device->name : nullptr; }

ibv_context* open_device(ibv_device* device) {
  return c_core::pointer_frame([&](int& err) -> ibv_context* {
    State& s = state();
    std::lock_guard lock(s.mu);
    if (!s.model) {
      err = ENOSYS;
      return nullptr;
    }
    // Only a device this front's list handed out (never one looked up by the name a caller's
    // struct holds); anything else is ENODEV, as the drop-in answers.
    auto known = std::find_if(s.devices.begin(), s.devices.end(),
                              [&](const auto& kv) { return kv.second.get() == device; });
    if (!device || known == s.devices.end()) {
      err = ENODEV;
      return nullptr;
    }
    auto h = s.model->open_device(known->first);
    if (!h) {
      err = to_errno(h.error());
      return nullptr;
    }
    auto ctx = std::make_unique<ibv_context>();
    std::memset(ctx.get(), 0, sizeof(ibv_context));
    ctx->device = device;
    ctx->cmd_fd = -1;
    // The model's per-handle eventfd: readable while an asynchronous event is pending.
    auto afd = s.model->async_event_fd(h.value());
    ctx->async_fd = afd ? afd.value() : -1;
    ctx->num_comp_vectors = 1;
    ibv_context* raw = ctx.get();
    s.contexts.emplace(raw, Context{std::move(ctx), h.value()});
    return raw;
  });
}

int close_device(ibv_context* context) {
  return c_core::errno_frame([&] {
    State& s = state();
    std::lock_guard lock(s.mu);
    Context* c = s.model ? context_of(s, context) : nullptr;
    if (!c) return EINVAL;
    auto r = s.model->close_device(c->handle);
    if (!r) return to_errno(r.error());
    // The model destroyed the QPs of this context; drop their C objects too.
    for (auto it = s.qps.begin(); it != s.qps.end();)
      it = it->second.qp->context == context ? s.qps.erase(it) : std::next(it);
    s.contexts.erase(context);
    return 0;
  });
}

int query_port(ibv_context* context, std::uint8_t port_num, ibv_port_attr* attr) {
  return c_core::errno_frame([&] {
    State& s = state();
    std::lock_guard lock(s.mu);
    Context* c = s.model ? context_of(s, context) : nullptr;
    if (!c) return EINVAL;
    return c_core::query_port(*s.model, c->handle, port_num, attr);
  });
}

// query_port and the GID reads: the answers are the core's (fake_c_core.hpp), shared with the drop-in
// library.
int query_gid(ibv_context* context, std::uint8_t port_num, int index, ibv_gid* gid) {
  return c_core::minus_one_frame([&] {
    State& s = state();
    std::lock_guard lock(s.mu);
    Context* c = s.model ? context_of(s, context) : nullptr;
    if (!c) return EINVAL;
    return c_core::query_gid(*s.model, c->handle, port_num, index, gid);
  });
}

int query_gid_ex(ibv_context* context, std::uint32_t port_num, std::uint32_t gid_index, ibv_gid_entry* entry,
                 std::uint32_t flags, std::size_t entry_size) {
  return c_core::errno_frame([&] {
    State& s = state();
    std::lock_guard lock(s.mu);
    Context* c = s.model ? context_of(s, context) : nullptr;
    if (!c) return EINVAL;
    return c_core::query_gid_ex(*s.model, c->handle, port_num, gid_index, entry, flags, entry_size);
  });
}

ssize_t query_gid_table(ibv_context* context, ibv_gid_entry* entries, std::size_t max_entries,
                        std::uint32_t flags, std::size_t entry_size) {
  return c_core::count_frame([&]() -> ssize_t {
    State& s = state();
    std::lock_guard lock(s.mu);
    Context* c = s.model ? context_of(s, context) : nullptr;
    if (!c) return -EINVAL;
    return c_core::query_gid_table(*s.model, c->handle, entries, max_entries, flags, entry_size);
  });
}

ibv_pd* alloc_pd(ibv_context* context) {
  return c_core::pointer_frame([&](int& err) -> ibv_pd* {
    State& s = state();
    std::lock_guard lock(s.mu);
    if (!s.model || !context_of(s, context)) {
      err = EINVAL;
      return nullptr;
    }
    auto pd = std::make_unique<ibv_pd>(ibv_pd{context, 0});
    s.pds.insert(pd.get());
    return pd.release();
  });
}

int dealloc_pd(ibv_pd* pd) {
  return c_core::errno_frame([&] {
    State& s = state();
    std::lock_guard lock(s.mu);
    if (!s.pds.erase(pd)) return EINVAL;
    delete pd;
    return 0;
  });
}

ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector) {
  (void)comp_vector;
  return c_core::pointer_frame([&](int& err) -> ibv_cq* {
    State& s = state();
    std::lock_guard lock(s.mu);
    if (!s.model || !context_of(s, context) || cqe < 1) {
      err = EINVAL;
      return nullptr;
    }
    auto cq = std::make_unique<ibv_cq>();
    std::memset(cq.get(), 0, sizeof(ibv_cq));
    cq->context = context;
    cq->channel = channel;
    cq->cq_context = cq_context;
    cq->cqe = cqe;
    s.cqs.insert(cq.get());
    return cq.release();
  });
}

int destroy_cq(ibv_cq* cq) {
  return c_core::errno_frame([&] {
    State& s = state();
    std::lock_guard lock(s.mu);
    if (!s.cqs.erase(cq)) return EINVAL;
    delete cq;
    return 0;
  });
}

// The QP calls: the checks, errnos and answers are the core's (fake_c_core.hpp), shared with the
// drop-in library; this front only finds its own objects.
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  return c_core::pointer_frame([&](int& err) -> ibv_qp* {
    State& s = state();
    std::lock_guard lock(s.mu);
    Context* c = (s.model && pd && s.pds.count(pd)) ? context_of(s, pd->context) : nullptr;
    if (!c) {
      err = EINVAL;
      return nullptr;
    }
    c_core::QpObjects objects;
    if (attr) {
      auto ours = [&](const ibv_cq* cq) { return s.cqs.count(cq) != 0 && cq->context == pd->context; };
      objects.send_cq = ours(attr->send_cq);
      objects.recv_cq = ours(attr->recv_cq);
      objects.srq = attr->srq == nullptr;  // this front hands out no SRQs: any other is foreign
    }
    unsigned in_use = 0;  // the device's QPs, as the drop-in counts them
    for (const auto& [raw, q] : s.qps) in_use += raw->context->device == pd->context->device ? 1u : 0u;
    QpKind kind = QpKind::uc;
    if ((err = c_core::check_create_qp(attr, objects, c_core::kDeviceLimits, in_use, &kind)) != 0)
      return nullptr;
    QpHandle h;
    if ((err = c_core::create_qp(*s.model, c->handle, kind, &h)) != 0) return nullptr;
    auto qp = std::make_unique<ibv_qp>();
    std::memset(qp.get(), 0, sizeof(ibv_qp));
    qp->context = pd->context;
    qp->qp_context = attr->qp_context;
    qp->pd = pd;
    qp->send_cq = attr->send_cq;
    qp->recv_cq = attr->recv_cq;
    qp->srq = attr->srq;
    qp->qp_num = s.model->qp(h).value().qp_num;
    qp->handle = qp->qp_num;
    qp->state = IBV_QPS_RESET;
    qp->qp_type = attr->qp_type;
    ibv_qp* raw = qp.get();
    s.qps.emplace(raw, Qp{std::move(qp), h, *attr});
    return raw;
  });
}

int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  return c_core::errno_set_frame([&] {
    State& s = state();
    std::lock_guard lock(s.mu);
    Qp* q = s.model ? qp_of(s, qp) : nullptr;
    if (!q) return EINVAL;
    if (const int err = c_core::modify_qp(*s.model, q->handle, attr, mask)) return err;
    if (mask & IBV_QP_STATE) qp->state = attr->qp_state;  // as rdma-core's ibv_modify_qp
    return 0;
  });
}

int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init_attr) {
  return c_core::errno_frame([&] {
    State& s = state();
    std::lock_guard lock(s.mu);
    Qp* q = s.model ? qp_of(s, qp) : nullptr;
    if (!q) return EINVAL;
    if (const int err = c_core::query_qp(*s.model, q->handle, q->created, attr, init_attr)) return err;
    if (mask & IBV_QP_STATE) qp->state = attr->qp_state;  // rdma-core refreshes the struct's field
    return 0;
  });
}

int destroy_qp(ibv_qp* qp) {
  return c_core::errno_frame([&] {
    State& s = state();
    std::lock_guard lock(s.mu);
    Qp* q = s.model ? qp_of(s, qp) : nullptr;
    if (!q) return EINVAL;
    auto r = s.model->destroy_qp(q->handle);
    if (!r) return to_errno(r.error());
    s.qps.erase(qp);
    return 0;
  });
}

int get_async_event(ibv_context* context, ibv_async_event* event) {
  return c_core::minus_one_frame([&] {
    State& s = state();
    FakeVerbs* model = nullptr;
    DeviceHandle handle;
    int fd = -1;
    {
      std::lock_guard lock(s.mu);
      Context* c = s.model ? context_of(s, context) : nullptr;
      if (!c || !event) return EINVAL;
      model = s.model;
      handle = c->handle;
      fd = context->async_fd;
    }
    // libibverbs blocks unless the program made async_fd non-blocking; the wait happens without
    // the binding's lock so other calls (the ones that raise events) proceed meanwhile.
    auto ev = model->wait_async_event(handle, fd);
    if (!ev) return to_errno(ev.error());
    *event = ev.value().raw;
    return 0;
  });
}

void ack_async_event(ibv_async_event* event) {
  // libibverbs' ack of a port or GID event only counts it; the struct does not name the
  // context, so the binding cannot route it to one handle of the model.
  (void)event;
}

verbs::VerbsFunctions functions() noexcept {
  verbs::VerbsFunctions f;
  f.get_device_list = &get_device_list;
  f.free_device_list = &free_device_list;
  f.get_device_name = &get_device_name;
  f.open_device = &open_device;
  f.close_device = &close_device;
  f.query_port = &query_port;
  f.query_gid = &query_gid;
  f.query_gid_ex_sized = &query_gid_ex;
  f.query_gid_table_sized = &query_gid_table;
  f.alloc_pd = &alloc_pd;
  f.dealloc_pd = &dealloc_pd;
  f.create_cq = &create_cq;
  f.destroy_cq = &destroy_cq;
  f.create_qp = &create_qp;
  f.modify_qp = &modify_qp;
  f.query_qp = &query_qp;
  f.destroy_qp = &destroy_qp;
  f.get_async_event = &get_async_event;
  f.ack_async_event = &ack_async_event;
  return f;
}

}  // namespace gidpolicy::fakes::c_abi
