// engine/selection.h: the command that runs only some tests of a check.
// The argv rewrites are checked as words; a real pytest and a real CTest
// then run what the selection wrote, on projects the tests make.
#include "engine/selection.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "e2e/real_projects.h"
#include "checks/check.h"
#include "engine/test_runners.h"
#include "test_util.h"
#include "util/error.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::engine {
namespace {

using checks::Runner;
using Argv = std::vector<std::string>;

checks::CheckSpec check_of(const std::string& json) {
  return checks::parse_check(util::Json::parse(json), "test", false);
}

checks::CheckSpec command(const Argv& argv) {
  util::Json j{{"id", "unit"}, {"kind", "command_exit"}, {"target", argv}};
  return check_of(j.dump());
}

Argv selected(const Argv& argv, const Argv& tests, std::string_view hint = {}) {
  const Selection s = select_tests(command(argv), tests, hint);
  EXPECT_TRUE(s.ok()) << s.why_not;
  return s.argv;
}

std::string why_not(const checks::CheckSpec& c, const Argv& tests) {
  const Selection s = select_tests(c, tests);
  EXPECT_FALSE(s.ok()) << util::join_argv(s.argv);
  return s.why_not;
}

TEST(Selection, RunnerOfCommandLines) {
  EXPECT_EQ(runner_of({"pytest", "-q"}), Runner::kPytest);
  EXPECT_EQ(runner_of({"/usr/bin/python3", "-m", "pytest"}), Runner::kPytest);
  EXPECT_EQ(runner_of({"uv", "run", "pytest", "-x"}), Runner::kPytest);
  EXPECT_EQ(runner_of({"timeout", "60", "py.test"}), Runner::kPytest);
  EXPECT_EQ(runner_of({"ctest", "--test-dir", "build"}), Runner::kCTest);
  EXPECT_EQ(runner_of({"npx", "vitest", "run"}), Runner::kVitest);
  EXPECT_EQ(runner_of({"node_modules/.bin/jest", "--ci"}), Runner::kJest);
  EXPECT_EQ(runner_of({"go", "test", "./..."}), Runner::kGo);
  EXPECT_EQ(runner_of({"cargo", "+nightly", "test"}), Runner::kCargo);
  // A shell, a package script, make, or a word that merely mentions a runner: none.
  EXPECT_EQ(runner_of({"sh", "-c", "pytest -q"}), std::nullopt);
  EXPECT_EQ(runner_of({"npm", "test"}), std::nullopt);
  EXPECT_EQ(runner_of({"make", "test"}), std::nullopt);
  EXPECT_EQ(runner_of({"python3", "run_tests.py", "--runner", "pytest"}), std::nullopt);
  EXPECT_EQ(runner_of({"cargo", "build"}), std::nullopt);
}

TEST(Selection, PytestNodeIdsReplaceThePathArguments) {
  EXPECT_EQ(selected({"python3", "-m", "pytest", "-q", "tests/"},
                     {"tests/test_a.py::test_x", "tests/test_a.py::test_p[a b-2]"}),
            (Argv{"python3", "-m", "pytest", "-q", "tests/test_a.py::test_x", "tests/test_a.py::test_p[a b-2]"}));
  // Options with values keep them; --lf would skip what we ask for.
  EXPECT_EQ(selected({"pytest", "-k", "not slow", "--tb", "short", "--lf", "tests", "-p", "no:cacheprovider"},
                     {"tests/t.py::C::test_m"}),
            (Argv{"pytest", "-k", "not slow", "--tb", "short", "-p", "no:cacheprovider", "tests/t.py::C::test_m"}));
  // A whole file that failed to collect is its own id.
  EXPECT_EQ(selected({"pytest"}, {"tests/test_broken.py"}), (Argv{"pytest", "tests/test_broken.py"}));
  // A name read from a section header only is no node id.
  EXPECT_NE(why_not(command({"pytest", "-q"}), {"test_adds"}).find("not a pytest node id"), std::string::npos);
  // An option Phoenix does not know, followed by a word: its value, or a path?
  EXPECT_NE(why_not(command({"pytest", "--frobnicate", "tests"}), {"tests/t.py::a"}).find("--frobnicate"),
            std::string::npos);
}

TEST(Selection, CTestRegexEscapesNamesAndRefusesToMatchNothing) {
  EXPECT_EQ(selected({"ctest", "--test-dir", "build", "-R", "old", "--output-on-failure"}, {"adds", "net.fetch (x)"}),
            (Argv{"ctest", "--test-dir", "build", "--output-on-failure", "--no-tests=error", "-R",
                  "^(adds|net\\.fetch \\(x\\))$"}));
}

TEST(Selection, GoogleTestBinaryIsToldByItsOutput) {
  const std::string out = "[==========] Running 3 tests from 1 test suite.\n[  FAILED  ] Calc.Adds\n";
  EXPECT_EQ(
      selected({"build/calc_test", "--gtest_filter=Calc.*", "--gtest_color=no"}, {"Calc.Adds", "P/Calc.Sub/0"}, out),
      (Argv{"build/calc_test", "--gtest_color=no", "--gtest_filter=Calc.Adds:P/Calc.Sub/0"}));
  EXPECT_FALSE(select_tests(command({"build/calc_test"}), {"Calc.Adds"}).ok()) << "no output, no runner";
}

TEST(Selection, VitestFilesAndFullNames) {
  EXPECT_EQ(selected({"npx", "vitest", "run", "src", "--reporter", "dot", "-t", "old"},
                     {"src/calc.test.js > calc > adds (2+3)", "src/b.test.js > b > works"}),
            (Argv{"npx", "vitest", "run", "--reporter", "dot", "src/calc.test.js", "src/b.test.js", "-t",
                  "^(calc adds \\(2\\+3\\)|b works)$"}));
  // A file that failed to load: the file, whole.
  EXPECT_EQ(selected({"vitest", "run"}, {"src/broken.test.js"}), (Argv{"vitest", "run", "src/broken.test.js"}));
}

TEST(Selection, JestFullNames) {
  EXPECT_EQ(
      selected({"npx", "jest", "--ci", "src"}, {"calc \xe2\x80\xba adds", "calc \xe2\x80\xba nested \xe2\x80\xba x"}),
      (Argv{"npx", "jest", "--ci", "-t", "^(calc adds|calc nested x)$"}));
}

TEST(Selection, GoRunsTopLevelTestsUncached) {
  EXPECT_EQ(selected({"go", "test", "./...", "-run", "Old", "-count=3"}, {"TestAdds", "TestSub/neg_case"}),
            (Argv{"go", "test", "-run", "^(TestAdds|TestSub)$", "-count=1", "-v", "./..."}));
}

TEST(Selection, CargoExactNamesAfterTheSeparator) {
  EXPECT_EQ(selected({"cargo", "test", "adds", "--release", "--", "--test-threads=1", "old"}, {"tests::adds"}),
            (Argv{"cargo", "test", "--release", "--", "--test-threads=1", "--exact", "tests::adds"}));
  EXPECT_EQ(selected({"cargo", "test"}, {"a::b", "c"}), (Argv{"cargo", "test", "--", "--exact", "a::b", "c"}));
}

TEST(Selection, ShellCommandsNeedTheirSelectField) {
  const checks::CheckSpec plain = check_of(
      R"({"id":"unit","kind":"command_exit","target":["sh","-c","cmake --build build && ctest --test-dir build"]})");
  EXPECT_NE(why_not(plain, {"adds"}).find("no test runner"), std::string::npos);
  const checks::CheckSpec with = check_of(R"({"id":"unit","kind":"command_exit",
      "target":["sh","-c","cmake --build build && ctest --test-dir build"],
      "select":{"runner":"ctest","command":["sh","-c","cmake --build build && exec ctest --test-dir build \"$@\"","sh"]}})");
  const Selection s = select_tests(with, {"adds"});
  ASSERT_TRUE(s.ok()) << s.why_not;
  EXPECT_EQ(s.argv, (Argv{"sh", "-c", "cmake --build build && exec ctest --test-dir build \"$@\"", "sh",
                          "--no-tests=error", "-R", "^(adds)$"}));
  EXPECT_EQ(s.runner, Runner::kCTest);
  // The runner may be read from the command itself.
  const checks::CheckSpec cargo =
      check_of(R"({"id":"unit","kind":"command_exit","target":"make test","select":{"command":"cargo test --lib"}})");
  EXPECT_EQ(select_tests(cargo, {"t"}).argv, (Argv{"cargo", "test", "--lib", "--", "--exact", "t"}));
}

TEST(Selection, UnknownCasesFallBackToTheWholeCheck) {
  EXPECT_NE(why_not(check_of(R"({"id":"u","kind":"command_exit","target":["pytest"],"select":false})"), {"a.py::t"})
                .find("false"),
            std::string::npos);
  EXPECT_NE(
      why_not(check_of(R"({"id":"f","kind":"regex_in_file","target":"a.txt","pattern":"x","expect":"absent"})"), {"t"})
          .find("command_exit"),
      std::string::npos);
  EXPECT_NE(why_not(command({"pytest"}), {}).find("no failing test"), std::string::npos);
  EXPECT_NE(why_not(command({"pytest"}), {"a.py::t\nb"}).find("control"), std::string::npos);
}

TEST(Selection, SelectFieldIsCheckedLikeEveryField) {
  EXPECT_THROW(check_of(R"({"id":"u","kind":"command_exit","target":"x","select":{"runner":"nose"}})"), ConfigError);
  EXPECT_THROW(check_of(R"({"id":"u","kind":"command_exit","target":"x","select":{"comand":["x"]}})"), ConfigError);
  EXPECT_THROW(check_of(R"({"id":"u","kind":"command_exit","target":"x","select":"yes"})"), ConfigError);
  try {
    check_of(R"({"id":"u","kind":"command_exit","target":"x","select":{"runner":"nose"}})");
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("test.select.runner: unknown runner 'nose' (known: pytest, ctest"),
              std::string::npos)
        << e.what();
  }
}

TEST(Selection, RanSomeTestsTellsAnEmptySelectionFromAPass) {
  EXPECT_TRUE(ran_some_tests(Runner::kPytest, "..\n2 passed in 0.01s\n"));
  EXPECT_FALSE(ran_some_tests(Runner::kPytest, "\nno tests ran in 0.01s\n"));
  EXPECT_FALSE(ran_some_tests(Runner::kGoogleTest, "[==========] 0 tests ran.\n[  PASSED  ] 0 tests.\n"));
  EXPECT_TRUE(ran_some_tests(Runner::kGoogleTest, "[  PASSED  ] 1 test.\n"));
  EXPECT_FALSE(ran_some_tests(Runner::kVitest, " Tests  3 skipped (3)\n"));
  EXPECT_TRUE(ran_some_tests(Runner::kVitest, "\x1b[2m      Tests \x1b[22m \x1b[1m\x1b[32m1 passed\x1b[39m\n"));
  EXPECT_TRUE(ran_some_tests(Runner::kCTest, "100% tests passed, 0 tests failed out of 1\n"));
  EXPECT_FALSE(ran_some_tests(Runner::kCTest, "No tests were found!!!\n"));
  EXPECT_TRUE(ran_some_tests(Runner::kGo, "=== RUN   TestA\n--- PASS: TestA (0.00s)\n"));
  EXPECT_FALSE(ran_some_tests(Runner::kGo, "testing: warning: no tests to run\nPASS\n"));
  EXPECT_TRUE(ran_some_tests(Runner::kCargo, "test result: ok. 1 passed; 0 failed\n"));
  EXPECT_FALSE(ran_some_tests(Runner::kCargo, "test result: ok. 0 passed; 0 failed\n"));
}

// --- what a real runner does with the selection ----------------------------

TEST(Selection, RealPytestRunsOnlyTheSelectedIds) {
  const std::string py = test::python_with_pytest();
  if (py.empty()) GTEST_SKIP() << "no python with pytest";
  test::ScopedTempDir tmp;
  test::write(tmp.path(), "tests/test_calc.py",
              "import pytest\n"
              "def test_ok():\n    assert True\n"
              "def test_bad():\n    assert 1 == 2\n"
              "@pytest.mark.parametrize('v', ['a b', 'c'])\n"
              "def test_p(v):\n    assert v != 'a b'\n");
  const checks::CheckSpec c = command({py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"});
  const checks::SenseResult all = checks::sense(c, tmp.path());
  ASSERT_FALSE(all.ok);
  const std::vector<std::string> failing = extract_failing_tests(all.output);
  ASSERT_EQ(failing, (std::vector<std::string>{"tests/test_calc.py::test_bad", "tests/test_calc.py::test_p[a b]"}))
      << all.output;
  const Selection s = select_tests(c, failing, all.output);
  ASSERT_TRUE(s.ok()) << s.why_not;
  const checks::SenseResult again = checks::sense(selected_check(c, s), tmp.path());
  EXPECT_FALSE(again.ok);
  EXPECT_NE(again.output.find("2 failed in"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("passed"), std::string::npos) << "test_ok and test_p[c] were not run: " << again.output;
  EXPECT_EQ(extract_failing_tests(again.output), failing);
}

TEST(Selection, RealCTestRunsOnlyTheSelectedTest) {
  if (util::find_executable("ctest").empty()) GTEST_SKIP() << "no ctest";
  test::ScopedTempDir tmp;
  test::write(tmp.path(), "CMakeLists.txt",
              "cmake_minimum_required(VERSION 3.19)\nproject(p NONE)\nenable_testing()\n"
              "add_test(NAME \"adds one\" COMMAND sh -c \"exit 0\")\n"
              "add_test(NAME net.fetch COMMAND sh -c \"echo no network; exit 1\")\n"
              "add_test(NAME other COMMAND sh -c \"exit 0\")\n");
  ASSERT_EQ(test::run({"cmake", "-S", ".", "-B", "build"}, tmp.path()).exit_code, 0);
  const checks::CheckSpec c = command({"ctest", "--test-dir", "build", "--output-on-failure"});
  const checks::SenseResult all = checks::sense(c, tmp.path());
  ASSERT_FALSE(all.ok);
  ASSERT_EQ(extract_failing_tests(all.output), std::vector<std::string>{"net.fetch"}) << all.output;
  const Selection one = select_tests(c, {"net.fetch"});
  const checks::SenseResult again = checks::sense(selected_check(c, one), tmp.path());
  EXPECT_FALSE(again.ok);
  EXPECT_NE(again.output.find("1 tests failed out of 1"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("adds one"), std::string::npos) << again.output;
  // A name with a space and a name that no longer exists: --no-tests=error
  // keeps an empty selection from passing.
  const checks::SenseResult spaced = checks::sense(selected_check(c, select_tests(c, {"adds one"})), tmp.path());
  EXPECT_TRUE(spaced.ok) << spaced.output;
  EXPECT_TRUE(ran_some_tests(Runner::kCTest, spaced.output)) << spaced.output;
  const checks::SenseResult gone = checks::sense(selected_check(c, select_tests(c, {"renamed"})), tmp.path());
  EXPECT_FALSE(gone.ok) << gone.output;
  // A shell target, as `phoenix init` writes it for CMake: its "select"
  // command gets the selection as "$@" after the build.
  const checks::CheckSpec shell = check_of(R"({"id":"unit","kind":"command_exit",
      "target":["sh","-c","cmake --build build && ctest --test-dir build --output-on-failure"],
      "select":{"runner":"ctest",
                "command":["sh","-c","cmake --build build && exec ctest --test-dir build --output-on-failure \"$@\"","sh"]}})");
  const checks::SenseResult whole = checks::sense(shell, tmp.path());
  ASSERT_EQ(extract_failing_tests(whole.output), std::vector<std::string>{"net.fetch"}) << whole.output;
  const checks::SenseResult alone =
      checks::sense(selected_check(shell, select_tests(shell, {"net.fetch"})), tmp.path());
  EXPECT_NE(alone.output.find("1 tests failed out of 1"), std::string::npos) << alone.output;
}

// A selected run of "npx <bin>" starts the project's own
// node_modules/.bin/<bin>, where npx would find it (the nearest folder up
// holding a package.json or a node_modules), with that .bin first in PATH;
// everything else still goes through npx. The check as configured never
// skips npx. Here npx is a script of the test's that says it ran.
TEST(Selection, ASelectedNpxRunStartsTheProjectsOwnBin) {
  test::ScopedTempDir tmp;
  const std::string root = tmp.path() + "/app";
  test::write(tmp.path(), "bin/npx", "#!/bin/sh\necho \"via npx: $*\"\n");
  test::write(root, "package.json", "{}\n");
  test::write(root, "node_modules/.bin/runner", "#!/bin/sh\necho \"direct: $* PATH=$PATH\"\n");
  test::write(root, "pkg/package.json", "{}\n");  // a package of its own, without node_modules
  test::write(root, "src/a.js", "\n");
  for (const char* f : {"bin/npx", "app/node_modules/.bin/runner"})
    ASSERT_EQ(test::run({"chmod", "+x", tmp.path() + "/" + f}, tmp.path()).exit_code, 0);
  const std::string npx = tmp.path() + "/bin/npx";
  auto output = [&](const Argv& argv, bool selected, const std::string& cwd) {
    checks::CheckSpec c = command(argv);
    c.cwd = cwd;
    if (selected) c = selected_check(c, Selection{argv, Runner::kVitest, ""});
    const checks::SenseResult r = checks::sense(c, root);
    EXPECT_TRUE(r.ok) << r.output;
    return r.output;
  };
  const std::string direct = output({npx, "runner", "run", "a b.test.js"}, true, "");
  EXPECT_TRUE(util::starts_with(direct, "direct: run a b.test.js PATH=" + root + "/node_modules/.bin:")) << direct;
  // From a folder below, up to the project.
  EXPECT_TRUE(util::starts_with(output({npx, "runner"}, true, "src"), "direct:"));
  EXPECT_EQ(output({npx, "runner", "run"}, false, ""), "via npx: runner run\n");
  EXPECT_EQ(output({npx, "-y", "runner"}, true, ""), "via npx: -y runner\n");
  EXPECT_EQ(output({npx, "runner@4", "run"}, true, ""), "via npx: runner@4 run\n");
  EXPECT_EQ(output({npx, "other"}, true, ""), "via npx: other\n");
  EXPECT_EQ(output({npx, "runner"}, true, "pkg"), "via npx: runner\n") << "npx would look in pkg/node_modules";
}

}  // namespace
}  // namespace phoenix::engine
