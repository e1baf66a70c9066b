// engine/failing_first.h: which checks ask their failing tests alone, and
// what a run of them says; fixers/bisect_oracle.h: how a step is answered
// (the failing tests, the whole check when they say nothing). The runs here
// are real commands (sh), their outputs those of the runners.
#include "engine/failing_first.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "checks/check.h"
#include "fixers/bisect_oracle.h"
#include "util/json.h"

namespace phoenix::engine {
namespace {

using fixers::TestsAnswer;
using util::Json;

checks::CheckSpec check_of(const Json& j) { return checks::parse_check(j, "test", false); }

checks::CheckSpec pytest_check(const Json& extra = Json::object()) {
  Json j{{"id", "unit"}, {"kind", "command_exit"}, {"target", {"python3", "-m", "pytest", "-q", "tests"}}};
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return check_of(j);
}

checks::SenseResult result(bool ok, const std::string& output) {
  checks::SenseResult r;
  r.ok = ok;
  r.signal = ok ? "" : "exit=1";
  r.output = output;
  return r;
}

const std::vector<std::string> kTests = {"tests/test_calc.py::test_mul"};

TEST(FailingFirst, APytestCheckAsksItsFailingTestsAlone) {
  const FailingFirst f = failing_first(pytest_check(), kTests, "");
  ASSERT_TRUE(f.tests) << f.why_whole;
  EXPECT_EQ(f.tests->check.argv.back(), kTests[0]);
  EXPECT_EQ(f.tests->check.id, "unit");
  EXPECT_EQ(f.tests->tests, kTests);
}

TEST(FailingFirst, TheWholeCheckIsTheUnitWhereTheTestsCannotBeAskedAlone) {
  EXPECT_EQ(failing_first(pytest_check({{"select_failing", false}}), kTests, "").why_whole,
            "\"select_failing\": false");
  EXPECT_FALSE(failing_first(pytest_check({{"select_failing", false}}), kTests, "").tests);
  EXPECT_EQ(failing_first(pytest_check(), {}, "").why_whole, "no failing test is named in its output");
  const FailingFirst shell = failing_first(
      check_of({{"id", "unit"}, {"kind", "command_exit"}, {"target", {"sh", "-c", "pytest -q"}}}), kTests, "");
  EXPECT_FALSE(shell.tests);
  EXPECT_FALSE(shell.why_whole.empty());
  EXPECT_FALSE(failing_first(pytest_check({{"select", false}}), kTests, "").tests);
  const FailingFirst file = failing_first(
      check_of({{"id", "lock"}, {"kind", "file_sha256"}, {"target", "deps.lock"}, {"expect", std::string(64, 'a')}}),
      kTests, "");
  EXPECT_EQ(file.why_whole, "not a command_exit check");
}

TEST(FailingFirst, ARunIsGreenOnlyWhenATestRanAndRedOnlyWhenItNamesOneOfThem) {
  const std::optional<checks::Runner> pytest = checks::Runner::kPytest;
  EXPECT_EQ(read_tests_run(pytest, kTests, result(true, "1 passed in 0.01s\n")), TestsAnswer::kGreen);
  EXPECT_EQ(read_tests_run(pytest, kTests, result(true, "no tests ran in 0.01s\n")), TestsAnswer::kUnknown);
  EXPECT_EQ(read_tests_run(pytest, kTests,
                           result(false, "FAILED tests/test_calc.py::test_mul - assert 13 == 12\n1 failed in 0.02s\n")),
            TestsAnswer::kRed);
  // A test missing at this commit, a build error: nothing said of the tests.
  EXPECT_EQ(read_tests_run(pytest, kTests,
                           result(false, "ERROR: not found: /r/tests/test_calc.py::test_mul\nno tests ran in 0.01s\n")),
            TestsAnswer::kUnknown);
  EXPECT_EQ(read_tests_run(pytest, kTests, result(false, "FAILED tests/test_other.py::test_x - boom\n")),
            TestsAnswer::kUnknown);
}

TEST(BisectOracle, AStepAsksTheFailingTestsAndTheWholeCheckOnlyWhenTheySayNothing) {
  fixers::Failure failure;
  failure.check = pytest_check();
  failure.failing_first = failing_first(failure.check, kTests, "").tests;
  fixers::BisectOracleCheck oracle(failure, false);
  ASSERT_TRUE(oracle.selected());
  std::vector<std::vector<std::string>> asked;
  std::vector<checks::SenseResult> answers;
  auto run = [&](const checks::CheckSpec& c) {
    asked.push_back(c.argv);
    checks::SenseResult r = answers.front();
    answers.erase(answers.begin());
    return r;
  };
  answers = {result(false, "FAILED tests/test_calc.py::test_mul - assert 13 == 12\n")};
  fixers::OracleStep s = oracle.ask(run);
  EXPECT_FALSE(s.green);
  EXPECT_TRUE(s.selected);
  EXPECT_EQ(s.runs, 1);
  EXPECT_EQ(asked.back().back(), kTests[0]);

  answers = {result(true, "no tests ran in 0.01s\n"), result(true, "21 passed in 0.3s\n")};
  s = oracle.ask(run);
  EXPECT_TRUE(s.green);
  EXPECT_FALSE(s.selected);
  EXPECT_EQ(s.runs, 2);
  EXPECT_EQ(asked.back().back(), "tests") << "the whole check answered";

  oracle.use_whole("the failing tests alone are not red at HEAD");
  EXPECT_FALSE(oracle.selected());
  answers = {result(false, "FAILED tests/test_calc.py::test_mul\n")};
  s = oracle.ask(run);
  EXPECT_EQ(s.runs, 1);
  EXPECT_EQ(asked.back().back(), "tests");
  EXPECT_EQ(oracle.why_whole(), "the failing tests alone are not red at HEAD");

  fixers::BisectOracleCheck whole(failure, true);
  EXPECT_FALSE(whole.selected());
  failure.failing_first.reset();
  failure.whole_why = "\"select_failing\": false";
  EXPECT_EQ(fixers::BisectOracleCheck(failure, false).why_whole(), "\"select_failing\": false");
}

}  // namespace
}  // namespace phoenix::engine
