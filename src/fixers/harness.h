// The harness fixer: the user's own agent CLI (claude, codex, aider,
// opencode, gemini, or any command) asked to fix a red check, inside a
// sandbox (invariant 12, docs/invariants.md; docs/agents.md).
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
// Classification: agent::classify_run (agent/agent.h), after one rule of
// its own — kAborted when the real repository's fingerprint changed during
// the run (detail names what changed; the engine restores).
#pragma once

#include <map>
#include <string>

#include "agent/agent.h"
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

}  // namespace phoenix::fixers
