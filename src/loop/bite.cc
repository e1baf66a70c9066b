// Loop: tests that bite: a task's new tests measured without its code
// (engine/bite.h; loop/internal.h).
#include "loop/internal.h"

#include "engine/bite.h"
#include "engine/incident.h"
#include "trace/events.h"
#include "util/format.h"

namespace phoenix::loop::internal {

// The task's change in tree `t` since `base`, as a snapshot commit (no ref
// moves), its tests measured without its code. "" when they bite or the
// rule does not apply (no tests, tests only, or tests_must_bite false);
// else why not, in words. Traced as loop.tests_bite; an exempt change is
// said on stderr.
std::string Loop::tests_bite_why(const Tree& t, const std::string& base, const TaskRef& task) {
  engine::BiteRequest req;
  req.base = base;
  req.change = t.repo->snapshot_workdir("phoenix-loop: the change under way", true, layout::state_prefixes());
  req.own = own_paths();
  req.default_on = true;
  req.skip = ignored;
  // The known red fails without the task's code too: never its bite.
  if (const auto ref = reference_now())
    for (const auto& [id, f] : *ref) req.red_before[id] = f.tests;
  if (req.change.empty() || t.repo->changed_paths(base, req.change).empty()) return "";
  engine::BiteResult r;
  try {
    r = engine::tests_bite(*t.repo, cfg, req, say);
  } catch (const Error&) {
    return "";  // interrupted: the caller sees the signal
  }
  if (r.verdict == engine::Bite::kNoTests) return "";
  Json ev = r.to_json();
  ev["iteration"] = iteration.load();
  ev["task"] = task.json;
  ev["tree"] = t.name;
  ev["scratch"] = r.tree;
  trace.append(trace::event::kLoopTestsBite, ev);
  switch (r.verdict) {
    case engine::Bite::kExempt: say("tests bite: exempt: " + r.why); return "";
    case engine::Bite::kBites: say("tests bite: " + r.why); return "";
    case engine::Bite::kUnmeasured: say("tests bite: not measured: " + r.why); return "";
    case engine::Bite::kToothless: say("tests bite: refused: " + r.why); return r.why;
    case engine::Bite::kNoTests: break;
  }
  return "";
}

// What a change whose tests do not bite leaves in the task's book: an
// attempt like a red one, signed by its test files.
RedFacts Loop::toothless_facts(const std::string& why) const {
  RedFacts f;
  f.check = "tests-bite";
  f.failure_type = "unit";
  for (const auto& c : cfg.checks)
    if (engine::must_bite(c, true)) {
      f.failure_type = c.type;
      f.description = engine::describe_check(c);
      break;
    }
  f.signal = "tests pass without the change";
  f.evidence = why;
  f.signature = "tests-bite\n" + why;
  return f;
}

// Every check green, but the task's new tests pass without its code: not
// done. The attempt is kept under its ref and counted like a red one (no
// heal: a heal may not write tests); the worktree goes back to the task's
// start and the next iteration is told why ("your tests pass without your
// change: ...").
Loop::Ending Loop::toothless_attempt(const TaskRef& t, const std::string& why) {
  return refused_attempt(t, toothless_facts(why),
                         "your tests pass without your change: " + why +
                             "\n  a test that cannot fail does not show the task is done: write one that fails on "
                             "the code as it was and passes with your change",
                         "phoenix-loop: tests that do not bite", {{"tests_bite", false}});
}

// An attempt the loop refuses whatever the checks say (its tests do not
// bite; the agent wrote outside its tree): kept under its ref like a red
// one, counted against the task's budget and the session cap, the worktree
// put back to the task's start, and `told` shown to the next iteration.
Loop::Ending Loop::refused_attempt(const TaskRef& t, const RedFacts& facts, const std::string& told,
                                   const std::string& ref_message, const Json& extra) {
  last_failure = told;
  const Task& self = t.task;
  TaskRecord& rec = book.of(self);
  const std::string attempt = repo->is_clean(own_paths()) ? repo->head_sha()
                                                          : repo->commit_all("phoenix-loop: attempt: " + t.title, true,
                                                                             layout::state_prefixes());
  const std::string ref = attempt_ref(wt_name, self.id(), ++rec.runs);
  repo->write_ref(ref, attempt, ref_message);
  Verdict v = book.red_iteration(self, facts, ref, repo->diff_patch(task_before, attempt));
  ++session_retries;
  no_progress = 0;
  Json ev{{"iteration", iteration.load()},
          {"task", t.json},
          {"ref", ref},
          {"commit", attempt},
          {"signature", util::sha12(facts.signature)},
          {"red", Json::array()},
          {"attempts", rec.attempts},
          {"budget", rec.budget},
          {"verdict", verdict_name(v)}};
  for (const auto& [k, val] : extra.items()) ev[k] = val;
  trace.append(trace::event::kLoopAttempt, ev);
  task_state(self.id(), facts);
  repo->reset_hard(task_before, true, own_paths());
  trace.append(trace::event::kLoopAttemptFailed,
               {{"iteration", iteration.load()}, {"task", t.json}, {"attempts", rec.attempts}, {"why", last_failure}});
  if (v != Verdict::kGoOn) return give_up_task(t, verdict_why(v, rec), false);
  if (session_retries >= cfg.session_cap) return give_up_task(t, session_cap_why(), true);
  return std::nullopt;
}

}  // namespace phoenix::loop::internal
