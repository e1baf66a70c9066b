// What gitx's own files (repo.cc, checkout.cc, diff.cc, worktree.cc) share beyond the
// libgit2 plumbing: reading revisions, trees and diffs. Not for use outside
// gitx; include only from .cc files.
#pragma once

#include <string>
#include <vector>

#include "gitx/libgit2.h"

namespace phoenix::gitx::internal {

// A directory path as libgit2 gives it, without its trailing '/' ("" for null).
std::string strip_trailing_slash(const char* p);

// The object `rev` names; unknown or ambiguous revisions throw
// Error(..., kExitUsage) as repo.h describes.
lg2::ObjectPtr revparse(git_repository* repo, const std::string& rev);
// The commit `rev` names (tags peeled); "not a commit: REV" otherwise.
lg2::CommitPtr lookup_commit(git_repository* repo, const std::string& rev);
lg2::TreePtr commit_tree(const git_commit* commit);
// The tree of `rev`, or null (libgit2's empty tree) for "".
lg2::TreePtr tree_or_empty(git_repository* repo, const std::string& rev);
// HEAD's commit, or null while unborn.
lg2::CommitPtr head_commit(git_repository* repo);
// The path of the repository's (or linked worktree's) index file.
std::string index_file(git_repository* repo);
// A status with untracked files (folders recursed into), renames from HEAD
// to the index, sorted by path; `paths`, when given, limits it to those
// exact paths (a folder covers all below it): what a TreeWatch saw written.
lg2::StatusListPtr status_list(git_repository* repo, git_status_show_t show,
                               const std::vector<std::string>* paths = nullptr);

// Limits a status to `paths` (exact paths; a folder covers all below it),
// when given: what a TreeWatch saw written.
struct Pathspec {
  std::vector<char*> raw;
  explicit Pathspec(const std::vector<std::string>* paths) {
    if (paths)
      for (const std::string& p : *paths) raw.push_back(const_cast<char*>(p.c_str()));
  }
  void apply(git_status_options& o, const std::vector<std::string>* paths) {
    if (!paths) return;
    o.pathspec.strings = raw.data();
    o.pathspec.count = raw.size();
    o.flags |= GIT_STATUS_OPT_DISABLE_PATHSPEC_MATCH;
  }
};

// Tree to tree, renames detected; for_patch adds binary content.
lg2::DiffPtr diff_trees(git_repository* repo, const git_tree* from, const git_tree* to, bool for_patch);
// Every path a diff touches (old and new names), sorted, unique.
std::vector<std::string> delta_paths(git_diff* diff);
// Appends the path of every file that differs between trees `a` and `b`
// (either may be null: empty), each under `dir` ("" at the top); folders
// with the same id on both sides are skipped unread (checkout.cc).
void changed_files(git_repository* repo, const git_tree* a, const git_tree* b, const std::string& dir,
                   std::vector<std::string>& out);

}  // namespace phoenix::gitx::internal
