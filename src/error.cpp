#include <gidpolicy/error.hpp>

namespace gidpolicy {
namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "gidpolicy"; }

  std::string message(int v) const override {
    switch (static_cast<errc>(v)) {
      case errc::invalid_gid_text:
        return "invalid GID text";
      case errc::parse_error:
        return "malformed input";
      case errc::invalid_field:
        return "invalid field";
      case errc::unsupported_version:
        return "unsupported schema version";
      case errc::duplicate_index:
        return "duplicate GID index";
      case errc::index_too_large:
        return "index too large";
      case errc::unknown_format:
        return "unrecognised table format";
      case errc::io_error:
        return "cannot read input";
      case errc::invalid_policy_spec:
        return "invalid policy spec";
      case errc::no_ipv4_mapped_gid:
        return "no IPv4-mapped GID";
      case errc::no_candidate:
        return "no acceptable GID";
      case errc::index_out_of_range:
        return "GID index out of range";
      case errc::index_exceeds_uint8:
        return "GID index above 255 cannot be an sgid_index";
      case errc::entry_empty:
        return "GID entry is empty";
      case errc::entry_unreadable:
        return "GID entry is unreadable";
      case errc::entry_zero:
        return "GID entry is zero";
      case errc::entry_not_shown:
        return "GID entry not shown by the source";
      case errc::wrong_gid_type:
        return "wrong GID type";
      case errc::wrong_family:
        return "wrong address family";
      case errc::link_local_rejected:
        return "link-local GID rejected";
      case errc::missing_required_attribute:
        return "missing required QP attribute";
      case errc::peer_gid_zero:
        return "peer GID is zero";
      case errc::family_mismatch:
        return "source and destination GID families differ";
      case errc::roce_version_mismatch:
        return "RoCE versions differ";
      case errc::gid_changed:
        return "GID at sgid_index changed since it was advertised";
      case errc::disagreement:
        return "sgid_index does not hold the advertised GID";
      case errc::no_devices:
        return "no RDMA devices";
      case errc::device_not_found:
        return "RDMA device not found";
      case errc::port_not_active:
        return "port is not active";
      case errc::library_unavailable:
        return "verbs library unavailable";
      case errc::symbol_missing:
        return "verbs symbol missing";
      case errc::not_supported:
        return "operation not supported";
      case errc::invalid_argument:
        return "invalid argument";
      case errc::no_route:
        return "no usable route to the peer";
      case errc::mtu_too_large:
        return "path MTU too large";
    }
    return "unknown gidpolicy error " + std::to_string(v);
  }

  std::error_condition default_error_condition(int v) const noexcept override {
    switch (static_cast<errc>(v)) {
      case errc::invalid_gid_text:
      case errc::parse_error:
      case errc::invalid_field:
      case errc::invalid_policy_spec:
      case errc::duplicate_index:
      case errc::unknown_format:
      case errc::invalid_argument:
      case errc::wrong_gid_type:
      case errc::wrong_family:
      case errc::link_local_rejected:
      case errc::missing_required_attribute:
      case errc::peer_gid_zero:
      case errc::family_mismatch:
      case errc::roce_version_mismatch:
      case errc::mtu_too_large:
      case errc::disagreement:
        return std::errc::invalid_argument;
      case errc::index_too_large:
      case errc::index_out_of_range:
      case errc::index_exceeds_uint8:
        return std::errc::result_out_of_range;
      case errc::unsupported_version:
      case errc::not_supported:
        return std::errc::not_supported;
      case errc::io_error:
        return std::errc::io_error;
      case errc::entry_empty:
      case errc::entry_zero:
      case errc::entry_not_shown:
      case errc::no_ipv4_mapped_gid:
      case errc::no_candidate:
        return std::errc::no_message_available;  // ENODATA: what the kernel says for an empty slot
      case errc::entry_unreadable:
        return std::errc::io_error;
      case errc::gid_changed:
        return std::errc::state_not_recoverable;
      case errc::no_devices:
      case errc::device_not_found:
      case errc::library_unavailable:
        return std::errc::no_such_device;
      case errc::symbol_missing:
        return std::errc::function_not_supported;
      case errc::port_not_active:
        return std::errc::network_down;
      case errc::no_route:
        return std::errc::network_unreachable;  // what rdma_resolve_addr says without a route
    }
    return {v, *this};
  }
};

}  // namespace

std::string_view to_string(errc e) noexcept {
  // A switch over every enumerator without a default: a new errc without a name here is a
  // -Wswitch error, so the names cannot fall behind the enum.
  switch (e) {
    case errc::invalid_gid_text:
      return "invalid_gid_text";
    case errc::parse_error:
      return "parse_error";
    case errc::invalid_field:
      return "invalid_field";
    case errc::unsupported_version:
      return "unsupported_version";
    case errc::duplicate_index:
      return "duplicate_index";
    case errc::index_too_large:
      return "index_too_large";
    case errc::unknown_format:
      return "unknown_format";
    case errc::io_error:
      return "io_error";
    case errc::invalid_policy_spec:
      return "invalid_policy_spec";
    case errc::no_ipv4_mapped_gid:
      return "no_ipv4_mapped_gid";
    case errc::no_candidate:
      return "no_candidate";
    case errc::index_out_of_range:
      return "index_out_of_range";
    case errc::index_exceeds_uint8:
      return "index_exceeds_uint8";
    case errc::entry_empty:
      return "entry_empty";
    case errc::entry_unreadable:
      return "entry_unreadable";
    case errc::entry_zero:
      return "entry_zero";
    case errc::entry_not_shown:
      return "entry_not_shown";
    case errc::wrong_gid_type:
      return "wrong_gid_type";
    case errc::wrong_family:
      return "wrong_family";
    case errc::link_local_rejected:
      return "link_local_rejected";
    case errc::missing_required_attribute:
      return "missing_required_attribute";
    case errc::peer_gid_zero:
      return "peer_gid_zero";
    case errc::family_mismatch:
      return "family_mismatch";
    case errc::roce_version_mismatch:
      return "roce_version_mismatch";
    case errc::gid_changed:
      return "gid_changed";
    case errc::disagreement:
      return "disagreement";
    case errc::no_devices:
      return "no_devices";
    case errc::device_not_found:
      return "device_not_found";
    case errc::port_not_active:
      return "port_not_active";
    case errc::library_unavailable:
      return "library_unavailable";
    case errc::symbol_missing:
      return "symbol_missing";
    case errc::not_supported:
      return "not_supported";
    case errc::invalid_argument:
      return "invalid_argument";
    case errc::no_route:
      return "no_route";
    case errc::mtu_too_large:
      return "mtu_too_large";
  }
  return {};
}

std::optional<errc> errc_from_string(std::string_view name) noexcept {
  if (name.empty()) return std::nullopt;
  // The values are dense from 1: walk them until to_string() has no name.
  for (int v = 1;; ++v) {
    const std::string_view n = to_string(static_cast<errc>(v));
    if (n.empty()) return std::nullopt;
    if (n == name) return static_cast<errc>(v);
  }
}

const std::error_category& error_category() noexcept {
  static const Category category;
  return category;
}

std::string Error::what() const {
  std::string out = code.message();
  if (code.category() == std::generic_category()) out += " (errno " + std::to_string(code.value()) + ")";
  if (!detail.empty()) {
    out += ": ";
    out += detail;
  }
  return out;
}

}  // namespace gidpolicy
