// Repo's commits of the work tree: the work tree staged in one scan,
// then committed on HEAD or kept as a snapshot (reset and checkout:
// checkout.cc).
#include "gitx/repo.h"

#include <git2.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gitx/names.h"
#include "gitx/prefix.h"
#include "util/error.h"
#include "util/text.h"
#include "gitx/stat_sweep.h"
#include "gitx/watch.h"

namespace phoenix::gitx {

namespace fs = std::filesystem;

namespace {

struct SkipUntracked {
  git_index* index;
  const std::vector<std::string>& prefixes;
};

// >0 skips a path: untracked files under the skipped prefixes stay out of
// the commit (tracked ones are updated as usual).
int skip_untracked_under(const char* path, const char* /*matched*/, void* payload) {
  auto* skip = static_cast<SkipUntracked*>(payload);
  if (!under_any(path, skip->prefixes)) return 0;
  return git_index_get_bypath(skip->index, path, 0) ? 0 : 1;
}

// Stages the work tree into `index` (in memory) and writes its tree: what
// `git add -A` stages (with `include_untracked`; else `git add -u`), from
// one scan of the work tree. A status of the index against the work tree
// (trusting the index's stat data, as git does) names the files that
// differ; each is staged (git_index_add_bypath) or, when deleted, unstaged:
// what git_index_update_all and git_index_add_all do with their diff, but
// from one diff where the two of them made one each. Untracked files under
// `skip_untracked` are never staged; a tracked one there is, like any file.
//
// `paths`, when given, limits the scan (what a TreeWatch saw written);
// `left`, when given, receives every untracked file not staged.
git_oid stage_workdir(git_repository* repo, git_index* index, bool include_untracked,
                      const std::vector<std::string>& skip_untracked, const std::vector<std::string>* paths = nullptr,
                      std::vector<std::string>* left = nullptr) {
  git_status_options o;
  check(git_status_options_init(&o, GIT_STATUS_OPTIONS_VERSION), "status options");
  o.show = GIT_STATUS_SHOW_WORKDIR_ONLY;
  o.flags = include_untracked || left ? GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS : 0;
  Pathspec spec(paths);
  spec.apply(o, paths);
  git_status_list* raw_list = nullptr;
  check(git_status_list_new(&raw_list, repo, &o), "status");
  StatusListPtr list(raw_list);
  SkipUntracked skip{index, skip_untracked};
  // With `paths`, the index is HEAD's tree but for them (TreeWatch's
  // stamp): the new tree is HEAD's with these changes, which writes the
  // folders on their paths only. git_index_write_tree would also read
  // every folder of the new tree back into the index's tree cache.
  std::vector<git_tree_update> updates;
  auto stage = [&](const char* path) {
    check(git_index_add_bypath(index, path), (std::string("stage ") + path).c_str());
    const git_index_entry* ie = git_index_get_bypath(index, path, 0);
    if (ie) updates.push_back({GIT_TREE_UPDATE_UPSERT, ie->id, static_cast<git_filemode_t>(ie->mode), path});
  };
  for (size_t i = 0, n = git_status_list_entrycount(list.get()); i < n; ++i) {
    const git_status_entry* e = git_status_byindex(list.get(), i);
    const git_diff_delta* d = e->index_to_workdir;
    if (!d) continue;
    const char* path = d->new_file.path ? d->new_file.path : d->old_file.path;
    if (e->status & GIT_STATUS_WT_DELETED) {
      check(git_index_remove_bypath(index, path), (std::string("unstage ") + path).c_str());
      updates.push_back({GIT_TREE_UPDATE_REMOVE, {}, GIT_FILEMODE_UNREADABLE, path});
    } else if (e->status & GIT_STATUS_WT_NEW) {
      if (include_untracked && skip_untracked_under(path, nullptr, &skip) == 0) stage(path);
      else if (left) left->push_back(path);
    } else if (e->status & (GIT_STATUS_WT_MODIFIED | GIT_STATUS_WT_TYPECHANGE)) {
      stage(path);
    }
  }
  git_oid tree;
  CommitPtr head = paths ? head_commit(repo) : nullptr;
  if (head && git_index_entrycount(index) > 0) {
    TreePtr base = commit_tree(head.get());
    check(git_tree_create_updated(&tree, repo, base.get(), updates.size(), updates.data()), "write tree");
  } else {
    check(git_index_write_tree(&tree, index), "write tree");
  }
  return tree;
}

std::string create_commit(git_repository* repo, const char* update_ref, const git_oid& tree_id,
                          const std::string& message) {
  Buf msg;
  check(git_message_prettify(&msg.b, message.c_str(), /*strip_comments=*/0, '#'), "clean message");
  if (msg.str().empty()) throw Error("empty commit message");
  SignaturePtr sig = signature_now();
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, repo, &tree_id), "read tree");
  TreePtr tree(tree_raw);
  CommitPtr parent = head_commit(repo);
  const git_commit* parents[] = {parent.get()};
  git_oid id;
  check(git_commit_create(&id, repo, update_ref, sig.get(), sig.get(), nullptr, msg.b.ptr, tree.get(), parent ? 1 : 0,
                          parents),
        "commit");
  return oid_hex(id);
}

}  // namespace

// ---------------------------------------------------------------------------
// Commits (reset and checkout: checkout.cc).

std::string Repo::commit_all(const std::string& message, bool include_untracked,
                             const std::vector<std::string>& skip_untracked) {
  std::string out;
  with_lock_wait(index_locks(), false, [&] { out = commit_all_now(message, include_untracked, skip_untracked); });
  return out;
}

std::string Repo::commit_all_now(const std::string& message, bool include_untracked,
                                 const std::vector<std::string>& skip_untracked) {
  IndexPtr index = fresh_index(raw(), !watch_);
  try {
    std::optional<std::vector<std::string>> paths = watched_paths();
    std::vector<std::string> left;
    git_oid tree = stage_workdir(raw(), index.get(), include_untracked, skip_untracked, paths ? &*paths : nullptr,
                                 watch_ ? &left : nullptr);
    // "HEAD" moves the current branch, creates an unborn one, or moves a
    // detached HEAD: exactly git commit's behaviour in all three states.
    std::string sha = create_commit(raw(), "HEAD", tree, message);
    check(git_index_write(index.get()), "write index");
    // The tree is HEAD's now, but for the untracked files left out.
    watch_clean(left);
    record_checkout(raw());  // the index is the new HEAD's tree: a worktree's next move may sweep
    return sha;
  } catch (...) {
    git_index_read(index.get(), 1);  // drop the half-staged in-memory index
    throw;
  }
}

std::string Repo::commit_tracked_and(const std::vector<std::string>& paths, const std::string& message) {
  std::string out;
  with_lock_wait(index_locks(), false, [&] { out = commit_tracked_and_now(paths, message); });
  return out;
}

std::string Repo::commit_tracked_and_now(const std::vector<std::string>& paths, const std::string& message) {
  IndexPtr index = fresh_index(raw());
  try {
    check(git_index_update_all(index.get(), nullptr, nullptr, nullptr), "stage tracked changes");
    const std::string top = strip_trailing_slash(git_repository_workdir(raw()));
    for (const std::string& p : paths) {
      std::error_code ec;
      if (fs::symlink_status(fs::path(top) / p, ec).type() != fs::file_type::not_found)
        check(git_index_add_bypath(index.get(), p.c_str()), ("stage " + p).c_str());
      else if (git_index_get_bypath(index.get(), p.c_str(), 0))
        check(git_index_remove_bypath(index.get(), p.c_str()), ("unstage " + p).c_str());
    }
    git_oid tree;
    check(git_index_write_tree(&tree, index.get()), "write tree");
    std::string sha = create_commit(raw(), "HEAD", tree, message);
    check(git_index_write(index.get()), "write index");
    record_checkout(raw());
    return sha;
  } catch (...) {
    git_index_read(index.get(), 1);
    throw;
  }
}

std::string Repo::snapshot_workdir(const std::string& message, bool include_untracked,
                                   const std::vector<std::string>& skip_untracked) {
  IndexPtr index = fresh_index(raw());
  std::string sha;
  try {
    std::optional<std::vector<std::string>> paths = watched_paths();
    git_oid tree =
        stage_workdir(raw(), index.get(), include_untracked, skip_untracked, paths ? &*paths : nullptr, nullptr);
    sha = create_commit(raw(), nullptr, tree, message);
  } catch (...) {
    git_index_read(index.get(), 1);
    throw;
  }
  // Staging happened in memory only; forget it so nothing ever writes it.
  check(git_index_read(index.get(), 1), "re-read index");
  return sha;
}

std::string Repo::workdir_tree(const std::vector<std::string>& skip_untracked) {
  IndexPtr index = fresh_index(raw());
  git_oid tree;
  try {
    std::optional<std::vector<std::string>> paths = watched_paths();
    tree = stage_workdir(raw(), index.get(), true, skip_untracked, paths ? &*paths : nullptr, nullptr);
  } catch (...) {
    git_index_read(index.get(), 1);
    throw;
  }
  check(git_index_read(index.get(), 1), "re-read index");
  return oid_hex(tree);
}

}  // namespace phoenix::gitx
