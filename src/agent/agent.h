// What Phoenix knows about agent CLIs (claude, codex, aider, opencode,
// gemini, or any command), in one place, for the harness fixer and the
// loop alike (DESIGN.md "Harness"; docs/agents.md):
//   - the presets: one table of argv, how the prompt travels, the env each
//     CLI needs, each flag with the CLI version it was checked against;
//   - an invocation: the argv with the prompt put in (argument, file or
//     stdin), its environment;
//   - their reports: claude's JSON, codex's, opencode's and gemini's JSON
//     lines (cost, turns, the CLI's own verdict, its error texts);
//   - the class of a finished run, first match wins:
//       kUnavailable  not installed / not executable;
//       kCrashed      Phoenix was interrupted during the run;
//       kQuota        credit or billing exhausted ("credit balance is too
//                     low", "insufficient_quota"): the fixer stops for the run;
//       kRateLimited  HTTP 429, "rate limit", usage windows ("usage limit",
//                     "5-hour limit", "hit your limit") — with the reset time
//                     when the CLI printed one;
//       kUnreachable  connection refused, DNS or TLS failure, HTTP 5xx, 529,
//                     "overloaded", "Unable to connect", codex's
//                     "Reconnecting... waiting for network";
//       kTimeout      killed at its timeout (a run that timed out while the
//                     CLI was saying one of the three above is that class);
//       kProposed     files changed;
//       kCrashed      no change and a non-zero exit, a signal or is_error
//                     (the detail keeps the first error line and the last
//                     lines, bounded);
//       kNothing      no change, exit 0.
//     The three limit classes are read only when the run failed, changed
//     nothing or timed out, never from a JSON report that says is_error
//     false, never from lines that repeat the prompt;
//   - waits: backoff with jitter, or the reset time the CLI printed;
//   - the prompt's {{placeholders}}.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
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

// --- presets ---------------------------------------------------------------

// How a CLI takes its prompt.
enum class PromptVia {
  kStdin,     // written to its standard input
  kFile,      // a file in the sandbox, named by {prompt_file}
  kArgument,  // one argv element, {prompt}
};

struct HarnessPreset {
  std::string name;
  // argv with {prompt} / {prompt_file} where the prompt goes.
  std::vector<std::string> argv;
  PromptVia via = PromptVia::kStdin;
  // Added to the environment (harness.env overrides them).
  std::map<std::string, std::string> env;
  std::string package;  // where it comes from ("npm @openai/codex", "PyPI aider-chat")
  std::string checked;  // the CLI version the flags were checked against
};

// The one table (claude, codex, aider, opencode, gemini); the source of
// each flag is next to it in agent.cc.
const std::vector<HarnessPreset>& presets();
// nullptr for an unknown name.
const HarnessPreset* find_preset(std::string_view name);

// Variables that would point an agent's own git commands at the user's
// repository instead of its sandbox (git exports some of them to hooks, and
// Phoenix runs from a pre-push hook): unset for every agent run.
const std::vector<std::string>& git_location_env();

// The agent's program name for messages: the file name of argv[0], or for
// `env [-i] [-u NAME] [NAME=value...] program ...` the program's.
std::string program_name(const std::vector<std::string>& argv);

// --- argv --------------------------------------------------------------------

// A prompt longer than this is never put in argv: Linux refuses a single
// argument over 128 KiB (MAX_ARG_STRLEN) and other systems have smaller
// total limits. It goes to a file and the argument becomes
// long_prompt_instruction(file).
inline constexpr size_t kMaxPromptArgBytes = 100 * 1024;

// The short argument that replaces a long prompt.
std::string long_prompt_instruction(const std::string& prompt_file);

// Replaces every "{prompt}" and "{prompt_file}" in each element, whether it
// is the whole element or part of one ("--message={prompt_file}"). One
// element in, one element out: nothing is split or re-parsed, and text that
// came from the prompt is never scanned for placeholders again.
std::vector<std::string> substitute_placeholders(const std::vector<std::string>& argv, const std::string& prompt,
                                                 const std::string& prompt_file);

// What to run for one prompt.
struct Invocation {
  std::vector<std::string> argv;
  std::optional<std::string> stdin_data;   // the prompt, for kStdin
  std::map<std::string, std::string> env;  // preset env, then harness.env
  PromptVia via = PromptVia::kStdin;
  std::string prompt_file;           // "" when no file was written
  bool long_prompt_in_file = false;  // {prompt} was replaced by an instruction
};

// Builds the invocation for `harness`: its `command` when given (a custom
// argv: {prompt_file} → a file, {prompt} → an argument, neither → stdin),
// else its preset's. `write_prompt_file(content)` stores content where the
// agent can read it and returns the path; it is called at most once, and
// only when a file is needed. Throws ConfigError when neither a command nor
// a known preset is configured.
Invocation plan_invocation(const config::Harness& harness, const std::string& prompt,
                           const std::function<std::string(const std::string&)>& write_prompt_file);

// --- output ------------------------------------------------------------------

// Claude Code's `--output-format json` result object:
//   {"type":"result","subtype":"success","is_error":false,"num_turns":N,
//    "total_cost_usd":X,"result":"..."}
// (also found as the last "result" element of a JSON array, or the last
// "result" line of stream-json). Fields it does not report stay empty —
// never 0.
struct ClaudeResult {
  bool is_error = false;
  std::string subtype;
  std::string result;
  std::optional<int> num_turns;
  std::optional<double> total_cost_usd;
};
std::optional<ClaudeResult> parse_claude_result(std::string_view output);

// What a CLI's machine-readable output said about the run, whichever CLI
// printed it: claude's result object; codex's JSON-lines events
// (turn.completed / turn.failed / error); opencode's (step_finish with
// part.cost / error); gemini's stream-json (result with status / error).
struct AgentReport {
  std::string format;              // "claude-json", "codex-jsonl", "opencode-jsonl", "gemini-stream-json", "" (text)
  std::optional<bool> is_error;    // the CLI's own verdict, when it gave one
  std::optional<double> cost_usd;  // reported cost; null when none reported
  std::optional<int> turns;        // claude num_turns; codex turns; opencode steps
  // Requests the CLI says it made to the model: claude's num_turns, codex's
  // turns, opencode's steps, gemini's stats; null when it reports none.
  std::optional<int> model_calls;
  std::string message;  // claude's result text or the last error message (bounded)
  // Error texts from the JSON (claude's result when is_error, error events,
  // "error" objects): the only JSON content read for limits.
  std::vector<std::string> error_texts;
};
AgentReport parse_agent_report(std::string_view output);

enum class LimitKind { kNone, kRateLimit, kQuota, kUnreachable };

struct LimitHit {
  LimitKind kind = LimitKind::kNone;
  std::string line;                         // the line that said so (trimmed, bounded)
  std::optional<long long> retry_after_ms;  // when the output says when to retry
};

// When the text says to retry: "retry after 30 seconds", "Retry-After: 30",
// "retry_after_ms": 1500, "try again in 1m30s", "in 2h 13m",
// "retryDelay": "20s", "Retrying in 2892 seconds", "limit reached|1753077600"
// (epoch seconds), "try again at 14:05", "resets 3am (Europe/Berlin)",
// "resets at 7pm" (the next such wall-clock time, in the named zone or the
// local one). Relative to now_ms.
std::optional<long long> parse_retry_after_ms(std::string_view text, long long now_ms);

inline constexpr long long kDefaultRetryAfterMs = 60'000;

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

// The rules at the top of this file, minus kAborted (which needs the
// fingerprints). Pure.
Classification classify_run(const RunFacts& facts, long long now_ms);

// --- waits -------------------------------------------------------------------

// How long to wait before the next try after `waits_so_far` waiting runs in
// a row: exponential backoff from 1 s (doubling, capped at 5 min) with
// ±20 % jitter, or the CLI's own retry time (plus up to 10 % jitter) when
// it gave a longer one. Never more than `left_ms` when that is positive.
long long wait_ms(const Classification& c, int waits_so_far, long long left_ms = 0);

// --- prompt ------------------------------------------------------------------

// Replaces each {{name}} (spaces inside the braces allowed) whose name is in
// `values`; unknown ones are left as written. One pass: a value containing
// "{{signal}}" stays as it is.
std::string render_prompt(std::string_view tmpl, const std::map<std::string, std::string>& values);

}  // namespace phoenix::agent
