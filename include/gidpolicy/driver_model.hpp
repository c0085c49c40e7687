// DriverModel and judge_rtr(): what a driver does with an INIT->RTR modify_qp, as data.
//
// One model serves three places so they can never disagree: predict_rtr() in the CLI's
// `check`, the in-process FakeVerbs' modify_qp, and the drop-in fake libibverbs.so.1.
//
// Hardware gotchas encoded here (sources in docs/facts.md#linux-rtr and #apple-thunderbolt):
//  Linux (kernel rdma_fill_sgid_attr and friends):
//   * sgid_index >= gid_tbl_len, RoCE without a GRH, sgid/dgid family mismatch: EINVAL (22);
//   * an in-range empty slot: ENODATA (61) since kernel 5.10, EINVAL before;
//   * the GID's netdev gone or in another namespace: ENODEV (19);
//   * a link-local (fe80::/10) source or a RoCE v1/v2 mismatch passes RTR and then times out
//     (ETIMEDOUT, 110, "retry exceeded") once traffic flows.
//  Apple Thunderbolt (macOS >= 26.2, as reported):
//   * UC only (RC create fails with 102 EOPNOTSUPP), about 10 QPs per device (11th: 16 EBUSY);
//   * an absent or non-IPv4-mapped source GID: errno 22; routing from index 0: errno 60
//     (Darwin's ETIMEDOUT). Errno numbers are Darwin's (60 ETIMEDOUT, 96 ENODATA, ...).
// Every behaviour is a switch on the model, so a report that contradicts one is a one-line
// change, not a fork.
//
// Example:
//   auto v = gidpolicy::judge_rtr(table, {.sgid_index = 1, .dgid = peer_gid},
//                                 gidpolicy::DriverModel::apple_thunderbolt());
//   if (v.outcome == RtrOutcome::error) std::cerr << "errno " << v.err << ": " << v.reason;
#pragma once

#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/qp.hpp>
#include <gidpolicy/rtr_request.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gidpolicy {

/// Whose errno numbering applies. Linux and Darwin differ above 34 (ETIMEDOUT 110 vs 60...).
enum class Platform : std::uint8_t { linux_kernel, darwin };
std::string_view to_string(Platform p) noexcept;  ///< "linux", "darwin"
std::optional<Platform> platform_from_string(std::string_view s) noexcept;

/// The errno values that matter for RTR, per platform.
struct Errnos {
  int einval, enodata, enodev, enetunreach, etimedout, ebusy, eopnotsupp, econnrefused;
  static constexpr Errnos linux_kernel() noexcept { return {22, 61, 19, 101, 110, 16, 95, 111}; }
  static constexpr Errnos darwin() noexcept { return {22, 96, 19, 51, 60, 16, 102, 61}; }
  static constexpr Errnos of(Platform p) noexcept {
    return p == Platform::darwin ? darwin() : linux_kernel();
  }
};
/// "EINVAL", "ENODATA", ... for a platform's errno number; "errno N" when not one of the above.
std::string errno_name(Platform p, int err);

/// Whose numbering this build's own <cerrno> uses: the errno a live libibverbs / librdma on this
/// host returns. The one place the library asks which platform it was compiled for (the
/// in-process fakes return the numbers of the platform they model, whatever the host).
///
/// Gotcha: a number alone is ambiguous (61 is ENODATA on Linux, ECONNREFUSED on Darwin), so an
/// errno read from a table file or a log must carry its platform; only a live call's errno may
/// take this one.
///
/// Example:
///   const gidpolicy::Errnos e = gidpolicy::Errnos::of(gidpolicy::host_platform());
///   if (err == e.enodata) { /* empty slot, on this host */ }
constexpr Platform host_platform() noexcept {
#if defined(__APPLE__)
  return Platform::darwin;
#else
  return Platform::linux_kernel;
#endif
}

/// A driver's behaviour at QP creation and INIT->RTR. Build one with linux_kernel() or
/// apple_thunderbolt() and flip switches to model another kernel or a new report.
struct DriverModel {
  std::string name;  ///< "linux", "apple_thunderbolt"
  Platform platform = Platform::linux_kernel;
  // Linux switches.
  bool enodata_for_empty_slot = true;           ///< kernel >= 5.10; false: EINVAL (older kernels)
  bool grh_required_on_roce = true;             ///< RoCE without is_global: EINVAL
  bool family_mismatch_is_einval = true;        ///< IPv4-mapped sgid with native IPv6 dgid, or reverse
  bool link_local_source_times_out = true;      ///< passes RTR, traffic times out (ETIMEDOUT)
  bool roce_version_mismatch_times_out = true;  ///< v1 <-> v2 pair: traffic times out
  // Apple Thunderbolt switches.
  bool uc_only = false;                     ///< RC create fails with EOPNOTSUPP
  unsigned max_qps_per_device = 0;          ///< 0 = unlimited; Apple: about 10 (11th fails EBUSY)
  bool index0_times_out = false;            ///< routing from index 0: ETIMEDOUT at RTR (errno 60)
  bool source_must_be_ipv4_mapped = false;  ///< non-mapped source GID: EINVAL
  bool absent_source_is_einval = false;     ///< empty/absent source slot: EINVAL (not ENODATA)
  bool grh_required = false;                ///< any port: no GRH is EINVAL (Thunderbolt)
  /// A UC message that finds no receive posted waits for one instead of being dropped.
  /// InfiniBand (and Linux RoCE) drop it; JACCL's mesh and ring post no receive credits and
  /// run on real Thunderbolt clusters, so Apple's driver evidently holds it
  /// (docs/facts.md#model-assumptions).
  bool uc_waits_for_receive = false;

  /// Linux kernel >= 5.10 with rdma-core >= 32, as docs/facts.md#linux-rtr describes.
  static DriverModel linux_kernel();
  /// Apple's Thunderbolt RDMA driver as reported (docs/facts.md#apple-thunderbolt).
  static DriverModel apple_thunderbolt();
  /// "linux" or "apple_thunderbolt" (also "apple", "darwin", "thunderbolt").
  static std::optional<DriverModel> by_name(std::string_view name);
  /// The model that fits a port: apple_thunderbolt for Thunderbolt, linux otherwise.
  static DriverModel for_link_layer(LinkLayer l);
  /// The stock model of a platform's driver: apple_thunderbolt for darwin, linux otherwise.
  static DriverModel for_platform(Platform p);
  /// The one answer to "which driver judges this table": the stock model of `platform` when
  /// one is named (a --platform flag, a C caller's platform), else the model its port's link
  /// layer implies (for_link_layer). A caller holding a model of its own uses that instead.
  static DriverModel for_table(const GidTable& table, std::optional<Platform> platform = std::nullopt);
};

/// How an RTR would end.
enum class RtrOutcome : std::uint8_t {
  ok,         ///< modify_qp succeeds and traffic flows
  error,      ///< modify_qp fails with `err`
  times_out,  ///< modify_qp succeeds, traffic never arrives (ETIMEDOUT / retry exceeded)
  unknown,    ///< the table does not say (a slot ibv_devinfo did not print)
};
std::string_view to_string(RtrOutcome o) noexcept;  ///< "ok", "error", "times_out", "unknown"

/// The rules judge_rtr() applies, in the order it applies them (but for dgid_zero, checked right
/// after empty_slot, as Linux resolves the source slot before the destination: the numbering
/// stays); the first that fires decides.
/// diagnose() reads them back: the rule that fired is the confirmed cause, the rules the request
/// passed are ruled out, so a diagnosis and a prediction cannot disagree.
enum class RtrRule : std::uint8_t {
  none,                   ///< nothing fired: ok
  qp_type,                ///< a QP type the driver does not support (Apple: RC)
  no_grh,                 ///< RoCE/Thunderbolt without a GRH
  dgid_zero,              ///< the destination GID is zero
  index_out_of_range,     ///< sgid_index >= gid_tbl_len
  not_shown,              ///< the source did not print the slot: the outcome is unknown
  empty_slot,             ///< an empty (or zero) slot
  unreadable,             ///< a slot whose read failed
  index_0,                ///< routing from index 0 (Apple: times out)
  source_not_mapped,      ///< a source that is not IPv4-mapped (Apple)
  netdev_gone,            ///< the source GID's netdev is gone or in another namespace
  family_mismatch,        ///< IPv4-mapped source with a native IPv6 destination, or the reverse
  link_local_source,      ///< an fe80::/10 source towards a routed destination: times out
  roce_version_mismatch,  ///< RoCE v1 on one side, v2 on the other: times out
  /// QP creation (judge_create_qp): the device already has DriverModel::max_qps_per_device QPs.
  /// Last, so the bits of the RTR rules above keep their values.
  qp_limit,
};
std::string_view to_string(RtrRule r) noexcept;  ///< "dgid_zero", "empty_slot", ...
/// The bit of `r` in RtrVerdict::passed.
constexpr std::uint32_t rule_bit(RtrRule r) noexcept { return 1u << static_cast<unsigned>(r); }

struct RtrVerdict {
  RtrOutcome outcome = RtrOutcome::ok;
  int err = 0;                   ///< the platform's errno for error and times_out; 0 otherwise
  std::string reason;            ///< one line a person can act on
  RtrRule rule = RtrRule::none;  ///< the rule that decided (none: every rule passed)
  std::uint32_t passed = 0;      ///< rule_bit() of every rule the request was checked against and passed
  /// "ok", "EINVAL (22): ...", "times out (ETIMEDOUT 110): ...", "unknown: ..."
  [[nodiscard]] std::string to_string(Platform p) const;
};

/// Judge an INIT->RTR on a port whose table is `table`, as `model`'s driver would.
/// Note the uint8_t: the index is truncated the way `grh.sgid_index = (uint8_t)index` would
/// truncate it, and the verdict's reason says when that happened.
RtrVerdict judge_rtr(const GidTable& table, const RtrRequest& request, const DriverModel& model);

/// Judge QP creation: UC-only drivers refuse RC (rule qp_type), QP caps refuse the (cap+1)th QP
/// (rule qp_limit). `existing_qps` counts QPs already created on the device.
RtrVerdict judge_create_qp(QpKind type, unsigned existing_qps, const DriverModel& model);

}  // namespace gidpolicy
