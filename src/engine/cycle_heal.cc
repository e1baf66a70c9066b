// One issue's heal: its budget, the loop of proposals, what stops it, each
// failed attempt counted once, HEALED, and the escalation's incident note
// (invariant 10). The proposals, the verification and the rollback are the
// files beside it (engine/cycle_impl.h).
#include "engine/cycle.h"

#include <algorithm>

#include "engine/cycle_impl.h"
#include "engine/failing_first.h"
#include "engine/incident.h"
#include "engine/signature.h"
#include "trace/events.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/format.h"
#include "util/signals.h"

namespace phoenix::engine {

using util::Json;

namespace {

// Why a heal stops when every fixer of the chain has had its say.
constexpr const char* kChainEnd = "no fixer has anything more to propose";

}  // namespace

IssueOutcome Engine::Impl::heal(const checks::CheckSpec& check, const checks::SenseResult& red, RunResult& result) {
  Heal h{check, red, {}, describe_failure(check, red), 3, {}, {}, {}, {}, 0, {}, std::nullopt};
  set_budget(h);

  // health: a failing health check is rolled back at once, never patched.
  if (check.is_health()) {
    escalate(h.failure, h.attempts, "", "a health check failed: immediate rollback (no automatic fix for health)",
             result);
    h.out.state = State::kEscalated;
    return h.out;
  }

  for (;;) {
    if (util::interrupted_signal() != 0) throw Error("interrupted", kExitInterrupted);
    if (std::string stop = stop_reason(h); !stop.empty()) return give_up(h, stop, result);
    fixers::Fixer& fixer = *fixers[h.fixer_index];
    std::string head_before = repo->head_sha();
    std::string pre_propose;
    fixers::Proposal p = propose(h, fixer, pre_propose);
    if (!p.selection_misleads.empty() && h.failure.failing_first) {
      // What the fixer learnt of the failing tests alone holds for every
      // proposal of this issue: the whole check verifies them.
      h.failure.failing_first.reset();
      h.failure.whole_why = "the failing tests alone mislead (" + p.selection_misleads + ")";
    }
    if (p.status != fixers::Status::kProposed) {
      if (!no_patch(h, p, head_before, pre_propose, result)) return h.out;
      continue;
    }
    PatchFacts facts = patch_facts(p.patch);
    if (p.files.empty()) p.files = facts.files;
    const std::string attempt_sig = attempt_signature(h.failure.issue_signature, facts.files);
    if (!passes_guards(h, p, facts, attempt_sig)) continue;
    if (opt.dry_run) return dry_run_ends(h, p, facts);
    Applied a = apply_and_verify(h, p, facts, attempt_sig);
    if (a.healed) {
      healed(h, p, facts, attempt_sig, a);
      return h.out;
    }
    if (!a.outcome.empty())
      explain("verification failed (" + a.outcome + "); restored the checkpoint; " +
              std::to_string(h.budget - h.out.attempts) + " attempts left in the budget");
  }
}

// The issue's budget: its failure type's (phoenix.json "budgets"), no more
// than RunOptions.max_attempts when set.
void Engine::Impl::set_budget(Heal& h) {
  const checks::CheckSpec& check = h.check;
  // Invariant 14: a heal, its budget and its signature are only ever
  // spent on a failure the change brought.
  for (size_t k = 0; k < selected.size(); ++k)
    if (selected[k].id == check.id && verdicts.size() > k && verdicts[k].red && !verdicts[k].counts())
      throw Error("invariant 14: " + check.id + " was healed though none of its failures is new");
  h.out.check = check.id;
  h.out.issue_signature = h.failure.issue_signature;
  h.budget = cfg.budgets.count(check.type) ? cfg.budgets.at(check.type) : 3;
  if (opt.max_attempts > 0) h.budget = std::min(h.budget, opt.max_attempts);
  explain("check " + check.id + ": failure type " + check.type + ", budget " + std::to_string(h.budget) +
          " attempts (session cap " + std::to_string(cfg.session_cap) + ", used " + std::to_string(session_retries) +
          ")");
}

// What failed, as the fixers are told: the check, its red measurement, the
// issue signature, the failing tests (the new ones, where a verdict named
// them) and whether they can be run alone.
fixers::Failure Engine::Impl::describe_failure(const checks::CheckSpec& check, const checks::SenseResult& red) {
  fixers::Failure failure;
  failure.check = check;
  failure.result = red;
  failure.failure_type = check.type;
  failure.issue_signature = issue_signature(check.id, red.output);
  failure.failing_tests = extract_failing_tests(red.output);
  for (size_t k = 0; k < selected.size(); ++k)
    if (selected[k].id == check.id && verdicts.size() > k && verdicts[k].counts()) {
      // The signature of what the change brought: a flaky or pre-existing
      // test beside it never makes it look like another failure.
      failure.issue_signature = verdicts[k].signature;
      if (!verdicts[k].whole) failure.new_tests = verdicts[k].new_failures;
    }
  const FailingFirst first =
      failing_first(check, failure.new_tests.empty() ? failure.failing_tests : failure.new_tests, red.output);
  failure.failing_first = first.tests;
  failure.whole_why = first.why_whole;
  if (!failure.failing_tests.empty()) {
    std::string names;
    for (const auto& t : failure.failing_tests) names += (names.empty() ? "" : ", ") + t;
    explain("failing tests in " + check.id + ": " + names);
  }
  return failure;
}
// Why this issue's heal stops here, or "" to go on.
std::string Engine::Impl::stop_reason(const Heal& h) const {
  if (h.out.attempts >= h.budget) return "budget of " + std::to_string(h.budget) + " for " + h.check.type + " spent";
  if (session_retries >= cfg.session_cap)
    return "session cap of " + std::to_string(cfg.session_cap) + " attempts reached";
  if (cfg.circuit_breaker > 0 && consecutive_failed >= cfg.circuit_breaker)
    return "circuit breaker: " + std::to_string(consecutive_failed) + " consecutive failed heals";
  if (h.fixer_index >= fixers.size()) return kChainEnd;
  return "";
}

IssueOutcome Engine::Impl::give_up(Heal& h, const std::string& stop, RunResult& result) {
  if (h.quota && stop == kChainEnd) {
    // Nothing else to ask, and the model was never usable: not the code's
    // (a budget spent on proposals that went red is).
    explain("fixer " + h.quota->fixer + ": quota, and no fixer left; the run stops, not an escalation");
    result.model_unusable = agent::unusable_line("quota", program_of(*h.quota), cause_of(*h.quota));
    state(h.check.id, State::kUnusable, {{"fixer", h.quota->fixer}, {"detail", h.quota->detail}});
    h.out.state = State::kUnusable;
    return h.out;
  }
  h.out.tried = h.attempts;
  h.out.last_diff = h.last_diff;
  h.out.why_stopped = stop;
  if (!opt.escalate && !opt.dry_run) {
    // The caller (the loop) writes the note and rolls back: every attempt
    // was undone already, so the tree is where the heal started.
    explain("stop " + h.check.id + ": " + stop + "; the caller escalates");
    state(h.check.id, State::kRed, {{"why", stop}});
    h.out.state = State::kRed;
    return h.out;
  }
  explain("escalate " + h.check.id + ": " + stop);
  if (opt.dry_run) {
    h.out.state = State::kRed;
    state(h.check.id, State::kRed, {{"why", stop}});
    return h.out;
  }
  escalate(h.failure, h.attempts, h.last_diff, stop, result);
  h.out.state = State::kEscalated;
  return h.out;
}
// Invariant 7: the dry run ends at the first proposal that passes the
// guards, with nothing written.
IssueOutcome Engine::Impl::dry_run_ends(Heal& h, const fixers::Proposal& p, const PatchFacts& facts) {
  state(h.check.id, State::kProposed, {{"fixer", p.fixer}, {"files", facts.files}, {"summary", p.summary}});
  h.out.state = State::kProposed;
  h.out.fixer = p.fixer;
  h.out.patch = p.patch;
  return h.out;
}

// HEALED: the fix is committed (on a clean tree), recorded, and said.
void Engine::Impl::healed(Heal& h, const fixers::Proposal& p, const PatchFacts& facts, const std::string& attempt_sig,
                          const Applied& a) {
  const checks::CheckSpec& check = h.check;
  h.out.state = State::kHealed;
  h.out.fixer = p.fixer;
  h.out.patch = p.patch;
  h.out.attempts += 1;
  consecutive_failed = 0;
  if (!dirty0) {
    std::string msg = "phoenix: heal " + check.id + " (" + p.fixer + ")\n\n" +
                      (p.summary.empty() ? "" : p.summary + "\n\n") + "Check: " + check.id + " (" + check.type +
                      ")\nSignal before: " + h.red.signal + "\nSignal after: " + a.again.signal +
                      "\nIssue-Signature: " + h.failure.issue_signature + "\nAttempt-Signature: " + attempt_sig + "\n";
    // The patch's files only: the user's untracked files stay out of it.
    PHOENIX_FAULT_IO("heal-commit", repo->common_dir() + "/objects");
    h.out.fix_commit = repo->commit_tracked_and(facts.files, msg);
  }
  if (outcomes) outcomes->healed(h.failure, p, a.verify_ms);
  state(check.id, State::kHealed,
        {{"fixer", p.fixer},
         {"signal", a.again.signal},
         {"commit", h.out.fix_commit},
         {"attempts", h.out.attempts},
         {"uncommitted", dirty0}});
  explain(dirty0 ? "healed; the fix stays uncommitted because the work tree had your own changes"
                 : "healed; fix commit " + util::sha12(h.out.fix_commit));
}

void Engine::Impl::reject(Heal& h, const fixers::Proposal& p, const std::string& outcome,
                          const std::string& attempt_sig, const std::string& evidence, Json detail) {
  // A proposal without a patch (a timeout, a crash, an abort) tried none:
  // the next fixer is told of no patch, and the outcome sink hears nothing.
  const bool tried = p.status == fixers::Status::kProposed;
  ++h.out.attempts;
  ++session_retries;
  ++consecutive_failed;
  h.attempts.push_back({h.out.attempts, p.fixer, outcome, attempt_sig});
  h.earlier.push_back({p.fixer, tried ? p.patch : "", tried ? p.files : std::vector<std::string>{}, outcome, evidence});
  if (tried && outcomes) outcomes->failed(h.failure, p, outcome);
  detail["fixer"] = p.fixer;
  state(h.check.id, State::kRejected, std::move(detail));
}

std::string Engine::Impl::reject_by_guard(Heal& h, const fixers::Proposal& p, const std::string& guard,
                                          const std::string& why, const std::string& attempt_sig) {
  explain("guard " + guard + " rejects the proposal of " + p.fixer + ": " + why);
  const std::string outcome = "rejected (" + guard + "): " + why;
  h.last_diff = p.patch;
  reject(h, p, outcome, attempt_sig, "", {{"guard", guard}, {"why", why}});
  return outcome;
}

// ESCALATED: the incident note, fsynced before the rollback starts
// (invariant 10), the rollback (cycle_rollback.cc), the flag file.
void Engine::Impl::escalate(const fixers::Failure& f, const std::vector<IncidentAttempt>& attempts,
                            const std::string& last_diff, const std::string& why, RunResult& result) {
  Incident inc;
  inc.failure_type = f.failure_type;
  inc.check_id = f.check.id;
  inc.check_description = describe_check(f.check);
  inc.signal = f.result.signal;
  inc.attempts = attempts;
  inc.issue_signature = f.issue_signature;
  inc.failing_tests = f.failing_tests;
  inc.last_diff = last_diff;
  inc.evidence = f.result.evidence;
  for (const auto& a : f.result.artifacts) inc.artifacts.emplace_back(a.name, a.bytes);
  inc.why_escalated = why;
  inc.not_rolled_back_why = "rollback in progress";
  std::string path;
  try {
    path = write_incident(layout::incidents_dir(root), inc);
  } catch (const Error& e) {
    // No note on disk, no rollback. The trace may sit on the same full disk.
    const std::string why_not = std::string(e.what()) + "; not rolled back (no incident note)";
    try {
      trace.append(trace::event::kIncidentFailed, {{"check", f.check.id}, {"why", why}, {"error", e.what()}});
    } catch (const Error&) {}
    throw Error(why_not, e.exit_code());
  }
  result.incident = path;
  trace.append(trace::event::kIncident, {{"path", path}, {"check", f.check.id}, {"why", why}});
  state(f.check.id, State::kEscalated, {{"why", why}, {"incident", path}});
  roll_back(path, result);
  PHOENIX_FAULT_IO("escalated-flag", layout::escalated_flag(root));
  util::write_file_atomic(layout::escalated_flag(root), path + "\n");
}

}  // namespace phoenix::engine
