// Issue and attempt signatures.
//
// An issue signature names *what failed* so that the same failure, seen again
// in a later run, maps to the same journal entry and the same attempt budget,
// while a different failure maps to a different one. Two runs of one failure
// never print identical bytes (timestamps, durations, pids, ports, temp
// directories, addresses differ), so the output is normalized first and,
// when failing tests can be named, reduced to the lines that describe the
// failure. An attempt signature adds the files a patch changed, so the same
// fix failing again is recognised and not retried.
//
// Everything here is a pure function of its arguments, except that
// normalize() also treats paths under $TMPDIR (when set) as temporary.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/normalize.h"     // normalize()
#include "engine/test_runners.h"  // extract_failing_tests()

namespace phoenix::engine {

// The lines of (already normalized) output that describe a failure, as used
// by issue_signature: sorted and deduplicated, each ending in '\n'.
//   - A line is evidence when it mentions a failure (fail, error, assert,
//     expect, panic, exception, traceback, "not ok", abort, segfault, timeout,
//     mismatch, "!=", "but was", the words want/got/actual/received, or a
//     runner's failure mark ✖ ✕ × ●), or is a pytest "E   " line.
//   - The more-indented lines that follow an evidence line (up to 10
//     non-blank ones, across blank lines) are its details and count too
//     ("Which is: 4", "  left: 4").
//   - Tallies ("1 failed, 2 passed", "Tests run: 3", failures="1",
//     "# fail 1") do not make a line evidence, and their numbers become
//     "<n>"; a test's position (TAP's "not ok 3", CTest's "1/3 Test #1:",
//     "  1 - name (Failed)") becomes "<n>" too.
//   - Passing tests' lines (✓ ✔, "[       OK ]", TAP "ok 2", cargo "... ok",
//     pytest "id PASSED") are never evidence nor details.
//   - pytest's "FAILED id - message" keeps only "FAILED id": pytest cuts that
//     message to the terminal width, so where it cuts depends on the length
//     of the noise that normalization replaced.
// So adding, removing or reordering passing tests leaves a failure's
// evidence alone, and sorting makes it independent of how parallel output
// interleaved. Line numbers in locations ("calc_test.cc:47") are kept: two
// failures that differ only in where they happened stay two issues.
std::string failure_evidence(std::string_view normalized);

// The issue signature: lowercase sha256 hex of
//   "phoenix-issue-v1\n" + check_id + "\n" + <number of failing tests> + "\n"
//   + each failing test name + "\n" + message
// where the failing tests are extract_failing_tests(output) and the message
// is failure_evidence(normalize(output)) when at least one failing test was
// named, else the whole normalize(output). Only failure lines count once the
// tests are known, so a passing test's changing log output cannot make one
// failure look like many; without test names nothing tells noise from the
// failure, so all of the (normalized) output counts. The count keeps the
// test list and the message from running into each other.
std::string issue_signature(const std::string& check_id, std::string_view output);
// The same with the failing tests given (a verdict's new failures,
// engine/verdict.h) instead of all those the output names.
std::string issue_signature_for(const std::string& check_id, std::string_view output,
                                const std::vector<std::string>& tests);

// The attempt signature: lowercase sha256 hex of
//   "phoenix-attempt-v1\n" + issue_sig + "\n" + <number of files> + "\n"
//   + each changed file path + "\n"
// with the paths sorted and deduplicated (a leading "./" dropped), so the
// order in which a patch lists its files does not matter.
std::string attempt_signature(const std::string& issue_sig, std::vector<std::string> changed_files);

}  // namespace phoenix::engine
