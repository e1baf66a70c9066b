// layout/: the names are the on-disk format. Users, docs, pollers of
// loop-state.json and earlier versions' files depend on them, so each is
// checked here as it is spelled on disk; a rename fails this test.
#include "layout/layout.h"

#include <gtest/gtest.h>

#include <string>

#include "gitx/author.h"
#include "gitx/repo.h"
#include "layout/paths.h"
#include "test_util.h"
#include "util/text.h"

using namespace phoenix;
using phoenix::test::ScopedTempDir;

TEST(Layout, EveryFileInTheStateFolderHasItsOnDiskName) {
  const std::string r = "/repo";
  EXPECT_EQ(layout::state_dir(r), "/repo/.phoenix");
  EXPECT_EQ(layout::lock_file(r), "/repo/.phoenix/lock");
  EXPECT_EQ(layout::loop_lock_file(r), "/repo/.phoenix/loop.lock");
  EXPECT_EQ(layout::trace_file(r), "/repo/.phoenix/trace.jsonl");
  EXPECT_EQ(layout::journal_file(r), "/repo/.phoenix/journal.sqlite");
  EXPECT_EQ(layout::escalated_flag(r), "/repo/.phoenix/ESCALATED");
  EXPECT_EQ(layout::stop_flag(r), "/repo/.phoenix/STOP");
  EXPECT_EQ(layout::loop_state_file(r), "/repo/.phoenix/loop-state.json");
  EXPECT_EQ(layout::loop_run_file(r), "/repo/.phoenix/loop-run.json");
  EXPECT_EQ(layout::task_prompt_file(r), "/repo/.phoenix/prompt-task.md");
  EXPECT_EQ(layout::loop_prompt_file(r), "/repo/.phoenix/loop-prompt.md");
  EXPECT_EQ(layout::snapshots_dir(r), "/repo/.phoenix/snapshots");
  EXPECT_EQ(layout::measured_dir(r), "/repo/.phoenix/measured");
  EXPECT_EQ(layout::hook_runs_file(r), "/repo/.phoenix/hook-runs.jsonl");
  EXPECT_EQ(layout::unmeasured_pushes_file(r), "/repo/.phoenix/unmeasured-pushes.json");
  EXPECT_EQ(layout::hook_measured_file(r), "/repo/.phoenix/hook-measured.json");
  EXPECT_EQ(layout::legacy_worktrees_dir(r), "/repo/.phoenix/worktrees");
  EXPECT_EQ(layout::legacy_sandboxes_dir(r), "/repo/.phoenix/sandboxes");
  EXPECT_EQ(layout::incidents_dir(r), "/repo/incidents");
  EXPECT_EQ(layout::contract_file("orders"), ".phoenix/contracts/orders.json");
  EXPECT_EQ(layout::baseline_file("home"), ".phoenix/baselines/home.png");
  EXPECT_EQ(layout::keep_prefixes(), (std::vector<std::string>{".phoenix/", "incidents/"}));
  EXPECT_EQ(layout::state_prefixes(), (std::vector<std::string>{".phoenix/"}));
}

TEST(Layout, EveryRefHasItsOnDiskName) {
  EXPECT_EQ(layout::known_good_ref_of("main"), "refs/phoenix/known-good/main");
  EXPECT_EQ(layout::known_good_ref_of(""), "refs/phoenix/known-good/HEAD");
  EXPECT_STREQ(layout::kAbandonedPrefix, "refs/phoenix/abandoned/");
  EXPECT_STREQ(layout::kJournalRef, "refs/phoenix/journal");
  EXPECT_STREQ(layout::kJournalRemoteRef, "refs/phoenix/journal-remote");
  EXPECT_STREQ(layout::kMeasuredRef, "refs/phoenix/measured");
  EXPECT_STREQ(layout::kMeasuredRemoteRef, "refs/phoenix/measured-remote");
  EXPECT_STREQ(layout::kQueuePrefix, "refs/phoenix/queue/");
  EXPECT_STREQ(layout::kFetchedPrefix, "refs/phoenix/fetched/");
  EXPECT_EQ(layout::task_branch("t7"), "phoenix/task-t7");
  for (const std::string ref : {layout::known_good_ref_of("main"), std::string(layout::kJournalRef),
                                std::string(layout::kQueuePrefix), "refs/heads/" + layout::task_branch("t7")}) {
    bool own = false;
    for (const auto& p : layout::own_ref_prefixes()) own = own || util::starts_with(ref, p);
    EXPECT_TRUE(own) << ref << " is not under a prefix a RepoGuard leaves to Phoenix";
  }
}

// What `phoenix init` appends to the repository's .gitignore, read back by
// git itself: the run files are ignored, contracts and baselines are not.
TEST(Layout, TheRootGitignoreKeepsContractsAndBaselinesTracked) {
  ScopedTempDir tmp;
  const std::string repo = test::init_repo(tmp / "repo");
  test::write(repo, ".gitignore", layout::root_gitignore());
  test::write(repo, ".phoenix/trace.jsonl", "{}\n");
  test::write(repo, ".phoenix/contracts/orders.json", "{}\n");
  test::write(repo, ".phoenix/baselines/home.png", "png\n");
  const std::string untracked = test::git(repo, {"status", "--porcelain", "--untracked-files=all"});
  EXPECT_EQ(untracked.find("trace.jsonl"), std::string::npos) << untracked;
  EXPECT_NE(untracked.find(".phoenix/contracts/orders.json"), std::string::npos) << untracked;
  EXPECT_NE(untracked.find(".phoenix/baselines/home.png"), std::string::npos) << untracked;
  EXPECT_NE(layout::root_gitignore().find(layout::kRootIgnoreLine), std::string::npos);
}

// Every commit Phoenix makes names one author; git reads it back.
TEST(Layout, PhoenixCommitsCarryOneAuthor) {
  ScopedTempDir tmp;
  const std::string repo = test::init_repo(tmp / "repo");
  test::write(repo, "a.txt", "a\n");
  test::commit_all(repo, "init");
  gitx::Repo r = gitx::Repo::open(repo);
  r.write_blob_commit(layout::kJournalRef, "journal.jsonl", "{}\n", "phoenix: journal");
  EXPECT_EQ(util::trim(test::git(repo, {"log", "-1", "--format=%an <%ae>|%cn <%ce>", layout::kJournalRef})),
            "phoenix <phoenix@localhost>|phoenix <phoenix@localhost>");
  EXPECT_STREQ(gitx::kPhoenixAuthor.name, "phoenix");
  EXPECT_STREQ(gitx::kPhoenixAuthor.email, "phoenix@localhost");
}
