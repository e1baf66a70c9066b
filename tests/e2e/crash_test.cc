// Crashes at every step that writes, end to end: the built `phoenix` (and
// `phoenix-loop`) killed with SIGKILL at a named fault point (util/fault.h)
// or at a random moment, then `phoenix recover` and the next run. After each:
// every commit that existed is still reachable, the work tree is the
// pre-run state (or a verified heal commit on top of it), the journal passes
// PRAGMA integrity_check and the trace verifies.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <iostream>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "e2e/crash_fixture.h"
#include "test_util.h"
#include "util/json.h"
#include "util/text.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "util/path.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

class Crash : public CrashFixture {};

TEST_F(Crash, AfterCheckpoint) {
  configure_healing();
  crash_recover_rerun("after-checkpoint", true);
}

TEST_F(Crash, MidApply) {
  configure_healing();
  crash_recover_rerun("mid-apply", true);
}

TEST_F(Crash, AfterApplyBeforeVerify) {
  configure_healing();
  crash_recover_rerun("after-apply", true);
  // recover kept the half-done tree before restoring it.
  EXPECT_FALSE(git(repo, {"for-each-ref", "refs/phoenix/abandoned/"}).empty());
}

TEST_F(Crash, AfterApplyOnADirtyTreeKeepsTheUsersChanges) {
  configure_healing();
  write(repo, "src/other.sh", "A=mine\n");
  write(repo, "notes.txt", "my untracked notes\n");
  before = tracked_state();
  if (!kFaultPoints) GTEST_SKIP() << "fault points not compiled in";
  CliRun r = run_with_fault("after-apply", {"--allow-dirty"});
  expect_killed_at(r, "after-apply");
  EXPECT_EQ(read(repo + "/src/other.sh"), "A=2\n");  // the patch was applied over the user's change
  recover();
  EXPECT_EQ(tracked_state(), before);
  EXPECT_EQ(read(repo + "/src/other.sh"), "A=mine\n");
  EXPECT_EQ(read(repo + "/notes.txt"), "my untracked notes\n");
  expect_consistent("after recover");
}

TEST_F(Crash, WhileWritingTheIncident) {
  configure_escalating();
  crash_recover_rerun("mid-incident", false);
  // The note that the crash left empty was written by recover.
  for (const auto& e : fs::directory_iterator(repo + "/incidents"))
    EXPECT_NE(read(e.path().string()).find("## State: "), std::string::npos) << e.path();
}

TEST_F(Crash, MidRollback) {
  configure_escalating();
  git(repo, {"update-ref", "refs/phoenix/known-good/main", util::trim(git(repo, {"rev-parse", "HEAD~1"}))});
  commits_before = all_commits();
  crash_recover_rerun("mid-rollback", false, {"--rollback", "known-good"});
  // The escalation was completed: state line and flag.
  std::string flag = read(repo + "/.phoenix/ESCALATED");
  std::string note = read(util::trim(flag));
  EXPECT_NE(note.find("## State: rolled back to"), std::string::npos) << note;
}

TEST_F(Crash, MidJournalWrite) {
  configure_healing({"journal", "harness"});
  // The first journal transaction creates its schema; the second records the heal.
  crash_recover_rerun("mid-journal-write", true, {}, "mid-journal-write@2");
}

TEST_F(Crash, MidTraceAppend) {
  configure_healing();
  if (!kFaultPoints) GTEST_SKIP() << "fault points not compiled in";
  CliRun r = run_with_fault("mid-trace-append@4");
  expect_killed_at(r, "mid-trace-append");
  CliRun v = run_phoenix(repo, {"trace", "verify", "--json"});
  EXPECT_EQ(v.code, 1) << v.out;
  EXPECT_EQ(Json::parse(v.out)["kind"], "torn") << v.out;
  CliRun rec = recover();
  EXPECT_NE(rec.out.find("torn"), std::string::npos) << rec.out;
  expect_consistent("after recover");
  expect_next_run_works(0);
}

TEST_F(Crash, LoopResumesAfterAKillWhileWritingItsState) {
  if (!kFaultPoints) GTEST_SKIP() << "fault points not compiled in";
#ifndef PHOENIX_LOOP_BIN
  GTEST_SKIP() << "phoenix-loop is not built";
#else
  configure_loop("append work.txt 'x\\n'", Json::object(), 0.5);
  auto r = run({PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-crash"}, repo, {{"PHOENIX_FAULT", "state-write@4"}});
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.output;
  EXPECT_NE(r.output.find("fault point state-write"), std::string::npos) << r.output;
  // Pollers still read a whole state (the write was cut before its rename).
  Json mid = Json::parse(read(repo + "/.phoenix/loop-state.json"));
  EXPECT_TRUE(mid.contains("phase"));
  recover();
  auto resumed = run({PHOENIX_LOOP_BIN, "--resume"}, repo);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-crash:TASKS.md"}), "- [x] first task\n- [x] second task\n");
  Json end = Json::parse(read(repo + "/.phoenix/loop-state.json"));
  EXPECT_EQ(end["phase"], "complete");
  EXPECT_EQ(end["exit_code"], 0);
  // The user's checkout was never touched.
  EXPECT_EQ(tracked_state(), before);
  expect_consistent("after resume");
#endif
}

// Kills at random moments of a healing run (no fault point needed): the
// count is PHOENIX_RANDOM_KILLS (100 in .ci/run; 20 by default to keep the
// everyday suite fast).
TEST_F(Crash, RandomKills) {
  configure_healing({"journal", "harness"});
  int count = 20;
  if (const char* n = std::getenv("PHOENIX_RANDOM_KILLS")) count = std::atoi(n);
  // The first heal comes from the harness and fills the journal; the runs
  // after it replay the journal. How long such a run takes here sets the
  // range of the delays.
  int span_ms = 0;
  for (int probe = 0; probe < 2; ++probe) {
    auto t0 = std::chrono::steady_clock::now();
    CliRun r = run_phoenix(repo, {"run"});
    ASSERT_EQ(r.code, 0) << r.out;
    span_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
    // Back to the broken state (the heal commit stays reachable).
    git(repo, {"update-ref", "refs/phoenix/abandoned/probe-" + std::to_string(probe), "HEAD"});
    git(repo, {"reset", "--hard", head});
    git(repo, {"update-ref", "-d", "refs/phoenix/known-good/main"});
  }
  before = tracked_state();
  commits_before = all_commits();
  std::mt19937 rng(20261201);
  int killed_mid_run = 0;
  for (int i = 0; i < count; ++i) {
    SCOPED_TRACE("kill " + std::to_string(i));
    util::ProcessOptions po;
    po.argv = {phoenix_bin(), "run"};
    po.cwd = repo;
    po.timeout_s = 120;
    util::Subprocess proc(po);
    std::uniform_int_distribution<int> delay(0, std::max(span_ms, 20));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay(rng)));
    bool killed = false;
    if (proc.running()) {
      ::kill(static_cast<pid_t>(proc.pid()), SIGKILL);
      ++killed_mid_run;
      killed = true;
    }
    util::ProcessResult ended = proc.wait();
    // A run that finished before its kill was shorter than the span: later
    // delays are drawn from the shortest whole run seen, so they keep
    // landing inside runs as the machine's speed changes.
    if (!killed && ended.exit_code == 0) span_ms = std::min(span_ms, static_cast<int>(ended.duration_ms));
    CliRun rec = run_phoenix(repo, {"recover"});
    ASSERT_EQ(rec.code, 0) << rec.out;
    expect_consistent("random kill");
    if (HasFailure()) break;
    // Start the next round from the broken state again.
    if (util::trim(git(repo, {"rev-parse", "HEAD"})) != head) {
      git(repo, {"update-ref", "refs/phoenix/abandoned/test-" + std::to_string(i), "HEAD"});
      git(repo, {"reset", "--hard", head});
    }
    git(repo, {"update-ref", "-d", "refs/phoenix/known-good/main"});
    before = tracked_state();
    commits_before = all_commits();
  }
  std::cout << "[ figures  ] random kills: " << count << " runs, " << killed_mid_run
            << " killed mid-run, all recovered\n";
  EXPECT_GT(killed_mid_run, count / 2) << "most kills must land inside a run";
  expect_next_run_works(0);
}

}  // namespace
}  // namespace phoenix::test
