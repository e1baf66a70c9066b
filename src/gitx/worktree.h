// Persistent linked worktrees: another view of the repository that costs
// what differs, not what exists.
//
// `git worktree add` writes every tracked file (on a 100,000-file
// repository that is close to a minute, almost all system time); moving an
// existing worktree to another commit writes only the files that differ.
// So every part of Phoenix that needs the repository at another commit —
// bisect, the pre-push hook for a commit that is not a clean HEAD, the
// overnight loop — keeps one named worktree (where: layout/layout.h, under
// the git directory's phoenix/ folder) and moves it with prepare_worktree() instead of creating one per use.
//
// A worktree found is trusted only when everything about it checks out:
// the repository lists it under the expected name at the expected path, it
// is valid, it opens as a worktree of this repository whose .git points to
// its own admin folder, its HEAD names a commit, and it checks out cleanly.
// Anything else — folder missing or left without registration, .git link
// broken or pointing elsewhere, admin entry gone or unreadable, another
// worktree registered at the path — and it is removed and created afresh.
// Ignored files there (build outputs) survive reuse on purpose, so builds
// stay warm; every other change the last user left (edited tracked files,
// staged files, untracked files outside the caller's `keep_prefixes`) is
// discarded before use.
#pragma once

#include <string>
#include <vector>

#include "gitx/repo.h"

namespace phoenix::gitx {

struct PersistentWorktree {
  enum class State { kCreated, kReused, kRecreated };
  std::string path;  // absolute, normalized
  State state = State::kCreated;
  std::string damage;  // kRecreated: what was wrong with the old one
};

// Makes `path` a healthy, clean linked worktree of `repo` registered as
// `name` (under <common_dir>/worktrees/), with HEAD detached at `rev`:
// reused — one forced incremental checkout of rev's tree, which discards
// edits and staged changes and removes untracked files outside
// `keep_prefixes` — when it can be
// trusted (see above; one that cannot be checked out is not), otherwise
// created — after removing whatever damaged one was there. Throws
// phoenix::Error when `path` overlaps the user's work tree or the git
// directory other than below its phoenix/ folder (damage handling deletes
// that folder), when the worktree is
// locked, or when git fails.
PersistentWorktree prepare_worktree(Repo& repo, const std::string& name, const std::string& path,
                                    const std::string& rev, const std::vector<std::string>& keep_prefixes);

// Moves a worktree already known healthy to `rev`: only files that differ
// are written; edits and untracked files left there are discarded (those
// under `keep_prefixes` aside, see CheckoutOptions); ignored files are kept. HEAD is detached at rev. Costs one status scan of the work
// tree (what `git status` costs) plus the files that differ.
void move_worktree(Repo& worktree, const std::string& rev, const std::vector<std::string>& keep_prefixes);

}  // namespace phoenix::gitx
