// The fake VerbsApi itself: devices, handles, reads, QP creation, faults, counters and
// asynchronous events over the model in fake_verbs_impl.hpp.
#include "fake_verbs_impl.hpp"

#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/rtr.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace gidpolicy::fakes {

FakeVerbs::FakeVerbs() : impl_(std::make_unique<Impl>()) {}
FakeVerbs::~FakeVerbs() = default;

// ---- building ----------------------------------------------------------------------------

result<void> FakeVerbs::add_port(const GidTable& table, std::optional<DriverModel> model) {
  std::lock_guard lock(impl_->mu);
  PortInfo info = table.port();
  if (info.port < 1 || info.port > 255)
    return fail(errc::invalid_argument,
                info.device + ": port " + std::to_string(info.port) + " is not in 1..255");
  if (info.device.empty()) return fail(errc::invalid_argument, "a fake device needs a name");
  // A source that did not say (show_gids) still gets a length: a driver always reports one.
  if (!info.gid_tbl_len) info.gid_tbl_len = table.length();
  Device* d = impl_->device(info.device);
  if (!d) {
    impl_->devices.push_back(Device{
        info.device, model ? std::move(*model) : DriverModel::for_table(table), {true, true, true}, {}});
    d = &impl_->devices.back();
  }
  if (d->ports.count(info.port)) return fail(errc::invalid_argument, port_name(info) + " was added twice");
  Port p;
  p.holes = table.holes();
  for (const GidEntry& e : table) p.entries.emplace(e.index, e);
  p.info = std::move(info);
  d->ports.emplace(p.info.port, std::move(p));
  return success();
}

result<void> FakeVerbs::add_tables(const std::vector<GidTable>& tables,
                                   const std::optional<DriverModel>& model) {
  for (const GidTable& t : tables) GIDPOLICY_TRYV(add_port(t, model));
  return success();
}

result<void> FakeVerbs::load_text(std::string_view text, std::string_view source,
                                  const std::optional<DriverModel>& model) {
  // Any format gidpolicy reads (JSON, ibv_devinfo -v, show_gids), detected from the text.
  GIDPOLICY_TRY(tables, formats::read_tables(text, source));
  return add_tables(tables, model);
}

result<void> FakeVerbs::load_file(const std::filesystem::path& path,
                                  const std::optional<DriverModel>& model) {
  // A file in any text format, or a sysfs tree (/sys/class/infiniband/<dev>/ports/<p>/gids...).
  GIDPOLICY_TRY(tables, formats::read_tables_file(path));
  return add_tables(tables, model);
}

result<void> FakeVerbs::set_driver_model(std::string_view device, DriverModel model) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(d, impl_->device_or_error(device));
  d->driver = std::move(model);
  return success();
}

result<DriverModel> FakeVerbs::driver_model(std::string_view device) const {
  std::lock_guard lock(impl_->mu);
  if (const Device* d = impl_->device(device)) return d->driver;
  return fail(errc::device_not_found, "the fake has no device '" + std::string(device) + "'");
}

result<void> FakeVerbs::set_read_support(std::string_view device, verbs::ReadSupport support) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(d, impl_->device_or_error(device));
  d->support = support;
  return success();
}

void FakeVerbs::set_qp_number_allocator(std::function<result<std::uint32_t>()> next) {
  std::lock_guard lock(impl_->mu);
  impl_->qp_numbers = std::move(next);
}

// ---- state -------------------------------------------------------------------------------

std::vector<std::string> FakeVerbs::devices() const {
  std::lock_guard lock(impl_->mu);
  std::vector<std::string> out;
  for (const auto& d : impl_->devices) out.push_back(d.name);
  return out;
}

result<FakeQp> FakeVerbs::qp(QpHandle handle) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->qps.find(handle.id);
  if (it == impl_->qps.end())
    return fail(errc::invalid_argument,
                "QP handle " + std::to_string(handle.id) + " does not exist in the fake");
  return it->second.state;
}

std::optional<FakeQp> FakeVerbs::qp_by_number(std::string_view device, std::uint32_t qp_num) const {
  std::lock_guard lock(impl_->mu);
  for (const auto& [id, q] : impl_->qps)
    if (q.state.device == device && q.state.qp_num == qp_num) return q.state;
  return std::nullopt;
}

unsigned FakeVerbs::qp_count(std::string_view device) const {
  std::lock_guard lock(impl_->mu);
  return impl_->qps_on(device);
}

// ---- faults and counters -----------------------------------------------------------------

void FakeVerbs::fail_nth(VerbsCall kind, unsigned nth, int err) {
  std::lock_guard lock(impl_->mu);
  impl_->pending.push_back({Pending::What::fail_kind_nth, kind, nth == 0 ? 1 : nth, err, {}});
}
void FakeVerbs::fail_every(VerbsCall kind, int err) {
  std::lock_guard lock(impl_->mu);
  impl_->pending.push_back({Pending::What::fail_every, kind, 0, err, {}});
}
void FakeVerbs::fail_call_number(unsigned nth, int err) {
  std::lock_guard lock(impl_->mu);
  impl_->pending.push_back(
      {Pending::What::fail_any_nth, VerbsCall::device_names, nth == 0 ? 1 : nth, err, {}});
}

std::vector<Error> FakeVerbs::failed_mutations() const {
  std::lock_guard lock(impl_->mu);
  return impl_->failed_mutations;
}
void FakeVerbs::clear_faults() {
  std::lock_guard lock(impl_->mu);
  impl_->pending.clear();
}
unsigned FakeVerbs::pending_faults() const {
  std::lock_guard lock(impl_->mu);
  return static_cast<unsigned>(impl_->pending.size());
}

unsigned FakeVerbs::calls(VerbsCall kind) const {
  std::lock_guard lock(impl_->mu);
  return impl_->counts[static_cast<std::size_t>(kind)];
}
unsigned FakeVerbs::total_calls() const {
  std::lock_guard lock(impl_->mu);
  return static_cast<unsigned>(impl_->log.size());
}
std::vector<VerbsCall> FakeVerbs::call_log() const {
  std::lock_guard lock(impl_->mu);
  return impl_->log;
}
void FakeVerbs::reset_counters() {
  std::lock_guard lock(impl_->mu);
  impl_->counts.fill(0);
  impl_->log.clear();
}

// ---- VerbsApi ----------------------------------------------------------------------------

result<std::vector<std::string>> FakeVerbs::device_names() {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::device_names, "device_names()"));
  if (impl_->devices.empty()) return fail(errc::no_devices, "the fake holds no device");
  std::vector<std::string> out;
  for (const auto& d : impl_->devices) out.push_back(d.name);
  return out;
}

result<DeviceHandle> FakeVerbs::open_device(std::string_view name) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::open_device, "open_device(" + std::string(name) + ")"));
  if (impl_->devices.empty()) return fail(errc::no_devices, "the fake holds no device");
  if (!impl_->device(name)) {
    std::string list;
    for (const auto& d : impl_->devices) list += (list.empty() ? "" : ", ") + d.name;
    return fail(errc::device_not_found, "no RDMA device named '" + std::string(name) + "'; devices: " + list);
  }
  const int efd = ::eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  if (efd < 0) return fail_errno(errno, "open_device(" + std::string(name) + "): eventfd for async events");
  const std::uint64_t id = impl_->next_id++;
  impl_->handles.emplace(id, std::string(name));
  impl_->events[id].fd = efd;
  return DeviceHandle{id};
}

result<void> FakeVerbs::close_device(DeviceHandle device) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(name, impl_->handle_device(device));
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::close_device, "close_device(" + name + ")"));
  for (auto it = impl_->qps.begin(); it != impl_->qps.end();)
    it = it->second.handle == device.id ? impl_->qps.erase(it) : std::next(it);
  impl_->handles.erase(device.id);
  if (auto e = impl_->events.find(device.id); e != impl_->events.end()) {
    if (e->second.fd >= 0) ::close(e->second.fd);
    impl_->events.erase(e);
  }
  return success();
}

result<std::string> FakeVerbs::device_name(DeviceHandle device) const {
  std::lock_guard lock(impl_->mu);
  return impl_->handle_device(device);
}

result<PortInfo> FakeVerbs::port_attributes(DeviceHandle device, std::uint32_t port) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(name, impl_->handle_device(device));
  const std::string at = "port_attributes(" + name + ", " + std::to_string(port) + ")";
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::port_attributes, at));
  auto p = impl_->port(name, port);
  if (!p) return fail_errno(EINVAL, at + ": no such port");
  return p.value()->info;
}

result<Gid> FakeVerbs::read_gid(DeviceHandle device, std::uint32_t port, std::uint32_t index) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(name, impl_->handle_device(device));
  const std::string at = Impl::where(VerbsCall::read_gid, name, port, index);
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::read_gid, at));
  if (!impl_->device(name)->support.gid_legacy) return fail_errno(EOPNOTSUPP, at);
  auto p = impl_->port(name, port);
  if (!p) return fail_errno(EINVAL, at + ": no such port");
  if (index >= p.value()->length()) return fail_errno(EINVAL, at + ": index not below gid_tbl_len");
  auto it = p.value()->entries.find(index);
  // ibv_query_gid: an empty (or unlisted) slot succeeds with zeros.
  if (it == p.value()->entries.end() || it->second.state == EntryState::empty) return Gid{};
  if (it->second.state == EntryState::unreadable)
    return fail_errno(it->second.read_error ? it->second.read_error.value() : EIO, at);
  return it->second.gid;
}

result<GidEntry> FakeVerbs::read_gid_entry(DeviceHandle device, std::uint32_t port, std::uint32_t index) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(name, impl_->handle_device(device));
  const std::string at = Impl::where(VerbsCall::read_gid_entry, name, port, index);
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::read_gid_entry, at));
  if (!impl_->device(name)->support.gid_entry) return fail_errno(EOPNOTSUPP, at);
  auto p = impl_->port(name, port);
  if (!p) return fail_errno(EINVAL, at + ": no such port");
  if (index >= p.value()->length()) return fail_errno(EINVAL, at + ": index not below gid_tbl_len");
  auto it = p.value()->entries.find(index);
  // ibv_query_gid_ex: an empty slot is ENODATA.
  if (it == p.value()->entries.end() || it->second.state == EntryState::empty) return fail_errno(ENODATA, at);
  if (it->second.state == EntryState::unreadable)
    return fail_errno(it->second.read_error ? it->second.read_error.value() : EIO, at);
  return it->second;
}

result<std::vector<verbs::GidTableRow>> FakeVerbs::read_gid_table(DeviceHandle device,
                                                                  std::uint32_t max_entries) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(name, impl_->handle_device(device));
  const std::string at = "read_gid_table(" + name + ", max " + std::to_string(max_entries) + ")";
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::read_gid_table, at));
  const Device* d = impl_->device(name);
  if (!d->support.gid_table) return fail_errno(EOPNOTSUPP, at);
  std::vector<verbs::GidTableRow> rows;
  for (const auto& [pn, p] : d->ports)
    for (const auto& [i, e] : p.entries)
      if (e.state == EntryState::valid) rows.push_back({pn, e});
  // The kernel fails the whole call when the buffer is too small (rdma_query_gid_table).
  if (rows.size() > max_entries)
    return fail_errno(EINVAL, at + ": " + std::to_string(rows.size()) + " valid entries do not fit");
  return rows;
}

verbs::ReadSupport FakeVerbs::read_support(DeviceHandle device) const {
  std::lock_guard lock(impl_->mu);
  auto name = impl_->handle_device(device);
  if (!name) return {};
  return impl_->device(name.value())->support;
}

result<QpHandle> FakeVerbs::create_qp(DeviceHandle device, QpKind kind) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(name, impl_->handle_device(device));
  const std::string at = "create_qp(" + name + ", " + std::string(to_string(kind)) + ")";
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::create_qp, at));
  const Device* d = impl_->device(name);
  const RtrVerdict v = judge_create_qp(kind, impl_->qps_on(name), d->driver);
  if (v.outcome == RtrOutcome::error) return fail_errno(v.err, at + ": " + v.reason);
  std::uint32_t num = 0;
  if (impl_->qp_numbers) {
    GIDPOLICY_TRY(n, impl_->qp_numbers());
    num = n;
  } else {
    num = impl_->next_qp_num++;
  }
  const std::uint64_t id = impl_->next_id++;
  Qp q;
  q.handle = device.id;
  q.state.qp_num = num & 0xffffffu;  // QP numbers are 24 bits on the wire
  q.state.kind = kind;
  q.state.device = name;
  impl_->qps.emplace(id, std::move(q));
  return QpHandle{id};
}

result<verbs::QpInfo> FakeVerbs::query_qp(QpHandle handle) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->qps.find(handle.id);
  if (it == impl_->qps.end())
    return fail(errc::invalid_argument,
                "QP handle " + std::to_string(handle.id) + " does not exist in the fake");
  const FakeQp& q = it->second.state;
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::query_qp,
                              "query_qp(" + q.device + " qp " + hex(static_cast<int>(q.qp_num)) + ")"));
  verbs::QpInfo info;
  info.qp_num = q.qp_num;
  info.kind = q.kind;
  info.state = q.state;
  info.attr = q.attr;
  info.attr.qp_state = q.state;
  return info;
}

result<void> FakeVerbs::destroy_qp(QpHandle handle) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->qps.find(handle.id);
  if (it == impl_->qps.end())
    return fail(errc::invalid_argument,
                "QP handle " + std::to_string(handle.id) + " does not exist in the fake");
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::destroy_qp, "destroy_qp(" + it->second.state.device + " qp " +
                                                         hex(static_cast<int>(it->second.state.qp_num)) +
                                                         ")"));
  impl_->qps.erase(it);
  return success();
}

// ---- asynchronous events -----------------------------------------------------------------

result<void> FakeVerbs::raise_event(std::string_view device, std::uint32_t port, ibv_event_type type) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(d, impl_->device_or_error(device));
  impl_->raise(d->name, port, type);
  return success();
}

result<void> FakeVerbs::raise_object_event(DeviceHandle device, const ibv_async_event& event) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(name, impl_->handle_device(device));
  (void)name;
  auto& e = impl_->events[device.id];
  if (e.queue.size() >= FakeVerbs::kMaxQueuedEvents) return success();  // as raise(): dropped
  verbs::AsyncEvent ev;
  ev.type = event.event_type;
  ev.port = 0;
  ev.raw = event;
  e.queue.push_back(ev);
  if (e.fd >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(e.fd, &one, sizeof one);
  }
  return success();
}

unsigned FakeVerbs::unacked_events() const {
  std::lock_guard lock(impl_->mu);
  unsigned n = 0;
  for (const auto& [h, e] : impl_->events) n += e.unacked;
  return n;
}

result<int> FakeVerbs::async_event_fd(DeviceHandle device) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(name, impl_->handle_device(device));
  return impl_->events[device.id].fd;
}

result<std::optional<verbs::AsyncEvent>> FakeVerbs::read_async_event(DeviceHandle device) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(name, impl_->handle_device(device));
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::read_async_event, "read_async_event(" + name + ")"));
  auto& e = impl_->events[device.id];
  if (e.queue.empty()) return std::optional<verbs::AsyncEvent>();
  verbs::AsyncEvent ev = e.queue.front();
  e.queue.pop_front();
  if (e.fd >= 0) {
    // Semaphore mode: takes one from the counter, which is >= 1 while the queue was non-empty.
    std::uint64_t v = 0;
    [[maybe_unused]] const ssize_t n = ::read(e.fd, &v, sizeof v);
  }
  ++e.unacked;
  return std::optional<verbs::AsyncEvent>(ev);
}

result<void> FakeVerbs::ack_async_event(DeviceHandle device, const verbs::AsyncEvent& event) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(name, impl_->handle_device(device));
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::ack_async_event,
                              "ack_async_event(" + name + ", " + verbs::async_event_name(event.type) + ")"));
  auto& e = impl_->events[device.id];
  if (e.unacked == 0)
    return fail(errc::invalid_argument, "ack_async_event(" + name + "): no event read is waiting for an ack");
  --e.unacked;
  return success();
}

result<verbs::AsyncEvent> FakeVerbs::wait_async_event(DeviceHandle device, int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  const bool nonblocking = flags >= 0 && (flags & O_NONBLOCK) != 0;
  while (true) {
    GIDPOLICY_TRY(ev, read_async_event(device));
    if (ev) return *ev;
    if (nonblocking) return fail_errno(EAGAIN, "get_async_event: no event queued (O_NONBLOCK)");
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) return fail_errno(errno, "get_async_event: poll");
  }
}

}  // namespace gidpolicy::fakes
