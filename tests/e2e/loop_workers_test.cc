// phoenix-loop --workers N end to end: the built binary, the scripted agent
// and real repositories. What is asserted is read off the loop branch, the
// trace, the agent's own log and loop-state.json, never off timings.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "gitx/repo.h"
#include "loop/queue.h"
#include "loop/workers.h"
#include "util/error.h"
#include "test_util.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

// The merge queue on its own, in a real repository: a conflict leaves the
// tip and the work tree as they were, and the note shows both sides.
TEST(LoopQueue, ConflictLeavesTheTipAndTheNoteShowsBothSides) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "repo");
  write(repo, "shared.txt", "base\n");
  std::string base = commit_all(repo, "base");
  write(repo, "shared.txt", "ours\n");
  std::string ours = commit_all(repo, "ours");
  git(repo, {"checkout", "-q", base});
  write(repo, "shared.txt", "theirs\n");
  std::string theirs = commit_all(repo, "theirs");
  git(repo, {"checkout", "-q", ours});
  gitx::Repo r = gitx::Repo::open(repo);
  loop::Tree t{repo, "test", &r};
  loop::QueueEntry e{0, "t1", "change shared", base, theirs, loop::kMergeTries, "now"};
  bool measured = false;
  loop::MergeResult m = loop::merge_entry(
      t, e, {}, [] {},
      [&] {
        measured = true;
        return loop::Measure{};
      },
      [] {});
  EXPECT_EQ(m.kind, loop::MergeResult::Kind::kConflict);
  EXPECT_EQ(m.conflicts, std::vector<std::string>{"shared.txt"});
  EXPECT_FALSE(measured) << "a conflict is never measured";
  EXPECT_EQ(rev_parse(repo, "HEAD"), ours);
  EXPECT_EQ(read(repo + "/shared.txt"), "ours\n");
  std::string note = read(loop::merge_incident(tmp / "incidents", r, e, m, "refs/phoenix/abandoned/task-t1"));
  EXPECT_NE(note.find("# Incident"), std::string::npos) << note;
  EXPECT_NE(note.find("+theirs"), std::string::npos) << note;  // the task's side
  EXPECT_NE(note.find("+ours"), std::string::npos) << note;    // the loop branch's side
  EXPECT_NE(note.find("refs/phoenix/abandoned/task-t1"), std::string::npos) << note;
}

// A job ends on its worker's thread between two of the loop thread's calls.
// Until its result is taken, its task is neither free nor done: the loop
// must not hand it out again (it did, once in a CI run: a task run twice).
TEST(LoopWorkerPool, AFinishedJobsTaskIsNotFreeUntilItsResultIsTaken) {
  ScopedTempDir tmp;
  std::string repo = init_repo(tmp / "repo");
  write(repo, "a.txt", "a\n");
  std::string head = commit_all(repo, "base");
  gitx::Repo r = gitx::Repo::open(repo);
  loop::WorkerPool pool(1, r, "pool-test",
                        [](loop::WorkerPool::Worker&, const loop::Job&) {
                          loop::JobResult j;
                          j.end = loop::JobResult::End::kNoChange;
                          return j;
                        },
                        {});
  loop::Task t;
  t.title = "task a";
  pool.start(loop::Job{t, 1, "prompt"}, head);
  // The worker is free again the moment its job has ended (one lock sets
  // both): wait for that, bounded.
  for (int i = 0; i < 6000 && !pool.has_free(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(pool.has_free());
  EXPECT_TRUE(pool.on_task(0)) << "a result not taken yet: the task is not free";
  EXPECT_EQ(pool.busy(), 1);
  EXPECT_THROW(pool.start(loop::Job{t, 1, "prompt"}, head), Error);
  std::vector<loop::JobResult> done = pool.take_finished(0);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].job.task.title, "task a");
  EXPECT_FALSE(pool.on_task(0));
  EXPECT_EQ(pool.busy(), 0);
}

#ifdef PHOENIX_LOOP_BIN

class LoopWorkersTest : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string repo, head, agent_log;

  void SetUp() override {
    repo = init_repo(tmp / "repo");
    agent_log = tmp / "agent.jsonl";
    write(repo, "src.txt", "fine\n");
    write(repo, ".gitignore", ".phoenix/\nincidents/\n");
  }

  // Tasks "- [ ] <title>" for each title; the agent runs `script`; the
  // checks are "nobreak" plus `extra_checks`.
  void configure(const std::vector<std::string>& titles, const std::string& script, Json extra_checks = Json::array(),
                 Json loop_extra = Json::object()) {
    std::string tasks = "# Tasks\n\n";
    for (const auto& t : titles) tasks += "- [ ] " + t + "\n";
    write(repo, "TASKS.md", tasks);
    Json loop = {{"tasks", "TASKS.md"}, {"heartbeat_s", 0.05}, {"on_escalate", "skip"}};
    for (auto& [k, v] : loop_extra.items()) loop[k] = v;
    Json checks = {{{"id", "nobreak"},
                    {"kind", "regex_in_file"},
                    {"target", "src.txt"},
                    {"pattern", "BROKEN"},
                    {"expect", "absent"},
                    {"editable", {"src.txt"}}}};
    for (const auto& c : extra_checks) checks.push_back(c);
    Json cfg = {{"checks", checks},
                {"fixers", {"noop"}},
                {"harness",
                 {{"command", {test_tool("scripted_agent"), "--prompt-file", "{prompt_file}"}},
                  {"timeout_s", 60},
                  {"env", {{"PHOENIX_AGENT_SCRIPT", script}, {"PHOENIX_AGENT_LOG", agent_log}}}}},
                {"loop", loop}};
    write(repo, "phoenix.json", cfg.dump(2));
    head = commit_all(repo, "initial");
  }

  CliRun loop(std::vector<std::string> args) {
    args.insert(args.begin(), PHOENIX_LOOP_BIN);
    auto r = run(args, repo, {}, 120);
    return {r.exit_code, r.output};
  }
  Json state() { return Json::parse(read(repo + "/.phoenix/loop-state.json")); }
  std::vector<Json> trace(const std::string& event) {
    std::vector<Json> out;
    for (const auto& l : util::split_lines(read(repo + "/.phoenix/trace.jsonl")))
      if (!l.empty() && Json::parse(l).value("event", "") == event) out.push_back(Json::parse(l)["data"]);
    return out;
  }
  // How many agent runs worked on each task (by the title in the prompt).
  std::map<std::string, int> runs_per_task(const std::vector<std::string>& titles, std::set<std::string>* cwds) {
    std::map<std::string, int> n;
    for (const auto& l : util::split_lines(read(agent_log))) {
      if (l.empty()) continue;
      Json j = Json::parse(l);
      if (cwds) cwds->insert(j["cwd"].get<std::string>());
      for (const auto& t : titles)
        if (j["prompt"].get<std::string>().find("then stop:\n\n" + t + "\n") != std::string::npos) ++n[t];
    }
    return n;
  }
  std::vector<std::string> subjects() {
    return util::split_lines(git(repo, {"log", "--format=%s", head + "..phoenix/loop-test"}));
  }
  // Every commit the loop branch gained, checked out on its own and measured
  // by `phoenix sense` (every check of its phoenix.json): all green.
  void expect_every_commit_green() {
    auto shas = util::split_lines(git(repo, {"rev-list", head + "..phoenix/loop-test"}));
    ASSERT_FALSE(shas.empty());
    for (size_t i = 0; i < shas.size(); ++i) {
      std::string dir = tmp / ("c" + std::to_string(i));
      git(repo, {"worktree", "add", "-q", "--detach", dir, shas[i]});
      CliRun s = run_phoenix(dir, {"sense"});
      EXPECT_EQ(s.code, 0) << shas[i] << "\n" << s.out;
    }
  }
  // `action` of the agent's script, run only when the task is `title`.
  static std::string on_task(const std::string& title, const std::string& action) {
    return "if-prompt '" + kTaskIs + title + "\\n' " + action;
  }
};

TEST_F(LoopWorkersTest, TwelveTasksFourWorkersAllTickedEveryCommitGreen) {
  std::vector<std::string> titles;
  std::string script = "sleep 1";
  for (int i = 1; i <= 12; ++i) {
    std::string n = (i < 10 ? "0" : "") + std::to_string(i);
    titles.push_back("task " + n);
    script += "; " + on_task("task " + n, "write f" + n + ".txt '" + n + "\\n'");
  }
  Json not_bad = {{{"id", "no-bad"}, {"kind", "command_exit"}, {"target", {"sh", "-c", "test ! -e bad.txt"}}}};
  configure(titles, script, not_bad);
  CliRun r = loop({"--branch", "phoenix/loop-test", "--workers", "4"});
  ASSERT_EQ(r.code, 0) << r.out;
  std::string tasks = git(repo, {"show", "phoenix/loop-test:TASKS.md"});
  EXPECT_EQ(tasks.find("- [ ]"), std::string::npos) << tasks;
  // One commit per task, each task once.
  std::vector<std::string> subj = subjects();
  std::multiset<std::string> got(subj.begin(), subj.end());
  EXPECT_EQ(subj.size(), 12u);
  for (const auto& t : titles) {
    EXPECT_EQ(got.count("phoenix-loop: " + t), 1u) << t;
    std::string n = t.substr(5);
    EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:f" + n + ".txt"}), n + "\n");
  }
  // No two workers on the same task: one agent run per task, in more than
  // one worker's tree.
  std::set<std::string> cwds;
  for (const auto& [t, n] : runs_per_task(titles, &cwds)) EXPECT_EQ(n, 1) << t;
  EXPECT_GE(cwds.size(), 2u);
  EXPECT_LE(cwds.size(), 4u);
  std::set<std::string> started;
  for (const auto& s : trace("loop.worker_start")) EXPECT_TRUE(started.insert(s["task"]).second) << s.dump();
  EXPECT_EQ(started.size(), 12u);
  Json s = state();
  EXPECT_EQ(s["schema_version"], 2);
  EXPECT_EQ(s["phase"], "complete");
  EXPECT_EQ(s["workers"], Json::array());
  EXPECT_EQ(s["queue"], Json::array());
  EXPECT_EQ(s["known_good"], rev_parse(repo, "phoenix/loop-test"));
  expect_every_commit_green();
}

TEST_F(LoopWorkersTest, ConflictingTasksOneMergesTheOtherIsRedoneOnTheNewTip) {
  std::vector<std::string> titles = {"task A", "task B"};
  configure(titles, "sleep 0.2; " + on_task("task A", "write shared.txt 'A\\n'") + "; " +
                        on_task("task B", "write shared.txt 'B\\n'"));
  CliRun r = loop({"--branch", "phoenix/loop-test", "--workers", "2"});
  ASSERT_EQ(r.code, 0) << r.out;
  std::vector<Json> merges = trace("loop.merge");
  ASSERT_EQ(merges.size(), 3u) << r.out;
  EXPECT_EQ(merges[0]["result"], "merged");
  EXPECT_EQ(merges[1]["result"], "conflict");
  EXPECT_EQ(merges[1]["conflicts"], Json::array({"shared.txt"}));
  EXPECT_EQ(merges[2]["result"], "merged");
  EXPECT_EQ(merges[1]["task"], merges[2]["task"]);
  // The redone task ran twice, the other once; the redone one is on top.
  auto runs = runs_per_task(titles, nullptr);
  std::string redone = merges[2]["task"] == "t1" ? "A" : "B";
  EXPECT_EQ(runs["task " + redone], 2);
  EXPECT_EQ(runs[redone == "A" ? "task B" : "task A"], 1);
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:shared.txt"}), redone + "\n");
  EXPECT_EQ(subjects().size(), 2u);
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:TASKS.md"}), "# Tasks\n\n- [x] task A\n- [x] task B\n");
  expect_every_commit_green();
}

// The check is red when both flags exist: each task is green alone.
Json both_flags_red() {
  return {{{"id", "not-both"},
           {"kind", "command_exit"},
           {"target", {"sh", "-c", "! { test -e a.flag && test -e b.flag; }"}},
           {"editable", {"*.flag", "*.alt"}}}};
}

TEST_F(LoopWorkersTest, GreenAloneRedCombinedIsRedoneAndTheBranchIsNeverRed) {
  std::vector<std::string> titles = {"task A", "task B"};
  // Told that its last attempt was red combined, the agent does it another way.
  std::string script = "sleep 0.2; unless-prompt 'red combined' " + on_task("task A", "write a.flag x") +
                       "; unless-prompt 'red combined' " + on_task("task B", "write b.flag x") +
                       "; if-prompt 'red combined' " + on_task("task A", "write a.alt x") +
                       "; if-prompt 'red combined' " + on_task("task B", "write b.alt x");
  configure(titles, script, both_flags_red());
  CliRun r = loop({"--branch", "phoenix/loop-test", "--workers", "2"});
  ASSERT_EQ(r.code, 0) << r.out;
  std::vector<Json> merges = trace("loop.merge");
  ASSERT_EQ(merges.size(), 3u) << r.out;
  EXPECT_EQ(merges[1]["result"], "red");
  EXPECT_EQ(merges[1]["red"], Json::array({"not-both"}));
  EXPECT_EQ(merges[2]["result"], "merged");
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:TASKS.md"}), "# Tasks\n\n- [x] task A\n- [x] task B\n");
  expect_every_commit_green();
}

TEST_F(LoopWorkersTest, GreenAloneRedCombinedIsSkippedWithAnIncident) {
  // The agent does the same again: red in its worker's tree on the new tip,
  // the noop fixer cannot heal it, the task is skipped with an incident.
  std::vector<std::string> titles = {"task A", "task B"};
  configure(titles, "sleep 0.2; " + on_task("task A", "write a.flag x") + "; " + on_task("task B", "write b.flag x"),
            both_flags_red());
  CliRun r = loop({"--branch", "phoenix/loop-test", "--workers", "2"});
  EXPECT_EQ(r.code, 1) << r.out;
  ASSERT_EQ(trace("loop.task_skipped").size(), 1u) << r.out;
  std::string incident = trace("loop.task_skipped")[0]["incident"];
  ASSERT_TRUE(fs::exists(incident)) << incident;
  EXPECT_NE(read(incident).find("# Incident"), std::string::npos);
  EXPECT_EQ(util::trim(read(repo + "/.phoenix/ESCALATED")), incident);
  CliRun rep = run_phoenix(repo, {"report", "--json"});
  ASSERT_EQ(rep.code, 0) << rep.out;
  Json j = Json::parse(rep.out);
  EXPECT_EQ(j["tasks_done"].size(), 1u);
  ASSERT_EQ(j["tasks_skipped"].size(), 1u);
  EXPECT_EQ(j["tasks_skipped"][0]["task"]["title"].get<std::string>().substr(0, 5), "task ");
  EXPECT_EQ(subjects().size(), 1u);
  EXPECT_EQ(rev_parse(repo, "refs/phoenix/known-good/phoenix/loop-test"), rev_parse(repo, "phoenix/loop-test"));
  expect_every_commit_green();
}

TEST_F(LoopWorkersTest, KillNineWithAQueuedTaskAndTwoWorkersResumesNothingLostNothingTwice) {
  std::vector<std::string> titles = {"task 1", "task 2", "task 3"};
  // Every measurement takes a while, so the first task sits in the queue
  // while the agents of the other two still run.
  Json slow = {{{"id", "slow"}, {"kind", "command_exit"}, {"target", {"sh", "-c", "sleep 0.3"}}}};
  configure(titles,
            on_task("task 1", "write one.txt '1\\n'") + "; " + on_task("task 2", "sleep 2") + "; " +
                on_task("task 2", "write two.txt '2\\n'") + "; " + on_task("task 3", "sleep 2") + "; " +
                on_task("task 3", "write three.txt '3\\n'"),
            slow);
  util::ProcessOptions po;
  po.argv = {PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-test", "--workers", "3"};
  po.cwd = repo;
  po.timeout_s = 120;
  util::Subprocess proc(po);
  bool caught = false;
  for (auto t0 = std::chrono::steady_clock::now();
       !caught && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30);) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    try {
      Json s = state();
      int agents = 0;
      for (const auto& w : s["workers"]) agents += w["phase"] == "agent" && w["pid"].is_number() ? 1 : 0;
      caught = s["queue"].size() == 1 && agents >= 2;
    } catch (...) {}
  }
  ASSERT_TRUE(caught) << "never saw a queued task beside two running agents";
  ::kill(static_cast<pid_t>(proc.pid()), SIGKILL);
  util::ProcessResult dead = proc.wait();
  ASSERT_EQ(dead.term_signal, SIGKILL) << dead.output;
  ASSERT_TRUE(state()["exit_code"].is_null());

  CliRun r = loop({"--resume"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:TASKS.md"}), "# Tasks\n\n- [x] task 1\n- [x] task 2\n- [x] task 3\n");
  std::vector<std::string> subj = subjects();
  std::multiset<std::string> got(subj.begin(), subj.end());
  for (const auto& t : titles) EXPECT_EQ(got.count("phoenix-loop: " + t), 1u) << t;
  EXPECT_EQ(subj.size(), 3u);
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-test:one.txt"}), "1\n");
  // The queued task came back from the queue, not from another agent run.
  EXPECT_EQ(runs_per_task(titles, nullptr)["task 1"], 1);
  EXPECT_TRUE(git(repo, {"for-each-ref", "refs/phoenix/queue/"}).empty());
  Json s = state();
  EXPECT_EQ(s["phase"], "complete");
  EXPECT_EQ(s["queue"], Json::array());
  expect_every_commit_green();
}

#endif  // PHOENIX_LOOP_BIN

}  // namespace
}  // namespace phoenix::test
