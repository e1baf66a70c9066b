// Patches: diffs between commits and of the work tree as git's extended
// unified diff, applying them, reverting a commit in memory.
#include "gitx/repo.h"

#include <git2.h>

#include <algorithm>
#include <memory>
#include <string_view>

#include "gitx/names.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/text.h"

namespace phoenix::gitx {
namespace {

using util::starts_with;

// After files were written behind the index's back (a patch applied to the
// work tree only), the stat data the index holds for them cannot be
// trusted: a file rewritten with content of the same size within the same
// clock tick, reusing the freed inode, keeps every stat field, and once the
// index file itself is newer, git and libgit2 would take the old content
// for the new (the heal commit would miss the change). Their sizes are set
// to 0 in the index, as git does for racily clean entries, so the next
// status or `add` reads the files again. The staged content is unchanged.
void smudge_index_entries(git_repository* repo, git_diff* diff) {
  IndexPtr index = fresh_index(repo);
  bool changed = false;
  for (size_t i = 0, n = git_diff_num_deltas(diff); i < n; ++i) {
    const git_diff_delta* d = git_diff_get_delta(diff, i);
    for (const char* path : {d->old_file.path, d->new_file.path}) {
      if (!path) continue;
      const git_index_entry* e = git_index_get_bypath(index.get(), path, 0);
      if (!e || e->file_size == 0) continue;
      git_index_entry copy = *e;
      copy.file_size = 0;
      check(git_index_add(index.get(), &copy), "smudge index entry");
      changed = true;
    }
  }
  if (changed) check(git_index_write(index.get()), "write index");
}

git_diff_options patch_diff_options() {
  git_diff_options o;
  check(git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION), "diff options");
  // Binary content as "GIT binary patch" (with full index lines) rather than
  // "Binary files differ", or the patch could not be applied.
  o.flags = GIT_DIFF_SHOW_BINARY;
  return o;
}

void find_renames(git_diff* diff, bool for_untracked) {
  git_diff_find_options fo;
  check(git_diff_find_options_init(&fo, GIT_DIFF_FIND_OPTIONS_VERSION), "rename options");
  // Explicit flags: the user's diff.renames config must not change what a
  // patch looks like.
  fo.flags = GIT_DIFF_FIND_RENAMES | (for_untracked ? GIT_DIFF_FIND_FOR_UNTRACKED : 0);
  check(git_diff_find_similar(diff, &fo), "detect renames");
}

std::string diff_to_text(git_diff* diff) {
  Buf out;
  check(git_diff_to_buf(&out.b, diff, GIT_DIFF_FORMAT_PATCH), "format patch");
  return out.str();
}

// libgit2 1.5 rejects a file header that ends at its "index" line, which is
// what git prints for an empty file added or deleted (libgit2 issues #5713,
// #6778), yet it prints and accepts the same header followed by "---" and
// "+++" lines. Adding those lets patches made by the git CLI (a harness's own
// `git diff`, say) parse too; git apply takes either form.
std::string complete_empty_file_headers(const std::string& patch) {
  std::string out;
  out.reserve(patch.size() + 128);
  std::string diff_line;  // "diff --git X Y" of the header being read
  bool in_header = false, is_new = false, is_deleted = false, ends_at_index = false;
  auto finish_header = [&] {
    if (in_header && ends_at_index) {
      // For an added or deleted file both names are the same path, so the
      // two (possibly quoted) names are the halves either side of the middle.
      std::string_view names = std::string_view(diff_line).substr(11);
      size_t half = names.size() / 2;
      if (names.size() % 2 == 1 && names[half] == ' ') {
        std::string a(names.substr(0, half)), b(names.substr(half + 1));
        if (!out.empty() && out.back() != '\n') out += '\n';
        out += "--- " + (is_new ? std::string("/dev/null") : a) + "\n";
        out += "+++ " + (is_deleted ? std::string("/dev/null") : b) + "\n";
      }
    }
    in_header = false;
  };
  for (size_t pos = 0; pos < patch.size();) {
    size_t nl = patch.find('\n', pos);
    size_t end = nl == std::string::npos ? patch.size() : nl + 1;
    std::string_view line(patch.data() + pos, end - pos);
    if (starts_with(line, "diff --git ")) {
      finish_header();
      in_header = true;
      is_new = is_deleted = ends_at_index = false;
      diff_line.assign(line.substr(0, line.find_first_of("\r\n")));
    } else if (in_header) {
      if (starts_with(line, "--- ") || starts_with(line, "@@ ") || starts_with(line, "GIT binary patch") ||
          starts_with(line, "Binary files ")) {
        in_header = false;
      } else {
        is_new = is_new || starts_with(line, "new file mode ");
        is_deleted = is_deleted || starts_with(line, "deleted file mode ");
        ends_at_index = starts_with(line, "index ");
      }
    }
    out.append(line);
    pos = end;
  }
  finish_header();
  return out;
}

DiffPtr parse_patch(const std::string& patch) {
  ensure_init();
  const std::string text = complete_empty_file_headers(patch);
  git_diff* d = nullptr;
  check(git_diff_from_buffer(&d, text.data(), text.size()), "parse patch");
  return DiffPtr(d);
}

git_apply_location_t to_location(ApplyLocation where) {
  switch (where) {
    case ApplyLocation::kIndex: return GIT_APPLY_LOCATION_INDEX;
    case ApplyLocation::kBoth: return GIT_APPLY_LOCATION_BOTH;
    case ApplyLocation::kWorkdir: break;
  }
  return GIT_APPLY_LOCATION_WORKDIR;
}

void sort_unique(std::vector<std::string>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

namespace internal {

DiffPtr diff_trees(git_repository* repo, const git_tree* from, const git_tree* to, bool for_patch) {
  git_diff_options o = patch_diff_options();
  if (!for_patch) o.flags = 0;
  git_diff* d = nullptr;
  check(git_diff_tree_to_tree(&d, repo, const_cast<git_tree*>(from), const_cast<git_tree*>(to), &o), "diff trees");
  DiffPtr diff(d);
  find_renames(diff.get(), false);
  return diff;
}

std::vector<std::string> delta_paths(git_diff* diff) {
  std::vector<std::string> paths;
  for (size_t i = 0, n = git_diff_num_deltas(diff); i < n; ++i) {
    const git_diff_delta* d = git_diff_get_delta(diff, i);
    if (d->old_file.path && d->status != GIT_DELTA_ADDED && d->status != GIT_DELTA_UNTRACKED)
      paths.emplace_back(d->old_file.path);
    if (d->new_file.path && d->status != GIT_DELTA_DELETED) paths.emplace_back(d->new_file.path);
  }
  sort_unique(paths);
  return paths;
}

}  // namespace internal

// ---------------------------------------------------------------------------
// Patches.

std::string Repo::diff_patch(const std::string& from, const std::string& to) const {
  TreePtr a = tree_or_empty(raw(), from);
  TreePtr b = commit_tree(lookup_commit(raw(), to).get());
  return diff_to_text(diff_trees(raw(), a.get(), b.get(), /*for_patch=*/true).get());
}

std::string Repo::diff_workdir_patch(const std::string& base) const {
  TreePtr a = tree_or_empty(raw(), base);
  fresh_index(raw());
  git_diff_options o = patch_diff_options();
  o.flags |= GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS | GIT_DIFF_SHOW_UNTRACKED_CONTENT;
  git_diff* d = nullptr;
  // With the index: staged files (even ones .gitignore would hide) count,
  // and its stat cache spares hashing every unchanged file.
  check(git_diff_tree_to_workdir_with_index(&d, raw(), a.get(), &o), "diff work tree");
  DiffPtr diff(d);
  find_renames(diff.get(), /*for_untracked=*/true);
  return diff_to_text(diff.get());
}

std::vector<std::string> Repo::patch_files(const std::string& patch) {
  if (patch.empty()) return {};
  return delta_paths(parse_patch(patch).get());
}

PatchStats Repo::patch_stats(const std::string& patch) {
  if (patch.empty()) return {};
  DiffPtr diff = parse_patch(patch);
  git_diff_stats* s = nullptr;
  check(git_diff_get_stats(&s, diff.get()), "patch stats");
  DiffStatsPtr stats(s);
  return {git_diff_stats_files_changed(stats.get()), git_diff_stats_insertions(stats.get()),
          git_diff_stats_deletions(stats.get())};
}

void Repo::apply_patch(const std::string& patch, ApplyLocation where) {
  if (patch.empty()) return;
  DiffPtr diff = parse_patch(patch);
  fresh_index(raw());
  PHOENIX_FAULT("mid-apply");
  // libgit2 takes the index lock before it writes a file: a locked index
  // fails the apply before anything changed, so it can run again.
  with_lock_wait(index_locks(), true,
                 [&] { check(git_apply(raw(), diff.get(), to_location(where), nullptr), "apply patch"); });
  if (where == ApplyLocation::kWorkdir) smudge_index_entries(raw(), diff.get());
}

bool Repo::check_patch_applies(const std::string& patch, ApplyLocation where, std::string* why) const {
  if (patch.empty()) return true;
  const std::string text = complete_empty_file_headers(patch);
  git_diff* d = nullptr;
  int rc = git_diff_from_buffer(&d, text.data(), text.size());
  DiffPtr diff(d);
  if (rc >= 0) {
    fresh_index(raw());
    git_apply_options ao;
    check(git_apply_options_init(&ao, GIT_APPLY_OPTIONS_VERSION), "apply options");
    ao.flags = GIT_APPLY_CHECK;
    rc = git_apply(raw(), diff.get(), to_location(where), &ao);
  }
  if (rc >= 0) return true;
  if (why) *why = last_error_message(rc);
  return false;
}

namespace {

// The paths an in-memory merge left conflicted, sorted, each once.
std::vector<std::string> conflicted_paths(git_index* index) {
  git_index_conflict_iterator* it_raw = nullptr;
  check(git_index_conflict_iterator_new(&it_raw, index), "list conflicts");
  ConflictIterPtr it(it_raw);
  std::vector<std::string> paths;
  const git_index_entry *anc, *ours, *theirs;
  while (git_index_conflict_next(&anc, &ours, &theirs, it.get()) == 0) {
    const git_index_entry* any = ours ? ours : theirs ? theirs : anc;
    if (any) paths.emplace_back(any->path);
  }
  sort_unique(paths);
  return paths;
}

// A commit of `tree` with the one parent `parent`; author = committer =
// Phoenix, now. No ref moves. Returns its sha.
std::string commit_on(git_repository* repo, const git_tree* tree, const git_commit* parent,
                      const std::string& message) {
  Buf msg;
  check(git_message_prettify(&msg.b, message.c_str(), /*strip_comments=*/0, '#'), "clean message");
  SignaturePtr sig = signature_now();
  const git_commit* parents[] = {parent};
  git_oid id;
  check(git_commit_create(&id, repo, nullptr, sig.get(), sig.get(), nullptr, msg.b.ptr, tree, 1, parents),
        "write commit");
  return oid_hex(id);
}

}  // namespace

std::string Repo::revert_patch(const std::string& rev) const {
  CommitPtr commit = lookup_commit(raw(), rev);
  CommitPtr head = head_commit(raw());
  if (!head) throw Error("cannot revert " + rev + ": HEAD has no commit yet");
  git_merge_options mo;
  check(git_merge_options_init(&mo, GIT_MERGE_OPTIONS_VERSION), "merge options");
  unsigned mainline = git_commit_parentcount(commit.get()) > 1 ? 1 : 0;
  git_index* idx = nullptr;
  check(git_revert_commit(&idx, raw(), commit.get(), head.get(), mainline, &mo), ("revert " + rev).c_str());
  IndexPtr index(idx);
  if (git_index_has_conflicts(index.get())) {
    std::vector<std::string> paths = conflicted_paths(index.get());
    std::string list;
    for (const auto& p : paths) list += (list.empty() ? "" : ", ") + p;
    throw Error("reverting " + rev + " conflicts with HEAD in: " + list);
  }
  git_oid tree_id;
  check(git_index_write_tree_to(&tree_id, index.get(), raw()), "write revert tree");
  git_tree* t = nullptr;
  check(git_tree_lookup(&t, raw(), &tree_id), "read revert tree");
  TreePtr reverted(t);
  TreePtr current = commit_tree(head.get());
  return diff_to_text(diff_trees(raw(), current.get(), reverted.get(), /*for_patch=*/true).get());
}

std::string Repo::merge_onto(const std::string& base, const std::string& ours, const std::string& theirs,
                             const std::string& message, std::vector<std::string>* conflicts) const {
  TreePtr ancestor = tree_or_empty(raw(), base);
  CommitPtr our_commit = lookup_commit(raw(), ours);
  TreePtr our_tree = commit_tree(our_commit.get());
  TreePtr their_tree = tree_or_empty(raw(), theirs);
  git_merge_options mo;
  check(git_merge_options_init(&mo, GIT_MERGE_OPTIONS_VERSION), "merge options");
  git_index* idx = nullptr;
  check(git_merge_trees(&idx, raw(), ancestor.get(), our_tree.get(), their_tree.get(), &mo),
        ("merge " + theirs + " onto " + ours).c_str());
  IndexPtr index(idx);
  if (git_index_has_conflicts(index.get())) {
    if (conflicts) *conflicts = conflicted_paths(index.get());
    return "";
  }
  git_oid tree_id;
  check(git_index_write_tree_to(&tree_id, index.get(), raw()), "write merged tree");
  git_tree* t = nullptr;
  check(git_tree_lookup(&t, raw(), &tree_id), "read merged tree");
  TreePtr merged(t);
  return commit_on(raw(), merged.get(), our_commit.get(), message);
}

std::string Repo::squash(const std::string& parent, const std::string& tip,
                         const std::vector<std::string>& as_in_parent, const std::string& message) const {
  CommitPtr parent_commit = lookup_commit(raw(), parent);
  TreePtr parent_tree = commit_tree(parent_commit.get());
  TreePtr tip_tree = tree_or_empty(raw(), tip);
  std::vector<git_tree_update> updates;
  std::vector<std::unique_ptr<git_tree_entry, decltype(&git_tree_entry_free)>> entries;
  for (const auto& path : as_in_parent) {
    git_tree_entry* raw_entry = nullptr;
    git_tree_update u{};
    u.path = path.c_str();
    if (git_tree_entry_bypath(&raw_entry, parent_tree.get(), path.c_str()) == 0) {
      entries.emplace_back(raw_entry, &git_tree_entry_free);
      u.action = GIT_TREE_UPDATE_UPSERT;
      u.id = *git_tree_entry_id(raw_entry);
      u.filemode = git_tree_entry_filemode(raw_entry);
    } else if (git_tree_entry_bypath(&raw_entry, tip_tree.get(), path.c_str()) == 0) {
      git_tree_entry_free(raw_entry);
      u.action = GIT_TREE_UPDATE_REMOVE;
    } else {
      continue;  // in neither
    }
    updates.push_back(u);
  }
  git_oid tree_id;
  check(git_tree_create_updated(&tree_id, raw(), tip_tree.get(), updates.size(), updates.data()),
        ("tree of " + tip + " with paths of " + parent).c_str());
  git_tree* t = nullptr;
  check(git_tree_lookup(&t, raw(), &tree_id), "read squashed tree");
  TreePtr tree(t);
  return commit_on(raw(), tree.get(), parent_commit.get(), message);
}

}  // namespace phoenix::gitx
