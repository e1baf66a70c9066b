// Loop: --workers N: the loop's thread hands tasks to the pool and takes what comes back (loop/internal.h).
#include "loop/internal.h"

#include <algorithm>
#include <memory>

#include "engine/incident.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/format.h"
#include "util/path.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::loop::internal {

void Loop::wind_down(int code, Phase phase_name, const std::string& why) {
  if (!drain || (code == kExitEscalated && drain->code != kExitEscalated)) drain = Drain{code, phase_name, why};
}

void Loop::publish_queue() {
  Json q = queue_json();
  state.update([&](Json& s) { s["queue"] = q; });
}

int Loop::run_workers() {
  pool = std::make_unique<WorkerPool>(
      workers, *main_repo, wt_name, [this](WorkerPool::Worker& w, const Job& j) { return work(w, j); },
      // Read under the state file's lock: two workers' changes can never
      // be written in the opposite order from the one they were read in.
      [this] { state.update([&](Json& s) { s["workers"] = pool->to_json(); }); }, say);
  drop_merged();
  if (merging()) queue_fetched();
  say(std::to_string(workers) + " worker(s), through the merge queue");
  phase(Phase::kAgent, [&](Json& s) { s["task"] = nullptr; });
  while (true) {
    if (util::interrupted_signal()) return after_workers([&] { return interrupted(); });
    if (!drain) stop_reason();
    for (const JobResult& r : pool->take_finished(ready_entry() ? 0 : 50)) on_job(r);
    if (std::optional<size_t> next = ready_entry()) {
      if (Ending e = merge_next(*next)) return *e;
      continue;
    }
    if (!drain) assign();
    if (pool->busy() > 0) continue;
    if (drain) return finish(drain->code, drain->phase, drain->why);
    if (!queue.empty()) {
      drop_blocked();  // nothing ready, nobody working: what they wait for never comes
      continue;
    }
    std::vector<Task> tasks = read_tasks();
    bool open = std::any_of(tasks.begin(), tasks.end(), [&](const Task& t) {
      // --merge starts no task that no shard pushed: only those sent back.
      return !t.done && !skipped.count(t.index) && (!merging() || (failures.count(t.index) && after_done(t, tasks)));
    });
    if (!open) return all_ticked();
  }
}

// The first queued entry whose `after` tasks are merged.
std::optional<size_t> Loop::ready_entry() {
  if (queue.empty()) return std::nullopt;
  std::vector<Task> tasks = read_tasks();
  for (size_t i = 0; i < queue.size(); ++i) {
    size_t index = static_cast<size_t>(queue[i].index);
    if (index >= tasks.size() || after_done(tasks[index], tasks)) return i;
  }
  return std::nullopt;
}

// Entries that can never be merged: a task they come after will not be.
void Loop::drop_blocked() {
  std::vector<Task> tasks = read_tasks();
  for (const auto& e : queue) {
    repo->delete_ref(queue_ref(e.id));
    std::vector<std::string> waits;
    if (static_cast<size_t>(e.index) < tasks.size())
      for (const auto& a : tasks[static_cast<size_t>(e.index)].after) waits.push_back(a);
    skip(task_ref(e), "", "comes after " + util::join_argv(waits) + ", which will not be merged");
  }
  queue.clear();
  write_run_file();
  publish_queue();
}

// Waits for every worker to end (on a signal the runner has stopped their
// agents), then ends the run with `end`.
int Loop::after_workers(const std::function<int()>& end) {
  while (pool->busy() > 0) pool->take_finished(50);
  pool->take_finished(0);
  return end();
}

void Loop::stop_reason() {
  if (util::path_exists(layout::stop_flag(root))) wind_down(kExitRed, Phase::kStopped, "stopped: .phoenix/STOP exists");
  if (auto left = ms_to_deadline(); left && *left <= 0)
    wind_down(kExitRed, Phase::kStopped, "stopped: --until " + opt.deadline_text + " reached");
}

// Hands open tasks, in order, to free workers.
void Loop::assign() {
  std::vector<Task> tasks = read_tasks();
  skip_blocked(tasks);
  for (const auto& t : tasks) {
    if (!pool->has_free()) return;
    if (t.done || skipped.count(t.index) || pool->on_task(t.index) || queued(t.index)) continue;
    if (merging() && !failures.count(t.index)) continue;  // no shard pushed it: not the merge's to do
    if (!after_done(t, tasks)) continue;                  // its `after` tasks are not merged yet
    if (cap_reached()) return;
    if (iteration >= max_iterations) {
      wind_down(kExitRed, Phase::kStopped, "stopped: --max-iterations " + std::to_string(max_iterations) + " reached");
      return;
    }
    ++iteration;
    TaskRecord& rec = book.of(t);
    Job job{t, tries[t.index] + 1, prompt_for(&t, tasks, failures[t.index]), ++rec.runs, rec.attempts, rec.signatures};
    say("iteration " + std::to_string(iteration) + ": " + t.title);
    trace.append(trace::event::kLoopWorkerStart,
                 {{"iteration", iteration.load()}, {"task", t.id()}, {"tries", job.tries}});
    pool->start(job, repo->head_sha());
    phase(Phase::kAgent);
  }
}

bool Loop::after_done(const Task& t, const std::vector<Task>& tasks) {
  for (const auto& id : t.after)
    for (const auto& o : tasks)
      if (o.id() == id && !o.done) return false;
  return true;
}

// --max-cost / --max-hours with workers: no new task starts past them.
bool Loop::cap_reached() {
  Caps::Verdict v;
  {
    std::lock_guard<std::mutex> g(caps_mu);
    v = caps.before_iteration(iteration);
  }
  if (!v.stop) return false;
  trace.append(trace::event::kLoopCap, {{"cap", v.cap}, {"why", v.why}, {"caps", caps_figures()}});
  wind_down(kExitRed, Phase::kStopped, "stopped: " + v.why);
  return true;
}

void Loop::on_job(const JobResult& r) {
  const Task& t = r.job.task;
  using End = JobResult::End;
  if (r.end == End::kQueued) {
    no_progress = 0;
    if (!r.attempt_ref.empty()) {
      // Red first, then healed with the work kept: in the task's book.
      book.red_iteration(t, r.red, r.attempt_ref, r.diff);
      ++session_retries;
      book.heal_spent(t, r.tried, r.healed_by);
    }
    enqueue(r);
  } else if (r.end == End::kNoChange) {
    // An idle task ends alone: its note, loop.on_escalate; the others go on.
    const int n = ++idle[t.id()];
    trace.append(trace::event::kLoopNoChange, {{"task", t.id()}, {"in_a_row", n}});
    if (n >= cfg.loop.no_progress_limit) {
      const TaskRef ref = task_ref(t);
      const std::string why = idle_why(n);
      const TaskEscalation x = escalate_task(ref, why, repo->head_sha(), false, false, "");
      if (!x.end_why.empty()) return wind_down(kExitEscalated, Phase::kEscalated, x.end_why);
      skip(ref, x.incident, why);
    }
  } else if (r.end == End::kRed) {
    worker_red(r);
  } else if (r.end == End::kStop) {
    wind_down(r.code, r.phase, r.why);
  } else if (r.end == End::kError) {
    wind_down(kExitRed, Phase::kFailed, "a worker on " + t.id() + " failed: " + r.why);
  }
  if (session_retries >= cfg.session_cap)
    wind_down(kExitEscalated, Phase::kEscalated,
              "loop-wide retry cap: " + std::to_string(session_retries) + " heal attempts");
}

void Loop::enqueue(const JobResult& r) {
  const Task& t = r.job.task;
  QueueEntry e{t.index, t.id(), t.title, r.base, r.commit, r.job.tries, util::now_iso8601(), ""};
  e.trailers = "Phoenix-Task: " + t.id() + "\n";
  if (const TaskRecord* rec = book.find(t.id()))
    for (const auto& a : rec->history)
      if (!a.ref.empty()) e.trailers += "Phoenix-Attempt: " + a.ref + "\n";
  if (!r.healed_by.empty()) e.trailers += "Phoenix-Healed-By: " + r.healed_by + "\n";
  repo->write_ref(queue_ref(e.id), e.commit, "phoenix-loop: queued");
  queue.push_back(e);
  write_run_file();
  publish_queue();
  trace.append(trace::event::kLoopQueued, to_json(e));
}

// A worker's red attempt, not healed: in the task's book; the task goes
// back to a worker with the failure, or its path ends (the same failure
// twice, the budget spent: note and skip or stop; the session cap: exit 2).
void Loop::worker_red(const JobResult& r) {
  const Task& t = r.job.task;
  Verdict v = book.red_iteration(t, r.red, r.attempt_ref, r.diff);
  ++session_retries;
  book.heal_spent(t, r.tried, "");
  if (v == Verdict::kGoOn) v = book.after_heal(t);
  const TaskRecord& rec = *book.find(t.id());
  const TaskRef ref = task_ref(t);
  Json ev{{"iteration", iteration.load()},
          {"task", ref.json},
          {"ref", r.attempt_ref},
          {"signature", util::sha12(r.red.signature)},
          {"red", r.red.red},
          {"attempts", rec.attempts},
          {"budget", rec.budget},
          {"verdict", verdict_name(v)}};
  for (const auto& [k, val] : r.extra.items()) ev[k] = val;
  trace.append(trace::event::kLoopAttempt, ev);
  failures[t.index] = r.why;
  const bool cap = session_retries >= cfg.session_cap;
  if (v == Verdict::kGoOn && !cap) return;  // another run, the failure fed back
  const std::string why = cap ? session_cap_why() : verdict_why(v, rec);
  const TaskEscalation x = escalate_task(ref, why, repo->head_sha(), false, cap, "");
  if (!x.end_why.empty()) return wind_down(kExitEscalated, Phase::kEscalated, x.end_why);
  skip(ref, x.incident, why);
}

// A task of the tasks file as a worker's run or the queue passes it.
TaskRef Loop::task_ref(const Task& t) {
  TaskRef r;
  r.task = t;
  r.json = Json{{"id", t.id()}, {"title", t.title}, {"index", t.index}};
  r.title = t.title;
  return r;
}

// A queued task, by what its entry keeps of it (its index, id and title).
TaskRef Loop::task_ref(const QueueEntry& e) {
  Task t;
  t.index = e.index;
  t.name = e.id;
  t.title = e.title;
  return task_ref(t);
}

void Loop::skip(const TaskRef& t, const std::string& incident, const std::string& why) {
  skipped.insert(t.task.index);
  write_run_file();
  trace.append(trace::event::kLoopTaskSkipped,
               {{"iteration", iteration.load()}, {"task", t.json}, {"incident", incident}, {"why", why}});
  say("skipping " + t.id() + ": " + why + (incident.empty() ? "" : "; see " + incident));
  if (escalations_in_row >= cfg.circuit_breaker)
    wind_down(kExitEscalated, Phase::kEscalated,
              "circuit breaker: " + std::to_string(escalations_in_row) + " escalations in a row");
}

}  // namespace phoenix::loop::internal
