// Trace: why a policy accepted or rejected each GID table entry it looked at.
//
// Diagnostics are data: a policy records a Trace (when asked, and always on failure) and the
// caller decides how to print it. "No candidate" without the reasons is the error users hit
// today with NCCL's silent fallback to index 0; the trace is what makes gidpolicy's errors
// actionable ("index 1: link-local fe80::... rejected on Ethernet").
//
// Example:
//   for (const auto& attempt : trace.attempts)   // one per alternative a first() tried
//     for (const auto& step : attempt.steps)
//       std::cout << step.index << " " << to_string(step.verdict) << "\n";
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

/// What a policy decided about one entry (not the driver's RtrVerdict, driver_model.hpp).
/// Accepted verdicts first, then one per rejection reason.
enum class EntryVerdict : std::uint8_t {
  chosen,             ///< the entry the policy returned
  candidate,          ///< acceptable, but something ranked higher (or came first)
  lower_rank,         ///< acceptable, ranked below the chosen entry
  empty,              ///< empty slot (zero GID / ENODATA)
  not_shown,          ///< the source did not print this slot
  unreadable,         ///< the read of this slot failed
  zero,               ///< a valid-looking entry holding the all-zero GID
  link_local,         ///< fe80::/10 on a routed (Ethernet/Thunderbolt) port
  wrong_type,         ///< RoCE version / IB type not allowed
  wrong_family,       ///< IPv4-mapped vs IPv6 not allowed
  not_ipv4_mapped,    ///< JACCL's byte rule failed
  outside_subnet,     ///< not inside any allowed CIDR
  excluded_subnet,    ///< inside an excluded CIDR
  other_netdev,       ///< bound to another netdev than the one asked for
  not_local_address,  ///< a local address was required and this is not it
  index_above_255,    ///< cannot be an sgid_index (uint8_t)
  out_of_range,       ///< at or beyond gid_tbl_len
  not_requested,      ///< an explicit-index policy looked only at its index
};
/// "chosen", "candidate", "empty", "link_local", ... (stable: used in --json output).
std::string_view to_string(EntryVerdict v) noexcept;
/// Whether the verdict means the entry was acceptable (chosen, candidate, lower_rank).
constexpr bool is_accepted(EntryVerdict v) noexcept {
  return v == EntryVerdict::chosen || v == EntryVerdict::candidate || v == EntryVerdict::lower_rank;
}

/// One entry looked at by one policy.
struct TraceStep {
  std::uint32_t index = 0;
  EntryVerdict verdict = EntryVerdict::empty;
  std::string note;  ///< what the entry held and why, for people: "fe80::1 (RoCE v2) on eth0"
  friend bool operator==(const TraceStep&, const TraceStep&) = default;
};

/// Everything one selection looked at. A FirstOf keeps one Attempt per alternative tried.
struct Trace {
  struct Attempt {
    std::string policy;  ///< the spec of the policy that made these steps
    std::vector<TraceStep> steps;
    std::string error;  ///< empty when this attempt succeeded
    friend bool operator==(const Attempt&, const Attempt&) = default;
  };
  std::vector<Attempt> attempts;

  /// A multi-line human rendering: one line per attempt, one indented line per step.
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const Trace&, const Trace&) = default;
};

}  // namespace gidpolicy
