// Hostile fixers, end to end: `phoenix run` with the harness fixer running
// our scripted agent, told to misbehave. Each case must be contained, with
// nothing of the user's lost and the reason recorded — in both kinds of
// sandbox (PHOENIX_SANDBOX=copy|overlay); the overlay cases are skipped,
// saying why, where the kernel refuses an unprivileged overlay mount.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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
    write(
        repo, "tests/limit_test.sh",
        "#!/bin/sh\n. ./src/conf.sh\n[ \"$LIMIT\" = 10 ] || { echo \"FAIL limit_test: want 10, got $LIMIT\"; exit 1; }\n");
    fs::permissions(repo + "/tests/limit_test.sh", fs::perms::owner_all, fs::perm_options::add);
    write(repo, ".gitignore", ".phoenix/*\n!.phoenix/baselines/\nincidents/\n");
    write(repo, ".phoenix/baselines/chart.png", "baseline-bytes");
    head = commit_all(repo, "initial");
    snapshot_before = tracked_state();
  }

  void configure(const std::string& script, double timeout_s = 20) {
    Json cfg = {
        {"checks",
         {{{"id", "unit"}, {"kind", "command_exit"}, {"target", {"./tests/limit_test.sh"}}, {"editable", {"src/**"}}}}},
        {"fixers", {"harness"}},
        {"budgets", {{"unit", 1}}},
        {"harness",
         {{"command", {test_tool("scripted_agent"), "--prompt-file", "{prompt_file}"}},
          {"timeout_s", timeout_s},
          {"env", {{"PHOENIX_AGENT_SCRIPT", script}, {"HOSTILE_MARK", mark()}}}}}};
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
      if (::lstat(p.c_str(), &st) != 0) {
        s += f + " MISSING\n";
        continue;
      }
      s += f + " " + std::to_string(st.st_mode) + " " + read(p) + "\n";
    }
    return s;
  }

  void TearDown() override { ::unsetenv("PHOENIX_SANDBOX"); }

  std::string trace_text() { return read(repo + "/.phoenix/trace.jsonl"); }

  // Every process of the agent's carries HOSTILE_MARK=<this>: its
  // environment, inherited by whatever it starts, daemons included.
  std::string mark() const { return fs::path(tmp.path()).filename().string(); }

  // Live processes (not zombies) whose environment holds our mark.
  std::vector<long> marked_processes() const {
    const std::string entry = "HOSTILE_MARK=" + mark();
    std::vector<long> out;
    DIR* d = ::opendir("/proc");
    if (!d) return out;
    while (struct dirent* e = ::readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (*end != '\0' || pid <= 0) continue;
      const std::string dir = std::string("/proc/") + e->d_name;
      std::string stat = read(dir + "/stat");
      size_t paren = stat.rfind(')');
      if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') continue;
      std::string env = read(dir + "/environ");
      for (size_t at = env.find(entry); at != std::string::npos; at = env.find(entry, at + 1)) {
        if ((at == 0 || env[at - 1] == '\0') && (at + entry.size() == env.size() || env[at + entry.size()] == '\0')) {
          out.push_back(pid);
          break;
        }
      }
    }
    ::closedir(d);
    return out;
  }

  // Healed: exit 0, the fix committed on top of HEAD, nothing untracked.
  void expect_healed(const CliRun& r) {
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=10\n");
    EXPECT_EQ(util::trim(git(repo, {"rev-parse", "HEAD^"})), head);
    EXPECT_EQ(git(repo, {"status", "--porcelain", "--untracked-files=all"}), "");
    EXPECT_EQ(run_phoenix(repo, {"trace", "verify"}).code, 0);
  }

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
  if (!test::kSanitized) EXPECT_LT(std::stol(r.output.substr(at + 10)), 64 * 1024) << "peak memory";
  expect_contained({r.exit_code, r.output}, "changed nothing");
}

TEST_P(Hostile, ExitsZeroHavingChangedNothing) {
  configure("print 'All fixed! Tests pass now.'; exit 0");
  expect_contained(run_phoenix(repo, {"run"}), "changed nothing");
}

TEST_P(Hostile, ForkBombIsBoundedByItsProcessGroup) {
  // 6 + 36 + 216 processes, each asleep for 300 s; the agent exits at once.
  configure("fork-tree 6 3; exit 0");
  auto r = run_phoenix(repo, {"run"});
  expect_contained(r, "changed nothing");
  EXPECT_NE(trace_text().find("stray processes the agent left running"), std::string::npos) << r.out;
  EXPECT_EQ(marked_processes(), std::vector<long>{}) << "processes of the agent outlived the run";
}

TEST_P(Hostile, ADaemonThatLeftTheProcessGroupDiesWithTheRun) {
  // setsid + double fork: out of the process group, holding the output pipe.
  // The fix itself is right, so the run heals; the daemon must not stall it
  // nor survive it.
  configure("daemon 300; replace src/conf.sh 11 10");
  auto r = run_phoenix(repo, {"run"}, 60);
  expect_healed(r);
  EXPECT_NE(trace_text().find("Phoenix killed 1 stray process the agent left running"), std::string::npos) << r.out;
  EXPECT_EQ(marked_processes(), std::vector<long>{}) << "the daemon outlived the run";
}

TEST_P(Hostile, ChmodsTheTestScriptNotExecutable) {
  configure("chmod tests/limit_test.sh 644");
  auto r = run_phoenix(repo, {"run"});
  expect_contained(r, "the patch edits tests/limit_test.sh, protected by 'tests/**'");
  EXPECT_EQ(::access((repo + "/tests/limit_test.sh").c_str(), X_OK), 0);
}

TEST_P(Hostile, WritesAGitHookInTheSandbox) {
  // The sandbox's .git is its own (copy) or its own upper layer (overlay):
  // a hook written there is not part of any patch and never reaches ours.
  configure(
      "write .git/hooks/pre-commit '#!/bin/sh\\nexit 0\\n'; chmod .git/hooks/pre-commit 755; "
      "write .git/hooks/pre-push '#!/bin/sh\\nexit 0\\n'");
  auto r = run_phoenix(repo, {"run"});
  expect_contained(r, "changed nothing");
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/pre-commit"));
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/pre-push"));
}

TEST_P(Hostile, WritesTheRealGitHooksAndConfigByAbsolutePath) {
  // Outside the work tree's fingerprint: the harness keeps the real hooks
  // folder and .git/config aside and puts them back (copying sandbox); the
  // overlay's namespace has the real repository read-only.
  const std::string config_before = read(repo + "/.git/config");
  configure("write-outside " + repo + "/.git/hooks/pre-commit '#!/bin/sh\\nexit 0\\n'; " + "append " + repo +
            "/.git/config '[core]\\n\\x09hooksPath = /tmp\\n'");
  auto r = run_phoenix(repo, {"run"});
  expect_contained(r, GetParam() == "overlay" ? "changed nothing" : "/.git/hooks/pre-commit; removed");
  if (GetParam() == "copy")
    EXPECT_NE(r.out.find("phoenix: the agent changed core.hooksPath to /tmp; put back"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/pre-commit"));
  EXPECT_EQ(read(repo + "/.git/config"), config_before);
}

// An agent (any argv: here `sh -c`) that rewires the real repository's git
// through git itself: core.hooksPath, user.email, a pre-push hook, the
// user's branch moved back. The config, hooks and refs are put back
// (gitx/guard.h), each change said in one line, and the attempt aborted;
// the overlay's namespace has the real repository read-only.
TEST_P(Hostile, RewiresTheRealRepositorysGitAndIsPutBack) {
  Json cfg = {
      {"checks",
       {{{"id", "unit"}, {"kind", "command_exit"}, {"target", {"./tests/limit_test.sh"}}, {"editable", {"src/**"}}}}},
      {"fixers", {"harness"}},
      {"budgets", {{"unit", 1}}},
      {"harness",
       {{"command", {"sh", "-c", hostile_git_script("git -C '" + repo + "'")}}, {"timeout_s", 20}}}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "configure phoenix");
  snapshot_before = tracked_state();
  const std::string before = repo_control_state(repo);
  auto r = run_phoenix(repo, {"run"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(repo_control_state(repo), before) << r.out;
  EXPECT_EQ(tracked_state(), snapshot_before) << r.out;
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/pre-push"));
  if (GetParam() == "overlay") return;
  for (const std::string& line : hostile_git_put_back_lines("the agent"))
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  EXPECT_NE(r.out.find("phoenix: the agent changed core.hooksPath to /tmp/x; put back\n"), std::string::npos) << r.out;
  EXPECT_NE(trace_text().find("the agent changed core.hooksPath to /tmp/x; put back"), std::string::npos);
  EXPECT_EQ(run_phoenix(repo, {"trace", "verify"}).code, 0);
}

TEST_P(Hostile, EditsPhoenixState) {
  // .phoenix/ beyond the baselines: ignored files (the journal, a settings
  // file) stay in the sandbox; a new file under the tracked baselines is in
  // the patch and protected.
  configure(
      "write .phoenix/journal.sqlite forged; write .phoenix/settings.json {}; "
      "write .phoenix/baselines/new.png forged; replace src/conf.sh 11 10");
  auto r = run_phoenix(repo, {"run"});
  expect_contained(r, "the patch edits .phoenix/baselines/new.png, protected by '.phoenix/**'");
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/settings.json"));
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/baselines/new.png"));
  EXPECT_NE(read(repo + "/.phoenix/journal.sqlite"), "forged");
}

TEST_P(Hostile, PrintsAHundredMegabytesOnOneLine) {
  configure("huge-line 104857600");
  auto r = run({test_tool("maxrss"), phoenix_bin(), "run"}, repo, {}, 120);
  size_t at = r.output.find("maxrss_kb=");
  ASSERT_NE(at, std::string::npos);
  if (!test::kSanitized) EXPECT_LT(std::stol(r.output.substr(at + 10)), 64 * 1024) << "peak memory";
  expect_contained({r.exit_code, r.output}, "changed nothing");
}

// Binary content is applied byte for byte when the check then passes: the
// patch carries it as a git binary patch. A NUL-filled file and a file of
// invalid UTF-8 come out exactly as the agent wrote them.
TEST_P(Hostile, WritesBinaryFilesThatAreAppliedByteForByte) {
  configure(
      "replace src/conf.sh 11 10; write-binary src/blob.bin 4096; write-named src/latin1.txt 'caf\\xe9 \\xff\\xfe\\n'");
  auto r = run_phoenix(repo, {"run"});
  expect_healed(r);
  std::string blob;
  for (long i = 0; i < 4096; ++i) blob.push_back(static_cast<char>((i * 37 + 11) % 256));
  blob[0] = '\0';
  EXPECT_EQ(read(repo + "/src/blob.bin"), blob);
  EXPECT_EQ(read(repo + "/src/latin1.txt"), "caf\xe9 \xff\xfe\n");
}

TEST_P(Hostile, RenamesAFileOutOfTheEditableGlobs) {
  configure("rename src/conf.sh docs/conf.sh");
  expect_contained(run_phoenix(repo, {"run"}), "the patch edits docs/conf.sh, outside the editable globs");
}

TEST_P(Hostile, NamesAFileWithALineBreak) {
  configure("replace src/conf.sh 11 10; write-named 'src/a\\nb.sh' x");
  auto r = run_phoenix(repo, {"run"});
  // The name is shown escaped, quoted the way git quotes it.
  expect_contained(r, "a path with a line break in it: \\\"src/a\\\\nb.sh\\\"");
}

TEST_P(Hostile, NamesAFileWithBytesThatAreNotUtf8) {
  // A name git quotes ("src/\377.txt"): editable, so it is applied — and
  // undone exactly when the check stays red; the trace stays valid JSON.
  configure("write-named 'src/\\xff.txt' x");
  auto r = run_phoenix(repo, {"run"});
  expect_contained(r, "red: exit=");
  EXPECT_FALSE(fs::exists(repo + "/src/\xff.txt"));
}

TEST_P(Hostile, HealsWithAFileWhoseNameIsNotUtf8) {
  // The same name beside a right fix: applied under its exact bytes and
  // committed; the trace and the journal take the name without failing.
  configure("replace src/conf.sh 11 10; write-named 'src/\\xff.txt' x");
  auto r = run_phoenix(repo, {"run"});
  expect_healed(r);
  EXPECT_EQ(read(repo + "/src/\xff.txt"), "x");
  EXPECT_NE(trace_text().find("\"HEALED\""), std::string::npos) << r.out;
}

TEST_P(Hostile, TouchesTenThousandFiles) {
  configure("many-files src/many 10000");
  auto r = run_phoenix(repo, {"run"});
  expect_contained(r, "the patch touches 10000 files, more than the limit of 2000 (patch_files_cap)");
  EXPECT_FALSE(fs::exists(repo + "/src/many"));
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
