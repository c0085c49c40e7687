// The fleet's report: its text, its --json document and its --svg matrix, for `gidpolicy fleet`
// (the prediction) and gidpolicy-probe-mpi (the prediction beside what the wire did). One
// renderer for both, so the two programs name a link, a cause and a host the same way.
#pragma once

#include <gidpolicy/fleet.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gidpolicy::cli {

/// Where a report goes: an Output's write(), or a string being built.
using ReportWrite = std::function<void(std::string_view)>;

/// One direction of a link as the wire ended it (gidpolicy-probe-mpi), in the fleet's outcome
/// terms: ok, times_out (nothing delivered, retries ran out), rtr_error (an errno at RTR or RTS),
/// qp_refused (ibv_create_qp failed), dropped (data arrived, not the bytes sent), unusable (the
/// side could not take part: its port, its selection, or a peer that was not there).
struct ObservedDirection {
  gidpolicy::LinkOutcome outcome = gidpolicy::LinkOutcome::ok;
  std::string text;  ///< one line: what happened and where, with the cause when one is known
};

/// One link as it was tried; `tried` false: it was not (the run ended before it).
struct ObservedLink {
  bool tried = false;
  ObservedDirection a_to_b, b_to_a;
  [[nodiscard]] bool connected() const noexcept {
    return tried && a_to_b.outcome == gidpolicy::LinkOutcome::ok &&
           b_to_a.outcome == gidpolicy::LinkOutcome::ok;
  }
};

struct ReportOptions {
  std::size_t limit = 20;  ///< text: causes and failed links listed
  bool all_links = false;  ///< JSON: connected links too
  /// What the wire did, one entry per link index (Analysis::link_count() of them): the SVG is
  /// coloured by it and each cell's hover text puts the prediction beside it.
  const std::vector<ObservedLink>* observed = nullptr;
  std::string title = "gidpolicy fleet";  ///< the SVG's heading
};

/// The text report: the summary line, conflicts, links not reliably connected, failures by
/// cause, failed links (each list bounded by `limit`).
void fleet_text(const fleet::Analysis& an, const ReportOptions& o, const ReportWrite& out);

/// The `gidpolicy.fleet` document (version 2), links streamed one by one; `stack` is the
/// --stack object's JSON text ("" when none).
void fleet_json(const fleet::Analysis& an, const ReportOptions& o, const std::string& stack,
                const ReportWrite& out);

/// One direction of a judged link as the document's links_detail holds it.
std::string fleet_direction_json(const fleet::Analysis& an, const fleet::Direction& d);

/// A host x host matrix, row = sender, column = receiver, coloured by the worst outcome of that
/// direction's links (observed when `o.observed`, else predicted), the cause on hover.
void fleet_svg(const fleet::Analysis& an, const ReportOptions& o, const ReportWrite& sink);

}  // namespace gidpolicy::cli
