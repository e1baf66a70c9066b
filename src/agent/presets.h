// The agent CLIs' presets: one table of argv, how the prompt travels, the
// env each CLI needs, each flag with the CLI version it was checked
// against (docs/agents.md). Adding a CLI is one entry in presets.cc.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace phoenix::agent {

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

}  // namespace phoenix::agent
