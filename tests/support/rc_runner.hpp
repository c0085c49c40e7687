// Run a rapidcheck property inside a test and inspect its result, instead of letting it fail
// the test: used to show that a property *can* fail (it catches a deliberately broken policy)
// and to look at the shrunk counterexample rapidcheck reports.
//
// The seed and size come from RC_PARAMS like every other property (so a run reproduces with
// RC_PARAMS="seed=..."); max_success is capped because a property expected to fail stops at
// its first counterexample anyway.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace gidpolicy::test {

/// The outcome of run_property(): the failure (when it failed) and rapidcheck's own report.
struct PropertyRun {
  std::optional<rc::detail::FailureResult> failure;
  std::string report;  ///< what RC_GTEST_PROP would have printed (seed, counterexample...)
};

/// A listener that records nothing: the default one would also queue the failure for the
/// end-of-run "some properties had failures, reproduce with..." banner, which is wrong for a
/// failure the test expects.
class QuietListener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

template <class Testable>
PropertyRun run_property(const std::string& name, Testable&& testable, int max_success = 1000) {
  rc::detail::TestMetadata meta;
  meta.id = name;
  meta.description = name;
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = std::min(params.maxSuccess, max_success);
  QuietListener listener;
  const rc::detail::TestResult result =
      rc::detail::checkTestable(std::forward<Testable>(testable), meta, params, listener);
  PropertyRun run;
  std::ostringstream os;
  rc::detail::printResultMessage(result, os);
  run.report = os.str();
  rc::detail::FailureResult f;
  if (result.match(f)) run.failure = f;
  return run;
}

}  // namespace gidpolicy::test
