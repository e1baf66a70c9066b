#include "engine/cycle.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "engine/bite.h"
#include "engine/failing_first.h"
#include "engine/guards.h"
#include "engine/incident.h"
#include "engine/measure.h"
#include "engine/model_wait.h"
#include "engine/signature.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "setup/guard.h"
#include "trace/events.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/lock.h"
#include "util/signals.h"
#include "util/sleep.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::engine {

using util::Json;
using Clock = std::chrono::steady_clock;

namespace {

// Why a heal stops when every fixer of the chain has had its say.
constexpr const char* kChainEnd = "no fixer has anything more to propose";

// The CLI a harness proposal ran: "harness claude: unreachable" -> "claude".
std::string program_of(const fixers::Proposal& p) {
  std::string prog = p.summary;
  if (util::starts_with(prog, "harness ")) prog = prog.substr(8);
  if (auto colon = prog.find(':'); colon != std::string::npos) prog = prog.substr(0, colon);
  return prog;
}

// Why it could not be used: the CLI's first error line, else the detail.
std::string cause_of(const fixers::Proposal& p) { return p.first_error.empty() ? p.detail : p.first_error; }

}  // namespace

const char* rollback_name(Rollback r) { return r == Rollback::kKnownGood ? "known-good" : "pre-run"; }

std::optional<Rollback> parse_rollback(std::string_view word) {
  for (Rollback r : {Rollback::kPreRun, Rollback::kKnownGood})
    if (word == rollback_name(r)) return r;
  return std::nullopt;
}

struct Engine::Impl {
  std::string root;
  const config::Config& cfg;
  RunOptions opt;
  CheckRunner& checks;
  std::vector<std::unique_ptr<fixers::Fixer>> fixers;
  trace::Trace& trace;
  EventFn on_event;
  OutcomeSink* outcomes;

  std::optional<gitx::Repo> repo;
  Clock::time_point start = Clock::now();
  std::string head0;    // HEAD when the run started
  bool dirty0 = false;  // changes to tracked files when the run started
  // What every reset keeps: Phoenix's state, incident notes, and the
  // untracked files the run found (the user's notes, a build product
  // nobody ignored), which survive every attempt and rollback byte for byte.
  std::vector<std::string> keep = layout::keep_prefixes();
  std::string pre_run;  // pre-run checkpoint commit (created before the first write)
  int session_retries = 0;
  int consecutive_failed = 0;
  std::string known_good_ref;  // this line of work's (RunOptions.known_good_ref)
  std::vector<checks::CheckSpec> selected;
  std::vector<bool> green;        // per selected check, last measurement (a red that does not count is green)
  std::vector<Verdict> verdicts;  // per selected check, its detection's verdict
  std::map<std::string, FailingSet> reference;  // failing sets at the reference tree
  bool reference_known = false;
  bool let_by_pre_existing = false;  // a check is green only because its failures were there before

  Impl(std::string r, const config::Config& c, RunOptions o, CheckRunner& ch,
       std::vector<std::unique_ptr<fixers::Fixer>> f, trace::Trace& t, EventFn e, OutcomeSink* out)
      : root(std::move(r)),
        cfg(c),
        opt(std::move(o)),
        checks(ch),
        fixers(std::move(f)),
        trace(t),
        on_event(std::move(e)),
        outcomes(out) {}

  long long elapsed() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  }

  void state(const std::string& check, State st, Json detail = Json::object()) {
    Json ev = {{"event", "state"}, {"check", check}, {"state", st}, {"elapsed_ms", elapsed()}};
    for (auto it = detail.begin(); it != detail.end(); ++it) ev[it.key()] = it.value();
    trace.append(trace::event::kState, ev);
    if (on_event) on_event(ev);
  }

  void explain(const std::string& text) {
    if (!opt.explain) return;
    if (on_event) on_event(Json{{"event", "explain"}, {"text", text}, {"elapsed_ms", elapsed()}});
  }

  // Invariant 1: a checkpoint commit of the whole work tree precedes every
  // write to it. The first one of the run is also the pre-run checkpoint.
  std::string checkpoint(const std::string& why) {
    PHOENIX_FAULT_IO("checkpoint-commit", repo->common_dir() + "/objects");
    std::string cp = repo->snapshot_workdir("phoenix: checkpoint before " + why, opt.author_name, opt.author_email,
                                            true, layout::state_prefixes());
    if (pre_run.empty()) {
      pre_run = cp;
      repo->write_ref(layout::pre_run_ref(*repo), cp, "phoenix: pre-run checkpoint");
    }
    repo->write_ref(layout::attempt_ref(*repo), cp, "phoenix: checkpoint before " + why);
    trace.append(trace::event::kCheckpoint, {{"commit", cp}, {"why", why}});
    PHOENIX_FAULT("after-checkpoint");
    return cp;
  }

  // Undo an applied patch byte-for-byte: on a clean tree, reset to the
  // commit it was applied on; on a tree with the user's own changes, only
  // the patch's paths go back to the checkpoint.
  void undo_patch(const std::string& checkpoint_commit, const std::string& head_before,
                  const std::vector<std::string>& files) {
    if (!dirty0) {
      repo->reset_hard(head_before, true, keep);
    } else {
      repo->restore_paths(checkpoint_commit, files);
    }
    trace.append(trace::event::kRestore, {{"to", checkpoint_commit}, {"files", files}});
  }

  checks::SenseResult measure(const checks::CheckSpec& c) {
    if (!opt.own_tree) return checks.run(c, root);
    const setup::Guard guard(root);
    checks::SenseResult r = checks.run(c, root);
    guard.restore("the check " + c.id, &trace);
    return r;
  }

  // RunOptions.task_start: whether the work tree (an applied patch
  // included) holds that commit's tree again, Phoenix's paths and the
  // untracked files the run found aside.
  bool undoes_change() const {
    if (opt.task_start.empty()) return false;
    for (const std::string& f : gitx::Repo::patch_files(repo->diff_workdir_patch(opt.task_start))) {
      bool kept = false;
      for (const std::string& k : keep) kept = kept || util::starts_with(f, k);
      if (!kept) return false;
    }
    return true;
  }

  // Something wrote into the user's repository while a fixer worked. What
  // it committed stays reachable under refs/phoenix/abandoned/; the work
  // tree returns to the state before the fixer ran.
  void restore_after_intrusion(const std::string& head_before, const std::string& pre_propose) {
    std::string head = repo->head_sha();
    if (head != head_before)
      repo->write_ref(std::string(layout::kAbandonedPrefix) + util::compact_utc(true) + "-intrusion", head,
                      "phoenix: written during a fixer run");
    if (!dirty0) {
      repo->reset_hard(head_before, true, keep);
    } else {
      if (head != head_before) repo->reset_hard(head_before, false, keep);
      std::vector<std::string> paths;
      for (const auto& st : repo->status()) {
        paths.push_back(st.path);
        if (!st.old_path.empty()) paths.push_back(st.old_path);
      }
      repo->restore_paths(pre_propose, paths);
    }
    trace.append(trace::event::kRestore,
                 {{"to", dirty0 ? pre_propose : head_before}, {"why", "the repository changed while a fixer ran"}});
  }

  RunResult run();
  std::vector<checks::SenseResult> detect();
  void find_reference();
  Verdict judge_red(const checks::CheckSpec& c, const checks::SenseResult& r);
  IssueOutcome heal(const checks::CheckSpec& check, const checks::SenseResult& red, RunResult& result);
  // The steps of heal(), in order.
  struct Heal;
  struct Applied;
  fixers::Failure describe_failure(const checks::CheckSpec& check, const checks::SenseResult& red);
  std::string stop_reason(const Heal& h) const;
  IssueOutcome give_up(Heal& h, const std::string& stop, RunResult& result);
  fixers::Proposal propose(Heal& h, fixers::Fixer& fixer, std::string& pre_propose);
  bool no_patch(Heal& h, const fixers::Proposal& p, const std::string& head_before, const std::string& pre_propose,
                RunResult& result);
  bool wait_for_model(Heal& h, const fixers::Proposal& p, RunResult& result);
  bool passes_guards(Heal& h, const fixers::Proposal& p, const PatchFacts& facts, const std::string& attempt_sig);
  Applied apply_and_verify(Heal& h, const fixers::Proposal& p, const PatchFacts& facts, const std::string& attempt_sig);
  std::string tests_do_not_bite(const Heal& h, const fixers::Proposal& p, const std::string& cp);
  std::string still_fails_alone(Heal& h, const fixers::Proposal& p, checks::SenseResult& out);
  std::string another_turned_red(const std::string& id);
  void healed(Heal& h, const fixers::Proposal& p, const PatchFacts& facts, const std::string& attempt_sig,
              const Applied& a);
  void record_failure(Heal& h, const std::string& fixer, const std::string& outcome, const std::string& attempt_sig,
                      const fixers::Proposal* p, const std::string& evidence);
  void escalate(const fixers::Failure& f, const std::vector<IncidentAttempt>& attempts, const std::string& last_diff,
                const std::string& why, RunResult& result);
};

Engine::Engine(std::string root, const config::Config& cfg, RunOptions options, CheckRunner& checks,
               std::vector<std::unique_ptr<fixers::Fixer>> fixers, trace::Trace& trace, EventFn on_event,
               OutcomeSink* outcomes)
    : impl_(std::make_unique<Impl>(std::move(root), cfg, std::move(options), checks, std::move(fixers), trace,
                                   std::move(on_event), outcomes)) {}
Engine::~Engine() = default;
RunResult Engine::run() { return impl_->run(); }

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

RunResult Engine::Impl::run() {
  RunResult result;
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

  trace.append(
      trace::event::kRunStart,
      {{"head", head0}, {"dirty", dirty0}, {"dry_run", opt.dry_run}, {"root", root}, {"checks", [&] {
                                                                                        Json a = Json::array();
                                                                                        for (auto& c : selected)
                                                                                          a.push_back(c.id);
                                                                                        return a;
                                                                                      }()}});
  explain("HEAD " + util::sha12(head0) + (dirty0 ? ", work tree has uncommitted changes" : ", work tree clean"));

  find_reference();
  const std::vector<checks::SenseResult> first = detect();
  result.detected = first;
  for (const Verdict& v : verdicts)
    if (v.red) result.verdicts.push_back(v);

  bool any_red = std::any_of(green.begin(), green.end(), [](bool g) { return !g; });
  if (any_red && dirty0 && !opt.allow_dirty && !opt.dry_run) {
    // Invariant 5: no automatic change on top of someone's uncommitted work.
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
    return result;
  }

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

  // Only a green measurement of every check at a clean HEAD blesses it.
  bool all_green = std::all_of(green.begin(), green.end(), [](bool g) { return g; });
  if (all_green && !let_by_pre_existing && !opt.dry_run && opt.bless_known_good && repo->tracked_clean(keep) &&
      (opt.only.empty() || selected.size() == cfg.checks.size())) {
    std::string head = repo->head_sha();
    repo->write_ref(known_good_ref, head, "phoenix: every check green");
    trace.append(trace::event::kKnownGood, {{"commit", head}});
    explain("known-good := " + util::sha12(head) + " (every check measured green, tree clean)");
  }
  if (auto kg = repo->read_ref(known_good_ref)) result.known_good = *kg;
  result.exit_code = exit_code;
  trace.append(trace::event::kRunEnd, {{"exit_code", exit_code}});
  return result;
}

// One issue's heal: the failure, the budget, and what was tried so far.
struct Engine::Impl::Heal {
  const checks::CheckSpec& check;
  const checks::SenseResult& red;
  IssueOutcome out;
  fixers::Failure failure;
  int budget = 3;
  std::vector<IncidentAttempt> attempts;
  std::vector<fixers::EarlierAttempt> earlier;
  std::set<std::string> tried;  // attempt signatures
  std::string last_diff;
  size_t fixer_index = 0;
  ModelWait model_wait;  // waits on a rate-limited or unreachable model, in a row
  // The harness's proposal that said its credit is gone, when one did: the
  // chain that runs out after it ends as MODEL_UNUSABLE, not escalated.
  std::optional<fixers::Proposal> quota;
};

// What a proposal that came back with a patch turned out to be.
struct Engine::Impl::Applied {
  bool healed = false;
  std::string outcome;        // why not, when not healed
  checks::SenseResult again;  // the fresh measurement
  long long verify_ms = 0;
};

IssueOutcome Engine::Impl::heal(const checks::CheckSpec& check, const checks::SenseResult& red, RunResult& result) {
  Heal h{check, red, {}, describe_failure(check, red), 3, {}, {}, {}, {}, 0, {}, std::nullopt};
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

  // health: a failing health check is rolled back at once, never patched.
  if (check.type == "health") {
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
    if (opt.dry_run) {
      // Invariant 7: the dry run ends here, with nothing written.
      state(check.id, State::kProposed, {{"fixer", p.fixer}, {"files", facts.files}, {"summary", p.summary}});
      h.out.state = State::kProposed;
      h.out.fixer = p.fixer;
      h.out.patch = p.patch;
      return h.out;
    }
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

void Engine::Impl::record_failure(Heal& h, const std::string& fixer, const std::string& outcome,
                                  const std::string& attempt_sig, const fixers::Proposal* p,
                                  const std::string& evidence) {
  ++h.out.attempts;
  ++session_retries;
  ++consecutive_failed;
  h.attempts.push_back({h.out.attempts, fixer, outcome, attempt_sig});
  h.earlier.push_back({fixer, p ? p->patch : "", p ? p->files : std::vector<std::string>{}, outcome, evidence});
  if (p && outcomes) outcomes->failed(h.failure, *p, outcome);
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
  trace.append(trace::event::kProposal, {{"check", h.check.id},
                                         {"fixer", p.fixer},
                                         {"status", fixers::status_name(p.status)},
                                         {"files", p.files},
                                         {"summary", p.summary},
                                         {"detail", p.detail},
                                         {"model_calls", p.model_calls ? Json(*p.model_calls) : Json(nullptr)},
                                         {"cost_usd", p.cost_usd ? Json(*p.cost_usd) : Json(nullptr)},
                                         {"check_runs", p.check_runs},
                                         {"selected_runs", p.selected_runs},
                                         {"duration_ms", p.duration_ms}});
  // A fixer that measured (bisect) says how: which runs asked the failing
  // tests alone and which the whole check.
  if (p.status == fixers::Status::kProposed && p.check_runs > 0) explain("fixer " + p.fixer + ": " + p.detail);
  return p;
}

// A proposal without a patch: next fixer, a wait, or a failed attempt.
// False when the issue's heal ends here (waited out, or Phoenix's own failure
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
      record_failure(h, p.fixer, std::string(fixers::status_name(p.status)) + (p.detail.empty() ? "" : ": " + p.detail),
                     "", nullptr, p.log);
      state(id, State::kRejected, {{"fixer", p.fixer}, {"why", fixers::status_name(p.status)}});
      return true;
    case fixers::Status::kAborted:
      // The real repository changed while the fixer worked (invariant 12):
      // the attempt is void, and the repository goes back to how it was.
      restore_after_intrusion(head_before, pre_propose);
      record_failure(h, p.fixer, "aborted: " + p.detail, "", nullptr, p.log);
      state(id, State::kRejected, {{"fixer", p.fixer}, {"why", "aborted: " + p.detail}});
      return true;
    case fixers::Status::kOwnFailure:
      // Phoenix's own failure (its tree, its setup), not the code's: no
      // attempt, no strike, no escalation. The next fixer may still heal;
      // with none left the issue ends red, saying whose failure it was.
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
    case fixers::Status::kProposed: break;
  }
  return true;
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
  if (p.fixer != "journal") h.tried.insert(attempt_sig);
  GuardVerdict v = check_patch(facts, h.check, cfg, root);
  if (v.ok) return true;
  explain("guard " + v.guard + " rejects the proposal of " + p.fixer + ": " + v.reason);
  record_failure(h, p.fixer, "rejected (" + v.guard + "): " + v.reason, attempt_sig, &p, "");
  h.last_diff = p.patch;
  state(h.check.id, State::kRejected, {{"fixer", p.fixer}, {"guard", v.guard}, {"why", v.reason}});
  return false;
}

// APPLYING, then VERIFYING: a fresh run of the check that found the problem
// decides, and no other green check may turn red. Anything short of that
// is undone byte for byte.
Engine::Impl::Applied Engine::Impl::apply_and_verify(Heal& h, const fixers::Proposal& p, const PatchFacts& facts,
                                                     const std::string& attempt_sig) {
  const std::string& id = h.check.id;
  Applied a;
  state(id, State::kApplying, {{"fixer", p.fixer}, {"files", facts.files}, {"summary", p.summary}});
  const std::string head_before = repo->head_sha();
  std::string why_not;
  if (!repo->check_patch_applies(p.patch, gitx::ApplyLocation::kWorkdir, &why_not)) {
    record_failure(h, p.fixer, "does not apply: " + why_not, attempt_sig, &p, why_not);
    state(id, State::kRejected, {{"fixer", p.fixer}, {"guard", "apply"}, {"why", why_not}});
    return a;
  }
  const std::string cp = checkpoint("applying a patch from " + p.fixer + " for " + id);
  try {
    repo->apply_patch(p.patch, gitx::ApplyLocation::kWorkdir);
  } catch (const Error& e) {
    undo_patch(cp, head_before, facts.files);
    record_failure(h, p.fixer, std::string("does not apply: ") + e.what(), attempt_sig, &p, e.what());
    state(id, State::kRejected, {{"fixer", p.fixer}, {"guard", "apply"}, {"why", e.what()}});
    return a;
  }
  PHOENIX_FAULT("after-apply");
  if (undoes_change()) {
    // The tree is the task's start again: a rollback of the attempt, not a
    // fix of it. Counted as a failed attempt, never verified or learnt.
    const std::string why = "it undoes the change under way (the tree is as the task started: a rollback, not a fix)";
    undo_patch(cp, head_before, facts.files);
    h.last_diff = p.patch;
    h.out.undid_change = true;
    record_failure(h, p.fixer, "rejected (undoes-change): " + why, attempt_sig, &p, "");
    state(id, State::kRejected, {{"fixer", p.fixer}, {"guard", "undoes-change"}, {"why", why}});
    explain("guard undoes-change rejects the proposal of " + p.fixer + ": " + why);
    return a;
  }

  auto vstart = Clock::now();
  if (std::string still = still_fails_alone(h, p, a.again); !still.empty()) {
    undo_patch(cp, head_before, facts.files);
    h.last_diff = p.patch;
    a.outcome = "red on the failing tests alone: " + still;
    record_failure(h, p.fixer, a.outcome, attempt_sig, &p, a.again.evidence);
    state(id, State::kRejected, {{"fixer", p.fixer}, {"why", a.outcome}, {"run", "selected"}});
    return a;
  }
  state(id, State::kVerifying, {{"fixer", p.fixer}, {"run", "whole"}});
  a.again = measure(h.check);
  // What is left red after the fix is judged like any red (invariant 14):
  // only failures the change brought keep it from HEALED.
  bool passes = a.again.ok || (!a.again.interrupted && !judge_red(h.check, a.again).counts());
  a.verify_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - vstart).count();
  const std::string regression = passes ? another_turned_red(id) : "";
  if (a.again.interrupted) {
    undo_patch(cp, head_before, facts.files);
    throw Error("interrupted while verifying " + id, kExitInterrupted);
  }
  if (passes && regression.empty()) {
    std::string toothless;
    try {
      toothless = tests_do_not_bite(h, p, cp);
    } catch (const Error&) {
      undo_patch(cp, head_before, facts.files);
      throw;
    }
    if (!toothless.empty()) {
      // Green, but the patch's tests pass without its code: they do not
      // test the fix. Undone, counted as a failed attempt.
      undo_patch(cp, head_before, facts.files);
      h.last_diff = p.patch;
      a.outcome = "rejected (tests-bite): " + toothless;
      record_failure(h, p.fixer, a.outcome, attempt_sig, &p, "");
      state(id, State::kRejected, {{"fixer", p.fixer}, {"guard", "tests-bite"}, {"why", toothless}});
      explain("guard tests-bite rejects the proposal of " + p.fixer + ": " + toothless);
      return a;
    }
    a.healed = true;
    return a;
  }
  a.outcome = passes ? "regression: " + regression : "red: " + a.again.signal;
  undo_patch(cp, head_before, facts.files);
  h.last_diff = p.patch;
  record_failure(h, p.fixer, a.outcome, attempt_sig, &p, a.again.evidence);
  state(id, State::kRejected, {{"fixer", p.fixer}, {"why", a.outcome}});
  return a;
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

// VERIFYING, first on the failing tests alone (engine/failing_first.h),
// where they can be run alone: "" when they pass (or say nothing) and the
// whole check decides; else why the applied proposal is rejected without
// it (`out`: their run). They were judged new at detection (run
// flaky_reruns + 1 times), so one failing again is not run again.
std::string Engine::Impl::still_fails_alone(Heal& h, const fixers::Proposal& p, checks::SenseResult& out) {
  const std::optional<fixers::FailingTests>& t = h.failure.failing_first;
  if (!t) {
    explain("verifying the proposal of " + p.fixer + " with the whole check: " + h.failure.whole_why);
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
  req.change = repo->snapshot_workdir("phoenix: the patch under verification", opt.author_name, opt.author_email, true,
                                      layout::state_prefixes());
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
    h.out.fix_commit = repo->commit_tracked_and(facts.files, msg, opt.author_name, opt.author_email);
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
  // Invariant 10: the note exists (fsynced) before the rollback starts.
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

  // Rollback (invariant 11): keep what is abandoned under a ref, then go
  // back to the pre-run state, or to known-good when asked.
  std::string head = repo->head_sha();
  std::string target = head0;
  if (opt.rollback == Rollback::kKnownGood) {
    if (auto kg = layout::known_good_commit(*repo, known_good_ref)) target = *kg;
  }
  std::string stamp = util::compact_utc(true);
  if (head != target)
    repo->write_ref(std::string(layout::kAbandonedPrefix) + stamp, head, "phoenix: abandoned by rollback");
  PHOENIX_FAULT("mid-rollback");
  if (dirty0 && opt.rollback == Rollback::kKnownGood) {
    // The user's uncommitted work is kept too, as a commit under the same prefix.
    std::string wip = repo->snapshot_workdir("phoenix: uncommitted work before rollback", opt.author_name,
                                             opt.author_email, true, layout::state_prefixes());
    repo->write_ref(std::string(layout::kAbandonedPrefix) + stamp + "-worktree", wip, "phoenix: uncommitted work");
  }
  std::string state_line;
  if (head != target || opt.rollback == Rollback::kKnownGood) {
    repo->reset_hard(target, !dirty0, keep);
    state_line = "rolled back to " + target;
  } else {
    state_line = "rolled back to " + target + " (the pre-run state; every attempt was already undone)";
  }
  set_incident_state(path, state_line);
  result.rolled_back_to = target;
  trace.append(trace::event::kRollback, {{"to", target}, {"abandoned", head}});
  PHOENIX_FAULT_IO("escalated-flag", layout::escalated_flag(root));
  util::write_file_atomic(layout::escalated_flag(root), path + "\n");
}

}  // namespace phoenix::engine
