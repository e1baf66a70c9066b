// The paths of a work tree a status has to look at, found from the index's
// stat data instead of a status scan: what `git status` trusts (a file
// whose lstat matches its index entry is unchanged), read with one
// fstatat per file relative to its folder, on several threads. libgit2's
// status stats every file by its full path on one thread; at 100,000
// files the sweep costs a fraction of that, and the status that follows
// looks at the few paths it names. Not for use outside gitx.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gitx/libgit2.h"

namespace phoenix::gitx::internal {

struct Sweep {
  // Every path that may differ from the index, sorted:
  // - a tracked file whose lstat differs from its entry's (mtime, size,
  //   inode, kind, executable bit), or that is racily clean (written in the
  //   same tick as the index, or later), or that is missing, conflicted, a
  //   submodule, intent-to-add or skip-worktree;
  // - every name in a folder the index does not track (untracked, ignored
  //   or a nested repository: the status decides), a folder standing for
  //   all below it.
  std::vector<std::string> paths;
  // Tracked files whose stat matches but for the ctime: edited with their
  // mtime put back (cp -p, tar). git sees them (core.trustctime); libgit2's
  // status does not, so a caller that must not miss them rewrites them.
  std::vector<std::string> ctime_only;
  // false when a status limited to `paths` would not pay (more than an
  // eighth of the entries differ, as after a build that touched every
  // file): scan instead.
  bool narrows = true;
};

// The sweep of the work tree of `repo` against `index`; nullopt when a
// folder could not be read (permissions, no descriptors left).
std::optional<Sweep> stat_sweep(git_repository* repo, git_index* index);

// Whether the index of a linked worktree still holds exactly HEAD's tree,
// as the last forced checkout or commit through gitx left it
// (record_checkout wrote HEAD's id and the index file's checksum into the
// worktree's admin folder). When it does, nothing is staged and a sweep of
// the work tree is the whole status.
bool index_is_heads_tree(git_repository* repo);
// After a forced checkout or a commit that left the index equal to HEAD's
// tree (and the HEAD set): remembers both for index_is_heads_tree. Linked
// worktrees only; the user's own .git gets no file of Phoenix's.
void record_checkout(git_repository* repo);

}  // namespace phoenix::gitx::internal
