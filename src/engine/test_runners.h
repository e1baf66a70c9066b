// Failing test names from a test runner's output: what the issue signature
// (signature.h) is keyed on when the failing tests can be named. One
// recognizer per runner family, all run over every line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace phoenix::engine {

// Names of the failing tests found in a test runner's output, deduplicated
// and sorted. ANSI colour codes are ignored. Recognised formats:
//   GoogleTest   "[  FAILED  ] Suite.Name (0 ms)"             -> "Suite.Name"
//   CTest        "The following tests FAILED:" / "  1 - name (Failed)" and
//                "1/3 Test #1: name ....***Failed"             -> "name" (a name
//                with blanks too: the dots that pad it end it)
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

}  // namespace phoenix::engine
