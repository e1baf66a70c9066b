// `phoenix run --fixer bisect` side by side: runs at the same time in
// worktrees of one repository each take bisect trees of their own (locked
// while used), never share or move another run's; a lock left by a dead run
// or a lock file that does not parse is taken over with a warning; a
// failure of Phoenix's own (its tree, its setup) is retried once in a fresh
// tree and, failing again, is Phoenix's failure, not an escalation.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "fixers/bisect.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "test_util.h"
#include "util/json.h"
#include "util/lock.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

// The check reads two settings; each side branch breaks one of them.
const char* kCheck =
    "#!/bin/sh\n"
    "sleep 0.4\n"
    ". ./src/a.conf\n"
    ". ./src/b.conf\n"
    "[ \"$A\" = 1 ] && [ \"$B\" = 1 ] || { echo \"FAIL settings_test: A=$A B=$B\"; exit 1; }\n"
    "echo ok\n";

class BisectSideBySide : public ::testing::Test {
 protected:
  void SetUp() override {
    // Phoenix's trees in a folder of the test's own, so the lock files
    // are where the test looks.
    ::setenv("PHOENIX_TREES_DIR", (tmp / "trees").c_str(), 1);
  }
  void TearDown() override { ::unsetenv("PHOENIX_TREES_DIR"); }

  // A repository at `dir` whose check is green, blessed known-good by a
  // run; `extra` goes into phoenix.json.
  std::string make_repo(const std::string& dir, const Json& extra = Json::object()) {
    init_repo(dir);
    write(dir, "check.sh", kCheck);
    fs::permissions(dir + "/check.sh", fs::perms::owner_all, fs::perm_options::add);
    write(dir, "src/a.conf", "A=1\n");
    write(dir, "src/b.conf", "B=1\n");
    write(dir, ".gitignore", ".phoenix/\nincidents/\n");
    Json cfg = {
        {"checks", {{{"id", "unit"}, {"kind", "command_exit"}, {"target", {"./check.sh"}}, {"editable", {"src/**"}}}}},
        {"fixers", {"bisect"}},
        {"bisect", {{"parallel", 2}}}};
    for (auto it = extra.begin(); it != extra.end(); ++it) cfg[it.key()] = it.value();
    write(dir, "phoenix.json", cfg.dump(2));
    commit_all(dir, "initial");
    CliRun bless = run_phoenix(dir, {"run"});
    EXPECT_EQ(bless.code, 0) << bless.out;
    return dir;
  }

  // Commits on `dir`'s branch: a feature, the regression (`file` gets
  // `bad`), more work. Returns the regression's sha.
  std::string regress(const std::string& dir, const std::string& tag, const std::string& file, const std::string& bad) {
    write(dir, "src/" + tag + "-feature.txt", "x\n");
    commit_all(dir, tag + ": feature");
    write(dir, "src/" + file, bad);
    std::string culprit = commit_all(dir, tag + ": tune " + file);
    write(dir, "src/" + tag + "-after.txt", "y\n");
    commit_all(dir, tag + ": more work");
    return culprit;
  }

  std::string lock_of(const std::string& repo, const std::string& tree) {
    return layout::tree_lock(gitx::Repo::open(repo), tree);
  }

  // Healed by a revert on top, the branch green, nothing left behind.
  void expect_healed(const std::string& dir, const CliRun& r, const std::string& file, const std::string& good) {
    EXPECT_EQ(r.code, 0) << dir << ":\n" << r.out;
    EXPECT_NE(r.out.find("HEALED"), std::string::npos) << r.out;
    EXPECT_EQ(read(dir + "/src/" + file), good) << dir;
    EXPECT_EQ(util::trim(git(dir, {"log", "-1", "--format=%s"})), "phoenix: heal unit (bisect)") << dir;
    EXPECT_EQ(git(dir, {"status", "--porcelain"}), "") << dir;
    EXPECT_EQ(run({"./check.sh"}, dir).exit_code, 0) << dir << " is not green";
    EXPECT_FALSE(fs::exists(dir + "/incidents")) << dir;
    EXPECT_FALSE(fs::exists(dir + "/.phoenix/ESCALATED")) << dir;
  }

  ScopedTempDir tmp;
};

// How many times the two runs below meet, each time from random start
// offsets: one repository and its two worktrees serve every round (a new
// regression on each branch per round), so a round costs two small bisects.
constexpr int kSideBySideRounds = 20;

// What users hit: two runs at once in two worktrees of one repository, each
// branch with its own regression; one used to crash on the other's tree and
// escalate. Both heal, every time, whatever the order they start in; each
// keeps its own known-good and its own checkpoint refs.
TEST_F(BisectSideBySide, TwoRunsAtOnceInTwoWorktreesBothHealEveryRound) {
  const unsigned seed = static_cast<unsigned>(std::random_device{}());
  std::mt19937 rng(seed);
  std::cout << "[ seed ] " << seed << "\n";
  const std::string repo = make_repo(tmp / "repo");
  const std::string wa = tmp / "wa", wb = tmp / "wb";
  git(repo, {"worktree", "add", "-q", "-b", "side-a", wa});
  git(repo, {"worktree", "add", "-q", "-b", "side-b", wb});
  for (int round = 0; round < kSideBySideRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + ", seed " + std::to_string(seed));
    const std::string n = std::to_string(round + 2);
    regress(wa, "a" + std::to_string(round), "a.conf", "A=" + n + "\n");
    regress(wb, "b" + std::to_string(round), "b.conf", "B=" + n + "\n");
    const std::string tip_a = rev_parse(wa, "HEAD"), tip_b = rev_parse(wb, "HEAD");
    // Both start within 250 ms of each other, either first, so that they
    // search at the same time; each blesses its own branch's known-good.
    std::uniform_int_distribution<int> offset(0, 250);
    const int da = offset(rng), db = offset(rng);
    CliRun ra{-1, ""}, rb{-1, ""};
    std::thread ta([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(da));
      ra = run_phoenix(wa, {"run", "--fixer", "bisect"});
    });
    std::thread tb([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(db));
      rb = run_phoenix(wb, {"run", "--fixer", "bisect"});
    });
    ta.join();
    tb.join();
    SCOPED_TRACE("offsets a " + std::to_string(da) + " ms, b " + std::to_string(db) + " ms");
    expect_healed(wa, ra, "a.conf", "A=1\n");
    expect_healed(wb, rb, "b.conf", "B=1\n");
    EXPECT_EQ(read(wa + "/src/b.conf"), "B=1\n");
    EXPECT_EQ(read(wb + "/src/a.conf"), "A=1\n");
    EXPECT_EQ(rev_parse(repo, "refs/phoenix/known-good/side-a"), rev_parse(wa, "HEAD")) << "known-good per branch";
    EXPECT_EQ(rev_parse(repo, "refs/phoenix/known-good/side-b"), rev_parse(wb, "HEAD")) << "known-good per branch";
    // Each run's checkpoints are its own tree's: taken on its own tip.
    EXPECT_EQ(rev_parse(repo, "refs/phoenix/checkpoints/worktrees/wa/pre-run^"), tip_a);
    EXPECT_EQ(rev_parse(repo, "refs/phoenix/checkpoints/worktrees/wb/pre-run^"), tip_b);
    EXPECT_EQ(rev_parse(repo, "refs/phoenix/checkpoints/worktrees/wa/attempt^"), tip_a);
    EXPECT_EQ(rev_parse(repo, "refs/phoenix/checkpoints/worktrees/wb/attempt^"), tip_b);
    // No lock is left held, and nothing had to be taken over.
    for (size_t t = 0; t < fixers::kMaxBisectTrees; ++t) {
      const std::string lock = lock_of(repo, fixers::bisect_tree_name(t));
      if (fs::exists(lock)) EXPECT_EQ(util::FileLock::holder_pid(lock), 0) << lock;
    }
    EXPECT_EQ(ra.out.find("warning"), std::string::npos) << ra.out;
    EXPECT_EQ(rb.out.find("warning"), std::string::npos) << rb.out;
    EXPECT_EQ(ra.out.find("put back"), std::string::npos) << ra.out;
    EXPECT_EQ(rb.out.find("put back"), std::string::npos) << rb.out;
    if (HasFailure()) break;
  }
  // Each run probes with 2 trees; a third was needed only when both ran at
  // once.
  EXPECT_TRUE(fs::exists(lock_of(repo, "bisect-3")))
      << "the runs never searched at the same time: the test proved nothing";
}

// Two heals at once, 50 rounds from fixed start offsets: with a setup step
// and a quick check, each run's setup and bisect steps overlap the other's
// heal commit. The programs either run are confined to their trees, so
// neither run's guard sees the other's commit as its program's doing: both
// heal commits stay on their branches, no line says "put back", both
// checkouts are clean.
TEST_F(BisectSideBySide, TwoHealsAtOnceNeverPutBackEachOthersCommit) {
  std::mt19937 rng(44);
  const std::string repo = make_repo(tmp / "repo", {{"setup", {{{"run", {"sh", "-c", "sleep 0.05"}}}}}});
  write(repo, "check.sh", std::string(kCheck).replace(std::string(kCheck).find("sleep 0.4"), 9, "sleep 0.05"));
  commit_all(repo, "a quicker check");
  ASSERT_EQ(run_phoenix(repo, {"run"}).code, 0);
  const std::string wa = tmp / "wa", wb = tmp / "wb";
  git(repo, {"worktree", "add", "-q", "-b", "side-a", wa});
  git(repo, {"worktree", "add", "-q", "-b", "side-b", wb});
  std::uniform_int_distribution<int> offset(0, 150);
  for (int round = 0; round < 50; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const std::string n = std::to_string(round + 2);
    regress(wa, "a" + std::to_string(round), "a.conf", "A=" + n + "\n");
    regress(wb, "b" + std::to_string(round), "b.conf", "B=" + n + "\n");
    const int da = offset(rng), db = offset(rng);
    CliRun ra{-1, ""}, rb{-1, ""};
    std::thread ta([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(da));
      ra = run_phoenix(wa, {"run", "--fixer", "bisect"});
    });
    std::thread tb([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(db));
      rb = run_phoenix(wb, {"run", "--fixer", "bisect"});
    });
    ta.join();
    tb.join();
    expect_healed(wa, ra, "a.conf", "A=1\n");
    expect_healed(wb, rb, "b.conf", "B=1\n");
    EXPECT_EQ(ra.out.find("put back"), std::string::npos) << ra.out;
    EXPECT_EQ(rb.out.find("put back"), std::string::npos) << rb.out;
    EXPECT_EQ(rev_parse(repo, "refs/phoenix/known-good/side-a"), rev_parse(wa, "HEAD"));
    EXPECT_EQ(rev_parse(repo, "refs/phoenix/known-good/side-b"), rev_parse(wb, "HEAD"));
    if (HasFailure()) break;
  }
}

// A lock a dead run left (its pid in the file) and a lock file that does not
// parse are taken over, each with a warning naming the file.
TEST_F(BisectSideBySide, StaleAndUnparseableLocksAreTakenOverWithAWarning) {
  const std::string repo = make_repo(tmp / "repo");
  regress(repo, "a", "a.conf", "A=2\n");
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // reaped: a pid no process has
  const std::string stale = lock_of(repo, "bisect"), garbled = lock_of(repo, "bisect-2");
  fs::create_directories(fs::path(stale).parent_path());
  write(fs::path(stale).parent_path().string(), "bisect.lock", std::to_string(child) + "\n");
  write(fs::path(garbled).parent_path().string(), "bisect-2.lock", "\x01\x02 not a pid at all\n");
  CliRun r = run_phoenix(repo, {"run", "--fixer", "bisect"});
  expect_healed(repo, r, "a.conf", "A=1\n");
  EXPECT_NE(r.out.find("phoenix: warning: took over the stale lock " + stale + ": pid " + std::to_string(child) +
                       " is not running"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("phoenix: warning: took over the lock " + garbled + ": its record does not parse"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(util::FileLock::holder_pid(stale), 0);
  EXPECT_EQ(util::FileLock::holder_pid(garbled), 0);
  // Both trees were the run's: the next run says nothing.
  regress(repo, "c", "a.conf", "A=3\n");
  CliRun again = run_phoenix(repo, {"run", "--fixer", "bisect"});
  EXPECT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(again.out.find("warning"), std::string::npos) << again.out;
}

// Every tree held by a live process: the run waits, saying for whom, and
// when none is freed in time it stops as Phoenix's own failure: exit 1, no
// incident, no rollback, no attempt counted, the branch as it was.
TEST_F(BisectSideBySide, AllTreesHeldIsAWaitThenPhoenixsOwnFailureNotAnEscalation) {
  const std::string repo = make_repo(tmp / "repo", {{"harness", {{"command", {"true"}}, {"timeout_s", 2}}}});
  regress(repo, "a", "a.conf", "A=2\n");
  const std::string head = rev_parse(repo, "HEAD");
  std::vector<std::unique_ptr<util::FileLock>> held;
  for (size_t t = 0; t < fixers::kMaxBisectTrees; ++t)
    held.push_back(std::make_unique<util::FileLock>(lock_of(repo, fixers::bisect_tree_name(t)), 0, "the test"));
  CliRun r = run_phoenix(repo, {"run", "--fixer", "bisect"});
  EXPECT_EQ(r.code, 1) << r.out;
  const std::string me = "pid " + std::to_string(::getpid());
  EXPECT_NE(r.out.find("all 8 bisect trees of this repository are in use (bisect, bisect-2, "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("bisect-8 by " + me + " ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("waiting up to 2 s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Phoenix's own failure, not the code's"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("ESCALATED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("REJECTED"), std::string::npos) << r.out;
  EXPECT_EQ(rev_parse(repo, "HEAD"), head);
  EXPECT_FALSE(fs::exists(repo + "/incidents"));
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/ESCALATED"));
  EXPECT_EQ(git(repo, {"status", "--porcelain"}), "");
  // No tree was made or moved while every one was held.
  EXPECT_FALSE(fs::exists(layout::worktree_path(gitx::Repo::open(repo), "bisect")));
}

// The setup passed at known-good (everything was green there); failing there
// now is the tree's environment. One more try in fresh trees, then
// Phoenix's own failure: not counted against the code, not escalated.
TEST_F(BisectSideBySide, SetupFailingAtKnownGoodIsPhoenixsOwnFailure) {
  const std::string repo = make_repo(
      tmp / "repo", {{"setup", {{{"run", {"sh", "-c", "test ! -f src/legacy.txt"}}, {"inputs", {"src/**"}}}}}});
  // Known-good holds src/legacy.txt, which the setup refuses (phoenix run
  // measures the user's tree, where no setup runs); the regression drops it.
  write(repo, "src/legacy.txt", "old\n");
  commit_all(repo, "keep the legacy file");
  ASSERT_EQ(run_phoenix(repo, {"run"}).code, 0);  // known-good := here
  const std::string good = rev_parse(repo, "refs/phoenix/known-good/main");
  fs::remove(repo + "/src/legacy.txt");
  write(repo, "src/a.conf", "A=2\n");
  commit_all(repo, "drop the legacy file, tune a.conf");
  write(repo, "src/later.txt", "z\n");
  const std::string head = commit_all(repo, "more work");
  CliRun r = run_phoenix(repo, {"run", "--fixer", "bisect", "--explain"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("the setup failed at known-good " + good.substr(0, 7)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Phoenix's own failure, not the code's"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("ESCALATED"), std::string::npos) << r.out;
  EXPECT_EQ(rev_parse(repo, "HEAD"), head);
  EXPECT_FALSE(fs::exists(repo + "/incidents"));
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/ESCALATED"));
}

#if defined(PHOENIX_FAULT_POINTS) && PHOENIX_FAULT_POINTS
// A git failure in bisect's tree (here the first worktree add fails with
// EIO) is Phoenix's own: the search runs again in a fresh tree and heals.
// Before, it was a crashed, rejected proposal and an escalation.
TEST_F(BisectSideBySide, AGitFailureInItsTreeIsRetriedOnceInAFreshTree) {
  const std::string repo = make_repo(tmp / "repo");
  regress(repo, "a", "a.conf", "A=2\n");
  CliRun r = run_phoenix(repo, {"run", "--fixer", "bisect"}, 120, {{"PHOENIX_FAULT", "worktree-add@1:eio"}});
  expect_healed(repo, r, "a.conf", "A=1\n");
  EXPECT_EQ(r.out.find("REJECTED"), std::string::npos) << r.out;
}
#endif

}  // namespace
}  // namespace phoenix::test
