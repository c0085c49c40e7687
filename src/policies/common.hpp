// Internal helpers shared by the policy implementations (not installed). The description
// helpers (where, describe, holds) live in src/describe.hpp, shared with the RTR layer.
#pragma once

#include <gidpolicy/error.hpp>
#include <gidpolicy/gid.hpp>
#include <gidpolicy/gid_table.hpp>
#include <gidpolicy/policy.hpp>
#include <gidpolicy/trace.hpp>

#include "../describe.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gidpolicy::detail {

/// An address as a spec writes it: dotted quad for IPv4-mapped GIDs, IPv6 text otherwise.
std::string address_to_spec(const Gid& g);
/// A trace note for an entry whose verdict already says what is wrong with its state: nothing
/// for an empty slot, the read error for an unreadable one, describe() otherwise.
std::string note_for(const GidEntry& e);

/// Records trace steps only when on. Notes are built lazily: with tracing off a policy's scan
/// neither formats strings nor allocates.
class Recorder {
 public:
  explicit Recorder(bool on) noexcept : on_(on) {}
  [[nodiscard]] bool on() const noexcept { return on_; }

  template <class NoteFn>
  void step(std::uint32_t index, EntryVerdict verdict, NoteFn&& note) {
    if (on_) steps_.push_back(TraceStep{index, verdict, std::forward<NoteFn>(note)()});
  }
  /// After a scan: the accepted step at `chosen` becomes EntryVerdict::chosen, every other accepted
  /// step EntryVerdict::lower_rank.
  void finish(std::uint32_t chosen) noexcept {
    for (auto& s : steps_)
      if (is_accepted(s.verdict))
        s.verdict = s.index == chosen ? EntryVerdict::chosen : EntryVerdict::lower_rank;
  }
  std::vector<TraceStep> take() noexcept { return std::move(steps_); }

 private:
  bool on_;
  std::vector<TraceStep> steps_;
};

/// traced()'s failure half, out of the success path: re-runs the body with recording on when
/// no trace was requested, then attaches the steps (and, optionally, a list of them) to the error.
template <class SpecFn, class Body>
void fail_with_trace(result<Selection>& r, SpecFn&& spec, SelectOptions run, bool list_rejections,
                     Recorder& rec, Body& body) {
  if (!run.trace) {
    Recorder again(true);
    (void)body(again);
    rec = std::move(again);
  }
  Error err = std::move(r).error();
  std::vector<TraceStep> steps = rec.take();
  if (list_rejections && !steps.empty()) {
    std::string list;
    for (const auto& s : steps) {
      if (!list.empty()) list += ", ";
      list += "[" + std::to_string(s.index) + "] " + std::string(to_string(s.verdict));
    }
    err.detail += " (looked at: " + list + ")";
  }
  auto trace = std::make_shared<Trace>();
  trace->attempts.push_back(Trace::Attempt{spec(), std::move(steps), err.what()});
  err.trace = std::move(trace);
  r = fail(std::move(err));
}

/// Runs a policy body `body(Recorder&) -> result<Selection>`, attaching the trace: to the
/// Selection when `run.trace`, and always to a failure. Policies are pure, so on an untraced
/// failure the body simply runs again with recording on; the success path stays allocation-free.
/// With `list_rejections`, a failure's detail also lists every step's index and verdict.
/// `spec` is a callable giving the policy's spec: it is only called when a trace is recorded, so
/// an untraced success does not build the string (Ranked's spec is several concatenations).
/// Every path returns `r` itself, so the Selection the body built in place is never moved.
template <class SpecFn, class Body>
result<Selection> traced(SpecFn&& spec, SelectOptions run, bool list_rejections, Body&& body) {
  Recorder rec(run.trace);
  result<Selection> r = body(rec);
  if (r) {
    if (run.trace) r.value().trace.attempts.push_back(Trace::Attempt{spec(), rec.take(), {}});
    return r;
  }
  fail_with_trace(r, std::forward<SpecFn>(spec), run, list_rejections, rec, body);
  return r;
}

/// A successful result holding a Selection of `e`, built in place (the trace is filled in by
/// traced()).
inline result<Selection> select_entry(const GidEntry& e) {
  return result<Selection>{boost::outcome_v2::in_place_type<Selection>, e};
}

}  // namespace gidpolicy::detail
