#include <gidpolicy/verbs/function_table_api.hpp>

#include <gidpolicy/names.hpp>

#include <net/if.h>
#include <poll.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace gidpolicy::verbs {
namespace {

/// The errno of a call that returns 0 or an error: a positive errno (rdma-core's convention for
/// most calls), or -1 with errno set (some providers and the legacy calls). 0 when the call
/// failed without saying why.
int errno_of(long long rc, int saved_errno) noexcept {
  if (rc > 0) return static_cast<int>(rc);
  if (rc < -1) return static_cast<int>(-rc);  // a negative errno
  return saved_errno;
}

bool is_unsupported(int err) noexcept { return err == EOPNOTSUPP || err == ENOSYS; }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

/// A device name a provider (or a C caller's function table) gave, under the name rule
/// (names.hpp): it reaches every message, report and JSON document, so a name that is not a
/// kernel device name (a newline, an escape sequence, bytes that are not UTF-8) is refused,
/// quoted, as a driver that cannot be trusted (EPROTO), never printed.
result<std::string> checked_device_name(std::string name, std::string_view where) {
  if (auto why = name_problem(name, NameKind::device))
    return fail_errno(EPROTO, std::string(where) + " gave the device name " + quote_name(name) + ": " + *why +
                                  " (driver or function table bug?)");
  return name;
}

/// get_device_name() bounded: a name longer than the kernel's is refused without reading past
/// IB_DEVICE_NAME_MAX (+1 to see that it is longer).
std::string bounded_c_string(const char* n) { return std::string(n, strnlen(n, kMaxDeviceName + 2)); }

result<std::string> device_name_of(const VerbsFunctions& f, ibv_device* d) {
  if (f.get_device_name) {
    const char* n = f.get_device_name(d);
    if (n) return checked_device_name(bounded_c_string(n), "ibv_get_device_name()");
  }
  // ibv_device::name is a fixed array; bound the read even if a provider forgot the NUL.
  return checked_device_name(std::string(d->name, strnlen(d->name, sizeof d->name)), "ibv_device::name");
}

/// The device list, freed on scope exit whatever happens.
class DeviceList {
 public:
  DeviceList(const VerbsFunctions& f, ibv_device** list) : f_(f), list_(list) {}
  ~DeviceList() {
    if (list_) f_.free_device_list(list_);
  }
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;
  [[nodiscard]] ibv_device** get() const noexcept { return list_; }

 private:
  const VerbsFunctions& f_;
  ibv_device** list_;
};

result<std::vector<ibv_device*>> list_devices(const VerbsFunctions& f, ibv_device**& raw) {
  errno = 0;
  int n = 0;
  raw = f.get_device_list(&n);
  const int err = errno;
  if (!raw) {
    // rdma-core with no RDMA kernel support (no /sys/class/infiniband_verbs) says NULL + ENOSYS.
    if (err == ENOSYS || err == ENODEV || err == ENOENT || err == 0)
      return fail(
          errc::no_devices,
          "ibv_get_device_list() returned NULL" +
              (err ? ", errno " + std::to_string(err) + " (" + std::strerror(err) + ")" : std::string()) +
              ": this machine has no RDMA device or no RDMA kernel support");
    return fail_errno(err, "ibv_get_device_list()");
  }
  std::vector<ibv_device*> out;
  for (int i = 0; raw[i] != nullptr && (n <= 0 || i < n); ++i) out.push_back(raw[i]);
  if (out.empty()) return fail(errc::no_devices, "ibv_get_device_list() found 0 devices");
  return out;
}

}  // namespace

FunctionTableApi::FunctionTableApi(const VerbsFunctions& functions, Options options)
    : fns_(functions), options_(std::move(options)) {}

FunctionTableApi::~FunctionTableApi() { close_all(); }

void FunctionTableApi::close_all() noexcept {
  while (!devices_.empty()) {
    const DeviceHandle h{devices_.begin()->first};
    // Qualified: this runs from destructors, where the call is statically bound anyway; say so.
    if (!FunctionTableApi::close_device(h)) devices_.erase(h.id);  // failed to close: forget it, don't loop
  }
}

result<void> FunctionTableApi::require_snapshot_calls(std::string_view call) const {
  if (unavailable_) return fail(*unavailable_);
  const auto missing = fns_.missing_for_snapshot();
  if (!missing.empty())
    return fail(errc::symbol_missing, std::string(call) + ": the function table lacks " + join(missing));
  return success();
}

result<FunctionTableApi::Device*> FunctionTableApi::find(DeviceHandle device, std::string_view call) {
  if (unavailable_) return fail(*unavailable_);
  auto it = devices_.find(device.id);
  if (it == devices_.end())
    return fail(errc::invalid_argument, std::string(call) + ": device handle " + std::to_string(device.id) +
                                            " is not open in this " + options_.name + " backend");
  return &it->second;
}

result<const FunctionTableApi::Device*> FunctionTableApi::find(DeviceHandle device,
                                                               std::string_view call) const {
  if (unavailable_) return fail(*unavailable_);
  auto it = devices_.find(device.id);
  if (it == devices_.end())
    return fail(errc::invalid_argument, std::string(call) + ": device handle " + std::to_string(device.id) +
                                            " is not open in this " + options_.name + " backend");
  return &it->second;
}

result<FunctionTableApi::Qp*> FunctionTableApi::find(QpHandle qp, std::string_view call) {
  if (unavailable_) return fail(*unavailable_);
  auto it = qps_.find(qp.id);
  if (it == qps_.end())
    return fail(errc::invalid_argument, std::string(call) + ": QP handle " + std::to_string(qp.id) +
                                            " does not exist in this " + options_.name + " backend");
  return &it->second;
}

std::string FunctionTableApi::where(const Device& d, std::string_view call, std::uint32_t port,
                                    std::uint32_t index) const {
  return std::string(call) + "(" + d.name + ", " + std::to_string(port) + ", " + std::to_string(index) + ")";
}

result<std::vector<std::string>> FunctionTableApi::device_names() {
  GIDPOLICY_TRYV(require_snapshot_calls("ibv_get_device_list"));
  ibv_device** raw = nullptr;
  auto devices = list_devices(fns_, raw);
  DeviceList guard(fns_, raw);
  if (!devices) return std::move(devices).as_failure();
  std::vector<std::string> names;
  for (ibv_device* d : devices.value()) {
    GIDPOLICY_TRY(n, device_name_of(fns_, d));
    names.push_back(std::move(n));
  }
  return names;
}

result<DeviceHandle> FunctionTableApi::open_device(std::string_view name) {
  GIDPOLICY_TRYV(require_snapshot_calls("ibv_open_device"));
  ibv_device** raw = nullptr;
  auto devices = list_devices(fns_, raw);
  DeviceList guard(fns_, raw);
  if (!devices) return std::move(devices).as_failure();
  std::vector<std::string> seen;
  for (ibv_device* d : devices.value()) {
    GIDPOLICY_TRY(n, device_name_of(fns_, d));
    if (n != name) {
      seen.push_back(std::move(n));
      continue;
    }
    errno = 0;
    ibv_context* ctx = fns_.open_device(d);
    const int err = errno;
    if (!ctx) {
      if (err == 0)
        return fail(errc::device_not_found, "ibv_open_device(" + n + ") returned NULL without errno");
      return fail_errno(err, "ibv_open_device(" + n + ")");
    }
    const std::uint64_t id = next_id_++;
    devices_.emplace(id, Device{ctx, std::move(n), false, false, false});
    return DeviceHandle{id};
  }
  return fail(errc::device_not_found,
              "no RDMA device named " + quote_name(name, kMaxDeviceName + 1) + "; devices: " + join(seen));
}

result<DeviceHandle> FunctionTableApi::adopt(ibv_context* context) {
  if (unavailable_) return fail(*unavailable_);
  if (!context) return fail(errc::invalid_argument, "adopt: the context is NULL");
  std::string name;
  if (context->device) {
    if (fns_.get_device_name) {
      if (const char* n = fns_.get_device_name(context->device)) name = bounded_c_string(n);
    }
    // ibv_device::name is a fixed array: bound the read in case a provider left it unterminated.
    if (name.empty())
      name.assign(context->device->name, strnlen(context->device->name, sizeof context->device->name));
  }
  if (name.empty()) {
    name = "<context>";
  } else {
    GIDPOLICY_TRY(checked, checked_device_name(std::move(name), "the context's device"));
    name = std::move(checked);
  }
  const std::uint64_t id = next_id_++;
  devices_.emplace(id, Device{context, std::move(name), false, false, true});
  return DeviceHandle{id};
}

result<void> FunctionTableApi::close_device(DeviceHandle device) {
  GIDPOLICY_TRY(d, find(device, "ibv_close_device"));
  std::optional<Error> first;
  for (auto it = qps_.begin(); it != qps_.end();) {
    if (it->second.device == device.id) {
      auto r = destroy(it->second, "ibv_close_device(" + d->name + ")");
      if (!r && !first) first = r.error();
      it = qps_.erase(it);
    } else {
      ++it;
    }
  }
  // An adopted context is the caller's: forget it, do not close it.
  int rc = 0;
  int err = 0;
  if (!d->adopted) {
    errno = 0;
    rc = fns_.close_device(d->context);
    err = errno_of(rc, errno);
  }
  const std::string name = d->name;
  devices_.erase(device.id);
  if (rc != 0) return fail_errno(err ? err : EIO, "ibv_close_device(" + name + ")");
  if (first) return fail(*first);
  return success();
}

result<std::string> FunctionTableApi::device_name(DeviceHandle device) const {
  GIDPOLICY_TRY(d, find(device, "device_name"));
  return d->name;
}

result<PortInfo> FunctionTableApi::port_attributes(DeviceHandle device, std::uint32_t port) {
  GIDPOLICY_TRY(d, find(device, "ibv_query_port"));
  if (!fns_.query_port) return fail(errc::symbol_missing, "the function table lacks query_port");
  if (port < 1 || port > 255)
    return fail(errc::invalid_argument, "ibv_query_port(" + d->name + ", " + std::to_string(port) +
                                            "): port numbers are 1..255 (uint8_t)");
  ibv_port_attr attr;
  // The exported symbol fills only rdma-core's compat prefix of the struct: zero it all first,
  // as the ibv_query_port inline does.
  std::memset(&attr, 0, sizeof attr);
  errno = 0;
  const int rc = fns_.query_port(d->context, static_cast<std::uint8_t>(port), &attr);
  const int err = errno_of(rc, errno);
  if (rc != 0)
    return fail_errno(err ? err : EIO, "ibv_query_port(" + d->name + ", " + std::to_string(port) + ")");
  // A negative length is not an empty table: a driver (or function table) that reports one
  // cannot be trusted for the rest either.
  if (attr.gid_tbl_len < 0)
    return fail_errno(EPROTO, "ibv_query_port(" + d->name + ", " + std::to_string(port) +
                                  ") reported gid_tbl_len " + std::to_string(attr.gid_tbl_len) +
                                  " (negative: driver bug?)");
  return port_info_from_ibv(d->name, port, attr,
                            "ibv_query_port(" + d->name + ", " + std::to_string(port) + ")");
}

result<Gid> FunctionTableApi::read_gid(DeviceHandle device, std::uint32_t port, std::uint32_t index) {
  GIDPOLICY_TRY(d, find(device, "ibv_query_gid"));
  const std::string at = where(*d, "ibv_query_gid", port, index);
  if (!fns_.query_gid) return fail(errc::not_supported, at + ": the function table lacks query_gid");
  if (port < 1 || port > 255 || index > static_cast<std::uint32_t>(INT_MAX))
    return fail(errc::invalid_argument, at + ": port must be 1..255 and index fit an int");
  ibv_gid gid;
  std::memset(&gid, 0, sizeof gid);
  errno = 0;
  const int rc = fns_.query_gid(d->context, static_cast<std::uint8_t>(port), static_cast<int>(index), &gid);
  const int err = errno_of(rc, errno);
  if (rc != 0) {
    // rdma-core 44's ibv_query_gid returns -1 without setting errno (an out-of-range index).
    if (err == 0)
      return fail(errc::entry_unreadable, at + " returned " + std::to_string(rc) + " without errno");
    return fail_errno(err, at);
  }
  return Gid::from_bytes(gid.raw);
}

result<GidEntry> FunctionTableApi::read_gid_entry(DeviceHandle device, std::uint32_t port,
                                                  std::uint32_t index) {
  GIDPOLICY_TRY(d, find(device, "ibv_query_gid_ex"));
  const std::string at = where(*d, "ibv_query_gid_ex", port, index);
  if (!fns_.query_gid_ex && !fns_.query_gid_ex_sized)
    return fail(errc::not_supported, at + ": the function table lacks query_gid_ex");
  if (d->entry_unsupported) return fail_errno(EOPNOTSUPP, at + ": not supported by this driver (learned)");
  ibv_gid_entry entry;
  std::memset(&entry, 0, sizeof entry);
  errno = 0;
  const int rc = fns_.query_gid_ex_sized
                     ? fns_.query_gid_ex_sized(d->context, port, index, &entry, 0, sizeof entry)
                     : fns_.query_gid_ex(d->context, port, index, &entry, 0);
  const int err = errno_of(rc, errno);
  if (rc != 0) {
    if (is_unsupported(err)) d->entry_unsupported = true;
    // ENODATA is the normal answer for an empty slot: the caller decides what it means.
    return fail_errno(err ? err : EIO, at);
  }
  std::string netdev;
  if (options_.resolve_netdev_names && entry.ndev_ifindex != 0) {
    char buf[IF_NAMESIZE] = {};
    if (if_indextoname(entry.ndev_ifindex, buf)) netdev = buf;
  }
  return GidEntry::valid(index, Gid::from_bytes(entry.gid.raw), gid_type_from_ibv(entry.gid_type),
                         std::move(netdev), entry.ndev_ifindex);
}

result<std::vector<GidTableRow>> FunctionTableApi::read_gid_table(DeviceHandle device,
                                                                  std::uint32_t max_entries) {
  GIDPOLICY_TRY(d, find(device, "ibv_query_gid_table"));
  const std::string at = "ibv_query_gid_table(" + d->name + ", max " + std::to_string(max_entries) + ")";
  if (!fns_.query_gid_table && !fns_.query_gid_table_sized)
    return fail(errc::not_supported, at + ": the function table lacks query_gid_table");
  if (d->table_unsupported) return fail_errno(EOPNOTSUPP, at + ": not supported by this driver (learned)");
  if (max_entries == 0) return fail(errc::invalid_argument, at + ": max_entries must be positive");
  std::vector<ibv_gid_entry> buf(max_entries);
  std::memset(buf.data(), 0, buf.size() * sizeof(ibv_gid_entry));
  errno = 0;
  const ssize_t n =
      fns_.query_gid_table_sized
          ? fns_.query_gid_table_sized(d->context, buf.data(), buf.size(), 0, sizeof(ibv_gid_entry))
          : fns_.query_gid_table(d->context, buf.data(), buf.size(), 0);
  const int saved = errno;
  if (n < 0) {
    const int err = errno_of(n, saved);
    if (is_unsupported(err)) d->table_unsupported = true;
    return fail_errno(err ? err : EIO, at);
  }
  if (static_cast<std::size_t>(n) > buf.size())
    return fail(errc::invalid_argument, at + " claimed " + std::to_string(n) + " entries");
  std::vector<GidTableRow> rows;
  rows.reserve(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    const ibv_gid_entry& e = buf[i];
    std::string netdev;
    if (options_.resolve_netdev_names && e.ndev_ifindex != 0) {
      char name[IF_NAMESIZE] = {};
      if (if_indextoname(e.ndev_ifindex, name)) netdev = name;
    }
    rows.push_back(
        {e.port_num, GidEntry::valid(e.gid_index, Gid::from_bytes(e.gid.raw), gid_type_from_ibv(e.gid_type),
                                     std::move(netdev), e.ndev_ifindex)});
  }
  return rows;
}

ReadSupport FunctionTableApi::read_support(DeviceHandle device) const {
  auto d = find(device, "read_support");
  if (!d) return {};
  return {(fns_.query_gid_table || fns_.query_gid_table_sized) && !d.value()->table_unsupported,
          (fns_.query_gid_ex || fns_.query_gid_ex_sized) && !d.value()->entry_unsupported,
          fns_.query_gid != nullptr};
}

result<QpHandle> FunctionTableApi::create_qp(DeviceHandle device, QpKind kind) {
  // Queues of one: enough for a QP that is only taken to RTR (and what older callers expect).
  return create_data_qp(device, kind, QpCapacity{.send_wr = 1, .recv_wr = 1, .cq_entries = 1});
}

result<QpHandle> FunctionTableApi::create_data_qp(DeviceHandle device, QpKind kind,
                                                  const QpCapacity& capacity) {
  GIDPOLICY_TRY(d, find(device, "ibv_create_qp"));
  const auto missing = fns_.missing_for_qps();
  if (!missing.empty())
    return fail(errc::not_supported, "create_qp: the function table lacks " + join(missing));
  Qp q{device.id, kind, nullptr, nullptr, nullptr, {}};
  errno = 0;
  q.pd = fns_.alloc_pd(d->context);
  if (!q.pd) {
    const int err = errno;
    return fail_errno(err ? err : ENOMEM, "ibv_alloc_pd(" + d->name + ")");
  }
  errno = 0;
  q.cq = fns_.create_cq(d->context, static_cast<int>(capacity.cq_entries), nullptr, nullptr, 0);
  if (!q.cq) {
    const int err = errno;
    (void)destroy(q, "");
    return fail_errno(err ? err : ENOMEM, "ibv_create_cq(" + d->name + ")");
  }
  ibv_qp_init_attr init;
  std::memset(&init, 0, sizeof init);
  init.send_cq = q.cq;
  init.recv_cq = q.cq;
  init.qp_type = to_ibv(kind);
  init.cap.max_send_wr = capacity.send_wr;
  init.cap.max_recv_wr = capacity.recv_wr;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  errno = 0;
  q.qp = fns_.create_qp(q.pd, &init);
  if (!q.qp) {
    const int err = errno;  // Apple: EOPNOTSUPP for RC, EBUSY past ~10 QPs
    (void)destroy(q, "");
    return fail_errno(err ? err : ENOMEM,
                      "ibv_create_qp(" + d->name + ", " + std::string(to_string(kind)) + ")");
  }
  const std::uint64_t id = next_id_++;
  qps_.emplace(id, q);
  return QpHandle{id};
}

result<MemoryKeys> FunctionTableApi::register_memory(QpHandle qp, void* addr, std::size_t length,
                                                     int access) {
  GIDPOLICY_TRY(q, find(qp, "ibv_reg_mr"));
  if (!fns_.reg_mr || !fns_.dereg_mr)
    return fail(errc::not_supported, "register_memory: the function table lacks reg_mr/dereg_mr");
  errno = 0;
  ibv_mr* mr = fns_.reg_mr(q->pd, addr, length, access);
  if (!mr) {
    const int err = errno;
    return fail_errno(err ? err : ENOMEM, "ibv_reg_mr(" + std::to_string(length) + " bytes)");
  }
  q->mrs.push_back(mr);
  return MemoryKeys{.addr = reinterpret_cast<std::uintptr_t>(mr->addr),
                    .length = static_cast<std::uint64_t>(mr->length),
                    .lkey = mr->lkey,
                    .rkey = mr->rkey};
}

result<void> FunctionTableApi::post_send(QpHandle qp, const SendRequest& request) {
  GIDPOLICY_TRY(q, find(qp, "ibv_post_send"));
  ibv_sge sge{.addr = request.local_addr, .length = request.length, .lkey = request.lkey};
  ibv_send_wr wr;
  std::memset(&wr, 0, sizeof wr);
  wr.wr_id = request.wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (request.op == SendRequest::Op::rdma_write) {
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = request.remote_addr;
    wr.wr.rdma.rkey = request.rkey;
  } else {
    wr.opcode = IBV_WR_SEND;
  }
  ibv_send_wr* bad = nullptr;
  errno = 0;
  const int rc = ibv_post_send(q->qp, &wr, &bad);  // an inline over the context's ops
  const int err = errno_of(rc, errno);
  if (rc != 0) return fail_errno(err ? err : EIO, "ibv_post_send(qp " + std::to_string(q->qp->qp_num) + ")");
  return success();
}

result<void> FunctionTableApi::post_recv(QpHandle qp, std::uint64_t wr_id, std::uint64_t addr,
                                         std::uint32_t length, std::uint32_t lkey) {
  GIDPOLICY_TRY(q, find(qp, "ibv_post_recv"));
  ibv_sge sge{.addr = addr, .length = length, .lkey = lkey};
  ibv_recv_wr wr;
  std::memset(&wr, 0, sizeof wr);
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  errno = 0;
  const int rc = ibv_post_recv(q->qp, &wr, &bad);
  const int err = errno_of(rc, errno);
  if (rc != 0) return fail_errno(err ? err : EIO, "ibv_post_recv(qp " + std::to_string(q->qp->qp_num) + ")");
  return success();
}

result<std::vector<WorkCompletion>> FunctionTableApi::poll_completions(QpHandle qp, std::uint32_t max) {
  GIDPOLICY_TRY(q, find(qp, "ibv_poll_cq"));
  std::vector<ibv_wc> wc(max == 0 ? 1 : max);
  const int n = ibv_poll_cq(q->cq, static_cast<int>(wc.size()), wc.data());
  if (n < 0) return fail_errno(-n > 0 ? -n : EIO, "ibv_poll_cq");
  std::vector<WorkCompletion> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const ibv_wc& w = wc[static_cast<std::size_t>(i)];
    out.push_back({.wr_id = w.wr_id, .status = w.status, .opcode = w.opcode, .byte_len = w.byte_len});
  }
  return out;
}

result<void> FunctionTableApi::modify_qp(QpHandle qp, const ibv_qp_attr& attr, int mask) {
  GIDPOLICY_TRY(q, find(qp, "ibv_modify_qp"));
  if (!fns_.modify_qp) return fail(errc::not_supported, "the function table lacks modify_qp");
  ibv_qp_attr copy = attr;  // libibverbs takes a non-const pointer
  errno = 0;
  const int rc = fns_.modify_qp(q->qp, &copy, mask);
  const int err = errno_of(rc, errno);
  if (rc != 0)
    return fail_errno(err ? err : EIO, "ibv_modify_qp(qp " + std::to_string(q->qp->qp_num) + ", state " +
                                           std::to_string(static_cast<int>(attr.qp_state)) + ")");
  return success();
}

result<QpInfo> FunctionTableApi::query_qp(QpHandle qp) {
  GIDPOLICY_TRY(q, find(qp, "ibv_query_qp"));
  if (!fns_.query_qp) return fail(errc::not_supported, "the function table lacks query_qp");
  QpInfo info;
  info.qp_num = q->qp->qp_num;
  info.kind = q->kind;
  ibv_qp_init_attr init;
  std::memset(&init, 0, sizeof init);
  errno = 0;
  const int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_AV | IBV_QP_PATH_MTU |
                   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_SQ_PSN;
  const int rc = fns_.query_qp(q->qp, &info.attr, mask, &init);
  const int err = errno_of(rc, errno);
  if (rc != 0) return fail_errno(err ? err : EIO, "ibv_query_qp(qp " + std::to_string(q->qp->qp_num) + ")");
  info.state = info.attr.qp_state;
  return info;
}

result<void> FunctionTableApi::destroy(Qp& q, std::string_view who) const {
  std::optional<Error> first;
  auto note = [&](long long rc, int saved, const char* call) {
    if (rc != 0 && !first) {
      const int err = errno_of(rc, saved);
      first = Error(std::error_code(err ? err : EIO, std::generic_category()),
                    std::string(call) + (who.empty() ? "" : " during " + std::string(who)));
    }
  };
  if (q.qp) {
    errno = 0;
    const int rc = fns_.destroy_qp(q.qp);
    note(rc, errno, "ibv_destroy_qp");
    q.qp = nullptr;
  }
  for (ibv_mr* mr : q.mrs) {
    errno = 0;
    const int rc = fns_.dereg_mr ? fns_.dereg_mr(mr) : 0;
    note(rc, errno, "ibv_dereg_mr");
  }
  q.mrs.clear();
  if (q.cq) {
    errno = 0;
    const int rc = fns_.destroy_cq(q.cq);
    note(rc, errno, "ibv_destroy_cq");
    q.cq = nullptr;
  }
  if (q.pd) {
    errno = 0;
    const int rc = fns_.dealloc_pd(q.pd);
    note(rc, errno, "ibv_dealloc_pd");
    q.pd = nullptr;
  }
  if (first) return fail(*first);
  return success();
}

result<void> FunctionTableApi::destroy_qp(QpHandle qp) {
  GIDPOLICY_TRY(q, find(qp, "ibv_destroy_qp"));
  auto r = destroy(*q, "");
  qps_.erase(qp.id);
  return r;
}

result<int> FunctionTableApi::async_event_fd(DeviceHandle device) {
  GIDPOLICY_TRY(d, find(device, "async_fd"));
  if (!fns_.get_async_event || !fns_.ack_async_event)
    return fail(errc::not_supported,
                "async_fd(" + d->name + "): the function table lacks get_async_event/ack_async_event");
  if (d->context->async_fd < 0)
    return fail(errc::not_supported, "async_fd(" + d->name + "): the context has no async_fd");
  return d->context->async_fd;
}

result<std::optional<AsyncEvent>> FunctionTableApi::read_async_event(DeviceHandle device) {
  GIDPOLICY_TRY(fd, async_event_fd(device));
  GIDPOLICY_TRY(d, find(device, "ibv_get_async_event"));
  pollfd p{fd, POLLIN, 0};
  int n = 0;
  do {
    n = ::poll(&p, 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return fail_errno(errno, "poll(async_fd of " + d->name + ")");
  if (n == 0 || !(p.revents & POLLIN)) return std::optional<AsyncEvent>();
  AsyncEvent ev;
  std::memset(&ev.raw, 0, sizeof ev.raw);
  errno = 0;
  const int rc = fns_.get_async_event(d->context, &ev.raw);
  const int err = errno;
  if (rc != 0) {
    // Another reader took the event between poll and read, on an O_NONBLOCK fd.
    if (err == EAGAIN || err == EWOULDBLOCK) return std::optional<AsyncEvent>();
    return fail_errno(err ? err : EIO, "ibv_get_async_event(" + d->name + ")");
  }
  ev.type = ev.raw.event_type;
  switch (ev.type) {
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
      ev.port = static_cast<std::uint32_t>(ev.raw.element.port_num);
      break;
    default:
      ev.port = 0;  // the element is a QP, CQ, SRQ or WQ pointer
  }
  return std::optional<AsyncEvent>(ev);
}

result<void> FunctionTableApi::ack_async_event(DeviceHandle device, const AsyncEvent& event) {
  GIDPOLICY_TRY(d, find(device, "ibv_ack_async_event"));
  if (!fns_.ack_async_event)
    return fail(errc::not_supported, "ibv_ack_async_event(" + d->name + "): the function table lacks it");
  ibv_async_event copy = event.raw;  // libibverbs takes a non-const pointer
  fns_.ack_async_event(&copy);
  return success();
}

}  // namespace gidpolicy::verbs
