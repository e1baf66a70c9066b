// The inner self-heal cycle (its states: engine/state.h):
//
//   DETECTED -> PROPOSING -> APPLYING -> VERIFYING -> HEALED
//                  ^   |REJECTED            | red
//                  +---+--------------------+   (budget left)
//   budget spent -> ESCALATED: incident (fsynced) -> rollback -> flag file
//
// Fixers only propose. The engine guards every proposal, checkpoints before
// any write, applies, and decides HEALED only from a fresh re-run of the
// check that found the problem. Every transition goes to the trace.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checks/check.h"
#include "config/config.h"
#include "engine/incident.h"
#include "engine/state.h"
#include "engine/verdict.h"
#include "fixers/fixer.h"
#include "trace/trace.h"
#include "util/json.h"
#include "util/lock.h"

namespace phoenix::engine {

// Runs checks; the real one calls checks::sense(), tests may count calls.
class CheckRunner {
 public:
  virtual ~CheckRunner() = default;
  virtual checks::SenseResult run(const checks::CheckSpec& spec, const std::string& root) = 0;
};

class SenseRunner : public CheckRunner {
 public:
  checks::SenseResult run(const checks::CheckSpec& spec, const std::string& root) override {
    return checks::sense(spec, root);
  }
};

// Told about every healed or failed proposal, so the journal can learn
// from measured outcomes only.
class OutcomeSink {
 public:
  virtual ~OutcomeSink() = default;
  virtual void healed(const fixers::Failure& failure, const fixers::Proposal& proposal, long long verify_ms) = 0;
  virtual void failed(const fixers::Failure& failure, const fixers::Proposal& proposal, const std::string& why) = 0;
};

// Where an escalation rolls the tree back to: the state the run found
// (kPreRun, the default) or the branch's known-good (`--rollback
// known-good`, and the loop's heals).
enum class Rollback { kPreRun, kKnownGood };

// "known-good" for Rollback::kKnownGood ("pre-run" for the default, which
// nothing spells: `phoenix run --rollback` takes only "known-good").
const char* rollback_name(Rollback r);
// The rollback a word names; nullopt for any other word.
std::optional<Rollback> parse_rollback(std::string_view word);

struct RunOptions {
  bool dry_run = false;
  std::vector<std::string> only;  // check ids (validated by the caller)
  bool allow_dirty = false;
  bool explain = false;
  Rollback rollback = Rollback::kPreRun;
  // false: a green end does not move refs/phoenix/known-good (a loop
  // worker's tree, whose commits reach the loop branch only through the
  // merge queue, which blesses the combined tree itself).
  bool bless_known_good = true;
  std::string templates_dir;
  // The longest a rate-limited or unreachable harness may keep one run
  // waiting, in total (harness.max_wait_s; 600 in `phoenix run` and the
  // hook, the time to --until in the loop). When spent, the run stops with
  // exit 1 and RunResult.model_unusable: no attempt is spent, no incident.
  double max_wait_s = 600;
  // The ref a green end moves and a rollback to known-good reads: ""
  // is the known-good of HEAD's branch (known_good_ref()).
  std::string known_good_ref;

  // What phoenix-loop sets for a heal of a task's red attempt (loop/):
  // - max_attempts > 0: at most that many attempts per issue (what is left
  //   of the task's budget), fewer than the failure type's budget;
  // - escalate false: a heal that runs out ends RED with its attempts in
  //   IssueOutcome, no incident and no rollback: the loop writes the task's
  //   note, with the agent's own attempts in it, and rolls back itself;
  // - task_start: the commit the task started from. A "fix" whose tree is
  //   that commit's again undid the change under way: it is not HEALED (the
  //   outcome says undid_change) and the journal never learns it as a fix;
  // - change: the task and the attempt's diff, shown to the harness.
  int max_attempts = 0;
  bool escalate = true;
  std::string task_start;
  std::string change;
  // The root is a tree of Phoenix's own (the loop's): each check runs
  // there under a setup::Guard, confined to it (setup/guard.h).
  bool own_tree = false;

  // Results the caller measured at `measured_head` on a clean tree (the
  // pre-push hook): DETECTED takes a check's result from here instead of
  // running it, when HEAD is still that commit and the tree clean. The
  // verification of a fix is always a fresh run.
  std::vector<checks::SenseResult> measured;
  std::string measured_head;
  // Their verdicts, where the caller judged them (engine/verdict.h): taken
  // with them, so no test is run again twice.
  std::vector<Verdict> measured_verdicts;
  // The repository lock, when the caller already holds it (the pre-push
  // hook): the run keeps it instead of taking it again, so no other run
  // slips in between the caller's measurement and the heal.
  std::shared_ptr<util::FileLock> lock;

  // The measurement store (engine/measure.h): DETECTED on a clean tree is
  // answered from it when it holds the check's record, and records a green
  // measurement; `measured_by` names the run in that record ("run", "hook",
  // "loop-20261204"). no_cache: every check runs fresh (--no-cache,
  // PHOENIX_NO_CACHE=1). A fix is always verified by a fresh run.
  bool no_cache = false;
  std::string measured_by = "run";

  // Tests that bite (engine/bite.h): a verified patch that adds or changes
  // tests and code is measured once more with its code taken away, and
  // rejected (guard tests-bite) when its tests pass there. tests_must_bite
  // is the default of a check that does not say: true in `phoenix run`,
  // false in the pre-push hook. bite_guard false: no such guard (a loop
  // task's heal: the loop measures the task's whole change itself).
  bool tests_must_bite = true;
  bool bite_guard = true;

  // Verdicts per test (engine/verdict.h, invariant 14): a red measurement
  // is judged before it counts, at DETECTED and at VERIFYING. Its new
  // failing tests are run again (flaky_reruns times; -1: phoenix.json's),
  // and what also fails at the reference tree is pre-existing. `reference`
  // set: the failing sets there, by check id (a check it lacks was green
  // there: the loop's known red, the hook's remote tip); unset: the store's
  // record of known-good's tree, when it has one (`phoenix run`).
  // `journal_root`: whose journal keeps the flake ledger ("" : root's);
  // flake_ledger false (--no-journal): none is written.
  int flaky_reruns = -1;
  std::optional<std::map<std::string, FailingSet>> reference;
  std::string reference_name = "known-good";
  std::string journal_root;
  bool flake_ledger = true;
};

struct IssueOutcome {
  std::string check;
  // kHealed, kEscalated, kProposed (dry run), kRed (dirty tree), or, when
  // the model could not be used, kWaitedOut or kUnusable (model_unusable()).
  State state = State::kRed;
  int attempts = 0;
  std::string fixer;       // who proposed the fix that healed
  std::string fix_commit;  // sha of the fix commit
  std::string issue_signature;
  std::string patch;               // the healing (or, dry run, proposed) patch
  std::optional<int> model_calls;  // null when no fixer reported its count
  // What its proposals cost, as the fixers reported it: the sum of the
  // reported costs, and the proposals that called a model (or may have) and
  // reported none (unknown, never counted as 0).
  double cost_usd = 0;
  int unknown_cost_runs = 0;
  // What was tried (every failed attempt, in order), the last patch tried,
  // and why the heal stopped: the loop's incident note lists them.
  std::vector<IncidentAttempt> tried;
  std::string last_diff;
  std::string why_stopped;
  bool undid_change = false;  // RunOptions.task_start: a patch that only undid the change (kRed)
};

struct RunResult {
  int exit_code = 0;
  std::vector<IssueOutcome> issues;
  std::string incident;    // path of the incident note, if any
  std::string known_good;  // after the run
  std::string rolled_back_to;
  std::vector<checks::SenseResult> detected;  // first measurement of each check
  // The verdict of each check detected red (RunOptions.reference): those
  // that do not count were let by, neither healed nor escalated.
  std::vector<Verdict> verdicts;
  // Set when the run stopped because the model could not be used: the
  // harness stayed rate-limited or unreachable for max_wait_s ("harness
  // unreachable for 600 s: claude: API Error: Unable to connect ...") or
  // its credit is gone ("harness quota: claude: Your credit balance is too
  // low ..."). One line; no attempt was spent and no incident written: not
  // an escalation of the code.
  std::string model_unusable;
};

// True for the states that end an issue because the model could not be
// used (WAITED_OUT, MODEL_UNUSABLE): exit 1, no incident, nothing spent.
inline bool model_unusable(State s) { return s == State::kWaitedOut || s == State::kUnusable; }

// Events for the timeline: {"event":"state","check":...,"state":...,"elapsed_ms":...,...}
// and {"event":"explain","text":...}.
using EventFn = std::function<void(const util::Json&)>;

class Engine {
 public:
  Engine(std::string root, const config::Config& cfg, RunOptions options, CheckRunner& checks,
         std::vector<std::unique_ptr<fixers::Fixer>> fixers, trace::Trace& trace, EventFn on_event,
         OutcomeSink* outcomes = nullptr);
  ~Engine();
  RunResult run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace phoenix::engine
