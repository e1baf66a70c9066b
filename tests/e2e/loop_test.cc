// phoenix-loop end to end: the built binary drives our scripted agent in
// throwaway repositories. Completion, escalation, stops and signals are
// decided by checks and files on disk, which is what these tests read.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "loop/loop.h"
#include "loop/tasks.h"
#include "test_util.h"
#include "util/error.h"
#include "util/json.h"
#include "util/text.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "util/lock.h"
#include "util/path.h"

// The tasks file and --until, without processes.
namespace phoenix::loop {
namespace {

TEST(LoopTasks, ParsesOpenAndDoneBoxesAndKeepsProse) {
  std::string text = "# T\n- [ ] one\n  * [x] two\n- [X] three\nprose - [ ] not\n- []  bad\n- [ ]\n+ [ ] four\r\n";
  auto t = parse_tasks(text);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].title, "one");
  EXPECT_FALSE(t[0].done);
  EXPECT_TRUE(t[1].done);
  EXPECT_TRUE(t[2].done);
  EXPECT_EQ(t[3].title, "four");
  EXPECT_EQ(t[3].id(), "t4");
  std::string ticked = tick_task(text, t[3].line);
  EXPECT_EQ(ticked, "# T\n- [ ] one\n  * [x] two\n- [X] three\nprose - [ ] not\n- []  bad\n- [ ]\n+ [x] four\r\n");
  EXPECT_EQ(tick_task(text, 4), text);  // prose is never ticked
}

TEST(LoopTasks, UntilParsesTimesAndRejectsJunk) {
  EXPECT_EQ(parse_until("2026-12-01T06:00:00Z", 0), 1796104800000LL);
  EXPECT_EQ(parse_until("2026-12-01T08:00+02:00", 0), 1796104800000LL);
  long long now = 1796104800000LL;
  long long t = parse_until("07:30", now);
  EXPECT_GT(t, now);
  EXPECT_LE(t - now, 24LL * 3600 * 1000);
  EXPECT_THROW(parse_until("tomorrow", now), UsageError);
  EXPECT_THROW(parse_until("25:00", now), UsageError);
  EXPECT_EQ(default_branch(1796104800000LL), "phoenix/loop-20261201");
}

}  // namespace
}  // namespace phoenix::loop

#ifdef PHOENIX_LOOP_BIN

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

class LoopTest : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string repo;
  std::string head;

  void SetUp() override {
    repo = init_loop_repo(tmp / "repo",
                          "# Tasks\n\nSome prose.\n\n- [ ] first task\n- [ ] second task\n- [ ] third task\n");
  }

  // A check that is red while src.txt says BROKEN; the agent runs `script`.
  void configure(const std::string& script, Json loop_extra = Json::object()) {
    Json cfg = {{"checks", Json::array({broken_check("nobreak", "src.txt")})},
                {"fixers", {"noop"}},
                {"harness", scripted_harness(script)},
                {"loop", loop_section(3, loop_extra)}};
    write(repo, "phoenix.json", cfg.dump(2));
    head = commit_all(repo, "initial");
  }

  CliRun loop(std::vector<std::string> args, double timeout_s = 120) { return run_loop(repo, args, timeout_s); }

  Json state() { return loop_state(repo); }
  std::string wt_file(const std::string& rel) {
    return read(layout::worktree_path(gitx::Repo::open(repo), "loop-test") + "/" + rel);
  }
  std::vector<std::string> subjects(const std::string& range) {
    return util::split_lines(git(repo, {"log", "--format=%s", range}));
  }
  // Events of the trace, in order.
  std::vector<std::string> events() {
    std::vector<std::string> out;
    for (const auto& l : util::split_lines(read(repo + "/.phoenix/trace.jsonl")))
      if (!l.empty()) out.push_back(Json::parse(l).value("event", ""));
    return out;
  }
};

TEST_F(LoopTest, ThreeTasksCompleteOnTheLoopBranch) {
  configure("append work.txt 'x\\n'");
  std::string before = read(repo + "/TASKS.md");
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  ASSERT_EQ(r.code, 0) << r.out;
  // Every task ticked in the branch's tasks file.
  std::string tasks = git(repo, {"show", "phoenix/loop-test:TASKS.md"});
  EXPECT_EQ(tasks, "# Tasks\n\nSome prose.\n\n- [x] first task\n- [x] second task\n- [x] third task\n");
  EXPECT_EQ(
      subjects(head + "..phoenix/loop-test"),
      (std::vector<std::string>{"phoenix-loop: third task", "phoenix-loop: second task", "phoenix-loop: first task"}));
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:work.txt"}), "x\nx\nx\n");
  // The user's checkout: same branch, same HEAD, same files, nothing staged.
  EXPECT_EQ(util::trim(git(repo, {"rev-parse", "HEAD"})), head);
  EXPECT_NE(util::trim(git(repo, {"symbolic-ref", "--short", "HEAD"})), "phoenix/loop-test");
  EXPECT_EQ(read(repo + "/TASKS.md"), before);
  EXPECT_FALSE(fs::exists(repo + "/work.txt"));
  EXPECT_EQ(git(repo, {"status", "--porcelain"}), "");
  Json s = state();
  EXPECT_EQ(s["phase"], "complete");
  EXPECT_EQ(s["exit_code"], 0);
  EXPECT_EQ(s["iteration"], 3);
  EXPECT_EQ(s["known_good"], util::trim(git(repo, {"rev-parse", "phoenix/loop-test"})));
  // `phoenix status` reads it.
  CliRun st = run_phoenix(repo, {"status", "--json"});
  ASSERT_EQ(st.code, 0) << st.out;
  Json sj = Json::parse(st.out);
  EXPECT_EQ(sj["phase"], "complete");
  EXPECT_EQ(sj["stale"], false);
  CliRun human = run_phoenix(repo, {"status"});
  EXPECT_NE(human.out.find("complete"), std::string::npos) << human.out;
}

TEST_F(LoopTest, StateHasExactlyTheSchemaFieldsAndReportCountsTasks) {
  configure("append work.txt 'x\\n'");
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  ASSERT_EQ(r.code, 0) << r.out;
  Json schema = Json::parse(read(std::string(PHOENIX_SOURCE_DIR) + "/templates/loop-state.schema.json"));
  std::set<std::string> want, have;
  for (const auto& k : schema["required"]) want.insert(k.get<std::string>());
  for (auto& [k, v] : schema["properties"].items()) EXPECT_TRUE(want.count(k)) << k;
  Json st = state();  // items() must not outlive the object it walks
  for (auto& [k, v] : st.items()) have.insert(k);
  EXPECT_EQ(have, want);
  CliRun rep = run_phoenix(repo, {"report", "--json", "--html", tmp / "report.html"});
  ASSERT_EQ(rep.code, 0) << rep.out;
  Json j = Json::parse(rep.out);
  EXPECT_EQ(j["tasks_done"].size(), 3u);
  EXPECT_EQ(j["tasks_skipped"].size(), 0u);
  EXPECT_TRUE(j["cost_usd"].is_null()) << "no CLI reported a cost: unknown, never 0";
  EXPECT_EQ(j["iterations"], 3);
  EXPECT_NE(read(tmp / "report.html").find("third task"), std::string::npos);
}

TEST_F(LoopTest, UnfixableBreakEscalatesWithIncidentBeforeRollback) {
  configure("write src.txt BROKEN\\n");
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  ASSERT_EQ(r.code, 2) << r.out;
  ASSERT_TRUE(fs::exists(repo + "/.phoenix/ESCALATED"));
  std::string incident = util::trim(read(repo + "/.phoenix/ESCALATED"));
  EXPECT_TRUE(fs::exists(incident)) << incident;
  EXPECT_NE(read(incident).find("# Incident"), std::string::npos);
  auto ev = events();
  auto inc = std::find(ev.begin(), ev.end(), "incident");
  auto rb = std::find(ev.begin(), ev.end(), "rollback");
  ASSERT_NE(inc, ev.end());
  ASSERT_NE(rb, ev.end());
  EXPECT_LT(inc - ev.begin(), rb - ev.begin()) << "the incident must be written before the rollback";
  Json s = state();
  EXPECT_EQ(s["exit_code"], 2);
  EXPECT_EQ(s["phase"], "escalated");
  EXPECT_EQ(s["last_incident"], incident);
  // Rolled back: the branch is at known-good and src.txt is fine again.
  EXPECT_EQ(wt_file("src.txt"), "fine\n");
  EXPECT_EQ(util::trim(git(repo, {"rev-parse", "phoenix/loop-test"})),
            util::trim(git(repo, {"rev-parse", "refs/phoenix/known-good/phoenix/loop-test"})));
  EXPECT_EQ(util::trim(git(repo, {"rev-parse", "HEAD"})), head);
}

TEST_F(LoopTest, SkipCarriesOnAndEndsRed) {
  // Two tasks: three escalations in a row would trip the circuit breaker (3).
  write(repo, "TASKS.md", "- [ ] first task\n- [ ] second task\n");
  configure("write src.txt BROKEN\\n", {{"on_escalate", "skip"}});
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  EXPECT_EQ(r.code, 1) << r.out;
  Json s = state();
  EXPECT_EQ(s["exit_code"], 1);
  // Every task tried twice: the failure fed back, the agent made the same
  // change again, and the same signature twice ended that task's path.
  EXPECT_EQ(s["iteration"], 4);
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:TASKS.md"}), "- [ ] first task\n- [ ] second task\n");
  EXPECT_EQ(util::trim(git(repo, {"rev-parse", "phoenix/loop-test"})), head) << "no red commit on the branch";
  int notes = 0;
  for (const auto& e : fs::directory_iterator(repo + "/incidents")) {
    ++notes;
    EXPECT_NE(read(e.path().string()).find("the same failure again"), std::string::npos) << e.path();
  }
  EXPECT_EQ(notes, 2);
}

// A tasks file that is not there, or outside the repository, is refused
// before any branch or worktree exists: the same command works once it is
// put right, never "exists already".
TEST_F(LoopTest, ABadTasksFileIsRefusedBeforeAnyBranchOrWorktree) {
  configure("append work.txt 'x\\n'");
  auto nothing_made = [&](const CliRun& r) {
    EXPECT_EQ(r.code, 64) << r.out;
    EXPECT_EQ(git(repo, {"branch", "--list", "phoenix/*"}), "") << r.out;
    EXPECT_EQ(util::split_lines(git(repo, {"worktree", "list"})).size(), 1u) << git(repo, {"worktree", "list"});
  };
  CliRun missing = loop({"--branch", "phoenix/loop-test", "--tasks", "TONIGHT.md"});
  nothing_made(missing);
  EXPECT_NE(missing.out.find("--tasks TONIGHT.md: not found in "), std::string::npos) << missing.out;
  write(tmp / "elsewhere", "TASKS.md", "- [ ] first task\n");
  CliRun outside = loop({"--branch", "phoenix/loop-test", "--tasks", tmp / "elsewhere/TASKS.md"});
  nothing_made(outside);
  EXPECT_NE(outside.out.find(": outside the repository "), std::string::npos) << outside.out;
  EXPECT_EQ(outside.out.find("not found"), std::string::npos) << "named as outside, not as missing: " << outside.out;
  // Put right (an absolute path inside the repository is fine): the same branch.
  write(repo, "TONIGHT.md", "- [ ] first task\n");
  CliRun ok = loop({"--branch", "phoenix/loop-test", "--tasks", repo + "/TONIGHT.md"});
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:TONIGHT.md"}), "- [x] first task\n");
}

TEST_F(LoopTest, PollerNeverSeesPartialState) {
  configure("sleep 0.2; append work.txt 'x\\n'", {{"heartbeat_s", 0.001}});
  util::ProcessOptions po;
  po.argv = {PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-test"};
  po.cwd = repo;
  po.timeout_s = 120;
  util::Subprocess proc(po);
  std::atomic<bool> done{false};
  long reads = 0, bad = 0;
  std::string first_bad;
  std::thread poller([&] {
    std::string path = repo + "/.phoenix/loop-state.json";
    while (!done || reads < 10000) {
      // Once the file exists it is only ever replaced by a rename, so every
      // read after that must see a whole state.
      if (!fs::exists(path)) continue;
      std::string text;
      try {
        text = read(path);
      } catch (...) { text = ""; }
      ++reads;
      try {
        Json j = Json::parse(text);
        if (!j.contains("schema_version") || !j.contains("exit_code")) throw std::runtime_error("fields missing");
      } catch (const std::exception&) {
        if (bad++ == 0) first_bad = text;
      }
    }
  });
  util::ProcessResult r = proc.wait();
  done = true;
  poller.join();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(reads, 10000);
  EXPECT_EQ(bad, 0) << first_bad;
}

TEST_F(LoopTest, SigtermMidIterationExits130Interrupted) {
  // The agent would sleep for 10 minutes and the harness would wait for it
  // as long; only the SIGTERM can end this loop before the test's own
  // timeout (200 s) kills it, which would be another exit code.
  configure("sleep 600\\n");
  Json cfg = Json::parse(read(repo + "/phoenix.json"));
  cfg["harness"]["timeout_s"] = 600;
  write(repo, "phoenix.json", cfg.dump(2));
  head = commit_all(repo, "a patient harness");
  util::ProcessOptions po;
  po.argv = {PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-test"};
  po.cwd = repo;
  po.timeout_s = 200;
  util::Subprocess proc(po);
  auto t0 = std::chrono::steady_clock::now();
  bool in_agent = false;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    try {
      if (state()["phase"] == "agent") {
        in_agent = true;
        break;
      }
    } catch (...) {}
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(in_agent);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(static_cast<pid_t>(proc.pid()), SIGTERM);
  util::ProcessResult r = proc.wait();
  EXPECT_EQ(r.exit_code, 130) << r.output;
  Json s = state();
  EXPECT_EQ(s["phase"], "interrupted");
  EXPECT_EQ(s["exit_code"], 130);
}

TEST_F(LoopTest, MaxIterationsStops) {
  configure("append work.txt 'x\\n'");
  CliRun r = loop({"--branch", "phoenix/loop-test", "--max-iterations", "2"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:TASKS.md"}),
            "# Tasks\n\nSome prose.\n\n- [x] first task\n- [x] second task\n- [ ] third task\n");
  Json s = state();
  EXPECT_EQ(s["phase"], "stopped");
  EXPECT_EQ(s["iteration"], 2);
  EXPECT_EQ(s["max_iterations"], 2);
}

// A task whose agent changes nothing no_progress_limit times in a row is
// given up on alone: its note, then loop.on_escalate (stop by default).
TEST_F(LoopTest, NoProgressGivesTheTaskUp) {
  configure("nothing", {{"no_progress_limit", 2}});
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("escalated: no progress: 2 agent runs in a row on it changed nothing; see "), std::string::npos)
      << r.out;
  Json s = state();
  EXPECT_EQ(s["iteration"], 2);
  EXPECT_EQ(s["phase"], "escalated");
  EXPECT_TRUE(fs::exists(util::trim(read(repo + "/.phoenix/ESCALATED"))));
}

TEST_F(LoopTest, StopFileStops) {
  configure("append work.txt 'x\\n'");
  write(repo, ".phoenix/STOP", "");
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(state()["phase"], "stopped");
  EXPECT_EQ(state()["iteration"], 0);
}

TEST_F(LoopTest, EchoedPromiseWithRedChecksIsNotCompletion) {
  write(repo, "PROMPT.md", "Improve things. When all is done say <promise>COMPLETE</promise>\n");
  configure("echo-prompt; write src.txt BROKEN\\n", {{"tasks", ""}, {"prompt", "PROMPT.md"}, {"on_escalate", "skip"}});
  CliRun r = loop({"--branch", "phoenix/loop-test", "--max-iterations", "2"});
  EXPECT_NE(r.code, 0) << r.out;
  Json s = state();
  EXPECT_NE(s["phase"], "complete");
  EXPECT_NE(s["exit_code"], 0);
}

TEST_F(LoopTest, EchoedPromiseIsNotTheAgentsWord) {
  // Checks green, agent changes nothing and only echoes the prompt: the tag
  // is the prompt's own text, so the loop ends on no progress, not complete.
  write(repo, "PROMPT.md", "Improve things.\n<promise>COMPLETE</promise>\n");
  configure("echo-prompt", {{"tasks", ""}, {"prompt", "PROMPT.md"}, {"no_progress_limit", 2}});
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(state()["phase"], "stopped");
}

TEST_F(LoopTest, PromiseWithGreenChecksCompletes) {
  write(repo, "PROMPT.md", "Improve things.\n");
  configure("append work.txt 'x\\n'; print <promise>COMPLETE</promise>", {{"tasks", ""}, {"prompt", "PROMPT.md"}});
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(state()["phase"], "complete");
  EXPECT_EQ(state()["iteration"], 1);
}

TEST_F(LoopTest, NotifyGetsEventAndPaths) {
  std::string log = tmp / "notify.log";
  configure("write src.txt BROKEN\\n",
            {{"notify", {"/bin/sh", "-c", "echo \"$PHOENIX_EVENT|$PHOENIX_INCIDENT|$PHOENIX_STATE\" >> " + log}}});
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  ASSERT_EQ(r.code, 2) << r.out;
  auto lines = util::split_lines(read(log));
  ASSERT_GE(lines.size(), 2u) << read(log);
  std::string incident = util::trim(read(repo + "/.phoenix/ESCALATED"));
  EXPECT_EQ(lines[0], "escalated|" + incident + "|" + repo + "/.phoenix/loop-state.json");
  EXPECT_TRUE(util::starts_with(lines.back(), "escalated-end|"));
}

// `phoenix notify --test` runs a notify command as the loop would, with
// PHOENIX_EVENT=test; its failure is exit 1; no loop.notify at all is 78.
TEST_F(LoopTest, NotifyTestRunsTheCommand) {
  std::string log = tmp / "notify.log";
  configure("nothing", {{"notify", {"/bin/sh", "-c", "echo \"$PHOENIX_EVENT|$PHOENIX_STATE\" >> " + log + "; echo sent"}}});
  CliRun r = run_phoenix(repo, {"notify", "--test"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(log), "test|" + repo + "/.phoenix/loop-state.json\n");
  EXPECT_NE(r.out.find("ran /bin/sh with PHOENIX_EVENT=test: exit 0\nsent\n"), std::string::npos) << r.out;

  configure("nothing", {{"notify", {"/bin/sh", "-c", "echo refused >&2; exit 3"}}});
  CliRun j = run_phoenix(repo, {"notify", "--test", "--json"});
  EXPECT_EQ(j.code, 1) << j.out;
  EXPECT_EQ(Json::parse(j.out)["command"]["exit_code"], 3) << j.out;

  configure("nothing");
  CliRun none = run_phoenix(repo, {"notify", "--test"});
  EXPECT_EQ(none.code, 78) << none.out;
  EXPECT_NE(none.out.find("loop.notify: not set in"), std::string::npos) << none.out;
}

TEST_F(LoopTest, SecondLoopIsRefusedWhileOneRuns) {
  configure("sleep 5\\n");
  util::ProcessOptions po;
  po.argv = {PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-test"};
  po.cwd = repo;
  po.timeout_s = 60;
  util::Subprocess first(po);
  auto t0 = std::chrono::steady_clock::now();
  while (!fs::exists(repo + "/.phoenix/loop-state.json") &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CliRun second = loop({"--branch", "phoenix/loop-other"});
  EXPECT_NE(second.code, 0);
  EXPECT_NE(second.out.find("pid " + std::to_string(first.pid())), std::string::npos) << second.out;
  first.stop();
}

// Two loops from two checkouts of one repository whose branches end in
// the same name ("phoenix/loop-test", "team/loop-test") would use one
// worktree, loop-test: the second is refused while the first holds it,
// and the first's tree and branch are untouched.
TEST_F(LoopTest, ALoopsWorktreeIsHeldForTheWholeRun) {
  configure("sleep 5\\n");
  const std::string other = tmp / "other";
  git(repo, {"worktree", "add", "-q", "--detach", other});
  util::ProcessOptions po;
  po.argv = {PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-test"};
  po.cwd = repo;
  po.timeout_s = 60;
  util::Subprocess first(po);
  const std::string lock = layout::tree_lock(gitx::Repo::open(repo), "loop-test");
  auto t0 = std::chrono::steady_clock::now();
  while (util::FileLock::holder_pid(lock) != first.pid() &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(util::FileLock::holder_pid(lock), first.pid()) << "the first loop never took its worktree";
  CliRun second = run_loop(other, {"--branch", "team/loop-test"}, 60);
  EXPECT_EQ(second.code, 1) << second.out;
  EXPECT_NE(second.out.find("the loop's worktree loop-test is held by another Phoenix process (pid " +
                            std::to_string(first.pid()) + ")"),
            std::string::npos)
      << second.out;
  EXPECT_FALSE(gitx::Repo::open(repo).read_ref("refs/heads/team/loop-test").has_value());
  first.stop();
}

// The checkpoint refs of a Phoenix tree that is gone (its lock file is
// there, no run holds it, git lists no such worktree) are dropped when the
// loop starts; a user's removed worktree's (no lock file of Phoenix's) and
// a live tree's are kept.
TEST_F(LoopTest, CheckpointsOfPhoenixTreesThatAreGoneAreDropped) {
  configure("append work.txt 'x\\n'");
  gitx::Repo r = gitx::Repo::open(repo);
  const std::string gone_lock = layout::tree_lock(r, "loop-old-w3");
  fs::create_directories(fs::path(gone_lock).parent_path());
  write(fs::path(gone_lock).parent_path(), "loop-old-w3.lock", "");
  const std::string live = tmp / "live";
  git(repo, {"worktree", "add", "-q", "--detach", live});
  const std::string cp = "refs/phoenix/checkpoints/worktrees/";
  for (const char* tree : {"loop-old-w3", "users-tree", "live"})
    for (const char* which : {"pre-run", "attempt"}) git(repo, {"update-ref", cp + tree + "/" + which, head});
  CliRun l = loop({"--branch", "phoenix/loop-test", "--max-iterations", "1"});
  ASSERT_EQ(l.code, 1) << l.out;
  const std::string left = git(repo, {"for-each-ref", "--format=%(refname)", cp});
  EXPECT_EQ(left.find(cp + "loop-old-w3/"), std::string::npos) << left;
  EXPECT_NE(left.find(cp + "users-tree/pre-run"), std::string::npos) << left;
  EXPECT_NE(left.find(cp + "live/attempt"), std::string::npos) << left;
}

TEST_F(LoopTest, ResumeCarriesOnFromTheBranch) {
  configure("append work.txt 'x\\n'");
  CliRun r1 = loop({"--branch", "phoenix/loop-test", "--max-iterations", "1"});
  ASSERT_EQ(r1.code, 1) << r1.out;
  // Without --resume the existing branch is refused.
  CliRun again = loop({"--branch", "phoenix/loop-test"});
  EXPECT_EQ(again.code, 64) << again.out;
  CliRun r2 = loop({"--resume", "--max-iterations", "5"});
  ASSERT_EQ(r2.code, 0) << r2.out;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:TASKS.md"}),
            "# Tasks\n\nSome prose.\n\n- [x] first task\n- [x] second task\n- [x] third task\n");
  EXPECT_EQ(state()["iteration"], 3);
}

TEST_F(LoopTest, UntilInThePastStopsBeforeTheFirstIteration) {
  configure("append work.txt 'x\\n'");
  CliRun r = loop({"--branch", "phoenix/loop-test", "--until", "2020-01-01T00:00:00Z"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(state()["iteration"], 0);
  EXPECT_EQ(state()["deadline"], "2020-01-01T00:00:00Z");
}

TEST_F(LoopTest, StatusSaysStaleWhenThePidIsGone) {
  configure("nothing");
  Json s = {{"schema_version", 1}, {"pid", 999999}, {"phase", "agent"}, {"exit_code", nullptr}, {"iteration", 1}};
  write(repo, ".phoenix/loop-state.json", s.dump());
  CliRun st = run_phoenix(repo, {"status", "--json"});
  ASSERT_EQ(st.code, 0) << st.out;
  EXPECT_EQ(Json::parse(st.out)["stale"], true);
}

}  // namespace
}  // namespace phoenix::test

#endif  // PHOENIX_LOOP_BIN
