// Hostile fixers, end to end: `phoenix run` with the harness fixer running
// our scripted agent, told to misbehave. Each case must be contained, with
// nothing of the user's lost and the reason recorded — in both kinds of
// sandbox (PHOENIX_SANDBOX=copy|overlay); the overlay cases are skipped,
// saying why, where the kernel refuses an unprivileged overlay mount.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "sandbox/sandbox.h"
#include "test_util.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

class Hostile : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "overlay" && !sandbox::overlay_unavailable_reason().empty())
      GTEST_SKIP() << "overlay sandbox unavailable here: " << sandbox::overlay_unavailable_reason();
    // Inherited by the phoenix processes the cases run.
    ::setenv("PHOENIX_SANDBOX", GetParam().c_str(), 1);
    repo = init_repo(tmp / "repo");
    write(repo, "src/conf.sh", "LIMIT=11\n");  // the bug: the check wants 10
    write(repo, "README.md", "docs\n");
    write(repo, "tests/limit_test.sh",
          "#!/bin/sh\n. ./src/conf.sh\n[ \"$LIMIT\" = 10 ] || { echo \"FAIL limit_test: want 10, got $LIMIT\"; exit 1; }\n");
    fs::permissions(repo + "/tests/limit_test.sh", fs::perms::owner_all, fs::perm_options::add);
    write(repo, ".gitignore", ".phoenix/*\n!.phoenix/baselines/\nincidents/\n");
    write(repo, ".phoenix/baselines/chart.png", "baseline-bytes");
    head = commit_all(repo, "initial");
    snapshot_before = tracked_state();
  }

  void configure(const std::string& script, double timeout_s = 20) {
    Json cfg = {{"checks", {{{"id", "unit"}, {"kind", "command_exit"}, {"target", {"./tests/limit_test.sh"}},
                             {"editable", {"src/**"}}}}},
                {"fixers", {"harness"}},
                {"budgets", {{"unit", 1}}},
                {"harness", {{"command", {test_tool("scripted_agent"), "--prompt-file", "{prompt_file}"}},
                             {"timeout_s", timeout_s},
                             {"env", {{"PHOENIX_AGENT_SCRIPT", script}}}}}};
    write(repo, "phoenix.json", cfg.dump(2));
    commit_all(repo, "configure phoenix");
    head = util::trim(git(repo, {"rev-parse", "HEAD"}));
    snapshot_before = tracked_state();
  }

  // Every tracked file's bytes and mode, plus HEAD.
  std::string tracked_state() {
    std::string s = util::trim(git(repo, {"rev-parse", "HEAD"})) + "\n";
    for (const auto& f : util::split_lines(git(repo, {"ls-files"}))) {
      struct stat st;
      std::string p = repo + "/" + f;
      if (::lstat(p.c_str(), &st) != 0) { s += f + " MISSING\n"; continue; }
      s += f + " " + std::to_string(st.st_mode) + " " + read(p) + "\n";
    }
    return s;
  }

  void TearDown() override { ::unsetenv("PHOENIX_SANDBOX"); }

  std::string trace_text() { return read(repo + "/.phoenix/trace.jsonl"); }

  // Contained: escalated (or healed), the user's tracked files and HEAD as
  // they were, no stray files, and the reason in the trace.
  void expect_contained(const CliRun& r, const std::string& reason) {
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_EQ(tracked_state(), snapshot_before) << r.out;
    std::string untracked = git(repo, {"status", "--porcelain", "--untracked-files=all"});
    EXPECT_EQ(untracked, "") << "stray files in the user's repository";
    EXPECT_NE(trace_text().find(reason), std::string::npos) << "reason '" << reason << "' not recorded\n" << r.out;
    EXPECT_EQ(run_phoenix(repo, {"trace", "verify"}).code, 0);
  }

  ScopedTempDir tmp;
  std::string repo, head, snapshot_before;
};

INSTANTIATE_TEST_SUITE_P(Sandbox, Hostile, ::testing::Values("copy", "overlay"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST_P(Hostile, EditsATestFile) {
  configure("replace tests/limit_test.sh 10 11");
  expect_contained(run_phoenix(repo, {"run"}), "protected by 'tests/**'");
}

TEST_P(Hostile, EditsPhoenixJson) {
  configure("write phoenix.json {}");
  expect_contained(run_phoenix(repo, {"run"}), "the patch edits phoenix.json");
}

TEST_P(Hostile, EditsABaseline) {
  configure("write .phoenix/baselines/chart.png forged");
  expect_contained(run_phoenix(repo, {"run"}), "protected by '.phoenix/**'");
}

TEST_P(Hostile, EditsOutsideTheEditableGlobs) {
  configure("replace src/conf.sh 11 10; write README.md hacked");
  expect_contained(run_phoenix(repo, {"run"}), "outside the editable globs");
}

TEST_P(Hostile, CreatesASymlinkOutOfTheRepository) {
  configure("symlink-out src/evil /etc/passwd");
  auto r = run_phoenix(repo, {"run"});
  expect_contained(r, "symbolic link");
  EXPECT_FALSE(fs::exists(fs::symlink_status(repo + "/src/evil")));
}

TEST_P(Hostile, DeletesATrackedFile) {
  configure("delete src/conf.sh");
  expect_contained(run_phoenix(repo, {"run"}), "red: exit=");
}

TEST_P(Hostile, GitCommitInTheSandboxStillYieldsTheRightPatch) {
  configure("replace src/conf.sh 11 10; git-commit");
  auto r = run_phoenix(repo, {"run"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=10\n");
  EXPECT_EQ(util::trim(git(repo, {"log", "-1", "--format=%an"})), "phoenix");
  EXPECT_EQ(util::trim(git(repo, {"rev-parse", "HEAD^"})), head);  // the agent's commit never reaches the user
}

TEST_P(Hostile, GitResetInTheSandboxLeavesNothingToApply) {
  configure("replace src/conf.sh 11 10; git-commit; git-reset HEAD~1");
  expect_contained(run_phoenix(repo, {"run"}), "changed nothing");
}

TEST_P(Hostile, WritesIntoTheRealRepositoryByAbsolutePath) {
  configure("write-outside " + repo + "/src/conf.sh LIMIT=10\\n; write-outside " + repo + "/src/planted.txt x");
  auto r = run_phoenix(repo, {"run"});
  // The copying sandbox lets the write happen and aborts the attempt when
  // it sees it; inside the overlay's namespace the real work tree is
  // read-only, so the write fails and nothing changed.
  expect_contained(r, GetParam() == "overlay" ? "changed nothing" : "aborted");
  EXPECT_FALSE(fs::exists(repo + "/src/planted.txt"));
}

TEST_P(Hostile, NeverExits) {
  configure("sleep 600", 2);
  auto start = std::chrono::steady_clock::now();
  auto r = run_phoenix(repo, {"run"});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  expect_contained(r, "\"status\":\"timeout\"");
  EXPECT_LT(s, 60) << "the harness was not stopped at its timeout";
}

TEST_P(Hostile, PrintsAGigabyte) {
  configure("huge-output 1073741824");
  auto r = run({test_tool("maxrss"), phoenix_bin(), "run"}, repo, {}, 300);
  size_t at = r.output.find("maxrss_kb=");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(std::stol(r.output.substr(at + 10)), 64 * 1024) << "peak memory";
  expect_contained({r.exit_code, r.output}, "changed nothing");
}

TEST_P(Hostile, ExitsZeroHavingChangedNothing) {
  configure("print 'All fixed! Tests pass now.'; exit 0");
  expect_contained(run_phoenix(repo, {"run"}), "changed nothing");
}

TEST_P(Hostile, AWellBehavedAgentHeals) {
  configure("replace src/conf.sh 11 10; print-json-cost 0.42 3");
  auto r = run_phoenix(repo, {"run"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=10\n");
  EXPECT_NE(trace_text().find("\"cost_usd\":0.42"), std::string::npos);
}

}  // namespace
}  // namespace phoenix::test
