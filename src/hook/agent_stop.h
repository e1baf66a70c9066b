// `phoenix hook run stop --agent CLI`: Phoenix as the stop hook of an agent
// session (docs/agents.md "Phoenix inside an agent session"). The CLI runs
// it when its agent is about to stop, with a JSON object on stdin
// (session_id, cwd, stop_hook_active, ...; hook/agent_config.h writes the
// entry that runs it). It measures the checks (`hook.checks`, default all)
// at the tree the agent left, through the measurement store (the tree is
// keyed by its content, clean or not: an unchanged tree is not measured
// twice), and answers as all three CLIs read it:
//
//   green          exit 0, {"systemMessage": "phoenix: green ..."} on stdout:
//                  the agent stops, the person reads the line
//   red            exit 2, the refusal on stderr: the CLI hands it to the
//                  model, which carries on. It names each red check, its
//                  failing tests, its evidence (at most kEvidenceLines lines)
//                  and the files the check protects (which the agent must
//                  not edit to make it pass)
//   given up       a red check refused budget-many times in this session
//                  (its failure type's budget), or failing again with a
//                  signature it was refused with already: exit 0 with one
//                  line, and the incident note written (once per failure)
//   not its call   PHOENIX_SKIP=1, no phoenix.json, no checks, a phoenix.json
//                  that does not load, an agent run by Phoenix itself
//                  (PHOENIX_LOOP=1 or PHOENIX_SANDBOX=1), out of the hook's
//                  time, interrupted
//                  or any error of Phoenix's own: exit 0 with one line
//
// A session's refusals and signatures are kept in
// .phoenix/agent-sessions/<cli>-<session>.json; a check measured green
// again starts its count over (what follows is another failure). Every stop
// is one `agent.stop` line in the trace, which `phoenix report` reads.
#pragma once

#include <string>

#include "hook/agent_config.h"

namespace phoenix::hook {

inline constexpr size_t kEvidenceLines = 30;
inline constexpr size_t kEvidenceBytes = 4000;
inline constexpr size_t kMaxTestsNamed = 20;

struct AgentStopOptions {
  AgentCli cli = AgentCli::kClaude;
  std::string input;  // what the CLI wrote on stdin
  std::string cwd;    // this process's, where the input names none
  bool no_cache = false;
};

struct AgentStopOutcome {
  int exit_code = 0;        // 0 lets the agent stop, 2 refuses
  std::string stdout_text;  // a JSON object the CLI reads, or ""
  std::string stderr_text;  // the refusal the model reads, or ""
};

// Never throws: a failure of Phoenix's own lets the agent stop.
AgentStopOutcome run_agent_stop(const AgentStopOptions& options);

}  // namespace phoenix::hook
