// Loop: the end of the run and escalations (loop/internal.h).
#include "loop/internal.h"

#include "engine/incident.h"
#include "util/error.h"
#include "util/subprocess.h"

namespace phoenix::loop::internal {

// --- the end ---------------------------------------------------------------

int Loop::finish(int code, const std::string& phase_in, const std::string& why_in) {
  std::string phase_name = phase_in, why = why_in;
  if (merging() && !merge_unpushed.empty() && code != kExitInterrupted) {
    push_merged();  // once more: the last word on whether the remote has it
    if (!merge_unpushed.empty()) {
      why += "; " + branch + " is not on " + opt.merge_remote + ": " + merge_unpushed;
      if (code == kExitOk) {
        code = kExitRed;
        phase_name = "stopped";
      }
    }
  }
  trace.append("loop.end", {{"exit_code", code},
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
  notify(phase_name == "escalated" ? "escalated-end" : "end", last_incident, why);
  return code;
}

int Loop::setup_stopped(const Measure& m) {
  const std::string first = m.setup_failed.substr(0, m.setup_failed.find('\n'));
  if (m.setup_failed.size() > first.size()) say(m.setup_failed.substr(first.size() + 1));
  return finish(
      kExitRed, "stopped",
      "stopped: " + first + " (in the loop's worktree " + wt + "); fix phoenix.json's setup, then --resume");
}

int Loop::interrupted() {
  int sig = util::interrupted_signal();
  return finish(kExitInterrupted, "interrupted", "interrupted by signal " + std::to_string(sig) + "; state written");
}

std::string Loop::session_cap_why() const {
  return "loop-wide retry cap: " + std::to_string(session_retries.load()) + " attempts (session_cap " +
         std::to_string(cfg.session_cap) + ")";
}

// The task's path ends: its note (every attempt on it, the agent's own
// diff), fsynced, then the worktree back at known-good, then
// loop.on_escalate (or exit 2 when the session cap was reached).
Loop::Ending Loop::give_up_task(const Task& task, const Json& tj, const std::string& title, const std::string& why,
                    bool session_cap) {
  const TaskRecord& rec = *book.find(task.id());
  std::string kg = repo->read_ref(kg_ref).value_or(task_before);
  std::string note = task_incident(rec, why, kg);
  if (repo->head_sha() != kg || !repo->is_clean(layout::keep_prefixes()))
    repo->reset_hard(kg, true, layout::keep_prefixes());
  std::string last_ref;
  for (const auto& a : rec.history)
    if (!a.ref.empty()) last_ref = a.ref;
  trace.append("rollback", {{"to", kg}, {"abandoned_ref", last_ref}});
  engine::set_incident_state(note, "rolled back to " + kg +
                                       " (the loop branch never held the attempts: they are kept under " +
                                       std::string(layout::kAttemptsPrefix) + wt_name + "/" + task.id() + "/)");
  trace.append("loop.task_escalated",
               {{"iteration", iteration.load()}, {"task", tj}, {"why", why}, {"incident", note}, {"attempts", rec.attempts}});
  return escalated_task(note, task, tj, title, why, session_cap);
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
  trace.append("incident", {{"path", path}, {"check", inc.check_id}, {"why", why}, {"task", rec.id}});
  return path;
}

Loop::Ending Loop::escalated_task(const std::string& incident, const Task& task, const Json& tj, const std::string& title,
                      const std::string& why, bool session_cap) {
  // The state says "escalated" before the notification reads it.
  phase("escalated", [&](Json& s) { s["last_incident"] = incident; });
  escalated_note(incident, "escalated on " + title + ": " + why);
  if (session_cap) return finish(kExitEscalated, "escalated", session_cap_why() + "; see " + incident);
  if (cfg.loop.on_escalate == "stop") return finish(kExitEscalated, "escalated", "escalated: see " + incident);
  if (!prompt_mode()) {
    skipped.insert(task.index);
    write_run_file();
    trace.append("loop.task_skipped", {{"iteration", iteration.load()}, {"task", tj}, {"incident", incident}});
  }
  say("escalated: " + incident + "; skipping the task (loop.on_escalate = skip)");
  if (prompt_mode()) return finish(kExitEscalated, "escalated", "escalated: see " + incident);
  if (escalations_in_row >= cfg.circuit_breaker)
    return finish(kExitEscalated, "escalated",
                  "circuit breaker: " + std::to_string(escalations_in_row) + " escalations in a row");
  return std::nullopt;
}

void Loop::escalated_note(const std::string& incident, const std::string& summary) {
  last_incident = incident;
  util::write_file_atomic(layout::escalated_flag(root), incident + "\n");
  state.update([&](Json& s) { s["last_incident"] = incident; });
  notify("escalated", incident, summary);
  ++escalations_in_row;
}

int Loop::escalated_baseline(const HealOutcome& h) {
  if (!h.incident.empty()) {
    last_incident = h.incident;
    util::write_file_atomic(layout::escalated_flag(root), h.incident + "\n");
    phase("escalated", [&](Json& s) { s["last_incident"] = h.incident; });
    notify("escalated", h.incident, "escalated: the baseline could not be healed");
    return finish(kExitEscalated, "escalated", "baseline could not be healed: see " + h.incident);
  }
  return finish(kExitRed, "stopped", "baseline red and not healed");
}

}  // namespace phoenix::loop::internal
