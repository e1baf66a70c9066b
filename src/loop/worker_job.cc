// Loop: one task on a worker's thread, in its own tree (loop/internal.h).
#include "loop/internal.h"

#include <algorithm>

#include "trace/events.h"
#include "util/error.h"
#include "util/format.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::loop::internal {

// One task in a worker's own tree: the agent, the checks, the heal cycle.
// The task's acceptance check is measured with phoenix.json's, and the
// tasks file and acceptance scripts are put back after the agent's run.
JobResult Loop::work(WorkerPool::Worker& w, const Job& job) {
  JobResult r;
  r.job = job;  // the heal below shows the harness the task's title
  Tree t = w.tree;
  const config::Config task_checks = with_acceptance(cfg, &job.task);
  t.cfg = &task_checks;
  r.base = t.repo->head_sha();
  carry_into(t.path);
  std::vector<std::string> pinned{tasks_rel};
  for (const auto& p : acceptance_scripts(job.task, t.path)) pinned.push_back(p);
  PinnedFiles pins(t.path, pinned);
  AgentRun a = run_agent(job.prompt, t, [&](long pid) { pool->set_phase(w, Phase::kAgent, pid); });
  if (!pins.restore().empty()) a.changed = !t.repo->is_clean(own_paths());
  if (!a.wrote_elsewhere.empty())
    return refused_in_worker(r, t, elsewhere_facts(a.wrote_elsewhere), elsewhere_told(a.wrote_elsewhere),
                             "phoenix-loop: wrote outside its tree", {{"wrote_elsewhere", a.wrote_elsewhere}});
  pool->set_phase(w, Phase::kChecking);
  using agent::Status;
  if (util::interrupted_signal()) return ended(r, JobResult::End::kInterrupted);
  if (a.cls.status == Status::kQuota) return stop(r, Phase::kStopped, quota_line(a));
  if (a.cls.status == Status::kUnavailable) return stop(r, Phase::kFailed, "harness unavailable: " + a.cls.detail);
  if (agent::waits(a.cls.status)) {
    --iteration;  // a run the provider refused is not one of the agent's iterations
    pool->set_phase(w, Phase::kWaiting);
    // The task goes back to the pool after one wait: a worker's waits are not counted in a row.
    const long long wait = engine::ModelWait{}.next(a.cls, static_cast<long long>(max_wait_s() * 1000));
    trace.append(trace::event::kLoopWait,
                 {{"status", agent::status_name(a.cls.status)}, {"wait_ms", wait}, {"task", job.task.id()}});
    nap(wait);
    return ended(r, JobResult::End::kWait);
  }
  if (a.cls.status == Status::kTimeout) a.changed = false;
  if (!a.changed) return ended(r, JobResult::End::kNoChange);
  Measure m = measure(t);
  if (!m.setup_failed.empty())
    return stop(r, Phase::kStopped,
                "stopped: " + m.setup_failed.substr(0, m.setup_failed.find('\n')) + " (in the worker's worktree " +
                    t.path + "); fix phoenix.json's setup, then --resume");
  if (m.interrupted) return ended(r, JobResult::End::kInterrupted);
  pool->set_phase(w, Phase::kCommitting);
  if (m.green) {
    // Green, but the task's new tests must also fail without its code (loop/bite.cc).
    if (std::string why = tests_bite_why(t, r.base, task_ref(job.task)); !why.empty())
      return refused_in_worker(r, t, toothless_facts(why), "your tests pass without your change: " + why,
                               "phoenix-loop: tests that do not bite", {{"tests_bite", false}});
    r.commit = t.repo->commit_all("phoenix-loop: " + job.task.title, true, layout::state_prefixes());
    return ended(r, JobResult::End::kQueued);
  }
  // Red: the attempt is kept under its ref and healed in the worker's
  // own tree, within what is left of the task's budget.
  const std::string attempt =
      t.repo->commit_all("phoenix-loop: attempt: " + job.task.title, true, layout::state_prefixes());
  r.attempt_ref = attempt_ref(wt_name, job.task.id(), job.run);
  t.repo->write_ref(r.attempt_ref, attempt, "phoenix-loop: a red attempt");
  r.red = red_facts(m, task_checks);
  r.diff = t.repo->diff_patch(r.base, attempt);
  const int left = budget_for(cfg, r.red.failure_type) - job.attempts - 1;
  const bool again =
      std::find(job.signatures.begin(), job.signatures.end(), util::sha12(r.red.signature)) != job.signatures.end();
  if (left <= 0 || again || session_retries.load() + 1 >= cfg.session_cap)
    return ended(r, JobResult::End::kRed);  // the loop's thread gives the task up
  pool->set_phase(w, Phase::kHealing);
  return healed_in_worker(r, t, m, left);
}

JobResult Loop::healed_in_worker(JobResult& r, const Tree& t, const Measure& m, int left) {
  TaskHeal th{left, r.base, change_text(r.job.task.title, r.diff), &m, t.repo->head_sha()};
  HealOutcome h = heal(t, m.red, true, &th);
  r.tried = h.tried;
  if (h.exit_code == kExitInterrupted || util::interrupted_signal()) return ended(r, JobResult::End::kInterrupted);
  if (!h.model_unusable.empty()) return stop(r, Phase::kStopped, h.model_unusable);
  // The next prompt names the failing tests the change brought, with their evidence.
  r.why = "red in its own tree: " + util::join_argv(m.red) + failure_text(m, kPromptEvidenceBytes);
  if (h.exit_code == kExitOk && !h.healed_by.empty()) {
    Measure hm = measure(t);
    std::string not_done = hm.green ? not_done_why(*t.repo, r.base, t.repo->head_sha(), own_paths(), "", nullptr)
                                    : "red after the heal: " + util::join_argv(hm.red);
    if (not_done.empty()) {
      r.commit = t.repo->head_sha();
      r.healed_by = h.healed_by;
      return ended(r, JobResult::End::kQueued);
    }
    r.why += "\nhealed, but " + not_done;
  } else if (!h.why_stopped.empty() && !h.tried.empty()) {
    r.why += "\nthe heal stopped: " + h.why_stopped;
  }
  return ended(r, JobResult::End::kRed);
}

// Green in the worker's tree but refused (its tests do not bite, or the
// agent wrote outside its tree): an attempt the loop's thread counts like
// a red one, its failure fed back.
JobResult Loop::refused_in_worker(JobResult& r, const Tree& t, const RedFacts& facts, const std::string& why,
                                  const std::string& ref_message, const Json& extra) {
  const std::string attempt =
      t.repo->is_clean(own_paths())
          ? t.repo->head_sha()
          : t.repo->commit_all("phoenix-loop: attempt: " + r.job.task.title, true, layout::state_prefixes());
  r.attempt_ref = attempt_ref(wt_name, r.job.task.id(), r.job.run);
  t.repo->write_ref(r.attempt_ref, attempt, ref_message);
  r.red = facts;
  r.diff = t.repo->diff_patch(r.base, attempt);
  r.why = why;
  r.extra = extra;
  return ended(r, JobResult::End::kRed);
}

JobResult Loop::ended(JobResult& r, JobResult::End end) {
  r.end = end;
  return r;
}

JobResult Loop::stop(JobResult& r, Phase phase_name, const std::string& why) {
  r.end = JobResult::End::kStop;
  r.code = kExitRed;
  r.phase = phase_name;
  r.why = why;
  return r;
}

}  // namespace phoenix::loop::internal
