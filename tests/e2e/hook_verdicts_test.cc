// The pre-push hook end to end against a remote whose tip already fails:
// a real pytest project with a test that needs the network (connects to
// 192.0.2.1, which no route reaches), a deterministic flake (fails every
// third run of itself, through a counter file), and real regressions. A
// push is blocked only by failures the pushed commits bring; what was red
// on the remote's tip, and what is flaky, is named and let by; a push that
// fixes one says so. Real `git push` to a bare repository, the built hook.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "e2e/real_projects.h"
#include "test_util.h"
#include "util/json.h"
#include "util/format.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

const char* kNet = "tests/test_calc.py::test_fetch_needs_network";
const char* kFlaky = "tests/test_calc.py::test_flaky_every_third_run";
const char* kMul = "tests/test_calc.py::test_mul";

class HookVerdicts : public ::testing::Test {
 protected:
  void SetUp() override {
    py = python_with_pytest();
    if (py.empty()) GTEST_SKIP() << "no python3 with pytest";
    ::setenv("PHOENIX_TREES_DIR", (tmp / "trees").c_str(), 1);
    bare = tmp / "remote.git";
    fs::create_directories(bare);
    git(bare, {"init", "-q", "--bare", "-b", "main"});
    repo = init_repo(tmp / "repo");
    write(repo, ".gitignore", ".phoenix/\n__pycache__/\n");
    write(repo, "calc.py", "def mul(a, b):\n    return a * b\n");
    write(repo, "tests/test_calc.py",
          "import os, socket, sys, pytest\n"
          "sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
          "import calc\n"
          "def test_mul():\n    assert calc.mul(3, 4) == 12\n" +
              pytest_flaky_every_third_run("'" + tmp / "flake-counter" + "'") + pytest_needs_network() +
              "@pytest.mark.parametrize('word', ['a b', 'c d'])\n"
              "def test_words(word):\n    assert ' ' in word\n");
    Json cfg = {{"checks", Json::array({{{"id", "unit"},
                                         {"kind", "command_exit"},
                                         {"target", {py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"}},
                                         {"timeout_s", 120}}})},
                {"hook", {{"mode", "verify"}}}};
    write(repo, "phoenix.json", cfg.dump(2));
    commit_all(repo, "initial: the network test already fails");
    git(repo, {"remote", "add", "origin", bare});
    // The remote's tip already fails: pushed before the hook was there.
    git(repo, {"push", "-q", "origin", "main"});
    ASSERT_EQ(run_phoenix(repo, {"hook", "install"}).code, 0);
  }
  void TearDown() override { ::unsetenv("PHOENIX_TREES_DIR"); }

  util::ProcessResult push(const std::vector<std::string>& args = {"origin", "main"}) {
    std::vector<std::string> argv{"git", "-C", repo, "push"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, "", {}, 300);
  }
  std::string remote_tip() { return util::trim(run({"git", "-C", bare, "rev-parse", "main"}).output); }
  std::string change(const std::string& file, const std::string& text, const std::string& msg) {
    write(repo, file, text);
    return commit_all(repo, msg);
  }

  ScopedTempDir tmp;
  std::string py, bare, repo;
};

TEST_F(HookVerdicts, OnlyTheFailuresAPushBringsBlockIt) {
  // 1. An unrelated change: the network test fails here and on origin/main
  // (measured there, alone, in the hook's worktree): let by.
  const std::string readme = change("README.md", "hello\n", "readme");
  auto r = push();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(remote_tip(), readme);
  EXPECT_NE(r.output.find("phoenix: measuring unit's failing tests on origin/main"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(std::string("phoenix: let by: unit in main@") + readme.substr(0, 12) + ": 1 pre-existing (" +
                          kNet + ") (pre-existing: failing on origin/main too)"),
            std::string::npos)
      << r.output;

  // 2. A real regression beside it: blocked, and only it is named as the
  // push's; the network test's verdict now comes from the store.
  change("calc.py", "def mul(a, b):\n    return a + b\n", "break mul");
  r = push();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(remote_tip(), readme);
  EXPECT_NE(r.output.find(std::string("push blocked: unit is red in main@")), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(std::string("1 new failing test (") + kMul + "); let by: 1 pre-existing (" + kNet +
                          ") on origin/main"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("measuring unit's failing tests on origin/main"), std::string::npos)
      << "the store knew the remote's tip: " << r.output;
  EXPECT_EQ(r.output.find("without Phoenix measuring it"), std::string::npos)
      << "the push let by went through the hook: " << r.output;
  git(repo, {"reset", "-q", "--hard", "HEAD~1"});

  // 3. The flake fails on this push's run (its third): run again alone, it
  // passes: flaky, let by, and in the ledger.
  const std::string third = change("README.md", "hello again\n", "readme again");
  r = push();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(remote_tip(), third);
  EXPECT_NE(r.output.find(std::string("1 flaky (") + kFlaky + ")"), std::string::npos) << r.output;
  CliRun ledger = run_phoenix(repo, {"journal", "flaky", "--json"});
  ASSERT_EQ(ledger.code, 0) << ledger.out;
  ASSERT_EQ(Json::parse(ledger.out).size(), 1u) << ledger.out;
  EXPECT_EQ(Json::parse(ledger.out)[0]["test"], kFlaky);

  // 4. A push that makes the network test pass says it fixed it.
  change("tests/test_calc.py",
         util::replace_all(read(repo + "/tests/test_calc.py"),
                           "socket.create_connection(('192.0.2.1', 80), timeout=0.3)", "assert socket.AF_INET"),
         "no network in the unit tests");
  r = push();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("also fixes unit on origin/main: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(kNet, r.output.find("also fixes")), std::string::npos) << r.output;
}

// hook.mode heal: only the failure the push brought is healed; the fix's
// fresh re-run still fails the network test, which failed on the remote's
// tip too, and that does not keep it from HEALED.
TEST_F(HookVerdicts, HealModeHealsOnlyWhatThePushBrought) {
  Json cfg = Json::parse(read(repo + "/phoenix.json"));
  cfg["hook"]["mode"] = "heal";
  cfg["fixers"] = {"harness"};
  cfg["checks"][0]["editable"] = {"calc.py"};
  cfg["harness"] = {{"command", {"sh", "-c", "sed -i 's/a + b/a * b/' calc.py"}}, {"timeout_s", 60}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "heal on push");
  auto r = push();
  ASSERT_EQ(r.exit_code, 0) << r.output;  // the network test is let by
  change("calc.py", "def mul(a, b):\n    return a + b\n", "break mul");
  r = push();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("phoenix: healed unit in "), std::string::npos) << r.output;
  EXPECT_EQ(read(repo + "/calc.py"), "def mul(a, b):\n    return a * b\n");
  r = push();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::string("1 pre-existing (") + kNet + ")"), std::string::npos) << r.output;
}

// A new branch is judged against where it forks from the remote's default
// branch; a suite that no longer collects is the push's failure.
TEST_F(HookVerdicts, NewBranchJudgedWhereItForksAndABrokenSuiteBlocks) {
  git(repo, {"checkout", "-q", "-b", "feature"});
  const std::string mine = change("README.md", "x\n", "feature work");
  auto r = push({"origin", "feature"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("on where it forks from origin"), std::string::npos) << r.output;
  // The suite no longer even collects: pytest names the file it could not
  // import (a name), so this is a new failure.
  change("tests/test_calc.py", "import no_such_module\n", "break the suite");
  r = push({"origin", "feature"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("push blocked: unit is red in feature@"), std::string::npos) << r.output;
  EXPECT_EQ(util::trim(run({"git", "-C", bare, "rev-parse", "feature"}).output), mine);
}

}  // namespace
}  // namespace phoenix::test
