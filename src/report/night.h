// The night, read back from the trace: what `phoenix report` tells in the
// morning. A model built from .phoenix/trace.jsonl (the loop's and the
// engine's events) plus a few facts from the repository, and the words that
// every rendering shares: the verdict sentence, what needs a person first,
// the one command to run next, and human units (2 h 13 min, 840 ms, local
// time with its offset, $0.42, a dash for nothing).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/phase.h"
#include "report/events.h"
#include "util/format.h"
#include "util/json.h"

namespace phoenix::report {

// How a task ended: its commit landed (done; healed: after a heal of its
// red attempt), it was given up on (skipped; escalated: with an incident
// note), or the night ended before its next attempt (open). A word only
// where the report prints it (outcome_name; the HTML page's class).
enum class TaskOutcome { kDone, kHealed, kSkipped, kEscalated, kOpen };
const char* outcome_name(TaskOutcome o);  // "done", "healed", "skipped", "escalated", "open"
// Done or healed: the task's change is on the loop branch.
inline bool landed(TaskOutcome o) { return o == TaskOutcome::kDone || o == TaskOutcome::kHealed; }

// One task the loop worked on, in the order it finished.
struct Task {
  std::string id;
  std::string title;
  int index = 0;
  TaskOutcome outcome = TaskOutcome::kDone;
  std::string last_failure;          // an open task's: why its last attempt failed
  std::vector<std::string> commits;  // shas it left on the loop branch (task commit, fix commit)
  long long start_ms = 0, end_ms = 0;
  int turns = 0;  // agent runs (not counting refused ones)
  std::optional<long long> model_calls;
  std::optional<double> cost_usd;  // reported cost; null when no run reported one
  std::string cost_why;            // why the cost is unknown (or partial)
  std::string incident;            // relative path, when escalated
  int attempts = 0;                // against its budget: red iterations and heal attempts
  std::string healed_by;           // the fixer that made its red attempt green, work kept
  // Tests that bite (engine/bite.h): how its last change's tests measured
  // without its code ("bites", "exempt", "unmeasured"; "" when it added no
  // test), and how many of its attempts were refused because their tests
  // passed without the change.
  std::string tests_bite;
  int toothless = 0;
};

// A check's tests that failed before the night's first task and were not
// healed: the night's known red (loop.known_red), never a task's failure.
struct KnownRed {
  std::string check;
  std::vector<std::string> tests;  // empty: the whole check (no names)
};

// A test that failed and passed when run again at the same tree, and how
// many times that happened this night (loop.verdict, verdict, hook.verdict).
struct Flaky {
  std::string check;
  std::string test;
  int times = 0;
};

struct Heal {
  std::string check;
  std::string fixer;  // journal, bisect, harness
  int attempts = 0;
  bool replayed = false;  // from the journal
  long long start_ms = 0, end_ms = 0;
  std::string commit;
  std::string signature;
};

struct Wait {
  long long at_ms = 0, wait_ms = 0;
  std::string status;  // rate-limited, unreachable
  std::string detail;
};

struct Escalation {
  long long at_ms = 0;
  std::string check;
  std::string why;
  std::string incident;      // path relative to the repository
  std::string incident_abs;  // where to read it
  std::string rolled_back_to;
  std::string abandoned;      // the abandoned head's sha
  std::string abandoned_ref;  // refs/phoenix/abandoned/<time>, when found
  std::string task;           // its title, when known
  bool stopped_loop = false;
};

// One agent session judged by Phoenix's stop hook (`agent.stop` events,
// hook/agent_stop.h), by its CLI and session id.
struct AgentSession {
  std::string agent;    // claude, codex, gemini
  std::string session;  // the CLI's session id
  long long start_ms = 0, end_ms = 0;
  int stops = 0;                       // stops measured
  int refused = 0;                     // of those, refused
  std::vector<std::string> failures;   // the failing tests (or checks) shown to the agent, first shown first
  std::string verdict;                 // the last stop's: green, refused, given-up, skipped, error
  std::vector<std::string> incidents;  // notes written when it was let stop red
};

// A mark on the timeline.
struct Mark {
  std::string kind;                 // iteration (run, outside a loop), check, heal, wait, escalation
  long long at_ms = 0, end_ms = 0;  // end == at: a point
  bool ok = true;
  std::string label;
};

// What the repository says beside the trace (cmd_report reads them).
struct Facts {
  std::string root;  // the repository's work tree (paths are shown relative to it)
  // The known-good commit of a branch (layout::known_good_ref_of), or "".
  std::function<std::string(const std::string& branch)> known_good_of;
  std::map<std::string, std::string> abandoned_refs;  // sha -> ref name
  // Reads the tasks file on the loop branch: (branch, path) -> text, or "".
  std::function<std::string(const std::string& branch, const std::string& path)> tasks_at;
};

struct Night {
  long long since_ms = 0;
  long long start_ms = 0, end_ms = 0;  // first and last event
  bool loop = false;                   // a phoenix-loop night (else engine runs only)
  bool running = false;                // the loop has not ended
  std::string branch;
  std::string tasks_file;
  int tasks_total = 0;
  std::vector<Task> tasks;
  std::vector<Heal> heals;
  std::vector<Wait> waits;
  std::vector<Escalation> escalations;
  std::vector<AgentSession> agent_sessions;
  std::vector<Mark> marks;
  std::vector<std::string> baseline_red;
  std::vector<KnownRed> known_red;      // at the start of the night
  std::vector<std::string> also_fixed;  // "t2 also fixed unit: tests/test_net.py::test_fetch"
  std::vector<Flaky> flaky;
  int iterations = 0;
  int runs = 0;                               // phoenix run outside the loop
  int agent_runs = 0, runs_without_cost = 0;  // agent CLI runs (report/events.h, spend_of)
  std::optional<double> cost_usd;             // none when no run reported a cost
  std::optional<long long> model_calls;       // none when any run reported no count
  util::Json figures;                         // the JSON report's other figures (report/summary.h)
  std::string known_good;
  std::optional<engine::Phase> end_phase;  // loop.end's phase (none for a word it does not know)
  std::string end_why;                     // loop.end
  std::optional<int> exit_code;
};

// Builds the night, and the JSON report's figures with it, in one pass over
// the trace's events (read once: report/events.h) in the window.
Night read_night(const std::vector<Event>& events, const Window& window, const Facts& facts);
// The same from the trace's text (events at or after since_ms, and at or
// before until_ms when it is not -1).
Night read_night(const std::string& trace_text, long long since_ms, const Facts& facts, long long until_ms = -1);

// --- the shared words ------------------------------------------------------
// A task's outcome with how it got there: "healed by harness, 2 attempts",
// "escalated, 3 attempts", "done" (attempts counted by this version's loop).
std::string outcome_text(const Task& t);
std::string verdict(const Night& n);
std::vector<std::string> needs_person(const Night& n);  // most urgent first; never empty
// The night's known red, one line per check, said first after the verdict:
// "Known red (failing before the first task, not healed, no task blamed for
// it): unit: tests/test_net.py::test_fetch"; none when there was none.
std::vector<std::string> known_red_lines(const Night& n);
std::string next_command(const Night& n);
std::string title(const Night& n);   // "Phoenix: the night on phoenix/loop-…"
std::string period(const Night& n);  // "2026-12-02 01:00 +01:00 to 03:12 (2 h 12 min)"
std::string totals(const Night& n);  // "4 iterations, 2 h 13 min, $0.42"
// "3 stops, 1 refused (calc_test.Add), ended green, 1 min 12 s"
std::string agent_session_text(const AgentSession& s);

// --- human units -----------------------------------------------------------
std::string clock(long long ms);                      // "03:12" local time
std::string local_time(long long ms);                 // "2026-12-02 03:12 +01:00"
std::string utc_offset(long long ms);                 // "+01:00"
std::string money(const std::optional<double>& usd);  // "$0.42", "—" when unknown
using util::duration;                                 // "840 ms", "12 s", "4 min 12 s", "2 h 13 min"
using util::plural;                                   // "1 heal", "2 heals"
using util::short_sha;                                // 7 hex
constexpr const char* kDash = "—";

}  // namespace phoenix::report
