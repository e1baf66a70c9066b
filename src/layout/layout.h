// layout: every path Phoenix owns in a user's repository, in one place.
//
// In the work tree, one folder, `.phoenix/`, and the incident notes: their
// names are in layout/paths.h (included here), which knows nothing of git.
//
// Outside the work tree, where no project tool looks (not even inside .git:
// node's test runner walks it): one folder per repository,
// ${PHOENIX_TREES_DIR:-${XDG_CACHE_HOME:-~/.cache}/phoenix/trees}/<name>-<id>,
// <name> the main work tree's folder name, <id> from the path of its
// (common) git directory: every worktree of the repository shares it, as
// the git names of Phoenix's worktrees are shared. It holds
//   repository        the git directory it belongs to; a folder whose
//                     repository is gone is removed by the next Phoenix
//                     run that makes a tree
//   worktrees/<name>  the persistent worktrees of the loop ("loop-…"),
//                     bisect ("bisect", "bisect-2"...), the pre-push hook ("phoenix-hook-…")
//                     and init's fresh tree ("init")
//   sandboxes/        fixers' sandboxes
//   setup/<name>.json each tree's setup stamp (setup/setup.h)
//   locks/<name>.lock the lock (util/lock.h) a run holds on a tree while it
//                     uses it, so that runs at the same time never share
//                     one (bisect's trees: fixers/bisect.h)
// Without a usable HOME (or when that place lies inside the repository)
// the folder is <common git dir>/phoenix.
// Earlier versions kept worktrees and sandboxes under .phoenix/ in the work
// tree, where test runners that search the whole tree (vitest, jest,
// pytest) found their copies of the code; migrate_legacy_trees() removes
// them once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "layout/paths.h"

namespace phoenix::gitx {
class Repo;
}

namespace phoenix::layout {

// The folder of Phoenix's trees for this repository (see above), created
// and claimed on first use in a process. Throws phoenix::Error naming it
// when it cannot be created.
std::string trees_root(const gitx::Repo& repo);
std::string worktree_path(const gitx::Repo& repo, const std::string& name);
// The name git knows one of Phoenix's trees by ("phoenix-<name>"), as
// `git worktree list` shows it.
std::string worktree_git_name(const std::string& name);
std::string sandboxes_dir(const gitx::Repo& repo);
std::string setup_stamp(const gitx::Repo& repo, const std::string& tree_name);
std::string tree_lock(const gitx::Repo& repo, const std::string& tree_name);

// Throws Error (exit 1) naming the first of these that cannot be written,
// before a command that writes has written anything: the work tree, the
// git directory (and the common one, for a linked worktree), .phoenix/.
// access(2) answers for permission bits and for a read-only mount alike
// (root included: a read-only file system refuses root too).
void require_writable(const gitx::Repo& repo);

// Removes, once, what earlier versions left inside the work tree:
// worktrees registered under <top>/.phoenix/worktrees/ (registration and
// folder; a locked one is left and named), folders there that are linked
// worktrees of this repository, and sandboxes under .phoenix/sandboxes/.
// Nothing else under .phoenix/ is touched. Returns what it did, one line
// each ("removed the old worktree .phoenix/worktrees/bisect").
// It also drops the checkpoint refs (refs/phoenix/checkpoints/worktrees/
// <name>/) of Phoenix's own trees that are gone (a tree with a lock file
// under locks/ that no run holds and git no longer lists); a user's own
// worktree's are kept, since after `git worktree remove --force` they may
// be the only copy of its work.
std::vector<std::string> migrate_legacy_trees(gitx::Repo& repo);

// known-good is kept per line of work: refs/phoenix/known-good/<branch>
// (refs/phoenix/known-good/HEAD for a detached HEAD: git allows no branch
// of that name), so a night on the loop's branch never moves the point the
// user's own hook and `phoenix run` fall back to.
inline constexpr const char* kKnownGoodPrefix = "refs/phoenix/known-good/";
// phoenix-loop's red attempts, one ref each: <prefix><loop>/<task>/<n>.
inline constexpr const char* kAttemptsPrefix = "refs/phoenix/attempts/";
// Where earlier versions kept the one known-good of the repository.
inline constexpr const char* kLegacyKnownGoodRef = "refs/phoenix/known-good";
// The engine's checkpoints (invariant 1, docs/invariants.md), a pair per tree so that runs in
// two trees of one repository at once (two `phoenix run`s in two
// worktrees, two loop workers' heals) never overwrite each other's:
// refs/phoenix/checkpoints/<tree>/pre-run (a run's first checkpoint) and
// .../attempt (its latest), <tree> "main" for the main work tree and
// "worktrees/<git name>" for a linked one (Phoenix's own trees included).
// Only one run at a time uses a tree (.phoenix/lock, the tree locks).
inline constexpr const char* kCheckpointsPrefix = "refs/phoenix/checkpoints/";
std::string checkpoint_tree(const gitx::Repo& repo);
std::string pre_run_ref(const gitx::Repo& repo);
std::string attempt_ref(const gitx::Repo& repo);
// What earlier versions wrote, shared by every run in the repository: no
// longer written, left where they are (the folders above do not clash).
inline constexpr const char* kLegacyPreRunRef = "refs/phoenix/checkpoints/pre-run";
inline constexpr const char* kLegacyAttemptRef = "refs/phoenix/checkpoints/attempt";

// What a rollback, a recovery or phoenix-loop keeps of work it moves away
// from: refs/phoenix/abandoned/<time>[-what].
inline constexpr const char* kAbandonedPrefix = "refs/phoenix/abandoned/";
// The journal shared through a remote (journal/share.h) and where a fetch
// of the remote's is kept while it is merged; the same pair for the
// measurement store (journal/measured_share.h).
inline constexpr const char* kJournalRef = "refs/phoenix/journal";
inline constexpr const char* kJournalRemoteRef = "refs/phoenix/journal-remote";
inline constexpr const char* kMeasuredRef = "refs/phoenix/measured";
inline constexpr const char* kMeasuredRemoteRef = "refs/phoenix/measured-remote";
// phoenix-loop's merge queue, one ref per entry (loop/queue.h), and the
// task branches a `--merge` fetched: <prefix>task-<id>.
inline constexpr const char* kQueuePrefix = "refs/phoenix/queue/";
inline constexpr const char* kFetchedPrefix = "refs/phoenix/fetched/";
// phoenix-loop's branches (under refs/heads/phoenix/): a night's default,
// phoenix/loop-<YYYYMMDD> (UTC, `yyyymmdd` as "20261204"); a shard's,
// phoenix/shard-<i>-of-<n>; a shard's branch of one task done green
// (loop/shard.h), phoenix/task-<id>.
std::string loop_branch(const std::string& yyyymmdd);
std::string shard_branch(int index, int count);
std::string task_branch(const std::string& task_id);

// The known-good ref of `branch` ("main", "phoenix/loop-20261204"; "" for
// a detached HEAD).
std::string known_good_ref_of(const std::string& branch);
// The known-good ref of the branch `repo`'s HEAD is on. An earlier
// version's refs/phoenix/known-good (in the way of the folder of the new
// refs) is moved there first when it is an ancestor of HEAD, and otherwise
// kept under refs/phoenix/abandoned/known-good-<time>.
std::string known_good_ref(gitx::Repo& repo);
// The commit `ref` (a known-good ref) names; a branch without one of its
// own (a new feature branch) falls back to the nearest known-good of
// another line of work that is an ancestor of HEAD. nullopt: none.
std::optional<std::string> known_good_commit(const gitx::Repo& repo, const std::string& ref);

}  // namespace phoenix::layout
