#include <gidpolicy/fakes/fake_c_abi.hpp>

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

/// The errno a C caller sees for an Error: driver errnos as they are, gidpolicy's own codes
/// through their generic condition (no_devices -> ENODEV...), EINVAL otherwise.
int to_errno(const Error& e) {
  if (e.code.category() == std::generic_category()) return e.code.value();
  const std::error_condition c = e.code.default_error_condition();
  if (c.category() == std::generic_category() && c.value() != 0) return c.value();
  return EINVAL;
}

ibv_device* device_object(State& s, const std::string& name) {
  auto& slot = s.devices[name];
  if (!slot) {
    slot = std::make_unique<ibv_device>();
    std::memset(slot.get(), 0, sizeof(ibv_device));
    slot->node_type = IBV_NODE_CA;
    slot->transport_type = IBV_TRANSPORT_IB;
    const std::size_t n = std::min(name.size(), sizeof(slot->name) - 1);
    std::memcpy(slot->name, name.data(), n);
    std::memcpy(slot->dev_name, name.data(), std::min(name.size(), sizeof(slot->dev_name) - 1));
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
  State& s = state();
  std::lock_guard lock(s.mu);
  if (num_devices) *num_devices = 0;
  if (!s.model) {
    errno = ENOSYS;  // what libibverbs says on a machine without an RDMA kernel
    return nullptr;
  }
  auto names = s.model->device_names();
  std::vector<std::string> list;
  if (names) {
    list = std::move(names).value();
  } else if (!(names.error() == errc::no_devices)) {
    errno = to_errno(names.error());
    return nullptr;
  }
  auto* out = new ibv_device*[list.size() + 1];
  for (std::size_t i = 0; i < list.size(); ++i) out[i] = device_object(s, list[i]);
  out[list.size()] = nullptr;
  if (num_devices) *num_devices = static_cast<int>(list.size());
  return out;
}

void free_device_list(ibv_device** list) { delete[] list; }

const char* get_device_name(ibv_device* device) { return device ? device->name : nullptr; }

ibv_context* open_device(ibv_device* device) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.model || !device) {
    errno = s.model ? EINVAL : ENOSYS;
    return nullptr;
  }
  auto h = s.model->open_device(device->name);
  if (!h) {
    errno = to_errno(h.error());
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
}

int close_device(ibv_context* context) {
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
}

int query_port(ibv_context* context, std::uint8_t port_num, ibv_port_attr* attr) {
  State& s = state();
  std::lock_guard lock(s.mu);
  Context* c = s.model ? context_of(s, context) : nullptr;
  if (!c || !attr) return EINVAL;
  auto p = s.model->port_attributes(c->handle, port_num);
  if (!p) return to_errno(p.error());
  const PortInfo& info = p.value();
  std::memset(attr, 0, sizeof(ibv_port_attr));
  attr->state = static_cast<ibv_port_state>(info.state);
  attr->active_mtu = static_cast<ibv_mtu>(info.active_mtu);
  attr->max_mtu = attr->active_mtu;
  attr->gid_tbl_len = static_cast<int>(std::min<std::uint32_t>(info.gid_tbl_len.value_or(0), 0x7fffffffu));
  attr->lid = info.lid;
  attr->pkey_tbl_len = 1;
  attr->max_msg_sz = 1u << 30;
  // link_layer is a uint8_t: Thunderbolt's 100 fits; an unknown raw value above 255 reads as 0.
  attr->link_layer = info.link_layer.raw() <= 0xff ? static_cast<std::uint8_t>(info.link_layer.raw()) : 0;
  attr->phys_state = info.state == PortState::active ? 5 : 3;  // LinkUp / Disabled
  return 0;
}

int query_gid(ibv_context* context, std::uint8_t port_num, int index, ibv_gid* gid) {
  State& s = state();
  std::lock_guard lock(s.mu);
  Context* c = s.model ? context_of(s, context) : nullptr;
  if (!c || !gid || index < 0) {
    errno = EINVAL;
    return -1;
  }
  auto g = s.model->read_gid(c->handle, port_num, static_cast<std::uint32_t>(index));
  if (!g) {
    errno = to_errno(g.error());
    return -1;
  }
  g.value().copy_to(gid->raw);
  return 0;
}

int query_gid_ex(ibv_context* context, std::uint32_t port_num, std::uint32_t gid_index, ibv_gid_entry* entry,
                 std::uint32_t flags, std::size_t entry_size) {
  State& s = state();
  std::lock_guard lock(s.mu);
  Context* c = s.model ? context_of(s, context) : nullptr;
  if (!c || !entry || flags != 0 || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  auto e = s.model->read_gid_entry(c->handle, port_num, gid_index);
  if (!e) return to_errno(e.error());
  std::memset(entry, 0, sizeof(ibv_gid_entry));
  e.value().gid.copy_to(entry->gid.raw);
  entry->gid_index = gid_index;
  entry->port_num = port_num;
  entry->gid_type = verbs::to_ibv(e.value().type);
  entry->ndev_ifindex = e.value().ifindex;
  return 0;
}

ssize_t query_gid_table(ibv_context* context, ibv_gid_entry* entries, std::size_t max_entries,
                        std::uint32_t flags, std::size_t entry_size) {
  State& s = state();
  std::lock_guard lock(s.mu);
  Context* c = s.model ? context_of(s, context) : nullptr;
  if (!c || !entries || flags != 0 || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  const auto max = static_cast<std::uint32_t>(std::min<std::size_t>(max_entries, 0xffffffffu));
  auto rows = s.model->read_gid_table(c->handle, max);
  if (!rows) return -static_cast<ssize_t>(to_errno(rows.error()));
  std::size_t i = 0;
  for (const verbs::GidTableRow& r : rows.value()) {
    ibv_gid_entry& out = entries[i++];
    std::memset(&out, 0, sizeof out);
    r.entry.gid.copy_to(out.gid.raw);
    out.gid_index = r.entry.index;
    out.port_num = r.port;
    out.gid_type = verbs::to_ibv(r.entry.type);
    out.ndev_ifindex = r.entry.ifindex;
  }
  return static_cast<ssize_t>(i);
}

ibv_pd* alloc_pd(ibv_context* context) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.model || !context_of(s, context)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* pd = new ibv_pd{context, 0};
  s.pds.insert(pd);
  return pd;
}

int dealloc_pd(ibv_pd* pd) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.pds.erase(pd)) return EINVAL;
  delete pd;
  return 0;
}

ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector) {
  (void)comp_vector;
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.model || !context_of(s, context) || cqe < 1) {
    errno = EINVAL;
    return nullptr;
  }
  auto* cq = new ibv_cq;
  std::memset(cq, 0, sizeof(ibv_cq));
  cq->context = context;
  cq->channel = channel;
  cq->cq_context = cq_context;
  cq->cqe = cqe;
  s.cqs.insert(cq);
  return cq;
}

int destroy_cq(ibv_cq* cq) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.cqs.erase(cq)) return EINVAL;
  delete cq;
  return 0;
}

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  State& s = state();
  std::lock_guard lock(s.mu);
  Context* c = (s.model && pd && attr && s.pds.count(pd)) ? context_of(s, pd->context) : nullptr;
  const auto kind = attr ? verbs::qp_kind_from_ibv(attr->qp_type) : std::nullopt;
  if (!c || !kind) {
    errno = c ? EOPNOTSUPP : EINVAL;
    return nullptr;
  }
  auto h = s.model->create_qp(c->handle, *kind);
  if (!h) {
    errno = to_errno(h.error());  // Apple: EOPNOTSUPP for RC, EBUSY past the QP cap
    return nullptr;
  }
  auto qp = std::make_unique<ibv_qp>();
  std::memset(qp.get(), 0, sizeof(ibv_qp));
  qp->context = pd->context;
  qp->qp_context = attr->qp_context;
  qp->pd = pd;
  qp->send_cq = attr->send_cq;
  qp->recv_cq = attr->recv_cq;
  qp->srq = attr->srq;
  qp->qp_num = s.model->qp(h.value()).value().qp_num;
  qp->handle = qp->qp_num;
  qp->state = IBV_QPS_RESET;
  qp->qp_type = attr->qp_type;
  ibv_qp* raw = qp.get();
  s.qps.emplace(raw, Qp{std::move(qp), h.value()});
  return raw;
}

int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  State& s = state();
  std::lock_guard lock(s.mu);
  Qp* q = s.model ? qp_of(s, qp) : nullptr;
  if (!q || !attr) return EINVAL;
  auto r = s.model->modify_qp(q->handle, *attr, mask);
  if (!r) return to_errno(r.error());
  qp->state = s.model->qp(q->handle).value().state;
  return 0;
}

int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init_attr) {
  (void)mask;  // the model reports every attribute it holds
  State& s = state();
  std::lock_guard lock(s.mu);
  Qp* q = s.model ? qp_of(s, qp) : nullptr;
  if (!q || !attr) return EINVAL;
  auto info = s.model->query_qp(q->handle);
  if (!info) return to_errno(info.error());
  *attr = info.value().attr;
  attr->cap.max_send_wr = 1;
  attr->cap.max_recv_wr = 1;
  attr->cap.max_send_sge = 1;
  attr->cap.max_recv_sge = 1;
  if (init_attr) {
    std::memset(init_attr, 0, sizeof(ibv_qp_init_attr));
    init_attr->qp_context = qp->qp_context;
    init_attr->send_cq = qp->send_cq;
    init_attr->recv_cq = qp->recv_cq;
    init_attr->srq = qp->srq;
    init_attr->qp_type = qp->qp_type;
    init_attr->cap = attr->cap;
  }
  return 0;
}

int destroy_qp(ibv_qp* qp) {
  State& s = state();
  std::lock_guard lock(s.mu);
  Qp* q = s.model ? qp_of(s, qp) : nullptr;
  if (!q) return EINVAL;
  auto r = s.model->destroy_qp(q->handle);
  if (!r) return to_errno(r.error());
  s.qps.erase(qp);
  return 0;
}

int get_async_event(ibv_context* context, ibv_async_event* event) {
  State& s = state();
  FakeVerbs* model = nullptr;
  DeviceHandle handle;
  int fd = -1;
  {
    std::lock_guard lock(s.mu);
    Context* c = s.model ? context_of(s, context) : nullptr;
    if (!c || !event) {
      errno = EINVAL;
      return -1;
    }
    model = s.model;
    handle = c->handle;
    fd = context->async_fd;
  }
  // libibverbs blocks unless the program made async_fd non-blocking; the wait happens without
  // the binding's lock so other calls (the ones that raise events) proceed meanwhile.
  auto ev = model->wait_async_event(handle, fd);
  if (!ev) {
    errno = to_errno(ev.error());
    return -1;
  }
  *event = ev.value().raw;
  return 0;
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
