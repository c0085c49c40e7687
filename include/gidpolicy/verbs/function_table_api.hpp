// FunctionTableApi: the VerbsApi backend over a table of libibverbs function pointers.
//
// It is the common engine of the C-backed backends: a caller's own table (JACCL's IBVWrapper,
// ds4's ds4_tp_verbs_api, through functions_from()), DlopenApi (filled by dlsym), LibibverbsApi
// (filled with the linked functions), and the C API, which adopt()s the caller's open context. All of
// rdma-core's return conventions are normalised here, with errno captured immediately after each call:
//   ibv_get_device_list/open_device/alloc_pd/create_cq/create_qp: NULL + errno;
//   ibv_query_gid: 0 / -1 (errno set, or not: rdma-core 44 returns -1 without setting it);
//   _ibv_query_gid_ex, ibv_query_port, ibv_modify_qp, ibv_query_qp, ibv_destroy_*: a positive
//   errno (some providers return -1 + errno: both are handled);
//   _ibv_query_gid_table: a count or a negative errno.
// Hardware gotchas encoded here:
//  * libibverbs on a machine without an RDMA kernel returns NULL + ENOSYS from
//    ibv_get_device_list: reported as errc::no_devices with the errno in the detail.
//  * a driver without the GID-table ioctl answers EOPNOTSUPP; the backend remembers per device
//    and read_support() stops offering the call, so later snapshots skip straight to per-index.
//
// Example:
//   gidpolicy::verbs::FunctionTableApi api(gidpolicy::verbs::functions_from(my_ibv_wrapper),
//                                          {.name = "jaccl-ibv-wrapper"});
//   auto table = gidpolicy::verbs::snapshot(api, "rdma_en2", 1);
#pragma once

#include <gidpolicy/verbs/functions.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <map>
#include <string>
#include <vector>

namespace gidpolicy::verbs {

/// VerbsApi over caller-supplied function pointers. Not thread-safe (one instance per thread,
/// or external locking), like the ibv_context it wraps.
class FunctionTableApi : public VerbsApi {
 public:
  struct Options {
    std::string name = "function-table";  ///< backend_name() for messages
    /// Turn ibv_gid_entry::ndev_ifindex into a netdev name with if_indextoname(). Off for
    /// tables that point at a fake, whose ifindex values mean nothing on this host.
    bool resolve_netdev_names = true;
  };

  explicit FunctionTableApi(const VerbsFunctions& functions) : FunctionTableApi(functions, Options{}) {}
  FunctionTableApi(const VerbsFunctions& functions, Options options);
  /// Destroys the QPs and closes the devices still open through this API.
  ~FunctionTableApi() override;

  [[nodiscard]] std::string backend_name() const override { return options_.name; }
  [[nodiscard]] const VerbsFunctions& functions() const noexcept { return fns_; }

  /// Use a context the caller opened already, as if open_device() had opened it: the handle
  /// works for every call, but close_device() and the destructor only forget it, never call
  /// close_device on it (the context stays the caller's). For callers that hold an ibv_context
  /// and a few pointers of their own and no device list: the C API's gidpolicy_verbs_fns (ds4
  /// dlsym()s query_port, query_gid and _ibv_query_gid_ex only). The device is named by
  /// get_device_name(context->device), else ibv_device::name, else "<context>".
  /// Error: errc::invalid_argument for a null context.
  /// Example:
  ///   FunctionTableApi api(functions_from(wrapper));
  ///   auto dev = api.adopt(ctx);
  ///   auto t = snapshot(api, dev.value(), 1);
  result<DeviceHandle> adopt(ibv_context* context);

  result<std::vector<std::string>> device_names() override;
  result<DeviceHandle> open_device(std::string_view name) override;
  result<void> close_device(DeviceHandle device) override;
  [[nodiscard]] result<std::string> device_name(DeviceHandle device) const override;
  result<PortInfo> port_attributes(DeviceHandle device, std::uint32_t port) override;
  result<Gid> read_gid(DeviceHandle device, std::uint32_t port, std::uint32_t index) override;
  result<GidEntry> read_gid_entry(DeviceHandle device, std::uint32_t port, std::uint32_t index) override;
  result<std::vector<GidTableRow>> read_gid_table(DeviceHandle device, std::uint32_t max_entries) override;
  [[nodiscard]] ReadSupport read_support(DeviceHandle device) const override;
  result<QpHandle> create_qp(DeviceHandle device, QpKind kind) override;
  result<void> modify_qp(QpHandle qp, const ibv_qp_attr& attr, int mask) override;
  result<QpInfo> query_qp(QpHandle qp) override;
  result<void> destroy_qp(QpHandle qp) override;
  result<QpHandle> create_data_qp(DeviceHandle device, QpKind kind, const QpCapacity& capacity) override;
  result<MemoryKeys> register_memory(QpHandle qp, void* addr, std::size_t length, int access) override;
  result<void> post_send(QpHandle qp, const SendRequest& request) override;
  result<void> post_recv(QpHandle qp, std::uint64_t wr_id, std::uint64_t addr, std::uint32_t length,
                         std::uint32_t lkey) override;
  result<std::vector<WorkCompletion>> poll_completions(QpHandle qp, std::uint32_t max) override;
  /// ibv_context::async_fd of the device.
  result<int> async_event_fd(DeviceHandle device) override;
  /// poll()s async_fd with a zero timeout and calls get_async_event only when it is readable:
  /// the fd's flags (blocking or not) stay as the context's owner set them.
  result<std::optional<AsyncEvent>> read_async_event(DeviceHandle device) override;
  result<void> ack_async_event(DeviceHandle device, const AsyncEvent& event) override;

 protected:
  /// For derived backends that must release everything before unloading the library.
  void close_all() noexcept;
  /// Replace the table (DlopenApi fills it after loading). Only before any device is open.
  void set_functions(const VerbsFunctions& functions) noexcept { fns_ = functions; }
  /// The error every call returns while set (a library that failed to load). Empty: none.
  void set_unavailable(Error why) { unavailable_ = std::move(why); }

 private:
  struct Device {
    ibv_context* context = nullptr;
    std::string name;
    bool table_unsupported = false;  // learned: the driver answered EOPNOTSUPP/ENOSYS
    bool entry_unsupported = false;
    bool adopted = false;  // the caller's context (adopt()): never closed here
  };
  struct Qp {
    std::uint64_t device = 0;
    QpKind kind = QpKind::uc;
    ibv_pd* pd = nullptr;
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    std::vector<ibv_mr*> mrs;  // register_memory(): deregistered before the PD goes
  };

  result<Device*> find(DeviceHandle device, std::string_view call);
  result<const Device*> find(DeviceHandle device, std::string_view call) const;
  result<Qp*> find(QpHandle qp, std::string_view call);
  result<void> require_snapshot_calls(std::string_view call) const;
  result<void> destroy(Qp& q, std::string_view who) const;
  std::string where(const Device& d, std::string_view call, std::uint32_t port, std::uint32_t index) const;

  VerbsFunctions fns_;
  Options options_;
  std::optional<Error> unavailable_;
  std::map<std::uint64_t, Device> devices_;
  std::map<std::uint64_t, Qp> qps_;
  std::uint64_t next_id_ = 1;
};

}  // namespace gidpolicy::verbs
