// Running only some tests of a check: the command that runs the named
// failing tests of a command_exit check alone, or why it cannot
// (docs/checks.md, "Running some tests again"). Pure: argv in, argv out;
// nothing is run here. The flaky re-run (engine/verdict.h) and the
// measurement of a reference tree's failing tests use it, and so may any
// step that wants the failing tests first (bisect's oracle, a heal's
// verification).
//
// The runner comes from the check's "select.runner", else from its
// command: pytest (`pytest`, `py.test`, `python -m pytest`, behind `uv run`
// or `poetry run`), ctest, vitest, jest, `go test`, `cargo test`; a
// GoogleTest binary is recognised by its output (`hint`). A shell command
// (`sh -c "..."`), `npm test`, `make test` or anything else names no runner:
// such a check is selectable only through "select" (a "command" that takes
// the selection's arguments as "$@" and a "runner"); otherwise the whole
// check is the unit.
//
// What each runner gets, the check's own filters removed first (only when
// the command is the check's own target; a "select.command" is taken as
// given and the arguments appended):
//   pytest  the node ids as arguments ("tests/test_x.py::test_a[1-2]"); the
//           target's own path arguments dropped
//   ctest   -R '^(a|b)$' --no-tests=error (its -R dropped)
//   gtest   --gtest_filter=Suite.a:Suite.b (its --gtest_filter dropped)
//   vitest  the test files, -t '^(suite name|...)$' (its file filters and -t dropped)
//   jest    -t '^(Suite name|...)$', or the files when only files failed
//   go      -run '^(TestA|TestB)$' -count=1 -v (subtests run with their parent)
//   cargo   -- --exact path::a path::b (its test-name filter dropped)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checks/check_spec.h"

namespace phoenix::engine {

struct Selection {
  std::vector<std::string> argv;         // empty: cannot select
  std::optional<checks::Runner> runner;  // the runner found, when one was
  std::string why_not;                   // when argv is empty: why the whole check is the unit
  bool ok() const { return !argv.empty(); }
};

// The runner a command line runs, as far as its words show it; nullopt for
// a shell, a package manager's script, make, or an unknown program.
std::optional<checks::Runner> runner_of(const std::vector<std::string>& argv);

// The command that runs only `tests` (failing test ids as
// extract_failing_tests names them) of `check`, or why it cannot: a check
// that is not a command_exit, "select": false, no runner, no tests, a name
// the runner's filter cannot express, or a target whose words cannot be
// told apart (an option it does not know followed by a word that may be
// its value or a path). `hint`: the check's output, which tells a
// GoogleTest binary.
Selection select_tests(const checks::CheckSpec& check, const std::vector<std::string>& tests,
                       std::string_view hint = {});

// `check` with `s`'s argv as its target (its id, type, cwd, timeout kept;
// not cached; an "npx <bin>" started as the project's own bin,
// CheckSpec::npx_direct).
checks::CheckSpec selected_check(const checks::CheckSpec& check, const Selection& s);

// Whether a run of `runner` says at least one test ran and passed: a
// selection that matched nothing exits 0 under some runners (gtest, vitest,
// jest, go), and that is not a pass.
bool ran_some_tests(checks::Runner runner, std::string_view output);

}  // namespace phoenix::engine
