// What the loop knows of each task's attempts over the whole night, and the
// rule that says a task is done.
//
// A task is done only when its own work is in a commit measured green: the
// commit's tree differs from the tree the task started from outside the
// tasks file and Phoenix's own paths, and the task is ticked there. A heal
// that brings the tree back to where the task started (a revert of the
// attempt, a rollback, a journal replay of either) is a rollback: the
// attempt failed, and it is counted as one.
//
// Each task has a retry budget by failure type (phoenix.json `budgets`),
// counted over every agent iteration that went red and every heal attempt
// spent on the task, not per engine run. The same failure signature twice
// in a task stops that path at once. The book is pure bookkeeping: no git,
// no files (the loop writes what it says to the trace, the state file and
// the incident note).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "loop/tasks.h"
#include "util/json.h"

namespace phoenix::gitx {
class Repo;
}

namespace phoenix::loop {

// One attempt spent on a task: an agent iteration that went red, or one
// attempt of a heal of it.
struct TaskAttempt {
  int number = 0;         // 1-based within the task
  std::string who;        // "agent", or the fixer that proposed ("harness", "journal")
  std::string outcome;    // "red: unit exit=1", "healed", "rejected (undoes-change): ..."
  std::string signature;  // the red measurement's issue signature (12 hex), or ""
  std::string ref;        // attempt_ref() of the agent's red attempts
};

// The red measurement an attempt left, as the incident note shows it.
struct RedFacts {
  std::string check;         // the first red check
  std::string failure_type;  // its type
  std::string description;   // what it runs
  std::string signal;
  std::string evidence;
  std::string signature;               // its issue signature, full (of the failures the task brought)
  std::vector<std::string> new_tests;  // the failing tests the task brought, when named
  std::vector<std::string> red;        // every red check
  // Evidence files of the red check (a visual check's pictures): written
  // beside the note as <note-stem>-<name>.
  std::vector<std::pair<std::string, std::string>> artifacts;
};

struct TaskRecord {
  std::string id;
  std::string title;
  int attempts = 0;                     // against the budget: red iterations + heal attempts
  int runs = 0;                         // agent runs on it (green, red or none)
  int budget = 0;                       // the first red check's failure type's (0: no red yet)
  std::vector<std::string> signatures;  // of its red iterations, in order
  std::vector<TaskAttempt> history;
  std::string last_diff;  // the agent's own diff of its last red attempt
  RedFacts last_red;
};

// Why a task's path stops after a red attempt, or kGoOn.
enum class Verdict { kGoOn, kSameSignature, kBudgetSpent };

class TaskBook {
 public:
  explicit TaskBook(const config::Config& cfg) : cfg_(cfg) {}

  TaskRecord& of(const Task& task);
  const TaskRecord* find(const std::string& id) const;

  // An agent iteration of `task` went red with `facts`, its attempt kept
  // under `ref` with `diff`. Counts one attempt. kSameSignature when its
  // signature was seen before in this task (the agent repeats itself),
  // kBudgetSpent when no attempt is left for a heal or another iteration.
  Verdict red_iteration(const Task& task, const RedFacts& facts, const std::string& ref, const std::string& diff);
  // A heal of the task's red attempt spent `tried` (its failed attempts, in
  // order) and, when `healed_by` is not empty, one more that healed.
  void heal_spent(const Task& task, const std::vector<TaskAttempt>& tried, const std::string& healed_by);
  // Attempts left in the task's budget (never below 0).
  int left(const Task& task);
  Verdict after_heal(const Task& task);

  // loop-state.json's view of one task: retry_count, signatures.
  util::Json state_of(const std::string& id) const;

 private:
  const config::Config& cfg_;
  std::map<std::string, TaskRecord> tasks_;
};

// The retry budget of a failure type (phoenix.json `budgets`, defaults filled in; 3 for a type it lacks).
int budget_for(const config::Config& cfg, const std::string& failure_type);

// Words for the trace and the note.
const char* verdict_name(Verdict v);
std::string verdict_why(Verdict v, const TaskRecord& rec);

// The done rule, on commits: "" when `commit` holds the task's own work
// since `start` (its tree differs there outside `own` paths: prefixes as
// layout::keep_prefixes() gives them, or files) and, with a tasks file,
// `task` is ticked in it; else why not, in words.
std::string not_done_why(const gitx::Repo& repo, const std::string& start, const std::string& commit,
                         const std::vector<std::string>& own, const std::string& tasks_file, const Task* task);

// True when `paths` (changed paths) has one outside `own`.
bool changes_outside(const std::vector<std::string>& paths, const std::vector<std::string>& own);

// refs/phoenix/attempts/<loop>/<task id>/<n> (layout::kAttemptsPrefix;
// <loop> is the loop's worktree name, "loop-20261204"): a red attempt,
// kept for the morning.
std::string attempt_ref(const std::string& loop, const std::string& task_id, int n);

}  // namespace phoenix::loop
