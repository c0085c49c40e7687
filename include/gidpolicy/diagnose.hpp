// diagnose() and predict_rtr(): what an RTR errno means, and what an RTR would return, as data.
//
// "errno 22 at RTR" is what users trade in issues; the same number means different things per
// platform (61 is ENODATA on Linux and ECONNREFUSED on Darwin; ETIMEDOUT is 110 vs 60), and the
// cause is usually visible in the GID table: "sgid_index 1 is empty; the advertised GID is at
// index 2". diagnose() ranks the known causes for an errno using what the table holds at the
// index that was used; predict_rtr() evaluates an RTR without hardware through the one driver
// model shared with the fake verbs (judge_rtr() in driver_model.hpp).
//
// One model: diagnose() builds the attributes the context describes with RtrBuilder and judges
// them with predict_rtr(), exactly as `gidpolicy check` predicts. The rule judge_rtr() decided
// by is the confirmed cause, the rules the request passed are ruled out, and a cause is listed
// once; so a diagnosis never confirms and rules out the same cause, and never disagrees with
// the prediction.
//
// Sources: docs/facts.md#linux-rtr (Linux: 22, 61, 19, 101, 110) and #apple-thunderbolt (Darwin: 22, 60, 96,
// 16, 102).
//
// Example:
//   auto d = gidpolicy::diagnose(22, gidpolicy::Platform::darwin,
//                                {.table = &table, .sgid_index = 1, .advertised = gid});
//   for (const auto& c : d.causes) std::cout << c.summary << "\n";
#pragma once

#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/network.hpp>
#include <gidpolicy/rtr.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy {

/// What is known about the failed call. Every field is optional; the more is given, the more
/// causes can be confirmed or ruled out.
struct DiagnoseContext {
  const GidTable* table = nullptr;          ///< the local table (not kept)
  std::optional<std::uint32_t> sgid_index;  ///< the index the RTR used (as computed, pre-cast)
  std::optional<Gid> advertised;            ///< the GID this side advertised
  std::optional<Gid> peer_gid;              ///< the dgid
  std::optional<GidType> peer_gid_type;     ///< the peer's RoCE version, if known
  std::optional<QpKind> qp_type;            ///< the QP's type
  std::optional<unsigned> qps_on_device;    ///< QPs already created on the device
  /// The caller's network namespace (network.hpp), when known: ENODEV is confirmed as
  /// "netdev_other_namespace" when the slot's netdev is not in it. Only pass a view of the
  /// namespace the RTR ran in, with a table read there (not a pasted one).
  const NetworkView* network = nullptr;
};

/// How strongly the evidence supports a cause.
enum class Likelihood : std::uint8_t {
  confirmed,  ///< the table/context shows it
  likely,     ///< the usual cause of this errno, nothing contradicts it
  possible,   ///< known cause, no evidence either way
  ruled_out,  ///< the context shows it is not this
};
std::string_view to_string(Likelihood l) noexcept;  ///< "confirmed", "likely", ...

/// One known cause of an errno, with how strongly the evidence supports it (a candidate: the
/// established reason a fleet link failed is fleet::Cause).
struct CandidateCause {
  std::string id;  ///< stable identifier: "empty_slot", "index_0_thunderbolt", ...
  Likelihood likelihood = Likelihood::possible;
  std::string summary;  ///< what happened, with the evidence: "sgid_index 1 is empty; ..."
  std::string remedy;   ///< what to do
};

/// The causes of one errno on one platform, most likely first.
struct Diagnosis {
  int err = 0;
  Platform platform = Platform::linux_kernel;
  std::string name;                    ///< "EINVAL", "ENODATA", ... on that platform
  std::vector<CandidateCause> causes;  ///< sorted: confirmed, likely, possible, ruled_out
  /// Multi-line text: "EINVAL (22) on linux:" then one line per cause.
  [[nodiscard]] std::string to_string() const;
};

/// Rank the known causes of `err` from an INIT->RTR (or QP creation) on a driver that behaves
/// as `model` says: the errno numbering is model.platform's, the prediction that confirms or
/// rules out a cause is judge_rtr() with this model, and the QP cap is the model's own
/// (max_qps_per_device, judged by judge_create_qp's qp_limit rule), so a model of another
/// kernel or a new report is diagnosed as it would be judged.
/// An errno gidpolicy has no model for yields one "unknown" cause naming it.
Diagnosis diagnose(int err, const DriverModel& model, const DiagnoseContext& context = {});
/// The same with the stock model of `platform` (DriverModel::for_platform).
Diagnosis diagnose(int err, Platform platform, const DiagnoseContext& context = {});

/// What an RTR would do, from the one path every prediction takes: the attributes RtrBuilder
/// builds, judged by judge_rtr(). When the builder refuses them (zero peer GID, family or RoCE
/// version mismatch, an MTU above either side...) modify_qp is never called; `verdict` then
/// says what the driver would answer had they been sent anyway (builder.unchecked()), which is
/// what a program that builds its attributes by hand gets.
struct RtrPrediction {
  std::optional<Error> refused;             ///< RtrBuilder::build()'s error, when it refused
  RtrVerdict verdict;                       ///< judge_rtr() on the attributes (unchecked when refused)
  std::optional<RtrAttributes> attributes;  ///< what build() returned, when it did
  [[nodiscard]] bool reaches_driver() const noexcept { return !refused.has_value(); }
  /// verdict.to_string(p), or "refused before modify_qp: <error>; sent anyway: <verdict>".
  [[nodiscard]] std::string to_string(Platform p) const;
};

/// Build with `builder`, then judge what it built through `model` (see RtrPrediction).
RtrPrediction predict_rtr(const GidTable& table, const RtrBuilder& builder, const DriverModel& model);
/// The same for a plan and a peer: RtrBuilder(qp_type, table, plan).remote(peer) (RC gets
/// max_dest_rd_atomic 1 and min_rnr_timer 12, the C API's defaults).
RtrPrediction predict_rtr(const GidTable& table, const Plan& plan, const PeerInfo& peer,
                          const DriverModel& model, QpKind qp_type = QpKind::uc);
/// judge_rtr() on attributes RtrBuilder already built.
RtrVerdict predict_rtr(const GidTable& table, const RtrAttributes& rtr, const DriverModel& model);

}  // namespace gidpolicy
