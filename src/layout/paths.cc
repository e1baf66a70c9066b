#include "layout/paths.h"

#include <filesystem>
#include <system_error>

#include "util/atomic_file.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace phoenix::layout {

const std::vector<std::string>& keep_prefixes() {
  static const std::vector<std::string> k{kStateDirPrefix, "incidents/"};
  return k;
}

const std::vector<std::string>& state_prefixes() {
  static const std::vector<std::string> k{kStateDirPrefix};
  return k;
}

const std::vector<std::string>& own_ref_prefixes() {
  static const std::vector<std::string> k{"refs/phoenix/", "refs/heads/phoenix/"};
  return k;
}

std::string state_dir(const std::string& root) { return root + "/" + kStateDirName; }
std::string lock_file(const std::string& root) { return state_dir(root) + "/lock"; }
std::string loop_lock_file(const std::string& root) { return state_dir(root) + "/loop.lock"; }
std::string trace_file(const std::string& root) { return state_dir(root) + "/trace.jsonl"; }
std::string journal_file(const std::string& root) { return state_dir(root) + "/journal.sqlite"; }
std::string escalated_flag(const std::string& root) { return state_dir(root) + "/ESCALATED"; }
std::string incidents_dir(const std::string& root) { return root + "/incidents"; }
std::string measured_dir(const std::string& root) { return state_dir(root) + "/measured"; }
std::string snapshots_dir(const std::string& root) { return state_dir(root) + "/snapshots"; }
std::string loop_state_file(const std::string& root) { return state_dir(root) + "/loop-state.json"; }
std::string loop_run_file(const std::string& root) { return state_dir(root) + "/loop-run.json"; }
std::string stop_flag(const std::string& root) { return state_dir(root) + "/STOP"; }
std::string task_prompt_file(const std::string& root) { return state_dir(root) + "/prompt-task.md"; }
std::string loop_prompt_file(const std::string& tree) { return state_dir(tree) + "/loop-prompt.md"; }
std::string hook_runs_file(const std::string& root) { return state_dir(root) + "/hook-runs.jsonl"; }
std::string unmeasured_pushes_file(const std::string& root) { return state_dir(root) + "/unmeasured-pushes.json"; }
std::string hook_installed_file(const std::string& root) { return state_dir(root) + "/hook-installed.json"; }
std::string hook_measured_file(const std::string& root) { return state_dir(root) + "/" + kHookMeasuredName; }
std::string agent_session_file(const std::string& root, const std::string& cli, const std::string& session) {
  return state_dir(root) + "/agent-sessions/" + cli + "-" + session + ".json";
}
std::string agent_stop_lock(const std::string& root) { return state_dir(root) + "/agent-stop.lock"; }
std::string legacy_worktrees_dir(const std::string& root) { return state_dir(root) + "/worktrees"; }
std::string legacy_sandboxes_dir(const std::string& root) { return state_dir(root) + "/sandboxes"; }

std::string contract_file(const std::string& check_id) {
  return std::string(kStateDirPrefix) + "contracts/" + check_id + ".json";
}
std::string baseline_file(const std::string& check_id) {
  return std::string(kStateDirPrefix) + "baselines/" + check_id + ".png";
}

const std::string& state_gitignore() {
  // '*' also matches the folders contracts/ and baselines/; each is let back
  // in, then everything below it (git cannot re-include a file whose
  // folder is excluded, so both lines are needed). The file ignores itself
  // too: git still reads it, and `git status` shows nothing of Phoenix's.
  static const std::string text =
      "# Written by Phoenix: its run files (journal, trace, locks, loop state) and this file\n"
      "# stay out of your commits. Approved contracts and baselines are yours to commit.\n"
      "*\n"
      "!contracts/\n"
      "!contracts/**\n"
      "!baselines/\n"
      "!baselines/**\n";
  return text;
}

const std::string& root_gitignore() {
  static const std::string text = "# Phoenix run files (contracts/ and baselines/ stay tracked)\n" +
                                  std::string(kRootIgnoreLine) + "\n!" + kStateDirPrefix + "contracts/\n!" +
                                  kStateDirPrefix + "baselines/\n";
  return text;
}

std::string ensure_state_dir(const std::string& root) {
  const std::string dir = state_dir(root);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create " + dir + ": " + ec.message());
  const std::string gi = dir + "/.gitignore";
  if (!fs::exists(gi, ec)) util::write_file_atomic(gi, state_gitignore());
  return dir;
}

}  // namespace phoenix::layout
