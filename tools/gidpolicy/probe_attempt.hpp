// One side of `gidpolicy probe`'s attempt on one QP type: its queue pair, what it advertises,
// its prediction, its RTR and RTS, and the data it moves (probe_attempt.cpp).
#pragma once

#include "probe_wire.hpp"

#include <gidpolicy/diagnose.hpp>
#include <gidpolicy/driver_model.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/plan.hpp>
#include <gidpolicy/qp.hpp>
#include <gidpolicy/stacks.hpp>
#include <gidpolicy/verbs/verbs_api.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace gidpolicy::cli {

/// The probe's buffer per QP: receives, outgoing messages and the peer's RDMA WRITE target.
inline constexpr std::size_t kProbeBuffer = 4096;
inline constexpr std::uint32_t kProbeMessage = 64;

/// What one side tells the other in its hello for one QP type.
struct QpAdvert {
  QpKind kind = QpKind::rc;
  std::optional<int> create_errno;  ///< ibv_create_qp failed (nothing else is valid then)
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;
  std::uint64_t addr = 0;  ///< the WRITE target
  std::uint32_t rkey = 0;
};

/// A side as its hello describes it.
struct ProbeSide {
  std::string role;  ///< "listener" or "connector"
  std::string device;
  std::uint32_t port = 1;
  std::string link_layer;
  std::string platform;  ///< "linux" or "darwin": the numbering of its errnos
  std::string profile;
  Gid gid;
  std::uint32_t gid_index = 0;
  std::uint32_t sgid_index = 0;
  GidType gid_type = GidType::unknown;
  std::uint16_t lid = 0;
  Mtu mtu = Mtu::mtu_1024;
  std::uint32_t nonce = 0;
  std::vector<QpAdvert> qps;
};
Json hello_json(const ProbeSide& s);
/// Validate a peer's hello; `why` names the field when it is not valid.
std::optional<ProbeSide> hello_from_json(const Json& j, std::string& why);

/// A QP of this side, made before the hello (its number and keys are advertised).
struct LocalQp {
  QpKind kind = QpKind::rc;
  verbs::QpHandle qp;
  std::uint32_t qpn = 0;
  std::optional<int> create_errno;
  std::string create_text;
  std::unique_ptr<unsigned char[]> buffer;
  verbs::MemoryKeys keys;
  std::uint32_t psn = 0;
};

/// Create the QP, register its buffer and take it to INIT (errors recorded in create_errno).
LocalQp make_local_qp(verbs::VerbsApi& api, verbs::DeviceHandle dev, std::uint32_t port, QpKind kind,
                      std::uint32_t psn);

/// This side's advertisement of `t`'s port, before any plan: device, port, link layer, the
/// model's platform, `profile`, LID, MTU and a fresh nonce. What pair mode and the MPI program
/// both send first.
ProbeSide port_side(const GidTable& t, const DriverModel& model, std::string profile, std::mt19937& rng);

/// Fill `self` with `plan`'s entry and make one QP per kind on `dev` (each advertised with its
/// number, PSN and keys, or its create errno), appended to `qps`.
void advertise_plan(ProbeSide& self, const Plan& plan, verbs::VerbsApi& api, verbs::DeviceHandle dev,
                    std::uint32_t port, const std::vector<QpKind>& kinds, std::mt19937& rng,
                    std::vector<LocalQp>& qps);

/// What this side knows about one QP type's attempt, shared with the peer ("rtr" and "result").
struct SideOutcome {
  // The prediction made before the attempt (create_qp, then RTR with the peer's hello).
  std::string predicted = "ok";  ///< ok, error, times_out, unknown
  int predicted_errno = 0;
  std::string predicted_rule;  ///< judge_rtr's rule ("empty_slot"), "" when none fired
  std::string predicted_reason;
  std::optional<std::string> builder_refused;  ///< RtrBuilder's refusal, when it refused
  // The attempt.
  std::string stage = "ok";  ///< ok, create_qp, builder, rtr, rts
  int err = 0;
  std::string err_text;
  Json causes = Json::array();  ///< [{"id", "likelihood", "summary", "remedy"}]
  // The data, when both sides reached RTS.
  std::optional<std::string> send_status;  ///< the first error (or "success") of the write and the send
  bool pong_received = false;
  std::optional<double> rtt_us;
  bool ping_received = false;
  bool payload_ok = false;
  bool write_ok = false;
};
Json outcome_json(const SideOutcome& s, Platform p);
std::optional<SideOutcome> outcome_from_json(const Json& j, std::string& why);

/// Everything one side's attempt needs.
struct AttemptContext {
  verbs::VerbsApi* api = nullptr;
  const GidTable* table = nullptr;
  const Plan* plan = nullptr;
  DriverModel model;
  /// A cause to put first when this side's RTR fails ("stale_pin"), from the stack's launch.
  std::optional<Json> pin_cause;
};

/// Predict, build, RTR and RTS this side's QP towards `peer` (its advert `remote`). Records all
/// in `out`; false when the QP did not reach RTS.
bool prepare_qp(const AttemptContext& c, LocalQp& q, const ProbeSide& self, const ProbeSide& peer,
                const QpAdvert& remote, SideOutcome& out);

/// Move data both ways on a QP at RTS on both sides: post receives, "ready" over TCP, an RDMA
/// WRITE and a SEND (ping), answer the peer's ping (pong), until both are settled or `deadline`.
/// The peer's "sent" message says when its ping completed. A socket problem is returned.
std::optional<ProbeProblem> exchange_data(const AttemptContext& c, LocalQp& q, const ProbeSide& self,
                                          const ProbeSide& peer, const QpAdvert& remote, ProbeChannel& sock,
                                          ProbeClock::time_point deadline, SideOutcome& out);

/// The stack's pin as a confirmed cause ("stale_pin": the variable, where it was set, what its
/// slot holds, the index to use) when `launch` pins an index that is stale on `table`'s port
/// (judge_pin()), else nothing: what a failing RTR is put down to first under --stack.
std::optional<Json> stale_pin_cause(StackId id, const StackLaunch& launch, const GidTable& table,
                                    const DriverModel& model);

}  // namespace gidpolicy::cli
