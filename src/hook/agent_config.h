// Phoenix as the stop hook of an agent CLI (docs/agents.md "Phoenix inside
// an agent session"): where each CLI reads a project's stop hook, the entry
// `phoenix hook install --agent CLI` writes there, and its removal.
//
//   CLI     event       personal file (default)          shared file (--shared)
//   claude  Stop        .claude/settings.local.json      .claude/settings.json
//   codex   Stop        .codex/hooks.json                .codex/hooks.json
//   gemini  AfterAgent  .gemini/settings.json            .gemini/settings.json
//
// Claude Code alone has a personal layer in the project; for codex and
// gemini the personal install writes the project's file and, while git
// does not track it, keeps it out of commits through .git/info/exclude
// (as the personal file of claude is kept out). The entry is one matcher
// group, {"hooks": [{"type": "command", "command": "<phoenix> hook run stop
// --agent CLI", "timeout": ...}]}, appended to the event's array; every
// other byte of the file stays as it was (util/json_edit.h), and uninstall
// removes exactly that group (and the keys it alone needed).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace phoenix::hook {

enum class AgentCli { kClaude, kCodex, kGemini };

// "claude", "codex", "gemini"; and back (nullopt for another word).
const char* agent_name(AgentCli cli);
std::optional<AgentCli> parse_agent(const std::string& word);
const std::vector<AgentCli>& agent_clis();
// "claude, codex, gemini": for a usage error.
std::string agent_names();

// The hook's event in that CLI's configuration: "Stop" or "AfterAgent".
const char* stop_event(AgentCli cli);
// The file (relative to the work tree) the entry goes into.
std::string agent_hook_file(AgentCli cli, bool shared);
// Whether that CLI reads a personal file of its own in the project.
bool has_personal_layer(AgentCli cli);

// The most a stop hook may take (the CLIs kill a hook after the timeout the
// entry names): the checks are measured within it, less a margin.
inline constexpr int kAgentHookTimeoutS = 3600;
inline constexpr int kAgentHookMarginS = 60;

// The hook's command line for `phoenix` (a path, or "phoenix" when PATH
// finds this very binary), quoted for sh: what the CLI runs. For gemini,
// which takes any exit but 0 and 1 as a refusal, every exit of it but 2
// is made 1 (a warning), so a phoenix that cannot start never holds the
// session.
std::string agent_hook_command(const std::string& phoenix, AgentCli cli);

struct AgentInstall {
  std::string file;       // absolute
  std::string action;     // installed | updated | unchanged
  std::string command;    // what the CLI runs
  bool excluded = false;  // a line was added to .git/info/exclude for it
};
// Writes Phoenix's entry into `cli`'s file under `workdir`, merged with
// what is there. A file that does not parse: ConfigError (exit 78) naming
// it with line:col, nothing written. `exclude_file` is the repository's
// info/exclude, used for a personal install while the file is not tracked
// (`tracked` says whether git tracks it).
AgentInstall install_agent_hook(const std::string& workdir, AgentCli cli, bool shared, const std::string& command,
                                const std::string& exclude_file, bool tracked);

struct AgentUninstall {
  std::vector<std::string> files;    // absolute paths Phoenix's entry was removed from
  std::vector<std::string> deleted;  // of those, files left with nothing (`{}`) and removed
};
// Removes Phoenix's entries from every file `cli` reads (personal and
// shared). A file that does not parse: ConfigError, nothing written.
AgentUninstall uninstall_agent_hook(const std::string& workdir, AgentCli cli);

// Phoenix's entry where it is installed, for `phoenix doctor`.
struct AgentHookState {
  AgentCli cli;
  std::string file;     // absolute
  bool shared = false;  // the shared file (personal otherwise)
  std::string command;  // the command the entry runs
  std::string program;  // its first word, unquoted: the phoenix it calls
  std::string problem;  // "" or why the file cannot be read
};
std::vector<AgentHookState> installed_agent_hooks(const std::string& workdir);

// What keeps codex from running a project hook in `workdir`, read from
// `codex_home`/config.toml (codex 0.171 keeps both there): "" when the
// project is trusted and a hook of its .codex/hooks.json's Stop event has
// been trusted; else why not and what to do. A plain text scan: a missing
// or unreadable file says both are missing.
std::string codex_trust_problem(const std::string& workdir, const std::string& codex_home);

}  // namespace phoenix::hook
