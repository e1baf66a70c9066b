// Loop: the end of the run and escalations (loop/internal.h).
#include "loop/internal.h"

#include "engine/incident.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/signals.h"

namespace phoenix::loop::internal {

// --- the end ---------------------------------------------------------------

int Loop::finish(int code, Phase phase_in, const std::string& why_in) {
  Phase phase_name = phase_in;
  std::string why = why_in;
  if (merging() && !merge_unpushed.empty() && code != kExitInterrupted) {
    push_merged();  // once more: the last word on whether the remote has it
    if (!merge_unpushed.empty()) {
      why += "; " + branch + " is not on " + opt.merge_remote + ": " + merge_unpushed;
      if (code == kExitOk) {
        code = kExitRed;
        phase_name = Phase::kStopped;
      }
    }
  }
  trace.append(trace::event::kLoopEnd, {{"exit_code", code},
                                        {"phase", phase_name},
                                        {"why", why},
                                        {"iteration", iteration.load()},
                                        {"caps", caps_figures()}});
  say(why);
  phase(phase_name, [&](Json& s) {
    s["exit_code"] = code;
    s["task"] = nullptr;
  });
  state.stop_heartbeat();
  notify(phase_name == Phase::kEscalated ? "escalated-end" : "end", last_incident, why);
  return code;
}

int Loop::setup_stopped(const Measure& m) {
  const std::string first = m.setup_failed.substr(0, m.setup_failed.find('\n'));
  if (m.setup_failed.size() > first.size()) say(m.setup_failed.substr(first.size() + 1));
  return finish(kExitRed, Phase::kStopped,
                "stopped: " + first + " (in the loop's worktree " + wt + "); fix phoenix.json's setup, then --resume");
}

int Loop::interrupted() {
  int sig = util::interrupted_signal();
  return finish(kExitInterrupted, Phase::kInterrupted,
                "interrupted by signal " + std::to_string(sig) + "; state written");
}

std::string Loop::session_cap_why() const {
  return "loop-wide retry cap: " + std::to_string(session_retries.load()) + " attempts (session_cap " +
         std::to_string(cfg.session_cap) + ")";
}

// The task's path ends: its note (every attempt on it, the agent's own
// diff), fsynced, then the worktree back at known-good, then
// loop.on_escalate (or exit 2 when the session cap was reached).
Loop::Ending Loop::give_up_task(const TaskRef& t, const std::string& why, bool session_cap) {
  const std::string kg = repo->read_ref(kg_ref).value_or(task_before);
  const TaskEscalation x = escalate_task(t, why, kg, true, session_cap, "escalated on " + t.title + ": " + why);
  if (!x.end_why.empty()) return finish(kExitEscalated, Phase::kEscalated, x.end_why);
  if (!prompt_mode()) {
    skipped.insert(t.task.index);
    write_run_file();
    trace.append(trace::event::kLoopTaskSkipped,
                 {{"iteration", iteration.load()}, {"task", t.json}, {"incident", x.incident}});
  }
  say("escalated on " + t.title + ": " + why + "; see " + x.incident + "; skipping the task (loop.on_escalate = skip)");
  if (prompt_mode()) return finish(kExitEscalated, Phase::kEscalated, "escalated: see " + x.incident);
  if (escalations_in_row >= cfg.circuit_breaker)
    return finish(kExitEscalated, Phase::kEscalated,
                  "circuit breaker: " + std::to_string(escalations_in_row) + " escalations in a row");
  return std::nullopt;
}

// A task given up on, by the loop alone or by its workers: the note
// (written and fsynced before any rollback), in the loop's own worktree
// (`own_tree`) the rollback to `to`, the note's state, the trace's
// loop.task_escalated, then escalated_note. The run ends (x.end_why) at
// the session cap or with loop.on_escalate = stop; otherwise the caller
// skips the task.
Loop::TaskEscalation Loop::escalate_task(const TaskRef& t, const std::string& why, const std::string& to, bool own_tree,
                                         bool session_cap, const std::string& summary) {
  const TaskRecord& rec = book.of(t.task);
  TaskEscalation x;
  x.incident = task_incident(rec, why, to);
  if (own_tree) {
    if (repo->head_sha() != to || !repo->is_clean(own_paths())) repo->reset_hard(to, true, own_paths());
    std::string last_ref;
    for (const auto& a : rec.history)
      if (!a.ref.empty()) last_ref = a.ref;
    trace.append(trace::event::kRollback, {{"to", to}, {"abandoned_ref", last_ref}});
  }
  engine::set_incident_state(x.incident, "rolled back to " + to +
                                             " (the loop branch never held the attempts: they are kept under " +
                                             std::string(layout::kAttemptsPrefix) + wt_name + "/" + rec.id + "/)");
  trace.append(trace::event::kLoopTaskEscalated, {{"iteration", iteration.load()},
                                                  {"task", t.json},
                                                  {"why", why},
                                                  {"incident", x.incident},
                                                  {"attempts", rec.attempts}});
  escalated_note(x.incident, summary, own_tree);
  if (session_cap) x.end_why = session_cap_why() + "; see " + x.incident;
  else if (cfg.loop.on_escalate == config::OnEscalate::kStop) x.end_why = "escalated: " + why + "; see " + x.incident;
  return x;
}

// The note of a task given up on, written in <root>/incidents before any
// rollback (the engine's format: engine/incident.h).
std::string Loop::task_incident(const TaskRecord& rec, const std::string& why, const std::string& to) {
  engine::Incident inc;
  inc.failure_type = rec.last_red.failure_type;
  inc.check_id = rec.last_red.check;
  inc.check_description = rec.last_red.description + " (task " + rec.id + ": " + rec.title + ")";
  inc.signal = rec.last_red.signal;
  for (const TaskAttempt& a : rec.history)
    inc.attempts.push_back({a.number, a.who + (a.ref.empty() ? "" : " (" + a.ref + ")"), a.outcome, a.signature});
  inc.issue_signature = rec.last_red.signature;
  inc.last_diff = rec.last_diff;
  inc.evidence = rec.last_red.evidence;
  inc.artifacts = rec.last_red.artifacts;
  inc.why_escalated = why;
  inc.not_rolled_back_why = "rollback to " + to + " in progress";
  std::string path = engine::write_incident(layout::incidents_dir(root), inc);
  trace.append(trace::event::kIncident, {{"path", path}, {"check", inc.check_id}, {"why", why}, {"task", rec.id}});
  return path;
}

// The bookkeeping of every escalation of the loop's (a task, a merge or
// the baseline given up on): the last incident, the ESCALATED flag,
// loop-state.json's last_incident (with the phase "escalated" when the
// loop's own worktree escalated: `in_phase`; a worker's or the queue's
// leaves the phase to the loop) before the notification reads the state,
// the notification, and the count of escalations in a row.
void Loop::escalated_note(const std::string& incident, const std::string& summary, bool in_phase) {
  last_incident = incident;
  util::write_file_atomic(layout::escalated_flag(root), incident + "\n");
  const auto said = [&](Json& s) { s["last_incident"] = incident; };
  if (in_phase) phase(Phase::kEscalated, said);
  else state.update(said);
  notify("escalated", incident, summary);
  ++escalations_in_row;
}

}  // namespace phoenix::loop::internal
