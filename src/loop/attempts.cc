#include "loop/attempts.h"

#include <algorithm>

#include "gitx/repo.h"
#include "layout/layout.h"
#include "util/format.h"
#include "util/text.h"

namespace phoenix::loop {

TaskRecord& TaskBook::of(const Task& task) {
  TaskRecord& r = tasks_[task.id()];
  if (r.id.empty()) {
    r.id = task.id();
    r.title = task.title;
  }
  return r;
}

const TaskRecord* TaskBook::find(const std::string& id) const {
  auto it = tasks_.find(id);
  return it == tasks_.end() ? nullptr : &it->second;
}

Verdict TaskBook::red_iteration(const Task& task, const RedFacts& facts, const std::string& ref,
                                const std::string& diff) {
  TaskRecord& r = of(task);
  if (r.budget == 0) r.budget = budget_for(cfg_, facts.failure_type);
  ++r.attempts;
  const std::string sig = util::sha12(facts.signature);
  r.history.push_back({r.attempts, "agent", "red: " + facts.check + " " + facts.signal, sig, ref});
  r.last_diff = diff;
  r.last_red = facts;
  const bool again = std::find(r.signatures.begin(), r.signatures.end(), sig) != r.signatures.end();
  r.signatures.push_back(sig);
  if (again) return Verdict::kSameSignature;
  return r.attempts >= r.budget ? Verdict::kBudgetSpent : Verdict::kGoOn;
}

void TaskBook::heal_spent(const Task& task, const std::vector<TaskAttempt>& tried, const std::string& healed_by) {
  TaskRecord& r = of(task);
  for (const TaskAttempt& a : tried) {
    TaskAttempt t = a;
    t.number = ++r.attempts;
    r.history.push_back(t);
  }
  if (!healed_by.empty()) r.history.push_back({++r.attempts, healed_by, "healed", "", ""});
}

int TaskBook::left(const Task& task) {
  TaskRecord& r = of(task);
  return std::max(0, r.budget - r.attempts);
}

Verdict TaskBook::after_heal(const Task& task) { return left(task) == 0 ? Verdict::kBudgetSpent : Verdict::kGoOn; }

util::Json TaskBook::state_of(const std::string& id) const {
  const TaskRecord* r = find(id);
  if (!r) return util::Json{{"retry_count", 0}, {"signatures", util::Json::array()}};
  return util::Json{{"retry_count", r->attempts}, {"signatures", r->signatures}};
}

int budget_for(const config::Config& cfg, const std::string& failure_type) {
  auto b = cfg.budgets.find(failure_type);
  return b != cfg.budgets.end() ? b->second : 3;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kGoOn: return "go-on";
    case Verdict::kSameSignature: return "same-signature";
    case Verdict::kBudgetSpent: return "budget-spent";
  }
  return "";
}

std::string verdict_why(Verdict v, const TaskRecord& rec) {
  switch (v) {
    case Verdict::kGoOn: return "";
    case Verdict::kSameSignature:
      return "the same failure again (signature " + (rec.signatures.empty() ? std::string("?") : rec.signatures.back()) +
             "): the agent repeats itself, so that path stops";
    case Verdict::kBudgetSpent:
      return "budget of " + std::to_string(rec.budget) + " for " +
             (rec.last_red.failure_type.empty() ? std::string("this task") : rec.last_red.failure_type) + " spent (" +
             std::to_string(rec.attempts) + " attempts over the task's iterations and heals)";
  }
  return "";
}

bool changes_outside(const std::vector<std::string>& paths, const std::vector<std::string>& own) {
  for (const std::string& p : paths) {
    bool mine = false;
    for (const std::string& o : own)
      mine = mine || p == o || (!o.empty() && o.back() == '/' && util::starts_with(p, o));
    if (!mine) return true;
  }
  return false;
}

std::string not_done_why(const gitx::Repo& repo, const std::string& start, const std::string& commit,
                         const std::vector<std::string>& own, const std::string& tasks_file, const Task* task) {
  if (!changes_outside(repo.changed_paths(start, commit), own))
    return "nothing of the task's own work is left (the tree is as the task started, the tasks file and "
           "Phoenix's paths aside)";
  if (task && !tasks_file.empty()) {
    std::optional<std::string> text = repo.read_blob_at(commit, tasks_file);
    if (!text) return tasks_file + " is gone";
    bool ticked = false;
    for (const Task& t : parse_tasks(*text, tasks_file))
      if (t.id() == task->id()) ticked = t.done;
    if (!ticked) return "the task is not ticked in " + tasks_file;
  }
  return "";
}

std::string attempt_ref(const std::string& loop, const std::string& task_id, int n) {
  return std::string(layout::kAttemptsPrefix) + loop + "/" + task_id + "/" + std::to_string(n);
}

}  // namespace phoenix::loop
