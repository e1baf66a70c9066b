// Issue and attempt signatures (DESIGN.md, "Words").
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

namespace phoenix::engine {

// Names of the failing tests found in a test runner's output, deduplicated
// and sorted. ANSI colour codes are ignored. Recognised formats:
//   GoogleTest   "[  FAILED  ] Suite.Name (0 ms)"             -> "Suite.Name"
//   CTest        "The following tests FAILED:" / "  1 - name (Failed)" and
//                "1/3 Test #1: name ....***Failed"             -> "name"
//   pytest       "FAILED path::test - msg", "ERROR path::test", "-v" lines
//                "path::test FAILED"                          -> "path::test";
//                only when none of those is present, the "___ test ___"
//                section headers                              -> "test"
//   node --test  TAP "not ok N - name" (TODO/SKIP directives ignored) and the
//                spec reporter's "✖ name (1.2ms)"; nested tests are named
//                "suite > name" and a suite that failed only because a child
//                did is not listed on its own
//   jest/vitest  "● Suite › name" -> "Suite › name"; vitest's
//                "FAIL  file > suite > name" -> "file > suite > name";
//                jest's "● Test suite failed to run" -> the file of the
//                preceding "FAIL file" line; "✕ name" / "× name" only when
//                none of those is present (verbose-only listings)
//   go test      "--- FAIL: TestName (0.00s)"; a parent test is dropped when
//                one of its subtests "TestName/sub" is listed
//   cargo test   "test path::name ... FAILED", "---- path::name stdout ----"
//                and the "failures:" name list
//   Maven        "name(Class)  Time elapsed ... <<< FAILURE!" (Surefire 2) and
//                "Class.name -- Time elapsed ... <<< ERROR!" (Surefire 3)
//                                                             -> "Class.name"
//   JUnit XML    <testcase name=".." classname=".."> holding a <failure> or
//                <error> -> "classname.name" (just "name" when the classname
//                is empty or equal to the name)
std::vector<std::string> extract_failing_tests(std::string_view output);

// Rewrites what differs between two runs of the same failure into fixed
// placeholders; the result is stable text that ends in '\n' (or is empty).
//   - ANSI escape sequences (CSI, OSC, two-byte escapes) are removed; a
//     carriage return keeps only what was written after it (progress lines).
//   - Timestamps and dates -> "<time>" / "<date>": ISO 8601 (with 'T' or ' ',
//     fractions, zones, and file-name-safe "T02-21-32"), "2026/12/01",
//     "Dec  1" / "Tue Dec  1" / "01 Dec 2026", bare "02:18:07", epoch seconds
//     or milliseconds of this era (10/13/16/19 digits starting 15..19).
//   - Durations -> "<dur>": a number with a unit (ns, us, µs, ms, s, sec,
//     second(s), min, minute(s)), Go's "1m2.5s", and the unit-less values of
//     time="…" attributes and "duration_ms" fields.
//   - Addresses "0x" + 6 or more hex digits -> "0x<addr>"; Java identity
//     hashes "Object@1b6d3586" -> "Object@<hash>".
//   - Pids: "pid 1234" / "PID: 1234" / "pid=1234" -> "pid <pid>" etc.;
//     "[1234]" (3-7 digits in brackets) -> "[<pid>]"; Rust's thread id in
//     "thread 'name' (7520)" -> "(<pid>)".
//   - Temporary paths under /tmp, /var/tmp, /var/folders, /private/tmp,
//     /private/var/folders, /dev/shm or $TMPDIR -> "<tmp>/" + the last path
//     component (itself "<rand>" when it looks generated), or just "<tmp>"
//     for a lone generated entry: everything between is run-specific.
//     Elsewhere, a path component with a mkdtemp-like segment
//     ("build-Xk29aQ") has that segment replaced by "<rand>".
//   - UUIDs -> "<uuid>"; hex ids of 8+ chars mixing digits and letters (git
//     and build hashes) -> "<hex>"; digit runs of 12+ -> "<n>".
//   - Ports after 127.0.0.1, localhost, 0.0.0.0, [::1], [::] -> ":<port>".
//   - Phoenix's own "[... N bytes omitted ...]" truncation marker loses N.
//   - Trailing whitespace is removed; runs of blank lines become one blank
//     line; leading and trailing blank lines are dropped.
// Ordinary numbers ("expected 5, got 4", "3 tests") are kept: they are
// usually the failure itself.
std::string normalize(std::string_view text);

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

// The attempt signature: lowercase sha256 hex of
//   "phoenix-attempt-v1\n" + issue_sig + "\n" + <number of files> + "\n"
//   + each changed file path + "\n"
// with the paths sorted and deduplicated (a leading "./" dropped), so the
// order in which a patch lists its files does not matter.
std::string attempt_signature(const std::string& issue_sig, std::vector<std::string> changed_files);

}  // namespace phoenix::engine
