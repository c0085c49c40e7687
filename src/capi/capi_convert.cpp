// The C API's conversions between its C enums and structs and the C++ core's types (gid type,
// QP type, MTU, platform, the caller's function table as a VerbsApi backend).
#include <gidpolicy/gidpolicy.h>

#include "capi_internal.hpp"

#include <gidpolicy/change.hpp>
#include <gidpolicy/verbs/function_table_api.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <infiniband/verbs.h>

#include <optional>

namespace gidpolicy::capi {

std::optional<GidType> gid_type_from_c(int t) noexcept {
  switch (t) {
    case GIDPOLICY_GID_TYPE_IB:
      return GidType::ib;
    case GIDPOLICY_GID_TYPE_ROCE_V1:
      return GidType::roce_v1;
    case GIDPOLICY_GID_TYPE_ROCE_V2:
      return GidType::roce_v2;
    default:
      return std::nullopt;
  }
}

gidpolicy_gid_type gid_type_to_c(GidType t) noexcept {
  switch (t) {
    case GidType::ib:
      return GIDPOLICY_GID_TYPE_IB;
    case GidType::roce_v1:
      return GIDPOLICY_GID_TYPE_ROCE_V1;
    case GidType::roce_v2:
      return GIDPOLICY_GID_TYPE_ROCE_V2;
    case GidType::unknown:
      break;
  }
  return GIDPOLICY_GID_TYPE_UNKNOWN;
}

// verbs::qp_kind_from_ibv is the one conversion; the range check only keeps an int that is no
// enum ibv_qp_type value (they fit 0..255) from being cast into one.
std::optional<QpKind> qp_kind_from_c(int t) noexcept {
  if (t < 0 || t > 0xff) return std::nullopt;
  return verbs::qp_kind_from_ibv(static_cast<ibv_qp_type>(t));
}

std::optional<Mtu> mtu_from_c(int m, bool& valid) noexcept {
  valid = true;
  if (m == 0) return std::nullopt;
  if (m >= IBV_MTU_256 && m <= IBV_MTU_4096) return static_cast<Mtu>(m);
  valid = false;
  return std::nullopt;
}

Platform platform_from_c(gidpolicy_platform p, const gidpolicy_plan* s) noexcept {
  switch (p) {
    case GIDPOLICY_PLATFORM_LINUX:
      return Platform::linux_kernel;
    case GIDPOLICY_PLATFORM_DARWIN:
      return Platform::darwin;
    case GIDPOLICY_PLATFORM_AUTO:
    case GIDPOLICY_PLATFORM_MAX_ENUM_:
      break;
  }
  // Errno numbers are the driver's platform's: a Thunderbolt port is Apple's driver.
  if (s && s->table.port().link_layer.kind() == LinkLayer::Kind::thunderbolt) return Platform::darwin;
  return host_platform();
}

verbs::VerbsFunctions functions_of(const gidpolicy_verbs_fns& fns) noexcept {
  verbs::VerbsFunctions f;
  f.query_port = fns.query_port;
  f.query_gid = fns.query_gid;
  f.query_gid_ex = fns.query_gid_ex;
  f.query_gid_ex_sized = fns.query_gid_ex_sized;
  f.get_device_name = fns.get_device_name;
  return f;
}

verbs::FunctionTableApi context_api(const gidpolicy_verbs_fns& fns, bool resolve_netdev_names) {
  return verbs::FunctionTableApi(functions_of(fns),
                                 {.name = "c-function-table", .resolve_netdev_names = resolve_netdev_names});
}

gidpolicy_change_kind change_kind_to_c(ChangeKind k) noexcept {
  switch (k) {
    case ChangeKind::unchanged:
      return GIDPOLICY_CHANGE_UNCHANGED;
    case ChangeKind::moved:
      return GIDPOLICY_CHANGE_MOVED;
    case ChangeKind::disappeared:
      return GIDPOLICY_CHANGE_DISAPPEARED;
    case ChangeKind::reappeared:
      return GIDPOLICY_CHANGE_REAPPEARED;
    case ChangeKind::twin_changed:
      return GIDPOLICY_CHANGE_TWIN_CHANGED;
    case ChangeKind::untracked:
      return GIDPOLICY_CHANGE_UNTRACKED;
  }
  return GIDPOLICY_CHANGE_NONE;
}

}  // namespace gidpolicy::capi
