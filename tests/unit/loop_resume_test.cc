// --resume's reading of an earlier run (loop/resume.cc): what the run file
// and the state file of the earlier run give back, which e2e tests reach
// only through a killed phoenix-loop.
#include <gtest/gtest.h>

#include "gitx/repo.h"
#include "layout/layout.h"
#include "loop/internal.h"
#include "test_util.h"
#include "util/error.h"

namespace phoenix::loop {
namespace {

struct Earlier : ::testing::Test {
  test::ScopedTempDir tmp;
  std::string root = test::init_repo(tmp.path() + "/r");
  Options opt;
  config::Config cfg;
  std::unique_ptr<trace::Trace> trace;
  void SetUp() override {
    test::write(root, "a.txt", "a\n");
    test::commit_all(root, "first");
    opt.root = root;
    trace = std::make_unique<trace::Trace>(tmp.path() + "/trace.jsonl");
  }
};

TEST_F(Earlier, NoRunFileIsAUsageErrorNamingIt) {
  gitx::Repo main = gitx::Repo::open(root);
  internal::Loop l(opt, cfg, *trace, [](const std::string&) {});
  try {
    l.read_earlier_run(main);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(layout::loop_run_file(root)), std::string::npos) << e.what();
  }
}

TEST_F(Earlier, RunFileGivesBranchTreeSourceSkippedIgnoredWorkersAndQueue) {
  test::write(root, ".phoenix/loop-run.json",
              R"({"schema_version":1,"branch":"phoenix/loop-x","worktree":"/old/place","worktree_name":"loop-x",)"
              R"("tasks":"TASKS.md","prompt":"","skipped":[2,4],"ignored":["lint"],"workers":3,)"
              R"("queue":[{"task":{"index":1,"id":"t2","title":"two"},"base":"b","commit":"c","tries":2,"queued_at":"t"}]})");
  test::write(root, ".phoenix/loop-state.json", R"({"iteration":7,"session_retries":3})");
  gitx::Repo main = gitx::Repo::open(root);
  internal::Loop l(opt, cfg, *trace, [](const std::string&) {});
  util::Json prev = l.read_earlier_run(main);
  EXPECT_EQ(l.branch, "phoenix/loop-x");
  EXPECT_EQ(l.wt_name, "loop-x");
  EXPECT_EQ(l.wt, layout::worktree_path(main, "loop-x"));  // where this version keeps it, not /old/place
  EXPECT_EQ(l.tasks_rel, "TASKS.md");
  EXPECT_EQ(l.skipped, (std::set<int>{2, 4}));
  EXPECT_EQ(l.ignored, (std::set<std::string>{"lint"}));
  EXPECT_EQ(l.workers, 3);
  ASSERT_EQ(l.queue.size(), 1u);
  EXPECT_EQ(l.queue[0].id, "t2");
  EXPECT_EQ(l.queue[0].tries, 2);
  EXPECT_EQ(prev.value("iteration", 0), 7);
  l.restore_counters(prev);
  EXPECT_EQ(l.iteration.load(), 7);
  EXPECT_EQ(l.session_retries.load(), 3);
}

TEST_F(Earlier, UnreadableStateCostsTheCountersNotTheRun) {
  test::write(root, ".phoenix/loop-run.json", R"({"branch":"b","worktree_name":"loop-b","workers":1})");
  test::write(root, ".phoenix/loop-state.json", "{ not json");
  gitx::Repo main = gitx::Repo::open(root);
  opt.workers = 2;  // --workers given: the earlier run's number does not count
  internal::Loop l(opt, cfg, *trace, [](const std::string&) {});
  util::Json prev = l.read_earlier_run(main);
  EXPECT_TRUE(prev.is_null());
  EXPECT_EQ(l.branch, "b");
  EXPECT_EQ(l.workers, 1);  // setup() sets --workers after this
}

}  // namespace
}  // namespace phoenix::loop
