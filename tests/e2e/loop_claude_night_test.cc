// A night of phoenix-loop with the real claude CLI (as scripts/deps.sh
// installs it into /opt/phoenix-test-tools/agents) against the suite's
// model server (tests/tools/model_server.cc), on the suite's CMake project
// (tests/fixtures/real-projects/cmake: its check builds it and runs CTest).
//
// The model server picks each run's edit by the prompt claude sends
// (<dir>/edits.json, first match wins): four tasks, on_escalate = skip,
// a unit budget of 4 (task 3's path: its red run, the heal's red proposal,
// the heal's repeat of it, the agent's run again):
//   1. add calc_neg      a harmless new function: green at once;
//   2. add calc_square   a new function, and calc_mul broken beside it: red;
//                        the heal (claude, shown the failure, the task and
//                        the diff) mends calc_mul and keeps calc_square;
//   3. make calc_add saturate   breaks calc_add; the heal's edit does not
//                        mend it, and given the task again the agent makes
//                        the same change: the same signature, escalated;
//   4. add calc_sub      harmless, after it.
// What the night leaves is checked where a person would look: the branch's
// ticks, tree and history (every commit built and tested again in a
// worktree of the test's own), the incident note, the model server's log
// (how many runs each task cost), the exit code and `phoenix report`.
// The same night runs again with --workers 2 (the merge queue lands each
// task's work as one commit).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "real_projects.h"
#include "model_server_client.h"
#include "test_util.h"
#include "util/json.h"
#include "util/subprocess.h"
#include "util/text.h"

#ifdef PHOENIX_LOOP_BIN

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// The tasks, in TASKS.md's order.
const std::vector<std::string> kTitles = {"add calc_neg", "add calc_square", "make calc_add saturate", "add calc_sub"};
constexpr int kBudget = 4;

// The scripted answers, first match wins: the heals first (their prompt
// names the task being done too), then each task's prompt, told by the
// line the loop's prompt puts the task on (templates/prompt-task.md).
// Index: 0 heal of task 2, 1 heal of task 3, 2.. the tasks 1..4.
Json scripted_edits() {
  const std::string task = "Do this one task, then stop:\n\n";
  return Json::array({
      // The heal of task 2: calc_mul mended, calc_square kept.
      {{"when", "The task being done: add calc_square"},
       {"file", "src/calc.c"},
       {"old", "  return a * b + 1;\n"},
       {"new", "  return a * b;\n"}},
      // The heal of task 3: a change that mends nothing.
      {{"when", "The task being done: make calc_add saturate"},
       {"file", "src/calc.c"},
       {"old", "  return a + b + 1;\n"},
       {"new", "  return a + b + 1; /* saturates */\n"}},
      {{"when", task + kTitles[0]},
       {"file", "src/calc.c"},
       {"old", "#include \"calc.h\"\n"},
       {"new", "#include \"calc.h\"\n\nint calc_neg(int a) {\n  return -a;\n}\n"}},
      {{"when", task + kTitles[1]},
       {"file", "src/calc.c"},
       {"old", "  return a * b;\n}\n"},
       {"new", "  return a * b + 1;\n}\n\nint calc_square(int a) {\n  return a * a;\n}\n"}},
      {{"when", task + kTitles[2]}, {"file", "src/calc.c"}, {"old", "  return a + b;\n"}, {"new", "  return a + b + 1;\n"}},
      {{"when", task + kTitles[3]},
       {"file", "include/calc.h"},
       {"old", "int calc_mul(int a, int b);\n"},
       {"new", "int calc_mul(int a, int b);\nint calc_sub(int a, int b);\n"}},
  });
}

// The final src/calc.c: tasks 1 and 2 (healed), not 3.
const char* kFinalCalc =
    "#include \"calc.h\"\n\nint calc_neg(int a) {\n  return -a;\n}\n\nint calc_add(int a, int b) {\n  return a + b;\n}\n\n"
    "int calc_mul(int a, int b) {\n  return a * b;\n}\n\nint calc_square(int a) {\n  return a * a;\n}\n";
const char* kFinalHeader =
    "#ifndef CALC_H\n#define CALC_H\n\nint calc_add(int a, int b);\nint calc_mul(int a, int b);\nint calc_sub(int a, "
    "int b);\n\n#endif\n";

class LoopClaudeNight : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string repo, home, base;
  std::unique_ptr<ModelServer> server;
  const std::string branch = "phoenix/loop-claude";

  void SetUp() override {
    if (!fs::exists(agents_bin() + "/claude"))
      GTEST_SKIP() << "claude is not installed in " << agents_bin() << " (scripts/deps.sh installs it from npm)";
    for (const char* tool : {"cmake", "ctest", "cc"})
      if (util::find_executable(tool).empty())
        GTEST_SKIP() << tool << " is not installed (scripts/deps.sh installs cmake and build-essential)";
    server = std::make_unique<ModelServer>(tmp / "model");
    write(tmp / "model", "edits.json", scripted_edits().dump(2));
    home = tmp / "home";
    fs::create_directories(home);
    repo = init_repo(tmp / "repo");
    copy_real_project("cmake", repo);
    write(repo, ".gitignore", "build/\n.phoenix/\nincidents/\n");
    std::string tasks = "# Tonight\n\n";
    for (const auto& t : kTitles) tasks += "- [ ] " + t + "\n";
    write(repo, "TASKS.md", tasks);
    Json env = {{"PATH", agents_bin() + ":/usr/local/bin:/usr/bin:/bin"},
                {"HOME", home},
                {"ANTHROPIC_BASE_URL", server->url()},
                {"ANTHROPIC_API_KEY", "sk-test"},
                {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
                {"CLAUDE_CODE_MAX_RETRIES", "0"}};
    Json cfg = {
        {"setup", {{{"run", {"cmake", "-S", ".", "-B", "build"}}, {"inputs", {"**/CMakeLists.txt", "**/*.cmake"}}}}},
        {"checks",
         {{{"id", "unit"},
           {"kind", "command_exit"},
           {"target", {"sh", "-c", "cmake --build build && ctest --test-dir build --output-on-failure"}},
           {"type", "unit"},
           {"timeout_s", 120},
           {"editable", {"src/**", "include/**"}}}}},
        {"fixers", {"harness"}},
        {"budgets", {{"unit", kBudget}}},
        {"harness", {{"preset", "claude"}, {"timeout_s", 60}, {"env", env}}},
        {"loop",
         {{"tasks", "TASKS.md"}, {"on_escalate", "skip"}, {"iteration_timeout_s", 60}, {"heartbeat_s", 0.2}}}};
    write(repo, "phoenix.json", cfg.dump(2));
    base = trim(commit_all(repo, "calc, tonight's tasks"));
  }

  CliRun night(const std::vector<std::string>& extra) {
    std::vector<std::string> argv{PHOENIX_LOOP_BIN, "--branch", branch};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = run(argv, repo, {}, 240);
    return {r.exit_code, r.output};
  }

  std::string show(const std::string& what) { return git(repo, {"show", what}); }

  std::vector<Json> trace_events(const std::string& event) {
    std::vector<Json> out;
    for (const auto& l : util::split_lines(read(repo + "/.phoenix/trace.jsonl"))) {
      if (l.empty()) continue;
      Json j = Json::parse(l, nullptr, false);
      if (j.is_object() && j.value("event", "") == event) out.push_back(j);
    }
    return out;
  }

  // Each claude run's first request with tools (no tool result yet), by
  // the scripted entry its prompt chose (model_server's "edit=N").
  std::map<int, int> runs_by_entry() {
    std::map<int, int> n;
    for (const auto& l : util::split_lines(server->log())) {
      if (!contains(l, "/v1/messages") || !contains(l, "tools=1 results=0 ")) continue;
      size_t at = l.find("edit=");
      if (at != std::string::npos) ++n[std::stoi(l.substr(at + 5))];
    }
    return n;
  }

  // Builds and tests `sha` in a worktree of the test's own, from scratch.
  void expect_green(const std::string& sha) {
    const std::string dir = tmp / ("verify-" + sha.substr(0, 12));
    git(repo, {"worktree", "add", "-q", "--detach", dir, sha});
    auto conf = run({"cmake", "-S", ".", "-B", "build"}, dir, {}, 120);
    ASSERT_EQ(conf.exit_code, 0) << sha << "\n" << conf.output;
    auto build = run({"cmake", "--build", "build"}, dir, {}, 120);
    ASSERT_EQ(build.exit_code, 0) << sha << " does not build\n" << build.output;
    auto test = run({"ctest", "--test-dir", "build", "--output-on-failure"}, dir, {}, 120);
    EXPECT_EQ(test.exit_code, 0) << sha << " is red under CTest\n" << test.output;
    git(repo, {"worktree", "remove", "--force", dir});
  }

  // Everything both nights promise.
  void expect_the_night(const CliRun& r) {
    std::string diag = r.out + "\n--- model server ---\n" + server->log();
    if (fs::exists(tmp / "model/unmatched-prompt.txt"))
      diag += "--- the last prompt no scripted answer matched ---\n" + read(tmp / "model/unmatched-prompt.txt");
    EXPECT_EQ(r.code, 1) << "a task was skipped: the night needs a person\n" << diag;

    // The ticks: 1, 2 and 4 done, 3 open.
    EXPECT_EQ(show(branch + ":TASKS.md"),
              "# Tonight\n\n- [x] add calc_neg\n- [x] add calc_square\n- [ ] make calc_add saturate\n- [x] add calc_sub\n")
        << diag;
    // The tree: task 2's new function kept by its heal, task 3's change nowhere.
    EXPECT_EQ(show(branch + ":src/calc.c"), kFinalCalc) << diag;
    EXPECT_EQ(show(branch + ":include/calc.h"), kFinalHeader) << diag;
    EXPECT_EQ(rev_parse(repo, branch), rev_parse(repo, "refs/phoenix/known-good/" + branch));

    // One commit per done task on the branch, each "phoenix-loop: <task>".
    std::vector<std::string> subjects =
        util::split_lines(trim(git(repo, {"log", "--first-parent", "--reverse", "--format=%s", base + ".." + branch})));
    EXPECT_EQ(subjects, (std::vector<std::string>{"phoenix-loop: " + kTitles[0], "phoenix-loop: " + kTitles[1],
                                                  "phoenix-loop: " + kTitles[3]}))
        << git(repo, {"log", "--graph", "--format=%h %s", base + ".." + branch});
    // The healed task's trailers: the task, its red attempt, the fixer.
    std::string healed;
    for (const std::string& sha :
         util::split_lines(trim(git(repo, {"rev-list", "--first-parent", base + ".." + branch}))))
      if (trim(git(repo, {"log", "-1", "--format=%s", sha})) == "phoenix-loop: " + kTitles[1]) healed = sha;
    ASSERT_FALSE(healed.empty());
    const std::string body = git(repo, {"log", "-1", "--format=%B", healed});
    const std::string trailers = git(repo, {"log", "-1", "--format=%(trailers)", healed});
    EXPECT_TRUE(contains(trailers, "Phoenix-Task: ")) << body;
    EXPECT_TRUE(contains(trailers, "Phoenix-Attempt: refs/phoenix/attempts/")) << body;
    EXPECT_TRUE(contains(trailers, "Phoenix-Healed-By: harness")) << body;
    for (const std::string& line : util::split_lines(trailers))
      if (util::starts_with(line, "Phoenix-Attempt: ")) {
        // The attempt is kept, and held the agent's red change.
        const std::string ref = line.substr(17);
        EXPECT_TRUE(contains(show(ref + ":src/calc.c"), "return a * b + 1;")) << ref;
      }
    // The attempts never went on the branch.
    EXPECT_FALSE(contains(git(repo, {"log", "-p", base + ".." + branch}), "return a + b + 1;"));

    // Every commit on the branch is green: built and tested again, each.
    for (const std::string& sha : util::split_lines(trim(git(repo, {"rev-list", base + ".." + branch}))))
      expect_green(sha);

    // The incident: task 3's check, the agent's attempts, its own diff.
    std::vector<std::string> notes;
    if (fs::exists(repo + "/incidents"))
      for (const auto& e : fs::directory_iterator(repo + "/incidents"))
        if (e.path().extension() == ".md") notes.push_back(e.path().string());
    ASSERT_EQ(notes.size(), 1u) << diag;
    const std::string note = read(notes[0]);
    EXPECT_TRUE(contains(note, "`unit` — ")) << note;
    EXPECT_TRUE(contains(note, "make calc_add saturate")) << note;
    const size_t retries = note.find("## Retries attempted");
    const size_t diff = note.find("## Last attempted diff");
    ASSERT_NE(retries, std::string::npos) << note;
    ASSERT_NE(diff, std::string::npos) << note;
    const std::string retried = note.substr(retries, note.find("\n## ", retries + 1) - retries);
    EXPECT_TRUE(contains(retried, "1. agent (refs/phoenix/attempts/")) << retried;
    EXPECT_TRUE(contains(retried, "2. harness: red: ")) << retried;
    // The heal's second run proposed the same fix: spent, and counted.
    EXPECT_TRUE(contains(retried, "3. harness: rejected (repeat)")) << retried;
    EXPECT_TRUE(contains(retried, "4. agent (refs/phoenix/attempts/")) << retried;
    EXPECT_TRUE(contains(retried, "Escalated because: the same failure again")) << retried;
    const std::string last = note.substr(diff, note.find("\n## ", diff + 1) - diff);
    EXPECT_TRUE(contains(last, "+  return a + b + 1;")) << "the agent's own diff\n" << last;
    EXPECT_TRUE(contains(last, "-  return a + b;")) << last;
    EXPECT_TRUE(contains(note, "## State: rolled back to ")) << note;

    // The bound on runs: no task cost more than its budget in claude runs
    // (agent runs that went red + heals); the harmless ones one each.
    std::map<int, int> n = runs_by_entry();
    EXPECT_EQ(n[-1], 0) << "every run's prompt chose a scripted answer\n" << diag;
    EXPECT_EQ(n[2], 1) << server->log();
    EXPECT_EQ(n[3], 1) << server->log();
    EXPECT_EQ(n[0], 1) << "task 2 healed at the first heal\n" << server->log();
    EXPECT_EQ(n[4], 2) << "the agent given task 3 again repeats itself\n" << server->log();
    std::string attempts;
    for (const char* e : {"loop.attempt", "loop.attempt_failed", "loop.task_escalated"})
      for (const Json& a : trace_events(e)) attempts += a.dump() + "\n";
    for (const Json& a : trace_events("state"))
      if (a["data"].value("state", "") == "REJECTED") attempts += a.dump() + "\n";
    EXPECT_LE(n[4] + n[1], kBudget) << "task 3 cost more claude runs than its budget\n"
                                    << server->log() << attempts << note;
    EXPECT_EQ(n[5], 1) << server->log();
    // The trace agrees: one loop.agent per agent run, one proposal per heal run.
    EXPECT_EQ(static_cast<int>(trace_events("loop.agent").size()), n[2] + n[3] + n[4] + n[5]);
    EXPECT_EQ(static_cast<int>(trace_events("proposal").size()), n[0] + n[1]);

    // The report.
    CliRun rep = run_phoenix(repo, {"report", "--json"});
    ASSERT_EQ(rep.code, 0) << rep.out;
    Json j = Json::parse(rep.out);
    ASSERT_EQ(j["tasks_done"].size(), 3u) << j.dump(2);
    int healed_done = 0;
    for (const Json& t : j["tasks_done"])
      if (t.value("healed", false)) {
        ++healed_done;
        EXPECT_EQ(t.value("fixer", ""), "harness") << t.dump();
        EXPECT_EQ(t.dump().find(kTitles[1]) != std::string::npos, true) << t.dump();
      }
    EXPECT_EQ(healed_done, 1) << j["tasks_done"].dump(2);
    ASSERT_EQ(j["tasks_escalated"].size(), 1u) << j.dump(2);
    EXPECT_TRUE(contains(j["tasks_escalated"][0].dump(), kTitles[2])) << j["tasks_escalated"].dump(2);
    EXPECT_EQ(j["incidents"].size(), 1u) << j.dump(2);
    EXPECT_TRUE(util::starts_with(j.value("verdict", ""), "3 of 4 tasks done, 1 escalated, 0 open"))
        << j.value("verdict", "");
    // The user's checkout did not move and is clean.
    EXPECT_EQ(rev_parse(repo, "HEAD"), base);
    EXPECT_EQ(trim(git(repo, {"status", "--porcelain"})), "");
  }
};

TEST_F(LoopClaudeNight, HealsKeepsTheWorkEscalatesTheUnmendableAndLandsOneGreenCommitPerTask) {
  CliRun r = night({});
  expect_the_night(r);
}

TEST_F(LoopClaudeNight, TheSameNightWithTwoWorkersThroughTheMergeQueue) {
  CliRun r = night({"--workers", "2"});
  expect_the_night(r);
}

// With a unit budget of 3, task 3's path ends on the budget before the
// agent gets the task again: its red run, the heal's red proposal and the
// heal's repeat of it are its 3 attempts, and 3 claude runs are all it costs
// (the repeat was once in no count: a fourth run, the agent's again).
TEST_F(LoopClaudeNight, ATightBudgetBoundsTheClaudeRunsOfTheUnmendableTask) {
  Json cfg = Json::parse(read(repo + "/phoenix.json"));
  cfg["budgets"]["unit"] = 3;
  write(repo, "phoenix.json", cfg.dump(2));
  base = trim(commit_all(repo, "a unit budget of 3"));
  CliRun r = night({});
  const std::string diag = r.out + "\n--- model server ---\n" + server->log();
  EXPECT_EQ(r.code, 1) << diag;
  EXPECT_EQ(show(branch + ":TASKS.md"),
            "# Tonight\n\n- [x] add calc_neg\n- [x] add calc_square\n- [ ] make calc_add saturate\n- [x] add calc_sub\n")
      << diag;
  EXPECT_EQ(show(branch + ":src/calc.c"), kFinalCalc) << diag;
  std::map<int, int> n = runs_by_entry();
  EXPECT_EQ(n[4], 1) << "the budget was spent before the agent's second run\n" << diag;
  EXPECT_EQ(n[4] + n[1], 3) << diag;
  std::vector<std::string> notes;
  if (fs::exists(repo + "/incidents"))
    for (const auto& e : fs::directory_iterator(repo + "/incidents")) notes.push_back(e.path().string());
  ASSERT_EQ(notes.size(), 1u) << diag;
  const std::string note = read(notes[0]);
  EXPECT_TRUE(contains(note, "1. agent (refs/phoenix/attempts/")) << note;
  EXPECT_TRUE(contains(note, "2. harness: red: ")) << note;
  EXPECT_TRUE(contains(note, "3. harness: rejected (repeat)")) << note;
  EXPECT_FALSE(contains(note, "4. ")) << note;
  EXPECT_TRUE(contains(note, "Escalated because: budget of 3 for unit spent (3 attempts")) << note;
  CliRun rep = run_phoenix(repo, {"report", "--json"});
  ASSERT_EQ(rep.code, 0) << rep.out;
  Json j = Json::parse(rep.out);
  EXPECT_TRUE(util::starts_with(j.value("verdict", ""), "3 of 4 tasks done, 1 escalated, 0 open"))
      << j.value("verdict", "");
}

}  // namespace
}  // namespace phoenix::test

#endif
