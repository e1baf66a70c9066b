// Phoenix runs side by side in one repository, each in trees of its own:
// the pre-push hook measuring a pushed commit while the loop's bisect
// searches, and two loop workers healing at the same moment on the CMake
// project. Each holds the lock of the tree it uses, keeps its own
// checkpoint refs, and never moves another's tree.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "gitx/repo.h"
#include "layout/layout.h"
#include "real_projects.h"
#include "test_util.h"
#include "util/json.h"
#include "util/lock.h"
#include "util/format.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

#ifdef PHOENIX_LOOP_BIN

class SideBySide : public ::testing::Test {
 protected:
  void SetUp() override {
    // Phoenix's trees in a folder of the test's own, so the lock files
    // are where the test looks.
    ::setenv("PHOENIX_TREES_DIR", (tmp / "trees").c_str(), 1);
  }
  void TearDown() override { ::unsetenv("PHOENIX_TREES_DIR"); }

  std::string lock_of(const std::string& tree) { return layout::tree_lock(gitx::Repo::open(repo), tree); }
  std::string tree_path(const std::string& tree) { return layout::worktree_path(gitx::Repo::open(repo), tree); }

  // Waits (bounded) until `pred` holds; false when it never did.
  template <class F>
  static bool eventually(F pred, std::chrono::seconds limit) {
    for (auto t0 = std::chrono::steady_clock::now(); !pred();) {
      if (std::chrono::steady_clock::now() - t0 > limit) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

  ScopedTempDir tmp;
  std::string repo;
};

// Every measurement of the check below appends "<tree> <commit>" here.
const char* kProbeCheck =
    "#!/bin/sh\n"
    "echo \"$PWD $(git rev-parse HEAD)\" >> \"$PHOENIX_TEST_PROBES\"\n"
    "case \"$PWD\" in */worktrees/bisect*) sleep 2 ;; esac\n"
    ". ./src/a.conf\n"
    "[ \"$A\" = 1 ] || { echo \"FAIL a_test: A=$A\"; exit 1; }\n";

// The loop's baseline is red (a regression since known-good) and its
// bisect searches in bisect's tree; meanwhile a push of a commit that is
// not HEAD is measured in the hook's tree. Both succeed; each measured only
// in its own tree, only its own commits.
TEST_F(SideBySide, TheHookMeasuresANonHeadCommitWhileTheLoopsBisectRuns) {
  const std::string probes = tmp / "probes.log";
  ::setenv("PHOENIX_TEST_PROBES", probes.c_str(), 1);
  repo = init_loop_repo(tmp / "repo", "# Tasks\n\n- [ ] notes\n");
  write(repo, "check.sh", kProbeCheck);
  fs::permissions(repo + "/check.sh", fs::perms::owner_all, fs::perm_options::add);
  write(repo, "src/a.conf", "A=1\n");
  Json cfg = {{"checks", {{{"id", "unit"}, {"kind", "command_exit"}, {"target", {"./check.sh"}}, {"editable", {"src/**"}}}}},
              {"fixers", {"bisect"}},
              {"bisect", {{"parallel", 1}}},
              {"harness", scripted_harness("write notes.txt 'n\\n'")},
              {"hook", {{"mode", "verify"}}},
              {"loop", loop_section(3, Json::object())}};
  write(repo, "phoenix.json", cfg.dump(2));
  const std::string good = commit_all(repo, "initial");
  ASSERT_EQ(run_phoenix(repo, {"run"}).code, 0);  // main's known-good
  write(repo, "src/one.txt", "1\n");
  commit_all(repo, "one");
  write(repo, "src/a.conf", "A=2\n");
  const std::string culprit = commit_all(repo, "tune a");
  write(repo, "src/two.txt", "2\n");
  commit_all(repo, "two");
  write(repo, "src/three.txt", "3\n");
  const std::string head = commit_all(repo, "three");

  util::ProcessOptions lo;
  lo.argv = {PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-test"};
  lo.cwd = repo;
  lo.timeout_s = 300;
  util::Subprocess loop(lo);
  ASSERT_TRUE(eventually([&] { return util::FileLock::holder_pid(lock_of("bisect")) > 0; }, std::chrono::seconds(120)))
      << "the loop's bisect never took its tree";
  const long bisect_holder = util::FileLock::holder_pid(lock_of("bisect"));

  util::ProcessOptions ho;
  ho.argv = {phoenix_bin(), "hook", "run", "pre-push", "origin", "/nowhere.git"};
  ho.cwd = repo;
  ho.stdin_data = "refs/heads/side " + good + " refs/heads/side " + std::string(40, '0') + "\n";
  ho.unset_env = {"PHOENIX_SKIP"};
  // `phoenix run` measured this commit's tree green: without the store the
  // hook measures it again, in its own tree, which is what is tested here.
  ho.env = {{"PHOENIX_NO_CACHE", "1"}};
  ho.timeout_s = 120;
  util::ProcessResult h = util::run_process(ho);
  EXPECT_EQ(h.exit_code, 0) << h.output;
  EXPECT_NE(h.output.find("(in the hook's worktree)"), std::string::npos) << h.output;
  EXPECT_EQ(util::FileLock::holder_pid(lock_of("bisect")), bisect_holder)
      << "the bisect was over before the push was measured: the test proved nothing";

  util::ProcessResult r = loop.wait();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:src/a.conf"}), "A=1\n");
  EXPECT_EQ(rev_parse(repo, "HEAD"), head);
  EXPECT_EQ(util::FileLock::holder_pid(lock_of("bisect")), 0);
  EXPECT_EQ(util::FileLock::holder_pid(lock_of("hook")), 0);
  // The hook measured only the pushed commit, only in its tree; bisect only
  // commits of its range, only in its own.
  const std::string hook_tree = tree_path("hook"), bisect_tree = tree_path("bisect");
  const std::set<std::string> range = {good, rev_parse(repo, culprit + "~1"), culprit, rev_parse(repo, head + "~1"),
                                       head};
  int in_hook = 0, in_bisect = 0;
  for (const std::string& line : util::split_lines(read(probes))) {
    const size_t sp = line.rfind(' ');
    const std::string where = line.substr(0, sp), sha = line.substr(sp + 1);
    if (where == hook_tree) {
      ++in_hook;
      EXPECT_EQ(sha, good) << line;
    } else if (where == bisect_tree) {
      ++in_bisect;
      EXPECT_TRUE(range.count(sha)) << line;
    }
  }
  EXPECT_EQ(in_hook, 1) << read(probes);
  EXPECT_GE(in_bisect, 1) << read(probes);
  EXPECT_EQ(util::trim(git(hook_tree, {"rev-parse", "HEAD"})), good);
  ::unsetenv("PHOENIX_TEST_PROBES");
}

// A night on the CMake project with two workers. The branch starts red (a
// regression since known-good: bisect finds it and the baseline heal
// reverts it); then both workers' agents break the build at the same
// moment, each task red in its own tree, and each heal mends its own
// change there. Each worker's checkpoints are its own tree's, and every
// tree lock is released at the end.
TEST_F(SideBySide, TwoWorkersRedAtOnceOnTheCMakeProjectEachHealInItsOwnTree) {
  for (const char* tool : {"cmake", "ctest", "cc"})
    if (util::find_executable(tool).empty())
      GTEST_SKIP() << tool << " is not installed (scripts/deps.sh installs cmake and build-essential)";
  repo = init_repo(tmp / "repo");
  copy_real_project("cmake", repo);
  write(repo, ".gitignore", ".phoenix/\nincidents/\nbuild/\n");
  write(repo, "TASKS.md", "# Tasks\n\n- [ ] add twice\n- [ ] add triple\n");
  const std::string heal = "if-prompt '" + kHealPrompt + "' ";
  const std::string task = "unless-prompt '" + kHealPrompt + "' if-prompt '" + kTaskIs;
  // ';' separates the agent's actions: the code's own is \x3b. Both tasks
  // break the build (a missing \x3b); each heal puts its own one back.
  const std::string script =
      task + "add twice\\n' sleep 1; " + task +
      "add twice\\n' append src/calc.c '\\nint calc_twice(int a) {\\n  return calc_add(a, a)\\n}\\n'; " + task +
      "add triple\\n' sleep 1; " + task + "add triple\\n' append include/calc.h '\\nint calc_triple(int a)\\n'; " +
      heal + "if-prompt 'calc_twice' replace src/calc.c 'calc_add(a, a)\\n' 'calc_add(a, a)\\x3b\\n'; " + heal +
      "if-prompt 'calc_triple' replace include/calc.h 'calc_triple(int a)\\n' 'calc_triple(int a)\\x3b\\n'";
  Json cfg = {
      {"setup", {{{"run", {"cmake", "-S", ".", "-B", "build"}}, {"inputs", {"**/CMakeLists.txt"}}}}},
      {"checks",
       {{{"id", "unit"},
         {"kind", "command_exit"},
         {"target", {"sh", "-c", "cmake --build build && ctest --test-dir build --output-on-failure"}},
         {"type", "unit"},
         {"timeout_s", 300},
         {"editable", {"src/**", "include/**"}}}}},
      {"fixers", {"bisect", "harness"}},
      {"harness", scripted_harness(script)},
      {"loop", loop_section(3, {{"on_escalate", "skip"}})}};
  cfg["harness"]["env"]["PHOENIX_AGENT_LOG"] = tmp / "agent.jsonl";
  write(repo, "phoenix.json", cfg.dump(2));
  commit_all(repo, "initial");
  ASSERT_EQ(run({"cmake", "-S", ".", "-B", "build"}, repo, {}, 300).exit_code, 0);  // the user's build folder
  CliRun bless = run_phoenix(repo, {"run"}, 300);
  ASSERT_EQ(bless.code, 0) << bless.out;
  write(repo, "src/calc.c", util::replace_all(read(repo + "/src/calc.c"), "a + b", "a - b"));
  const std::string culprit = commit_all(repo, "calc: tune add");
  write(repo, "NOTES.md", "notes\n");
  commit_all(repo, "notes");

  CliRun r = run_loop(repo, {"--branch", "phoenix/loop-test", "--workers", "2"}, 900);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("baseline: red before any task: unit"), std::string::npos) << r.out;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:TASKS.md"}), "# Tasks\n\n- [x] add twice\n- [x] add triple\n");
  const std::string calc = git(repo, {"show", "phoenix/loop-test:src/calc.c"});
  EXPECT_NE(calc.find("return a + b;"), std::string::npos) << "the regression was not reverted:\n" << calc;
  EXPECT_NE(calc.find("calc_add(a, a);"), std::string::npos) << calc;
  EXPECT_NE(git(repo, {"show", "phoenix/loop-test:include/calc.h"}).find("calc_triple(int a);"), std::string::npos);
  EXPECT_NE(git(repo, {"log", "--format=%s", "phoenix/loop-test"}).find("phoenix: heal unit (bisect)"),
            std::string::npos)
      << "bisect did not heal the baseline";
  EXPECT_EQ(run({"git", "merge-base", "--is-ancestor", culprit, "phoenix/loop-test"}, repo).exit_code, 0)
      << "history was rewritten instead of reverted";
  // Both heals ran, each shown its own task's change.
  int heals_twice = 0, heals_triple = 0;
  for (const std::string& l : util::split_lines(read(tmp / "agent.jsonl"))) {
    if (l.empty()) continue;
    const std::string prompt = Json::parse(l)["prompt"];
    if (prompt.find(kHealPrompt) == std::string::npos) continue;
    heals_twice += prompt.find("calc_twice") != std::string::npos ? 1 : 0;
    heals_triple += prompt.find("calc_triple") != std::string::npos ? 1 : 0;
  }
  EXPECT_GE(heals_twice, 1);
  EXPECT_GE(heals_triple, 1);
  // Each worker's checkpoint is of its own tree, holding its own change.
  std::map<std::string, std::string> attempt;  // worker tree -> its attempt checkpoint
  for (const char* w : {"loop-test-w1", "loop-test-w2"}) {
    const std::string ref = std::string("refs/phoenix/checkpoints/worktrees/") + w + "/attempt";
    attempt[w] = util::trim(git(repo, {"for-each-ref", "--format=%(objectname)", ref}));
  }
  ASSERT_FALSE(attempt["loop-test-w1"].empty()) << git(repo, {"for-each-ref", "refs/phoenix/checkpoints/"});
  ASSERT_FALSE(attempt["loop-test-w2"].empty()) << git(repo, {"for-each-ref", "refs/phoenix/checkpoints/"});
  std::set<std::string> changes;
  for (const auto& [w, cp] : attempt) {
    const bool twice = git(repo, {"show", cp + ":src/calc.c"}).find("calc_twice") != std::string::npos;
    const bool triple = git(repo, {"show", cp + ":include/calc.h"}).find("calc_triple") != std::string::npos;
    EXPECT_NE(twice, triple) << w << "'s checkpoint holds " << (twice ? "both" : "neither") << " changes";
    changes.insert(twice ? "twice" : "triple");
  }
  EXPECT_EQ(changes.size(), 2u) << "one worker's checkpoint overwrote the other's";
  for (const char* tree : {"loop-test-w1", "loop-test-w2", "bisect"})
    EXPECT_EQ(util::FileLock::holder_pid(lock_of(tree)), 0) << tree;
  EXPECT_FALSE(fs::exists(lock_of("loop-test-w3"))) << "a third worker tree was taken with two free";
}

#endif  // PHOENIX_LOOP_BIN

}  // namespace
}  // namespace phoenix::test
