// The morning report from a night written event by event: the model (tasks,
// heals, waits, escalations), the verdict, the terminal and Markdown reports
// line by line, and the HTML page's pieces (timeline marks, incident note
// rendered by cmark-gfm, coloured diff, failing tests, pictures inline).
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>

#include "image/image.h"
#include "report/night.h"
#include "report/summary.h"
#include "report/render.h"
#include "test_util.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

// Times in UTC so that the report's local times are the same everywhere.
class ReportTest : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string root;
  std::string trace;
  int seq = 0;
  std::string old_tz;
  bool had_tz = false;

  void SetUp() override {
    if (const char* tz = std::getenv("TZ")) {
      had_tz = true;
      old_tz = tz;
    }
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    root = tmp / "repo";
    fs::create_directories(root + "/incidents");
  }
  void TearDown() override {
    if (had_tz) ::setenv("TZ", old_tz.c_str(), 1);
    else ::unsetenv("TZ");
    ::tzset();
  }

  // One trace line at 2026-12-02T<hms>Z.
  void ev(const std::string& hms, const std::string& event, const Json& data) {
    Json e = {{"seq", ++seq}, {"ts", "2026-12-02T" + hms + ".000Z"}, {"event", event}, {"data", data}};
    trace += e.dump() + "\n";
  }

  static Json task(int index, const std::string& title) {
    return {{"id", "t" + std::to_string(index)}, {"title", title}, {"index", index}, {"total", 5}};
  }

  std::string note_path() const { return root + "/incidents/2026-12-02-03-12.md"; }

  // Five tasks: done, healed by bisect, healed from the journal after a
  // rate-limit wait, done, and an escalation of a visual check that stops
  // the loop.
  void night() {
    ev("01:00:00", "loop.start", {{"branch", "phoenix/loop-20261202"}, {"source", "TASKS.md"}, {"mode", "tasks"}});
    // 1: done in one turn, $0.42.
    ev("01:04:12", "loop.agent",
       {{"iteration", 1},
        {"status", "ok"},
        {"changed", true},
        {"duration_ms", 252000},
        {"cost_usd", 0.42},
        {"model_calls", 3}});
    ev("01:04:13", "loop.measure", {{"iteration", 1}, {"checks", {{{"id", "unit"}, {"ok", true}}}}});
    ev("01:04:14", "loop.task_done",
       {{"iteration", 1}, {"task", task(1, "Add a total to orders")}, {"head", "a1a1a1a1a1a1a1a1"}});
    // 2: red, healed by bisect.
    ev("01:20:00", "loop.agent",
       {{"iteration", 2}, {"status", "ok"}, {"changed", true}, {"duration_ms", 900000}, {"cost_usd", 1.1}});
    ev("01:20:01", "loop.measure", {{"iteration", 2}, {"checks", {{{"id", "unit"}, {"ok", false}}}}});
    ev("01:20:02", "state", {{"check", "unit"}, {"state", "DETECTED"}, {"signature", "5e5e5e5e5e5e"}});
    ev("01:20:14", "state",
       {{"check", "unit"}, {"state", "HEALED"}, {"fixer", "bisect"}, {"attempts", 1}, {"commit", "b2b2b2b2b2b2b2b2"}});
    ev("01:20:15", "loop.task_done",
       {{"iteration", 2},
        {"task", task(2, "Paginate the orders list")},
        {"head", "c3c3c3c3c3c3c3c3"},
        {"healed", true}});
    // 3: the provider refuses, the loop waits 5 min; then red, replayed from the journal.
    ev("01:20:20", "loop.agent",
       {{"iteration", 3}, {"status", "rate-limited"}, {"changed", false}, {"duration_ms", 2000}});
    ev("01:20:20", "loop.wait", {{"status", "rate-limited"}, {"wait_ms", 300000}, {"detail", "429 Too Many Requests"}});
    ev("01:30:00", "loop.agent", {{"iteration", 3}, {"status", "ok"}, {"changed", true}, {"duration_ms", 280000}});
    ev("01:30:01", "loop.measure", {{"iteration", 3}, {"checks", {{{"id", "unit"}, {"ok", false}}}}});
    ev("01:30:02", "state", {{"check", "unit"}, {"state", "DETECTED"}, {"signature", "5e5e5e5e5e5e"}});
    ev("01:30:03", "state",
       {{"check", "unit"}, {"state", "HEALED"}, {"fixer", "journal"}, {"attempts", 1}, {"commit", "d4d4d4d4d4d4d4d4"}});
    ev("01:30:04", "loop.task_done",
       {{"iteration", 3}, {"task", task(3, "Cache the totals")}, {"head", "e5e5e5e5e5e5e5e5"}, {"healed", true}});
    // 4: done.
    ev("02:00:00", "loop.agent",
       {{"iteration", 4}, {"status", "ok"}, {"changed", true}, {"duration_ms", 60000}, {"cost_usd", 0.2}});
    ev("02:00:01", "loop.measure",
       {{"iteration", 4}, {"checks", {{{"id", "unit"}, {"ok", true}}, {{"id", "chart"}, {"ok", true}}}}});
    ev("02:00:02", "loop.task_done",
       {{"iteration", 4}, {"task", task(4, "Rename the CSV export")}, {"head", "f6f6f6f6f6f6f6f6"}});
    // 5: the chart drifts; nothing heals it; escalated at 03:12, the loop stops.
    ev("03:00:00", "loop.agent",
       {{"iteration", 5}, {"status", "ok"}, {"changed", true}, {"duration_ms", 120000}, {"cost_usd", 0.3}});
    ev("03:00:01", "loop.measure", {{"iteration", 5}, {"checks", {{{"id", "chart"}, {"ok", false}}}}});
    ev("03:00:02", "state", {{"check", "chart"}, {"state", "DETECTED"}, {"signature", "7a7a7a7a7a7a"}});
    std::string engine_note = root + "/.git/phoenix/loop/.phoenix/incidents/2026-12-02-03-12.md";
    ev("03:12:00", "incident", {{"path", engine_note}, {"check", "chart"}, {"why", "budget of 3 for visual spent"}});
    ev("03:12:01", "state", {{"check", "chart"}, {"state", "ESCALATED"}});
    ev("03:12:02", "rollback", {{"to", "f6f6f6f6f6f6f6f6"}, {"abandoned", "0909090909090909"}});
    ev("03:12:03", "loop.incident", {{"path", note_path()}, {"from", engine_note}});
    ev("03:12:04", "loop.end", {{"exit_code", 2}, {"phase", "escalated"}, {"why", "escalated: see " + note_path()}});

    image::Image img;
    img.width = 4;
    img.height = 2;
    img.rgba.assign(4 * 2 * 4, 255);
    for (const char* name : {"expected", "actual", "diff"})
      image::write_png(root + "/incidents/2026-12-02-03-12-" + std::string(name) + ".png", img);
    write(
        root, "incidents/2026-12-02-03-12.md",
        "# Incident — 2026-12-02 03:12\n\n## Failure type\n\nvisual\n\n## Check\n\n`chart` — visual `http://127.0.0.1:3000/chart.png`\n\n"
        "Signal: `3.2% of pixels differ`\n\n## Retries attempted\n\n1. harness: red: 3.2% <b>bold</b>\n\n## Failure signatures\n\n"
        "- issue: `7a7a7a7a7a7a`\n- failing test: `ChartTest.Colours`\n\n## Last attempted diff\n\n"
        "```diff\n--- a/src/chart.c\n+++ b/src/chart.c\n@@ -1 +1 @@\n-int colour = 1;\n+int colour = 2;\n```\n\n"
        "## Evidence\n\n```\n[ RUN      ] ChartTest.Colours\n[  FAILED  ] ChartTest.Colours (3 ms)\n<script>alert(1)</script>\n```\n\n"
        "![2026-12-02-03-12-expected.png](2026-12-02-03-12-expected.png)\n\n"
        "![2026-12-02-03-12-actual.png](2026-12-02-03-12-actual.png)\n\n"
        "![2026-12-02-03-12-diff.png](2026-12-02-03-12-diff.png)\n\n"
        "## State: rolled back to f6f6f6f6f6f6f6f6\n");
  }

  report::Facts facts() const {
    report::Facts f;
    f.root = root;
    f.known_good_of = [](const std::string&) { return std::string("f6f6f6f6f6f6f6f6"); };
    f.abandoned_refs["0909090909090909"] = "refs/phoenix/abandoned/20261202T031202Z";
    f.tasks_at = [](const std::string& branch, const std::string& path) {
      EXPECT_EQ(branch, "phoenix/loop-20261202");
      EXPECT_EQ(path, "TASKS.md");
      return std::string(
          "# Tonight\n\n- [x] Add a total to orders\n- [x] Paginate the orders list\n- [x] Cache the totals\n"
          "- [x] Rename the CSV export\n- [ ] Recolour the chart\n");
    };
    return f;
  }

  report::Night read() {
    return report::read_night(trace, report::last_loop_start(report::read_events(trace, 0)), facts());
  }
};

TEST(ReportUnits, HumanUnits) {
  EXPECT_EQ(report::duration(840), "840 ms");
  EXPECT_EQ(report::duration(4200), "4.2 s");
  EXPECT_EQ(report::duration(42'000), "42 s");
  EXPECT_EQ(report::duration(252'000), "4 min 12 s");
  EXPECT_EQ(report::duration(300'000), "5 min");
  EXPECT_EQ(report::duration((2 * 60 + 13) * 60'000LL), "2 h 13 min");
  EXPECT_EQ(report::duration(3 * 3'600'000LL), "3 h");
  EXPECT_EQ(report::money(0.42), "$0.42");
  EXPECT_EQ(report::money(0.004), "$0.0040");
  EXPECT_EQ(report::money(std::nullopt), "—");
}

TEST_F(ReportTest, ModelOfTheNight) {
  night();
  report::Night n = read();
  EXPECT_TRUE(n.loop);
  EXPECT_FALSE(n.running);
  EXPECT_EQ(n.tasks_total, 5);
  ASSERT_EQ(n.tasks.size(), 5u);
  EXPECT_EQ(n.tasks[0].outcome, report::TaskOutcome::kDone);
  EXPECT_EQ(n.tasks[0].turns, 1);
  EXPECT_EQ(n.tasks[0].end_ms - n.tasks[0].start_ms, 254'000);
  ASSERT_TRUE(n.tasks[0].cost_usd);
  EXPECT_DOUBLE_EQ(*n.tasks[0].cost_usd, 0.42);
  EXPECT_EQ(n.tasks[1].outcome, report::TaskOutcome::kHealed);
  EXPECT_EQ(n.tasks[1].commits, (std::vector<std::string>{"b2b2b2b2b2b2b2b2", "c3c3c3c3c3c3c3c3"}));
  EXPECT_EQ(n.tasks[2].turns, 1) << "the refused run is not a turn";
  EXPECT_FALSE(n.tasks[2].cost_usd);
  EXPECT_EQ(n.tasks[2].cost_why, "the agent CLI reported no cost");
  EXPECT_EQ(n.tasks[4].title, "Recolour the chart") << "named from the tasks file on the loop branch";
  EXPECT_EQ(n.tasks[4].outcome, report::TaskOutcome::kEscalated);
  ASSERT_EQ(n.heals.size(), 2u);
  EXPECT_EQ(n.heals[0].fixer, "bisect");
  EXPECT_EQ(n.heals[0].end_ms - n.heals[0].start_ms, 12'000);
  EXPECT_FALSE(n.heals[0].replayed);
  EXPECT_TRUE(n.heals[1].replayed);
  ASSERT_EQ(n.waits.size(), 1u);
  EXPECT_EQ(n.waits[0].wait_ms, 300'000);
  ASSERT_EQ(n.escalations.size(), 1u);
  EXPECT_EQ(n.escalations[0].incident, "incidents/2026-12-02-03-12.md") << "relative to the repository";
  EXPECT_EQ(n.escalations[0].abandoned_ref, "refs/phoenix/abandoned/20261202T031202Z");
  EXPECT_TRUE(n.escalations[0].stopped_loop);
  EXPECT_EQ(n.iterations, 5);
  int iteration_marks = 0;
  for (const auto& m : n.marks) iteration_marks += m.kind == "iteration";
  EXPECT_EQ(iteration_marks, 5);
  ASSERT_TRUE(n.cost_usd);
  EXPECT_NEAR(*n.cost_usd, 2.02, 1e-9);
  EXPECT_EQ(n.runs_without_cost, 2);
}

// The night's known red comes first; flaky tests, what a task also fixed
// and a task whose retry never came are in every form of the report.
TEST_F(ReportTest, KnownRedFlakyTestsAlsoFixedAndOpenTasks) {
  ev("01:00:00", "loop.start", {{"branch", "phoenix/loop-20261202"}, {"source", "TASKS.md"}, {"mode", "tasks"}});
  ev("01:00:05", "loop.known_red",
     {{"checks", {{"unit", {{"tests", {"tests/test_net.py::test_fetch"}}, {"whole", false}, {"signature", ""}}}}},
      {"why", "red at the baseline"}});
  ev("01:04:12", "loop.agent", {{"iteration", 1}, {"status", "ok"}, {"changed", true}, {"duration_ms", 1000}});
  ev("01:04:13", "loop.verdict",
     {{"check", "unit"},
      {"iteration", 1},
      {"red", true},
      {"flaky", {"tests/test_io.py::test_timeout"}},
      {"new", Json::array()}});
  ev("01:04:14", "loop.also_fixed",
     {{"iteration", 1},
      {"task", task(1, "Mock the network")},
      {"check", "unit"},
      {"tests", {"tests/test_net.py::test_fetch"}}});
  ev("01:04:15", "loop.task_done",
     {{"iteration", 1}, {"task", task(1, "Mock the network")}, {"head", "a1a1a1a1a1a1a1a1"}});
  ev("01:10:00", "loop.agent", {{"iteration", 2}, {"status", "ok"}, {"changed", true}, {"duration_ms", 1000}});
  ev("01:10:01", "loop.verdict",
     {{"check", "unit"},
      {"iteration", 2},
      {"red", true},
      {"flaky", {"tests/test_io.py::test_timeout"}},
      {"new", {"tests/test_a.py::test_b"}}});
  ev("01:10:02", "loop.attempt", {{"iteration", 2}, {"task", task(2, "Speed up the export")}, {"attempts", 1}});
  ev("01:10:03", "loop.attempt_failed",
     {{"iteration", 2},
      {"task", task(2, "Speed up the export")},
      {"why", "red after iteration 2: unit\n  unit: exit=1"}});
  ev("01:10:04", "loop.end", {{"exit_code", 1}, {"phase", "stopped"}, {"why", "stopped: --until 01:10 reached"}});
  report::Night n = read();
  ASSERT_EQ(n.known_red.size(), 1u);
  EXPECT_EQ(n.known_red[0].check, "unit");
  ASSERT_EQ(n.flaky.size(), 1u);
  EXPECT_EQ(n.flaky[0].test, "tests/test_io.py::test_timeout");
  EXPECT_EQ(n.flaky[0].times, 2);
  ASSERT_EQ(n.also_fixed.size(), 1u);
  EXPECT_EQ(n.also_fixed[0], "Mock the network also fixed unit: tests/test_net.py::test_fetch");
  ASSERT_EQ(n.tasks.size(), 2u);
  EXPECT_EQ(n.tasks[1].outcome, report::TaskOutcome::kOpen);
  EXPECT_EQ(n.tasks[1].attempts, 1);
  const std::string text = report::terminal(n, false, 200);
  // Known red right after the verdict, before anything else.
  const std::vector<std::string> lines = util::split_lines(text);
  ASSERT_GT(lines.size(), 4u);
  EXPECT_EQ(lines[4],
            "Known red (failing before the first task, not healed, no task blamed for it): unit: "
            "tests/test_net.py::test_fetch.")
      << text;
  EXPECT_NE(text.find("tests/test_io.py::test_timeout (2 times)"), std::string::npos) << text;
  EXPECT_NE(text.find("Open: \"Speed up the export\" after 1 attempt; its next attempt never came (the night ended "
                      "first): red after iteration 2: unit"),
            std::string::npos)
      << text;
  const std::string md = report::markdown(n);
  EXPECT_NE(md.find("- `unit`: `tests/test_io.py::test_timeout` (2 times)"), std::string::npos) << md;
  // --json, from the same pass.
  const Json j = report::summary_json(n);
  EXPECT_EQ(j["flaky"]["unit"]["tests/test_io.py::test_timeout"], 2) << j.dump();
  EXPECT_EQ(j["known_red"]["unit"]["tests"], Json::array({"tests/test_net.py::test_fetch"})) << j.dump();
  EXPECT_EQ(j["also_fixed"].size(), 1u) << j.dump();
  EXPECT_EQ(j["agent_runs"], 2) << j.dump();
  EXPECT_TRUE(j["model_calls"].is_null()) << "no run reported a count: " << j.dump();
}

// A harness proposal that reported its calls and its cost is counted once,
// the same way, in the text and in --json; a fixer that asked no model is
// no agent run; an unavailable CLI never ran.
TEST_F(ReportTest, OneCountOfWhatAgentRunsSpent) {
  ev("01:00:00", "run.start", {});
  ev("01:00:01", "proposal", {{"check", "unit"}, {"fixer", "harness"}, {"model_calls", 3}, {"cost_usd", 0.25}});
  ev("01:00:02", "proposal", {{"check", "unit"}, {"fixer", "bisect"}, {"model_calls", 0}, {"cost_usd", nullptr}});
  ev("01:00:03", "proposal",
     {{"check", "unit"}, {"fixer", "harness"}, {"model_calls", nullptr}, {"cost_usd", nullptr}});
  ev("01:00:04", "run.end", {{"exit_code", 0}});
  report::Night n = report::read_night(trace, 0, facts());
  EXPECT_EQ(n.agent_runs, 2);
  ASSERT_TRUE(n.cost_usd);
  EXPECT_NEAR(*n.cost_usd, 0.25, 1e-9);
  EXPECT_EQ(n.runs_without_cost, 1);
  EXPECT_FALSE(n.model_calls) << "one run reported no count";
  const Json j = report::summary_json(n);
  EXPECT_EQ(j["agent_runs"], 2) << j.dump();
  EXPECT_NEAR(j["cost_usd"].get<double>(), 0.25, 1e-9) << j.dump();
  EXPECT_EQ(j["calls_without_cost"], 1) << j.dump();
  EXPECT_TRUE(j["model_calls"].is_null()) << j.dump();
  EXPECT_NE(report::totals(n).find("$0.25 (+ 1 run(s) that reported no cost)"), std::string::npos) << report::totals(n);
}

TEST_F(ReportTest, VerdictAndWhatNeedsAPerson) {
  night();
  report::Night n = read();
  EXPECT_EQ(
      report::verdict(n),
      "4 of 5 tasks done, 1 escalated, 0 open, 1 healed by bisect, 1 replayed from the journal, the last escalation "
      "at 03:12: the loop stopped; known-good is f6f6f6f.");
  auto needs = report::needs_person(n);
  ASSERT_EQ(needs.size(), 1u);
  EXPECT_EQ(
      needs[0],
      "Read incidents/2026-12-02-03-12.md: `chart` on \"Recolour the chart\" escalated (budget of 3 for visual spent); "
      "the abandoned work is refs/phoenix/abandoned/20261202T031202Z.");
  EXPECT_EQ(report::next_command(n), "phoenix report --html night.html");
}

TEST_F(ReportTest, DefaultSinceIsTheLastLoopsStart) {
  ev("00:10:00", "loop.start", {{"branch", "phoenix/loop-old"}, {"source", "TASKS.md"}});
  ev("00:11:00", "loop.task_done", {{"task", task(1, "yesterday's task")}, {"head", "1111111"}});
  ev("00:12:00", "loop.end", {{"exit_code", 0}, {"phase", "complete"}, {"why", "complete"}});
  night();
  report::Night n = read();
  EXPECT_EQ(n.branch, "phoenix/loop-20261202");
  for (const auto& t : n.tasks) EXPECT_NE(t.title, "yesterday's task");
}

TEST_F(ReportTest, NothingToSayIsADash) {
  ev("01:00:00", "loop.start", {{"branch", "phoenix/loop-20261202"}, {"source", "TASKS.md"}});
  ev("01:00:01", "loop.agent", {{"iteration", 1}, {"status", "ok"}, {"changed", true}, {"duration_ms", 800}});
  ev("01:00:02", "loop.task_done", {{"iteration", 1}, {"task", task(1, "Only task")}, {"head", "a1a1a1a1"}});
  ev("01:00:03", "loop.end",
     {{"exit_code", 0}, {"phase", "complete"}, {"why", "complete: every task ticked, every check green"}});
  report::Facts f;
  f.root = root;
  f.known_good_of = [](const std::string&) { return std::string("a1a1a1a1"); };
  report::Night n = report::read_night(trace, 0, f);
  n.tasks_total = 1;
  std::string t = report::terminal(n, false);
  EXPECT_NE(t.find("\nHeals\n  —\n"), std::string::npos) << t;
  EXPECT_NE(t.find("\nEscalations\n  —\n"), std::string::npos) << t;
  EXPECT_NE(t.find("· cost unknown: the agent CLI"), std::string::npos) << t;
  EXPECT_EQ(n.tasks[0].cost_why, "the agent CLI reported no cost");
  EXPECT_NE(t.find("Next: git log --oneline phoenix/loop-20261202"), std::string::npos) << t;
  std::string h = report::html(n);
  EXPECT_NE(h.find("<h2>Heals</h2>\n<p><span class=\"dash\">—</span></p>"), std::string::npos);
}

TEST_F(ReportTest, TerminalReportLineByLine) {
  night();
  std::string t = report::terminal(read(), false);
  std::vector<std::string> want = {
      "Phoenix: the night on phoenix/loop-20261202",
      "2026-12-02 01:00 +00:00 to 03:12 (2 h 12 min)",
      "",
      "4 of 5 tasks done, 1 escalated, 0 open, 1 healed by bisect, 1 replayed from the",
      "journal, the last escalation at 03:12: the loop stopped; known-good is f6f6f6f.",
      "",
      "Needs a person first",
      "  1. Read incidents/2026-12-02-03-12.md: `chart` on \"Recolour the chart\"",
      "     escalated (budget of 3 for visual spent); the abandoned work is",
      "     refs/phoenix/abandoned/20261202T031202Z.",
      "",
      "Tasks",
      "  done      Add a total to orders",
      "            1 commit a1a1a1a · 4 min 14 s · 1 turn · $0.42",
      "  healed    Paginate the orders list",
      "            2 commits b2b2b2b, c3c3c3c · 15 min 15 s · 1 turn · $1.10",
      "  healed    Cache the totals",
      "            2 commits d4d4d4d, e5e5e5e · 4 min 44 s · 1 turn · cost unknown: the",
      "            agent CLI reported no cost",
      "  done      Rename the CSV export",
      "            1 commit f6f6f6f · 1 min 2 s · 1 turn · $0.20",
      "  escalated Recolour the chart",
      "            no commit · 14 min · 1 turn · $0.30 · incidents/2026-12-02-03-12.md",
      "",
      "Heals",
      "  01:20  unit by bisect, 1 attempt, 12 s, fix b2b2b2b",
      "  01:30  unit replayed from the journal, 1 attempt, 1.0 s, fix d4d4d4d",
      "",
      "Rate-limit waits",
      "  01:20  rate-limited, waited 5 min (429 Too Many Requests)",
      "",
      "Escalations",
      "  03:12  chart: budget of 3 for visual spent; note",
      "         incidents/2026-12-02-03-12.md; rolled back to f6f6f6f; abandoned work",
      "         in refs/phoenix/abandoned/20261202T031202Z",
      "",
      "Totals",
      "  5 iterations, 2 h 12 min, $2.02 (+ 2 run(s) that reported no cost)",
      "",
      "Next: phoenix report --html night.html",
  };
  std::vector<std::string> got = util::split_lines(t);
  while (!got.empty() && got.back().empty()) got.pop_back();
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i)
    EXPECT_EQ(i < got.size() ? got[i] : "(missing)", i < want.size() ? want[i] : "(extra)") << "line " << i + 1;
  for (const auto& l : got) {
    size_t w = 0;
    for (unsigned char c : l) w += (c & 0xC0) != 0x80;
    EXPECT_LE(w, 80u) << l;
  }
  EXPECT_EQ(t.find('\x1b'), std::string::npos) << "no colour unless asked";
  EXPECT_NE(report::terminal(read(), true).find("\x1b[31m"), std::string::npos);
}

TEST_F(ReportTest, MarkdownLineByLine) {
  night();
  std::string md = report::markdown(read());
  std::vector<std::string> want = {
      "# Phoenix: the night on phoenix/loop-20261202",
      "",
      "2026-12-02 01:00 +00:00 to 03:12 (2 h 12 min)",
      "",
      "**4 of 5 tasks done, 1 escalated, 0 open, 1 healed by bisect, 1 replayed from the journal, the last "
      "escalation at 03:12: the loop stopped; known-good is f6f6f6f.**",
      "",
      "## Needs a person first",
      "",
      "1. Read incidents/2026-12-02-03-12.md: `chart` on \"Recolour the chart\" escalated (budget of 3 for visual spent); "
      "the abandoned work is refs/phoenix/abandoned/20261202T031202Z.",
      "",
      "## Tasks",
      "",
      "| task | outcome | commits | duration | turns | cost |",
      "|---|---|---|---|---|---|",
      "| Add a total to orders | done | a1a1a1a | 4 min 14 s | 1 | $0.42 |",
      "| Paginate the orders list | healed | b2b2b2b, c3c3c3c | 15 min 15 s | 1 | $1.10 |",
      "| Cache the totals | healed | d4d4d4d, e5e5e5e | 4 min 44 s | 1 | — (the agent CLI reported no cost) |",
      "| Rename the CSV export | done | f6f6f6f | 1 min 2 s | 1 | $0.20 |",
      "| Recolour the chart | escalated ([note](incidents/2026-12-02-03-12.md)) | — | 14 min | 1 | $0.30 |",
      "",
      "## Heals",
      "",
      "| at | check | fixer | attempts | duration | replayed | fix |",
      "|---|---|---|---|---|---|---|",
      "| 01:20 | `unit` | bisect | 1 | 12 s | no | b2b2b2b |",
      "| 01:30 | `unit` | journal | 1 | 1.0 s | yes | d4d4d4d |",
      "",
      "## Rate-limit waits",
      "",
      "- 01:20: rate-limited, waited 5 min (429 Too Many Requests)",
      "",
      "## Escalations",
      "",
      "- 03:12: `chart`: budget of 3 for visual spent; note [incidents/2026-12-02-03-12.md](incidents/2026-12-02-03-12.md); "
      "rolled back to f6f6f6f; abandoned work in `refs/phoenix/abandoned/20261202T031202Z`",
      "",
      "## Totals",
      "",
      "5 iterations, 2 h 12 min, $2.02 (+ 2 run(s) that reported no cost)",
      "",
      "Next: `phoenix report --html night.html`",
  };
  std::vector<std::string> got = util::split_lines(md);
  while (!got.empty() && got.back().empty()) got.pop_back();
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i)
    EXPECT_EQ(i < got.size() ? got[i] : "(missing)", i < want.size() ? want[i] : "(extra)") << "line " << i + 1;
  // The Markdown itself renders: headings and a table.
  std::string h = report::render_commonmark(md);
  EXPECT_NE(h.find("<h2>Needs a person first</h2>"), std::string::npos);
  EXPECT_NE(h.find("<strong>4 of 5 tasks done"), std::string::npos);
}

TEST_F(ReportTest, HtmlPageTellsTheStory) {
  night();
  report::Night n = read();
  std::string h = report::html(n, root);
  EXPECT_NE(
      h.find(
          "<p id=\"verdict\" class=\"verdict escalated\">4 of 5 tasks done, 1 escalated, 0 open, 1 healed by bisect"),
      std::string::npos);
  // The timeline: one mark per iteration, the wait, both heals, the escalation.
  // Drawn twice, for a wide window and a phone (CSS shows one), the same marks.
  auto count = [](const std::string& in, const std::string& s) {
    size_t k = 0;
    for (size_t at = in.find(s); at != std::string::npos; at = in.find(s, at + 1)) ++k;
    return k;
  };
  EXPECT_EQ(count(h, "<svg "), 2u);
  for (const std::string id : {"timeline-svg", "timeline-svg-narrow"}) {
    size_t at = h.find("<svg id=\"" + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    const std::string svg = h.substr(at, h.find("</svg>", at) - at);
    EXPECT_EQ(count(svg, "data-kind=\"iteration\""), 5u) << id;
    EXPECT_EQ(count(svg, "data-kind=\"wait\""), 1u) << id;
    EXPECT_EQ(count(svg, "data-kind=\"heal\""), 2u) << id;
    EXPECT_EQ(count(svg, "data-kind=\"escalation\""), 1u) << id;
    EXPECT_EQ(count(svg, "data-kind=\"check\""), 5u) << id;
  }
  // The note, rendered: headings are headings under the page's own.
  EXPECT_NE(h.find("<h3>Incident — 2026-12-02 03:12</h3>"), std::string::npos);
  EXPECT_NE(h.find("<h4>Failure signatures</h4>"), std::string::npos);
  EXPECT_NE(h.find("<h4>Last attempted diff</h4>"), std::string::npos);
  EXPECT_EQ(h.find("## Failure"), std::string::npos) << "no raw Markdown";
  // The diff coloured, the failing test picked out, the note's HTML shown as text.
  EXPECT_NE(h.find("<span class=\"del\">-int colour = 1;</span>"), std::string::npos);
  EXPECT_NE(h.find("<span class=\"add\">+int colour = 2;</span>"), std::string::npos);
  EXPECT_NE(h.find("<mark class=\"test\">ChartTest.Colours</mark>"), std::string::npos);
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_EQ(h.find("<b>bold</b>"), std::string::npos);
  EXPECT_NE(h.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  // Three pictures side by side, inline.
  size_t row = h.find("<div class=\"pictures\">");
  ASSERT_NE(row, std::string::npos);
  EXPECT_EQ(count(h, "<img alt="), 3u);
  EXPECT_EQ(count(h, "src=\"data:image/png;base64,"), 3u);
  EXPECT_NE(h.find("<figcaption>expected</figcaption>"), std::string::npos);
  EXPECT_NE(h.find("<figcaption>actual</figcaption>"), std::string::npos);
  EXPECT_NE(h.find("<figcaption>diff</figcaption>"), std::string::npos);
  // Self-contained: nothing fetched; links by the repository's names.
  EXPECT_EQ(h.find("src=\"http"), std::string::npos);
  EXPECT_EQ(h.find("<link"), std::string::npos);
  EXPECT_NE(h.find("href=\"incidents/2026-12-02-03-12.md\""), std::string::npos);
  EXPECT_NE(h.find("<code>refs/phoenix/abandoned/20261202T031202Z</code>"), std::string::npos);
  EXPECT_EQ(h.find(root), std::string::npos) << "no absolute path of the repository on the page";
  EXPECT_NE(h.find("name=\"viewport\""), std::string::npos);
}

}  // namespace
}  // namespace phoenix::test
