// The inner self-heal cycle (DESIGN.md "States of one issue"):
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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checks/check.h"
#include "config/config.h"
#include "engine/state.h"
#include "fixers/fixer.h"
#include "trace/trace.h"
#include "util/json.h"

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

struct RunOptions {
  bool dry_run = false;
  std::vector<std::string> only;  // check ids (validated by the caller)
  bool allow_dirty = false;
  bool explain = false;
  std::string rollback;  // "" (pre-run state) or "known-good"
  // false: a green end does not move refs/phoenix/known-good (a loop
  // worker's tree, whose commits reach the loop branch only through the
  // merge queue, which blesses the combined tree itself).
  bool bless_known_good = true;
  std::string templates_dir;
  // The longest a rate-limited or unreachable harness may keep one run
  // waiting, in total (harness.max_wait_s; 600 in `phoenix run` and the
  // hook, the time to --until in the loop). When spent, the run stops with
  // exit 1 and RunResult.waited_out: no attempt is spent, no incident.
  double max_wait_s = 600;
  std::string author_name = "phoenix";
  std::string author_email = "phoenix@localhost";
};

struct IssueOutcome {
  std::string check;
  State state = State::kRed;  // kHealed, kEscalated, kProposed (dry run), kRed (dirty tree), kWaitedOut
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
};

struct RunResult {
  int exit_code = 0;
  std::vector<IssueOutcome> issues;
  std::string incident;    // path of the incident note, if any
  std::string known_good;  // after the run
  std::string rolled_back_to;
  std::vector<checks::SenseResult> detected;  // first measurement of each check
  // Set when the run stopped because the harness stayed rate-limited or
  // unreachable for max_wait_s: "harness unreachable for 600 s: claude: API
  // Error: Unable to connect ..." (one line).
  std::string waited_out;
};

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

// Refs Phoenix keeps in the user's repository.
constexpr const char* kKnownGoodRef = "refs/phoenix/known-good";
constexpr const char* kPreRunRef = "refs/phoenix/checkpoints/pre-run";
constexpr const char* kAttemptRef = "refs/phoenix/checkpoints/attempt";
constexpr const char* kAbandonedPrefix = "refs/phoenix/abandoned/";

}  // namespace phoenix::engine
