// What engine/'s cycle files share: `Engine::Impl`, one run of the inner
// cycle (engine/cycle.h says what it does), declared here and defined by
// concern, one file each:
//   cycle.cc           the run: the lock, DETECTED, the reference, verdicts,
//                      each red check's heal in turn, the end of the run;
//   cycle_heal.cc      one issue's heal: its budget, its stops, its failed
//                      attempts, HEALED, and the escalation's incident note;
//   cycle_propose.cc   PROPOSING: a fixer asked, an answer without a patch,
//                      the waits on a model, the guards;
//   cycle_verify.cc    APPLYING and VERIFYING: the patch applied, the
//                      failing tests alone, the whole check, the other
//                      checks, tests that bite;
//   cycle_rollback.cc  the repository's surgery: checkpoints, an undone
//                      patch, what a fixer wrote, the rollback, known-good.
// Not for use outside engine/; include only from those .cc files.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/cycle.h"
#include "engine/guards.h"
#include "engine/model_wait.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "util/text.h"

namespace phoenix::engine {

using Clock = std::chrono::steady_clock;

// The CLI a harness proposal ran: "harness claude: unreachable" -> "claude".
inline std::string program_of(const fixers::Proposal& p) {
  std::string prog = p.summary;
  if (util::starts_with(prog, "harness ")) prog = prog.substr(8);
  if (auto colon = prog.find(':'); colon != std::string::npos) prog = prog.substr(0, colon);
  return prog;
}

// Why it could not be used: the CLI's first error line, else the detail.
inline std::string cause_of(const fixers::Proposal& p) { return p.first_error.empty() ? p.detail : p.first_error; }

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

  // What the run says (cycle.cc): a state of a check, to the trace and the
  // caller; an explain line, to the caller when RunOptions.explain.
  long long elapsed() const;
  void state(const std::string& check, State st, util::Json detail = util::Json::object());
  void explain(const std::string& text);

  // The run (cycle.cc), in order.
  RunResult run();
  std::shared_ptr<util::FileLock> open_run();
  void find_reference();
  std::vector<checks::SenseResult> detect();
  checks::SenseResult measure(const checks::CheckSpec& c);
  Verdict judge_red(const checks::CheckSpec& c, const checks::SenseResult& r);
  bool blocked_by_dirty_tree(RunResult& result);
  int heal_each(const std::vector<checks::SenseResult>& first, RunResult& result);

  // One issue's heal (cycle_heal.cc) and its steps, in order.
  struct Heal;
  struct Applied;
  struct Patch;
  IssueOutcome heal(const checks::CheckSpec& check, const checks::SenseResult& red, RunResult& result);
  fixers::Failure describe_failure(const checks::CheckSpec& check, const checks::SenseResult& red);
  void set_budget(Heal& h);
  std::string stop_reason(const Heal& h) const;
  IssueOutcome give_up(Heal& h, const std::string& stop, RunResult& result);
  IssueOutcome dry_run_ends(Heal& h, const fixers::Proposal& p, const PatchFacts& facts);
  void healed(Heal& h, const fixers::Proposal& p, const PatchFacts& facts, const std::string& attempt_sig,
              const Applied& a);
  // A failed attempt, counted and said: the attempt list, what the next
  // fixer is told, the outcome sink, and REJECTED with `detail` (its why,
  // its guard, its run). `attempt_sig` is "" for a proposal without a patch.
  void reject(Heal& h, const fixers::Proposal& p, const std::string& outcome, const std::string& attempt_sig,
              const std::string& evidence, util::Json detail);
  // A patch a guard turned down: explained, kept as the last one tried, and
  // rejected as "rejected (<guard>): <why>", which it returns.
  std::string reject_by_guard(Heal& h, const fixers::Proposal& p, const std::string& guard, const std::string& why,
                              const std::string& attempt_sig);
  void escalate(const fixers::Failure& f, const std::vector<IncidentAttempt>& attempts, const std::string& last_diff,
                const std::string& why, RunResult& result);

  // PROPOSING (cycle_propose.cc).
  fixers::Proposal propose(Heal& h, fixers::Fixer& fixer, std::string& pre_propose);
  void trace_proposal(const Heal& h, const fixers::Proposal& p);
  bool no_patch(Heal& h, const fixers::Proposal& p, const std::string& head_before, const std::string& pre_propose,
                RunResult& result);
  bool own_failure(Heal& h, const fixers::Proposal& p);
  bool wait_for_model(Heal& h, const fixers::Proposal& p, RunResult& result);
  bool passes_guards(Heal& h, const fixers::Proposal& p, const PatchFacts& facts, const std::string& attempt_sig);

  // APPLYING and VERIFYING (cycle_verify.cc).
  Applied apply_and_verify(Heal& h, const fixers::Proposal& p, const PatchFacts& facts, const std::string& attempt_sig);
  std::optional<Patch> apply(Heal& h, const fixers::Proposal& p, const PatchFacts& facts,
                             const std::string& attempt_sig);
  void verify(Heal& h, const fixers::Proposal& p, const Patch& patch, const std::string& attempt_sig, Applied& a);
  std::string still_fails_alone(Heal& h, const fixers::Proposal& p, checks::SenseResult& out);
  std::string another_turned_red(const std::string& id);
  bool bites(Heal& h, const fixers::Proposal& p, const Patch& patch, const std::string& attempt_sig, Applied& a);
  std::string tests_do_not_bite(const Heal& h, const fixers::Proposal& p, const std::string& cp);

  // The repository's surgery (cycle_rollback.cc).
  std::string checkpoint(const std::string& why);
  void undo_patch(const std::string& checkpoint_commit, const std::string& head_before,
                  const std::vector<std::string>& files);
  void undo(const Patch& patch);
  bool undoes_change() const;
  void restore_after_intrusion(const std::string& head_before, const std::string& pre_propose);
  void roll_back(const std::string& incident, RunResult& result);
  void bless_known_good();
};

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

// A patch applied to the work tree: what undoes it byte for byte.
struct Engine::Impl::Patch {
  std::string checkpoint;   // the checkpoint commit before it
  std::string head_before;  // HEAD it was applied on
  std::vector<std::string> files;
};

}  // namespace phoenix::engine
