// The harness fixer: the user's own agent CLI (claude, codex, aider,
// opencode, gemini, or any command) asked to fix a red check, inside a
// sandbox (DESIGN.md "Harness", invariant 12).
//
// One run of propose():
//   1. render the prompt (templates/prompt.md, or the repository's
//      `prompt_template`) with the check, its signal and evidence, the
//      editable and protected globs, the failing tests and the earlier
//      attempts;
//   2. copy the repository into a fresh sandbox::Sandbox under
//      <phoenix_dir>/sandboxes;
//   3. fingerprint the real repository, run the CLI in the sandbox (no shell,
//      own process group, killed at the timeout), fingerprint again;
//   4. read the patch back with git from the sandbox — never from the
//      model's words — and classify the run (below).
// The sandbox is deleted before propose() returns. The patch is relative to
// the tracked files of the work tree when the sandbox was made: `head`
// itself when the tree is clean, as it is after the engine's checkpoint.
// With request.explain, the log also lists the files the sandbox left out.
//
// Classification, first match wins:
//   kAborted      the real repository's fingerprint changed during the run
//                 (detail names what changed; the engine restores);
//   kUnavailable  no harness configured, or the program is not on PATH /
//                 not executable;
//   kTimeout      killed at Request.timeout_s (its whole process group);
//   kCrashed      Phoenix was interrupted (SIGINT/SIGTERM) during the run;
//   kQuota        the run failed (non-zero exit, or the CLI's JSON says
//                 is_error) or changed nothing, and its output names a usage
//                 cap ("usage limit", "5-hour limit", "quota",
//                 "insufficient_quota", …);
//   kRateLimited  same conditions, and its output names a rate limit
//                 (HTTP 429, "rate limit", "Too Many Requests",
//                 "overloaded"); retry_after_ms from the output when it says,
//                 else kDefaultRetryAfterMs;
//   kProposed     the sandbox's files changed: patch + files;
//   kCrashed      no change, and a non-zero exit, a signal, or is_error;
//   kNothing      no change and exit 0: "the agent changed nothing".
// A CLI whose JSON says `"is_error": false` is never rate-limited or
// quota-capped by its output's wording, and output lines that repeat the
// prompt (agents echo it, and the evidence may well say "429") are not read
// as the CLI's own words. The exit code is recorded; apart from the rules
// above it decides nothing.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "fixers/fixer.h"

namespace phoenix::fixers {

class HarnessFixer : public Fixer {
 public:
  std::string name() const override { return "harness"; }
  // Reads request.config->harness (preset, command, env), sandbox_carry and
  // prompt_template. Timeout: request.timeout_s, or harness.timeout_s when
  // that is not positive. Throws phoenix::Error only for a prompt template
  // that cannot be read (ConfigError for the repository's own) or a sandbox
  // that cannot be built; every outcome of the CLI itself is a Status.
  Proposal propose(const Request& request) override;
};

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
};

// The one table of presets (claude, codex, aider, opencode, gemini), with
// the source of each flag next to it in harness.cc.
const std::vector<HarnessPreset>& presets();
// nullptr for an unknown name.
const HarnessPreset* find_preset(std::string_view name);

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
  std::optional<std::string> stdin_data;      // the prompt, for kStdin
  std::map<std::string, std::string> env;     // preset env, then harness.env
  PromptVia via = PromptVia::kStdin;
  std::string prompt_file;                    // "" when no file was written
  bool long_prompt_in_file = false;           // {prompt} was replaced by an instruction
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
  std::string format;                // "claude-json", "codex-jsonl", "opencode-jsonl", "gemini-stream-json", "" (text)
  std::optional<bool> is_error;      // the CLI's own verdict, when it gave one
  std::optional<double> cost_usd;    // reported cost; null when none reported
  std::optional<int> turns;          // claude num_turns; codex turns; opencode steps
  std::string message;               // claude's result text or the last error message (bounded)
  // Error texts from the JSON (claude's result when is_error, error events,
  // "error" objects): the only JSON content read for rate limits and quotas.
  std::vector<std::string> error_texts;
};
AgentReport parse_agent_report(std::string_view output);

enum class LimitKind { kNone, kRateLimit, kQuota };

struct LimitHit {
  LimitKind kind = LimitKind::kNone;
  std::string line;                         // the line that said so (trimmed, bounded)
  std::optional<long long> retry_after_ms;  // when the output says when to retry
};

// Looks for a rate limit or a usage cap in what the CLI said: its non-JSON
// output lines plus report.error_texts, minus every line that also appears
// in `prompt`. A usage cap wins over a rate limit (OpenAI's
// insufficient_quota arrives as HTTP 429); a "quota … per minute" is a rate
// limit. `now_ms` turns "resets at <epoch>" into a delay.
LimitHit find_limit(std::string_view output, const AgentReport& report, std::string_view prompt, long long now_ms);

// "retry after 30 seconds", "Retry-After: 30", "retry_after_ms": 1500,
// "try again in 1m30s", "retryDelay": "20s", "Retrying in 2892 seconds",
// "limit reached|1753077600" (epoch seconds, relative to now_ms).
std::optional<long long> parse_retry_after_ms(std::string_view text, long long now_ms);

inline constexpr long long kDefaultRetryAfterMs = 60'000;

// The facts of one finished run that classification looks at.
struct RunFacts {
  std::string program;         // for messages ("claude")
  bool not_found = false;
  bool not_executable = false;
  bool timed_out = false;
  bool interrupted = false;
  int exit_code = 0;           // shell-like: 128+N for a signal
  int term_signal = 0;
  double timeout_s = 0;
  std::string output;          // bounded stdout+stderr
  std::string prompt;          // to ignore echoes
  size_t changed_files = 0;    // paths the sandbox patch touches
};

struct Classification {
  Status status = Status::kNothing;
  std::string detail;
  long long retry_after_ms = 0;
  std::optional<double> cost_usd;
  std::optional<int> turns;
};

// The rules at the top of this file, minus kAborted (which needs the
// fingerprints). Pure.
Classification classify_run(const RunFacts& facts, long long now_ms);

// --- prompt ------------------------------------------------------------------

// The template text: <repo_root>/<config.prompt_template> when set (a
// ConfigError naming it when unreadable), else <templates_dir>/prompt.md,
// else the installed or source templates folder. Throws Error when none
// can be read.
std::string load_prompt_template(const Request& request);

// The values of the placeholders: check_id, check_kind, check_target,
// failure_type, signal, evidence (fenced), failing_tests, editable,
// protected, earlier_attempts, issue_signature, head.
std::map<std::string, std::string> prompt_values(const Request& request);

// Replaces each {{name}} (spaces inside the braces allowed) whose name is in
// `values`; unknown ones are left as written. One pass: a value containing
// "{{signal}}" stays as it is.
std::string render_prompt(std::string_view tmpl, const std::map<std::string, std::string>& values);

}  // namespace phoenix::fixers
