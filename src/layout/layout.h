// layout: every path Phoenix owns in a user's repository, in one place.
//
// In the work tree, one folder: `.phoenix/` (kStateDir). What is there:
//   .gitignore        written by Phoenix (ensure_state_dir): ignores every
//                     run file and itself, so a plain `git add -A` commits
//                     none of them and `git status` shows none of them;
//                     contracts/ and baselines/ stay committable
//   contracts/ baselines/   approved contract shapes and visual baselines
//   journal.sqlite trace.jsonl lock loop.lock loop-state.json loop-run.json
//   ESCALATED STOP    run files (DESIGN.md "Files in a user's repository")
//
// Outside the work tree, where no project tool looks (not even inside .git:
// node's test runner walks it): one folder per repository,
// ${PHOENIX_TREES_DIR:-${XDG_CACHE_HOME:-~/.cache}/phoenix/trees}/<name>-<id>,
// <id> from the path of its git directory, holding
//   repository        the git directory it belongs to; a folder whose
//                     repository is gone is removed by the next Phoenix
//                     run that makes a tree
//   worktrees/<name>  the persistent worktrees of the loop ("loop-…"),
//                     bisect ("bisect"), the pre-push hook ("phoenix-hook-…")
//                     and init's fresh tree ("init")
//   sandboxes/        fixers' sandboxes
//   setup/<name>.json each tree's setup stamp (setup/setup.h)
// Without a usable HOME (or when that place lies inside the repository)
// the folder is <common git dir>/phoenix.
// Earlier versions kept worktrees and sandboxes under .phoenix/ in the work
// tree, where test runners that search the whole tree (vitest, jest,
// pytest) found their copies of the code; migrate_legacy_trees() removes
// them once.
#pragma once

#include <string>
#include <vector>

namespace phoenix::gitx {
class Repo;
}

namespace phoenix::layout {

// ".phoenix" and ".phoenix/" (repository-relative).
inline constexpr const char* kStateDirName = ".phoenix";

// Untracked paths that never make a tree dirty and survive every reset:
// Phoenix's own state and the incident notes it writes.
const std::vector<std::string>& keep_prefixes();

// <root>/.phoenix and the files in it.
std::string state_dir(const std::string& root);
std::string lock_file(const std::string& root);         // .phoenix/lock
std::string loop_lock_file(const std::string& root);    // .phoenix/loop.lock
std::string trace_file(const std::string& root);        // .phoenix/trace.jsonl
std::string journal_file(const std::string& root);      // .phoenix/journal.sqlite
std::string escalated_flag(const std::string& root);    // .phoenix/ESCALATED
std::string incidents_dir(const std::string& root);     // incidents/

// Creates <root>/.phoenix when missing and writes its .gitignore when that
// is missing (never overwrites one the user edited). Returns state_dir().
// Throws phoenix::Error naming the path when it cannot be written.
std::string ensure_state_dir(const std::string& root);
// The text of .phoenix/.gitignore.
const std::string& state_gitignore();

// The folder of Phoenix's trees for this repository (see above), created
// and claimed on first use in a process. Throws phoenix::Error naming it
// when it cannot be created.
std::string trees_root(const gitx::Repo& repo);
std::string worktree_path(const gitx::Repo& repo, const std::string& name);
std::string sandboxes_dir(const gitx::Repo& repo);
std::string setup_stamp(const gitx::Repo& repo, const std::string& tree_name);

// Removes, once, what earlier versions left inside the work tree:
// worktrees registered under <top>/.phoenix/worktrees/ (registration and
// folder; a locked one is left and named), folders there that are linked
// worktrees of this repository, and sandboxes under .phoenix/sandboxes/.
// Nothing else under .phoenix/ is touched. Returns what it did, one line
// each ("removed the old worktree .phoenix/worktrees/bisect").
std::vector<std::string> migrate_legacy_trees(gitx::Repo& repo);

}  // namespace phoenix::layout
