// The class of a finished run of an agent CLI (the rules in agent.h).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "util/subprocess.h"

namespace phoenix::agent {


// The outcome of asking a fixer (for the harness: of one agent run).
enum class Status {
  kProposed,     // a patch to try
  kNothing,      // this fixer has nothing (more) to offer
  kUnavailable,  // not installed / not configured
  kRateLimited,  // wait (retry_after_ms); spends no budget and no strike
  kUnreachable,  // the model could not be reached: wait like kRateLimited
  kQuota,        // credit or billing exhausted: stop using this fixer for the run
  kTimeout,      // killed at its timeout
  kCrashed,      // exited abnormally without a usable result
  kAborted,      // the real repository changed while it worked (invariant 12)
  kOwnFailure    // failed for a reason of Phoenix's own (its tree, its setup), not the code's: no attempt spent
};

const char* status_name(Status s);

// True for the classes that wait instead of spending the budget.
inline bool waits(Status s) { return s == Status::kRateLimited || s == Status::kUnreachable; }

// The facts of one finished run that classification looks at.
struct RunFacts {
  std::string program;  // for messages ("claude")
  bool not_found = false;
  bool not_executable = false;
  bool timed_out = false;
  bool interrupted = false;
  int exit_code = 0;  // shell-like: 128+N for a signal
  int term_signal = 0;
  double timeout_s = 0;
  std::string output;        // bounded stdout+stderr
  std::string prompt;        // to ignore echoes
  size_t changed_files = 0;  // paths the sandbox patch touches
};

// The facts of a finished run of the CLI (util::run_process's result).
RunFacts run_facts(const std::string& program, const util::ProcessResult& r, double timeout_s,
                   const std::string& prompt, size_t changed_files);

struct Classification {
  Status status = Status::kNothing;
  std::string detail;
  long long retry_after_ms = 0;       // for the waiting classes: what the CLI asked for, else 0
  bool retry_after_from_cli = false;  // the CLI named the time (a reset time): wait exactly that
  std::string first_error;            // the CLI's first error line (bounded), "" when none
  std::optional<double> cost_usd;
  std::optional<int> turns;
  std::optional<int> model_calls;  // the CLI's own count; null when it reports none
};

// The one line that says why the model could not be used, for `phoenix
// run`, the hook and the loop alike: "harness <what>: <program>: <cause>"
// ("harness quota: claude: Your credit balance is too low ...", "harness
// unreachable for 600 s: codex: Reconnecting..."), on one line.
std::string unusable_line(const std::string& what, const std::string& program, const std::string& cause);

// The rules at the top of agent.h, minus kAborted (which needs the
// fingerprints). Pure.
Classification classify_run(const RunFacts& facts, long long now_ms);

}  // namespace phoenix::agent
