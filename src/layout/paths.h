// The plain names of what Phoenix keeps in a repository's work tree: one
// folder, `.phoenix/` (kStateDirName), and the incident notes. What is there:
//   .gitignore        written by Phoenix (ensure_state_dir): ignores every
//                     run file and itself, so a plain `git add -A` commits
//                     none of them and `git status` shows none of them;
//                     contracts/ and baselines/ stay committable
//   contracts/ baselines/   approved contract shapes and visual baselines
//   journal.sqlite trace.jsonl lock loop.lock loop-state.json loop-run.json
//   hook-runs.jsonl unmeasured-pushes.json hook-measured.json (hook/)
//   measured/         the measurement store (checks/measured.h)
//   ESCALATED STOP    run files (DESIGN.md "Files in a user's repository")
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

// Creates <root>/.phoenix when missing and writes its .gitignore when that
// is missing (never overwrites one the user edited). Returns state_dir().
// Throws phoenix::Error naming the path when it cannot be written.
std::string ensure_state_dir(const std::string& root);
// The text of .phoenix/.gitignore.
const std::string& state_gitignore();

}  // namespace phoenix::layout
