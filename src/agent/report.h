// What a CLI's machine-readable output says: claude's JSON, codex's,
// opencode's and gemini's JSON lines (cost, turns, the CLI's own verdict,
// its error texts).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace phoenix::agent {

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

}  // namespace phoenix::agent
