// Loop: the checks measured in a tree (loop/internal.h).
#include "loop/internal.h"

#include "setup/guard.h"

#include <algorithm>

#include "checks/check.h"
#include "engine/incident.h"
#include "engine/measure.h"
#include "engine/signature.h"
#include "setup/setup.h"
#include "trace/events.h"
#include "util/text.h"

namespace phoenix::loop::internal {

// --- checks ----------------------------------------------------------------

// The worktree holds tracked files only: phoenix.json's setup steps give
// it the project's environment, again only when their inputs changed.
// A failed setup is its own signal, never a red check of the agent's.
setup::Result Loop::prepare_environment(const Tree& t) {
  setup::Result su = setup::ensure(cfg.setup, t.path, layout::setup_stamp(*t.repo, t.name), {},
                                   [&](const config::SetupStep& step) { say("setup: " + util::join_argv(step.run)); });
  if (su.ran)
    trace.append(
        trace::event::kLoopSetup,
        {{"iteration", iteration.load()}, {"ok", su.ok}, {"signal", su.signal}, {"duration_ms", su.duration_ms}});
  return su;
}

Measure Loop::measure() { return measure(main_tree()); }

Measure Loop::measure(const Tree& t) {
  Measure m;
  setup::Result su = prepare_environment(t);
  if (su.interrupted) {
    m.interrupted = true;
    m.green = false;
    return m;
  }
  if (!su.ok) {
    m.green = false;
    m.setup_failed = su.signal + (su.evidence.empty() ? "" : "\n" + util::trim(su.evidence));
    return m;
  }
  const config::Config& tc = t.cfg ? *t.cfg : checks_now();
  engine::StoreUse store(*t.repo, t.path, tc, branch.substr(branch.rfind('/') + 1), !engine::no_cache(opt.no_cache),
                         &trace);
  for (const auto& c : tc.checks) {
    // Confined to the tree: what a check writes elsewhere is kept out and said (setup/guard.h).
    checks::SenseResult r = store.sense(c, [&] {
      const setup::Guard guard(t.path, {"refs/heads/" + branch});
      checks::SenseResult fresh = checks::sense(c, t.path);
      guard.restore("the check " + c.id, &trace);
      return fresh;
    });
    if (r.interrupted) m.interrupted = true;
    // Only the failures the task brought count (invariant 14): a red
    // check's failing tests are judged against the known red, and run again.
    bool counts = !r.ok;
    if (!r.interrupted && !ignored.count(c.id)) {
      engine::Verdict v = judge(c, r, t, store.tree());
      store.judged(c, v);
      counts = v.counts();
      if (v.red || !v.fixed.empty()) m.verdicts.push_back(std::move(v));
    }
    if (counts && !ignored.count(c.id)) {
      m.green = false;
      m.red.push_back(c.id);
    }
    m.results.push_back(r);
  }
  Json a = Json::array();
  for (const auto& r : m.results) a.push_back({{"id", r.id}, {"ok", r.ok}, {"signal", r.signal}});
  trace.append(trace::event::kLoopMeasure,
               {{"iteration", iteration.load()}, {"head", t.repo->head_sha()}, {"tree", t.name}, {"checks", a}});
  return m;
}

void Loop::bless() { repo->write_ref(kg_ref, repo->head_sha(), "phoenix-loop: every check green"); }

// What a red measurement says, for the task's book and its note.
RedFacts Loop::red_facts(const Measure& m) const { return red_facts(m, checks_now()); }

RedFacts Loop::red_facts(const Measure& m, const config::Config& tc) {
  RedFacts f;
  f.red = m.red;
  for (const auto& r : m.results) {
    if (r.ok || std::find(m.red.begin(), m.red.end(), r.id) == m.red.end()) continue;
    const checks::CheckSpec* spec = tc.find(r.id);
    f.check = r.id;
    f.failure_type = spec ? spec->type : "unit";
    f.description = spec ? engine::describe_check(*spec) : r.id;
    f.signal = r.signal;
    f.evidence = r.evidence.empty() ? r.output : r.evidence;
    f.signature = engine::issue_signature(r.id, r.output);
    for (const auto& v : m.verdicts)
      if (v.check == r.id && !v.signature.empty()) {
        // What the task brought: a flaky or known red test beside it never
        // makes the same failure look like another, or another like it.
        f.signature = v.signature;
        if (!v.whole) f.new_tests = v.new_failures;
      }
    for (const auto& a : r.artifacts) f.artifacts.emplace_back(a.name, a.bytes);
    break;
  }
  return f;
}

}  // namespace phoenix::loop::internal
