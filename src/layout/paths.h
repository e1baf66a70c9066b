// The plain names of what Phoenix keeps in a repository's work tree: one
// folder, `.phoenix/` (kStateDirName), and the incident notes. What is there:
//   .gitignore        written by Phoenix (ensure_state_dir): ignores every
//                     run file and itself, so a plain `git add -A` commits
//                     none of them and `git status` shows none of them;
//                     contracts/ and baselines/ stay committable
//   contracts/ baselines/   approved contract shapes and visual baselines
//   journal.sqlite trace.jsonl lock loop.lock loop-state.json loop-run.json
//   hook-runs.jsonl unmeasured-pushes.json hook-measured.json
//   hook-installed.json (hook/)
//   agent-sessions/ agent-stop.lock   agent sessions' stop hook (hook/)
//   measured/         the measurement store (checks/measured.h)
//   ESCALATED STOP    flag files: an escalation's incident, a stop asked of
//                     phoenix-loop
//   prompt-task.md loop-prompt.md snapshots/   (below)
//
// Names only, and the folder's .gitignore: no git, so the thin pre-push
// binary (phoenix_lite) uses them too. Phoenix's trees outside the work
// tree are in layout/layout.h.
#pragma once

#include <string>
#include <vector>

namespace phoenix::layout {

// ".phoenix" and ".phoenix/" (repository-relative).
inline constexpr const char* kStateDirName = ".phoenix";
inline constexpr const char* kStateDirPrefix = ".phoenix/";
inline constexpr const char* kStateDirGlob = ".phoenix/**";  // as phoenix.json's globs say it

// Untracked paths that never make a tree dirty and survive every reset:
// Phoenix's own state and the incident notes it writes.
const std::vector<std::string>& keep_prefixes();
// Untracked paths no commit or snapshot of Phoenix's stages and no clean of
// a worktree removes: its own state folder alone (incident notes are
// committed). What gitx's commit_all, snapshot_workdir and
// prepare_worktree are given to skip.
const std::vector<std::string>& state_prefixes();
// The refs Phoenix writes in a repository (refs/phoenix/..., its branches
// under refs/heads/phoenix/): what a gitx::RepoGuard around a program
// Phoenix runs leaves to Phoenix.
const std::vector<std::string>& own_ref_prefixes();

// <root>/.phoenix and the files in it.
std::string state_dir(const std::string& root);
std::string lock_file(const std::string& root);       // .phoenix/lock
std::string loop_lock_file(const std::string& root);  // .phoenix/loop.lock
std::string trace_file(const std::string& root);      // .phoenix/trace.jsonl
std::string journal_file(const std::string& root);    // .phoenix/journal.sqlite
std::string escalated_flag(const std::string& root);  // .phoenix/ESCALATED
std::string incidents_dir(const std::string& root);   // incidents/
std::string measured_dir(const std::string& root);    // .phoenix/measured (checks/measured.h)
std::string snapshots_dir(const std::string& root);   // .phoenix/snapshots (`phoenix snapshot`)
// phoenix-loop's (loop/): its state for pollers, the run a --resume carries
// on, the file whose presence stops it, a repository's own task prompt
// (read in place of the installed template) and the prompt file an agent
// reads in a tree (written there).
std::string loop_state_file(const std::string& root);   // .phoenix/loop-state.json
std::string loop_run_file(const std::string& root);     // .phoenix/loop-run.json
std::string stop_flag(const std::string& root);         // .phoenix/STOP
std::string task_prompt_file(const std::string& root);  // .phoenix/prompt-task.md
std::string loop_prompt_file(const std::string& tree);  // .phoenix/loop-prompt.md
// The pre-push hook's (hook/).
std::string hook_runs_file(const std::string& root);          // .phoenix/hook-runs.jsonl
std::string unmeasured_pushes_file(const std::string& root);  // .phoenix/unmeasured-pushes.json
std::string hook_measured_file(const std::string& root);      // .phoenix/hook-measured.json
std::string hook_installed_file(const std::string& root);     // .phoenix/hook-installed.json
inline constexpr const char* kHookMeasuredName = "hook-measured.json";
// The stop hook of agent sessions (hook/agent_stop.h): one file per
// session (what was refused, which failures, the verdict), and the lock
// that measures one session's stop at a time in a work tree.
std::string agent_session_file(const std::string& root, const std::string& cli,
                               const std::string& session);  // .phoenix/agent-sessions/<cli>-<session>.json
std::string agent_stop_lock(const std::string& root);        // .phoenix/agent-stop.lock
// Where earlier versions kept Phoenix's trees (migrate_legacy_trees).
std::string legacy_worktrees_dir(const std::string& root);  // .phoenix/worktrees
std::string legacy_sandboxes_dir(const std::string& root);  // .phoenix/sandboxes

// Repository-relative: an approved contract shape and a visual baseline of
// the check `check_id` (checks/contract.h, checks/visual.h), committable.
std::string contract_file(const std::string& check_id);  // .phoenix/contracts/<id>.json
std::string baseline_file(const std::string& check_id);  // .phoenix/baselines/<id>.png

// Names Phoenix gives files outside .phoenix/: a scratch file it writes
// into a sandbox's tree (".phoenix-prompt.md", sandbox/sandbox.h), the
// hook a pre-push hook of Phoenix's moved aside and chains to
// (<hooks>/pre-push.phoenix-chained, hook/hook.h), and the temporary
// siblings of a path a snapshot restores.
inline constexpr const char* kScratchPrefix = ".phoenix-";
inline constexpr const char* kChainedHookSuffix = ".phoenix-chained";
inline constexpr const char* kRestoreSuffix = ".phoenix-restore-";
inline constexpr const char* kRestoreOldSuffix = ".phoenix-old-";

// Creates <root>/.phoenix when missing and writes its .gitignore when that
// is missing (never overwrites one the user edited). Returns state_dir().
// Throws phoenix::Error naming the path when it cannot be written.
std::string ensure_state_dir(const std::string& root);
// The text of .phoenix/.gitignore.
const std::string& state_gitignore();
// What `phoenix init` appends to the repository's own .gitignore, the same
// rule seen from the top (contracts/ and baselines/ stay tracked), unless a
// line of it already has kRootIgnoreLine.
inline constexpr const char* kRootIgnoreLine = ".phoenix/*";
const std::string& root_gitignore();

}  // namespace phoenix::layout
