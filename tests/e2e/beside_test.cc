// Phoenix beside a person: what the user does in their checkout and their
// other worktrees while phoenix-loop, `phoenix run` and the pre-push hook
// run programs in Phoenix's own trees is never undone; what those programs
// write outside their tree never lands; the loop's tasks file works the
// same committed or not. The built binaries, real git, real processes.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "test_util.h"
#include "util/json.h"
#include "util/overlay.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

class Beside : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string marks;  // the programs' meeting point with the test, outside every checkout

  void SetUp() override {
    marks = tmp / "marks";
    fs::create_directories(marks);
    ::setenv("PHOENIX_TREES_DIR", (tmp / "trees").c_str(), 1);
  }
  void TearDown() override { ::unsetenv("PHOENIX_TREES_DIR"); }

  bool can_confine() { return util::overlay_unavailable_reason().empty(); }

  // A setup step that says it started, then waits until the test lets it go.
  Json waiting_step(const std::string& name) {
    return {{"run",
             {"sh", "-c",
              "touch '" + marks + "/" + name + ".started'; i=0; while [ ! -e '" + marks + "/" + name +
                  ".go' ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done"}}};
  }

  // Runs `person` once the step `name` has started, then lets it go; on a
  // thread of its own, joined by the returned function.
  std::function<void()> meanwhile(const std::string& name, std::function<void()> person) {
    auto t = std::make_shared<std::thread>([this, name, person] {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!fs::exists(marks + "/" + name + ".started") && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      person();
      write(marks, name + ".go", "");
    });
    return [t] { t->join(); };
  }

  static std::string commit_new_file(const std::string& dir, const std::string& file) {
    write(dir, file, "the person's own\n");
    git(dir, {"add", file});
    git(dir, {"commit", "-q", "-m", "the person's " + file});
    return rev_parse(dir, "HEAD");
  }
};

// The night of a person who commits in their checkout while the loop's
// setup step runs: their commit stays on main, their file tracked, and the
// loop says main moved without it.
TEST_F(Beside, ACommitMadeWhileTheLoopsSetupRunsStays) {
  if (!can_confine()) GTEST_SKIP() << "not confined here: " << util::overlay_unavailable_reason();
  const std::string repo = init_loop_repo(tmp / "repo", "# Tasks\n\n- [ ] first task\n");
  Json cfg = {{"setup", {waiting_step("loop-setup")}},
              {"checks", Json::array({broken_check("nobreak", "src.txt")})},
              {"fixers", {"noop"}},
              {"harness", scripted_harness("append work.txt 'x\\n'")},
              {"loop", loop_section(3, Json::object())}};
  write(repo, "phoenix.json", cfg.dump(2));
  const std::string start = commit_all(repo, "initial");
  std::string theirs;
  auto join = meanwhile("loop-setup", [&] { theirs = commit_new_file(repo, "mine.txt"); });
  CliRun r = run_loop(repo, {"--branch", "phoenix/loop-test"});
  join();
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(rev_parse(repo, "main"), theirs) << r.out;
  EXPECT_EQ(porcelain(repo), "") << r.out;
  EXPECT_EQ(trim(git(repo, {"ls-files", "mine.txt"})), "mine.txt");
  EXPECT_EQ(r.out.find("put back"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("refs/heads/main moved from " + start.substr(0, 7) + " to " + theirs.substr(0, 7) +
                       " while setup ran, not by setup: left as it is"),
            std::string::npos)
      << r.out;
}

// While the loop's agent works, the person commits, amends, switches
// branch, fetches, tags and runs git gc in their checkout and in their
// second worktree. Everything they did is as they left it after the night.
TEST_F(Beside, WhatThePersonDoesWhileTheAgentWorksStays) {
  if (!can_confine()) GTEST_SKIP() << "not confined here: " << util::overlay_unavailable_reason();
  const std::string remote = tmp / "remote.git";
  git(tmp.path(), {"init", "-q", "--bare", "-b", "main", remote});
  const std::string repo = init_loop_repo(tmp / "repo", "# Tasks\n\n- [ ] first task\n");
  const std::string agent = "touch '" + marks + "/agent.started'; i=0; while [ ! -e '" + marks +
                            "/agent.go' ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done; echo x >> work.txt";
  Json cfg = {{"checks", Json::array({broken_check("nobreak", "src.txt")})},
              {"fixers", {"noop"}},
              {"harness", {{"command", {"sh", "-c", agent}}, {"timeout_s", 90}}},
              {"loop", loop_section(3, Json::object())}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "initial");
  git(repo, {"remote", "add", "origin", remote});
  git(repo, {"push", "-q", "origin", "main"});
  const std::string second = tmp / "second";
  git(repo, {"worktree", "add", "-q", "-b", "feature", second});
  const std::string other = tmp / "other";
  git(tmp.path(), {"clone", "-q", remote, other});
  git(other, {"config", "user.email", "o@example.com"});
  git(other, {"config", "user.name", "O"});
  std::string theirs;
  auto join = meanwhile("agent", [&] {
    commit_new_file(repo, "a.txt");
    git(repo, {"commit", "-q", "--amend", "-m", "a, amended"});
    git(repo, {"switch", "-q", "-c", "topic"});
    commit_new_file(second, "b.txt");
    git(second, {"tag", "v1"});
    write(other, "c.txt", "c\n");
    commit_all(other, "theirs");
    git(other, {"push", "-q", "origin", "main"});
    git(repo, {"fetch", "-q", "origin"});
    git(repo, {"gc", "-q"});
    theirs = git(repo, {"for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/main", "refs/heads/topic",
                        "refs/heads/feature", "refs/tags", "refs/remotes"}) +
             git(repo, {"symbolic-ref", "HEAD"});
  });
  CliRun r = run_loop(repo, {"--branch", "phoenix/loop-test"});
  join();
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(git(repo, {"for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/main", "refs/heads/topic",
                       "refs/heads/feature", "refs/tags", "refs/remotes"}) +
                git(repo, {"symbolic-ref", "HEAD"}),
            theirs)
      << r.out;
  EXPECT_EQ(porcelain(repo), "") << r.out;
  EXPECT_EQ(porcelain(second), "") << r.out;
  EXPECT_EQ(r.out.find("put back"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("while the agent ran, not by the agent: left as it is"), std::string::npos) << r.out;
}

// `phoenix run --fixer bisect` on main, its setup running in bisect's tree,
// while the person commits on their feature branch in a second worktree:
// the feature commit stays on its branch and the run heals.
TEST_F(Beside, AFeatureCommitInAnotherWorktreeWhileBisectsSetupRunsStays) {
  if (!can_confine()) GTEST_SKIP() << "not confined here: " << util::overlay_unavailable_reason();
  const std::string repo = init_repo(tmp / "repo");
  write(repo, ".gitignore", ".phoenix/\nincidents/\n");
  write(repo, "src/a.conf", "A=1\n");
  Json cfg = {{"setup", {waiting_step("bisect-setup")}},
              {"checks",
               {{{"id", "unit"},
                 {"kind", "command_exit"},
                 {"target", {"sh", "-c", ". ./src/a.conf; [ \"$A\" = 1 ] || { echo 'FAIL a_test: A'; exit 1; }"}},
                 {"editable", {"src/**"}}}}},
              {"fixers", {"bisect"}}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "initial");
  // Known-good blessed once (its setup let go at once).
  write(marks, "bisect-setup.go", "");
  ASSERT_EQ(run_phoenix(repo, {"run"}).code, 0);
  fs::remove(marks + "/bisect-setup.go");
  fs::remove(marks + "/bisect-setup.started");
  const std::string second = tmp / "second";
  git(repo, {"worktree", "add", "-q", "-b", "feature", second});
  write(repo, "src/b.txt", "b\n");
  commit_all(repo, "more");
  write(repo, "src/a.conf", "A=2\n");
  commit_all(repo, "tune a");
  std::string theirs;
  auto join = meanwhile("bisect-setup", [&] { theirs = commit_new_file(second, "feature.txt"); });
  CliRun r = run_phoenix(repo, {"run", "--fixer", "bisect"});
  join();
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  EXPECT_EQ(rev_parse(repo, "feature"), theirs) << r.out;
  EXPECT_EQ(porcelain(second), "");
  EXPECT_EQ(porcelain(repo), "");
  EXPECT_EQ(r.out.find("put back"), std::string::npos) << r.out;
}

// A harness heal of `phoenix run` in the user's checkout while they commit
// on feature in their second worktree and tag it: the heal goes through
// (their commit voids nothing: the agent was confined to its sandbox, so
// the move is theirs), their commit and tag stay, the move is said once.
TEST_F(Beside, ACommitInAnotherWorktreeWhileTheHarnessWorksVoidsNothing) {
  if (!can_confine()) GTEST_SKIP() << "not confined here: " << util::overlay_unavailable_reason();
  const std::string repo = init_repo(tmp / "repo");
  write(repo, ".gitignore", ".phoenix/\nincidents/\n");
  write(repo, "src.txt", "fine\n");
  const std::string agent = "touch '" + marks + "/agent.started'; i=0; while [ ! -e '" + marks +
                            "/agent.go' ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done; echo fine > src.txt";
  Json cfg = {{"checks", Json::array({broken_check("nobreak", "src.txt", true)})},
              {"fixers", {"harness"}},
              {"harness", {{"command", {"sh", "-c", agent}}, {"timeout_s", 90}}}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "initial");
  ASSERT_EQ(run_phoenix(repo, {"run"}).code, 0);  // known-good
  const std::string second = tmp / "second";
  git(repo, {"worktree", "add", "-q", "-b", "feature", second});
  write(repo, "src.txt", "BROKEN\n");
  commit_all(repo, "break it");
  std::string theirs;
  auto join = meanwhile("agent", [&] {
    theirs = commit_new_file(second, "feature.txt");
    git(second, {"tag", "v1"});
  });
  CliRun r = run_phoenix(repo, {"run", "--fixer", "harness"});
  join();
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("wrote outside its sandbox"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("aborted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("refs/heads/feature moved from"), std::string::npos) << "said once: " << r.out;
  EXPECT_EQ(rev_parse(repo, "feature"), theirs) << r.out;
  EXPECT_EQ(rev_parse(repo, "v1"), theirs) << r.out;
  EXPECT_EQ(read(repo + "/src.txt"), "fine\n");
  EXPECT_EQ(porcelain(second), "");
  EXPECT_EQ(porcelain(repo), "");
}

// The loop's agent, told nothing of it, finds the user's checkout through
// git and writes into it and into their other worktree; its own work is
// right. Both checkouts stay untouched, the attempt fails saying where it
// wrote, and the task lands on the next iteration. With one worker and two.
class BesideWorkers : public Beside, public ::testing::WithParamInterface<int> {};

TEST_P(BesideWorkers, AnAgentThatWritesIntoTheUsersCheckoutsFailsItsAttempt) {
  if (!can_confine()) GTEST_SKIP() << "not confined here: " << util::overlay_unavailable_reason();
  const int workers = GetParam();
  const std::string repo = init_loop_repo(tmp / "repo", "# Tasks\n\n- [ ] first task\n- [ ] second task\n");
  const std::string second = tmp / "second";
  // Each agent run writes into both checkouts on its first run of a task,
  // and always does its work in its own tree.
  const std::string script =
      "n=$(cat '" + marks + "/runs' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '" + marks + "/runs'; " +
      "cp \"$1\" '" + marks + "/prompt-'$n; " +
      "main=$(dirname \"$(git rev-parse --path-format=absolute --git-common-dir)\"); " +
      "if ! grep -q 'wrote files outside' \"$1\"; then echo trespass >> \"$main/src.txt\"; echo x > '" + second +
      "/trespass.txt'; fi; echo \"work $n\" >> work-$n.txt";
  Json cfg = {{"checks", Json::array({broken_check("nobreak", "src.txt")})},
              {"fixers", {"noop"}},
              {"harness", {{"command", {"sh", "-c", script, "agent", "{prompt_file}"}}, {"timeout_s", 30}}},
              {"loop", loop_section(3, Json::object())}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "initial");
  git(repo, {"worktree", "add", "-q", "-b", "feature", second});
  const std::string src = read(repo + "/src.txt");
  CliRun r = run_loop(repo, {"--branch", "phoenix/loop-test", "--workers", std::to_string(workers)});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(repo + "/src.txt"), src) << r.out;
  EXPECT_FALSE(fs::exists(second + "/trespass.txt")) << r.out;
  EXPECT_EQ(porcelain(repo), "") << r.out;
  EXPECT_EQ(porcelain(second), "") << r.out;
  EXPECT_NE(r.out.find("the agent wrote src.txt in the checkout " + repo + ", not its own tree; kept out"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the agent wrote trespass.txt in the checkout " + second + ", not its own tree; kept out"),
            std::string::npos)
      << r.out;
  // Both tasks landed, from attempts that wrote only their own tree.
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:TASKS.md"}), "# Tasks\n\n- [x] first task\n- [x] second task\n");
  const std::string trace = read(repo + "/.phoenix/trace.jsonl");
  EXPECT_NE(trace.find("wrote_elsewhere"), std::string::npos);
  // The next run of the task was told where it wrote.
  bool told = false;
  for (int n = 2; n <= 6 && !told; ++n)
    told = read(marks + "/prompt-" + std::to_string(n)).find("you wrote files outside your working directory") !=
           std::string::npos;
  EXPECT_TRUE(told) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Workers, BesideWorkers, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param); });

// A tasks file kept out of git (written, never committed): the night works
// as with a committed one. One task lands; the next one breaks the check
// every time and escalates: its incident note, the rollback, exit 2.
TEST_F(Beside, AnUntrackedTasksFileLandsOneTaskAndEscalatesAnother) {
  const std::string repo = init_loop_repo(tmp / "repo", "");
  fs::remove(repo + "/TASKS.md");
  Json cfg = {{"checks", Json::array({broken_check("nobreak", "src.txt")})},
              {"fixers", {"noop"}},
              {"budgets", {{"unit", 2}}},
              {"harness", scripted_harness("if-prompt 'first task' append work.txt 'x\\n'; "
                                           "if-prompt 'second task' append src.txt 'BROKEN\\n'")},
              {"loop", loop_section(3, Json::object())}};
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "initial");
  write(repo, "TASKS.md", "# Tasks\n\n- [ ] first task\n- [ ] second task\n");
  ASSERT_NE(porcelain(repo).find("?? TASKS.md"), std::string::npos);
  CliRun r = run_loop(repo, {"--branch", "phoenix/loop-test"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out.find("cannot read"), std::string::npos) << r.out;
  EXPECT_NE(git(repo, {"show", "phoenix/loop-test:TASKS.md"}).find("- [x] first task"), std::string::npos) << r.out;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:work.txt"}), "x\n");
  ASSERT_TRUE(fs::exists(repo + "/incidents")) << r.out;
  EXPECT_FALSE(fs::is_empty(repo + "/incidents")) << r.out;
  EXPECT_TRUE(fs::exists(repo + "/.phoenix/ESCALATED")) << r.out;
  // The user's own file is as they wrote it, still untracked.
  EXPECT_EQ(read(repo + "/TASKS.md"), "# Tasks\n\n- [ ] first task\n- [ ] second task\n");
}

}  // namespace
}  // namespace phoenix::test
