// gitx: the one door between Phoenix and git (libgit2 1.5).
//
// Everything Phoenix does to a repository goes through `Repo`: where it is,
// what HEAD is, whether the tree is clean, checkpoints, rollbacks, patches
// read back from a sandbox and applied to the real tree, bisect's commit
// lists and reverts, temporary worktrees and the hooks directory.
//
// Conventions (they hold for every member below):
// - A "sha" is 40 lowercase hex digits. A "rev" is anything `git rev-parse`
//   understands (sha, abbreviated sha, ref, `HEAD~2`, tag…) and must name a
//   commit (annotated tags are peeled). An unknown rev throws
//   phoenix::Error("unknown revision: REV", kExitUsage) — revisions usually
//   come from the command line.
// - Paths returned are repository-relative with '/' separators, except the
//   directory getters, which return absolute paths without a trailing slash.
// - "Untracked" always means untracked and not ignored: ignored files are
//   never listed, staged, diffed, or removed by anything in this file.
// - Nothing here knows which files are the caller's own: untracked files
//   are left out of a commit when under the `skip_untracked` prefixes the
//   caller passes, and spared by a removal of untracked files when under
//   its `keep_prefixes` (Phoenix passes what layout/paths.h names). Tracked
//   files there follow the commit like any other tracked file.
// - Every libgit2 failure throws phoenix::Error (exit code 1) whose message
//   is "libgit2: <operation>: <libgit2's own message>".
// - A Repo is move-only and used by one thread at a time. It re-reads the
//   index from disk before every operation, so other processes (git, an
//   agent) may change the repository between calls.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gitx/author.h"

struct git_repository;

namespace phoenix::gitx {

class TreeWatch;

// One changed path, as `git status` would show it, folded to one letter:
//   'U' conflicted (unmerged) in the index
//   'R' renamed in the index (path is the new name, old_path the old one)
//   'D' deleted in the index or in the work tree
//   'A' new in the index
//   '?' untracked (a nested repository shows as one "dir/" entry)
//   'M' anything else: content, mode or type changed (staged or not)
struct StatusEntry {
  char code = 'M';
  std::string path;
  std::string old_path;  // only for 'R'
};

struct RefEntry {
  std::string name;  // full name, e.g. "refs/phoenix/known-good"
  std::string sha;   // the object it resolves to (symbolic refs followed)
};

// What `git diff --shortstat` counts: files (binary files included, with no
// lines), added lines and removed lines.
struct PatchStats {
  size_t files = 0;
  size_t insertions = 0;
  size_t deletions = 0;
};

struct WorktreeInfo {
  std::string name;    // the name under <common_dir>/worktrees/
  std::string path;    // its working directory (absolute, may be gone)
  bool valid = false;  // false when the folder or its .git link is gone
  bool locked = false;
};

// Where a patch goes, like `git apply` (kWorkdir), `git apply --cached`
// (kIndex) and `git apply --index` (kBoth; work tree and index must agree
// on the touched files beforehand).
enum class ApplyLocation { kWorkdir, kIndex, kBoth };

struct CheckoutOptions {
  // false: a file whose work-tree content differs from the index (a local
  // change) and that the checkout would overwrite, or an untracked file in
  // the way, makes the whole checkout fail before anything is written.
  // true: such files are overwritten.
  bool force = false;
  // After the checkout, delete untracked files (never ignored ones, never
  // nested repositories, never those under keep_prefixes) and the
  // directories that became empty.
  bool remove_untracked = false;
  std::vector<std::string> keep_prefixes;
};

// The version of the libgit2 Phoenix runs with, "MAJOR.MINOR.REV" (what
// `phoenix doctor` reports).
std::string libgit2_version();

// How long a write waits for a lock file another process holds
// (.git/index.lock, a ref's .lock) before it fails naming the lock and its
// holder: phoenix.json's git.lock_wait_s (default 5). Process-wide.
void set_lock_wait_s(double seconds);

class Repo {
 public:
  // The repository containing `start_dir` (searching upwards, not across
  // file systems — as git does). GIT_DIR and friends are not consulted: git
  // runs hooks at the top of the work tree, so discover(cwd) finds it.
  // Throws Error("not a git repository: START_DIR", kExitUsage).
  static Repo discover(const std::string& start_dir);
  // `path` must itself be a work tree, a .git directory or a bare
  // repository; no search. Same error as discover().
  static Repo open(const std::string& path);

  Repo(Repo&&) noexcept;
  Repo& operator=(Repo&&) noexcept;
  ~Repo();

  // --- where -------------------------------------------------------------
  std::string workdir() const;     // top of the work tree; "" when bare
  std::string git_dir() const;     // .git, or .git/worktrees/NAME for a linked worktree
  std::string common_dir() const;  // the .git shared by all worktrees (== git_dir() otherwise)
  bool is_bare() const;

  // --- refs --------------------------------------------------------------
  // HEAD's commit; "" while the current branch is unborn (no commit yet).
  std::string head_sha() const;
  // The branch HEAD points to, short ("main"), also while unborn; "" when
  // HEAD is detached.
  std::string head_branch() const;
  // The full sha of the commit `rev` names.
  std::string resolve(const std::string& rev) const;
  // The id of the tree of the commit `rev` names.
  std::string tree_of(const std::string& rev) const;
  // The sha a ref resolves to, or nullopt when it does not exist.
  std::optional<std::string> read_ref(const std::string& name) const;
  // Creates or moves (force) `name` to the object `rev` names, with a
  // reflog entry `log_message`. Throws on an invalid ref name.
  void write_ref(const std::string& name, const std::string& rev, const std::string& log_message);
  // Deletes a ref; false when there was none.
  bool delete_ref(const std::string& name);
  // Every ref whose full name starts with `prefix` ("" = all; HEAD is not a
  // ref here), sorted by name. Dangling symbolic refs are skipped.
  std::vector<RefEntry> list_refs(const std::string& prefix) const;

  // --- state of the work tree --------------------------------------------
  // Staged, unstaged and untracked changes, sorted by path (staged renames
  // detected, untracked directories listed file by file).
  std::vector<StatusEntry> status() const;
  // From now on, status (and so is_clean(), the commits' staging) looks
  // only at the paths the kernel saw written since the tree was last known
  // clean, when it can tell (gitx/watch.h); a scan of the whole tree when
  // it cannot. For a worktree Phoenix owns and keeps for many runs (the
  // loop's). False when the kernel refuses: every status scans, as before.
  bool watch_work_tree();
  // No entry of status() outside `ignore_prefixes`. A prefix ending in '/'
  // covers everything below that folder; one without covers that path and,
  // if it is a folder, everything below it.
  bool is_clean(const std::vector<std::string>& ignore_prefixes = {}) const;
  // Like is_clean(), but untracked files do not count: only tracked files
  // that are modified, deleted, staged or conflicted (what git's own tools
  // refuse to work over) make a tree dirty here.
  bool tracked_clean(const std::vector<std::string>& ignore_prefixes = {}) const;
  // The untracked (not ignored) files outside `ignore_prefixes`, sorted;
  // a nested repository shows as one "dir/" entry.
  std::vector<std::string> untracked_files(const std::vector<std::string>& ignore_prefixes = {}) const;
  // `git ls-files --cached --others --exclude-standard`: every path in the
  // index plus every untracked file that is not ignored, sorted, unique.
  std::vector<std::string> listed_files() const;

  // --- commits -----------------------------------------------------------
  // `git add -u` (plus `git add -A` for untracked files when asked, minus
  // untracked files under `skip_untracked`: see is_clean() for how a prefix
  // matches), then commit on HEAD as author = committer = Phoenix (gitx/author.h), now; returns the
  // new sha. Works on an unborn branch (root commit) and on a detached HEAD
  // (HEAD itself moves). Always creates a commit, even an empty one: ask
  // is_clean() first for "only if something changed". The message is
  // cleaned like `git commit --cleanup=whitespace`; an empty one throws.
  std::string commit_all(const std::string& message, bool include_untracked,
                         const std::vector<std::string>& skip_untracked);
  // `git add -u`, then `git add -- PATHS` (a path gone from the work tree
  // is removed from the index), then commit as commit_all(): other
  // untracked files stay out of the commit. What a heal commits on a tree
  // that holds the user's own untracked files.
  std::string commit_tracked_and(const std::vector<std::string>& paths, const std::string& message);
  // The same commit (parent HEAD, none when unborn) but like
  // `git stash create`: no ref moves and the index on disk is untouched.
  // A checkpoint of the work tree that never rewrites the user's branch.
  std::string snapshot_workdir(const std::string& message, bool include_untracked,
                               const std::vector<std::string>& skip_untracked);

  // The id of the tree snapshot_workdir would commit (tracked files as the
  // work tree has them, with the untracked ones that are not ignored and
  // not under `skip_untracked`), written to the object database but named
  // by no commit; the index on disk is untouched. Equal to HEAD's tree on
  // a clean tree: what the measurement store keys a work tree by.
  std::string workdir_tree(const std::vector<std::string>& skip_untracked);

  // Puts `paths` back exactly as they are in commit `rev`: content and mode
  // written for those it holds, deleted (with folders left empty) for those
  // it does not. Nothing else in the work tree or the index is touched: the
  // way to undo a patch on a tree that had uncommitted changes of its own.
  void restore_paths(const std::string& rev, const std::vector<std::string>& paths);

  // `git reset --hard REV`: HEAD's branch (or detached HEAD) moves to rev,
  // index and tracked files become rev's, locally modified and deleted
  // files are restored, staged new files go. With remove_untracked, then
  // also `git clean -d` minus the exceptions of CheckoutOptions.
  void reset_hard(const std::string& rev, bool remove_untracked, const std::vector<std::string>& keep_prefixes = {});
  // Makes index and work tree rev's tree without moving HEAD. Incremental:
  // the index is taken as what the work tree holds, and only files that
  // differ are written (mtimes of the rest are kept, so builds stay warm).
  // Forced (with a HEAD commit), the work tree is scanned once: one status
  // pass finds local changes and untracked files, a tree diff against HEAD
  // what rev changes, and the checkout looks at those paths only.
  void checkout_tree(const std::string& rev, const CheckoutOptions& options = {});
  // checkout_tree(), then HEAD detached at rev.
  void checkout_detached(const std::string& rev, const CheckoutOptions& options = {});

  // --- history -----------------------------------------------------------
  // `git rev-list --first-parent --reverse FROM..TO`: the commits after
  // `from_exclusive` up to and including `to_inclusive`, oldest first,
  // along first parents (what bisect walks). from "" = from the root.
  std::vector<std::string> rev_list(const std::string& from_exclusive, const std::string& to_inclusive) const;
  // `git merge-base --is-ancestor A B` (a commit is its own ancestor).
  bool is_ancestor(const std::string& ancestor, const std::string& descendant) const;
  // `git merge-base A B`: their best common ancestor; "" when they have none.
  std::string merge_base(const std::string& a, const std::string& b) const;
  // The full message exactly as stored (normally ends with '\n').
  std::string commit_message(const std::string& rev) const;
  // Paths the commit changed against its first parent (everything for a
  // root commit); a rename gives both names. Sorted, unique.
  std::vector<std::string> commit_files(const std::string& rev) const;
  // Paths whose entries differ between the trees of commits `from` and `to`
  // (a folder on one side only lists every file under it). Folders with the
  // same id are not read. Sorted, unique. What a task changed, net.
  std::vector<std::string> changed_paths(const std::string& from, const std::string& to) const;

  // --- patches -----------------------------------------------------------
  // Patch text is git's extended unified diff: renames detected, new,
  // deleted, mode-changed and binary files included ("GIT binary patch" with
  // full index lines), so both `git apply` and apply_patch() take it. ""
  // when nothing differs.
  //
  // From commit `from` ("" = empty tree) to commit `to`.
  std::string diff_patch(const std::string& from, const std::string& to) const;
  // From commit `base` ("" = empty tree) to the work tree as it is now,
  // staged or not, every untracked file included (guards decide what a
  // patch may touch). A file moved in the work tree is a rename.
  std::string diff_workdir_patch(const std::string& base) const;
  // Every path a patch touches, old and new names of renames. Sorted,
  // unique. Throws on text that is not a patch ("" is an empty patch).
  static std::vector<std::string> patch_files(const std::string& patch);
  static PatchStats patch_stats(const std::string& patch);
  // Applies the patch, all or nothing; throws Error carrying libgit2's
  // reason (e.g. which hunk did not apply). "" is a no-op.
  void apply_patch(const std::string& patch, ApplyLocation where = ApplyLocation::kWorkdir);
  // Whether apply_patch() would succeed now, changing nothing. When not,
  // libgit2's reason goes to *why (if given).
  bool check_patch_applies(const std::string& patch, ApplyLocation where = ApplyLocation::kWorkdir,
                           std::string* why = nullptr) const;
  // The patch that undoes commit `rev` on top of HEAD (`git revert
  // --no-commit`, merges against their first parent), computed in memory:
  // work tree, index and refs are untouched. "" when HEAD already lacks the
  // change. Throws Error naming the paths when the revert conflicts.
  std::string revert_patch(const std::string& rev) const;
  // Puts the change `base`..`theirs` on top of commit `ours` (what a
  // squashing `git rebase --onto ours base theirs` does): a three-way merge
  // of the three trees in memory. Clean: a new commit holding the merged
  // tree, parent `ours`, author = committer = Phoenix, now, is written
  // (no ref, index or work tree changes) and its sha returned. Conflicted:
  // "" and the conflicting paths (sorted) in *conflicts.
  std::string merge_onto(const std::string& base, const std::string& ours, const std::string& theirs,
                         const std::string& message, std::vector<std::string>* conflicts) const;
  // A commit whose parent is `parent` and whose tree is `tip`'s, except the
  // paths in `as_in_parent`, which are as they are in `parent` (absent
  // there: absent). What `tip` changed since `parent`, as one commit,
  // without those paths. Author = committer = Phoenix, now. No ref,
  // index or work tree changes; returns its sha.
  std::string squash(const std::string& parent, const std::string& tip, const std::vector<std::string>& as_in_parent,
                     const std::string& message) const;

  // --- worktrees ---------------------------------------------------------
  // `git worktree add --detach PATH REV` under `name`. `path` must not
  // exist; no branch is left behind. On failure nothing is left behind.
  void worktree_add(const std::string& name, const std::string& path, const std::string& rev);
  // Forgets worktree `name` and deletes its folder; works when the folder
  // is already gone. False when no such worktree. A locked one throws.
  bool worktree_remove(const std::string& name);
  // The linked worktrees (not the main one), in libgit2's order.
  std::vector<WorktreeInfo> worktree_list() const;

  // --- configuration -----------------------------------------------------
  // Where git looks for hooks: core.hooksPath (~ expanded; relative to the
  // top of the work tree, or to the git dir when bare), else
  // <common_dir>/hooks. Absolute, normalized; the folder may not exist.
  std::string hooks_dir() const;
  // The effective value of a config key (repo > global > system), as
  // written; nullopt when unset.
  std::optional<std::string> config_get(const std::string& key) const;

  // --- data kept under refs (refs/phoenix/journal) -------------------------
  // A commit whose tree holds one file, `filename` (no '/'), with
  // `content`, parents `parents` (shas, may be empty), author = committer =
  // phoenix <phoenix@localhost>, now; `ref` (full name) is created or moved
  // to it (force). Work tree, index and HEAD are untouched. Returns its sha.
  std::string write_blob_commit(const std::string& ref, const std::string& filename, const std::string& content,
                                const std::string& message, const std::vector<std::string>& parents = {});
  // The bytes of the file `path` in the tree of the commit `rev` names;
  // nullopt when that tree has no such file (or it is a folder). A rev that
  // does not name a commit (e.g. a ref made by hand to point at a blob)
  // throws Error("not a commit: REV", kExitUsage), as resolve() does.
  std::optional<std::string> read_blob_at(const std::string& rev, const std::string& path) const;

 private:
  struct Free {
    void operator()(git_repository* repo) const;
  };
  explicit Repo(git_repository* repo);
  git_repository* raw() const { return repo_.get(); }
  // The lock files a write to the index or HEAD takes (lg2::with_lock_wait).
  std::vector<std::string> index_locks() const;
  std::string commit_all_now(const std::string& message, bool include_untracked,
                             const std::vector<std::string>& skip_untracked);
  std::string commit_tracked_and_now(const std::vector<std::string>& paths, const std::string& message);

  // The paths a status must look at: nullopt for all of them.
  std::optional<std::vector<std::string>> watched_paths() const;
  // After a commit or reset that left the tree as HEAD says, except `kept`.
  void watch_clean(const std::vector<std::string>& kept);

  std::unique_ptr<git_repository, Free> repo_;
  std::unique_ptr<TreeWatch> watch_;
};

}  // namespace phoenix::gitx
