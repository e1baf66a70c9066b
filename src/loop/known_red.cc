// Loop: verdicts per test, the night's known red, what a task also fixed
// (loop/internal.h; engine/verdict.h; docs/loop.md "Known red, flaky tests").
#include "loop/internal.h"

#include <algorithm>

#include "checks/check.h"
#include "setup/guard.h"
#include "trace/events.h"
#include "util/text.h"

namespace phoenix::loop::internal {

using engine::FailingSet;

std::optional<std::map<std::string, FailingSet>> Loop::reference_now() const {
  std::lock_guard<std::mutex> g(known_mu);
  return known_red;
}

// A measurement of `c` in the tree `t` (git tree `tree_id`, "" when it has
// uncommitted work) judged against the known red: a red one's new failures
// run again (flaky ones go to the ledger); a green one may have fixed a
// known red test. Before the baseline is known every failure is new.
engine::Verdict Loop::judge(const checks::CheckSpec& c, const checks::SenseResult& r, const Tree& t,
                            const std::string& tree_id) {
  engine::JudgeOptions o;
  o.reruns = cfg.flaky_reruns;
  const auto ref = reference_now();
  if (ref) {
    const auto it = ref->find(c.id);
    o.reference = it != ref->end() ? it->second : FailingSet{true, {}, ""};
    o.reference_how = "known red";
  }
  o.run = [&](const checks::CheckSpec& spec) {
    const setup::Guard guard(t.path, {"refs/heads/" + branch});  // confined, as every check in the tree
    checks::SenseResult again = checks::sense(spec, t.path);
    guard.restore("the check " + spec.id, &trace);
    return again;
  };
  engine::Verdict v = r.ok ? engine::first_verdict(c, r) : engine::judge(c, r, o);
  if (r.ok && o.reference && !o.reference->ok) {
    // Green now: every known red test of the check passes.
    v.reference = o.reference_how;
    v.fixed = o.reference->named() ? o.reference->tests : std::vector<std::string>{c.id};
  }
  engine::note_flakes(layout::journal_file(root), v, tree_id,
                      [&](const std::string& line) { say("warning: " + line); });
  if (v.red || !v.fixed.empty()) {
    Json ev = v.to_json();
    ev["iteration"] = iteration.load();
    ev["tree"] = t.name;
    trace.append(trace::event::kLoopVerdict, ev);
  }
  return v;
}

// The night's known red from a measurement judged without a reference (the
// baseline's, after its heal): every failure left, by check.
void Loop::set_known_red(const Measure& m, const std::string& why) {
  std::map<std::string, FailingSet> red;
  for (const engine::Verdict& v : m.verdicts)
    if (v.counts())
      red[v.check] = FailingSet{false, v.whole ? std::vector<std::string>{} : v.new_failures,
                                v.whole ? v.whole_signature : std::string()};
  {
    std::lock_guard<std::mutex> g(known_mu);
    known_red = red;
  }
  if (!red.empty()) {
    trace.append(trace::event::kLoopKnownRed, {{"checks", known_red_json()}, {"why", why}});
    say("known red for the night (" + why + "): " + util::trim(known_red_text()));
  }
  state.update([&](Json& s) { s["known_red"] = known_red_json(); });
  write_run_file();
}

// A task landed with `m`: the known red tests it made pass are credited
// ("also fixed") and leave the known red.
void Loop::credit_fixed(const Measure& m, const TaskRef& task) {
  bool changed = false;
  for (const engine::Verdict& v : m.verdicts) {
    if (v.fixed.empty()) continue;
    {
      std::lock_guard<std::mutex> g(known_mu);
      if (!known_red || !known_red->count(v.check)) continue;
      FailingSet& f = (*known_red)[v.check];
      if (!v.red || !f.named()) {
        known_red->erase(v.check);
      } else {
        std::vector<std::string> left;
        for (const auto& t : f.tests)
          if (std::find(v.fixed.begin(), v.fixed.end(), t) == v.fixed.end()) left.push_back(t);
        f.tests = left;
        if (left.empty()) known_red->erase(v.check);
      }
    }
    changed = true;
    trace.append(trace::event::kLoopAlsoFixed,
                 {{"iteration", iteration.load()}, {"task", task.json}, {"check", v.check}, {"tests", v.fixed}});
    say("also fixed by " + task.id() + ": " + v.check + ": " + util::join_argv(v.fixed));
  }
  if (!changed) return;
  state.update([&](Json& s) { s["known_red"] = known_red_json(); });
  write_run_file();
}

// loop-state.json's and the run file's "known_red": {check: {"tests": [...],
// "whole": bool}}; {} when nothing is known red.
Json Loop::known_red_json() const {
  std::lock_guard<std::mutex> g(known_mu);
  Json j = Json::object();
  if (!known_red) return j;
  for (const auto& [check, f] : *known_red)
    j[check] = {{"tests", f.tests}, {"whole", !f.named()}, {"signature", f.signature}};
  return j;
}

// The prompt's list of what the agent need not fix.
std::string Loop::known_red_text() const {
  std::lock_guard<std::mutex> g(known_mu);
  std::string out;
  if (known_red)
    for (const auto& [check, f] : *known_red) {
      if (!f.named()) out += "- " + check + " (the whole check: it failed the same way before the night began)\n";
      for (const auto& t : f.tests) out += "- " + check + ": " + t + "\n";
    }
  return out;
}

// --resume: the known red the earlier run had come to.
void Loop::restore_known_red(const Json& run) {
  if (!run.is_object() || !run.contains("known_red") || !run["known_red"].is_object()) return;
  std::map<std::string, FailingSet> red;
  for (auto it = run["known_red"].begin(); it != run["known_red"].end(); ++it) {
    FailingSet f;
    f.tests = it.value().value("tests", std::vector<std::string>{});
    f.signature = it.value().value("signature", "");
    red[it.key()] = f;
  }
  std::lock_guard<std::mutex> g(known_mu);
  known_red = red;
}

// The "Last failure" of the next prompt: each red check that counts, its
// signal, the failing tests the change brought and what was let by, and
// the end of its evidence (at most `max_evidence` bytes each), as the heal
// prompt shows them.
std::string Loop::failure_text(const Measure& m, size_t max_evidence) {
  std::string out;
  for (const auto& r : m.results) {
    if (r.ok || std::find(m.red.begin(), m.red.end(), r.id) == m.red.end()) continue;
    out += "\n  " + r.id + ": " + r.signal;
    const auto v =
        std::find_if(m.verdicts.begin(), m.verdicts.end(), [&](const engine::Verdict& x) { return x.check == r.id; });
    if (v != m.verdicts.end() && !v->whole && !v->new_failures.empty()) {
      out += "\n  failing tests:";
      for (const auto& t : v->new_failures) out += "\n  - " + t;
    }
    if (v != m.verdicts.end() && !v->let_by().empty()) out += "\n  not yours (let by): " + v->let_by();
    const std::string& ev = r.evidence.empty() ? r.output : r.evidence;
    std::string tail(util::utf8_tail(ev, max_evidence));
    if (tail.size() < ev.size()) tail = "... (the end of its output)\n" + tail;
    if (!util::trim(tail).empty()) {
      while (!tail.empty() && tail.back() == '\n') tail.pop_back();
      out += "\n  evidence:\n  ````text\n" + tail + "\n  ````";
    }
  }
  return out;
}

}  // namespace phoenix::loop::internal
