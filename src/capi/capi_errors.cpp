// The C API's errors: the errc -> gidpolicy_status mapping, the message a caller's buffer gets,
// status names and errno explanations.
#include <gidpolicy/gidpolicy.h>

#include "capi_internal.hpp"

#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/trace.hpp>

#include <string>

namespace gidpolicy::capi {

gidpolicy_status status_of(const Error& e) noexcept {
  if (e.code.category() != error_category()) return GIDPOLICY_ERR_DRIVER;  // a driver errno
  switch (static_cast<errc>(e.code.value())) {
    case errc::invalid_gid_text:
    case errc::parse_error:
    case errc::invalid_field:
    case errc::unsupported_version:
    case errc::duplicate_index:
    case errc::index_too_large:
    case errc::unknown_format:
    case errc::io_error:
      return GIDPOLICY_ERR_PARSE;
    case errc::invalid_policy_spec:
      return GIDPOLICY_ERR_INVALID_SPEC;
    case errc::no_ipv4_mapped_gid:
    case errc::no_candidate:
    case errc::index_out_of_range:
    case errc::index_exceeds_uint8:
    case errc::entry_empty:
    case errc::entry_unreadable:
    case errc::entry_zero:
    case errc::entry_not_shown:
    case errc::wrong_gid_type:
    case errc::wrong_family:
    case errc::link_local_rejected:
    // The C API adopts contexts and never opens a device by name: its only device_not_found is
    // a per-device(...) spec that covers neither the table's device nor '*', a selection that
    // found nothing (gidpolicy_select() documents NO_CANDIDATE).
    case errc::device_not_found:
      return GIDPOLICY_ERR_NO_CANDIDATE;
    case errc::missing_required_attribute:
    case errc::peer_gid_zero:
    case errc::family_mismatch:
    case errc::roce_version_mismatch:
    case errc::mtu_too_large:
      return GIDPOLICY_ERR_RTR;
    case errc::gid_changed:
      return GIDPOLICY_ERR_GID_CHANGED;
    case errc::disagreement:
      return GIDPOLICY_ERR_DISAGREEMENT;
    case errc::no_devices:
    case errc::library_unavailable:
      return GIDPOLICY_ERR_DRIVER;
    case errc::port_not_active:
      return GIDPOLICY_ERR_PORT_NOT_ACTIVE;
    case errc::symbol_missing:
    case errc::not_supported:
      return GIDPOLICY_ERR_NOT_SUPPORTED;
    case errc::invalid_argument:
    case errc::no_route:  // the C API asks no routes; a C++ caller's peer= could name one
      return GIDPOLICY_ERR_INVALID_ARGUMENT;
  }
  return GIDPOLICY_ERR_INTERNAL;
}

std::string message_of(const Error& e) {
  std::string m = e.what();
  if (e.trace && !e.trace->attempts.empty()) m += "\n" + e.trace->to_string();
  return m;
}

}  // namespace gidpolicy::capi

using gidpolicy::capi::guarded_text;

extern "C" {

const char* gidpolicy_status_name(int status) {
  switch (status) {
    case GIDPOLICY_OK:
      return "GIDPOLICY_OK";
    case GIDPOLICY_ERR_INVALID_ARGUMENT:
      return "GIDPOLICY_ERR_INVALID_ARGUMENT";
    case GIDPOLICY_ERR_INVALID_SPEC:
      return "GIDPOLICY_ERR_INVALID_SPEC";
    case GIDPOLICY_ERR_PARSE:
      return "GIDPOLICY_ERR_PARSE";
    case GIDPOLICY_ERR_NO_CANDIDATE:
      return "GIDPOLICY_ERR_NO_CANDIDATE";
    case GIDPOLICY_ERR_DRIVER:
      return "GIDPOLICY_ERR_DRIVER";
    case GIDPOLICY_ERR_PORT_NOT_ACTIVE:
      return "GIDPOLICY_ERR_PORT_NOT_ACTIVE";
    case GIDPOLICY_ERR_NOT_SUPPORTED:
      return "GIDPOLICY_ERR_NOT_SUPPORTED";
    case GIDPOLICY_ERR_RTR:
      return "GIDPOLICY_ERR_RTR";
    case GIDPOLICY_ERR_DISAGREEMENT:
      return "GIDPOLICY_ERR_DISAGREEMENT";
    case GIDPOLICY_ERR_GID_CHANGED:
      return "GIDPOLICY_ERR_GID_CHANGED";
    case GIDPOLICY_ERR_NO_MEMORY:
      return "GIDPOLICY_ERR_NO_MEMORY";
    case GIDPOLICY_ERR_INTERNAL:
      return "GIDPOLICY_ERR_INTERNAL";
  }
  return "unknown";
}

// ---- errno explanations -------------------------------------------------------------------

size_t gidpolicy_explain_errno(int errnum, gidpolicy_platform platform, const gidpolicy_plan* plan,
                               const gidpolicy_peer* peer, char* buf, size_t len) {
  return guarded_text(buf, len, [&] {
    gidpolicy::DiagnoseContext context;
    if (plan) {
      context.table = &plan->table;
      context.sgid_index = plan->plan.sgid_index;
      context.advertised = plan->plan.selection.entry.gid;
    }
    if (peer) {
      context.peer_gid = gidpolicy::Gid::from_bytes(peer->gid);
      context.peer_gid_type = gidpolicy::capi::gid_type_from_c(peer->gid_type);
    }
    return gidpolicy::diagnose(errnum, gidpolicy::capi::platform_from_c(platform, plan), context).to_string();
  });
}

}  // extern "C"
