// ContextApi: a VerbsApi over one ibv_context the caller already opened, read through the C
// API's function pointers (gidpolicy_verbs_fns).
//
// Why a backend of its own: FunctionTableApi opens devices by name (ibv_get_device_list +
// ibv_open_device), but a C caller such as ds4 has opened its device already and hands over
// only the context and the few pointers it dlsym()ed (query_port, query_gid, _ibv_query_gid_ex).
// This adopts that context for the duration of one call and never closes it. Everything above
// the seam (snapshot(), read_entry()) is shared with the other backends.
//
// rdma-core's return conventions are normalised as FunctionTableApi does, errno captured right
// after each call: query_port and _ibv_query_gid_ex return a positive errno (some providers -1 +
// errno); ibv_query_gid returns 0 / -1, and rdma-core 44 returns -1 without setting errno for an
// index out of range.
#pragma once

#include <gidpolicy/gidpolicy.h>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <string>

namespace gidpolicy::capi {

class ContextApi final : public verbs::VerbsApi {
 public:
  /// The one device this API knows.
  static constexpr verbs::DeviceHandle kDevice{1};

  /// `fns` and `context` must outlive the API; the context is never closed.
  /// `resolve_netdev_names`: turn ndev_ifindex into a name with if_indextoname().
  ContextApi(const gidpolicy_verbs_fns& fns, ibv_context* context, bool resolve_netdev_names);

  [[nodiscard]] std::string backend_name() const override { return "c-function-table"; }
  result<std::vector<std::string>> device_names() override;
  result<verbs::DeviceHandle> open_device(std::string_view name) override;
  result<void> close_device(verbs::DeviceHandle device) override;
  [[nodiscard]] result<std::string> device_name(verbs::DeviceHandle device) const override;
  result<PortInfo> port_attributes(verbs::DeviceHandle device, std::uint32_t port) override;
  result<Gid> read_gid(verbs::DeviceHandle device, std::uint32_t port, std::uint32_t index) override;
  result<GidEntry> read_gid_entry(verbs::DeviceHandle device, std::uint32_t port,
                                  std::uint32_t index) override;
  result<std::vector<verbs::GidTableRow>> read_gid_table(verbs::DeviceHandle device,
                                                         std::uint32_t max_entries) override;
  [[nodiscard]] verbs::ReadSupport read_support(verbs::DeviceHandle device) const override;
  result<verbs::QpHandle> create_qp(verbs::DeviceHandle device, QpKind kind) override;
  result<void> modify_qp(verbs::QpHandle qp, const ibv_qp_attr& attr, int mask) override;
  result<verbs::QpInfo> query_qp(verbs::QpHandle qp) override;
  result<void> destroy_qp(verbs::QpHandle qp) override;

 private:
  [[nodiscard]] result<void> check(verbs::DeviceHandle device, std::string_view call) const;
  [[nodiscard]] std::string where(std::string_view call, std::uint32_t port, std::uint32_t index) const;

  gidpolicy_verbs_fns fns_;
  ibv_context* context_;
  std::string name_;
  bool resolve_netdev_names_;
  bool entry_unsupported_ = false;  // learned: _ibv_query_gid_ex answered EOPNOTSUPP/ENOSYS
};

}  // namespace gidpolicy::capi
