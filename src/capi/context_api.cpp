#include "context_api.hpp"

#include <infiniband/verbs.h>
#include <net/if.h>

#include <cerrno>
#include <climits>
#include <cstring>

namespace gidpolicy::capi {
namespace {

/// The errno of a call returning 0 or an error: a positive errno, -1 with errno set, or (some
/// providers) a negative errno. 0 when the call failed without saying why.
int errno_of(long long rc, int saved_errno) noexcept {
  if (rc > 0) return static_cast<int>(rc);
  if (rc < -1) return static_cast<int>(-rc);
  return saved_errno;
}

}  // namespace

ContextApi::ContextApi(const gidpolicy_verbs_fns& fns, ibv_context* context, bool resolve_netdev_names)
    : fns_(fns), context_(context), resolve_netdev_names_(resolve_netdev_names) {
  if (fns_.get_device_name && context_->device) {
    if (const char* n = fns_.get_device_name(context_->device)) name_ = n;
  }
  if (name_.empty() && context_->device) {
    // ibv_device::name is a fixed array: bound the read in case a provider left it unterminated.
    name_.assign(context_->device->name, strnlen(context_->device->name, sizeof context_->device->name));
  }
  if (name_.empty()) name_ = "<context>";
}

result<void> ContextApi::check(verbs::DeviceHandle device, std::string_view call) const {
  if (device != kDevice)
    return fail(errc::invalid_argument, std::string(call) + ": device handle " + std::to_string(device.id) +
                                            " is not the adopted context");
  return success();
}

std::string ContextApi::where(std::string_view call, std::uint32_t port, std::uint32_t index) const {
  return std::string(call) + "(" + name_ + ", " + std::to_string(port) + ", " + std::to_string(index) + ")";
}

result<std::vector<std::string>> ContextApi::device_names() { return std::vector<std::string>{name_}; }

result<verbs::DeviceHandle> ContextApi::open_device(std::string_view name) {
  if (name != name_)
    return fail(errc::device_not_found, "the adopted context is " + name_ + ", not " + std::string(name));
  return kDevice;
}

// The caller owns the context: "closing" it here only ends this API's use of it.
result<void> ContextApi::close_device(verbs::DeviceHandle device) { return check(device, "close_device"); }

result<std::string> ContextApi::device_name(verbs::DeviceHandle device) const {
  GIDPOLICY_TRYV(check(device, "device_name"));
  return name_;
}

result<PortInfo> ContextApi::port_attributes(verbs::DeviceHandle device, std::uint32_t port) {
  GIDPOLICY_TRYV(check(device, "ibv_query_port"));
  if (!fns_.query_port) return fail(errc::not_supported, "gidpolicy_verbs_fns.query_port is NULL");
  if (port < 1 || port > 255)
    return fail(errc::invalid_argument, "ibv_query_port(" + name_ + ", " + std::to_string(port) +
                                            "): port numbers are 1..255 (uint8_t)");
  ibv_port_attr attr;
  // The exported symbol fills only rdma-core's compat prefix of the struct: zero it all first,
  // as the ibv_query_port inline does.
  std::memset(&attr, 0, sizeof attr);
  errno = 0;
  const int rc = fns_.query_port(context_, static_cast<std::uint8_t>(port), &attr);
  const int err = errno_of(rc, errno);
  if (rc != 0)
    return fail_errno(err ? err : EIO, "ibv_query_port(" + name_ + ", " + std::to_string(port) + ")");
  return verbs::port_info_from_ibv(name_, port, attr);
}

result<Gid> ContextApi::read_gid(verbs::DeviceHandle device, std::uint32_t port, std::uint32_t index) {
  GIDPOLICY_TRYV(check(device, "ibv_query_gid"));
  const std::string at = where("ibv_query_gid", port, index);
  if (!fns_.query_gid) return fail(errc::not_supported, at + ": gidpolicy_verbs_fns.query_gid is NULL");
  if (port < 1 || port > 255 || index > static_cast<std::uint32_t>(INT_MAX))
    return fail(errc::invalid_argument, at + ": port must be 1..255 and index fit an int");
  ibv_gid gid;
  std::memset(&gid, 0, sizeof gid);
  errno = 0;
  const int rc = fns_.query_gid(context_, static_cast<std::uint8_t>(port), static_cast<int>(index), &gid);
  const int err = errno_of(rc, errno);
  if (rc != 0) {
    // rdma-core 44 returns -1 without setting errno (an index out of range).
    if (err == 0)
      return fail(errc::entry_unreadable, at + " returned " + std::to_string(rc) + " without errno");
    return fail_errno(err, at);
  }
  return Gid::from_bytes(gid.raw);
}

result<GidEntry> ContextApi::read_gid_entry(verbs::DeviceHandle device, std::uint32_t port,
                                            std::uint32_t index) {
  GIDPOLICY_TRYV(check(device, "ibv_query_gid_ex"));
  const std::string at = where("ibv_query_gid_ex", port, index);
  if (!fns_.query_gid_ex && !fns_.query_gid_ex_sized)
    return fail(errc::not_supported, at + ": gidpolicy_verbs_fns has no query_gid_ex");
  if (entry_unsupported_) return fail_errno(EOPNOTSUPP, at + ": not supported by this driver (learned)");
  ibv_gid_entry entry;
  std::memset(&entry, 0, sizeof entry);
  errno = 0;
  const int rc = fns_.query_gid_ex_sized
                     ? fns_.query_gid_ex_sized(context_, port, index, &entry, 0, sizeof entry)
                     : fns_.query_gid_ex(context_, port, index, &entry, 0);
  const int err = errno_of(rc, errno);
  if (rc != 0) {
    if (err == EOPNOTSUPP || err == ENOSYS) entry_unsupported_ = true;
    // ENODATA is how this call says "empty slot"; snapshot() and read_entry() know.
    return fail_errno(err ? err : EIO, at);
  }
  std::string netdev;
  if (resolve_netdev_names_ && entry.ndev_ifindex != 0) {
    char buf[IF_NAMESIZE] = {};
    if (if_indextoname(entry.ndev_ifindex, buf)) netdev = buf;
  }
  return GidEntry::valid(index, Gid::from_bytes(entry.gid.raw), verbs::gid_type_from_ibv(entry.gid_type),
                         std::move(netdev), entry.ndev_ifindex);
}

result<std::vector<verbs::GidTableRow>> ContextApi::read_gid_table(verbs::DeviceHandle device,
                                                                   std::uint32_t) {
  GIDPOLICY_TRYV(check(device, "ibv_query_gid_table"));
  return fail(errc::not_supported, "gidpolicy_verbs_fns has no query_gid_table");
}

verbs::ReadSupport ContextApi::read_support(verbs::DeviceHandle device) const {
  if (device != kDevice) return {};
  return {false, (fns_.query_gid_ex || fns_.query_gid_ex_sized) && !entry_unsupported_,
          fns_.query_gid != nullptr};
}

// Queue pairs stay the caller's: the C API builds their attributes, it does not create them.
result<verbs::QpHandle> ContextApi::create_qp(verbs::DeviceHandle, QpKind) {
  return fail(errc::not_supported, "the C API does not create queue pairs");
}
result<void> ContextApi::modify_qp(verbs::QpHandle, const ibv_qp_attr&, int) {
  return fail(errc::not_supported, "the C API does not modify queue pairs");
}
result<verbs::QpInfo> ContextApi::query_qp(verbs::QpHandle) {
  return fail(errc::not_supported, "the C API does not query queue pairs");
}
result<void> ContextApi::destroy_qp(verbs::QpHandle) {
  return fail(errc::not_supported, "the C API does not destroy queue pairs");
}

}  // namespace gidpolicy::capi
