// One link of `gidpolicy probe` (pair mode) and of gidpolicy-probe-mpi (each pair of a round):
// the hello, then per queue pair type the prediction, RTR, data and results, composed into two
// directions, each beside its prediction (probe_link.cpp).
#pragma once

#include "probe_attempt.hpp"
#include "probe_wire.hpp"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace gidpolicy::cli {

/// One direction of one QP type, as both sides' outcomes say it.
struct Direction {
  std::string from, to;
  std::string outcome;  ///< connected, create_failed, refused_before_rtr, rtr_failed, rts_failed,
                        ///< completion_error, no_delivery, payload_mismatch, write_mismatch, not_attempted
  std::string side;     ///< where it failed ("" when connected)
  int err = 0;
  std::string platform;  ///< the numbering of err
  std::string detail;
  std::optional<std::string> wc_status;
  std::optional<double> rtt_us;
  Json cause = nullptr;
  // The prediction for the link (the first side predicted not to work, sender first).
  std::string predicted;
  int predicted_errno = 0;
  std::string predicted_side;
  std::string predicted_reason;
  std::string predicted_rule;
  bool contradicts = false;
};

/// The direction from `sender_side` to `receiver_side`: the first stage that failed (sender
/// first), else what arrived; the prediction is the sender's when it predicted a failure, else
/// the receiver's; contradicts when the wire did not do what was predicted.
Direction compose(const ProbeSide& sender_side, const SideOutcome& sender, const ProbeSide& receiver_side,
                  const SideOutcome& receiver);
/// The direction as in schemas/gidpolicy.probe.schema.json (qps[].directions[]).
Json direction_json(const Direction& d);
/// The direction as two to four indented lines.
std::string direction_text(const Direction& d);
/// A side's hello without its nonce and queue pairs (the document's "local" and "peer").
Json side_json(const ProbeSide& s);

/// One link, tried: what the peer said, and per QP type its two directions (this side's first).
struct LinkOutcome {
  std::optional<ProbeSide> peer;
  struct Qp {
    QpKind kind = QpKind::rc;
    Direction out, in;
  };
  std::vector<Qp> qps;
  bool connected = false;
  std::optional<ProbeProblem> problem;  ///< the peer or the channel failed: nothing more was tried
};

/// Exchange hellos over `channel`, then for each of `qps` (in this side's advertised order):
/// prepare_qp(), the RTR outcomes, exchange_data() when both reached RTS, the results, and the
/// two directions. Every wait ends at min(now + attempt, run_end). The QPs are destroyed after
/// their attempt.
LinkOutcome run_link(const AttemptContext& ctx, const ProbeSide& self, std::vector<LocalQp>& qps,
                     ProbeChannel& channel, ProbeClock::duration attempt, ProbeClock::time_point run_end);

}  // namespace gidpolicy::cli
