// The forced, incremental checkout behind Repo::checkout_tree,
// checkout_detached and reset_hard: which paths can differ (a tree diff
// that skips identical folders, one status scan, the stat sweep), and the
// workarounds for what libgit2 1.5 gets wrong on its own (symbolic links in
// the way, files gone where folders come, a file skipped where the index
// had a folder); the untracked files a checkout removes, keep_prefixes
// kept.
#include "gitx/repo.h"

#include <git2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <system_error>

#include "gitx/names.h"
#include "gitx/prefix.h"
#include "gitx/stat_sweep.h"
#include "util/error.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::gitx {

namespace {

using util::starts_with;

// Appends the path of every file under `tree` ("dir/" + its path), for a
// folder only one side has.
void all_paths(const git_tree* tree, const std::string& dir, std::vector<std::string>& out) {
  struct Walk {
    const std::string& dir;
    std::vector<std::string>& out;
  } walk{dir, out};
  check(git_tree_walk(
            tree, GIT_TREEWALK_PRE,
            [](const char* root, const git_tree_entry* e, void* payload) {
              auto* w = static_cast<Walk*>(payload);
              if (git_tree_entry_type(e) != GIT_OBJECT_TREE) w->out.push_back(w->dir + root + git_tree_entry_name(e));
              return 0;
            },
            &walk),
        "walk tree");
}

}  // namespace

// ---------------------------------------------------------------------------
// Shared with repo.cc (internal.h).

namespace internal {

// Appends the path of every file that differs between trees `a` and `b`
// (either may be null: empty). Folders with the same id on both sides are
// skipped unread, so a commit that changes one file costs the trees on its
// path, not the whole tree (git_diff_tree_to_tree reads every folder).
void changed_files(git_repository* repo, const git_tree* a, const git_tree* b, const std::string& dir,
                   std::vector<std::string>& out) {
  auto subtree = [&](const git_tree_entry* e) {
    git_tree* t = nullptr;
    if (e && git_tree_entry_type(e) == GIT_OBJECT_TREE)
      check(git_tree_lookup(&t, repo, git_tree_entry_id(e)), "read tree");
    return TreePtr(t);
  };
  auto side = [&](const git_tree_entry* e) {  // one side's entry, the other has nothing (or another kind) there
    const std::string path = dir + git_tree_entry_name(e);
    if (TreePtr t = subtree(e)) all_paths(t.get(), path + "/", out);
    else out.push_back(path);
  };
  for (size_t i = 0, n = a ? git_tree_entrycount(a) : 0; i < n; ++i) {
    const git_tree_entry* ea = git_tree_entry_byindex(a, i);
    const git_tree_entry* eb = b ? git_tree_entry_byname(b, git_tree_entry_name(ea)) : nullptr;
    if (eb && git_oid_equal(git_tree_entry_id(ea), git_tree_entry_id(eb)) &&
        git_tree_entry_filemode(ea) == git_tree_entry_filemode(eb))
      continue;
    TreePtr ta = subtree(ea), tb = subtree(eb);
    if (ta && tb) {
      changed_files(repo, ta.get(), tb.get(), dir + git_tree_entry_name(ea) + "/", out);
      continue;
    }
    side(ea);
    if (eb) side(eb);
  }
  for (size_t i = 0, n = b ? git_tree_entrycount(b) : 0; i < n; ++i) {
    const git_tree_entry* eb = git_tree_entry_byindex(b, i);
    if (!a || !git_tree_entry_byname(a, git_tree_entry_name(eb))) side(eb);
  }
}

}  // namespace internal

namespace {

// ---------------------------------------------------------------------------
// Untracked files.

// Deletes the untracked files `list` holds (see
// CheckoutOptions::remove_untracked) and the folders that only held them.
// Done by hand rather than with libgit2's GIT_CHECKOUT_REMOVE_UNTRACKED so
// keep_prefixes survive.
void remove_untracked_listed(git_repository* repo, git_status_list* list,
                             const std::vector<std::string>& keep_prefixes) {
  const std::string top = strip_trailing_slash(git_repository_workdir(repo));
  std::set<fs::path> parents;
  for (size_t i = 0, n = git_status_list_entrycount(list); i < n; ++i) {
    const git_status_entry* e = git_status_byindex(list, i);
    if (!(e->status & GIT_STATUS_WT_NEW) || !e->index_to_workdir) continue;
    std::string path = e->index_to_workdir->new_file.path;
    // "dir/" is a nested repository: someone else's history, never ours to delete.
    if (path.empty() || path.back() == '/' || under_any(path, keep_prefixes)) continue;
    fs::path full = fs::path(top) / path;
    std::error_code ec;
    fs::remove(full, ec);
    if (ec) throw Error("cannot remove untracked " + full.string() + ": " + ec.message());
    parents.insert(full.parent_path());
  }
  // Deepest first, so a chain of folders that only held removed files goes.
  for (auto it = parents.rbegin(); it != parents.rend(); ++it) {
    for (fs::path dir = *it; dir.string().size() > top.size() && starts_with(dir.string(), top + "/");
         dir = dir.parent_path()) {
      std::error_code ec;
      if (!fs::is_empty(dir, ec) || ec || !fs::remove(dir, ec)) break;
    }
  }
}

// The same after a scan of its own.
void remove_untracked_files(git_repository* repo, const std::vector<std::string>& keep_prefixes) {
  StatusListPtr list = status_list(repo, GIT_STATUS_SHOW_WORKDIR_ONLY);
  remove_untracked_listed(repo, list.get(), keep_prefixes);
}

// ---------------------------------------------------------------------------
// The checkout.

// Every path a forced checkout of `target` may have to touch, found without
// reading the whole tree twice: where HEAD's tree and target's differ (a
// tree-to-tree diff skips identical folders), plus every path `scan` (one
// status pass that trusts the index's stat data, as `git status` does)
// lists as staged against HEAD or edited or deleted in the work tree.
// Whatever is in none of them is the same in index, work tree and target
// (an untracked file in the way of target is where the trees differ).
std::vector<std::string> paths_to_check_out(git_repository* repo, const git_commit* head, const git_commit* target,
                                            git_status_list* scan) {
  std::vector<std::string> paths;
  TreePtr from = commit_tree(head), to = commit_tree(target);
  if (!git_oid_equal(git_tree_id(from.get()), git_tree_id(to.get())))
    changed_files(repo, from.get(), to.get(), "", paths);
  for (size_t i = 0, n = scan ? git_status_list_entrycount(scan) : 0; i < n; ++i) {
    const git_status_entry* e = git_status_byindex(scan, i);
    if (e->status == GIT_STATUS_WT_NEW) continue;
    for (const git_diff_delta* d : {e->head_to_index, e->index_to_workdir}) {
      if (!d) continue;
      if (d->old_file.path) paths.emplace_back(d->old_file.path);
      if (d->new_file.path) paths.emplace_back(d->new_file.path);
    }
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

// The entry at `path` in `tree` (below its folders), or null.
TreeEntryPtr entry_at(const git_tree* tree, const std::string& path) {
  git_tree_entry* e = nullptr;
  return TreeEntryPtr(git_tree_entry_bypath(&e, tree, path.c_str()) == 0 ? e : nullptr);
}

// A forced checkout of `paths` writes each file through whatever stands at
// its path: where a run left a symbolic link in place of a tracked file or
// folder, libgit2 would write the target's content through it (into the
// link's target, which may be outside the work tree). Such links go first,
// unless the target itself holds a link at that path.
void remove_links_in_the_way(git_repository* repo, const git_tree* target, const std::vector<std::string>& paths) {
  const std::string top = strip_trailing_slash(git_repository_workdir(repo));
  std::set<std::string> seen;
  auto is_link_in_target = [&](const std::string& path) {
    TreeEntryPtr e = entry_at(target, path);
    return e && git_tree_entry_filemode(e.get()) == GIT_FILEMODE_LINK;
  };
  for (const std::string& path : paths) {
    for (size_t end = path.find('/');; end = path.find('/', end + 1)) {
      const std::string part = path.substr(0, end);
      if (!seen.insert(part).second) {
        if (end == std::string::npos) break;
        continue;
      }
      const std::string full = top + "/" + part;
      struct stat st {};
      if (::lstat(full.c_str(), &st) != 0) break;  // nothing below it either
      if (S_ISLNK(st.st_mode) && (end != std::string::npos || !is_link_in_target(part))) {
        if (::unlink(full.c_str()) != 0)
          throw Error("cannot remove " + full + ": " + std::generic_category().message(errno));
        break;
      }
      if (end == std::string::npos) break;
    }
  }
}

// Of `files` (tracked, their stat unchanged but for the ctime), those whose
// content no longer hashes to their index entry are deleted and added to
// `paths`, so the forced checkout writes them again.
void rewrite_if_edited(git_repository* repo, git_index* index, const std::vector<std::string>& files,
                       std::vector<std::string>& paths) {
  const std::string top = strip_trailing_slash(git_repository_workdir(repo));
  bool added = false;
  for (const std::string& f : files) {
    const git_index_entry* e = git_index_get_bypath(index, f.c_str(), 0);
    git_oid now;
    if (e && git_repository_hashfile(&now, repo, f.c_str(), GIT_OBJECT_BLOB, nullptr) == 0 &&
        git_oid_equal(&now, &e->id))
      continue;
    const std::string full = top + "/" + f;
    if (::unlink(full.c_str()) != 0 && errno != ENOENT)
      throw Error("cannot remove " + full + ": " + std::generic_category().message(errno));
    paths.push_back(f);
    added = true;
  }
  if (!added) return;
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
}

// Whether every one of `paths` is in the index and the work tree as the
// target has it (a file with its id and mode, or nothing where the target
// has a folder or nothing).
bool checked_out(git_repository* repo, git_index* index, const git_tree* target,
                 const std::vector<std::string>& paths) {
  const std::string top = strip_trailing_slash(git_repository_workdir(repo));
  for (const std::string& p : paths) {
    TreeEntryPtr entry = entry_at(target, p);
    const bool file = entry && git_tree_entry_type(entry.get()) == GIT_OBJECT_BLOB;
    const git_index_entry* e = git_index_get_bypath(index, p.c_str(), 0);
    if (!file) {
      if (e) return false;
      continue;
    }
    struct stat st {};
    if (!e || !git_oid_equal(&e->id, git_tree_entry_id(entry.get())) ||
        e->mode != static_cast<uint32_t>(git_tree_entry_filemode(entry.get())) ||
        ::lstat((top + "/" + p).c_str(), &st) != 0)
      return false;
  }
  return true;
}

// libgit2 1.5's checkout fails ("null OID cannot exist") where the index
// holds a file, the work tree has nothing there, and the target has a
// folder. The index (in memory: the checkout's baseline) forgets such files
// first; the work tree no longer has them anyway.
void forget_files_gone_where_folders_come(git_repository* repo, git_index* index, const git_tree* target,
                                          const std::vector<std::string>& paths) {
  const std::string top = strip_trailing_slash(git_repository_workdir(repo));
  for (const std::string& p : paths) {
    if (!git_index_get_bypath(index, p.c_str(), 0)) continue;
    struct stat st {};
    if (::lstat((top + "/" + p).c_str(), &st) == 0) continue;
    TreeEntryPtr entry = entry_at(target, p);
    if (entry && git_tree_entry_type(entry.get()) == GIT_OBJECT_TREE)
      check(git_index_remove_bypath(index, p.c_str()), ("forget " + p).c_str());
  }
}

// Forced, with a HEAD to compare with: one status scan of the work tree
// (what `git status` costs) names every path that can differ, and the
// checkout looks at those alone instead of comparing every file again;
// the same scan lists the untracked files to remove afterwards. A stat
// sweep (stat_sweep.h) comes first: in a worktree whose index still holds
// HEAD's tree as gitx's last checkout or commit left it (nothing staged),
// the paths it names are all a status has to look at, none meaning
// nothing to scan; and the files whose ctime alone changed, which
// libgit2's status takes for unchanged, are hashed and rewritten where
// they differ. The scan goes to `scan` (null when none was needed), the
// paths to `paths`; false, and nothing done, while HEAD is unborn.
bool narrow_to_what_differs(git_repository* repo, git_index* index, const git_commit* commit, StatusListPtr& scan,
                            std::vector<std::string>& paths) {
  CommitPtr head = head_commit(repo);
  if (!head) return false;
  // The sweep runs either way: only it sees a ctime-only edit.
  const std::optional<Sweep> swept = stat_sweep(repo, index);
  const bool narrow = swept && swept->narrows && index_is_heads_tree(repo);
  if (!narrow || !swept->paths.empty())
    scan = status_list(repo, GIT_STATUS_SHOW_INDEX_AND_WORKDIR, narrow ? &swept->paths : nullptr);
  paths = paths_to_check_out(repo, head.get(), commit, scan.get());
  if (swept) rewrite_if_edited(repo, index, swept->ctime_only, paths);
  return true;
}

void checkout(git_repository* repo, const git_commit* commit, const CheckoutOptions& options) {
  // Read again only when the file changed on disk (a new stamp or
  // checksum): Repo never leaves unsaved changes in its index (staging in
  // memory is dropped with a forced read), so what is loaded is what is on
  // disk, and a forced read would parse every entry again for nothing.
  git_index* index_raw = nullptr;
  check(git_repository_index(&index_raw, repo), "open index");
  IndexPtr index(index_raw);
  check(git_index_read(index.get(), /*force=*/0), "read index");
  git_checkout_options co;
  check(git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION), "checkout options");
  co.checkout_strategy = options.force ? GIT_CHECKOUT_FORCE : GIT_CHECKOUT_SAFE;
  // The index, not HEAD, is what the work tree is expected to hold: after an
  // earlier checkout_tree() HEAD no longer describes the files, and with HEAD
  // as baseline every file changed since would count as a local change
  // (a refusal without force, a needless rewrite with it).
  co.baseline_index = index.get();
  StatusListPtr scan;
  std::vector<std::string> paths;
  const bool known = options.force && narrow_to_what_differs(repo, index.get(), commit, scan, paths);
  std::vector<char*> path_ptrs;
  for (std::string& p : paths) path_ptrs.push_back(p.data());
  if (known) {
    co.paths.strings = path_ptrs.data();
    co.paths.count = path_ptrs.size();
    co.checkout_strategy |= GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
  }
  // Before the checkout: links in the way go; the untracked files the scan
  // found go (a folder of them may stand where the target has a file); then
  // the index forgets files that are gone where the target has a folder.
  TreePtr target = known ? commit_tree(commit) : nullptr;
  if (known) remove_links_in_the_way(repo, target.get(), paths);
  if (options.remove_untracked && scan) remove_untracked_listed(repo, scan.get(), options.keep_prefixes);
  if (known) forget_files_gone_where_folders_come(repo, index.get(), target.get(), paths);
  // (An empty path list would mean "every path": nothing differs, nothing to write.)
  if (!known || !paths.empty())
    check(git_checkout_tree(repo, reinterpret_cast<const git_object*>(commit), &co), "checkout");
  if (known && !checked_out(repo, index.get(), target.get(), paths)) {
    // libgit2 1.5 skips a file a path list names where the index had a
    // folder and the work tree has nothing: the whole tree, then.
    co.paths = {nullptr, 0};
    co.checkout_strategy &= ~GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
    check(git_checkout_tree(repo, reinterpret_cast<const git_object*>(commit), &co), "checkout");
  }
  if (options.remove_untracked && !known) remove_untracked_files(repo, options.keep_prefixes);
}

}  // namespace

// ---------------------------------------------------------------------------
// Repo's reset and checkout.

void Repo::reset_hard(const std::string& rev, bool remove_untracked, const std::vector<std::string>& keep_prefixes) {
  CommitPtr target = lookup_commit(raw(), rev);
  fresh_index(raw());
  git_checkout_options co;
  check(git_checkout_options_init(&co, GIT_CHECKOUT_OPTIONS_VERSION), "checkout options");
  co.checkout_strategy = GIT_CHECKOUT_FORCE;
  // Repeatable: a second reset --hard to the same commit is the first one.
  with_lock_wait(index_locks(), true, [&] {
    check(git_reset(raw(), reinterpret_cast<const git_object*>(target.get()), GIT_RESET_HARD, &co),
          ("reset --hard " + rev).c_str());
  });
  if (remove_untracked) remove_untracked_files(raw(), keep_prefixes);
}

void Repo::checkout_tree(const std::string& rev, const CheckoutOptions& options) {
  CommitPtr commit = lookup_commit(raw(), rev);
  with_lock_wait(index_locks(), true, [&] { checkout(raw(), commit.get(), options); });
}

void Repo::checkout_detached(const std::string& rev, const CheckoutOptions& options) {
  CommitPtr commit = lookup_commit(raw(), rev);
  with_lock_wait(index_locks(), true, [&] {
    checkout(raw(), commit.get(), options);
    check(git_repository_set_head_detached(raw(), git_commit_id(commit.get())), "detach HEAD");
    if (options.force) record_checkout(raw());
  });
}

}  // namespace phoenix::gitx
