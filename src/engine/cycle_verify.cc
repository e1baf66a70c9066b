// APPLYING and VERIFYING: a guarded patch applied after a checkpoint, its
// failing tests run alone first where they can be (engine/failing_first.h),
// then a fresh run of the whole check that found the problem decides, no
// other green check may turn red, and its tests must bite
// (engine/bite.h). Anything short of that is undone byte for byte.
#include "engine/cycle.h"

#include "engine/bite.h"
#include "engine/cycle_impl.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/fault.h"

namespace phoenix::engine {

using util::Json;

Engine::Impl::Applied Engine::Impl::apply_and_verify(Heal& h, const fixers::Proposal& p, const PatchFacts& facts,
                                                     const std::string& attempt_sig) {
  Applied a;
  state(h.check.id, State::kApplying, {{"fixer", p.fixer}, {"files", facts.files}, {"summary", p.summary}});
  const std::optional<Patch> patch = apply(h, p, facts, attempt_sig);
  if (!patch) return a;
  if (undoes_change()) {
    // The tree is the task's start again: a rollback of the attempt, not a
    // fix of it. Counted as a failed attempt, never verified or learnt.
    undo(*patch);
    h.out.undid_change = true;
    reject_by_guard(h, p, "undoes-change",
                    "it undoes the change under way (the tree is as the task started: a rollback, not a fix)",
                    attempt_sig);
    return a;
  }
  verify(h, p, *patch, attempt_sig, a);
  return a;
}

// APPLYING: a checkpoint, then the patch in the work tree. Unset when it
// does not apply (nothing written, or what was undone).
std::optional<Engine::Impl::Patch> Engine::Impl::apply(Heal& h, const fixers::Proposal& p, const PatchFacts& facts,
                                                       const std::string& attempt_sig) {
  Patch patch{"", repo->head_sha(), facts.files};
  std::string why_not;
  if (!repo->check_patch_applies(p.patch, gitx::ApplyLocation::kWorkdir, &why_not)) {
    reject(h, p, "does not apply: " + why_not, attempt_sig, why_not, {{"guard", "apply"}, {"why", why_not}});
    return std::nullopt;
  }
  patch.checkpoint = checkpoint("applying a patch from " + p.fixer + " for " + h.check.id);
  try {
    repo->apply_patch(p.patch, gitx::ApplyLocation::kWorkdir);
  } catch (const Error& e) {
    undo(patch);
    reject(h, p, std::string("does not apply: ") + e.what(), attempt_sig, e.what(),
           {{"guard", "apply"}, {"why", e.what()}});
    return std::nullopt;
  }
  PHOENIX_FAULT("after-apply");
  return patch;
}

// VERIFYING: the failing tests alone, then the whole check, then every
// other green check, then tests that bite. `a` says what it came to.
void Engine::Impl::verify(Heal& h, const fixers::Proposal& p, const Patch& patch, const std::string& attempt_sig,
                          Applied& a) {
  const std::string& id = h.check.id;
  auto vstart = Clock::now();
  if (std::string still = still_fails_alone(h, p, a.again); !still.empty()) {
    undo(patch);
    h.last_diff = p.patch;
    a.outcome = "red on the failing tests alone: " + still;
    reject(h, p, a.outcome, attempt_sig, a.again.evidence, {{"why", a.outcome}, {"run", "selected"}});
    return;
  }
  state(id, State::kVerifying, {{"fixer", p.fixer}, {"run", "whole"}});
  a.again = measure(h.check);
  // What is left red after the fix is judged like any red (invariant 14):
  // only failures the change brought keep it from HEALED.
  bool passes = a.again.ok || (!a.again.interrupted && !judge_red(h.check, a.again).counts());
  a.verify_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - vstart).count();
  const std::string regression = passes ? another_turned_red(id) : "";
  if (a.again.interrupted) {
    undo(patch);
    throw Error("interrupted while verifying " + id, kExitInterrupted);
  }
  if (passes && regression.empty()) {
    a.healed = bites(h, p, patch, attempt_sig, a);
    return;
  }
  a.outcome = passes ? "regression: " + regression : "red: " + a.again.signal;
  undo(patch);
  h.last_diff = p.patch;
  reject(h, p, a.outcome, attempt_sig, a.again.evidence, {{"why", a.outcome}});
}

// The fix must not turn another green check red: "" when none did, else
// which one.
std::string Engine::Impl::another_turned_red(const std::string& id) {
  for (size_t k = 0; k < selected.size(); ++k) {
    if (selected[k].id == id || !green[k]) continue;
    checks::SenseResult other = measure(selected[k]);
    if (!other.ok && !other.interrupted && judge_red(selected[k], other).counts())
      return selected[k].id + " turned red (" + other.signal + ")";
  }
  return "";
}

// Green, and passing the other checks: true when the patch's tests bite
// (or it has none to ask); else it is undone and counted as a failed attempt
// (guard tests-bite): its tests pass without its code, they do not test
// the fix.
bool Engine::Impl::bites(Heal& h, const fixers::Proposal& p, const Patch& patch, const std::string& attempt_sig,
                         Applied& a) {
  std::string toothless;
  try {
    toothless = tests_do_not_bite(h, p, patch.checkpoint);
  } catch (const Error&) {
    undo(patch);
    throw;
  }
  if (toothless.empty()) return true;
  undo(patch);
  a.outcome = reject_by_guard(h, p, "tests-bite", toothless, attempt_sig);
  return false;
}

// VERIFYING, first on the failing tests alone (engine/failing_first.h),
// where they can be run alone and the proposal is not a revert of the
// commit the check named (Proposal::named_by_check): "" when they pass (or
// say nothing, or are not asked) and the whole check decides; else why the
// applied proposal is rejected without it (`out`: their run). They were
// judged new at detection (run flaky_reruns + 1 times), so one failing
// again is not run again.
std::string Engine::Impl::still_fails_alone(Heal& h, const fixers::Proposal& p, checks::SenseResult& out) {
  const std::optional<fixers::FailingTests>& t = h.failure.failing_first;
  if (!t) {
    explain("verifying the proposal of " + p.fixer + " with the whole check: " + h.failure.whole_why);
    return "";
  }
  if (p.named_by_check) {
    explain("verifying the proposal of " + p.fixer +
            " with the whole check: it reverts the commit the check named, before which the failing tests passed");
    return "";
  }
  state(h.check.id, State::kVerifying, {{"fixer", p.fixer}, {"run", "selected"}, {"tests", t->tests}});
  const checks::SenseResult r = measure(t->check);
  if (r.interrupted) throw Error("interrupted while verifying " + h.check.id, kExitInterrupted);
  const fixers::TestsAnswer answer = t->read(r);
  trace.append(trace::event::kVerifySelected, {{"check", h.check.id},
                                               {"fixer", p.fixer},
                                               {"tests", t->tests},
                                               {"argv", t->check.argv},
                                               {"answer", fixers::tests_answer_name(answer)},
                                               {"signal", r.signal},
                                               {"duration_ms", r.duration_ms}});
  explain("the failing tests alone (" + std::to_string(t->tests.size()) + ") after the proposal of " + p.fixer + ": " +
          fixers::tests_answer_name(answer) +
          (answer == fixers::TestsAnswer::kRed ? "; rejected without the whole check" : "; the whole check decides"));
  if (answer != fixers::TestsAnswer::kRed) return "";
  out = r;
  return r.signal.empty() ? "red" : r.signal;
}

// The guard tests-bite (engine/bite.h): "" when the applied patch adds or
// changes no test of a check that must bite, is tests only, or its tests
// fail with its code taken away (checkpoint `cp`'s code, the patch's
// tests); else why they do not bite.
std::string Engine::Impl::tests_do_not_bite(const Heal& h, const fixers::Proposal& p, const std::string& cp) {
  if (!opt.bite_guard) return "";
  BiteRequest req;
  req.base = cp;
  req.change = repo->snapshot_workdir("phoenix: the patch under verification", true, layout::state_prefixes());
  req.own = keep;
  req.default_on = opt.tests_must_bite;
  for (size_t k = 0; k < selected.size(); ++k)
    if (!green[k])
      req.red_before[selected[k].id] =
          selected[k].id == h.check.id ? h.failure.failing_tests : std::vector<std::string>{};
  BiteResult r = tests_bite(*repo, cfg, req, [this](const std::string& line) { explain(line); });
  if (r.verdict == Bite::kNoTests) return "";
  Json ev = r.to_json();
  ev["check"] = h.check.id;
  ev["fixer"] = p.fixer;
  trace.append(trace::event::kTestsBite, ev);
  if (r.verdict != Bite::kToothless) explain("tests bite: " + std::string(bite_name(r.verdict)) + ": " + r.why);
  return r.verdict == Bite::kToothless ? r.why : "";
}

}  // namespace phoenix::engine
