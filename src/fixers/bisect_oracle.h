// What answers one step of bisect (docs/checks.md "Failing tests first"):
// the failing tests of the red measurement alone, where the engine could
// select them (Failure.failing_first), else the whole check.
//
// - A step asks the failing tests; green (a test ran, none failed) and red
//   (one of them failed, by name) are its answer. Unknown (nothing matched,
//   as for a test that did not exist yet at that commit; a red naming none
//   of them, as for a build error) asks the whole check at that step.
// - When the search ends at HEAD (every step green alone), the failing
//   tests run alone at HEAD, where the whole check is red: when they are
//   not red there alone, the failure needs the suite (order dependence, a
//   test that needs another) and the search runs again, every step asking
//   the whole check (use_whole()).
// - The search's verdicts the whole check contradicts are asked again with
//   the whole check over the same range (BisectFixer): known-good red on
//   the failing tests (known-good passed the whole check), and a culprit
//   whose revert did not pass the engine's whole verification.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "checks/check.h"
#include "fixers/fixer.h"

namespace phoenix::fixers {

// One step's answer.
struct OracleStep {
  checks::SenseResult result;  // the run that answered (the whole check's, when it ran)
  bool green = false;
  int runs = 0;           // check runs made (2: the failing tests said nothing, then the whole check)
  bool selected = false;  // the failing tests answered
  std::string note;       // how it was answered, for the log: "failing tests alone", "whole check", ...
};

class BisectOracleCheck {
 public:
  // `whole_only`: never the failing tests (a search asked again whole).
  BisectOracleCheck(const Failure& failure, bool whole_only);

  // Whether the steps ask the failing tests alone.
  bool selected() const { return tests_.has_value(); }
  // The failing tests alone, when selected().
  const FailingTests& tests() const { return *tests_; }
  // Why the whole check answers every step ("" while selected()).
  const std::string& why_whole() const { return why_whole_; }
  // From now on every step asks the whole check, for `why`.
  void use_whole(std::string why);

  // One step: `run` measures a check in the step's tree. Not thread-safe
  // against use_whole(); concurrent ask()s are fine.
  using RunFn = std::function<checks::SenseResult(const checks::CheckSpec&)>;
  OracleStep ask(const RunFn& run) const;

  // Asks the failing tests alone (selected() only).
  TestsAnswer ask_tests(const RunFn& run, checks::SenseResult* out) const;

 private:
  checks::CheckSpec whole_;
  std::optional<FailingTests> tests_;
  std::string why_whole_;
};

}  // namespace phoenix::fixers
