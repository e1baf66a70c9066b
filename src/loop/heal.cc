// Loop: the inner cycle (engine::run_session) on a red tree (loop/internal.h).
#include "loop/internal.h"

#include <algorithm>
#include <filesystem>

#include "engine/cycle.h"
#include "engine/session.h"
#include "layout/paths.h"
#include "trace/events.h"
#include "util/format.h"
#include "util/path.h"
#include "util/text.h"

namespace phoenix::loop::internal {

namespace fs = std::filesystem;
using util::iso8601;

// The baseline's heal: red before any task, so bisect may find its culprit.
Loop::HealOutcome Loop::heal(const std::vector<std::string>& red) { return heal(main_tree(), red, false, nullptr); }

// In a worker's tree (`worker`), the loop's state keeps its phase and
// known-good stays where the merge queue put it.
Loop::HealOutcome Loop::heal(const Tree& t, const std::vector<std::string>& red, bool worker, const TaskHeal* task) {
  const config::Config& base_cfg = t.cfg ? *t.cfg : checks_now();
  const engine::SessionOptions so = heal_options(red, worker, task, base_cfg);
  std::optional<config::Config> task_cfg_copy;
  if (task) task_cfg_copy = task_heal_config(base_cfg);
  const config::Config& tc = task_cfg_copy ? *task_cfg_copy : base_cfg;
  if (!worker) phase(Phase::kHealing);
  // A proposal the engine turns away as a repeat of an earlier one is
  // not in its attempt count, yet the fixer's run was spent on the task:
  // the book counts it (a harness run of the task's budget, the path ended).
  std::vector<TaskAttempt> repeats;
  engine::RunResult r = engine::run_session(t.path, tc, so, trace, [&](const Json& ev) {
    if (ev.value("event", "") != trace::event::kState) return;
    const std::optional<engine::State> st = engine::parse_state(ev.value("state", ""));
    if (task && st == engine::State::kRejected && ev.value("guard", "") == "repeat")
      repeats.push_back({0, ev.value("fixer", ""), "rejected (repeat): " + ev.value("why", ""), "", ""});
    if (!worker) heal_state(st, ev, tc);
  });
  HealOutcome h = heal_outcome(r, repeats);
  if (!r.incident.empty()) {
    // The engine wrote the note in the worktree (fsynced before its
    // rollback); the user reads incidents/ of their own checkout.
    fs::create_directories(layout::incidents_dir(root));
    std::string dest = layout::incidents_dir(root) + "/" + fs::path(r.incident).filename().string();
    for (int n = 2; util::path_exists(dest); ++n)
      dest = layout::incidents_dir(root) + "/" + fs::path(r.incident).stem().string() + "-loop" + std::to_string(n) +
             ".md";
    std::string note = util::read_file(r.incident);
    // The images the note links (visual diffs beside it) travel with it.
    for (size_t at = note.find("!["); at != std::string::npos; at = note.find("![", at + 2)) {
      size_t close = note.find("](", at);
      size_t end = close == std::string::npos ? close : note.find(')', close);
      if (end == std::string::npos) break;
      std::string rel = note.substr(close + 2, end - close - 2);
      fs::path from = fs::path(r.incident).parent_path() / rel;
      if (rel.empty() || fs::path(rel).is_absolute() || rel.find("..") != std::string::npos ||
          !fs::is_regular_file(from))
        continue;
      fs::path to = fs::path(layout::incidents_dir(root)) / rel;
      fs::create_directories(to.parent_path());
      util::write_file_atomic(to.string(), util::read_file(from.string()));
    }
    util::write_file_atomic(dest, note);
    std::error_code ec;
    fs::remove(r.incident, ec);
    fs::remove(layout::escalated_flag(t.path), ec);
    h.incident = dest;
    trace.append(trace::event::kLoopIncident, {{"path", dest}, {"from", r.incident}});
  }
  return h;
}

// The engine's options for a heal of the loop's: the rollback to the
// branch's known-good, the loop's wait budget, one journal per repository;
// a task's heal (`task`) never escalates, spends at most what is left of
// the task's budget and runs no bisect.
engine::SessionOptions Loop::heal_options(const std::vector<std::string>& red, bool worker, const TaskHeal* task,
                                          const config::Config& base) const {
  engine::SessionOptions so;
  so.run.rollback = engine::Rollback::kKnownGood;
  so.run.own_tree = true;
  so.run.known_good_ref = kg_ref;
  so.run.bless_known_good = !worker && !task;
  so.run.only = red;
  so.run.templates_dir = opt.templates_dir;
  so.run.max_wait_s = max_wait_s();
  so.journal_root = root;  // one journal per repository
  if (!task && !worker) {
    // The baseline's heal: what it cannot heal is the night's known red,
    // never an incident (invariant 14); every failure there is its to heal.
    so.run.escalate = false;
    so.run.reference = std::map<std::string, engine::FailingSet>{};
    so.run.reference_name = "the baseline";
  }
  if (!task) return so;
  // A task's heal judges what is left red against the known red, and
  // starts from the attempt's measurement and verdicts (nothing measured
  // or run again twice).
  if (auto ref = reference_now()) {
    so.run.reference = *ref;
    so.run.reference_name = "the known red";
  }
  if (task->measured && !task->attempt.empty()) {
    so.run.measured = task->measured->results;
    so.run.measured_head = task->attempt;
    so.run.measured_verdicts = task->measured->verdicts;
  }
  so.run.escalate = false;
  so.run.max_attempts = task->max_attempts;
  so.run.task_start = task->start;
  so.run.change = task->change;
  so.run.bite_guard = false;  // the loop measures the task's whole change (loop/bite.cc)
  for (const std::string& f : base.fixers)
    if (f != "bisect") so.fixers.push_back(f);
  if (so.fixers.empty()) so.fixers.push_back("noop");
  return so;
}

// What a task's heal runs with: `base`, the tasks file protected and the
// session cap what is left of the night's.
config::Config Loop::task_heal_config(const config::Config& base) const {
  config::Config c = base;
  // Only the loop ticks: no heal may touch the tasks file.
  if (!tasks_rel.empty()) c.protected_globs.push_back(tasks_rel);
  // The session cap counts over the whole night.
  c.session_cap = std::max(1, cfg.session_cap - session_retries.load());
  return c;
}

// loop-state.json while the engine heals in the loop's own worktree, at
// each of its state events: the failure found, one more attempt, a wait
// on the model (or none).
void Loop::heal_state(std::optional<engine::State> st, const Json& ev, const config::Config& tc) {
  using engine::State;
  state.update([&](Json& s) {
    if (st == State::kDetected) {
      if (const auto* spec = tc.find(ev.value("check", ""))) s["last_failure_type"] = spec->type;
      if (ev.contains("signature")) s["last_signature"] = ev["signature"];
    }
    if (st == State::kProposing) s["retry_count"] = s.value("retry_count", 0) + 1;
    if (st == State::kWaiting) {
      s["waiting_until"] = iso8601(util::now_ms() + ev.value("wait_ms", 0LL));
      s["waiting_for"] = ev.value("status", "rate-limited");
    } else {
      s["waiting_until"] = nullptr;
      s["waiting_for"] = nullptr;
    }
  });
}

// What the engine's heal came to, in the loop's terms. Its attempts, and
// the repeats it turned away, count against the session cap; its cost
// against the caps.
Loop::HealOutcome Loop::heal_outcome(const engine::RunResult& r, const std::vector<TaskAttempt>& repeats) {
  HealOutcome h;
  h.exit_code = r.exit_code;
  h.model_unusable = r.model_unusable;
  for (const auto& i : r.issues) {
    session_retries += i.attempts;
    for (const auto& a : i.tried) h.tried.push_back({0, a.fixer, a.outcome, util::sha12(a.attempt_signature), ""});
    if (i.state == engine::State::kHealed) h.healed_by = i.fixer;
    if (!i.why_stopped.empty()) h.why_stopped = i.why_stopped;
    h.undid_change = h.undid_change || i.undid_change;
    std::lock_guard<std::mutex> g(caps_mu);
    caps.add(i.cost_usd, i.unknown_cost_runs);
  }
  session_retries += static_cast<int>(repeats.size());
  h.tried.insert(h.tried.end(), repeats.begin(), repeats.end());
  return h;
}

// What the harness is shown of the change it mends.
std::string Loop::change_text(const std::string& title, const std::string& diff) {
  constexpr size_t kMax = 24 * 1024;
  std::string d(util::utf8_head(diff, kMax));
  if (d.size() < diff.size()) d += "\n... (cut at " + std::to_string(d.size()) + " bytes)";
  return "The task being done: " + title +
         "\n\nThe change made for it, which turned the check red (a diff against the last green commit):\n\n```diff\n" +
         d +
         "\n```\n\nMend this change so that every check passes with it: keep what it does for the task. "
         "Taking the change back out is not a fix: it is rejected.";
}

}  // namespace phoenix::loop::internal
