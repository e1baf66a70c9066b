// Failing tests first: see engine/failing_first.h.
#include "engine/failing_first.h"

#include <algorithm>

#include "engine/selection.h"
#include "engine/test_runners.h"

namespace phoenix::engine {

fixers::TestsAnswer read_tests_run(const std::optional<checks::Runner>& runner, const std::vector<std::string>& tests,
                                   const checks::SenseResult& r) {
  if (r.interrupted || r.signal == "cancelled") return fixers::TestsAnswer::kUnknown;
  if (r.ok)
    return !runner || ran_some_tests(*runner, r.output) ? fixers::TestsAnswer::kGreen : fixers::TestsAnswer::kUnknown;
  for (const std::string& t : extract_failing_tests(r.output))
    if (std::find(tests.begin(), tests.end(), t) != tests.end()) return fixers::TestsAnswer::kRed;
  return fixers::TestsAnswer::kUnknown;
}

FailingFirst failing_first(const checks::CheckSpec& check, const std::vector<std::string>& tests,
                           std::string_view hint) {
  FailingFirst f;
  if (!check.select_failing) {
    f.why_whole = "\"select_failing\": false";
    return f;
  }
  if (check.kind != checks::Kind::kCommandExit) {
    f.why_whole = "not a command_exit check";
    return f;
  }
  if (tests.empty()) {
    f.why_whole = "no failing test is named in its output";
    return f;
  }
  const Selection sel = select_tests(check, tests, hint);
  if (!sel.ok()) {
    f.why_whole = sel.why_not;
    return f;
  }
  fixers::FailingTests t;
  t.check = selected_check(check, sel);
  t.tests = tests;
  t.read = [runner = sel.runner, tests](const checks::SenseResult& r) { return read_tests_run(runner, tests, r); };
  f.tests = std::move(t);
  return f;
}

}  // namespace phoenix::engine
