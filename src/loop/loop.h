// phoenix-loop: the outer, ralph-style driver (docs/loop.md).
//
// One loop per repository (an flock on .phoenix/loop.lock naming its pid;
// the kernel drops it when the holder dies, so a stale lock is simply taken).
// The loop works on its own branch (default phoenix/loop-YYYYMMDD) in its own
// worktree layout::worktree_path(repo, "loop-<branch tail>"), outside the work tree,
// set up by phoenix.json's setup steps; the user's checkout and
// branch are never touched. The worktree's HEAD is detached (gitx makes
// detached worktrees) and the branch ref is moved to it after every commit
// and rollback, so the branch always names the loop's latest state.
//
// Before iteration 1 every check is measured (the baseline): a red one is
// healed (loop.baseline = heal, via the inner cycle), left out of every
// later verdict (ignore), or stops the loop (stop, exit 1).
//
// One iteration: pick the next open task (or the prompt file again), run the
// harness once in the worktree with a fresh prompt (templates/prompt-task.md:
// task, progress, last failure and incident), tick the task, measure every
// check. Green: commit "phoenix-loop: <task>", bless known-good. Red: commit
// the attempt, run the inner heal cycle (engine::run_session) in the
// worktree with rollback to known-good. Escalated: the engine wrote the
// incident before rolling back; the loop copies it to <repo>/incidents/,
// writes <repo>/.phoenix/ESCALATED (the incident path), runs loop.notify,
// then stops (exit 2) or skips the task (on_escalate = skip; final exit 1).
//
// Done (exit 0) when every task is ticked and the last measurement of every
// check was green. In prompt mode the agent may end the run with
// <promise>COMPLETE</promise> in its output, but only when the checks are
// green in that same iteration: the agent's words never decide alone.
//
// Stops (exit 1, phase "stopped", the reason in the trace and on stderr):
// max_iterations, --until, .phoenix/STOP, no_progress_limit iterations in a
// row that changed nothing, the loop-wide retry cap (session_cap heal
// attempts over the whole loop) and the circuit breaker (circuit_breaker
// escalations in a row; exit 2). SIGINT/SIGTERM: the child's process group
// is killed by the runner, the state says "interrupted", exit 130. A
// rate-limited or quota-capped harness run waits (backoff, bounded by
// --until) instead of counting as no progress.
//
// --workers N (loop.workers, N > 1, a tasks file): up to N tasks at once,
// each by a worker in its own worktree (loop/workers.h); a task green there
// reaches the branch only through the verified merge queue (loop/queue.h),
// run on this loop's thread, which alone moves the branch and known-good.
// Stops and caps count over the whole run; when one ends it, no new task
// starts, running ones finish and the queue empties before the exit.
//
// --shard I/N and --merge REMOTE: beyond one machine (loop/shard.h). A
// shard is a one-at-a-time loop over its tasks on its own branch (default
// phoenix/shard-I-of-N) that publishes each task it finishes green; the
// merge is a loop with workers whose queue starts with the fetched task
// branches: a conflict or a red combined tree sends the task back to a
// worker as always; it starts no task that no shard pushed, and pushes the
// loop branch to REMOTE after every merge.
//
// --resume: carries on from .phoenix/loop-run.json and the branch: the
// worktree is reset to the branch tip (a half-done iteration is kept under
// refs/phoenix/abandoned/), counters continue from loop-state.json.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "config/config.h"
#include "loop/shard.h"
#include "trace/trace.h"

namespace phoenix::loop {

struct Options {
  std::string root;    // the user's work tree
  std::string tasks;   // overrides loop.tasks
  std::string prompt;  // overrides loop.prompt
  std::optional<int> max_iterations;
  std::optional<long long> deadline_ms;  // epoch ms (--until)
  std::string deadline_text;             // as ISO-8601, for the state file
  std::string branch;                    // overrides loop.branch
  bool resume = false;
  bool no_cache = false;      // --no-cache: nothing served from the measurement store
  int workers = 0;            // --workers N; 0: loop.workers (or the resumed run's)
  std::string templates_dir;  // shipped templates (prompt-task.md)
  // Override loop.max_cost_usd / loop.max_hours (loop/caps.h).
  std::optional<double> max_cost_usd;
  std::optional<double> max_hours;
  // --shard I/N: only shard I's tasks, each pushed to `remote` as
  // phoenix/task-<id> (loop/shard.h).
  std::optional<Shard> shard;
  std::string remote = "origin";
  // --merge REMOTE: the task branches pushed there, through the merge queue.
  std::string merge_remote;
};

// Runs the loop to its end; returns the exit code (0, 1, 2, 130).
// Throws UsageError / ConfigError for a bad setup before anything starts.
int run_loop(const Options& options, const config::Config& cfg, trace::Trace& trace,
             const std::function<void(const std::string&)>& say);

// "HH:MM" (the next such local time, today or tomorrow) or ISO-8601
// ("2026-12-01T06:00", "...:00Z", "...+02:00") to epoch ms. UsageError when
// it is neither.
long long parse_until(const std::string& text, long long now_ms);

// The default branch name for a loop started at `now_ms`: phoenix/loop-YYYYMMDD (UTC).
std::string default_branch(long long now_ms);

}  // namespace phoenix::loop
