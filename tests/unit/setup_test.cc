// setup/setup.h and layout/layout.h: the environment of Phoenix's own trees,
// run for real (sh as the step) in real repositories.
#include "setup/setup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "gitx/repo.h"
#include "setup/guard.h"
#include "layout/layout.h"
#include "test_util.h"
#include "util/json.h"
#include "util/overlay.h"
#include "util/path.h"

namespace fs = std::filesystem;
using namespace phoenix;
using phoenix::test::ScopedTempDir;

namespace {

// A step that counts its runs in runs.txt (ignored, like a build folder).
config::SetupStep counting_step(const std::vector<std::string>& inputs) {
  config::SetupStep s;
  s.run = {"sh", "-c", "echo run >> runs.txt; mkdir -p build; echo configured > build/done"};
  s.inputs = inputs;
  return s;
}

int runs(const std::string& tree) {
  if (!fs::exists(tree + "/runs.txt")) return 0;
  std::string t = test::read(tree + "/runs.txt");
  return static_cast<int>(std::count(t.begin(), t.end(), '\n'));
}

struct SetupTest : ::testing::Test {
  void SetUp() override {
    repo = test::init_repo(tmp / "repo");
    test::write(repo, ".gitignore", "runs.txt\nbuild/\n");
    test::write(repo, "CMakeLists.txt", "project(x)\n");
    test::write(repo, "src/CMakeLists.txt", "add_library(x x.c)\n");
    test::write(repo, "src/x.c", "int x;\n");
    test::commit_all(repo, "init");
    stamp = tmp / "stamps/tree.json";
  }
  ScopedTempDir tmp;
  std::string repo, stamp;
};

}  // namespace

TEST_F(SetupTest, RunsOnceThenOnlyWhenAnInputChanges) {
  std::vector<config::SetupStep> steps{counting_step({"**/CMakeLists.txt"})};
  setup::Result r = setup::ensure(steps, repo, stamp);
  EXPECT_TRUE(r.ok && r.ran) << r.signal;
  EXPECT_EQ(runs(repo), 1);
  EXPECT_TRUE(fs::exists(repo + "/build/done"));
  EXPECT_TRUE(fs::exists(stamp));

  // Nothing it reads changed: nothing runs, whatever else changed.
  test::write(repo, "src/x.c", "int x = 2;\n");
  r = setup::ensure(steps, repo, stamp);
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.ran);
  EXPECT_EQ(runs(repo), 1);

  // An input at any depth changed (uncommitted): it runs again.
  test::write(repo, "src/CMakeLists.txt", "add_library(x x.c y.c)\n");
  r = setup::ensure(steps, repo, stamp);
  EXPECT_TRUE(r.ran);
  EXPECT_EQ(runs(repo), 2);

  // A new untracked input counts too; an ignored one does not.
  test::write(repo, "lib/CMakeLists.txt", "\n");
  EXPECT_TRUE(setup::ensure(steps, repo, stamp).ran);
  test::write(repo, "build/CMakeLists.txt", "\n");
  EXPECT_FALSE(setup::ensure(steps, repo, stamp).ran);
  EXPECT_EQ(runs(repo), 3);

  // Another step list is another environment.
  steps.push_back(counting_step({}));
  EXPECT_TRUE(setup::ensure(steps, repo, stamp).ran);
  EXPECT_EQ(runs(repo), 5);
}

TEST_F(SetupTest, WhatItMadeThatGitDoesNotIgnoreIsMadeAgainOnceGone) {
  test::write(repo, ".gitignore", "runs.txt\n");  // build/ not ignored
  test::commit_all(repo, "build/ not ignored");
  std::vector<config::SetupStep> steps{counting_step({"**/CMakeLists.txt"})};
  ASSERT_TRUE(setup::ensure(steps, repo, stamp).ran);
  EXPECT_FALSE(setup::ensure(steps, repo, stamp).ran);
  fs::remove_all(repo + "/build");  // what moving a persistent worktree does to untracked files
  EXPECT_TRUE(setup::ensure(steps, repo, stamp).ran);
  EXPECT_TRUE(fs::exists(repo + "/build/done"));
  EXPECT_EQ(runs(repo), 2);
}

TEST_F(SetupTest, AFailedStepIsItsOwnSignalAndRunsAgainNextTime) {
  config::SetupStep bad;
  bad.run = {"sh", "-c", "echo run >> runs.txt; echo 'npm ERR! lockfile out of date' >&2; exit 3"};
  bad.inputs = {"CMakeLists.txt"};
  config::SetupStep never = counting_step({});
  never.run = {"sh", "-c", "touch never-ran"};
  std::vector<config::SetupStep> steps{bad, never};
  setup::Result r = setup::ensure(steps, repo, stamp);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.ran);
  EXPECT_EQ(
      r.signal,
      "setup failed: sh -c 'echo run >> runs.txt; echo '\\''npm ERR! lockfile out of date'\\'' >&2; exit 3': exit=3")
      << r.signal;
  EXPECT_NE(r.evidence.find("npm ERR! lockfile out of date"), std::string::npos) << r.evidence;
  EXPECT_FALSE(fs::exists(repo + "/never-ran")) << "steps after a failed one do not run";
  EXPECT_FALSE(fs::exists(stamp)) << "no stamp for a failed setup";
  EXPECT_FALSE(setup::ensure(steps, repo, stamp).ok);
  EXPECT_EQ(runs(repo), 2) << "a failed setup runs again";

  config::SetupStep missing;
  missing.run = {"no-such-setup-tool-xyz"};
  r = setup::ensure({missing}, repo, stamp);
  EXPECT_EQ(r.signal, "setup failed: no-such-setup-tool-xyz: not found");
}

TEST_F(SetupTest, StepsSeeTheTreeAsTheirWorkingDirectoryAndPwd) {
  config::SetupStep s;
  s.run = {"sh", "-c", "pwd -P > where.txt; echo \"$PWD\" > pwd.txt"};
  ASSERT_TRUE(setup::ensure({s}, repo, "").ok);
  const std::string real = fs::canonical(repo).string();
  EXPECT_EQ(test::read(repo + "/where.txt"), real + "\n");
  EXPECT_EQ(fs::canonical(test::read(repo + "/pwd.txt").substr(0, test::read(repo + "/pwd.txt").size() - 1)).string(),
            real);
  // Without a stamp file the steps always run.
  fs::remove(repo + "/where.txt");
  ASSERT_TRUE(setup::ensure({s}, repo, "").ran);
  EXPECT_TRUE(fs::exists(repo + "/where.txt"));
}

// A tree of Phoenix's own is a linked worktree: it shares the user's
// config, hooks and refs. A step that changes them (npm's `prepare` running
// husky, say) is put back, and each change said on stderr.
TEST_F(SetupTest, WhatAStepChangesInTheUsersRepositoryIsPutBackAndSaid) {
  if (!util::overlay_unavailable_reason().empty())
    GTEST_SKIP() << "steps are not confined here (confine_test.cc has the fingerprint's rules): "
                 << util::overlay_unavailable_reason();
  test::write(repo, "b.txt", "b\n");
  test::commit_all(repo, "second");
  const std::string tree = tmp / "tree";
  test::git(repo, {"worktree", "add", "-q", "--detach", tree, "HEAD"});
  const std::string before = test::repo_control_state(repo);
  const std::string main_before = test::rev_parse(repo, "main");

  config::SetupStep s;
  s.run = {"sh", "-c", test::hostile_git_script("git")};
  ::testing::internal::CaptureStderr();
  setup::Result r = setup::ensure({s}, tree, "");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(r.ok) << r.signal << r.evidence;

  EXPECT_EQ(test::repo_control_state(repo), before);
  EXPECT_EQ(test::rev_parse(repo, "main"), main_before);
  EXPECT_FALSE(fs::exists(repo + "/.git/hooks/pre-push"));
  EXPECT_EQ(test::trim(test::git(repo, {"config", "--get", "user.email"})), "test@example.com");
  // Phoenix's own refs are Phoenix's business: not told, and a confined
  // step's write never lands (without confinement it is left as it is).
  if (util::overlay_unavailable_reason().empty()) EXPECT_EQ(test::git(repo, {"for-each-ref", "refs/phoenix/"}), "");

  for (const std::string& line : test::hostile_git_put_back_lines("setup")) {
    EXPECT_NE(err.find(line), std::string::npos) << line << "\n" << err;
    EXPECT_TRUE(std::any_of(r.put_back.begin(), r.put_back.end(), [&](const std::string& l) {
      return l.find(line) != std::string::npos;
    })) << line;
  }
  EXPECT_EQ(r.put_back.size(), 4u) << err;
  EXPECT_EQ(err.find("refs/phoenix/mine"), std::string::npos) << err;
  EXPECT_NE(err.find("phoenix: setup changed core.hooksPath to /tmp/x; put back\n"), std::string::npos) << err;

  // A step that leaves everything alone says nothing.
  s.run = {"sh", "-c", "git status >/dev/null; echo built > out.txt"};
  ::testing::internal::CaptureStderr();
  r = setup::ensure({s}, tree, "");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(r.put_back.empty());
}

// The index of the user's checkout, and a hook put back by content and mode.
TEST_F(SetupTest, TheChecksoutsIndexAndAnEditedHookArePutBack) {
  test::write(repo, ".git/hooks/pre-commit", "#!/bin/sh\necho mine\n");
  fs::permissions(repo + "/.git/hooks/pre-commit", fs::perms::owner_all);
  const std::string tree = tmp / "tree";
  test::git(repo, {"worktree", "add", "-q", "--detach", tree, "HEAD"});
  const std::string before = test::repo_control_state(repo);
  config::SetupStep s;
  s.run = {"sh", "-c",
           "common=$(git rev-parse --path-format=absolute --git-common-dir); echo evil > \"$common/hooks/pre-commit\"; "
           "chmod 644 \"$common/hooks/pre-commit\"; GIT_INDEX_FILE=\"$common/index\" git rm -q --cached src/x.c"};
  ::testing::internal::CaptureStderr();
  setup::Result r = setup::ensure({s}, tree, "");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(r.ok) << r.signal << r.evidence;
  EXPECT_EQ(test::repo_control_state(repo), before);
  EXPECT_EQ(fs::status(repo + "/.git/hooks/pre-commit").permissions() & fs::perms::owner_exec, fs::perms::owner_exec);
  EXPECT_EQ(test::porcelain(repo), "");
  EXPECT_NE(err.find("setup changed hook "), std::string::npos) << err;
  EXPECT_NE(err.find("setup changed the index of "), std::string::npos) << err;
  EXPECT_NE(err.find("(1 entry); put back"), std::string::npos) << err;
}

// Two programs at once (two loop workers' `npm ci`): the guard taken while
// the first one's change is there must not put that change back.
TEST_F(SetupTest, GuardsAliveAtOnceShareTheFirstFingerprint) {
  // Where programs are confined nothing is put back: this is the fingerprint alone.
  ::setenv("PHOENIX_CONFINE", "0", 1);
  struct Unset {
    ~Unset() { ::unsetenv("PHOENIX_CONFINE"); }
  } unset;
  const std::string tree = tmp / "tree";
  test::git(repo, {"worktree", "add", "-q", "--detach", tree, "HEAD"});
  const std::string before = test::repo_control_state(repo);
  {
    std::optional<setup::Guard> first(std::in_place, tree);
    test::git(tree, {"config", "core.hooksPath", "/tmp/first"});
    const setup::Guard second(tree);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(first->restore("setup").size(), 1u);
    first.reset();
    EXPECT_TRUE(second.restore("setup").empty());
    ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(test::repo_control_state(repo), before);
  }
  // Once none is alive, the next guard takes a fingerprint of its own.
  test::git(repo, {"config", "core.hooksPath", "/tmp/the-users-own"});
  const setup::Guard third(tree);
  EXPECT_TRUE(third.restore("setup").empty());
  EXPECT_EQ(test::trim(test::git(repo, {"config", "--get", "core.hooksPath"})), "/tmp/the-users-own");
}

TEST(Layout, TreesLiveInTheGitDirectoryAndTheStateFolderIgnoresItself) {
  ScopedTempDir tmp;
  std::string repo = test::init_repo(tmp / "repo");
  test::write(repo, "a.txt", "a\n");
  test::commit_all(repo, "init");
  gitx::Repo r = gitx::Repo::open(repo);
  // Outside the work tree and the git directory: node's test runner walks
  // .git too. One folder per repository, named for it, owned by it.
  const std::string root = layout::trees_root(r);
  const std::string top = fs::canonical(repo).string();
  EXPECT_FALSE(util::same_or_inside(root, top)) << root;
  EXPECT_EQ(fs::path(root).filename().string().rfind("repo-", 0), 0u) << root;
  EXPECT_EQ(test::read(root + "/repository"), top + "/.git\n");
  EXPECT_EQ(layout::worktree_path(r, "bisect"), root + "/worktrees/bisect");
  EXPECT_EQ(layout::sandboxes_dir(r), root + "/sandboxes");
  EXPECT_EQ(layout::setup_stamp(r, "hook"), root + "/setup/hook.json");

  // The folder of a repository that is gone is cleared by the next claim.
  {
    ScopedTempDir other;
    std::string gone = test::init_repo(other / "gone");
    test::write(gone, "a.txt", "a\n");
    test::commit_all(gone, "init");
    const std::string trees = fs::path(root).parent_path().string();
    const std::string stale = trees + "/gone-000000000000";
    fs::create_directories(stale + "/worktrees/bisect");
    test::write(stale, "repository", other / "gone/.git-that-was\n");
    const std::string alive = trees + "/alive-000000000000";
    fs::create_directories(alive + "/worktrees/x");
    test::write(alive, "repository", repo + "/.git\n");
    layout::trees_root(gitx::Repo::open(gone));  // a first claim in this process prunes
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_TRUE(fs::exists(alive));
    fs::remove_all(alive);
  }

  layout::ensure_state_dir(repo);
  test::write(repo, ".phoenix/trace.jsonl", "{}\n");
  test::write(repo, ".phoenix/lock", "1\n");
  test::write(repo, ".phoenix/contracts/orders.json", "{}\n");
  test::write(repo, ".phoenix/baselines/chart.png", "png\n");
  test::git(repo, {"add", "-A"});
  std::string staged = test::git(repo, {"diff", "--cached", "--name-only"});
  EXPECT_EQ(staged, ".phoenix/baselines/chart.png\n.phoenix/contracts/orders.json\n");
  EXPECT_EQ(test::git(repo, {"status", "--porcelain", "--untracked-files=all"}),
            "A  .phoenix/baselines/chart.png\nA  .phoenix/contracts/orders.json\n");
  // A .gitignore the user edited is theirs.
  test::write(repo, ".phoenix/.gitignore", "*\n");
  layout::ensure_state_dir(repo);
  EXPECT_EQ(test::read(repo + "/.phoenix/.gitignore"), "*\n");
}

TEST(Layout, OldTreesInsideTheWorkTreeAreRemovedOnce) {
  ScopedTempDir tmp;
  std::string repo = test::init_repo(tmp / "repo");
  test::write(repo, "a.test.js", "test\n");
  std::string head = test::commit_all(repo, "init");
  // What an earlier version left: a registered worktree, a sandbox, and a
  // folder of the user's own that Phoenix must not touch.
  test::git(repo, {"worktree", "add", "--detach", repo + "/.phoenix/worktrees/bisect", head});
  test::write(repo, ".phoenix/sandboxes/sandbox-abc123/work/a.test.js", "test\n");
  test::write(repo, ".phoenix/worktrees/notes/keep.txt", "mine\n");
  test::write(repo, ".phoenix/journal.sqlite", "db");
  gitx::Repo r = gitx::Repo::open(repo);
  std::vector<std::string> done = layout::migrate_legacy_trees(r);
  ASSERT_EQ(done.size(), 2u) << ::testing::PrintToString(done);
  EXPECT_EQ(done[0], "removed the old worktree .phoenix/worktrees/bisect");
  EXPECT_EQ(done[1], "removed the old sandbox .phoenix/sandboxes/sandbox-abc123");
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/worktrees/bisect"));
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/sandboxes"));
  EXPECT_TRUE(fs::exists(repo + "/.phoenix/worktrees/notes/keep.txt"));
  EXPECT_TRUE(fs::exists(repo + "/.phoenix/journal.sqlite"));
  EXPECT_EQ(test::git(repo, {"worktree", "list", "--porcelain"}).find("bisect"), std::string::npos);
  EXPECT_TRUE(layout::migrate_legacy_trees(r).empty()) << "once";
}
