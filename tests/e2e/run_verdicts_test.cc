// `phoenix run` end to end on a real pytest project: a deterministic flake
// (fails every third run of itself, through a counter file) is run again
// alone, let by and put in the flake ledger; a real regression beside it is
// healed on its own signature, and the flake never makes it another issue.
#include <gtest/gtest.h>

#include <string>

#include "e2e/real_projects.h"
#include "test_util.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

using util::Json;

const char* kFlaky = "tests/test_calc.py::test_flaky_every_third_run";

class RunVerdicts : public ::testing::Test {
 protected:
  void SetUp() override {
    py = python_with_pytest();
    if (py.empty()) GTEST_SKIP() << "no python3 with pytest";
    repo = init_repo(tmp / "repo");
    write(repo, ".gitignore", ".phoenix/\n__pycache__/\n");
    write(repo, "calc.py", "def mul(a, b):\n    return a * b\n");
    write(repo, "tests/test_calc.py",
          "import os, sys\n"
          "sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
          "import calc\n"
          "def test_mul():\n    assert calc.mul(3, 4) == 12\n" +
              pytest_flaky_every_third_run("'" + tmp / "flake-counter" + "'"));
    Json cfg = {{"checks", Json::array({{{"id", "unit"},
                                         {"kind", "command_exit"},
                                         {"target", {py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"}},
                                         {"editable", {"calc.py"}},
                                         {"timeout_s", 120}}})},
                {"fixers", {"harness"}},
                {"harness", {{"command", {"sh", "-c", "sed -i 's/a + b/a * b/' calc.py"}}, {"timeout_s", 60}}}};
    write(repo, "phoenix.json", cfg.dump(2));
    commit_all(repo, "initial");
  }

  ScopedTempDir tmp;
  std::string py, repo;
};

TEST_F(RunVerdicts, AFlakeIsLetByAndARegressionBesideItIsHealed) {
  // Run 3 of the flake: red, then green alone: let by, nothing healed.
  write(tmp.path(), "flake-counter", "2");
  CliRun r = run_phoenix(repo, {"run", "--explain"}, 300);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(std::string("let by: 1 flaky (") + kFlaky + ")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict on unit: 0 new; let by: 1 flaky"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("HEALED"), std::string::npos) << r.out;
  CliRun ledger = run_phoenix(repo, {"journal", "flaky", "--json"});
  ASSERT_EQ(ledger.code, 0) << ledger.out;
  Json l = Json::parse(ledger.out);
  ASSERT_EQ(l.size(), 1u) << ledger.out;
  EXPECT_EQ(l[0]["test"], kFlaky);
  EXPECT_EQ(l[0]["runs"], 2);
  EXPECT_EQ(l[0]["failures"], 1);

  // A regression beside the flake's next failure: only the regression is
  // healed, signed by test_mul alone.
  write(repo, "calc.py", "def mul(a, b):\n    return a + b\n");
  commit_all(repo, "break mul");
  write(tmp.path(), "flake-counter", "5");
  r = run_phoenix(repo, {"run", "--explain"}, 300);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failing tests in unit: tests/test_calc.py::test_flaky_every_third_run, "
                       "tests/test_calc.py::test_mul"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("verdict on unit: 1 new; let by: 1 flaky"), std::string::npos) << r.out;
  EXPECT_EQ(read(repo + "/calc.py"), "def mul(a, b):\n    return a * b\n");
  EXPECT_EQ(Json::parse(run_phoenix(repo, {"journal", "flaky", "--json"}).out)[0]["flaky"], 2);
}

}  // namespace
}  // namespace phoenix::test
