// Failing tests first, end to end with real runners: bisect's steps run the
// failing tests of the red measurement alone (pytest node ids, ctest -R)
// and the culprit's revert is verified by the whole check; a heal's
// proposal is rejected on the failing tests alone when they still fail; a
// failure that needs the suite (order dependence, a test that needs another)
// is searched with the whole check; a runner without selection and
// "select_failing": false run the whole check, as before.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "e2e/real_projects.h"
#include "test_util.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

// A pytest project: calc.py and tests/test_calc.py with `extra` tests of
// their own beside the ones on mul, so the whole suite is more than the
// failing test.
class FailingFirstRun : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("PHOENIX_TREES_DIR", (tmp / "trees").c_str(), 1);
    py = python_with_pytest();
    if (py.empty()) GTEST_SKIP() << "no python3 with pytest";
    repo = init_repo(tmp / "repo");
    write(repo, ".gitignore", ".phoenix/\n__pycache__/\n.pytest_cache/\nincidents/\n");
  }
  void TearDown() override { ::unsetenv("PHOENIX_TREES_DIR"); }

  std::vector<std::string> pytest(const std::vector<std::string>& more = {"tests"}) {
    std::vector<std::string> argv = {py, "-m", "pytest", "-q", "-p", "no:cacheprovider"};
    argv.insert(argv.end(), more.begin(), more.end());
    return argv;
  }

  // phoenix.json with one check `target` (and `extra` keys on it), the
  // fixers given, bisect one probe at a time.
  void configure(const Json& target, const Json& fixers, const Json& extra = Json::object(),
                 const Json& harness = nullptr) {
    Json check = {
        {"id", "unit"}, {"kind", "command_exit"}, {"target", target}, {"editable", {"*.py"}}, {"timeout_s", 120}};
    for (auto it = extra.begin(); it != extra.end(); ++it) check[it.key()] = it.value();
    Json cfg = {
        {"checks", Json::array({check})}, {"fixers", fixers}, {"bisect", {{"parallel", 1}}}, {"flaky_reruns", 0}};
    if (!harness.is_null()) cfg["harness"] = harness;
    write(repo, "phoenix.json", cfg.dump(2));
  }

  // The project at known-good, blessed by a green run.
  void bless() {
    commit_all(repo, "initial");
    CliRun r = run_phoenix(repo, {"run"}, 120);
    ASSERT_EQ(r.code, 0) << r.out;
  }

  // `n` ordinary commits (a file of notes each).
  void ordinary(int n, const std::string& tag) {
    for (int i = 0; i < n; ++i) {
      write(repo, "notes/" + tag + std::to_string(i) + ".txt", tag + " " + std::to_string(i) + "\n");
      commit_all(repo, tag + " notes " + std::to_string(i));
    }
  }

  std::vector<Json> trace_events(const std::string& event) {
    std::vector<Json> out;
    for (const auto& l : util::split_lines(read(repo + "/.phoenix/trace.jsonl"))) {
      if (l.empty()) continue;
      Json j = Json::parse(l);
      if (j.value("event", "") == event) out.push_back(j);
    }
    return out;
  }
  // The proposals of `fixer` in the trace, in order.
  std::vector<Json> proposals(const std::string& fixer) {
    std::vector<Json> out;
    for (const Json& j : trace_events("proposal"))
      if (j.dump().find("\"fixer\":\"" + fixer + "\"") != std::string::npos) out.push_back(j);
    return out;
  }
  static Json field(const Json& event, const std::string& key) {
    if (event.contains(key)) return event[key];
    if (event.contains("data") && event["data"].contains(key)) return event["data"][key];
    return nullptr;
  }

  ScopedTempDir tmp;
  std::string py, repo;
};

const char* kCalc = "def mul(a, b):\n    return a * b\n\ndef add(a, b):\n    return a + b\n";
const char* kCalcBroken =
    "def mul(a, b):\n    return a * b + (1 if a == 3 else 0)\n\ndef add(a, b):\n    return a + b\n";

// tests/test_calc.py: the tests on mul (parametrized: ids with blanks and
// brackets, which need quoting in any shell) and `extra` tests of add.
std::string calc_tests(int extra) {
  std::string t =
      "import os, sys\n"
      "sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
      "import pytest\n"
      "import calc\n"
      "@pytest.mark.parametrize('a,b,want', [(2, 5, 10), (3, 4, 12)], ids=['two by five', \"three 'x' [4]\"])\n"
      "def test_mul(a, b, want):\n    assert calc.mul(a, b) == want\n";
  for (int i = 0; i < extra; ++i)
    t += "def test_add_" + std::to_string(i) + "():\n    assert calc.add(" + std::to_string(i) +
         ", 1) == " + std::to_string(i + 1) + "\n";
  return t;
}

// bisect asks the failing test alone at every step (its id needs quoting:
// blanks, quotes and brackets), names the culprit, and the revert is
// verified by the whole suite.
TEST_F(FailingFirstRun, BisectAsksThePytestFailingTestAloneAndTheWholeCheckVerifiesTheRevert) {
  write(repo, "calc.py", kCalc);
  write(repo, "tests/test_calc.py", calc_tests(20));
  configure(pytest(), {"bisect"});
  bless();
  ordinary(3, "before");
  write(repo, "calc.py", kCalcBroken);
  const std::string culprit = commit_all(repo, "mul: a faster path");
  ordinary(4, "after");

  CliRun r = run_phoenix(repo, {"run", "--explain"}, 300);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  EXPECT_EQ(read(repo + "/calc.py"), kCalc);
  const std::vector<Json> p = proposals("bisect");
  ASSERT_EQ(p.size(), 1u) << read(repo + "/.phoenix/trace.jsonl");
  const std::string detail = field(p[0], "detail").get<std::string>();
  EXPECT_NE(detail.find("culprit " + culprit.substr(0, 7)), std::string::npos) << detail;
  // Every step on the failing test alone (HEAD is not asked: the red
  // measurement was HEAD's, and the search did not end there).
  EXPECT_EQ(field(p[0], "selected_runs"), field(p[0], "check_runs")) << detail;
  EXPECT_GE(field(p[0], "selected_runs").get<int>(), 3) << detail;
  EXPECT_LE(field(p[0], "selected_runs").get<int>(), 4) << detail;
  EXPECT_NE(detail.find("of the failing tests alone, 0 whole"), std::string::npos) << detail;
  const Json argv = field(p[0], "selected_argv");
  EXPECT_EQ(argv.back(), "tests/test_calc.py::test_mul[three 'x' [4]]") << argv.dump();
  // The revert of the commit the check named: the whole suite at once.
  EXPECT_TRUE(trace_events("verify_selected").empty());
  EXPECT_NE(r.out.find("verifying the proposal of bisect with the whole check: it reverts the commit the check "
                       "named"),
            std::string::npos)
      << r.out;
  bool whole = false;
  for (const Json& s : trace_events("state"))
    whole = whole || (field(s, "state") == "VERIFYING" && field(s, "run") == "whole");
  EXPECT_TRUE(whole) << read(repo + "/.phoenix/trace.jsonl");
}

// A harness proposal that leaves the failing test red is rejected on that
// test alone, without the whole suite; the next one passes it and the whole
// check heals.
TEST_F(FailingFirstRun, AHealProposalIsRejectedOnTheFailingTestsAlone) {
  write(repo, "calc.py", kCalc);
  write(repo, "tests/test_calc.py", calc_tests(5));
  const std::string counter = tmp / "proposals";
  const std::string script = "n=$(cat '" + counter + "' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '" + counter +
                             "'; if [ $n -eq 1 ]; then echo 'TRIED = 1' > helpers.py; else printf '%s' '" +
                             std::string(kCalc) + "' > calc.py; fi";
  configure(pytest(), {"harness"}, Json::object(), {{"command", {"sh", "-c", script}}, {"timeout_s", 60}});
  bless();
  write(repo, "calc.py", kCalcBroken);
  commit_all(repo, "mul: a faster path");

  CliRun r = run_phoenix(repo, {"run", "--explain"}, 300);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  const std::vector<Json> sel = trace_events("verify_selected");
  ASSERT_EQ(sel.size(), 2u) << read(repo + "/.phoenix/trace.jsonl");
  EXPECT_EQ(field(sel[0], "answer"), "red");
  EXPECT_EQ(field(sel[1], "answer"), "green");
  int whole = 0, rejected_alone = 0;
  for (const Json& s : trace_events("state")) {
    if (field(s, "state") == "VERIFYING" && field(s, "run") == "whole") ++whole;
    if (field(s, "state") == "REJECTED" && field(s, "run") == "selected") ++rejected_alone;
  }
  EXPECT_EQ(whole, 1) << "only the second proposal ran the whole suite";
  EXPECT_EQ(rejected_alone, 1);
  EXPECT_NE(r.out.find("red on the failing tests alone"), std::string::npos) << r.out;
}

// Uncommitted changes: the red measurement was of the work tree, not of
// HEAD's commit, so before the search the failing test runs alone at
// HEAD's commit; red there, the steps ask it alone as before. When the
// uncommitted change is what broke it, bisect blames no commit.
TEST_F(FailingFirstRun, WithUncommittedChangesHeadsCommitIsAskedAloneFirst) {
  write(repo, "calc.py", kCalc);
  write(repo, "tests/test_calc.py", calc_tests(5));
  configure(pytest(), {"bisect"});
  bless();
  ordinary(2, "before");
  write(repo, "calc.py", kCalcBroken);
  const std::string culprit = commit_all(repo, "mul: a faster path");
  ordinary(2, "after");
  write(repo, "notes/after0.txt", "edited, not committed\n");

  CliRun r = run_phoenix(repo, {"run", "--explain", "--allow-dirty"}, 300);
  std::vector<Json> p = proposals("bisect");
  ASSERT_EQ(p.size(), 1u) << r.out;
  std::string detail = field(p[0], "detail").get<std::string>();
  EXPECT_NE(detail.find("culprit " + culprit.substr(0, 7)), std::string::npos) << detail;
  EXPECT_EQ(field(p[0], "selected_runs"), field(p[0], "check_runs")) << detail;
  EXPECT_EQ(read(repo + "/notes/after0.txt"), "edited, not committed\n");

  // Committed work green; the break is uncommitted.
  write(repo, "calc.py", kCalc);
  write(repo, "notes/after0.txt", "after 0\n");
  commit_all(repo, "mul: back");
  ASSERT_EQ(run_phoenix(repo, {"run"}, 120).code, 0);
  ordinary(2, "later");
  write(repo, "calc.py", kCalcBroken);
  r = run_phoenix(repo, {"run", "--explain", "--allow-dirty", "--fixer", "bisect"}, 300);
  p = proposals("bisect");
  ASSERT_EQ(p.size(), 2u) << r.out;
  detail = field(p[1], "detail").get<std::string>();
  EXPECT_NE(detail.find("the failure comes from uncommitted changes"), std::string::npos) << detail;
  EXPECT_EQ(field(p[1], "check_runs"), 2) << "alone, then whole, at HEAD's commit: " << detail;
  EXPECT_EQ(field(p[1], "selected_runs"), 1) << detail;
  EXPECT_EQ(read(repo + "/calc.py"), kCalcBroken) << "the user's uncommitted work stays";
}

// Order dependence: the failing test passes alone everywhere (it fails
// only after another test warmed a cache). Every step green alone ends the
// search at HEAD, where the test alone is not red either: bisect searches
// again with the whole check at every step, and heals.
TEST_F(FailingFirstRun, AFailureThatNeedsTheSuiteIsBisectedWithTheWholeCheck) {
  write(repo, "lib.py", "WARM = False\ndef warm():\n    global WARM\n    WARM = True\ndef value():\n    return 1\n");
  const std::string head =
      "import os, sys\nsys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\nimport lib\n";
  write(repo, "tests/test_a.py", head + "def test_warm():\n    lib.warm()\n");
  write(repo, "tests/test_b.py", head + "def test_value():\n    assert lib.value() == 1\n");
  configure(pytest(), {"bisect"});
  bless();
  ordinary(2, "before");
  write(repo, "lib.py",
        "WARM = False\ndef warm():\n    global WARM\n    WARM = True\ndef value():\n    return 2 if WARM else 1\n");
  commit_all(repo, "lib: a cached path");
  ordinary(3, "after");

  CliRun r = run_phoenix(repo, {"run", "--explain"}, 300);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  const std::vector<Json> p = proposals("bisect");
  ASSERT_EQ(p.size(), 1u);
  const std::string detail = field(p[0], "detail").get<std::string>();
  EXPECT_NE(detail.find("culprit"), std::string::npos) << detail;
  // The steps alone (all green), HEAD alone, then every step whole.
  const int selected = field(p[0], "selected_runs").get<int>(), runs = field(p[0], "check_runs").get<int>();
  EXPECT_GE(selected, 3) << detail;
  EXPECT_GE(runs - selected, 2) << detail;
  EXPECT_NE(r.out.find("the failing tests alone mislead (the failing tests alone are not red at HEAD"),
            std::string::npos)
      << r.out;
  EXPECT_NE(read(repo + "/lib.py").find("return 1"), std::string::npos);
}

// A test that needs another: it fails alone everywhere, known-good too,
// and passes after the test that sets it up. Its failing alone at
// known-good (which passed the whole check) sends bisect to the whole
// check, and the heal verifies with the whole check only: asked alone, the
// revert would be rejected.
TEST_F(FailingFirstRun, ATestThatNeedsAnotherIsBisectedAndVerifiedWhole) {
  write(repo, "lib.py", "READY = False\ndef value():\n    return 1\n");
  const std::string head =
      "import os, sys\nsys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\nimport lib\n";
  write(repo, "tests/test_a.py", head + "def test_setup():\n    lib.READY = True\n");
  write(repo, "tests/test_b.py", head + "def test_value():\n    assert lib.READY and lib.value() == 1\n");
  configure(pytest(), {"bisect"});
  bless();
  ordinary(2, "before");
  write(repo, "lib.py", "READY = False\ndef value():\n    return 2 if READY else 1\n");
  const std::string culprit = commit_all(repo, "lib: a ready path");
  ordinary(1, "after");

  CliRun r = run_phoenix(repo, {"run", "--explain"}, 300);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  const std::vector<Json> p = proposals("bisect");
  ASSERT_EQ(p.size(), 1u);
  const std::string detail = field(p[0], "detail").get<std::string>();
  EXPECT_NE(detail.find("culprit " + culprit.substr(0, 7)), std::string::npos) << detail;
  EXPECT_NE(r.out.find("verifying the proposal of bisect with the whole check: the failing tests alone mislead "
                       "(the failing tests alone are red at known-good"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(trace_events("verify_selected").empty());
  EXPECT_NE(read(repo + "/lib.py").find("return 1"), std::string::npos);
}

// A culprit named by the failing test alone whose revert the whole suite
// rejects: the test fails alone only since a later, innocent commit (it
// warms the cache at import); the real culprit broke it in the suite's
// company. Bisect asks the range again with the whole check and heals.
TEST_F(FailingFirstRun, ARevertTheWholeCheckRejectsMakesBisectSearchAgainWhole) {
  write(repo, "settings.py", "WARM_AT_IMPORT = False\n");
  const std::string lib =
      "import settings\nWARM = settings.WARM_AT_IMPORT\ndef warm():\n    global WARM\n    WARM = True\n";
  write(repo, "lib.py", lib + "def value():\n    return 1\n");
  const std::string head =
      "import os, sys\nsys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\nimport lib\n";
  write(repo, "tests/test_a.py", head + "def test_warm():\n    lib.warm()\n");
  write(repo, "tests/test_b.py", head + "def test_value():\n    assert lib.value() == 1\n");
  configure(pytest(), {"bisect"});
  bless();
  ordinary(1, "before");
  write(repo, "lib.py", lib + "def value():\n    return 2 if WARM else 1\n");
  const std::string culprit = commit_all(repo, "lib: a cached path");
  ordinary(2, "middle");
  write(repo, "settings.py", "WARM_AT_IMPORT = True\n");
  const std::string innocent = commit_all(repo, "settings: warm at import");
  ordinary(2, "after");

  CliRun r = run_phoenix(repo, {"run", "--explain"}, 300);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  const std::vector<Json> p = proposals("bisect");
  ASSERT_EQ(p.size(), 2u) << read(repo + "/.phoenix/trace.jsonl");
  EXPECT_NE(field(p[0], "detail").get<std::string>().find("culprit " + innocent.substr(0, 7)), std::string::npos)
      << field(p[0], "detail");
  const std::string second = field(p[1], "detail").get<std::string>();
  EXPECT_NE(second.find("asked again with the whole check"), std::string::npos) << second;
  EXPECT_NE(second.find("culprit " + culprit.substr(0, 7)), std::string::npos) << second;
  EXPECT_EQ(field(p[1], "selected_runs"), 0) << second;
  // The revert of the real culprit, on top of the innocent commit.
  EXPECT_EQ(read(repo + "/settings.py"), "WARM_AT_IMPORT = True\n");
  EXPECT_NE(read(repo + "/lib.py").find("return 1"), std::string::npos);
}

// A runner Phoenix cannot select with (a shell runs pytest) and a check
// that says "select_failing": false: every step asks the whole check, and
// --explain says why.
TEST_F(FailingFirstRun, NoSelectionMeansTheWholeCheckAsBefore) {
  write(repo, "calc.py", kCalc);
  write(repo, "tests/test_calc.py", calc_tests(3));
  for (const bool shell : {true, false}) {
    SCOPED_TRACE(shell ? "a shell runs pytest" : "select_failing false");
    if (shell) configure({"sh", "-c", util::join_argv(pytest())}, {"bisect"});
    else configure(pytest(), {"bisect"}, {{"select_failing", false}});
    write(repo, "calc.py", kCalc);
    bless();
    ordinary(2, shell ? "s" : "f");
    write(repo, "calc.py", kCalcBroken);
    commit_all(repo, "mul: a faster path");
    CliRun r = run_phoenix(repo, {"run", "--explain"}, 300);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
    const std::vector<Json> p = proposals("bisect");
    ASSERT_FALSE(p.empty());
    EXPECT_EQ(field(p.back(), "selected_runs"), 0);
    EXPECT_NE(field(p.back(), "detail").get<std::string>().find("of the whole check"), std::string::npos);
    EXPECT_NE(r.out.find(shell ? "verifying the proposal of bisect with the whole check: "
                               : "verifying the proposal of bisect with the whole check: \"select_failing\": false"),
              std::string::npos)
        << r.out;
    fs::remove(repo + "/.phoenix/trace.jsonl");
  }
}

// CTest: the steps run `ctest -R '^(calc\.mul)$'` after the build (the
// check's "select" command), the revert is verified by the whole check.
TEST_F(FailingFirstRun, BisectAsksTheCTestFailingTestAlone) {
  for (const char* tool : {"cmake", "ctest", "cc"})
    if (util::find_executable(tool).empty()) GTEST_SKIP() << tool << " is not installed";
  write(repo, ".gitignore", "build/\n.phoenix/\nincidents/\n");
  write(repo, "CMakeLists.txt",
        "cmake_minimum_required(VERSION 3.16)\nproject(calc C)\nadd_executable(calc_test calc_test.c calc.c)\n"
        "enable_testing()\nadd_test(NAME calc.mul COMMAND calc_test mul)\n"
        "foreach(i RANGE 1 8)\n  add_test(NAME calc.add_${i} COMMAND calc_test add)\nendforeach()\n");
  write(repo, "calc.c", "int mul(int a, int b) { return a * b; }\nint add(int a, int b) { return a + b; }\n");
  write(repo, "calc_test.c",
        "#include <string.h>\nint mul(int, int);\nint add(int, int);\n"
        "int main(int argc, char** argv) {\n"
        "  if (argc > 1 && strcmp(argv[1], \"mul\") == 0) return mul(3, 4) == 12 ? 0 : 1;\n"
        "  return add(2, 2) == 4 ? 0 : 1;\n}\n");
  const std::string build = "cmake --build build >/dev/null && exec ctest --test-dir build --output-on-failure";
  Json cfg = {{"setup", {{{"run", {"cmake", "-S", ".", "-B", "build"}}, {"inputs", {"CMakeLists.txt"}}}}},
              {"checks",
               {{{"id", "unit"},
                 {"kind", "command_exit"},
                 {"target", {"sh", "-c", build}},
                 {"select", {{"runner", "ctest"}, {"command", {"sh", "-c", build + " \"$@\"", "sh"}}}},
                 {"editable", {"*.c"}},
                 {"timeout_s", 120}}}},
              {"fixers", {"bisect"}},
              {"bisect", {{"parallel", 1}}},
              {"flaky_reruns", 0}};
  write(repo, "phoenix.json", cfg.dump(2));
  ASSERT_EQ(run({"cmake", "-S", ".", "-B", "build"}, repo, {}, 120).exit_code, 0);
  bless();
  ordinary(2, "before");
  write(repo, "calc.c",
        "int mul(int a, int b) { return a * b + (a == 3); }\nint add(int a, int b) { return a + b; }\n");
  const std::string culprit = commit_all(repo, "mul: a faster path");
  ordinary(3, "after");

  CliRun r = run_phoenix(repo, {"run", "--explain"}, 300);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  const std::vector<Json> p = proposals("bisect");
  ASSERT_EQ(p.size(), 1u);
  const std::string detail = field(p[0], "detail").get<std::string>();
  EXPECT_NE(detail.find("culprit " + culprit.substr(0, 7)), std::string::npos) << detail;
  EXPECT_EQ(field(p[0], "selected_runs"), field(p[0], "check_runs")) << detail;
  const Json argv = field(p[0], "selected_argv");
  EXPECT_EQ(argv[argv.size() - 1], "^(calc\\.mul)$") << argv.dump();
  EXPECT_EQ(read(repo + "/calc.c"),
            "int mul(int a, int b) { return a * b; }\nint add(int a, int b) { return a + b; }\n");
}

// A GoogleTest binary (told by its output): the steps run it with
// --gtest_filter=Calc.Mul after the build.
TEST_F(FailingFirstRun, BisectAsksTheGoogleTestFailingTestAlone) {
  for (const char* tool : {"cmake", "c++"})
    if (util::find_executable(tool).empty()) GTEST_SKIP() << tool << " is not installed";
  if (!fs::exists("/usr/lib/x86_64-linux-gnu/libgtest.a") && !fs::exists("/usr/lib/libgtest.a"))
    GTEST_SKIP() << "no GoogleTest library (libgtest-dev)";
  write(repo, ".gitignore", "build/\n.phoenix/\nincidents/\n");
  write(repo, "CMakeLists.txt",
        "cmake_minimum_required(VERSION 3.16)\nproject(calc CXX)\nfind_package(GTest REQUIRED)\n"
        "add_library(calc calc.cc)\nadd_executable(calc_test calc_test.cc)\n"
        "target_link_libraries(calc_test calc GTest::gtest_main)\n");
  write(repo, "calc.cc", "int mul(int a, int b) { return a * b; }\n");
  std::string t = "#include <gtest/gtest.h>\nint mul(int, int);\nTEST(Calc, Mul) { EXPECT_EQ(mul(3, 4), 12); }\n";
  for (int i = 0; i < 6; ++i) t += "TEST(Calc, Other" + std::to_string(i) + ") { EXPECT_EQ(mul(1, 1), 1); }\n";
  write(repo, "calc_test.cc", t);
  const std::string build = "cmake --build build >/dev/null && exec build/calc_test";
  Json cfg = {{"setup", {{{"run", {"cmake", "-S", ".", "-B", "build"}}, {"inputs", {"CMakeLists.txt"}}}}},
              {"checks",
               {{{"id", "unit"},
                 {"kind", "command_exit"},
                 {"target", {"sh", "-c", build}},
                 {"select", {{"runner", "gtest"}, {"command", {"sh", "-c", build + " \"$@\"", "sh"}}}},
                 {"editable", {"calc.cc"}},
                 {"timeout_s", 240}}}},
              {"fixers", {"bisect"}},
              {"bisect", {{"parallel", 1}}},
              {"flaky_reruns", 0}};
  write(repo, "phoenix.json", cfg.dump(2));
  ASSERT_EQ(run({"cmake", "-S", ".", "-B", "build"}, repo, {}, 120).exit_code, 0);
  bless();
  ordinary(1, "before");
  write(repo, "calc.cc", "int mul(int a, int b) { return a * b + (a == 3); }\n");
  const std::string culprit = commit_all(repo, "mul: a faster path");
  ordinary(2, "after");

  CliRun r = run_phoenix(repo, {"run", "--explain"}, 600);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  const std::vector<Json> p = proposals("bisect");
  ASSERT_EQ(p.size(), 1u);
  const std::string detail = field(p[0], "detail").get<std::string>();
  EXPECT_NE(detail.find("culprit " + culprit.substr(0, 7)), std::string::npos) << detail;
  EXPECT_EQ(field(p[0], "selected_runs"), field(p[0], "check_runs")) << detail;
  EXPECT_EQ(field(p[0], "selected_argv").back(), "--gtest_filter=Calc.Mul") << field(p[0], "selected_argv").dump();
  EXPECT_EQ(read(repo + "/calc.cc"), "int mul(int a, int b) { return a * b; }\n");
}

// vitest (from the npm registry or its cache): the steps run the failing
// test's file with -t; a harness proposal that leaves it red is rejected
// on it alone.
TEST_F(FailingFirstRun, BisectAndAHealAskTheVitestFailingTestAlone) {
  if (util::find_executable("npm").empty() || util::find_executable("npx").empty()) GTEST_SKIP() << "no npm";
  const std::string mods = tmp / "vitest";
  write(mods, "package.json", "{\"name\":\"v\",\"private\":true,\"type\":\"module\"}\n");
  const util::ProcessResult install =
      run({"npm", "install", "--prefer-offline", "--no-audit", "--no-fund", "vitest@4.1.12"}, mods, {}, 240);
  if (install.exit_code != 0) GTEST_SKIP() << "vitest could not be installed here: " << install.output;
  write(repo, ".gitignore", ".phoenix/\nincidents/\nnode_modules\n");
  write(repo, "package.json", "{\"name\":\"calc\",\"private\":true,\"type\":\"module\"}\n");
  write(repo, "calc.js", "export const mul = (a, b) => a * b;\n");
  std::string t =
      "import { describe, it, expect } from 'vitest';\nimport { mul } from './calc.js';\n"
      "describe('calc', () => {\n  it('mul (3*4)', () => { expect(mul(3, 4)).toBe(12); });\n";
  for (int i = 0; i < 5; ++i) t += "  it('one " + std::to_string(i) + "', () => { expect(mul(1, 1)).toBe(1); });\n";
  write(repo, "calc.test.js", t + "});\n");
  fs::create_symlink(mods + "/node_modules", repo + "/node_modules");
  const std::string counter = tmp / "proposals";
  const std::string script = "n=$(cat '" + counter + "' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '" + counter +
                             "'; if [ $n -eq 1 ]; then echo 'export const x = 1;' > extra.js; else "
                             "echo 'export const mul = (a, b) => a * b;' > calc.js; fi";
  Json cfg = {
      {"setup", {{{"run", {"ln", "-sfn", mods + "/node_modules", "node_modules"}}, {"inputs", {"package.json"}}}}},
      {"checks",
       {{{"id", "unit"},
         {"kind", "command_exit"},
         {"target", {"npx", "vitest", "run"}},
         {"editable", {"*.js"}},
         {"timeout_s", 120}}}},
      {"fixers", {"bisect"}},
      {"bisect", {{"parallel", 1}}},
      {"flaky_reruns", 0},
      {"harness", {{"command", {"sh", "-c", script}}, {"timeout_s", 60}}}};
  write(repo, "phoenix.json", cfg.dump(2));
  bless();
  ordinary(1, "before");
  write(repo, "calc.js", "export const mul = (a, b) => a * b + (a === 3 ? 1 : 0);\n");
  const std::string culprit = commit_all(repo, "mul: a faster path");
  ordinary(2, "after");

  CliRun r = run_phoenix(repo, {"run", "--explain"}, 300);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  const std::vector<Json> p = proposals("bisect");
  ASSERT_EQ(p.size(), 1u);
  const std::string detail = field(p[0], "detail").get<std::string>();
  EXPECT_NE(detail.find("culprit " + culprit.substr(0, 7)), std::string::npos) << detail;
  EXPECT_EQ(field(p[0], "selected_runs"), field(p[0], "check_runs")) << detail;
  EXPECT_EQ(field(p[0], "selected_argv"),
            Json({"npx", "vitest", "run", "calc.test.js", "-t", "^(calc mul \\(3\\*4\\))$"}));

  // The harness: its first proposal leaves the test red and is rejected on
  // it alone; the second heals.
  write(repo, "calc.js", "export const mul = (a, b) => a * b + (a === 3 ? 1 : 0);\n");
  commit_all(repo, "mul: the faster path again");
  r = run_phoenix(repo, {"run", "--explain", "--fixer", "harness"}, 300);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("red on the failing tests alone"), std::string::npos) << r.out;
  const std::vector<Json> sel = trace_events("verify_selected");
  ASSERT_EQ(sel.size(), 2u);
  EXPECT_EQ(field(sel[0], "answer"), "red");
  EXPECT_EQ(field(sel[1], "answer"), "green");
}

TEST_F(FailingFirstRun, SelectFailingOfAnotherTypeOrMisspeltIsAConfigurationError) {
  write(repo, "calc.py", kCalc);
  configure(pytest(), {"bisect"}, {{"select_failing", "no"}});
  commit_all(repo, "initial");
  CliRun r = run_phoenix(repo, {"sense", "unit"});
  EXPECT_EQ(r.code, 78) << r.out;
  EXPECT_NE(r.out.find("checks[0].select_failing: must be true or false, not a string"), std::string::npos) << r.out;
  configure(pytest(), {"bisect"}, {{"select_failng", false}});
  r = run_phoenix(repo, {"sense", "unit"});
  EXPECT_EQ(r.code, 78) << r.out;
  EXPECT_NE(r.out.find("select_failing"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace phoenix::test
