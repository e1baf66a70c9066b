// engine/verdict.h: verdicts per test, with real runners (pytest, CTest,
// vitest) on small projects the tests write: a deterministic flake (fails
// every third run, through a counter file), a test that needs the network
// (connects to 192.0.2.1, TEST-NET-1, which no route reaches), a real
// regression beside both, and a crashed suite that names no test.
#include "engine/verdict.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "checks/check.h"
#include "checks/measured.h"
#include "e2e/real_projects.h"
#include "engine/selection.h"
#include "engine/signature.h"
#include "journal/journal.h"
#include "test_util.h"

namespace phoenix::engine {
namespace {

using Names = std::vector<std::string>;

checks::CheckSpec command(const std::vector<std::string>& argv) {
  util::Json j{{"id", "unit"}, {"kind", "command_exit"}, {"target", argv}};
  return checks::parse_check(j, "test", false);
}

// The pytest project: the flake fails on every third run of itself (the
// counter file counts its runs), the network test always fails here, and
// test_mul fails once `broken` is written.
void write_pytest_project(const std::string& dir) {
  test::write(dir, "calc.py",
              "import os\n"
              "def mul(a, b):\n    return a + b if os.path.exists(os.path.join(os.path.dirname(__file__), 'broken')) "
              "else a * b\n");
  test::write(dir, "tests/test_calc.py",
              "import os, socket, pytest, sys\n"
              "sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))\n"
              "import calc\n"
              "HERE = os.path.dirname(os.path.dirname(__file__))\n"
              "def test_mul():\n    assert calc.mul(3, 4) == 12\n" +
                  test::pytest_flaky_every_third_run("os.path.join(HERE, 'counter.txt')") +
                  test::pytest_needs_network() +
                  "@pytest.mark.parametrize('word', ['a b', 'c'])\n"
                  "def test_words(word):\n    assert word\n");
}

class PytestVerdict : public ::testing::Test {
 protected:
  void SetUp() override {
    py = test::python_with_pytest();
    if (py.empty()) GTEST_SKIP() << "no python with pytest";
    write_pytest_project(tmp.path());
    check = command({py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"});
  }
  checks::SenseResult sense(const checks::CheckSpec& c) {
    ++runs;
    argvs.push_back(c.argv);
    return checks::sense(c, tmp.path());
  }
  JudgeOptions options(int reruns) {
    JudgeOptions o;
    o.reruns = reruns;
    o.run = [this](const checks::CheckSpec& c) { return sense(c); };
    return o;
  }
  test::ScopedTempDir tmp;
  std::string py;
  checks::CheckSpec check;
  int runs = 0;
  std::vector<std::vector<std::string>> argvs;
};

TEST_F(PytestVerdict, RegressionBesideAFlakeAndAPreExistingFailure) {
  test::write(tmp.path(), "counter.txt", "2");  // the next run of the flake is its third
  test::write(tmp.path(), "broken", "");
  const checks::SenseResult first = checks::sense(check, tmp.path());
  ASSERT_FALSE(first.ok);
  JudgeOptions o = options(2);
  o.reference = FailingSet{false, {"tests/test_calc.py::test_fetch_needs_network"}, ""};
  o.reference_how = "origin/main";
  const Verdict v = judge(check, first, o);
  EXPECT_EQ(v.failing, (Names{"tests/test_calc.py::test_fetch_needs_network",
                              "tests/test_calc.py::test_flaky_every_third_run", "tests/test_calc.py::test_mul"}))
      << first.output;
  EXPECT_EQ(v.new_failures, Names{"tests/test_calc.py::test_mul"});
  EXPECT_EQ(v.pre_existing, Names{"tests/test_calc.py::test_fetch_needs_network"});
  EXPECT_EQ(v.flaky, Names{"tests/test_calc.py::test_flaky_every_third_run"});
  EXPECT_TRUE(v.counts());
  EXPECT_EQ(v.reference, "origin/main");
  // The regression failed again on both re-runs; the flake passed the first.
  EXPECT_EQ(v.reruns, 2);
  ASSERT_EQ(argvs.size(), 2u);
  EXPECT_EQ(argvs[0].back(), "tests/test_calc.py::test_mul");
  EXPECT_EQ(argvs[0][argvs[0].size() - 2], "tests/test_calc.py::test_flaky_every_third_run");
  EXPECT_EQ(argvs[1].back(), "tests/test_calc.py::test_mul") << "only what is still failing runs again";
  EXPECT_EQ(v.runs_to_pass.at("tests/test_calc.py::test_flaky_every_third_run"), 2);
  // The signature is the regression's alone: the same regression beside
  // another flake or pre-existing test is the same issue.
  EXPECT_EQ(v.signature, issue_signature_for("unit", first.output, {"tests/test_calc.py::test_mul"}));
  EXPECT_NE(v.let_by().find("1 pre-existing (tests/test_calc.py::test_fetch_needs_network)"), std::string::npos)
      << v.let_by();
}

TEST_F(PytestVerdict, OnlyAFlakeAndAPreExistingFailureDoNotCount) {
  test::write(tmp.path(), "counter.txt", "2");
  const checks::SenseResult first = checks::sense(check, tmp.path());
  ASSERT_FALSE(first.ok);
  JudgeOptions o = options(2);
  o.reference =
      FailingSet{false, {"tests/test_calc.py::test_fetch_needs_network", "tests/test_calc.py::test_gone"}, ""};
  const Verdict v = judge(check, first, o);
  EXPECT_FALSE(v.counts()) << v.to_json().dump();
  EXPECT_EQ(v.reruns, 1);
  EXPECT_TRUE(v.signature.empty());
  // A test failing at the reference and passing here was fixed.
  EXPECT_EQ(v.fixed, Names{"tests/test_calc.py::test_gone"});
}

TEST_F(PytestVerdict, WithoutAReferenceTheNetworkTestIsNew) {
  const checks::SenseResult first = checks::sense(check, tmp.path());
  ASSERT_FALSE(first.ok);
  const Verdict v = judge(check, first, options(2));
  EXPECT_EQ(v.new_failures, Names{"tests/test_calc.py::test_fetch_needs_network"});
  EXPECT_TRUE(v.counts());
  EXPECT_EQ(v.reruns, 2);
  EXPECT_EQ(v.reference, "");
}

TEST_F(PytestVerdict, ZeroRerunsJudgesByTheReferenceAlone) {
  test::write(tmp.path(), "counter.txt", "2");
  const checks::SenseResult first = checks::sense(check, tmp.path());
  const Verdict v = judge(check, first, options(0));
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(v.flaky.empty());
  EXPECT_EQ(v.new_failures.size(), 2u);
}

TEST_F(PytestVerdict, ReferenceMeasuredOnlyForTheNewFailures) {
  const checks::SenseResult first = checks::sense(check, tmp.path());
  ASSERT_FALSE(first.ok);
  Verdict v = first_verdict(check, first);
  measure_reference(v, check, first, [this](const checks::CheckSpec& c) { return sense(c); });
  EXPECT_EQ(v.pre_existing, Names{"tests/test_calc.py::test_fetch_needs_network"});
  EXPECT_TRUE(v.new_failures.empty());
  EXPECT_EQ(v.reference, "measured");
  ASSERT_EQ(argvs.size(), 1u);
  EXPECT_EQ(argvs[0].back(), "tests/test_calc.py::test_fetch_needs_network");
}

TEST(Verdict, CrashedSuiteIsPreExistingOnlyWhenTheReferenceCrashedTheSameWayAndIsNotRunAgain) {
  test::ScopedTempDir tmp;
  const checks::CheckSpec crash = command({"sh", "-c", "echo 'Segmentation fault (core dumped)'; exit 139"});
  const checks::SenseResult first = checks::sense(crash, tmp.path());
  ASSERT_FALSE(first.ok);
  Verdict v = first_verdict(crash, first);
  EXPECT_TRUE(v.whole);
  EXPECT_EQ(v.failing, Names{"unit"});
  // The reference failed otherwise (named tests, or another crash): new.
  against(v, FailingSet{false, {"a.py::t"}, ""}, "ref");
  EXPECT_TRUE(v.counts());
  against(v, FailingSet{false, {}, "another crash"}, "ref");
  EXPECT_TRUE(v.counts());
  const FailingSet same = FailingSet::of("unit", checks::sense(crash, tmp.path()));
  EXPECT_FALSE(same.named());
  against(v, same, "ref");
  EXPECT_FALSE(v.counts());
  EXPECT_EQ(v.pre_existing, Names{"unit"});
  // A whole check is not run again: its re-run would cost the whole suite.
  Verdict w = first_verdict(crash, first);
  int runs = 0;
  rerun(w, crash, first, 3, [&](const checks::CheckSpec& c) {
    ++runs;
    return checks::sense(c, tmp.path());
  });
  EXPECT_EQ(runs, 0);
  EXPECT_TRUE(w.counts());
}

TEST(Verdict, RerunThatCrashesProvesNothing) {
  test::ScopedTempDir tmp;
  const checks::CheckSpec c = command({"pytest", "-q"});
  checks::SenseResult first;
  first.id = "unit";
  first.output = "FAILED tests/test_a.py::test_x - assert 0\n1 failed in 0.1s\n";
  Verdict v = first_verdict(c, first);
  v.red = true;
  rerun(v, c, first, 2, [&](const checks::CheckSpec&) {
    checks::SenseResult r;
    r.output = "Segmentation fault\n";
    return r;
  });
  EXPECT_EQ(v.new_failures, Names{"tests/test_a.py::test_x"});
  // A selection that ran nothing (exit 0, no test passed) proves nothing
  // either: the whole check runs instead.
  Verdict w = first_verdict(c, first);
  w.red = true;
  std::vector<std::vector<std::string>> seen;
  rerun(w, c, first, 2, [&](const checks::CheckSpec& spec) {
    seen.push_back(spec.argv);
    checks::SenseResult r;
    r.ok = true;
    r.output = seen.size() == 1 ? "no tests ran in 0.01s\n" : "3 passed in 0.02s\n";
    return r;
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].back(), "tests/test_a.py::test_x");
  EXPECT_EQ(seen[1], c.argv);
  EXPECT_EQ(w.flaky, Names{"tests/test_a.py::test_x"});
}

// A check whose failing tests its runner cannot select (a shell target
// without "select") runs again whole, once, whatever flaky_reruns says.
TEST(Verdict, AnUnselectableCheckRunsAgainWholeOnce) {
  test::ScopedTempDir tmp;
  const checks::CheckSpec c = command({"sh", "-c", "echo 'FAILED tests/test_a.py::test_x - assert 0'; exit 1"});
  const checks::SenseResult first = checks::sense(c, tmp.path());
  Verdict v = first_verdict(c, first);
  ASSERT_EQ(v.new_failures, Names{"tests/test_a.py::test_x"});
  int runs = 0;
  rerun(v, c, first, 3, [&](const checks::CheckSpec& spec) {
    ++runs;
    EXPECT_EQ(spec.argv, c.argv);
    return checks::sense(spec, tmp.path());
  });
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(v.counts());
}

TEST(Verdict, FlakesGoToTheLedger) {
  test::ScopedTempDir tmp;
  Verdict v;
  v.check = "unit";
  v.red = true;
  v.flaky = {"tests/t.py::test_a", "tests/t.py::test_p[a b]"};
  v.runs_to_pass = {{"tests/t.py::test_a", 3}};
  const std::string path = tmp / "journal.sqlite";
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& w) { warnings.push_back(w); };
  note_flakes(path, v, std::string(40, 'a'), warn);
  note_flakes(path, v, std::string(40, 'b'), warn);
  note_flakes(path, v, std::string(40, 'b'), warn);
  EXPECT_TRUE(warnings.empty());
  const std::vector<journal::Flake> f = journal::Journal::open(path).flakes();
  ASSERT_EQ(f.size(), 2u);
  for (const auto& x : f) {
    EXPECT_EQ(x.check, "unit");
    EXPECT_EQ(x.flaky, 3);
    EXPECT_EQ(x.trees, 2) << x.test;
    EXPECT_GT(x.last_seen, 0);
  }
  const auto a =
      std::find_if(f.begin(), f.end(), [](const journal::Flake& x) { return x.test == "tests/t.py::test_a"; });
  ASSERT_NE(a, f.end());
  EXPECT_EQ(a->runs, 9);
  EXPECT_EQ(a->failures, 6);
  // A journal that cannot be written costs a warning, nothing else.
  test::write(tmp.path(), "bad.sqlite",
              "not a database at all, not even close to one; padding padding padding "
              "padding padding padding padding padding");
  note_flakes(tmp / "bad.sqlite", v, "", warn);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("the flake ledger was not written"), std::string::npos) << warnings[0];
}

TEST(Verdict, StoreKeepsTheFailingSetButNeverServesARed) {
  test::ScopedTempDir tmp;
  const std::string tree(40, 'c');
  const checks::CheckSpec c = command({"pytest"});
  checks::Measurement m{checks::measure_key(c, tree, ""), {}, 1000, "hook", -1, "", {"a.py::t"}, "sig"};
  m.result.id = "unit";
  m.result.ok = false;
  m.result.signal = "exit=1";
  checks::record_measurement(tmp.path(), m);
  EXPECT_FALSE(checks::find_measurement(tmp.path(), m.key)) << "a red is never served as a verdict";
  const auto ref = checks::find_reference(tmp.path(), tree, c.raw.dump());
  ASSERT_TRUE(ref);
  EXPECT_FALSE(ref->result.ok);
  EXPECT_EQ(ref->failing, Names{"a.py::t"});
  EXPECT_EQ(ref->signature, "sig");
  EXPECT_TRUE(checks::all_measurements(tmp.path()).empty()) << "doctor and journal push see green records only";
  // A green measurement of the same key replaces it.
  m.result.ok = true;
  m.failing.clear();
  checks::record_measurement(tmp.path(), m);
  EXPECT_TRUE(checks::find_measurement(tmp.path(), m.key));
  EXPECT_TRUE(checks::find_reference(tmp.path(), tree, c.raw.dump())->result.ok);
}

// CTest: a name with a space, a network test, a flake; the whole check's
// reruns go through `ctest -R`.
TEST(Verdict, RealCTestProject) {
  if (util::find_executable("ctest").empty()) GTEST_SKIP() << "no ctest";
  test::ScopedTempDir tmp;
  test::write(tmp.path(), "CMakeLists.txt",
              "cmake_minimum_required(VERSION 3.19)\nproject(p NONE)\nenable_testing()\n"
              "add_test(NAME \"adds one\" COMMAND sh -c \"exit 0\")\n"
              "add_test(NAME fetch COMMAND sh -c \"echo 'connect: network is unreachable'; exit 1\")\n"
              "add_test(NAME \"flaky timing\" COMMAND sh -c "
              "\"n=$(cat ${CMAKE_SOURCE_DIR}/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${CMAKE_SOURCE_DIR}/n; "
              "test $((n % 3)) -ne 0\")\n");
  test::write(tmp.path(), "n", "2\n");
  ASSERT_EQ(test::run({"cmake", "-S", ".", "-B", "build"}, tmp.path()).exit_code, 0);
  const checks::CheckSpec c = command({"ctest", "--test-dir", "build", "--output-on-failure"});
  const checks::SenseResult first = checks::sense(c, tmp.path());
  ASSERT_FALSE(first.ok);
  JudgeOptions o;
  o.reruns = 2;
  std::vector<std::vector<std::string>> seen;
  o.run = [&](const checks::CheckSpec& spec) {
    seen.push_back(spec.argv);
    return checks::sense(spec, tmp.path());
  };
  const Verdict v = judge(c, first, o);
  EXPECT_EQ(v.flaky, Names{"flaky timing"}) << first.output;
  EXPECT_EQ(v.new_failures, Names{"fetch"});
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen[0].back(), "^(fetch|flaky timing)$");
}

// vitest, from the npm registry (or its cache): "file > suite > name" ids,
// -t with the file.
TEST(Verdict, RealVitestProject) {
  if (util::find_executable("npm").empty()) GTEST_SKIP() << "no npm";
  test::ScopedTempDir tmp;
  test::write(tmp.path(), "package.json", "{\"name\":\"v\",\"private\":true,\"type\":\"module\"}\n");
  const util::ProcessResult install = test::run(
      {"npm", "install", "--prefer-offline", "--no-audit", "--no-fund", "vitest@4.1.12"}, tmp.path(), {}, 240);
  if (install.exit_code != 0) GTEST_SKIP() << "vitest could not be installed here: " << install.output;
  test::write(tmp.path(), "calc.test.js",
              "import { describe, it, expect } from 'vitest';\n"
              "import fs from 'node:fs';\n"
              "describe('calc', () => {\n"
              "  it('adds (2+3)', () => { expect(2 + 3).toBe(5); });\n"
              "  it('is flaky', () => {\n"
              "    const n = (fs.existsSync('n') ? Number(fs.readFileSync('n', 'utf8')) : 0) + 1;\n"
              "    fs.writeFileSync('n', String(n));\n"
              "    expect(n % 3).not.toBe(0);\n"
              "  });\n"
              "  it('fetches', () => { expect('offline').toBe('online'); });\n"
              "});\n");
  test::write(tmp.path(), "n", "2");
  const checks::CheckSpec c = command({"npx", "vitest", "run"});
  const checks::SenseResult first = checks::sense(c, tmp.path());
  ASSERT_FALSE(first.ok);
  JudgeOptions o;
  o.reruns = 2;
  std::vector<std::vector<std::string>> seen;
  o.run = [&](const checks::CheckSpec& spec) {
    seen.push_back(spec.argv);
    return checks::sense(spec, tmp.path());
  };
  const Verdict v = judge(c, first, o);
  EXPECT_EQ(v.flaky, Names{"calc.test.js > calc > is flaky"}) << first.output;
  EXPECT_EQ(v.new_failures, Names{"calc.test.js > calc > fetches"});
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0],
            (std::vector<std::string>{"npx", "vitest", "run", "calc.test.js", "-t", "^(calc fetches|calc is flaky)$"}));
}

}  // namespace
}  // namespace phoenix::engine
