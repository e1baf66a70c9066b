// Failing tests first (docs/checks.md "Failing tests first"): a red
// check's failing tests, run alone with their runner's own filter
// (engine/selection.h), answer the questions that only they need to answer
// — is this commit red (bisect's oracle), does this proposal still fail
// (a heal's first verification) — in the time of those tests, not of the
// suite. The whole check keeps the last word: HEALED is still its fresh
// run, whole (invariant 2).
//
// The failing tests are asked only where they can be: a command_exit check
// with "select_failing" not false, a failing set with names, a runner that
// selects them (select_tests() says why not). Elsewhere the whole check
// runs, as it always did.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checks/check_spec.h"
#include "fixers/fixer.h"

namespace phoenix::engine {

// The failing tests `tests` of the red check `check` as a check of their
// own, or why the whole check is the unit (`why_whole`, one line).
// `hint`: the red measurement's output (tells a GoogleTest binary).
struct FailingFirst {
  std::optional<fixers::FailingTests> tests;
  std::string why_whole;
};
FailingFirst failing_first(const checks::CheckSpec& check, const std::vector<std::string>& tests,
                           std::string_view hint);

// What a run of the selection `s` of `tests` says: green when a test ran
// and it passed (ran_some_tests), red when it names one of `tests` as
// failing, unknown otherwise (nothing matched, a crash or a build error:
// nothing is said of the tests).
fixers::TestsAnswer read_tests_run(const std::optional<checks::Runner>& runner, const std::vector<std::string>& tests,
                                   const checks::SenseResult& r);

}  // namespace phoenix::engine
