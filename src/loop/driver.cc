// Loop: the one-task-at-a-time driver: the baseline, the stops, the end of the tasks (loop/internal.h).
#include "loop/internal.h"

#include <algorithm>
#include <set>

#include "loop/shard.h"
#include "trace/events.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/format.h"
#include "util/lock.h"
#include "util/path.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::loop::internal {

using util::iso8601;

int Loop::run() {
  layout::ensure_state_dir(root);
  util::FileLock lock(layout::loop_lock_file(root), 0, "the loop of this repository");
  setup();
  state.start_heartbeat(cfg.loop.heartbeat_s);
  if (!opt.resume)
    if (Ending e = baseline()) return *e;
  if (workers > 1 || merging()) return run_workers();
  while (true) {
    if (Ending e = stop_requested()) return *e;
    std::vector<Task> tasks;
    const Task* task = nullptr;
    if (!prompt_mode()) {
      tasks = parse_tasks(util::read_file(wt + "/" + tasks_rel), tasks_rel);
      task = next_ready(tasks, not_to_start(tasks));  // in file order, `after` respected
      if (!task) {
        skip_blocked(tasks);
        return all_ticked();
      }
    }
    if (iteration >= max_iterations)
      return finish(kExitRed, Phase::kStopped,
                    "stopped: --max-iterations " + std::to_string(max_iterations) + " reached");
    if (Ending e = over_cap()) return *e;
    if (Ending e = iterate(task, tasks)) return *e;
  }
}

// The tasks not to start: skipped ones and, in a shard, other shards'.
std::set<int> Loop::not_to_start(const std::vector<Task>& tasks) {
  if (!sharded()) return skipped;
  if (mine.empty()) mine = shard_tasks(tasks, *opt.shard);
  std::set<int> out = skipped;
  for (const auto& t : tasks)
    if (!mine.count(t.index)) out.insert(t.index);
  return out;
}

// --max-cost / --max-hours: no iteration starts that would pass them.
Loop::Ending Loop::over_cap() {
  Caps::Verdict v = caps.before_iteration(iteration);
  if (!v.warning.empty()) {
    say(v.warning);
    trace.append(trace::event::kLoopCapWarning, {{"warning", v.warning}, {"caps", caps_figures()}});
  }
  if (!v.stop) return std::nullopt;
  trace.append(trace::event::kLoopCap, {{"cap", v.cap}, {"why", v.why}, {"caps", caps_figures()}});
  return finish(kExitRed, Phase::kStopped, "stopped: " + v.why);
}

// Open tasks that come after a skipped one can never start: skipped too.
void Loop::skip_blocked(const std::vector<Task>& tasks) {
  std::vector<int> blocked = blocked_by_skipped(tasks, skipped);
  if (blocked.empty()) return;
  for (int i : blocked) {
    skipped.insert(i);
    const Task& t = tasks[static_cast<size_t>(i)];
    trace.append(trace::event::kLoopTaskSkipped, {{"iteration", iteration.load()},
                                                  {"task", {{"id", t.id()}, {"title", t.title}, {"index", t.index}}},
                                                  {"blocked_by", t.after}});
    say("skipping " + t.id() + " (" + t.title + "): it comes after a skipped task");
  }
  write_run_file();
}

// Baseline: red before the agent started is not the agent's doing. Its
// failing tests are run again (a flaky one is not red), healed when
// loop.baseline says heal, and what is left is the night's known red: every
// task is judged against it, and the night goes on (DESIGN.md "known red").
Loop::Ending Loop::baseline() {
  phase(Phase::kBaseline);
  Measure m = measure();
  if (!m.setup_failed.empty()) return setup_stopped(m);
  if (m.interrupted || util::interrupted_signal()) return interrupted();
  if (!m.green) {
    std::string ids = util::join_argv(m.red);
    trace.append(trace::event::kLoopBaseline, {{"red", m.red}, {"mode", cfg.loop.baseline}});
    say("baseline: red before any task: " + ids + " (loop.baseline = " + config::baseline_name(cfg.loop.baseline) +
        ")");
    if (cfg.loop.baseline == config::Baseline::kStop)
      return finish(kExitRed, Phase::kStopped, "baseline red: " + ids + "; loop.baseline = stop");
    if (cfg.loop.baseline == config::Baseline::kHeal) {
      // Pre-existing failures never spend the night's session cap.
      const int spent_before = session_retries.load();
      HealOutcome h = heal(m.red);
      session_retries = spent_before;
      sync_branch("baseline heal");
      if (h.exit_code == kExitInterrupted || util::interrupted_signal()) return interrupted();
      if (!h.model_unusable.empty()) return finish(kExitRed, Phase::kStopped, h.model_unusable);
      m = measure();
      if (!m.setup_failed.empty()) return setup_stopped(m);
      if (m.interrupted || util::interrupted_signal()) return interrupted();
      if (!m.green)
        say("baseline: not healed" + (h.why_stopped.empty() ? std::string() : " (" + h.why_stopped + ")") +
            ": what is still red is the night's known red");
    }
  }
  set_known_red(m, cfg.loop.baseline == config::Baseline::kIgnore ? "loop.baseline = ignore" : "red at the baseline");
  bless();
  phase(Phase::kBaseline);
  return std::nullopt;
}

Loop::Ending Loop::stop_requested() {
  if (util::interrupted_signal()) return interrupted();
  if (util::path_exists(layout::stop_flag(root)))
    return finish(kExitRed, Phase::kStopped, "stopped: .phoenix/STOP exists");
  if (auto left = ms_to_deadline(); left && *left <= 0)
    return finish(kExitRed, Phase::kStopped, "stopped: --until " + opt.deadline_text + " reached");
  return std::nullopt;
}

// No task left to do.
int Loop::all_ticked() {
  task_cfg.reset();  // the final verdict is phoenix.json's checks
  if (merging()) {
    std::vector<std::string> open = open_ids();
    if (!open.empty())
      return finish(kExitRed, Phase::kStopped,
                    "merged what the shards pushed; " + std::to_string(open.size()) +
                        " task(s) not merged (no branch on " + opt.merge_remote +
                        ", or after one that has none): " + util::join_argv(open));
  }
  if (!unpushed.empty())
    return finish(kExitRed, Phase::kStopped,
                  std::to_string(unpushed.size()) + " task branch(es) not pushed to " + opt.remote + ": " +
                      util::join_argv(std::vector<std::string>(unpushed.begin(), unpushed.end())));
  if (!skipped.empty())
    return finish(kExitRed, Phase::kStopped,
                  std::to_string(skipped.size()) + " task(s) skipped after escalation; the rest done");
  Measure m = measure();
  if (!m.setup_failed.empty()) return setup_stopped(m);
  if (m.interrupted) return interrupted();
  if (!m.green) return finish(kExitRed, Phase::kStopped, "every task ticked but red: " + util::join_argv(m.red));
  bless();
  if (sharded())
    return finish(kExitOk, Phase::kComplete,
                  "complete: every task of shard " + opt.shard->text() + " ticked and pushed to " + opt.remote +
                      ", every check green");
  std::string known;
  if (const auto ref = reference_now())
    for (const auto& [id, f] : *ref) known += (known.empty() ? "" : ", ") + id;
  if (!known.empty())
    return finish(kExitOk, Phase::kComplete,
                  "complete: every task ticked, every check green but the night's known red (" + known +
                      ": red before the first task)");
  return finish(kExitOk, Phase::kComplete, "complete: every task ticked, every check green");
}

// Why the model could not be used: the CLI's first error line, else the detail.
std::string Loop::cause_of(const AgentRun& a) { return a.cls.first_error.empty() ? a.cls.detail : a.cls.first_error; }

// Credit or billing gone: waiting will not help. The one line.
std::string Loop::quota_line(const AgentRun& a) { return agent::unusable_line("quota", a.program, cause_of(a)); }

// Not the agent's failure and not "no progress": wait and try again,
// until the reset time the CLI printed (plus jitter) or with backoff,
// as long as --until (or harness.max_wait_s, when set) allows.
Loop::Ending Loop::wait_for_model(const AgentRun& a) {
  --iteration;  // a run the provider refused is not one of the agent's iterations
  model_wait.refused(a.duration_ms);
  // harness.max_wait_s counts every wait in a row; --until is a time.
  const long long left = cfg.harness.max_wait_s
                             ? model_wait.left_of(static_cast<long long>(*cfg.harness.max_wait_s * 1000))
                             : static_cast<long long>(max_wait_s() * 1000);
  const std::string kind = a.cls.status == agent::Status::kRateLimited ? "rate-limited" : "unreachable";
  if (left <= 0) return finish(kExitRed, Phase::kStopped, model_wait.spent_line(kind, a.program, cause_of(a)));
  const long long wait = model_wait.next(a.cls, left);
  const long long until = util::now_ms() + wait;
  say("harness " + a.cls.detail + ": waiting " + std::to_string(std::max<long long>(1, (wait + 500) / 1000)) +
      " s (until " + util::local_hhmm(until) + ")");
  trace.append(trace::event::kLoopWait, {{"status", agent::status_name(a.cls.status)},
                                         {"wait_ms", wait},
                                         {"waited_ms", model_wait.waited_ms},
                                         {"until", iso8601(until)},
                                         {"detail", a.cls.detail}});
  phase(Phase::kWaiting, [&](Json& s) {
    s["waiting_until"] = iso8601(until);
    s["waiting_for"] = kind;
  });
  if (model_wait.waits == 1) notify("waiting", "", "waiting on a " + kind + " model until " + iso8601(until));
  if (!repo->is_clean(own_paths())) repo->reset_hard(repo->head_sha(), true, own_paths());
  nap(wait);
  state.update([&](Json& s) {
    s["waiting_until"] = nullptr;
    s["waiting_for"] = nullptr;
  });
  return std::nullopt;
}

// The agent changed nothing. In prompt mode the run stops after
// no_progress_limit such runs in a row; a task is given up on alone after
// that many on it (its note, loop.on_escalate), and the night goes on.
Loop::Ending Loop::no_change(const AgentRun& a, const std::string& prompt, const TaskRef& t) {
  ++no_progress;
  const int on_task = t.prompt ? no_progress : ++idle[t.id()];
  trace.append(trace::event::kLoopNoChange, {{"iteration", iteration.load()}, {"in_a_row", on_task}, {"task", t.json}});
  if (prompt_mode() && promised(a.output, prompt)) {
    // The agent says it is done: only the checks can agree.
    Measure m = measure();
    if (!m.setup_failed.empty()) return setup_stopped(m);
    if (m.interrupted) return interrupted();
    if (m.green) {
      bless();
      return finish(kExitOk, Phase::kComplete, "complete: the agent promised and every check is green");
    }
    last_failure = "you said COMPLETE but these checks are red: " + util::join_argv(m.red);
  }
  if (!t.prompt && on_task >= cfg.loop.no_progress_limit) {
    book.of(t.task);  // a task given up on has its record, attempts or not
    return give_up_task(t, idle_why(on_task), false);
  }
  if (t.prompt && no_progress >= cfg.loop.no_progress_limit)
    return finish(kExitRed, Phase::kStopped,
                  "stopped: " + std::to_string(no_progress) + " iterations in a row changed nothing");
  return std::nullopt;
}

std::string Loop::idle_why(int runs) {
  return "no progress: " + std::to_string(runs) + " agent runs in a row on it changed nothing";
}

}  // namespace phoenix::loop::internal
