// Internals shared by the C API's two libraries (gidpolicy::c and gidpolicy::c_verbs) and their
// units (capi_convert.cpp: enum and struct conversions; capi_errors.cpp: statuses and messages;
// capi_tables.cpp, capi_select.cpp, capi_rtr.cpp, capi_watch.cpp: the entry points by job): the
// definitions behind the opaque handles, the conversions, the errc -> gidpolicy_status mapping,
// and the guard that keeps C++ exceptions from crossing the C boundary.
#pragma once

#include <gidpolicy/gidpolicy.h>
#include <gidpolicy/change.hpp>
#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/error.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/profiles.hpp>
#include <gidpolicy/verbs/function_table_api.hpp>

#include <cstddef>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>

struct gidpolicy_profile {
  gidpolicy::Profile profile;
};

struct gidpolicy_table {
  gidpolicy::GidTable table;
};

// A selection keeps its own copy of the table: RTR building and errno explanations need the
// port (MTU, link layer) and the entries, and the caller may free the table first.
struct gidpolicy_plan {
  gidpolicy::GidTable table;
  gidpolicy::Plan plan;
};

namespace gidpolicy::capi {

/// snprintf semantics: copy at most len-1 bytes and a NUL; return the whole text's length.
inline std::size_t write_text(std::string_view text, char* buf, std::size_t len) noexcept {
  if (buf && len > 0) {
    const std::size_t n = text.size() < len - 1 ? text.size() : len - 1;
    if (n > 0) text.copy(buf, n);
    buf[n] = '\0';
  }
  return text.size();
}

/// The C status for a gidpolicy error.
gidpolicy_status status_of(const Error& e) noexcept;

/// The message for the caller's buffer: what() and, for a failed selection, the trace.
std::string message_of(const Error& e);

/// Report `e` through the C convention.
inline gidpolicy_status report(const Error& e, char* err, std::size_t errlen) {
  write_text(message_of(e), err, errlen);
  return status_of(e);
}

inline gidpolicy_status report(gidpolicy_status s, std::string_view message, char* err, std::size_t errlen) {
  write_text(message, err, errlen);
  return s;
}

/// GIDPOLICY_ERR_INVALID_ARGUMENT "<what> is NULL".
inline gidpolicy_status null_argument(const char* what, char* err, std::size_t errlen) {
  return report(GIDPOLICY_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL", err, errlen);
}

// ---- conversions (capi_convert.cpp) ---------------------------------------------------------

/// gidpolicy_gid_type -> GidType; nullopt for UNKNOWN or a value that is no gidpolicy_gid_type.
std::optional<GidType> gid_type_from_c(int t) noexcept;
/// GidType -> gidpolicy_gid_type.
gidpolicy_gid_type gid_type_to_c(GidType t) noexcept;
/// enum ibv_qp_type -> QpKind (through verbs::qp_kind_from_ibv); nullopt for a type gidpolicy
/// does not build RTR attributes for.
std::optional<QpKind> qp_kind_from_c(int t) noexcept;
/// enum ibv_mtu (1..5) -> Mtu; 0 or anything else -> nullopt (`valid` says which).
std::optional<Mtu> mtu_from_c(int m, bool& valid) noexcept;
/// gidpolicy_platform -> Platform; AUTO is the selection's driver's platform (Thunderbolt is
/// Apple's), else the build's.
Platform platform_from_c(gidpolicy_platform p, const gidpolicy_plan* s) noexcept;
/// ChangeKind -> gidpolicy_change_kind.
gidpolicy_change_kind change_kind_to_c(ChangeKind k) noexcept;
/// The caller's function pointers (query_port, query_gid, _ibv_query_gid_ex, ...) as the
/// function-table backend takes them.
verbs::VerbsFunctions functions_of(const gidpolicy_verbs_fns& fns) noexcept;
/// A backend over the caller's function pointers. The caller opened its device already and hands
/// over only the context and what it dlsym()ed: the context is adopt()ed for one call and never
/// closed.
verbs::FunctionTableApi context_api(const gidpolicy_verbs_fns& fns, bool resolve_netdev_names);

/// Run an entry point body: "" in the message buffer first, and any exception (std::bad_alloc
/// is the one the core can raise) turned into a status instead of unwinding into C.
template <class F>
gidpolicy_status guarded(char* err, std::size_t errlen, F&& body) noexcept {
  write_text("", err, errlen);
  try {
    return body();
  } catch (const std::bad_alloc&) {
    write_text("out of memory", err, errlen);
    return GIDPOLICY_ERR_NO_MEMORY;
  } catch (const std::exception& e) {
    try {
      write_text(std::string("internal error: ") + e.what(), err, errlen);
    } catch (...) {
      write_text("internal error", err, errlen);
    }
    return GIDPOLICY_ERR_INTERNAL;
  } catch (...) {
    write_text("internal error: unknown exception", err, errlen);
    return GIDPOLICY_ERR_INTERNAL;
  }
}

/// For the snprintf-like getters: the text, or "" (length 0) if building it threw.
template <class F>
std::size_t guarded_text(char* buf, std::size_t len, F&& make) noexcept {
  try {
    return write_text(make(), buf, len);
  } catch (...) {
    return write_text("", buf, len);
  }
}

}  // namespace gidpolicy::capi
