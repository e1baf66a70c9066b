// PROPOSING: one fixer asked in its sandbox (invariant 12: the user's
// repository untouched while it works), an answer without a patch (the
// next fixer, a wait on the model, a failed attempt, an intrusion put
// back), and the guards a patch must pass before it is applied.
#include "engine/cycle.h"

#include "engine/cycle_impl.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/format.h"
#include "util/signals.h"
#include "util/sleep.h"

namespace phoenix::engine {

using util::Json;

// PROPOSING: one fixer is asked, and what it answered is traced.
fixers::Proposal Engine::Impl::propose(Heal& h, fixers::Fixer& fixer, std::string& pre_propose) {
  state(h.check.id, State::kProposing, {{"fixer", fixer.name()}, {"attempt", h.out.attempts + 1}});
  fixers::Request req;
  req.repo_root = root;
  req.phoenix_dir = layout::state_dir(root);
  req.templates_dir = opt.templates_dir;
  req.config = &cfg;
  req.failure = h.failure;
  req.earlier = h.earlier;
  req.head = repo->head_sha();
  req.known_good = layout::known_good_commit(*repo, known_good_ref).value_or("");
  req.change = opt.change;
  req.timeout_s = cfg.harness.timeout_s;
  req.explain = opt.explain;
  // Invariant 12: the user's repository is not touched while a fixer
  // works. On a tree with uncommitted work, keep a checkpoint first so a
  // fixer that writes into it anyway can be undone exactly.
  pre_propose = dirty0 ? checkpoint("running fixer " + fixer.name()) : "";
  fixers::Proposal p = fixer.propose(req);
  p.fixer = fixer.name();
  if (p.model_calls) h.out.model_calls = h.out.model_calls.value_or(0) + *p.model_calls;
  if (p.cost_usd) h.out.cost_usd += *p.cost_usd;
  else if (p.model_calls.value_or(1) != 0) ++h.out.unknown_cost_runs;
  trace_proposal(h, p);
  // A fixer that measured (bisect) says how: which runs asked the failing
  // tests alone and which the whole check.
  if (p.status == fixers::Status::kProposed && p.check_runs > 0) explain("fixer " + p.fixer + ": " + p.detail);
  return p;
}

void Engine::Impl::trace_proposal(const Heal& h, const fixers::Proposal& p) {
  Json ev = {{"check", h.check.id},
             {"fixer", p.fixer},
             {"status", fixers::status_name(p.status)},
             {"files", p.files},
             {"summary", p.summary},
             {"detail", p.detail},
             {"model_calls", p.model_calls ? Json(*p.model_calls) : Json(nullptr)},
             {"cost_usd", p.cost_usd ? Json(*p.cost_usd) : Json(nullptr)},
             {"check_runs", p.check_runs},
             {"selected_runs", p.selected_runs},
             {"duration_ms", p.duration_ms}};
  // The command of the runs that asked the failing tests alone.
  if (p.selected_runs > 0 && h.failure.failing_first) ev["selected_argv"] = h.failure.failing_first->check.argv;
  trace.append(trace::event::kProposal, ev);
}

// A proposal without a patch: next fixer, a wait, or a failed attempt.
// False when the heal ends here (waited out, or Phoenix's own failure
// with no fixer left).
bool Engine::Impl::no_patch(Heal& h, const fixers::Proposal& p, const std::string& head_before,
                            const std::string& pre_propose, RunResult& result) {
  const std::string& id = h.check.id;
  switch (p.status) {
    case fixers::Status::kQuota: h.quota = p; [[fallthrough]];
    case fixers::Status::kNothing:
    case fixers::Status::kUnavailable:
      explain("fixer " + p.fixer + ": " + fixers::status_name(p.status) +
              (p.detail.empty() ? "" : " (" + p.detail + ")") + "; next fixer");
      state(id, State::kNoProposal,
            {{"fixer", p.fixer}, {"status", fixers::status_name(p.status)}, {"detail", p.detail}});
      ++h.fixer_index;
      return true;
    case fixers::Status::kRateLimited:
    case fixers::Status::kUnreachable: return wait_for_model(h, p, result);
    case fixers::Status::kTimeout:
    case fixers::Status::kCrashed:
      reject(h, p, std::string(fixers::status_name(p.status)) + (p.detail.empty() ? "" : ": " + p.detail), "", p.log,
             {{"why", fixers::status_name(p.status)}});
      return true;
    case fixers::Status::kAborted:
      // The real repository changed while the fixer worked (invariant 12):
      // the attempt is void, and the repository goes back to how it was.
      restore_after_intrusion(head_before, pre_propose);
      reject(h, p, "aborted: " + p.detail, "", p.log, {{"why", "aborted: " + p.detail}});
      return true;
    case fixers::Status::kOwnFailure: return own_failure(h, p);
    case fixers::Status::kProposed: break;
  }
  return true;
}

// Phoenix's own failure (its tree, its setup), not the code's: no attempt,
// no strike, no escalation. The next fixer may still heal; with none left
// the issue ends red, saying whose failure it was (false).
bool Engine::Impl::own_failure(Heal& h, const fixers::Proposal& p) {
  const std::string& id = h.check.id;
  explain("fixer " + p.fixer + ": Phoenix's own failure (" + p.detail + ")" +
          (h.fixer_index + 1 < fixers.size() ? "; next fixer" : "; not an escalation"));
  if (h.fixer_index + 1 < fixers.size()) {
    state(id, State::kNoProposal,
          {{"fixer", p.fixer}, {"status", fixers::status_name(p.status)}, {"detail", p.detail}});
    ++h.fixer_index;
    return true;
  }
  state(id, State::kRed,
        {{"fixer", p.fixer},
         {"why", "Phoenix's own failure, not the code's: no incident, nothing rolled back"},
         {"status", fixers::status_name(p.status)},
         {"detail", p.detail}});
  h.out.state = State::kRed;
  return false;
}

// Not a failed heal: wait (backoff with jitter, or until the reset time the
// CLI printed) without spending the budget or a strike, for at most
// max_wait_s in all. False when that is spent: the run stops (WAITED_OUT).
bool Engine::Impl::wait_for_model(Heal& h, const fixers::Proposal& p, RunResult& result) {
  h.model_wait.refused(p.duration_ms);
  const long long left = h.model_wait.left_of(static_cast<long long>(opt.max_wait_s * 1000));
  if (left <= 0) {
    result.model_unusable = h.model_wait.spent_line(fixers::status_name(p.status), program_of(p), cause_of(p));
    explain("fixer " + p.fixer + ": " + fixers::status_name(p.status) + " past max_wait_s; the run stops");
    state(h.check.id, State::kWaitedOut,
          {{"fixer", p.fixer}, {"waited_ms", h.model_wait.waited_ms}, {"detail", p.detail}});
    h.out.state = State::kWaitedOut;
    return false;
  }
  agent::Classification c;
  c.retry_after_ms = p.retry_after_ms;
  const long long waited = h.model_wait.waited_ms;
  const long long wait = h.model_wait.next(c, left);
  state(h.check.id, State::kWaiting,
        {{"fixer", p.fixer},
         {"status", fixers::status_name(p.status)},
         {"wait_ms", wait},
         {"waited_ms", waited},
         {"detail", p.detail}});
  if (!util::interruptible_sleep_ms(wait)) throw Error("interrupted", kExitInterrupted);
  return true;
}

// The guards: a repeat of an earlier attempt, and check_patch's rules.
bool Engine::Impl::passes_guards(Heal& h, const fixers::Proposal& p, const PatchFacts& facts,
                                 const std::string& attempt_sig) {
  if (h.tried.count(attempt_sig)) {
    explain("attempt signature " + util::sha12(attempt_sig) + " was tried before: that path stops; next fixer");
    state(h.check.id, State::kRejected,
          {{"fixer", p.fixer}, {"guard", "repeat"}, {"why", "the same fix was tried before"}});
    ++h.fixer_index;
    return false;
  }
  // A journal replay is a stored first guess, not a fix of this run: it never
  // repeats itself (the journal skips what it offered), and a stale one must
  // not block a fresh fix that touches the same files.
  if (!p.from_journal()) h.tried.insert(attempt_sig);
  GuardVerdict v = check_patch(facts, h.check, cfg, root);
  if (v.ok) return true;
  reject_by_guard(h, p, v.guard, v.reason, attempt_sig);
  return false;
}

}  // namespace phoenix::engine
