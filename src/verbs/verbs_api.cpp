#include <gidpolicy/verbs/functions.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <cerrno>
#include <cstring>
#include <type_traits>

namespace gidpolicy::verbs {

std::string_view to_string(VerbsCall c) noexcept {
  switch (c) {
    case VerbsCall::device_names:
      return "device_names";
    case VerbsCall::open_device:
      return "open_device";
    case VerbsCall::close_device:
      return "close_device";
    case VerbsCall::port_attributes:
      return "port_attributes";
    case VerbsCall::read_gid:
      return "read_gid";
    case VerbsCall::read_gid_entry:
      return "read_gid_entry";
    case VerbsCall::read_gid_table:
      return "read_gid_table";
    case VerbsCall::create_qp:
      return "create_qp";
    case VerbsCall::modify_qp:
      return "modify_qp";
    case VerbsCall::query_qp:
      return "query_qp";
    case VerbsCall::destroy_qp:
      return "destroy_qp";
    case VerbsCall::read_async_event:
      return "read_async_event";
    case VerbsCall::ack_async_event:
      return "ack_async_event";
  }
  return "unknown";
}

std::string async_event_name(ibv_event_type type) {
  switch (type) {
    case IBV_EVENT_GID_CHANGE:
      return "gid_change";
    case IBV_EVENT_PORT_ACTIVE:
      return "port_active";
    case IBV_EVENT_PORT_ERR:
      return "port_error";
    case IBV_EVENT_LID_CHANGE:
      return "lid_change";
    case IBV_EVENT_PKEY_CHANGE:
      return "pkey_change";
    case IBV_EVENT_SM_CHANGE:
      return "sm_change";
    case IBV_EVENT_CLIENT_REREGISTER:
      return "client_reregister";
    case IBV_EVENT_DEVICE_FATAL:
      return "device_fatal";
    default:
      return "event " + std::to_string(static_cast<int>(type));
  }
}

result<int> VerbsApi::async_event_fd(DeviceHandle) {
  return fail(errc::not_supported, backend_name() + ": no asynchronous events in this backend");
}
result<std::optional<AsyncEvent>> VerbsApi::read_async_event(DeviceHandle) {
  return fail(errc::not_supported, backend_name() + ": no asynchronous events in this backend");
}
result<void> VerbsApi::ack_async_event(DeviceHandle, const AsyncEvent&) {
  return fail(errc::not_supported, backend_name() + ": no asynchronous events in this backend");
}
result<QpHandle> VerbsApi::create_data_qp(DeviceHandle, QpKind, const QpCapacity&) {
  return fail(errc::not_supported, backend_name() + ": no data path in this backend");
}
result<MemoryKeys> VerbsApi::register_memory(QpHandle, void*, std::size_t, int) {
  return fail(errc::not_supported, backend_name() + ": no data path in this backend");
}
result<void> VerbsApi::post_send(QpHandle, const SendRequest&) {
  return fail(errc::not_supported, backend_name() + ": no data path in this backend");
}
result<void> VerbsApi::post_recv(QpHandle, std::uint64_t, std::uint64_t, std::uint32_t, std::uint32_t) {
  return fail(errc::not_supported, backend_name() + ": no data path in this backend");
}
result<std::vector<WorkCompletion>> VerbsApi::poll_completions(QpHandle, std::uint32_t) {
  return fail(errc::not_supported, backend_name() + ": no data path in this backend");
}

ibv_qp_type to_ibv(QpKind kind) noexcept {
  switch (kind) {
    case QpKind::rc:
      return IBV_QPT_RC;
    case QpKind::uc:
      return IBV_QPT_UC;
    case QpKind::ud:
      return IBV_QPT_UD;
  }
  return IBV_QPT_UC;
}

std::optional<QpKind> qp_kind_from_ibv(ibv_qp_type type) noexcept {
  switch (type) {
    case IBV_QPT_RC:
      return QpKind::rc;
    case IBV_QPT_UC:
      return QpKind::uc;
    case IBV_QPT_UD:
      return QpKind::ud;
    default:
      return std::nullopt;
  }
}

GidType gid_type_from_ibv(std::uint32_t gid_type) noexcept {
  switch (gid_type) {
    case IBV_GID_TYPE_IB:
      return GidType::ib;
    case IBV_GID_TYPE_ROCE_V1:
      return GidType::roce_v1;
    case IBV_GID_TYPE_ROCE_V2:
      return GidType::roce_v2;
    default:
      return GidType::unknown;  // a future kernel's type: keep it, never guess
  }
}

std::uint32_t to_ibv(GidType type) noexcept {
  switch (type) {
    case GidType::ib:
      return IBV_GID_TYPE_IB;
    case GidType::roce_v1:
      return IBV_GID_TYPE_ROCE_V1;
    case GidType::roce_v2:
      return IBV_GID_TYPE_ROCE_V2;
    case GidType::unknown:
      break;
  }
  return IBV_GID_TYPE_IB;
}

result<PortInfo> port_info_from_ibv(std::string device, std::uint32_t port, const ibv_port_attr& attr,
                                    std::string_view call) {
  PortInfo p;
  p.device = std::move(device);
  p.port = port;
  std::underlying_type_t<ibv_port_state> raw_state{};
  std::memcpy(&raw_state, &attr.state, sizeof raw_state);
  p.state =
      static_cast<PortState>(static_cast<unsigned>(raw_state) <= 5 ? static_cast<unsigned>(raw_state) : 0u);
  // IBV_LINK_LAYER_UNSPECIFIED (0) comes from legacy providers, which are all InfiniBand.
  p.link_layer = attr.link_layer == IBV_LINK_LAYER_UNSPECIFIED ? LinkLayer::infiniband()
                                                               : LinkLayer::from_raw(attr.link_layer);
  p.gid_tbl_len = attr.gid_tbl_len < 0 ? 0u : static_cast<std::uint32_t>(attr.gid_tbl_len);
  // An MTU the seam does not know is not a guess: a 1024 assumed here would become every RTR's
  // path MTU. A driver that reports one is refused as a driver that cannot be trusted.
  // Read as the integer the C struct holds: a driver (a C caller's function table) may store any
  // value there, and loading an enum object that holds one outside the enum's range is undefined
  // in C++.
  std::underlying_type_t<ibv_mtu> raw_mtu{};
  std::memcpy(&raw_mtu, &attr.active_mtu, sizeof raw_mtu);
  const auto mtu = static_cast<unsigned>(raw_mtu);
  if (mtu < 1 || mtu > 5)
    return fail_errno(EPROTO, std::string(call.empty() ? "ibv_query_port" : call) + " reported active_mtu " +
                                  std::to_string(mtu) +
                                  " (not IBV_MTU_256..IBV_MTU_4096, 1..5): the port's MTU is unknown");
  p.active_mtu = static_cast<Mtu>(mtu);
  p.lid = attr.lid;
  return p;
}

std::vector<std::string> VerbsFunctions::missing_for_snapshot() const {
  std::vector<std::string> m;
  if (!get_device_list) m.emplace_back("get_device_list");
  if (!free_device_list) m.emplace_back("free_device_list");
  if (!open_device) m.emplace_back("open_device");
  if (!close_device) m.emplace_back("close_device");
  if (!query_port) m.emplace_back("query_port");
  if (!query_gid && !query_gid_ex && !query_gid_ex_sized && !query_gid_table && !query_gid_table_sized)
    m.emplace_back("query_gid (or query_gid_ex / query_gid_table)");
  return m;
}

std::vector<std::string> VerbsFunctions::missing_for_qps() const {
  std::vector<std::string> m;
  if (!alloc_pd) m.emplace_back("alloc_pd");
  if (!dealloc_pd) m.emplace_back("dealloc_pd");
  if (!create_cq) m.emplace_back("create_cq");
  if (!destroy_cq) m.emplace_back("destroy_cq");
  if (!create_qp) m.emplace_back("create_qp");
  if (!modify_qp) m.emplace_back("modify_qp");
  if (!destroy_qp) m.emplace_back("destroy_qp");
  return m;
}

}  // namespace gidpolicy::verbs
