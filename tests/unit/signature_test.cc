#include "engine/signature.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "test_util.h"

namespace phoenix::engine {
namespace {

using Names = std::vector<std::string>;

// ---------------------------------------------------------------------------
// Recorded output of real runners (tests/fixtures/runner-output, see its
// README): a1 and a2 are two runs of one failure, b1 is the same test
// failing with a different message, c1 is a different test failing.

struct Runner {
  std::string dir;  // folder under runner-output/
  std::string ext;  // "txt" (console output) or "xml" (JUnit report)
  Names fails_a;    // failing tests in a1, a2 and b1
  Names fails_c;    // failing tests in c1
};

std::string recorded(const Runner& r, const std::string& run) {
  return test::read(test::fixtures_dir() + "/runner-output/" + r.dir + "/" + run + "." + r.ext);
}

const std::vector<Runner>& runners() {
  static const std::vector<Runner> all = {
      {"gtest", "txt", {"Calc.Adds"}, {"Calc.Subtracts"}},
      {"junit-gtest", "xml", {"Calc.Adds"}, {"Calc.Subtracts"}},
      {"ctest", "txt", {"adds"}, {"subtracts"}},
      {"junit-ctest", "xml", {"adds"}, {"subtracts"}},
      {"pytest", "txt", {"test_calc.py::test_adds"}, {"test_calc.py::test_subtracts"}},
      {"junit-pytest", "xml", {"test_calc.test_adds"}, {"test_calc.test_subtracts"}},
      {"node-tap", "txt", {"calc > adds"}, {"calc > subtracts"}},
      {"node-spec", "txt", {"calc > adds"}, {"calc > subtracts"}},
      {"jest", "txt", {"calc \xe2\x80\xba adds"}, {"calc \xe2\x80\xba subtracts"}},
      {"vitest", "txt", {"calc.test.js > calc > adds"}, {"calc.test.js > calc > subtracts"}},
      {"go", "txt", {"TestAdds"}, {"TestSubtracts"}},
      {"cargo", "txt", {"tests::adds"}, {"tests::subtracts"}},
      {"maven", "txt", {"calc.CalcTest.adds"}, {"calc.CalcTest.subtracts"}},
      {"junit-surefire", "xml", {"calc.CalcTest.adds"}, {"calc.CalcTest.subtracts"}},
  };
  return all;
}

std::string runner_name(const testing::TestParamInfo<Runner>& info) {
  std::string n = info.param.dir;
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
}

class ExtractFromRunner : public testing::TestWithParam<Runner> {};

TEST_P(ExtractFromRunner, NamesTheFailingTests) {
  const Runner& r = GetParam();
  EXPECT_EQ(extract_failing_tests(recorded(r, "a1")), r.fails_a);
  EXPECT_EQ(extract_failing_tests(recorded(r, "a2")), r.fails_a);
  EXPECT_EQ(extract_failing_tests(recorded(r, "b1")), r.fails_a);
  EXPECT_EQ(extract_failing_tests(recorded(r, "c1")), r.fails_c);
}

INSTANTIATE_TEST_SUITE_P(Extract, ExtractFromRunner, testing::ValuesIn(runners()), runner_name);

class SignatureFromRunner : public testing::TestWithParam<Runner> {};

TEST_P(SignatureFromRunner, SameFailureTwiceHasOneSignature) {
  const Runner& r = GetParam();
  std::string a1 = recorded(r, "a1"), a2 = recorded(r, "a2");
  ASSERT_NE(a1, a2) << "the two recorded runs should differ in their noise";
  EXPECT_EQ(issue_signature("unit", a1), issue_signature("unit", a2));
}

TEST_P(SignatureFromRunner, DifferentFailuresHaveDifferentSignatures) {
  const Runner& r = GetParam();
  std::string a = issue_signature("unit", recorded(r, "a1"));
  EXPECT_NE(a, issue_signature("unit", recorded(r, "b1"))) << "same test, different message";
  EXPECT_NE(a, issue_signature("unit", recorded(r, "c1"))) << "different test";
  EXPECT_NE(a, issue_signature("e2e", recorded(r, "a1"))) << "different check";
  EXPECT_EQ(a.size(), 64u);
}

INSTANTIATE_TEST_SUITE_P(Signature, SignatureFromRunner, testing::ValuesIn(runners()), runner_name);

class NormalizeRunnerOutput : public testing::TestWithParam<Runner> {};

// Stronger than the signature test: the whole output, not only its failure
// lines, comes out identical for two runs of the same failure.
TEST_P(NormalizeRunnerOutput, TwoRunsOfOneFailureNormalizeAlike) {
  const Runner& r = GetParam();
  EXPECT_EQ(normalize(recorded(r, "a1")), normalize(recorded(r, "a2")));
}

TEST_P(NormalizeRunnerOutput, IsIdempotent) {
  std::string once = normalize(recorded(GetParam(), "a1"));
  EXPECT_EQ(normalize(once), once);
}

INSTANTIATE_TEST_SUITE_P(Normalize, NormalizeRunnerOutput, testing::ValuesIn(runners()), runner_name);

// ---------------------------------------------------------------------------
// normalize(): one test per kind of noise, with text shaped like the real
// thing, and a check that the failure itself survives.

// Sets (or unsets) TMPDIR for one test and restores it.
class ScopedTmpdir {
 public:
  explicit ScopedTmpdir(const char* value) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    if (value) setenv("TMPDIR", value, 1);
    else unsetenv("TMPDIR");
  }
  ~ScopedTmpdir() {
    if (old_) setenv("TMPDIR", old_->c_str(), 1);
    else unsetenv("TMPDIR");
  }

 private:
  std::optional<std::string> old_;
};

TEST(Normalize, StripsAnsiColourAndTerminalControl) {
  EXPECT_EQ(normalize("\x1b[0;31m[  FAILED  ] \x1b[mCalc.Adds\n"), "[  FAILED  ] Calc.Adds\n");
  EXPECT_EQ(normalize("\x1b[1m\x1b[30m\x1b[46m RUN \x1b[49m\x1b[39m\x1b[22m ok\n"), " RUN  ok\n");
  EXPECT_EQ(normalize("\x1b]8;;file:///x\x07link\x1b]8;;\x07 and \x1b(Bplain\n"), "link and plain\n");
  EXPECT_EQ(normalize("[=>   ] 10%\r[====>] 100%\r\n"), "[====>] 100%\n");
}

TEST(Normalize, ReplacesTimestampsAndDates) {
  EXPECT_EQ(normalize("log 2026-12-01T02:20:43Z x"), "log <time> x\n");
  EXPECT_EQ(normalize("log 2026-12-01T02:20:55.688553 x"), "log <time> x\n");
  EXPECT_EQ(normalize("log 2026-12-01T02:21:12.721885641+01:00 x"), "log <time> x\n");
  EXPECT_EQ(normalize("[2026-12-01 02:20:52] [6221] adds"), "[<time>] [<pid>] adds\n");
  EXPECT_EQ(normalize("2026/12/01 02:18:07 go log"), "<time> go log\n");
  EXPECT_EQ(normalize("built on 2026-11-30."), "built on <date>.\n");
  EXPECT_EQ(normalize("Start at  02:21:01"), "Start at  <time>\n");
  EXPECT_EQ(normalize("Tue Dec  1 02:18:07 2026: boom"), "<date> <time>: boom\n");
  EXPECT_EQ(normalize("Date: Mon, 01 Dec 2026 02:18:07 GMT"), "Date: <date> <time> GMT\n");
  EXPECT_EQ(normalize("jvm 2026-12-01T02-21-32_147-jvmRun1"), "jvm <time>-jvmRun1\n");
  EXPECT_EQ(normalize("log 1796091679.474642202 pid"), "log <time> pid\n");
  EXPECT_EQ(normalize("at 1764555487123 ms-epoch"), "at <time> ms-epoch\n");
  // Line and column numbers are not times.
  EXPECT_EQ(normalize("calc.go:12:34: bad"), "calc.go:12:34: bad\n");
}

TEST(Normalize, ReplacesDurations) {
  EXPECT_EQ(normalize("[  FAILED  ] Calc.Adds (12 ms)"), "[  FAILED  ] Calc.Adds (<dur>)\n");
  EXPECT_EQ(normalize("1 failed, 2 passed in 0.53s"), "1 failed, 2 passed in <dur>\n");
  EXPECT_EQ(normalize("done in 1.2s, took 3ms"), "done in <dur>, took <dur>\n");
  EXPECT_EQ(normalize("***Failed    0.01 sec"), "***Failed    <dur>\n");
  EXPECT_EQ(normalize("--- FAIL: TestAdds (0.00s) after 1m2.5s"), "--- FAIL: TestAdds (<dur>) after <dur>\n");
  EXPECT_EQ(normalize("Time elapsed: 0.478 s <<< FAILURE!"), "Time elapsed: <dur> <<< FAILURE!\n");
  EXPECT_EQ(normalize("\xe2\x9c\x96 adds (16.43079ms) 2 minutes 10\xc2\xb5s"),
            "\xe2\x9c\x96 adds (<dur>) <dur> <dur>\n");
  EXPECT_EQ(normalize("  duration_ms: 22.567276\n# duration_ms 255.06"), "  duration_ms: <dur>\n# duration_ms <dur>\n");
  EXPECT_EQ(normalize("<testcase name=\"adds\" time=\"0.00397277\">"), "<testcase name=\"adds\" time=\"<dur>\">\n");
  // The failure itself is made of numbers too; those stay.
  EXPECT_EQ(normalize("expected 5, got 4; 3 tests, 0 skipped, 2 secrets, v1.2.3"),
            "expected 5, got 4; 3 tests, 0 skipped, 2 secrets, v1.2.3\n");
}

TEST(Normalize, ReplacesAddressesAndIdentityHashes) {
  EXPECT_EQ(normalize("buf 0x7ffe1084d1cc and 0xc0000ae2b0"), "buf 0x<addr> and 0x<addr>\n");
  EXPECT_EQ(normalize("<object object at 0x7fd31bbd4d70>"), "<object object at 0x<addr>>\n");
  EXPECT_EQ(normalize("flags 0x1f"), "flags 0x1f\n");
  EXPECT_EQ(normalize("obj java.lang.Object@402a079c here"), "obj java.lang.Object@<hash> here\n");
  EXPECT_EQ(normalize("mail dev@example.com"), "mail dev@example.com\n");
}

TEST(Normalize, ReplacesPids) {
  EXPECT_EQ(normalize("pid 6131 started"), "pid <pid> started\n");
  EXPECT_EQ(normalize("PID: 99812, pid=4242, pid #77"), "PID: <pid>, pid=<pid>, pid #<pid>\n");
  EXPECT_EQ(normalize("sshd[1234]: accepted"), "sshd[<pid>]: accepted\n");
  EXPECT_EQ(normalize("thread 'tests::adds' (7520) panicked at src/lib.rs:42:9:"),
            "thread 'tests::adds' (<pid>) panicked at src/lib.rs:42:9:\n");
  // Short bracketed numbers are indices, not pids; "pidfile" is not a pid.
  EXPECT_EQ(normalize("v[1] = 2 [12] pidfile 33"), "v[1] = 2 [12] pidfile 33\n");
}

TEST(Normalize, ReplacesTempPaths) {
  ScopedTmpdir env(nullptr);
  EXPECT_EQ(normalize("/tmp/tmp.7BiRdWVrVw/calc_test.cc:47: Failure"), "<tmp>/calc_test.cc:47: Failure\n");
  EXPECT_EQ(normalize("workdir /tmp/phx-Im1hyk"), "workdir <tmp>\n");
  EXPECT_EQ(normalize("input /tmp/tmpc2tm95ex/numbers.txt"), "input <tmp>/numbers.txt\n");
  EXPECT_EQ(normalize("scratch /tmp/phx-EJ9TVd, state"), "scratch <tmp>, state\n");
  EXPECT_EQ(normalize("at file:///tmp/tmp.ubICK3KXEM/calc.test.mjs:27:12"), "at file://<tmp>/calc.test.mjs:27:12\n");
  EXPECT_EQ(normalize("/tmp/pytest-of-root/pytest-3/test_adds0/data.json"), "<tmp>/data.json\n");
  EXPECT_EQ(normalize("/var/folders/xy/abcd1234/T/phx-Ab12Cd/x.txt"), "<tmp>/x.txt\n");
  EXPECT_EQ(normalize("/private/var/folders/xy/abcd1234/T/tmpq1w2e3r4"), "<tmp>/<rand>\n");
  EXPECT_EQ(normalize("see /var/tmp/run-88123/log.txt."), "see <tmp>/log.txt.\n");
  EXPECT_EQ(normalize("stable /tmp/phoenix.log"), "stable <tmp>/phoenix.log\n");
  // Not temporary: a "tmp" deeper in a path, system paths.
  EXPECT_EQ(normalize("/home/dev/tmp/file /usr/lib/x86_64-linux-gnu/libc.so.6"),
            "/home/dev/tmp/file /usr/lib/x86_64-linux-gnu/libc.so.6\n");
  // A mkdtemp-like suffix anywhere in a path.
  EXPECT_EQ(normalize("/home/dev/build-Xk29aQ/out.log"), "/home/dev/build-<rand>/out.log\n");
}

TEST(Normalize, HonoursTmpdir) {
  ScopedTmpdir env("/scratch/u42/tmp/");
  EXPECT_EQ(normalize("wrote /scratch/u42/tmp/job.x1y2z3/out.log"), "wrote <tmp>/out.log\n");
  EXPECT_EQ(normalize("/scratch/u42/other/out.log"), "/scratch/u42/other/out.log\n");
}

TEST(Normalize, ReplacesHexIdsUuidsAndLongNumbers) {
  EXPECT_EQ(normalize("at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std"),
            "at /rustc/<hex>/library/std\n");
  EXPECT_EQ(normalize("Running unittests (target/debug/deps/calc-c6626fb655a8d231)"),
            "Running unittests (target/debug/deps/calc-<rand>)\n");
  EXPECT_EQ(normalize("commit 3f9a2c71d0e4 id 123e4567-e89b-12d3-a456-426614174000"), "commit <hex> id <uuid>\n");
  EXPECT_EQ(normalize("surefire6924526559257190915tmp"), "surefire<n>tmp\n");
  // Words made of hex letters and plain numbers are not ids.
  EXPECT_EQ(normalize("deadbeef 12345678 facade"), "deadbeef 12345678 facade\n");
}

TEST(Normalize, ReplacesLocalPorts) {
  EXPECT_EQ(normalize("listening on 127.0.0.1:46563"), "listening on 127.0.0.1:<port>\n");
  EXPECT_EQ(normalize("GET http://localhost:8080/x and http://[::1]:3000/"),
            "GET http://localhost:<port>/x and http://[::1]:<port>/\n");
  EXPECT_EQ(normalize("bind 0.0.0.0:5000; peer 127.0.0.1"), "bind 0.0.0.0:<port>; peer 127.0.0.1\n");
}

TEST(Normalize, TrimsTrailingWhitespaceAndCollapsesBlankLines) {
  EXPECT_EQ(normalize("\n\na  \t\n\n\n\nb\t\n \n\n"), "a\n\nb\n");
  EXPECT_EQ(normalize(""), "");
  EXPECT_EQ(normalize("\n  \n"), "");
  EXPECT_EQ(normalize("a\r\nb\r\n"), "a\nb\n");
}

TEST(Normalize, ForgetsHowMuchOutputWasOmitted) {
  EXPECT_EQ(normalize("head\n[... 12345 bytes omitted ...]\ntail\n"), "head\n[... bytes omitted ...]\ntail\n");
}

// ---------------------------------------------------------------------------
// extract_failing_tests(): variants of each format that the recorded runs do
// not show (hand-written after the runners' documented output).

TEST(ExtractFailingTests, GoogleTestParameterisedAndSummary) {
  std::string out =
      "[  FAILED  ] Inst/Calc.Adds/0, where GetParam() = 3 (0 ms)\n"
      "[  FAILED  ] 2 tests, listed below:\n"
      "[  FAILED  ] Inst/Calc.Adds/0, where GetParam() = 3\n"
      "[  FAILED  ] Typed/1.Works, where TypeParam = long\n";
  EXPECT_EQ(extract_failing_tests(out), (Names{"Inst/Calc.Adds/0", "Typed/1.Works"}));
}

TEST(ExtractFailingTests, CTestListWithLabelsAndTimeouts) {
  std::string out =
      " 9/10 Test  #9: slow ......................***Timeout  10.01 sec\n"
      "10/10 Test #10: crash .....................***Exception: SegFault  0.01 sec\n"
      "The following tests FAILED:\n"
      "\t  9 - slow (Timeout)    integration\n"
      "\t 10 - crash (SEGFAULT)\n"
      "Errors while running CTest\n";
  EXPECT_EQ(extract_failing_tests(out), (Names{"crash", "slow"}));
}

TEST(ExtractFailingTests, PytestHeadersOnlyWithoutSummary) {
  std::string out =
      "=================================== FAILURES ===================================\n"
      "___________________________ TestCalc.test_adds[2-3] ____________________________\n"
      "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n"
      "_________________________ ERROR at setup of test_db __________________________\n";
  EXPECT_EQ(extract_failing_tests(out), (Names{"TestCalc.test_adds[2-3]", "test_db"}));
  // With a short summary, its full ids win over the bare header names.
  EXPECT_EQ(extract_failing_tests(out + "FAILED t.py::TestCalc::test_adds[2-3] - assert 1 == 2\n"
                                        "ERROR t.py::test_db - ConnectionError\n"),
            (Names{"t.py::TestCalc::test_adds[2-3]", "t.py::test_db"}));
  EXPECT_EQ(extract_failing_tests("t.py::test_x FAILED                    [ 50%]\n"), (Names{"t.py::test_x"}));
}

TEST(ExtractFailingTests, TapSkipsTodoAndParents) {
  std::string out =
      "TAP version 13\n"
      "not ok 1 - flaky thing # TODO not fixed yet\n"
      "not ok 2 - plain failure\n"
      "ok 3 - fine\n"
      "not ok 4 - skipped # SKIP no network\n";
  EXPECT_EQ(extract_failing_tests(out), (Names{"plain failure"}));
}

TEST(ExtractFailingTests, NodeSpecSuiteFailingInAHook) {
  std::string out =
      "\xe2\x96\xb6 db\n"
      "  \xe2\x9c\x94 connects (1ms)\n"
      "\xe2\x9c\x96 db (3ms)\n"
      "  Error: after hook failed\n";
  EXPECT_EQ(extract_failing_tests(out), (Names{"db"}));
}

TEST(ExtractFailingTests, JestSuiteFailedToRunAndVerboseMarks) {
  std::string out =
      "FAIL src/broken.test.js\n"
      "  \xe2\x97\x8f Test suite failed to run\n"
      "    SyntaxError: Unexpected token\n"
      "FAIL src/calc.test.js (1.2 s)\n"
      "  \xe2\x9c\x95 adds (3 ms)\n"
      "  \xe2\x97\x8f adds\n";
  EXPECT_EQ(extract_failing_tests(out), (Names{"adds", "src/broken.test.js"}));
  // Only the verbose listing: the marks are all there is.
  EXPECT_EQ(extract_failing_tests("  \xe2\x9c\x95 adds (3 ms)\n   \xc3\x97 subtracts 12ms\n"),
            (Names{"adds", "subtracts"}));
}

TEST(ExtractFailingTests, GoSubtestsReplaceTheirParent) {
  std::string out =
      "--- FAIL: TestTable (0.00s)\n"
      "    --- FAIL: TestTable/zero (0.00s)\n"
      "    --- FAIL: TestTable/neg/big (0.00s)\n"
      "--- FAIL: TestTab (0.01s)\n"
      "FAIL\texample.com/calc\t0.006s\n";
  EXPECT_EQ(extract_failing_tests(out), (Names{"TestTab", "TestTable/neg/big", "TestTable/zero"}));
}

TEST(ExtractFailingTests, CargoShouldPanicAndDoctests) {
  std::string out =
      "test tests::boom - should panic ... FAILED\n"
      "test src/lib.rs - add (line 5) ... FAILED\n"
      "failures:\n"
      "    src/lib.rs - add (line 5)\n"
      "    tests::boom\n"
      "\n";
  EXPECT_EQ(extract_failing_tests(out), (Names{"src/lib.rs - add (line 5)", "tests::boom"}));
}

TEST(ExtractFailingTests, SurefireThreeConsoleFormat) {
  std::string out =
      "[ERROR] Tests run: 2, Failures: 1, Errors: 1, Skipped: 0, Time elapsed: 0.1 s <<< FAILURE! -- in calc.CalcTest\n"
      "[ERROR] calc.CalcTest.adds -- Time elapsed: 0.01 s <<< FAILURE!\n"
      "[ERROR] calc.CalcTest.io -- Time elapsed: 0.01 s <<< ERROR!\n";
  EXPECT_EQ(extract_failing_tests(out), (Names{"calc.CalcTest.adds", "calc.CalcTest.io"}));
}

TEST(ExtractFailingTests, JUnitXmlErrorsSkippedAndEntities) {
  std::string xml =
      "<testsuite>\n"
      "  <testcase classname=\"pkg.T\" name=\"a &amp; b\" time=\"0.1\"><error type=\"IO\">boom</error></testcase>\n"
      "  <testcase classname=\"pkg.T\" name=\"skipped\"><skipped/></testcase>\n"
      "  <testcase classname=\"pkg.T\" name=\"ok\"/>\n"
      "  <testcase name='solo'>\n    <failure message='x'/>\n  </testcase>\n"
      "  <testcase classname=\"pkg.T\" name=\"out\"><system-out>errors: 0</system-out></testcase>\n"
      "</testsuite>\n";
  EXPECT_EQ(extract_failing_tests(xml), (Names{"pkg.T.a & b", "solo"}));
}

TEST(ExtractFailingTests, NothingInOrdinaryOutput) {
  EXPECT_TRUE(extract_failing_tests("").empty());
  EXPECT_TRUE(extract_failing_tests("src/a.cc:3:1: error: expected ';'\nmake: *** [all] Error 1\n").empty());
  EXPECT_TRUE(extract_failing_tests("FAIL\nFAILED\n[  PASSED  ] 3 tests.\nok 1 - fine\n").empty());
}

// ---------------------------------------------------------------------------
// issue_signature() and attempt_signature().

TEST(SignatureRules, PassingTestNoiseDoesNotChangeAnIssue) {
  // With failing tests named, only failure lines count: a passing test's
  // log line (not normalizable: a random word) may change freely.
  std::string a =
      "[ RUN      ] Calc.Logs\nrequest id banana\n[       OK ] Calc.Logs (0 ms)\n"
      "x.cc:3: Failure\nExpected equality of these values:\n  add(2, 3)\n    Which is: 4\n  5\n"
      "[  FAILED  ] Calc.Adds (0 ms)\n";
  std::string b = a;
  b.replace(b.find("banana"), 6, "cherry");
  EXPECT_EQ(issue_signature("unit", a), issue_signature("unit", b));
  std::string c = a;
  c.replace(c.find("Which is: 4"), 11, "Which is: 6");
  EXPECT_NE(issue_signature("unit", a), issue_signature("unit", c));
}

TEST(SignatureRules, WithoutTestNamesTheWholeOutputCounts) {
  std::string a = "src/a.cc:3:1: error: expected ';' after expression\n";
  std::string b = "src/a.cc:3:1: error: expected ';' after expression\nnote: built at 2026-12-01T02:20:43Z\n";
  std::string c = "src/a.cc:3:1: error: expected ';' after expression\nnote: see also b.cc\n";
  EXPECT_EQ(issue_signature("build", a + "note: built at 2026-11-30T09:00:00Z\n"), issue_signature("build", b));
  EXPECT_NE(issue_signature("build", a), issue_signature("build", c));
}

TEST(SignatureRules, EvidenceKeepsFailureLinesAndTheirDetails) {
  std::string normalized =
      "[ RUN      ] Calc.Adds\n"
      "x.cc:3: Failure\n"
      "Expected equality of these values:\n"
      "  add(2, 3)\n"
      "    Which is: 4\n"
      "\n"
      "  5\n"
      "unrelated line\n"
      "FAILED t.py::test_adds - AssertionError: input <tmp>/numbe...\n";
  EXPECT_EQ(failure_evidence(normalized),
            "    Which is: 4\n  5\n  add(2, 3)\nExpected equality of these values:\nFAILED t.py::test_adds\n"
            "x.cc:3: Failure\n");
}

TEST(SignatureRules, EvidenceIgnoresTalliesPositionsAndPassingTests) {
  std::string normalized =
      "FAIL ./calc.test.js\n"
      "  calc\n"
      "    \xe2\x9c\x95 adds (<dur>)\n"
      "    \xe2\x9c\x93 reports errors (<dur>)\n"
      "Tests:       1 failed, 2 passed, 3 total\n"
      "# fail 1\n"
      "<testsuite name=\"t\" tests=\"3\" failures=\"1\" errors=\"0\">\n"
      "  <property name=\"java.version\" value=\"17\"/>\n"
      "[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0 <<< FAILURE! - in calc.CalcTest\n"
      "    not ok 3 - adds\n"
      "2/5 Test #2: adds .......***Failed    <dur>\n"
      "\t  2 - adds (Failed)\n";
  EXPECT_EQ(failure_evidence(normalized),
            "\t  <n> - adds (Failed)\n"
            "    not ok <n> - adds\n"
            "    \xe2\x9c\x95 adds (<dur>)\n"
            "  calc\n"
            "<n>/<n> Test #<n>: adds .......***Failed    <dur>\n"
            "FAIL ./calc.test.js\n"
            "[ERROR] Tests run: <n>, Failures: <n>, Errors: <n>, Skipped: <n> <<< FAILURE! - in calc.CalcTest\n");
}

TEST(SignatureRules, AddingAPassingTestKeepsTheIssue) {
  // The recorded jest run, as if the suite had one more passing test.
  Runner jest{"jest", "txt", {}, {}};
  std::string a = recorded(jest, "a1");
  std::string more = a;
  size_t at = more.find("    \xe2\x9c\x93 multiplies");
  ASSERT_NE(at, std::string::npos);
  more.insert(at, "    \xe2\x9c\x93 divides (2 ms)\n");
  size_t tally = more.find("Tests:       1 failed, 2 passed, 3 total");
  ASSERT_NE(tally, std::string::npos);
  more.replace(tally, 40, "Tests:       1 failed, 3 passed, 4 total");
  EXPECT_EQ(issue_signature("unit", a), issue_signature("unit", more));
}

TEST(SignatureRules, AttemptIgnoresFileOrderAndDuplicates) {
  std::string issue = issue_signature("unit", "[  FAILED  ] Calc.Adds\n");
  std::string a = attempt_signature(issue, {"src/calc.cc", "src/calc.h", "tests/calc_test.cc"});
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a, attempt_signature(issue, {"tests/calc_test.cc", "src/calc.h", "src/calc.cc"}));
  EXPECT_EQ(a, attempt_signature(issue, {"src/calc.h", "./src/calc.cc", "tests/calc_test.cc", "src/calc.h"}));
}

TEST(SignatureRules, AttemptDependsOnFilesAndIssue) {
  std::string issue = issue_signature("unit", "[  FAILED  ] Calc.Adds\n");
  std::string other = issue_signature("unit", "[  FAILED  ] Calc.Subtracts\n");
  std::string a = attempt_signature(issue, {"src/calc.cc"});
  EXPECT_NE(a, attempt_signature(issue, {"src/calc.h"}));
  EXPECT_NE(a, attempt_signature(issue, {"src/calc.cc", "src/calc.h"}));
  EXPECT_NE(a, attempt_signature(issue, {}));
  EXPECT_NE(a, attempt_signature(other, {"src/calc.cc"}));
  // Paths are framed one per line, so file lists cannot run together.
  EXPECT_NE(attempt_signature(issue, {"a", "b"}), attempt_signature(issue, {"a\nb"}));
}

}  // namespace
}  // namespace phoenix::engine
