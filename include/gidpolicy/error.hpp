// gidpolicy error model: one error enum with its own category, an Error value that keeps the
// detail a person needs (file, line, field, index, what the entry held), and result<T>.
//
// Why not plain std::error_code: "errno 22 at RTR" is exactly the unhelpful message users trade
// in issues. Every failure here carries a code you can compare (`err == errc::entry_empty`, or
// `err == std::errc::invalid_argument` through the generic condition mapping) *and* a message
// that names what was wrong, plus, for a failed selection, the trace of every rejected candidate.
//
// Example:
//   gidpolicy::result<gidpolicy::Gid> g = gidpolicy::Gid::parse("fe80::1");
//   if (!g) std::cerr << g.error().what() << "\n";   // "invalid GID text: at position 3: ..."
#pragma once

#include <boost/outcome/basic_result.hpp>
#include <boost/outcome/policy/terminate.hpp>
#include <boost/outcome/success_failure.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

namespace gidpolicy {

/// Every failure gidpolicy itself can report. 0 is not an error.
/// Driver failures are not listed here: they stay std::error_code(errno, generic_category()).
enum class errc : int {
  // Input parsing (GID text, JSON, pasted tool output, sysfs, policy specs).
  invalid_gid_text = 1,  ///< GID text is not an IPv6 address nor the 8x4 hex form
  parse_error,           ///< malformed input (syntax): message names file, line, column
  invalid_field,         ///< well-formed input with a bad or missing field: message names it
  unsupported_version,   ///< a JSON document of a schema version this build does not read
  duplicate_index,       ///< two entries of one port claim the same GID index
  index_too_large,       ///< an index at or above 2^31 (or a port number out of range)
  unknown_format,        ///< input that matches none of the table formats gidpolicy reads
  io_error,              ///< a file or directory could not be read
  invalid_policy_spec,   ///< a policy spec string that does not parse: names position, token
  // Selection.
  no_ipv4_mapped_gid,   ///< JACCL's condition: the port has no ::ffff:a.b.c.d GID
  no_candidate,         ///< a policy found no acceptable entry (trace lists every rejection)
  index_out_of_range,   ///< an explicit index >= gid_tbl_len
  index_exceeds_uint8,  ///< an index above 255 cannot be an sgid_index (uint8_t)
  entry_empty,          ///< the slot is empty (zero GID / ENODATA)
  entry_unreadable,     ///< the slot could not be read (the read's errno is in the message)
  entry_zero,           ///< the slot reads as the all-zero GID
  entry_not_shown,      ///< the source did not print this slot (ibv_devinfo hides some)
  wrong_gid_type,       ///< the entry's RoCE/IB type is not the one required
  wrong_family,         ///< IPv4-mapped where IPv6 was required, or the reverse
  link_local_rejected,  ///< fe80::/10 on Ethernet/Thunderbolt: not routed, RTR times out
  // RTR building and applying.
  missing_required_attribute,  ///< an INIT->RTR attribute the QP type requires was not set
  peer_gid_zero,               ///< the peer advertised the all-zero GID
  family_mismatch,             ///< sgid and dgid families differ (Linux returns EINVAL)
  roce_version_mismatch,       ///< both sides advertise a RoCE version and they differ
  gid_changed,                 ///< the entry at sgid_index no longer holds the advertised GID
  disagreement,                ///< sgid_index does not hold the advertised GID (JACCL's bug)
  // Verbs seam.
  no_devices,           ///< the verbs library found no RDMA device
  device_not_found,     ///< no device of that name
  port_not_active,      ///< the port is not ACTIVE or ARMED: its table is not meaningful
  library_unavailable,  ///< libibverbs / librdma could not be loaded
  symbol_missing,       ///< the loaded library lacks a symbol gidpolicy needs
  not_supported,        ///< the backend or driver does not implement this call
  invalid_argument,     ///< an argument gidpolicy was given is outside what it accepts
  // Routes (network.hpp).
  no_route,  ///< no usable kernel route to a peer: none, or blackhole/unreachable/prohibit/throw
  // RTR building, added after the list above was numbered (kept last so no value moves).
  mtu_too_large,  ///< an explicit path MTU above the local port's active MTU or the peer's
};

}  // namespace gidpolicy

template <>
struct std::is_error_code_enum<gidpolicy::errc> : std::true_type {};

namespace gidpolicy {

/// The enumerator's name, "no_ipv4_mapped_gid" for errc::no_ipv4_mapped_gid: what the CLI's
/// JSON "code" key and messages name a failure by. "" for a value that is no enumerator.
std::string_view to_string(errc e) noexcept;
/// The errc whose to_string() is `name`; nullopt when none is.
std::optional<errc> errc_from_string(std::string_view name) noexcept;

/// The category of gidpolicy::errc; name "gidpolicy".
const std::error_category& error_category() noexcept;

/// ADL hook so `std::error_code ec = errc::entry_empty;` works.
inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), error_category()}; }

struct Trace;  // policy.hpp: why each candidate was accepted or rejected

/// A failure: a comparable code plus the detail a person needs to act on it.
/// `code` is either a gidpolicy::errc or a driver errno (generic category, captured at the seam).
struct Error {
  std::error_code code;
  /// What exactly was wrong, without the code's generic text: "tables.json:12: field
  /// 'ports[0].entries[3].gid': invalid GID text at position 4: ...". May be empty.
  std::string detail;
  /// For a failed selection: every candidate looked at and why it was rejected. May be null.
  std::shared_ptr<const Trace> trace;

  Error() = default;
  Error(std::error_code c, std::string d = {}, std::shared_ptr<const Trace> t = {})
      : code(c), detail(std::move(d)), trace(std::move(t)) {}
  Error(errc e, std::string d = {}, std::shared_ptr<const Trace> t = {})
      : code(make_error_code(e)), detail(std::move(d)), trace(std::move(t)) {}

  /// One line: "<code message>: <detail>" (or just the code message).
  [[nodiscard]] std::string what() const;

  friend bool operator==(const Error& a, errc b) noexcept { return a.code == make_error_code(b); }
  friend bool operator==(const Error& a, std::errc b) noexcept { return a.code == b; }
};

/// Outcome's hook: lets Outcome treat an Error as an error code where it needs one.
inline std::error_code make_error_code(const Error& e) noexcept { return e.code; }

/// A value or an Error. `.value()` on a failure terminates (no exceptions cross the API):
/// check `if (!r)` or use GIDPOLICY_TRY. When the code base moves to C++23 this alias is the
/// one place to switch to std::expected.
template <class T>
using result = boost::outcome_v2::basic_result<T, Error, boost::outcome_v2::policy::terminate>;

/// `return fail(errc::entry_empty, "index 3 is empty");` from a function returning result<T>.
inline auto fail(Error e) { return boost::outcome_v2::failure(std::move(e)); }
inline auto fail(errc e, std::string detail = {}) { return fail(Error(e, std::move(detail))); }
/// A driver failure: errno captured at the seam, the call that returned it in the detail.
inline auto fail_errno(int err, std::string detail = {}) {
  return fail(Error(std::error_code(err, std::generic_category()), std::move(detail)));
}
inline auto success() { return boost::outcome_v2::success(); }

}  // namespace gidpolicy

#define GIDPOLICY_DETAIL_CAT2(a, b) a##b
#define GIDPOLICY_DETAIL_CAT(a, b) GIDPOLICY_DETAIL_CAT2(a, b)

/// GIDPOLICY_TRY(var, expr): evaluate expr (a result<T>); on failure return its error from the
/// enclosing function; on success declare `auto var` holding the value.
/// (Boost 1.74's BOOST_OUTCOME_TRY has a different signature than later Boosts; this one is ours.)
#define GIDPOLICY_TRY(var, ...)                                                    \
  auto GIDPOLICY_DETAIL_CAT(gidpolicy_try_, __LINE__) = (__VA_ARGS__);             \
  if (!GIDPOLICY_DETAIL_CAT(gidpolicy_try_, __LINE__))                             \
    return std::move(GIDPOLICY_DETAIL_CAT(gidpolicy_try_, __LINE__)).as_failure(); \
  auto var = std::move(GIDPOLICY_DETAIL_CAT(gidpolicy_try_, __LINE__)).value()

/// GIDPOLICY_TRYV(expr): as GIDPOLICY_TRY for a result<void> (or when the value is unused).
#define GIDPOLICY_TRYV(...)                                               \
  do {                                                                    \
    auto gidpolicy_tryv_ = (__VA_ARGS__);                                 \
    if (!gidpolicy_tryv_) return std::move(gidpolicy_tryv_).as_failure(); \
  } while (false)
