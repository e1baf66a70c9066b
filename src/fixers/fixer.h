// Fixers propose patches; they never apply them and never decide whether a
// patch worked. The engine guards, applies and re-measures every proposal.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "checks/check.h"
#include "config/config.h"

namespace phoenix::fixers {

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
  int check_runs = 0;  // measurements the fixer made itself (bisect)
  long long duration_ms = 0;
  long long retry_after_ms = 0;  // for kRateLimited / kUnreachable: what the CLI asked for, else 0
  std::string first_error;       // the CLI's first error line, for a one-line cause
  int exit_code = 0;
  std::string detail;  // why: "rate limit: 429 Too Many Requests", "culprit 1a2b3c4 ..."
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
