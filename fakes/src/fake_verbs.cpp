#include <gidpolicy/fakes/fake_verbs.hpp>
#include <gidpolicy/formats/detect.hpp>
#include <gidpolicy/rtr.hpp>

#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace gidpolicy::fakes {

// ---- TableMutation ---------------------------------------------------------------------------

TableMutation TableMutation::stale_entry(std::string device, std::uint32_t port, std::uint32_t index,
                                         Gid now) {
  TableMutation m;
  m.kind = Kind::stale_entry;
  m.device = std::move(device);
  m.port = port;
  m.index = index;
  m.gid = now;
  return m;
}
TableMutation TableMutation::moved_index(std::string device, std::uint32_t port, std::uint32_t from,
                                         std::uint32_t to) {
  TableMutation m;
  m.kind = Kind::moved_index;
  m.device = std::move(device);
  m.port = port;
  m.index = from;
  m.to_index = to;
  return m;
}
TableMutation TableMutation::emptied(std::string device, std::uint32_t port, std::uint32_t index) {
  TableMutation m;
  m.kind = Kind::emptied;
  m.device = std::move(device);
  m.port = port;
  m.index = index;
  return m;
}
TableMutation TableMutation::netdev_gone(std::string device, std::uint32_t port, std::uint32_t index) {
  TableMutation m;
  m.kind = Kind::netdev_gone;
  m.device = std::move(device);
  m.port = port;
  m.index = index;
  return m;
}
TableMutation TableMutation::netdev_back(std::string device, std::uint32_t port, std::uint32_t index) {
  TableMutation m = netdev_gone(std::move(device), port, index);
  m.kind = Kind::netdev_back;
  return m;
}
TableMutation TableMutation::set(std::string device, std::uint32_t port, GidEntry entry) {
  TableMutation m;
  m.kind = Kind::set_entry;
  m.device = std::move(device);
  m.port = port;
  m.index = entry.index;
  m.entry = std::move(entry);
  return m;
}
TableMutation TableMutation::port_state(std::string device, std::uint32_t port, PortState state) {
  TableMutation m;
  m.kind = Kind::port_state;
  m.device = std::move(device);
  m.port = port;
  m.state = state;
  return m;
}

std::string TableMutation::to_string() const {
  std::string at = device + ":" + std::to_string(port) + "[" + std::to_string(index) + "]";
  switch (kind) {
    case Kind::stale_entry:
      return "stale_entry " + at + " -> " + gid.to_string();
    case Kind::moved_index:
      return "moved_index " + at + " -> [" + std::to_string(to_index) + "]";
    case Kind::emptied:
      return "emptied " + at;
    case Kind::netdev_gone:
      return "netdev_gone " + at;
    case Kind::netdev_back:
      return "netdev_back " + at;
    case Kind::set_entry:
      return "set_entry " + at + " = " + std::string(gidpolicy::to_string(entry.state)) +
             (entry.state == EntryState::valid ? " " + entry.gid.to_string() : "");
    case Kind::port_state:
      return "port_state " + device + ":" + std::to_string(port) + " -> " +
             std::string(gidpolicy::to_string(state));
  }
  return at;
}

// ---- the model -------------------------------------------------------------------------------

namespace {

struct Port {
  PortInfo info;
  std::map<std::uint32_t, GidEntry> entries;
  Holes holes = Holes::empty;
  std::set<std::uint32_t> netdev_gone;

  [[nodiscard]] std::uint32_t length() const { return info.gid_tbl_len.value_or(0); }
  [[nodiscard]] GidTable table() const {
    std::vector<GidEntry> v;
    v.reserve(entries.size());
    for (const auto& [i, e] : entries) v.push_back(e);
    // The model keeps indices below gid_tbl_len and unique: make() cannot fail here.
    return GidTable::make(info, std::move(v), holes).value();
  }
};

struct Device {
  std::string name;
  DriverModel model;
  verbs::ReadSupport support{true, true, true};
  std::map<std::uint32_t, Port> ports;
};

struct Qp {
  FakeQp state;
  std::uint64_t handle = 0;  // the device handle it was created through
};

struct Pending {
  enum class What : std::uint8_t { fail_kind_nth, fail_every, fail_any_nth, mutate } what;
  VerbsCall kind = VerbsCall::device_names;
  unsigned remaining = 0;
  int err = 0;
  TableMutation mutation;
};

std::string hex(int v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

/// The kernel's required attribute bits (ib_modify_qp_is_ok) for RESET->INIT and RTR->RTS. The
/// INIT->RTR bits come from rtr.hpp's table (required_rtr_mask) so that the builder and the fake
/// cannot disagree about them.
int required_init_mask(QpKind k) {
  if (k == QpKind::ud) return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
  return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}
int required_rts_mask(QpKind k) {
  if (k == QpKind::rc)
    return IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
           IBV_QP_MAX_QP_RD_ATOMIC;
  return IBV_QP_STATE | IBV_QP_SQ_PSN;
}

/// Copy the attributes `mask` names, as the kernel stores them.
void merge_attr(ibv_qp_attr& into, const ibv_qp_attr& from, int mask) {
  if (mask & IBV_QP_STATE) into.qp_state = from.qp_state;
  if (mask & IBV_QP_PKEY_INDEX) into.pkey_index = from.pkey_index;
  if (mask & IBV_QP_PORT) into.port_num = from.port_num;
  if (mask & IBV_QP_ACCESS_FLAGS) into.qp_access_flags = from.qp_access_flags;
  if (mask & IBV_QP_QKEY) into.qkey = from.qkey;
  if (mask & IBV_QP_AV) into.ah_attr = from.ah_attr;
  if (mask & IBV_QP_PATH_MTU) into.path_mtu = from.path_mtu;
  if (mask & IBV_QP_DEST_QPN) into.dest_qp_num = from.dest_qp_num;
  if (mask & IBV_QP_RQ_PSN) into.rq_psn = from.rq_psn;
  if (mask & IBV_QP_SQ_PSN) into.sq_psn = from.sq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) into.max_dest_rd_atomic = from.max_dest_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) into.min_rnr_timer = from.min_rnr_timer;
  if (mask & IBV_QP_TIMEOUT) into.timeout = from.timeout;
  if (mask & IBV_QP_RETRY_CNT) into.retry_cnt = from.retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) into.rnr_retry = from.rnr_retry;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) into.max_rd_atomic = from.max_rd_atomic;
}

}  // namespace

std::string qp_state_name(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_SQD:
      return "SQD";
    case IBV_QPS_SQE:
      return "SQE";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "state " + std::to_string(static_cast<int>(s));
  }
}

struct FakeVerbs::Impl {
  mutable std::mutex mu;
  std::vector<Device> devices;                   // in the order added: ibv_get_device_list's order
  std::map<std::uint64_t, std::string> handles;  // open device handles
  std::map<std::uint64_t, Qp> qps;
  std::uint64_t next_id = 1;
  std::uint32_t next_qp_num = 0x100;
  std::function<result<std::uint32_t>()> qp_numbers;
  std::array<unsigned, verbs::kVerbsCallKinds> counts{};
  std::vector<VerbsCall> log;
  std::vector<Pending> pending;
  std::vector<Error> failed_mutations;
  struct Events {
    int fd = -1;  // eventfd, semaphore mode: its counter is the queue's length
    std::deque<verbs::AsyncEvent> queue;
    unsigned unacked = 0;
  };
  std::map<std::uint64_t, Events> events;  // per open device handle

  ~Impl() {
    for (auto& [h, e] : events)
      if (e.fd >= 0) ::close(e.fd);
  }

  static bool usable_state(PortState s) { return s == PortState::active || s == PortState::armed; }

  /// Queue an event on every handle open on `dev`.
  void raise(const std::string& dev, std::uint32_t port, ibv_event_type type) {
    for (auto& [h, name] : handles) {
      if (name != dev) continue;
      Events& e = events[h];
      if (e.queue.size() >= FakeVerbs::kMaxQueuedEvents) continue;
      verbs::AsyncEvent ev;
      ev.type = type;
      ev.port = port;
      std::memset(&ev.raw, 0, sizeof ev.raw);
      ev.raw.event_type = type;
      ev.raw.element.port_num = static_cast<int>(port);
      e.queue.push_back(ev);
      if (e.fd >= 0) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t n = ::write(e.fd, &one, sizeof one);
      }
    }
  }

  Device* device(std::string_view name) {
    for (auto& d : devices)
      if (d.name == name) return &d;
    return nullptr;
  }
  const Device* device(std::string_view name) const {
    for (const auto& d : devices)
      if (d.name == name) return &d;
    return nullptr;
  }

  result<Device*> device_or_error(std::string_view name) {
    if (Device* d = device(name)) return d;
    return fail(errc::device_not_found, "the fake has no device '" + std::string(name) + "'");
  }

  result<Port*> port(std::string_view dev, std::uint32_t p) {
    GIDPOLICY_TRY(d, device_or_error(dev));
    auto it = d->ports.find(p);
    if (it == d->ports.end())
      return fail(errc::invalid_argument,
                  "the fake device " + std::string(dev) + " has no port " + std::to_string(p));
    return &it->second;
  }

  /// Count a call, apply mutations due now, and fire a fault due now.
  result<void> enter(VerbsCall kind, const std::string& what) {
    ++counts[static_cast<std::size_t>(kind)];
    log.push_back(kind);
    // Mutations first: a mutation "at call N" is visible to call N even when N also fails.
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->what == Pending::What::mutate && it->kind == kind && --it->remaining == 0) {
        if (auto r = apply(it->mutation); !r) failed_mutations.push_back(r.error());
        it = pending.erase(it);
      } else {
        ++it;
      }
    }
    std::optional<int> fire;
    for (auto it = pending.begin(); it != pending.end();) {
      bool erase = false;
      switch (it->what) {
        case Pending::What::fail_kind_nth:
          if (it->kind == kind && --it->remaining == 0) {
            if (!fire) fire = it->err;
            erase = true;
          }
          break;
        case Pending::What::fail_any_nth:
          if (--it->remaining == 0) {
            if (!fire) fire = it->err;
            erase = true;
          }
          break;
        case Pending::What::fail_every:
          if (it->kind == kind && !fire) fire = it->err;
          break;
        case Pending::What::mutate:
          break;
      }
      it = erase ? pending.erase(it) : it + 1;
    }
    if (fire) return fail_errno(*fire, what + ": injected fault");
    return success();
  }

  result<void> apply(const TableMutation& m) {
    GIDPOLICY_TRY(p, port(m.device, m.port));
    const std::string at = m.to_string();
    auto in_range = [&](std::uint32_t i) -> result<void> {
      if (i >= p->length())
        return fail(errc::invalid_argument, at + ": index " + std::to_string(i) +
                                                " is not below gid_tbl_len " + std::to_string(p->length()));
      return success();
    };
    if (m.kind != TableMutation::Kind::port_state) GIDPOLICY_TRYV(in_range(m.index));
    switch (m.kind) {
      case TableMutation::Kind::stale_entry: {
        auto it = p->entries.find(m.index);
        GidEntry e = it != p->entries.end() && it->second.state == EntryState::valid
                         ? it->second
                         : GidEntry::valid(m.index, m.gid);
        e.gid = m.gid;
        e.state = EntryState::valid;
        p->entries[m.index] = e;
        break;
      }
      case TableMutation::Kind::moved_index: {
        GIDPOLICY_TRYV(in_range(m.to_index));
        auto it = p->entries.find(m.index);
        if (it == p->entries.end() || it->second.state != EntryState::valid)
          return fail(errc::invalid_argument, at + ": the slot holds no GID to move");
        GidEntry e = it->second;
        p->entries.erase(it);
        e.index = m.to_index;
        p->entries[m.to_index] = e;
        p->netdev_gone.erase(m.to_index);
        if (p->netdev_gone.erase(m.index)) p->netdev_gone.insert(m.to_index);
        break;
      }
      case TableMutation::Kind::emptied:
        p->entries.erase(m.index);
        p->netdev_gone.erase(m.index);
        break;
      case TableMutation::Kind::netdev_gone:
        p->netdev_gone.insert(m.index);
        break;
      case TableMutation::Kind::netdev_back:
        p->netdev_gone.erase(m.index);
        break;
      case TableMutation::Kind::set_entry: {
        GidEntry e = m.entry;
        e.index = m.index;
        p->entries[m.index] = e;
        break;
      }
      case TableMutation::Kind::port_state: {
        const bool was = usable_state(p->info.state);
        p->info.state = m.state;
        if (was != usable_state(m.state))
          raise(m.device, m.port, usable_state(m.state) ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
        return success();
      }
    }
    // A netdev leaving the namespace changes no GID the kernel reports: no event, as in the
    // kernel (the entry stays; RTR from it fails with ENODEV).
    if (m.kind != TableMutation::Kind::netdev_gone && m.kind != TableMutation::Kind::netdev_back)
      raise(m.device, m.port, IBV_EVENT_GID_CHANGE);
    return success();
  }

  result<std::string> handle_device(DeviceHandle h) const {
    auto it = handles.find(h.id);
    if (it == handles.end())
      return fail(errc::invalid_argument,
                  "device handle " + std::to_string(h.id) + " is not open in the fake");
    return it->second;
  }

  unsigned qps_on(std::string_view dev) const {
    unsigned n = 0;
    for (const auto& [id, q] : qps)
      if (q.state.device == dev) ++n;
    return n;
  }

  /// Where a call is, for messages: "read_gid_entry(rdma_en2, 1, 3)".
  static std::string where(VerbsCall c, std::string_view dev, std::uint32_t port, std::uint32_t index) {
    return std::string(verbs::to_string(c)) + "(" + std::string(dev) + ", " + std::to_string(port) + ", " +
           std::to_string(index) + ")";
  }
};

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
    impl_->devices.push_back(Device{info.device,
                                    model ? std::move(*model) : DriverModel::for_link_layer(info.link_layer),
                                    {true, true, true},
                                    {}});
    d = &impl_->devices.back();
  }
  if (d->ports.count(info.port))
    return fail(errc::invalid_argument,
                info.device + " port " + std::to_string(info.port) + " was added twice");
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
  d->model = std::move(model);
  return success();
}

result<DriverModel> FakeVerbs::driver_model(std::string_view device) const {
  std::lock_guard lock(impl_->mu);
  if (const Device* d = impl_->device(device)) return d->model;
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

result<GidTable> FakeVerbs::table(std::string_view device, std::uint32_t port) const {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(p, impl_->port(device, port));
  return p->table();
}

result<void> FakeVerbs::apply(const TableMutation& mutation) {
  std::lock_guard lock(impl_->mu);
  return impl_->apply(mutation);
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
result<void> FakeVerbs::mutate_at(VerbsCall kind, unsigned nth, TableMutation mutation) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(p, impl_->port(mutation.device, mutation.port));
  for (std::uint32_t i :
       {mutation.index, mutation.kind == TableMutation::Kind::moved_index ? mutation.to_index : 0u})
    if (i >= p->length())
      return fail(errc::invalid_argument, mutation.to_string() + ": index " + std::to_string(i) +
                                              " is not below gid_tbl_len " + std::to_string(p->length()));
  impl_->pending.push_back({Pending::What::mutate, kind, nth == 0 ? 1 : nth, 0, std::move(mutation)});
  return success();
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
  const RtrVerdict v = judge_create_qp(kind, impl_->qps_on(name), d->model);
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

result<void> FakeVerbs::modify_qp(QpHandle handle, const ibv_qp_attr& attr, int mask) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->qps.find(handle.id);
  if (it == impl_->qps.end())
    return fail(errc::invalid_argument,
                "QP handle " + std::to_string(handle.id) + " does not exist in the fake");
  FakeQp& q = it->second.state;
  const ibv_qp_state from = q.state;
  const ibv_qp_state to = (mask & IBV_QP_STATE) ? attr.qp_state : from;
  const std::string at = "modify_qp(" + q.device + " qp " + hex(static_cast<int>(q.qp_num)) + ", " +
                         qp_state_name(from) + "->" + qp_state_name(to) + ")";
  GIDPOLICY_TRYV(impl_->enter(VerbsCall::modify_qp, at));
  const Device* d = impl_->device(q.device);
  const Errnos E = Errnos::of(d->model.platform);
  auto missing = [&](int required) -> result<void> {
    if ((mask & required) != required)
      return fail_errno(E.einval, at + ": missing required attribute bits " + hex(required & ~mask));
    return success();
  };

  if (!(mask & IBV_QP_STATE))
    return fail_errno(E.einval, at + ": no IBV_QP_STATE (attribute-only changes are not modelled)");
  if (to == IBV_QPS_RESET) {
    q.state = IBV_QPS_RESET;
    q.attr = ibv_qp_attr{};
    q.attr_mask = 0;
    q.port = 0;
    q.rtr.reset();
    q.source_gid.reset();
    return success();
  }
  if (to == IBV_QPS_ERR) {
    q.state = IBV_QPS_ERR;
    q.attr.qp_state = IBV_QPS_ERR;
    return success();
  }
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
    GIDPOLICY_TRYV(missing(required_init_mask(q.kind)));
    if (!impl_->port(q.device, attr.port_num))
      return fail_errno(E.einval, at + ": port " + std::to_string(attr.port_num) + " does not exist");
    q.port = attr.port_num;
  } else if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    GIDPOLICY_TRYV(missing(required_rtr_mask(q.kind)));
    // A UD QP has no address vector of its own: each address handle is judged when created.
    if (q.kind == QpKind::ud) {
      merge_attr(q.attr, attr, mask);
      q.attr_mask |= mask;
      q.state = to;
      q.attr.qp_state = to;
      return success();
    }
    const Port* p = impl_->port(q.device, q.port).value();
    RtrRequest req;
    req.qp_type = q.kind;
    req.is_global = attr.ah_attr.is_global != 0;
    req.sgid_index = attr.ah_attr.grh.sgid_index;
    req.dgid = Gid::from_bytes(attr.ah_attr.grh.dgid.raw);
    req.source_netdev_present = p->netdev_gone.count(req.sgid_index) == 0;
    // The one driver model (driver_model.hpp), judged on the table as it is at this call.
    const RtrVerdict v = judge_rtr(p->table(), req, d->model);
    if (v.outcome == RtrOutcome::error) return fail_errno(v.err, at + ": " + v.reason);
    q.rtr = v;
    auto e = p->entries.find(req.sgid_index);
    if (req.is_global && e != p->entries.end() && e->second.state == EntryState::valid)
      q.source_gid = e->second.gid;
  } else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
    GIDPOLICY_TRYV(missing(required_rts_mask(q.kind)));
  } else if (from == to && (from == IBV_QPS_INIT || from == IBV_QPS_RTS)) {
    // INIT->INIT and RTS->RTS: attributes only.
  } else {
    return fail_errno(E.einval, at + ": not a valid transition");
  }
  merge_attr(q.attr, attr, mask);
  q.attr_mask |= mask;
  q.state = to;
  q.attr.qp_state = to;
  return success();
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

result<bool> FakeVerbs::replace_port(const GidTable& table) {
  std::lock_guard lock(impl_->mu);
  const PortInfo& info = table.port();
  GIDPOLICY_TRY(p, impl_->port(info.device, info.port));
  for (const GidEntry& e : table)
    if (e.index >= p->length())
      return fail(errc::invalid_argument, info.device + ":" + std::to_string(info.port) + " index " +
                                              std::to_string(e.index) + " is not below gid_tbl_len " +
                                              std::to_string(p->length()));
  std::map<std::uint32_t, GidEntry> entries;
  for (const GidEntry& e : table) entries.emplace(e.index, e);
  const bool gids_changed = entries != p->entries;
  const bool was = Impl::usable_state(p->info.state);
  const bool now = Impl::usable_state(info.state);
  const bool state_changed = p->info.state != info.state;
  p->entries = std::move(entries);
  p->info.state = info.state;
  if (gids_changed) impl_->raise(info.device, info.port, IBV_EVENT_GID_CHANGE);
  if (was != now) impl_->raise(info.device, info.port, now ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
  return gids_changed || state_changed;
}

result<void> FakeVerbs::raise_event(std::string_view device, std::uint32_t port, ibv_event_type type) {
  std::lock_guard lock(impl_->mu);
  GIDPOLICY_TRY(d, impl_->device_or_error(device));
  impl_->raise(d->name, port, type);
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

}  // namespace gidpolicy::fakes
