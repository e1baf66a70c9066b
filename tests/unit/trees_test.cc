// layout/trees: the trees of one kind that runs side by side share, each
// locked by the run using it; and layout's checkpoint refs, a pair per tree.
#include "layout/trees.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gitx/repo.h"
#include "layout/layout.h"
#include "test_util.h"
#include "util/lock.h"

namespace phoenix::layout {
namespace {

class Trees : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("PHOENIX_TREES_DIR", (tmp / "trees").c_str(), 1);
    test::init_repo(tmp / "repo");
    test::write(tmp / "repo", "a.txt", "a\n");
    test::commit_all(tmp / "repo", "initial");
  }
  void TearDown() override { ::unsetenv("PHOENIX_TREES_DIR"); }

  TreeFamily hooks(size_t max) {
    return {"hook", max, [](size_t i) { return numbered_tree("hook", i); }};
  }

  test::ScopedTempDir tmp;
};

// A tree held by another run is skipped: the next free one is taken, and
// the holders are named with their pid and command.
TEST_F(Trees, AHeldTreeIsSkippedForTheNextFreeOne) {
  gitx::Repo repo = gitx::Repo::open(tmp / "repo");
  util::FileLock other(tree_lock(repo, "hook"), 0, "the other run's tree");
  std::vector<std::string> said;
  std::vector<HeldTree> held;
  take_free_trees(repo, hooks(4), 2, held, [&](const std::string& l) { said.push_back(l); });
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].name, "hook-2");
  EXPECT_EQ(held[1].name, "hook-3");
  EXPECT_TRUE(said.empty());
  EXPECT_EQ(util::FileLock::holder_pid(tree_lock(repo, "hook-2")), ::getpid());
  const std::string who = tree_holders(repo, hooks(2));
  EXPECT_EQ(who.rfind("hook, hook-2 by pid " + std::to_string(::getpid()) + " (", 0), 0u) << who;
}

// Every tree held: a bounded wait that says for whom, then nothing; freed
// during the wait, it is taken.
TEST_F(Trees, AllHeldIsABoundedWaitNamingTheHolders) {
  gitx::Repo repo = gitx::Repo::open(tmp / "repo");
  auto a = std::make_unique<util::FileLock>(tree_lock(repo, "hook"), 0, "a");
  util::FileLock b(tree_lock(repo, "hook-2"), 0, "b");
  std::vector<std::string> said;
  const auto say = [&](const std::string& l) { said.push_back(l); };
  TakenTrees none = take_trees(repo, hooks(2), 1, std::chrono::steady_clock::now() + std::chrono::milliseconds(300), say);
  EXPECT_TRUE(none.held.empty());
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0].rfind("hook: all 2 hook trees of this repository are in use (hook, hook-2 by pid ", 0), 0u)
      << said[0];
  EXPECT_NE(said[0].find("waiting up to 0 s for one to be free"), std::string::npos) << said[0];
  said.clear();
  int polls = 0;
  TakenTrees got = take_trees(repo, hooks(2), 1, std::chrono::steady_clock::now() + std::chrono::seconds(30), say,
                              [&] {
                                if (++polls == 3) a.reset();  // the other run ends
                              });
  ASSERT_EQ(got.held.size(), 1u);
  EXPECT_EQ(got.held[0].name, "hook");
  ASSERT_EQ(said.size(), 2u);
  EXPECT_EQ(said[1], "hook: hook is free now");
}

// A lock file that does not parse is taken over with a warning naming it.
TEST_F(Trees, AnUnparseableLockIsTakenOverWithAWarningNamingTheFile) {
  gitx::Repo repo = gitx::Repo::open(tmp / "repo");
  const std::string lock = tree_lock(repo, "hook");
  test::write(std::filesystem::path(lock).parent_path().string(), "hook.lock", "garbage\n");
  std::vector<std::string> said;
  std::vector<HeldTree> held;
  take_free_trees(repo, hooks(4), 1, held, [&](const std::string& l) { said.push_back(l); });
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].name, "hook");
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0], "warning: took over the lock " + lock + ": its record does not parse (\"garbage\")");
}

// One pair of checkpoint refs per tree: the main work tree's, a linked
// worktree's by its git name.
TEST_F(Trees, CheckpointRefsArePerTree) {
  gitx::Repo main = gitx::Repo::open(tmp / "repo");
  EXPECT_EQ(pre_run_ref(main), "refs/phoenix/checkpoints/main/pre-run");
  EXPECT_EQ(attempt_ref(main), "refs/phoenix/checkpoints/main/attempt");
  test::git(tmp / "repo", {"worktree", "add", "-q", "-b", "other", tmp / "wt-other"});
  gitx::Repo other = gitx::Repo::open(tmp / "wt-other");
  EXPECT_EQ(pre_run_ref(other), "refs/phoenix/checkpoints/worktrees/wt-other/pre-run");
  EXPECT_EQ(attempt_ref(other), "refs/phoenix/checkpoints/worktrees/wt-other/attempt");
}

}  // namespace
}  // namespace phoenix::layout
