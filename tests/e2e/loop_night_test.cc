// phoenix-loop end to end, the rest of the night: heals inside the loop,
// baseline modes, rate limits, timeouts that kill the agent's whole tree,
// kill -9 and --resume, deadlines, `phoenix status --watch` / stale,
// `phoenix report --since / --html` (rendered by headless chromium when it
// is installed), the shipped scheduling templates, and a whole "overnight"
// run over easy, healable and unfixable tasks.
//
// The agent is tests/tools/scripted_agent: its guards (if-prompt, first)
// let one script act as the loop's agent for one task and as the heal
// harness for one check, told apart by the prompt it is given.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "image/image.h"
#include "test_util.h"
#include "util/json.h"
#include "util/subprocess.h"
#include "util/text.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "util/path.h"

#ifdef PHOENIX_LOOP_BIN

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

// True once `pid` has exited (gone, or a zombie nobody reaped yet); waits
// up to 10 s for the kernel to finish delivering a kill.
bool process_gone(long pid) {
  for (int i = 0; i < 200; ++i) {
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    size_t paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string iso_utc(long long epoch_s) {
  std::time_t t = static_cast<std::time_t>(epoch_s);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

class LoopNight : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string repo;
  std::string head;

  void SetUp() override {
    repo = init_loop_repo(tmp / "repo", "# Tasks\n\n- [ ] first task\n- [ ] second task\n- [ ] third task\n");
    write(repo, "other.txt", "fine\n");
  }

  // Two checks: "nobreak" (src.txt must not say BROKEN) and "other" (the
  // same for other.txt). The agent (loop and heal harness) runs `script`.
  void configure(const std::string& script, Json loop_extra = Json::object(), Json top_extra = Json::object()) {
    Json cfg = {{"checks", Json::array({broken_check("nobreak", "src.txt"), broken_check("other", "other.txt")})},
                {"fixers", {"harness"}},
                {"harness", scripted_harness(script)},
                {"loop", loop_section(3, loop_extra)}};
    for (auto& [k, v] : top_extra.items()) cfg[k] = v;
    write(repo, "phoenix.json", cfg.dump(2));
    head = commit_all(repo, "initial");
  }

  CliRun loop(std::vector<std::string> args, double timeout_s = 120) { return run_loop(repo, args, timeout_s); }

  util::Subprocess start_loop(std::vector<std::string> args) {
    util::ProcessOptions po;
    po.argv = {PHOENIX_LOOP_BIN};
    po.argv.insert(po.argv.end(), args.begin(), args.end());
    po.cwd = repo;
    po.timeout_s = 120;
    return util::Subprocess(po);
  }

  // Waits (up to 30 s) until `file` exists; false when it never did.
  static bool wait_for(const std::string& file) {
    for (int i = 0; i < 1500 && !fs::exists(file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return fs::exists(file);
  }

  Json state() { return loop_state(repo); }
  std::string show(const std::string& what) { return git(repo, {"show", what}); }
  std::string rev(const std::string& what) { return util::trim(git(repo, {"rev-parse", what})); }
  std::vector<Json> trace_events(const std::string& name) {
    std::vector<Json> out;
    for (const auto& l : util::split_lines(read(repo + "/.phoenix/trace.jsonl")))
      if (!l.empty()) {
        Json e = Json::parse(l);
        if (e.value("event", "") == name) out.push_back(e);
      }
    return out;
  }
};

// --- heals inside the loop and the baseline ---------------------------------

TEST_F(LoopNight, RedIterationIsHealedByTheHarnessAndTheTaskCounts) {
  write(repo, "TASKS.md", "- [ ] break and add feature\n- [ ] plain task\n");
  configure("if-prompt \"" + kTaskIs +
            "break and add\" write src.txt 'BROKEN\\n';"
            "if-prompt \"" +
            kTaskIs +
            "break and add\" write feature.txt 'new\\n';"
            "if-prompt \"" +
            kTaskIs +
            "plain\" append work.txt 'x\\n';"
            "if-prompt \"" +
            kHealPrompt + "\" write src.txt 'fine again\\n'");
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(show("phoenix/loop-test:TASKS.md"), "- [x] break and add feature\n- [x] plain task\n");
  // One commit per task: the red attempt and its heal land as one green
  // commit whose trailers name the attempt and the fixer; the feature stays.
  auto subjects = util::split_lines(git(repo, {"log", "--format=%s", head + "..phoenix/loop-test"}));
  ASSERT_EQ(subjects.size(), 2u) << git(repo, {"log", "--oneline", "phoenix/loop-test"});
  EXPECT_EQ(subjects[0], "phoenix-loop: plain task");
  EXPECT_EQ(subjects[1], "phoenix-loop: break and add feature");
  std::string body = git(repo, {"log", "-1", "--format=%B", "phoenix/loop-test~1"});
  EXPECT_NE(body.find("Phoenix-Task: t1"), std::string::npos) << body;
  EXPECT_NE(body.find("Phoenix-Healed-By: harness"), std::string::npos) << body;
  const std::string attempt_ref = "refs/phoenix/attempts/loop-test/t1/1";
  EXPECT_NE(body.find("Phoenix-Attempt: " + attempt_ref), std::string::npos) << body;
  EXPECT_EQ(show(attempt_ref + ":src.txt"), "BROKEN\n") << "the red attempt is kept for the morning";
  EXPECT_EQ(show("phoenix/loop-test:src.txt"), "fine again\n");
  EXPECT_EQ(show("phoenix/loop-test:feature.txt"), "new\n");
  // The user's own branch's known-good is not the loop's.
  EXPECT_NE(git(repo, {"for-each-ref", "refs/phoenix/known-good/phoenix/loop-test"}), "");
  EXPECT_EQ(git(repo, {"for-each-ref", "refs/phoenix/known-good/main"}), "");
  Json s = state();
  EXPECT_EQ(s["exit_code"], 0);
  EXPECT_EQ(s["phase"], "complete");
  EXPECT_EQ(s["last_failure_type"], "lint");  // regex_in_file
  EXPECT_FALSE(s["last_signature"].is_null());
  EXPECT_GE(s["session_retries"].get<int>(), 1);
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/ESCALATED"));
  auto done = trace_events("loop.task_done");
  ASSERT_EQ(done.size(), 2u);
  EXPECT_TRUE(done[0]["data"].value("healed", false));
  // The report lists the heal with its fixer and attempts.
  CliRun rep = run_phoenix(repo, {"report", "--json"});
  ASSERT_EQ(rep.code, 0) << rep.out;
  Json j = Json::parse(rep.out);
  ASSERT_EQ(j["heal_list"].size(), 1u) << rep.out;
  EXPECT_EQ(j["heal_list"][0]["check"], "nobreak");
  EXPECT_EQ(j["heal_list"][0]["fixer"], "harness");
  EXPECT_EQ(j["heal_list"][0]["attempts"], 1);
  EXPECT_EQ(j["heal_list"][0]["replayed"], false);
  EXPECT_EQ(j["heal_list"][0]["signature"], s["last_signature"]);
  EXPECT_EQ(j["tasks_done"].size(), 2u);
  EXPECT_TRUE(j["model_calls"].is_null()) << "no run reported its model calls: unknown, never a guess";
  EXPECT_EQ(j["agent_runs"], 3) << "two loop iterations and one heal run";
  ASSERT_EQ(j["tasks_done"].size(), 2u);
  EXPECT_EQ(j["tasks_done"][0]["fixer"], "harness");
  EXPECT_EQ(j["tasks_done"][0]["attempts"], 2) << "the red iteration and the heal";
}

// session_cap counts every attempt of the night, healed or not: a task
// healed at its first heal spent two (its red iteration and the heal), so
// with a cap of 3 the next red iteration reaches it: its note, exit 2.
TEST_F(LoopNight, TheSessionCapCountsHealedHealsToo) {
  write(repo, "TASKS.md", "- [ ] break and add feature\n- [ ] break it again\n- [ ] plain task\n");
  configure("if-prompt \"" + kTaskIs + "break and add\" write src.txt 'BROKEN\\n';"
            "if-prompt \"" + kTaskIs + "break and add\" write feature.txt 'new\\n';"
            "if-prompt \"" + kTaskIs + "break it again\" write src.txt 'BROKEN again\\n';"
            "if-prompt \"" + kTaskIs + "plain\" append work.txt 'x\\n';"
            "if-prompt \"" + kHealPrompt + "\" if-prompt \"feature.txt\" write src.txt 'fine again\\n'",
            {{"on_escalate", "skip"}}, {{"session_cap", 3}});
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("loop-wide retry cap: 3 attempts (session_cap 3)"), std::string::npos) << r.out;
  EXPECT_EQ(show("phoenix/loop-test:TASKS.md"), "- [x] break and add feature\n- [ ] break it again\n- [ ] plain task\n");
  Json s = state();
  EXPECT_EQ(s["session_retries"], 3);
  EXPECT_EQ(s["phase"], "escalated");
  EXPECT_EQ(s["iteration"], 2) << "the plain task never started: the cap ends the night, skip or not";
  std::string note = read(util::trim(read(repo + "/.phoenix/ESCALATED")));
  EXPECT_NE(note.find("loop-wide retry cap"), std::string::npos) << note;
  EXPECT_NE(note.find("+BROKEN again"), std::string::npos) << "the agent's own diff\n" << note;
}

// A night never moves the known-good of the user's own branch: after it,
// a regression pushed on main is still bisected from main's known-good
// (it used to be the loop's tip, "not an ancestor of HEAD").
TEST_F(LoopNight, ANightLeavesTheUsersKnownGoodWhereItWas) {
  configure("append work.txt 'x\\n'");
  ASSERT_EQ(run_phoenix(repo, {"run"}).code, 0);  // main's known-good := head
  ASSERT_EQ(rev("refs/phoenix/known-good/main"), head);
  CliRun night = loop({"--branch", "phoenix/loop-test"});
  ASSERT_EQ(night.code, 0) << night.out;
  EXPECT_EQ(rev("refs/phoenix/known-good/main"), head) << "the night moved the user's known-good";
  EXPECT_EQ(rev("refs/phoenix/known-good/phoenix/loop-test"), rev("phoenix/loop-test"));
  write(repo, "notes.txt", "a note\n");
  commit_all(repo, "notes");
  write(repo, "src.txt", "BROKEN\n");
  commit_all(repo, "a regression on main");
  CliRun heal = run_phoenix(repo, {"run", "--fixer", "bisect"});
  EXPECT_EQ(heal.code, 0) << heal.out;
  EXPECT_EQ(read(repo + "/src.txt"), "fine\n");
  EXPECT_EQ(rev("refs/phoenix/known-good/main"), rev("HEAD"));
}

TEST_F(LoopNight, BaselineStopRefusesToStartOnARedCheck) {
  write(repo, "src.txt", "BROKEN\n");
  configure("append work.txt 'x\\n'", {{"baseline", "stop"}});
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("baseline red: nobreak"), std::string::npos) << r.out;
  Json s = state();
  EXPECT_EQ(s["phase"], "stopped");
  EXPECT_EQ(s["iteration"], 0);
  EXPECT_EQ(rev("phoenix/loop-test"), head) << "nothing done on the branch";
}

TEST_F(LoopNight, BaselineIgnoreLeavesTheRedCheckOutOfEveryVerdict) {
  write(repo, "src.txt", "BROKEN\n");
  configure("append work.txt 'x\\n'", {{"baseline", "ignore"}});
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(show("phoenix/loop-test:TASKS.md"), "# Tasks\n\n- [x] first task\n- [x] second task\n- [x] third task\n");
  EXPECT_EQ(show("phoenix/loop-test:src.txt"), "BROKEN\n") << "ignored, so not healed either";
  auto b = trace_events("loop.baseline");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0]["data"]["mode"], "ignore");
  EXPECT_EQ(b[0]["data"]["red"], Json::array({"nobreak"}));
  EXPECT_TRUE(trace_events("run.start").empty()) << "no heal was started";
  EXPECT_EQ(state()["exit_code"], 0);
}

TEST_F(LoopNight, BaselineHealFixesTheRedCheckBeforeTheFirstTask) {
  write(repo, "src.txt", "BROKEN\n");
  configure("if-prompt \"" + kHealPrompt + "\" write src.txt 'fine\\n'; unless-prompt \"" + kHealPrompt +
                "\" append work.txt 'x\\n'",
            {{"baseline", "heal"}});
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  ASSERT_EQ(r.code, 0) << r.out;
  auto subjects = util::split_lines(git(repo, {"log", "--format=%s", head + "..phoenix/loop-test"}));
  ASSERT_EQ(subjects.size(), 4u);
  EXPECT_EQ(subjects.back(), "phoenix: heal nobreak (harness)") << "healed before iteration 1";
  EXPECT_EQ(show("phoenix/loop-test:src.txt"), "fine\n");
  EXPECT_EQ(state()["iteration"], 3);
}

TEST_F(LoopNight, BaselineHealThatFailsLeavesTheNightsKnownRedAndGoesOn) {
  write(repo, "src.txt", "BROKEN\n");
  configure("unless-prompt \"" + kHealPrompt + "\" append work.txt 'x\\n'", {{"baseline", "heal"}});
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(show("phoenix/loop-test:TASKS.md"), "# Tasks\n\n- [x] first task\n- [x] second task\n- [x] third task\n");
  EXPECT_NE(r.out.find("known red for the night (red at the baseline): - nobreak (the whole check"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("but the night's known red (nobreak"), std::string::npos) << r.out;
  // Pre-existing: no incident, no flag, no session cap spent (invariant 14).
  EXPECT_FALSE(fs::exists(repo + "/.phoenix/ESCALATED"));
  EXPECT_FALSE(fs::exists(repo + "/incidents"));
  Json s = state();
  EXPECT_EQ(s["phase"], "complete");
  EXPECT_EQ(s["session_retries"], 0);
  EXPECT_EQ(s["known_red"]["nobreak"]["whole"], true);
  CliRun rep = run_phoenix(repo, {"report"});
  EXPECT_NE(rep.out.find("Known red"), std::string::npos) << rep.out;
}

// --- guards -------------------------------------------------------------------

TEST_F(LoopNight, RateLimitedRunsWaitAndDoNotCountAgainstTheBudget) {
  std::string counter = tmp / "limited";
  // The first two runs are refused by the "provider"; no_progress_limit 1
  // and --max-iterations 3 would both stop the loop if they counted.
  configure("first 2 " + counter + " rate-limit 1; append work.txt 'x\\n'", {{"no_progress_limit", 1}});
  CliRun r = loop({"--branch", "phoenix/loop-test", "--max-iterations", "3"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(counter), "5") << "two refused runs, then three that worked";
  EXPECT_NE(r.out.find("waiting 1 s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("waiting 2 s"), std::string::npos) << "backoff doubles: " << r.out;
  Json s = state();
  EXPECT_EQ(s["iteration"], 3);
  EXPECT_EQ(s["session_retries"], 0);
  int limited = 0;
  for (const auto& e : trace_events("loop.agent"))
    if (e["data"]["status"] == "rate-limited") ++limited;
  EXPECT_EQ(limited, 2);
}

TEST_F(LoopNight, IterationTimeoutKillsTheAgentsWholeTree) {
  std::string sleeper = tmp / "sleeper.pid";
  configure("write half.txt 'half\\n'; spawn-sleeper 120 " + sleeper + "; sleep 120",
            {{"iteration_timeout_s", 1}, {"no_progress_limit", 1}});
  CliRun r = loop({"--branch", "phoenix/loop-test"});
  EXPECT_EQ(r.code, 2) << r.out;
  ASSERT_TRUE(fs::exists(sleeper));
  long pid = std::stol(read(sleeper));
  EXPECT_TRUE(process_gone(pid)) << "the agent's child " << pid << " outlived the iteration timeout";
  auto agent = trace_events("loop.agent");
  ASSERT_EQ(agent.size(), 1u);
  EXPECT_EQ(agent[0]["data"]["status"], "timeout");
  // Its half-work is dropped, not committed.
  EXPECT_FALSE(fs::exists(layout::worktree_path(gitx::Repo::open(repo), "loop-test") + "/half.txt"));
  EXPECT_EQ(rev("phoenix/loop-test"), head);
  // Its task changed nothing no_progress_limit (1) times: given up on alone (loop.on_escalate = stop).
  EXPECT_EQ(state()["phase"], "escalated");
}

TEST_F(LoopNight, SigtermKillsTheAgentTreeAndWritesTheState) {
  std::string sleeper = tmp / "sleeper.pid";
  configure("spawn-sleeper 120 " + sleeper + "; sleep 120");
  util::Subprocess proc = start_loop({"--branch", "phoenix/loop-test"});
  ASSERT_TRUE(wait_for(sleeper));
  ::kill(static_cast<pid_t>(proc.pid()), SIGTERM);
  util::ProcessResult r = proc.wait();
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_TRUE(process_gone(std::stol(read(sleeper))));
  Json s = state();
  EXPECT_EQ(s["phase"], "interrupted");
  EXPECT_EQ(s["exit_code"], 130);
  EXPECT_EQ(s["iteration"], 1);
  EXPECT_EQ(s["task"], nullptr);
}

TEST_F(LoopNight, ResumeAfterKillMinus9KeepsTheHalfDoneIterationAndFinishes) {
  std::string c1 = tmp / "c1", c2 = tmp / "c2", pidfile = tmp / "agent.pid";
  // First run: half the work, then hang until the "power cut". The pid and
  // the hang share one counter (its first and second bumps), so the hang is
  // already spent on resume however soon after the pid the kill lands.
  configure("first 1 " + c1 + " write half.txt 'half\\n'; first 1 " + c2 + " write-pid " + pidfile + "; first 2 " + c2 +
            " sleep 120; append work.txt 'x\\n'");
  util::Subprocess proc = start_loop({"--branch", "phoenix/loop-test"});
  ASSERT_TRUE(wait_for(pidfile));
  long agent = std::stol(read(pidfile));
  ::kill(static_cast<pid_t>(proc.pid()), SIGKILL);
  ::kill(-static_cast<pid_t>(agent), SIGKILL);  // the whole machine went down
  proc.wait();
  ASSERT_TRUE(process_gone(agent));
  Json dead = state();
  EXPECT_TRUE(dead["exit_code"].is_null()) << "a killed loop cannot write its end";
  EXPECT_EQ(dead["phase"], "agent");

  CliRun r = loop({"--resume"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(show("phoenix/loop-test:TASKS.md"), "# Tasks\n\n- [x] first task\n- [x] second task\n- [x] third task\n");
  EXPECT_EQ(show("phoenix/loop-test:work.txt"), "x\nx\nx\n");
  EXPECT_NE(git(repo, {"ls-tree", "--name-only", "phoenix/loop-test"}).find("work.txt"), std::string::npos);
  EXPECT_EQ(git(repo, {"ls-tree", "--name-only", "phoenix/loop-test"}).find("half.txt"), std::string::npos)
      << "the dead iteration's half-work is not part of the loop's work";
  // ... but it is not lost: kept under refs/phoenix/abandoned/.
  std::string refs = git(repo, {"for-each-ref", "--format=%(refname)", "refs/phoenix/abandoned/"});
  auto lines = util::split_lines(util::trim(refs));
  ASSERT_EQ(lines.size(), 1u) << refs;
  EXPECT_EQ(show(lines[0] + ":half.txt"), "half\n");
  Json s = state();
  EXPECT_EQ(s["exit_code"], 0);
  EXPECT_EQ(s["iteration"], 4) << "the dead iteration counts: counters carry on from the state file";
  EXPECT_EQ(trace_events("loop.start").size(), 2u);
  EXPECT_NE(s["pid"], dead["pid"]) << "the new loop took the stale lock over";
}

TEST_F(LoopNight, UntilStopsAnIterationThatRunsIntoIt) {
  configure("sleep 120");
  std::string until = iso_utc(std::time(nullptr) + 3);
  CliRun r = loop({"--branch", "phoenix/loop-test", "--until", until});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--until " + until + " reached"), std::string::npos) << r.out;
  Json s = state();
  EXPECT_EQ(s["phase"], "stopped");
  EXPECT_EQ(s["deadline"], until);
  EXPECT_EQ(s["iteration"], 1);
  auto agent_runs = trace_events("loop.agent");
  ASSERT_FALSE(agent_runs.empty()) << "no loop.agent event in the trace";
  EXPECT_EQ(agent_runs[0]["data"]["status"], "timeout") << "the agent was stopped at the deadline";
}

// --- status and report --------------------------------------------------------

TEST_F(LoopNight, StatusWatchFollowsTheLoopToItsEnd) {
  std::string go = tmp / "go";
  // The first iteration holds until the watcher has seen a running loop.
  configure("first 1 " + (tmp / "n") + " write-pid " + go + "; first 1 " + (tmp / "m") +
            " sleep 2.5; append work.txt 'x\\n'");
  util::Subprocess proc = start_loop({"--branch", "phoenix/loop-test"});
  ASSERT_TRUE(wait_for(go));
  CliRun w = run_phoenix(repo, {"status", "--watch"}, 60);
  util::ProcessResult r = proc.wait();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(w.code, 0) << w.out;
  size_t running = w.out.find("exit code:  (running)");
  size_t complete = w.out.rfind("phase:      complete");
  ASSERT_NE(running, std::string::npos) << w.out;
  ASSERT_NE(complete, std::string::npos) << "the watch ends with the loop's end: " << w.out;
  EXPECT_LT(running, complete);
  EXPECT_NE(w.out.find("exit code:  0"), std::string::npos) << w.out;
}

TEST_F(LoopNight, StaleNeedsTheHeartbeatStoppedAndThePidGone) {
  configure("nothing");
  auto status_stale = [&](long pid, const std::string& updated_at) {
    Json s = {{"schema_version", 1},  {"pid", pid},     {"phase", "agent"},
              {"exit_code", nullptr}, {"iteration", 1}, {"updated_at", updated_at}};
    write(repo, ".phoenix/loop-state.json", s.dump());
    CliRun st = run_phoenix(repo, {"status", "--json"});
    EXPECT_EQ(st.code, 0) << st.out;
    return Json::parse(st.out)["stale"].get<bool>();
  };
  std::string old = "2020-01-01T00:00:00.000Z";
  std::string fresh = util::now_iso8601();
  EXPECT_TRUE(status_stale(999999, old)) << "dead pid, silent heartbeat";
  EXPECT_FALSE(status_stale(999999, fresh)) << "the heartbeat is fresh: a loop we cannot see (another pid namespace)";
  EXPECT_FALSE(status_stale(static_cast<long>(::getpid()), old)) << "the pid lives: only slow";
  CliRun human = run_phoenix(repo, {"status"});
  EXPECT_EQ(human.out.find("stale"), std::string::npos) << human.out;
}

TEST_F(LoopNight, ReportSinceFiltersAndRejectsJunk) {
  configure("append work.txt 'x\\n'");
  ASSERT_EQ(loop({"--branch", "phoenix/loop-test"}).code, 0);
  CliRun all = run_phoenix(repo, {"report", "--json", "--since", "1h"});
  ASSERT_EQ(all.code, 0) << all.out;
  EXPECT_EQ(Json::parse(all.out)["tasks_done"].size(), 3u);
  EXPECT_EQ(Json::parse(all.out)["loops"], 1);
  CliRun later = run_phoenix(repo, {"report", "--json", "--since", "2099-01-01"});
  ASSERT_EQ(later.code, 0) << later.out;
  EXPECT_EQ(Json::parse(later.out)["tasks_done"].size(), 0u);
  EXPECT_EQ(Json::parse(later.out)["loops"], 0);
  CliRun bad = run_phoenix(repo, {"report", "--since", "yesterday"});
  EXPECT_EQ(bad.code, 64) << bad.out;
  EXPECT_NE(bad.out.find("--since yesterday"), std::string::npos) << bad.out;
}

// --- the whole night -------------------------------------------------------------

// Easy, healable and unfixable tasks with on_escalate = skip: the loop does
// what it can, skips what it cannot, and says so by its exit code, its
// state, its incidents and its report.
class LoopOvernight : public LoopNight {
 protected:
  void run_night() {
    write(repo, "TASKS.md",
          "# Tonight\n\n- [ ] easy: add a line\n- [ ] healable: add a feature\n- [ ] unfixable: touch other\n"
          "- [ ] easy: add another line\n");
    configure("if-prompt \"" + kTaskIs +
                  "easy\" append work.txt 'x\\n';"
                  "if-prompt \"" +
                  kTaskIs +
                  "healable\" write src.txt 'BROKEN\\n';"
                  "if-prompt \"" +
                  kTaskIs +
                  "healable\" write feature.txt 'feature\\n';"
                  "if-prompt \"" +
                  kTaskIs +
                  "unfixable\" write other.txt 'BROKEN\\n';"
                  "if-prompt \"" +
                  kHealPrompt + "\" if-prompt \"Check: `nobreak`\" write src.txt 'fine\\n'",
              {{"on_escalate", "skip"}});
    night = loop({"--branch", "phoenix/loop-test"});
  }
  CliRun night{0, ""};
};

TEST_F(LoopOvernight, EndsWithTheRightCodeIncidentsStateAndReport) {
  run_night();
  EXPECT_EQ(night.code, 1) << "a task was skipped: needs a person\n" << night.out;
  EXPECT_EQ(show("phoenix/loop-test:TASKS.md"),
            "# Tonight\n\n- [x] easy: add a line\n- [x] healable: add a feature\n- [ ] unfixable: touch other\n"
            "- [x] easy: add another line\n");
  EXPECT_EQ(show("phoenix/loop-test:work.txt"), "x\nx\n");
  EXPECT_EQ(show("phoenix/loop-test:feature.txt"), "feature\n");
  EXPECT_EQ(show("phoenix/loop-test:src.txt"), "fine\n");
  EXPECT_EQ(show("phoenix/loop-test:other.txt"), "fine\n") << "the unfixable attempt was rolled back";
  EXPECT_EQ(rev("phoenix/loop-test"), rev("refs/phoenix/known-good/phoenix/loop-test"));
  // The user's checkout did not move.
  EXPECT_EQ(rev("HEAD"), head);
  EXPECT_EQ(git(repo, {"status", "--porcelain"}), "");

  // One incident, in the user's incidents/, named by the flag file.
  std::vector<std::string> notes;
  for (const auto& e : fs::directory_iterator(repo + "/incidents")) notes.push_back(e.path().string());
  ASSERT_EQ(notes.size(), 1u);
  std::string incident = util::trim(read(repo + "/.phoenix/ESCALATED"));
  EXPECT_EQ(incident, notes[0]);
  std::string note = read(incident);
  EXPECT_NE(note.find("## Check"), std::string::npos);
  EXPECT_NE(note.find("other"), std::string::npos);
  EXPECT_NE(note.find("## State: rolled back to "), std::string::npos) << note;

  Json s = state();
  EXPECT_EQ(s["exit_code"], 1);
  EXPECT_EQ(s["phase"], "stopped");
  EXPECT_EQ(s["iteration"], 5) << "the unfixable task twice: the same failure again ends its path";
  EXPECT_EQ(s["last_incident"], incident);
  EXPECT_EQ(s["known_good"], rev("phoenix/loop-test"));

  CliRun rep = run_phoenix(repo, {"report", "--json"});
  ASSERT_EQ(rep.code, 0) << rep.out;
  Json j = Json::parse(rep.out);
  EXPECT_EQ(j["tasks_done"].size(), 3u);
  ASSERT_EQ(j["tasks_skipped"].size(), 1u);
  EXPECT_EQ(j["tasks_skipped"][0]["task"]["title"], "unfixable: touch other");
  EXPECT_EQ(j["tasks_skipped"][0]["incident"], incident);
  ASSERT_EQ(j["heal_list"].size(), 1u);
  EXPECT_EQ(j["heal_list"][0]["check"], "nobreak");
  ASSERT_EQ(j["incidents"].size(), 1u);
  EXPECT_EQ(j["incidents"][0]["path"], incident);
  EXPECT_EQ(j["incidents"][0]["check"], "other");
  EXPECT_FALSE(j["incidents"][0]["signature"].get<std::string>().empty());
  std::string rolled = j["incidents"][0]["rolled_back_to"];
  EXPECT_NE(note.find("rolled back to " + rolled), std::string::npos) << "the report's sha is the note's";
  EXPECT_EQ(j["escalations"], 1);
  EXPECT_EQ(j["heals"], 1);
  EXPECT_TRUE(j["cost_usd"].is_null());
  CliRun human = run_phoenix(repo, {"report"});
  EXPECT_NE(human.out.find("  nobreak by harness, 1 attempt, "), std::string::npos) << human.out;
  const std::string shown = "incidents/" + fs::path(incident).filename().string();
  EXPECT_NE(human.out.find(shown), std::string::npos) << "the note by its path in the repository\n" << human.out;
}

TEST_F(LoopOvernight, HtmlReportIsSelfContainedAndChromiumShowsTheIncident) {
  run_night();
  ASSERT_EQ(night.code, 1) << night.out;
  std::string incident = util::trim(read(repo + "/.phoenix/ESCALATED"));
  // A visual check's note links its diff image beside it; give this one a
  // diff image (solid green, easy to find in a screenshot) the same way.
  image::Image img;
  img.width = 240;
  img.height = 120;
  img.rgba.assign(static_cast<size_t>(img.width) * img.height * 4, 0);
  for (size_t i = 0; i < img.rgba.size(); i += 4) {
    img.rgba[i + 1] = 255;
    img.rgba[i + 3] = 255;
  }
  image::write_png(repo + "/incidents/diff-chart.png", img);
  std::ofstream(incident, std::ios::app) << "\n![visual diff](diff-chart.png)\n";

  std::string html_path = tmp / "night.html";
  CliRun rep = run_phoenix(repo, {"report", "--html", html_path});
  ASSERT_EQ(rep.code, 0) << rep.out;
  std::string html = read(html_path);
  EXPECT_NE(html.find("incidents/" + fs::path(incident).filename().string()), std::string::npos);
  EXPECT_NE(html.find("<h4>Failure signatures</h4>"), std::string::npos) << "the note itself is on the page, rendered";
  EXPECT_NE(html.find("data:image/png;base64,"), std::string::npos) << "the diff image is inline";
  EXPECT_EQ(html.find("src=\"diff-chart.png"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos) << "nothing fetched from elsewhere";
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("unfixable: touch other"), std::string::npos);
  EXPECT_NE(html.find("easy: add another line"), std::string::npos);

  const std::string chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium))
    GTEST_SKIP() << "no " << chromium << " (Debian package chromium): the page was not rendered";
  // Move the page away from the repository: it must not need incidents/.
  std::string alone = tmp / "alone";
  fs::create_directories(alone);
  fs::copy_file(html_path, alone + "/night.html");
  std::string shot = tmp / "night.png";
  util::ProcessOptions po;
  po.argv = {chromium,
             "--headless",
             "--no-sandbox",
             "--disable-gpu",
             "--hide-scrollbars",
             "--window-size=1000,2400",
             "--user-data-dir=" + (tmp / "chromium-profile"),
             "--screenshot=" + shot,
             "file://" + alone + "/night.html"};
  po.cwd = tmp.path();
  po.timeout_s = 90;
  po.env = {{"HOME", tmp / "home"}};
  util::ProcessResult r = util::run_process(po);
  ASSERT_TRUE(fs::exists(shot)) << "chromium exited " << r.exit_code << ": " << r.output;
  image::Image page = image::read_png(shot);
  ASSERT_GT(page.width, 0);
  long dark = 0, incident_bar = 0, diff_green = 0;
  for (size_t i = 0; i + 3 < page.rgba.size(); i += 4) {
    int R = page.rgba[i], G = page.rgba[i + 1], B = page.rgba[i + 2];
    if (R < 100 && G < 100 && B < 100) ++dark;        // text
    if (R > 180 && G < 40 && B < 40) ++incident_bar;  // the incident's red bar
    if (R < 30 && G > 225 && B < 30) ++diff_green;    // the inline diff image
  }
  EXPECT_GT(dark, 2000) << "the page is blank";
  EXPECT_GT(incident_bar, 200) << "no incident shown";
  EXPECT_GT(diff_green, 240L * 120 / 2) << "the inline diff image is not drawn";
}

// --- scheduling templates ----------------------------------------------------------

// The command lines the shipped templates run, with what a shell would
// expand replaced by a plain value: each must be one phoenix-loop accepts.
std::vector<std::string> loop_args_of(const std::string& line_after_program) {
  std::vector<std::string> args;
  for (auto& w : util::split_words(line_after_program)) {
    if (w == ">>" || w == "&&" || w == "|" || w == ";" || w == "2>&1") break;
    if (w.find('$') != std::string::npos) w = "phoenix/loop-template";
    args.push_back(w);
  }
  return args;
}

TEST_F(LoopNight, SchedulingTemplatesRunRealPhoenixLoopCommandLines) {
  configure("append work.txt 'x\\n'");
  std::string t = std::string(PHOENIX_SOURCE_DIR) + "/templates/";
  std::map<std::string, std::vector<std::string>> lines;  // template -> args after phoenix-loop

  // systemd: an INI file whose ExecStart runs phoenix-loop; the timer starts that service.
  {
    std::string unit = read(t + "systemd/phoenix-loop.service");
    std::set<std::string> sections;
    std::string exec;
    for (const auto& raw : util::split_lines(unit)) {
      std::string l = util::trim(raw);
      if (l.empty() || l[0] == '#' || l[0] == ';') continue;
      if (l.front() == '[') {
        ASSERT_EQ(l.back(), ']') << l;
        sections.insert(l);
        continue;
      }
      ASSERT_NE(l.find('='), std::string::npos) << "not key=value: " << l;
      if (util::starts_with(l, "ExecStart=")) exec = l.substr(10);
    }
    EXPECT_TRUE(sections.count("[Service]"));
    auto argv = util::split_words(exec);
    ASSERT_FALSE(argv.empty());
    EXPECT_EQ(fs::path(argv[0]).filename(), "phoenix-loop");
    lines["systemd"] = loop_args_of(exec.substr(exec.find(' ') + 1));
    std::string timer = read(t + "systemd/phoenix-loop.timer");
    EXPECT_NE(timer.find("[Timer]"), std::string::npos);
    EXPECT_NE(timer.find("OnCalendar="), std::string::npos);
    EXPECT_NE(timer.find("WantedBy=timers.target"), std::string::npos);
  }
  // cron: one line of five time fields and a command.
  {
    int entries = 0;
    for (const auto& raw : util::split_lines(read(t + "cron/phoenix-loop.cron"))) {
      std::string l = util::trim(raw);
      if (l.empty() || l[0] == '#') continue;
      ++entries;
      auto w = util::split_words(l);
      ASSERT_GT(w.size(), 6u) << l;
      const int lo[] = {0, 0, 1, 1, 0}, hi[] = {59, 23, 31, 12, 7};
      for (int f = 0; f < 5; ++f)
        if (w[f] != "*") {
          int v = std::stoi(w[f]);
          EXPECT_TRUE(v >= lo[f] && v <= hi[f]) << "cron field " << f << ": " << w[f];
        }
      size_t at = l.find("phoenix-loop ");
      ASSERT_NE(at, std::string::npos) << l;
      lines["cron"] = loop_args_of(l.substr(at + 13));
    }
    EXPECT_EQ(entries, 1);
  }
  // GitHub Actions and the Kubernetes CronJob: the shell lines that run it.
  for (const std::string f : {"github/phoenix-loop.yml", "k8s/phoenix-loop-cronjob.yaml"}) {
    std::string text = read(t + f), cmd;
    bool in = false;
    for (const auto& raw : util::split_lines(text)) {
      std::string l = util::trim(raw);
      if (l.empty() || l[0] == '#') continue;
      size_t at = l.find("phoenix-loop --");
      if (at != std::string::npos) {
        cmd = l.substr(at + 13);
        in = true;
      } else if (in && util::starts_with(l, "--")) {
        cmd += " " + l;  // a folded (>-) continuation line
      } else {
        in = false;
      }
    }
    ASSERT_FALSE(cmd.empty()) << f << " runs no phoenix-loop";
    lines[f] = loop_args_of(cmd);
  }

  // Each command line is accepted by the real phoenix-loop: with .phoenix/STOP
  // present it sets up and stops at once (exit 1), never a usage error (64).
  write(repo, ".phoenix/STOP", "");
  int n = 0;
  for (auto& [name, args] : lines) {
    ASSERT_FALSE(args.empty()) << name;
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i] == "--branch" && i + 1 < args.size()) args[i + 1] = "phoenix/template-" + std::to_string(++n);
    if (std::find(args.begin(), args.end(), "--branch") == args.end()) {
      args.push_back("--branch");
      args.push_back("phoenix/template-" + std::to_string(++n));
    }
    CliRun r = loop(args);
    EXPECT_EQ(r.code, 1) << name << ": " << util::join_argv(args) << "\n" << r.out;
    EXPECT_NE(r.out.find(".phoenix/STOP exists"), std::string::npos) << name << ": " << r.out;
  }
  EXPECT_EQ(lines.size(), 4u);
}

TEST(LoopHelp, NamesTheProgramAsTyped) {
  ScopedTempDir tmp;  // not a repository: nothing here could be worked on
  auto r = run({PHOENIX_LOOP_BIN, "--help"}, tmp.path(), {}, 30);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(util::starts_with(r.output, "usage: phoenix-loop")) << r.output;
  EXPECT_EQ(r.output.find("phoenix phoenix-loop"), std::string::npos) << r.output;
  for (const char* flag : {"--tasks", "--prompt", "--max-iterations", "--until", "--branch", "--resume", "-C"})
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
  auto bad = run({PHOENIX_LOOP_BIN, "--max-iterationz", "3"}, tmp.path(), {}, 30);
  EXPECT_EQ(bad.exit_code, 64);
  EXPECT_NE(bad.output.find("did you mean --max-iterations"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace phoenix::test

#endif  // PHOENIX_LOOP_BIN
