// The run of the inner cycle: the lock, DETECTED, the reference and the
// verdicts, each red check's heal in turn (cycle_heal.cc), the end of the
// run. Engine::Impl and the files of its other steps: engine/cycle_impl.h.
#include "engine/cycle.h"

#include <algorithm>

#include "engine/cycle_impl.h"
#include "engine/measure.h"
#include "setup/guard.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/format.h"
#include "util/lock.h"
#include "util/signals.h"

namespace phoenix::engine {

using util::Json;

Engine::Engine(std::string root, const config::Config& cfg, RunOptions options, CheckRunner& checks,
               std::vector<std::unique_ptr<fixers::Fixer>> fixers, trace::Trace& trace, EventFn on_event,
               OutcomeSink* outcomes)
    : impl_(std::make_unique<Impl>(std::move(root), cfg, std::move(options), checks, std::move(fixers), trace,
                                   std::move(on_event), outcomes)) {}
Engine::~Engine() = default;
RunResult Engine::run() { return impl_->run(); }

long long Engine::Impl::elapsed() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

void Engine::Impl::state(const std::string& check, State st, Json detail) {
  Json ev = {{"event", "state"}, {"check", check}, {"state", st}, {"elapsed_ms", elapsed()}};
  for (auto it = detail.begin(); it != detail.end(); ++it) ev[it.key()] = it.value();
  trace.append(trace::event::kState, ev);
  if (on_event) on_event(ev);
}

void Engine::Impl::explain(const std::string& text) {
  if (!opt.explain) return;
  if (on_event) on_event(Json{{"event", "explain"}, {"text", text}, {"elapsed_ms", elapsed()}});
}

RunResult Engine::Impl::run() {
  RunResult result;
  const std::shared_ptr<util::FileLock> lock = open_run();
  find_reference();
  const std::vector<checks::SenseResult> first = detect();
  result.detected = first;
  for (const Verdict& v : verdicts)
    if (v.red) result.verdicts.push_back(v);
  if (blocked_by_dirty_tree(result)) return result;

  const int exit_code = heal_each(first, result);
  bless_known_good();
  if (auto kg = repo->read_ref(known_good_ref)) result.known_good = *kg;
  result.exit_code = exit_code;
  trace.append(trace::event::kRunEnd, {{"exit_code", exit_code}});
  return result;
}

// The run's start: the repository lock (held until run() returns), the
// repository, HEAD, the tree's state, the selected checks, the trace's
// first line.
std::shared_ptr<util::FileLock> Engine::Impl::open_run() {
  layout::ensure_state_dir(root);
  std::shared_ptr<util::FileLock> lock =
      opt.lock ? opt.lock : std::make_shared<util::FileLock>(layout::lock_file(root), 0, "this repository");
  gitx::set_lock_wait_s(cfg.git_lock_wait_s);
  repo.emplace(gitx::Repo::open(root));
  head0 = repo->head_sha();
  if (head0.empty()) throw UsageError("the repository has no commits yet: commit something for Phoenix to measure");
  known_good_ref = opt.known_good_ref.empty() ? layout::known_good_ref(*repo) : opt.known_good_ref;
  // Untracked files do not block (git's own bisect, rebase and pull carry
  // on around them); modified or staged tracked files do (invariant 5).
  dirty0 = !repo->tracked_clean(keep);
  for (std::string& path : repo->untracked_files(keep)) keep.push_back(std::move(path));

  for (const auto& c : cfg.checks)
    if (opt.only.empty() || std::find(opt.only.begin(), opt.only.end(), c.id) != opt.only.end()) selected.push_back(c);
  if (selected.empty()) throw UsageError("no checks to run: phoenix.json has none (see 'phoenix init')");

  Json ids = Json::array();
  for (const auto& c : selected) ids.push_back(c.id);
  trace.append(trace::event::kRunStart,
               {{"head", head0}, {"dirty", dirty0}, {"dry_run", opt.dry_run}, {"root", root}, {"checks", ids}});
  explain("HEAD " + util::sha12(head0) + (dirty0 ? ", work tree has uncommitted changes" : ", work tree clean"));
  return lock;
}

// Invariant 5: no automatic change on top of someone's uncommitted work.
// True when a red check meets such a tree (no --allow-dirty, no dry run):
// the run ends RED after detection, its issues unhealed.
bool Engine::Impl::blocked_by_dirty_tree(RunResult& result) {
  const bool any_red = std::any_of(green.begin(), green.end(), [](bool g) { return !g; });
  if (!any_red || !dirty0 || opt.allow_dirty || opt.dry_run) return false;
  explain("guard dirty-tree: uncommitted changes and no --allow-dirty: detection only");
  for (size_t i = 0; i < selected.size(); ++i)
    if (!green[i]) {
      IssueOutcome o;
      o.check = selected[i].id;
      o.state = State::kRed;
      result.issues.push_back(o);
    }
  trace.append(trace::event::kRunEnd, {{"exit_code", kExitRed}, {"why", "dirty work tree"}});
  result.exit_code = kExitRed;
  if (on_event)
    on_event(Json{{"event", "blocked"},
                  {"text", "the work tree has uncommitted changes: commit or stash them, or pass --allow-dirty"}});
  return true;
}

// Each red check's heal, in the order of the checks; the run's exit code.
// The first escalation, a model that cannot be used or a signal ends them.
int Engine::Impl::heal_each(const std::vector<checks::SenseResult>& first, RunResult& result) {
  int exit_code = kExitOk;
  for (size_t i = 0; i < selected.size(); ++i) {
    if (green[i]) continue;
    IssueOutcome o = heal(selected[i], first[i], result);
    result.issues.push_back(o);
    if (o.state == State::kHealed) {
      green[i] = true;
    } else if (model_unusable(o.state)) {
      exit_code = std::max(exit_code, static_cast<int>(kExitRed));
      break;  // the model cannot be used: the next issue would find it the same
    } else if (o.state == State::kEscalated) {
      exit_code = kExitEscalated;
      break;  // the run stops at the first escalation
    } else {
      exit_code = std::max(exit_code, static_cast<int>(kExitRed));
    }
    if (util::interrupted_signal() != 0) {
      exit_code = kExitInterrupted;
      break;
    }
  }
  return exit_code;
}

checks::SenseResult Engine::Impl::measure(const checks::CheckSpec& c) {
  if (!opt.own_tree) return checks.run(c, root);
  const setup::Guard guard(root);
  checks::SenseResult r = checks.run(c, root);
  guard.restore("the check " + c.id, &trace);
  return r;
}

// DETECTED: one fresh measurement of every selected check (or the one a
// caller made of this HEAD on a clean tree: RunOptions::measured).
std::vector<checks::SenseResult> Engine::Impl::detect() {
  std::vector<checks::SenseResult> first;
  const bool reuse = !opt.measured_head.empty() && opt.measured_head == head0 && !dirty0;
  StoreUse store(*repo, root, cfg, opt.measured_by, !dirty0 && !no_cache(opt.no_cache), &trace);
  for (const auto& c : selected) {
    auto given = std::find_if(opt.measured.begin(), opt.measured.end(), [&](const auto& m) { return m.id == c.id; });
    checks::SenseResult r = reuse && given != opt.measured.end() ? *given : store.sense(c, [&] { return measure(c); });
    if (r.interrupted) throw Error("interrupted while measuring " + c.id, kExitInterrupted);
    first.push_back(r);
    green.push_back(r.ok);
    verdicts.push_back(first_verdict(c, r));
    const auto handed = std::find_if(opt.measured_verdicts.begin(), opt.measured_verdicts.end(),
                                     [&](const Verdict& v) { return v.check == c.id; });
    const bool taken = reuse && given != opt.measured.end() && handed != opt.measured_verdicts.end();
    if (!r.ok) {
      verdicts.back() = taken ? *handed : judge_red(c, r);
      store.judged(c, verdicts.back());
      if (!verdicts.back().counts()) {
        // Invariant 14: only the failures a change brings count. Nothing
        // here is healed, spent, signed or escalated.
        green.back() = true;
        let_by_pre_existing = let_by_pre_existing || !verdicts.back().pre_existing.empty();
        state(c.id, State::kGreen,
              {{"signal", r.signal}, {"duration_ms", r.duration_ms}, {"let_by", verdicts.back().let_by()}});
        continue;
      }
    }
    if (r.ok && !r.cached.empty())
      state(c.id, State::kGreen, {{"signal", r.signal}, {"duration_ms", r.duration_ms}, {"cached", r.cached}});
    else if (r.ok) state(c.id, State::kGreen, {{"signal", r.signal}, {"duration_ms", r.duration_ms}});
    else
      state(c.id, State::kDetected,
            {{"signal", r.signal},
             {"duration_ms", r.duration_ms},
             {"type", c.type},
             {"signature", util::sha12(verdicts.back().signature)}});
  }
  return first;
}

// The failing sets at the reference tree: the caller's, else the store's
// record of every selected check on known-good's tree.
void Engine::Impl::find_reference() {
  if (opt.reference) {
    reference = *opt.reference;
    reference_known = true;
    return;
  }
  const std::optional<std::string> kg = layout::known_good_commit(*repo, known_good_ref);
  if (!kg) return;
  try {
    const std::string tree = repo->tree_of(*kg);
    StoreUse store(*repo, root, cfg, opt.measured_by, false, nullptr);
    for (const auto& c : selected) {
      const std::optional<FailingSet> f = store.reference(c, tree);
      if (!f) return;  // one unknown: no reference at all
      if (!f->ok) reference[c.id] = *f;
    }
    reference_known = true;
  } catch (const Error&) { reference.clear(); }
}

// A red measurement judged (engine/verdict.h): its new failing tests run
// again, what fails at the reference is pre-existing, flaky tests go to
// the ledger.
Verdict Engine::Impl::judge_red(const checks::CheckSpec& c, const checks::SenseResult& r) {
  JudgeOptions o;
  o.reruns = opt.flaky_reruns >= 0 ? opt.flaky_reruns : cfg.flaky_reruns;
  if (reference_known) {
    const auto it = reference.find(c.id);
    o.reference = it != reference.end() ? it->second : FailingSet{true, {}, ""};
    o.reference_how = opt.reference_name;
  }
  o.run = [&](const checks::CheckSpec& spec) { return checks.run(spec, root); };
  Verdict v = judge(c, r, o);
  if (v.reruns > 0 || !v.pre_existing.empty()) {
    trace.append(trace::event::kVerdict, v.to_json());
    explain("verdict on " + c.id + ": " + std::to_string(v.new_failures.size()) + " new" +
            (v.let_by().empty() ? "" : "; let by: " + v.let_by()) +
            (v.reruns ? " (" + std::to_string(v.reruns) + " re-run" + (v.reruns > 1 ? "s" : "") + ")" : ""));
  }
  if (!v.flaky.empty() && opt.flake_ledger) {
    std::string tree;
    try {
      if (repo->tracked_clean(keep) && repo->untracked_files(keep).empty()) tree = repo->tree_of(repo->head_sha());
    } catch (const Error&) {}
    note_flakes(layout::journal_file(opt.journal_root.empty() ? root : opt.journal_root), v, tree,
                [&](const std::string& line) { explain(line); });
  }
  return v;
}

}  // namespace phoenix::engine
