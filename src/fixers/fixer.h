// Fixers propose patches; they never apply them and never decide whether a
// patch worked. The engine guards, applies and re-measures every proposal.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "checks/check.h"
#include "config/config.h"

namespace phoenix::fixers {

// What a run of the failing tests alone says (engine/failing_first.h):
// green (a test ran and none of them failed), red (one of them failed, by
// name), or unknown (nothing ran, or a red that names none of them: a build
// error, a test missing at that commit): then only the whole check decides.
enum class TestsAnswer { kGreen, kRed, kUnknown };
inline const char* tests_answer_name(TestsAnswer a) {
  return a == TestsAnswer::kGreen ? "green" : a == TestsAnswer::kRed ? "red" : "unknown";
}

// The failing tests of a red check as a check of their own, where its
// runner can run them alone (engine/failing_first.h builds it).
struct FailingTests {
  checks::CheckSpec check;                                      // the check's command running only `tests`
  std::vector<std::string> tests;                               // the failing tests it runs
  std::function<TestsAnswer(const checks::SenseResult&)> read;  // what a run of `check` says
};

// What failed, as the detector measured it.
struct Failure {
  checks::CheckSpec check;
  checks::SenseResult result;  // the red measurement
  std::string failure_type;    // unit, e2e, ...
  std::string issue_signature;
  std::vector<std::string> failing_tests;
  // The failing tests the change brought (engine/verdict.h), when a verdict
  // named them; failing_tests holds every failing test.
  std::vector<std::string> new_tests;
  // The failing tests alone ("select_failing", docs/checks.md "Failing
  // tests first"): unset when the whole check is the unit, `whole_why` says
  // why (no runner that selects, no names, "select_failing": false).
  std::optional<FailingTests> failing_first;
  std::string whole_why;
};

// An earlier attempt on the same issue, fed back to the next proposal.
struct EarlierAttempt {
  std::string fixer;
  std::string patch;
  std::vector<std::string> files;
  std::string outcome;   // "red: exit=1", "rejected: edits tests/a.cc (protected)"
  std::string evidence;  // the re-run's evidence
};

struct Request {
  std::string repo_root;      // the user's work tree (fixers must not write to it)
  std::string phoenix_dir;    // <root>/.phoenix
  std::string templates_dir;  // shipped templates (prompt.md)
  const config::Config* config = nullptr;
  Failure failure;
  std::vector<EarlierAttempt> earlier;
  std::string head;        // HEAD sha when the proposal was asked for
  std::string known_good;  // the branch's known-good commit (layout::known_good_ref), or ""
  // The change under way that turned the check red, when the caller knows
  // it (phoenix-loop: the task and the agent's diff), else "".
  std::string change;
  double timeout_s = 900;
  bool explain = false;
};

// The journal fixer's name (journal_fixer.h): what Proposal.fixer says of
// a replayed fix.
inline constexpr const char kJournal[] = "journal";

// The outcome of one proposal (agent/agent.h: the harness's classes of run).
using Status = agent::Status;
using agent::status_name;

struct Proposal {
  Status status = Status::kNothing;
  std::string fixer;
  std::string patch;                   // unified diff in git's format, against `head`
  std::vector<std::string> files;      // paths the patch touches (both sides of renames)
  std::string summary;                 // one line for the timeline
  std::string log;                     // bounded output of the fixer (harness transcript)
  std::optional<int> model_calls = 0;  // requests to a model (fixers without one: 0); null when unknown
  std::optional<double> cost_usd;      // null when the fixer reports none
  std::optional<int> turns;
  int check_runs = 0;     // measurements the fixer made itself (bisect)
  int selected_runs = 0;  // of check_runs, those of the failing tests alone (Failure.failing_first)
  // bisect: the culprit was found by the failing tests alone; its revert
  // failing the whole check makes bisect search again with the whole check.
  bool found_selected = false;
  // The check itself named the change this proposal undoes (bisect's revert
  // of the first red commit): the failing tests, which passed alone before
  // that commit, are not asked first; the whole check verifies it at once.
  bool named_by_check = false;
  // Set when the fixer found the failing tests alone misleading (bisect:
  // red alone at known-good, or not red alone at HEAD): why. The heal then
  // verifies every proposal with the whole check only.
  std::string selection_misleads;
  long long duration_ms = 0;
  long long retry_after_ms = 0;  // for kRateLimited / kUnreachable: what the CLI asked for, else 0
  std::string first_error;       // the CLI's first error line, for a one-line cause
  int exit_code = 0;
  std::string detail;  // why: "rate limit: 429 Too Many Requests", "culprit 1a2b3c4 ..."

  // A replay of a fix the journal stored, not a fix of this run.
  bool from_journal() const { return fixer == kJournal; }
};

class Fixer {
 public:
  virtual ~Fixer() = default;
  virtual std::string name() const = 0;
  // Called again after a failed attempt (with `earlier` grown) until it
  // returns kNothing.
  virtual Proposal propose(const Request& request) = 0;
};

}  // namespace phoenix::fixers
