#include <gidpolicy/policies/first_of.hpp>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

namespace gidpolicy {

std::string FirstOf::spec() const {
  std::string s = "first(";
  for (std::size_t i = 0; i < alternatives.size(); ++i) {
    if (i) s += '|';
    s += alternatives[i].spec();
  }
  return s + ")";
}

result<Selection> FirstOf::select(const GidTable& table, SelectOptions run) const {
  // Failed attempts always carry their own trace (failures do); it is kept only when the
  // caller asked for a trace or when every alternative fails.
  Trace trace;
  std::string errors;
  for (const AnyPolicy& alt : alternatives) {
    result<Selection> r = alt.select(table, run);
    if (r) {
      if (run.trace) {
        for (auto& a : r.value().trace.attempts) trace.attempts.push_back(std::move(a));
        r.value().trace = std::move(trace);
      }
      return r;
    }
    const Error& err = r.error();
    if (err.trace)
      for (const auto& a : err.trace->attempts) trace.attempts.push_back(a);
    else
      trace.attempts.push_back(Trace::Attempt{alt.spec(), {}, err.what()});
    if (!errors.empty()) errors += "; ";
    errors += alt.spec() + ": " + err.what();
  }
  if (alternatives.empty()) errors = "first() has no alternatives";
  return fail(Error(errc::no_candidate, "every alternative failed: " + errors,
                    std::make_shared<const Trace>(std::move(trace))));
}

std::vector<PeerAddress> FirstOf::peers() const {
  std::vector<PeerAddress> out;
  for (const AnyPolicy& a : alternatives)
    for (PeerAddress& p : a.peers())
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(std::move(p));
  return out;
}

bool FirstOf::picks_unchecked() const noexcept {
  return std::any_of(alternatives.begin(), alternatives.end(),
                     [](const AnyPolicy& a) { return a.picks_unchecked(); });
}

}  // namespace gidpolicy
