// Loop: one iteration: the agent, the checks, the task landed or its red attempt healed (loop/internal.h).
#include "loop/internal.h"

#include "trace/events.h"
#include "util/error.h"
#include "util/format.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::loop::internal {

// One iteration: the agent's fresh run, then the checks decide.
Loop::Ending Loop::iterate(const Task* task, const std::vector<Task>& tasks) {
  ++iteration;
  const TaskRef ref = iteration_task(task, tasks);
  // The phases inside an iteration are written without fsync, and its
  // trace events are fsynced together: the iteration's last state write
  // (or whatever ends it early) is the durable one. A power cut in
  // between brings back the previous iteration's state, which --resume
  // handles like a crash there (the worktree is reset to the branch).
  agent_phase(ref);
  say("iteration " + std::to_string(iteration) + ": " + ref.title);
  std::string prompt = prompt_for(task, tasks);
  if (task && task->check) task_cfg = with_acceptance(cfg, task);
  else task_cfg.reset();
  PinnedFiles pins(wt, pinned_files(task, tasks));
  task_before = repo->head_sha();
  trace::Trace::Batch batch(trace);
  AgentRun a = run_agent(prompt);
  if (util::interrupted_signal()) {
    batch.end();
    return interrupted();
  }
  if (unpin(pins)) a.changed = !repo->is_clean(own_paths());
  if (!a.wrote_elsewhere.empty()) {
    batch.end();
    return wrote_elsewhere_attempt(ref, a.wrote_elsewhere);
  }

  using agent::Status;
  const bool measured_next = a.changed && a.cls.status != Status::kQuota && !agent::waits(a.cls.status) &&
                             a.cls.status != Status::kUnavailable && a.cls.status != Status::kTimeout;
  if (!measured_next) batch.end();  // a wait, no change or an ending follows
  if (a.cls.status == Status::kQuota) return finish(kExitRed, Phase::kStopped, quota_line(a));
  if (agent::waits(a.cls.status)) return wait_for_model(a);
  model_wait = {};
  if (a.cls.status == Status::kUnavailable)
    return finish(kExitRed, Phase::kFailed, "harness unavailable: " + a.cls.detail);
  if (a.cls.status == Status::kTimeout) {
    // The runner killed the whole process group; its half-work goes.
    last_failure = "the agent was stopped at the iteration timeout (" + a.cls.detail + ")";
    repo->reset_hard(repo->head_sha(), true, own_paths());
    a.changed = false;
  }
  if (!a.changed) return no_change(a, prompt, ref);

  phase(Phase::kChecking, {}, util::Sync::kAtomic);
  Measure m = measure();
  if (!m.green || m.interrupted || util::interrupted_signal()) batch.end();
  if (!m.setup_failed.empty()) return setup_stopped(m);
  if (m.interrupted || util::interrupted_signal()) return interrupted();
  if (m.green) {
    // Green, but the task's new tests must also fail without its code (loop/bite.cc).
    if (std::string why = tests_bite_why(main_tree(), task_before, ref); !why.empty()) {
      batch.end();
      return toothless_attempt(ref, why);
    }
    if (util::interrupted_signal()) {
      batch.end();
      return interrupted();
    }
    idle.erase(ref.id());
    credit_fixed(m, ref);
    return landed_green(ref, prompt_mode() && promised(a.output, prompt), batch);
  }
  return on_red(m, ref);
}

// The task of this iteration as one value: `task`, or in prompt mode
// (nullptr) the prompt's pseudo-task, titled by the iteration's number.
TaskRef Loop::iteration_task(const Task* task, const std::vector<Task>& tasks) const {
  TaskRef t;
  t.prompt = !task;
  t.task = task ? *task : prompt_task();
  t.json = task ? Json{{"id", task->id()}, {"title", task->title}, {"index", task->index}, {"total", tasks.size()}}
                : Json{{"id", "prompt"}, {"title", prompt_rel}, {"index", 0}, {"total", 1}};
  t.title = task ? task->title : "iteration " + std::to_string(iteration);
  return t;
}

// The agent starts on `t` (loop-state.json's task, its attempts and
// signatures so far), written without fsync: see iterate.
void Loop::agent_phase(const TaskRef& t) {
  phase(
      Phase::kAgent,
      [&](Json& s) {
        s["task"] = t.json;
        Json b = book.state_of(t.id());
        s["retry_count"] = b["retry_count"];
        s["task_signatures"] = b["signatures"];
      },
      util::Sync::kAtomic);
}

// Green after the agent's run: the task lands, the iteration's trace
// events are fsynced, the shard pushes it. In prompt mode the agent's
// promise (`promised_done`) with every check green completes the run.
Loop::Ending Loop::landed_green(const TaskRef& t, bool promised_done, trace::Trace::Batch& batch) {
  phase(Phase::kCommitting, {}, util::Sync::kAtomic);
  land(t, {}, "");
  trace.append(trace::event::kLoopTaskDone, {{"iteration", iteration.load()},
                                             {"task", t.json},
                                             {"head", repo->head_sha()},
                                             {"attempts", book.state_of(t.id())["retry_count"]}});
  batch.end();
  if (!t.prompt) publish(t.task);
  phase(Phase::kCommitting);
  if (promised_done) return finish(kExitOk, Phase::kComplete, "complete: the agent promised and every check is green");
  return std::nullopt;
}

// The task's pseudo-task in prompt mode (one task, run again and again).
Task Loop::prompt_task() const {
  Task t;
  t.name = "prompt";
  t.title = prompt_rel;
  return t;
}

// The task's work, measured green in the worktree, becomes one commit on
// the task's start ("phoenix-loop: <task>", with trailers naming its red
// attempts and the fixer that healed it), ticked; the branch and
// known-good move to it. Only a commit that holds the task's own work is
// landed (the done rule, loop/attempts.h): the caller checked the tree.
void Loop::land(const TaskRef& t, const std::vector<std::string>& attempts, const std::string& healed_by) {
  if (!t.prompt) {
    // Committed with the work below (git's objects are not fsynced either).
    std::string path = wt + "/" + tasks_rel;
    util::write_file_atomic(path, tick_task(util::read_file(path), t.task, tasks_rel), 0644, util::Sync::kAtomic);
  }
  std::string msg = "phoenix-loop: " + t.title + "\n\nPhoenix-Task: " + t.id() + "\n";
  for (const std::string& ref : attempts) msg += "Phoenix-Attempt: " + ref + "\n";
  if (!healed_by.empty()) msg += "Phoenix-Healed-By: " + healed_by + "\n";
  std::string tip = repo->commit_all(msg, true, layout::state_prefixes());
  if (!attempts.empty() && repo->rev_list(task_before, tip).size() > 1) {
    // The attempt and its heal, as one commit on the task's start: the
    // branch's first-parent history stays one green commit per task.
    std::string one = repo->squash(task_before, tip, {}, msg);
    repo->reset_hard(one, false, own_paths());
  }
  sync_branch("task done");
  bless();
  escalations_in_row = 0;
  no_progress = 0;
  last_failure.clear();
}

// Red after the agent's run. The attempt is kept under
// refs/phoenix/attempts/ (never on the branch); the inner cycle mends the
// agent's change within what is left of the task's budget; healed and
// measured green with the task's work kept, it lands as one commit.
// Otherwise the worktree goes back to the task's start: the agent tries
// again with the failure fed back, until the same failure comes twice or
// the budget or the session cap is spent (then: note, rollback, on_escalate).
Loop::Ending Loop::on_red(const Measure& m, const TaskRef& t) {
  // The next prompt names the failing tests the change brought and shows
  // their evidence, as the heal's prompt does (bounded).
  last_failure = "red after iteration " + std::to_string(iteration) + ": " + util::join_argv(m.red) +
                 failure_text(m, kPromptEvidenceBytes);
  const Task& self = t.task;
  const RedAttempt red = keep_red_attempt(m, t);
  TaskRecord& rec = book.of(self);
  if (red.verdict != Verdict::kGoOn) return give_up_task(t, verdict_why(red.verdict, rec), false);
  if (session_retries >= cfg.session_cap) return give_up_task(t, session_cap_why(), true);

  TaskHeal th{book.left(self), task_before, change_text(t.title, red.diff), &m, repo->head_sha()};
  HealOutcome h = heal(main_tree(), m.red, false, &th);
  book.heal_spent(self, h.tried, h.healed_by);
  task_state(self.id(), red.facts);
  if (h.exit_code == kExitInterrupted || util::interrupted_signal()) return interrupted();
  if (!h.model_unusable.empty()) return finish(kExitRed, Phase::kStopped, h.model_unusable);
  // no_progress_limit counts iterations whose net change is empty: here,
  // when the only "fix" was taking the work back out.
  if (h.undid_change) {
    ++no_progress;
    ++idle[self.id()];
  } else {
    no_progress = 0;
    idle.erase(self.id());
  }
  if (h.exit_code == kExitOk && !h.healed_by.empty()) {
    // Healed: bless only a green measurement of every check, with the
    // task's own work still there.
    Measure hm = measure();
    if (!hm.setup_failed.empty()) return setup_stopped(hm);
    if (hm.interrupted || util::interrupted_signal()) return interrupted();
    std::string not_done = hm.green ? not_done_why(*repo, task_before, repo->head_sha(), own_paths(), "", nullptr)
                                    : "red after the heal: " + util::join_argv(hm.red);
    if (not_done.empty())
      if (std::string why = tests_bite_why(main_tree(), task_before, t); !why.empty())
        not_done = "your tests pass without your change: " + why;
    if (not_done.empty()) {
      credit_fixed(hm, t);
      idle.erase(self.id());
      std::vector<std::string> refs;
      for (const auto& a : rec.history)
        if (!a.ref.empty()) refs.push_back(a.ref);
      land(t, refs, h.healed_by);
      trace.append(trace::event::kLoopTaskDone, {{"iteration", iteration.load()},
                                                 {"task", t.json},
                                                 {"head", repo->head_sha()},
                                                 {"healed", true},
                                                 {"fixer", h.healed_by},
                                                 {"attempts", rec.attempts}});
      if (!t.prompt) publish(self);
      phase(Phase::kCommitting);
      return std::nullopt;
    }
    last_failure += "\nhealed, but " + not_done;
  } else if (!h.why_stopped.empty() && !h.tried.empty()) {
    last_failure += "\nthe heal stopped: " + h.why_stopped;
  }
  return attempt_failed(t);
}

// The agent's red attempt, committed and kept under its ref (never on the
// branch), counted in the task's book and the session's retries, in the
// trace and loop-state.json.
Loop::RedAttempt Loop::keep_red_attempt(const Measure& m, const TaskRef& t) {
  const Task& self = t.task;
  TaskRecord& rec = book.of(self);
  const std::string attempt = repo->commit_all("phoenix-loop: attempt: " + t.title, true, layout::state_prefixes());
  const std::string ref = attempt_ref(wt_name, self.id(), ++rec.runs);
  repo->write_ref(ref, attempt, "phoenix-loop: a red attempt");
  RedAttempt red;
  red.facts = red_facts(m);
  red.diff = repo->diff_patch(task_before, attempt);
  red.verdict = book.red_iteration(self, red.facts, ref, red.diff);
  ++session_retries;
  trace.append(trace::event::kLoopAttempt, {{"iteration", iteration.load()},
                                            {"task", t.json},
                                            {"ref", ref},
                                            {"commit", attempt},
                                            {"signature", util::sha12(red.facts.signature)},
                                            {"red", m.red},
                                            {"attempts", rec.attempts},
                                            {"budget", rec.budget},
                                            {"verdict", verdict_name(red.verdict)}});
  task_state(self.id(), red.facts);
  return red;
}

// Not healed: the attempt failed. Back to the task's start (the branch's
// tip, known-good); the next iteration gives the agent the failure, unless
// the session cap or the task's budget is spent, or nothing changes.
Loop::Ending Loop::attempt_failed(const TaskRef& t) {
  const Task& self = t.task;
  const TaskRecord& rec = book.of(self);
  repo->reset_hard(task_before, true, own_paths());
  trace.append(trace::event::kLoopAttemptFailed,
               {{"iteration", iteration.load()}, {"task", t.json}, {"attempts", rec.attempts}, {"why", last_failure}});
  if (session_retries >= cfg.session_cap) return give_up_task(t, session_cap_why(), true);
  if (book.after_heal(self) != Verdict::kGoOn) return give_up_task(t, verdict_why(Verdict::kBudgetSpent, rec), false);
  if (prompt_mode() && no_progress >= cfg.loop.no_progress_limit)
    return finish(kExitRed, Phase::kStopped,
                  "stopped: " + std::to_string(no_progress) + " iterations in a row changed nothing (net)");
  if (!prompt_mode() && idle[self.id()] >= cfg.loop.no_progress_limit)
    return give_up_task(t, idle_why(idle[self.id()]) + " (net: each heal took the change back out)", false);
  return std::nullopt;
}

// loop-state.json: the current task's attempts and signatures.
void Loop::task_state(const std::string& id, const RedFacts& facts) {
  Json b = book.state_of(id);
  state.update([&](Json& s) {
    s["retry_count"] = b["retry_count"];
    s["task_signatures"] = b["signatures"];
    s["session_retries"] = session_retries.load();
    s["last_failure_type"] = facts.failure_type;
    s["last_signature"] = util::sha12(facts.signature);
  });
}

}  // namespace phoenix::loop::internal
