#include "agent/presets.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace phoenix::agent {

// ---------------------------------------------------------------------------
// Presets: the one table. Each flag was checked against the `--help` of the
// version named in `checked` (the suite runs each preset against that real
// CLI: tests/e2e/agents_test.cc; docs/agents.md).

const std::vector<HarnessPreset>& presets() {
  static const std::vector<HarnessPreset> table{
      {"claude",
       {"claude",
        "-p",                                 // claude 2.1.197: print mode, one run without a UI
        "--output-format", "json",            // claude 2.1.197: one JSON result (is_error, num_turns, total_cost_usd)
        "--permission-mode", "acceptEdits"},  // claude 2.1.197: edits are accepted without asking
       PromptVia::kStdin,                     // claude 2.1.197: -p without an argument reads the prompt from stdin
       {},
       "npm @anthropic-ai/claude-code",
       "2.1.197"},
      // The tighter claude variant (--allowedTools "Read Edit Write"
      // --disallowedTools "Bash WebFetch WebSearch") is left to
      // harness.command: it also stops the agent from running the tests.
      {"codex",
       {"codex",
        "exec",                          // codex 0.171.0: non-interactive run
        "--sandbox", "workspace-write",  // codex 0.171.0: may write in its working directory (--full-auto is gone)
        "--json",                        // codex 0.171.0: JSON-lines events on stdout
        "-"},                            // codex 0.171.0: "-" reads the prompt from stdin
       PromptVia::kStdin,
       {},
       "npm @openai/codex",
       "0.171.0"},
      {"aider",
       {"aider",
        "--yes-always",                      // aider 0.86: never waits for a confirmation
        "--no-auto-commits",                 // aider 0.86: it commits by itself unless told not to
        "--message-file", "{prompt_file}"},  // aider 0.86: prompt via a file
       PromptVia::kFile,
       {},
       "PyPI aider-chat",
       "0.86 (from its sources; not run in the suite)"},
      {"opencode",
       {"opencode",
        "run",  // opencode 1.18.33: non-interactive run
        // opencode 1.18.33 retries a refused connection, a 5xx, a 429
        // without Retry-After and exhausted credit inside itself, forever,
        // printing nothing on stdout: its log on stderr is the only place
        // that names the cause ("stream error ... AI_APICallError: ...").
        "--print-logs", "--log-level", "WARN", "--format", "json",  // opencode 1.18.33: raw JSON events
        "{prompt}"},  // opencode 1.18.33: the message is the positional argument
       PromptVia::kArgument,
       {{"OPENCODE_PERMISSION", R"({"*":"allow"})"}},  // opencode 1.18.33: every tool allowed without asking
       "npm opencode-ai",
       "1.18.33"},
      {"gemini",
       {"gemini", "--approval-mode", "yolo",  // gemini 0.61.0: approve every tool call (older releases: --yolo)
        "--skip-trust",                       // gemini 0.61.0: a sandbox is no trusted folder (else exit 55)
        "-o", "stream-json",                  // gemini 0.61.0: JSON-lines events
        "-p", "{prompt}"},                    // gemini 0.61.0: headless run with this prompt
       PromptVia::kArgument,
       {{"GEMINI_CLI_TRUST_WORKSPACE", "true"}},  // gemini 0.61.0: the same trust, for releases without --skip-trust
       "npm @google/gemini-cli",
       "0.61.0"},
  };
  return table;
}

const HarnessPreset* find_preset(std::string_view name) {
  for (const HarnessPreset& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

const std::vector<std::string>& git_location_env() {
  static const std::vector<std::string> names{"GIT_DIR",
                                              "GIT_WORK_TREE",
                                              "GIT_INDEX_FILE",
                                              "GIT_OBJECT_DIRECTORY",
                                              "GIT_COMMON_DIR",
                                              "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                                              "GIT_PREFIX",
                                              "GIT_NAMESPACE",
                                              "GIT_CEILING_DIRECTORIES"};
  return names;
}

std::string program_name(const std::vector<std::string>& argv) {
  if (argv.empty()) return "";
  auto base = [](const std::string& a) { return fs::path(a).filename().string(); };
  if (base(argv[0]) != "env") return base(argv[0]);
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-u" || a == "--unset" || a == "-C" || a == "--chdir" || a == "-S" || a == "--split-string") {
      ++i;  // the option's value
      continue;
    }
    if (a == "--") continue;
    if (!a.empty() && a[0] == '-') continue;
    if (a.find('=') != std::string::npos) continue;  // NAME=value
    return base(a);
  }
  return "env";
}

}  // namespace phoenix::agent
