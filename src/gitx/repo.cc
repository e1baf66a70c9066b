#include "gitx/repo.h"

#include <git2.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include "gitx/author.h"
#include "gitx/internal.h"
#include "gitx/libgit2.h"
#include "gitx/prefix.h"
#include "gitx/stat_sweep.h"
#include "gitx/watch.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::gitx {

namespace {

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

}  // namespace

// ---------------------------------------------------------------------------
// Helpers shared with checkout.cc, diff.cc and worktree.cc (internal.h).

namespace internal {

using namespace lg2;  // the owner types, check()

std::string strip_trailing_slash(const char* p) {
  std::string s = p ? p : "";
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

ObjectPtr revparse(git_repository* repo, const std::string& rev) {
  git_object* obj = nullptr;
  int rc = rev.empty() ? GIT_ENOTFOUND : git_revparse_single(&obj, repo, rev.c_str());
  if (rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC) throw Error("unknown revision: " + rev, kExitUsage);
  if (rc == GIT_EAMBIGUOUS) throw Error("ambiguous revision: " + rev, kExitUsage);
  check(rc, ("resolve " + rev).c_str());
  return ObjectPtr(obj);
}

CommitPtr lookup_commit(git_repository* repo, const std::string& rev) {
  ObjectPtr obj = revparse(repo, rev);
  git_object* peeled = nullptr;
  if (git_object_peel(&peeled, obj.get(), GIT_OBJECT_COMMIT) < 0) throw Error("not a commit: " + rev, kExitUsage);
  return CommitPtr(reinterpret_cast<git_commit*>(peeled));
}

TreePtr commit_tree(const git_commit* commit) {
  git_tree* tree = nullptr;
  check(git_commit_tree(&tree, commit), "read commit tree");
  return TreePtr(tree);
}

// The tree of `rev`, or null (libgit2's empty tree) for "".
TreePtr tree_or_empty(git_repository* repo, const std::string& rev) {
  if (rev.empty()) return nullptr;
  return commit_tree(lookup_commit(repo, rev).get());
}

// HEAD's commit, or null while unborn.
std::string index_file(git_repository* repo) { return std::string(git_repository_path(repo)) + "index"; }

CommitPtr head_commit(git_repository* repo) {
  git_oid oid;
  int rc = git_reference_name_to_id(&oid, repo, "HEAD");
  if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH) return nullptr;
  check(rc, "resolve HEAD");
  git_commit* c = nullptr;
  check(git_commit_lookup(&c, repo, &oid), "read HEAD commit");
  return CommitPtr(c);
}

StatusListPtr status_list(git_repository* repo, git_status_show_t show, const std::vector<std::string>* paths) {
  git_status_options o;
  check(git_status_options_init(&o, GIT_STATUS_OPTIONS_VERSION), "status options");
  o.show = show;
  o.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
            GIT_STATUS_OPT_RENAMES_HEAD_TO_INDEX | GIT_STATUS_OPT_SORT_CASE_SENSITIVELY;
  Pathspec spec(paths);
  spec.apply(o, paths);
  git_status_list* list = nullptr;
  check(git_status_list_new(&list, repo, &o), "status");
  return StatusListPtr(list);
}

}  // namespace internal

namespace {

using lg2::check;
using lg2::ensure_init;
using lg2::fresh_index;
using lg2::oid_hex;
using namespace lg2;  // the owner types
using namespace internal;
using util::starts_with;

// What HEAD and the index are now, for a TreeWatch.
TreeWatch::Stamp stamp_of(git_repository* repo) {
  TreeWatch::Stamp s;
  git_oid oid;
  if (git_reference_name_to_id(&oid, repo, "HEAD") == 0) s.head = lg2::oid_hex(oid);
  struct stat st {};
  if (::stat(index_file(repo).c_str(), &st) == 0)
    s.index = std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
              "." + std::to_string(st.st_mtim.tv_nsec);
  return s;
}

char status_letter(unsigned s) {
  if (s & GIT_STATUS_CONFLICTED) return 'U';
  if (s & GIT_STATUS_INDEX_RENAMED) return 'R';
  if (s & (GIT_STATUS_INDEX_DELETED | GIT_STATUS_WT_DELETED)) return 'D';
  if (s & GIT_STATUS_INDEX_NEW) return 'A';
  if (s & GIT_STATUS_WT_NEW) return '?';
  return 'M';
}

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
                          const std::string& message, const std::string& name, const std::string& email) {
  Buf msg;
  check(git_message_prettify(&msg.b, message.c_str(), /*strip_comments=*/0, '#'), "clean message");
  if (msg.str().empty()) throw Error("empty commit message");
  git_signature* sig_raw = nullptr;
  check(git_signature_now(&sig_raw, name.c_str(), email.c_str()), "author signature");
  SignaturePtr sig(sig_raw);
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

std::string libgit2_version() {
  int major = 0, minor = 0, rev = 0;
  git_libgit2_version(&major, &minor, &rev);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(rev);
}

// ---------------------------------------------------------------------------
// Opening.

void Repo::Free::operator()(git_repository* repo) const { git_repository_free(repo); }

Repo::Repo(git_repository* repo) : repo_(repo) {}
Repo::Repo(Repo&&) noexcept = default;
Repo& Repo::operator=(Repo&&) noexcept = default;
Repo::~Repo() = default;

Repo Repo::discover(const std::string& start_dir) {
  ensure_init();
  git_repository* r = nullptr;
  int rc = git_repository_open_ext(&r, start_dir.c_str(), 0, nullptr);
  if (rc == GIT_ENOTFOUND) throw Error("not a git repository: " + start_dir, kExitUsage);
  check(rc, ("open repository at " + start_dir).c_str());
  return Repo(r);
}

Repo Repo::open(const std::string& path) {
  ensure_init();
  git_repository* r = nullptr;
  int rc = git_repository_open_ext(&r, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr);
  if (rc == GIT_ENOTFOUND) throw Error("not a git repository: " + path, kExitUsage);
  check(rc, ("open repository at " + path).c_str());
  return Repo(r);
}

std::string Repo::workdir() const { return strip_trailing_slash(git_repository_workdir(raw())); }
std::string Repo::git_dir() const { return strip_trailing_slash(git_repository_path(raw())); }
std::string Repo::common_dir() const { return strip_trailing_slash(git_repository_commondir(raw())); }
bool Repo::is_bare() const { return git_repository_is_bare(raw()) == 1; }

// ---------------------------------------------------------------------------
// Refs.

std::string Repo::head_sha() const {
  CommitPtr head = head_commit(raw());
  return head ? oid_hex(*git_commit_id(head.get())) : std::string();
}

std::string Repo::head_branch() const {
  int detached = git_repository_head_detached(raw());
  check(detached, "read HEAD");
  if (detached) return "";
  git_reference* ref = nullptr;
  check(git_reference_lookup(&ref, raw(), "HEAD"), "read HEAD");
  ReferencePtr head(ref);
  if (git_reference_type(head.get()) != GIT_REFERENCE_SYMBOLIC) return "";
  std::string target = git_reference_symbolic_target(head.get());
  constexpr std::string_view kHeads = "refs/heads/";
  return starts_with(target, kHeads) ? target.substr(kHeads.size()) : target;
}

std::string Repo::resolve(const std::string& rev) const {
  return oid_hex(*git_commit_id(lookup_commit(raw(), rev).get()));
}

std::string Repo::tree_of(const std::string& rev) const {
  return oid_hex(*git_commit_tree_id(lookup_commit(raw(), rev).get()));
}

std::optional<std::string> Repo::read_ref(const std::string& name) const {
  git_oid oid;
  int rc = git_reference_name_to_id(&oid, raw(), name.c_str());
  if (rc == GIT_ENOTFOUND) return std::nullopt;
  check(rc, ("read ref " + name).c_str());
  return oid_hex(oid);
}

void Repo::write_ref(const std::string& name, const std::string& rev, const std::string& log_message) {
  // Not peeled to a commit: a ref may name any object, as with git update-ref.
  ObjectPtr target = revparse(raw(), rev);
  with_lock_wait({common_dir() + "/" + name + ".lock"}, true, [&] {
    git_reference* ref = nullptr;
    check(
        git_reference_create(&ref, raw(), name.c_str(), git_object_id(target.get()), /*force=*/1, log_message.c_str()),
        ("write ref " + name).c_str());
    git_reference_free(ref);
  });
}

std::vector<std::string> Repo::index_locks() const { return {git_dir() + "/index.lock", git_dir() + "/HEAD.lock"}; }

bool Repo::delete_ref(const std::string& name) {
  git_reference* ref = nullptr;
  int rc = git_reference_lookup(&ref, raw(), name.c_str());
  if (rc == GIT_ENOTFOUND) return false;
  check(rc, ("read ref " + name).c_str());
  ReferencePtr owned(ref);
  with_lock_wait({common_dir() + "/" + name + ".lock"}, true,
                 [&] { check(git_reference_delete(owned.get()), ("delete ref " + name).c_str()); });
  return true;
}

std::vector<RefEntry> Repo::list_refs(const std::string& prefix) const {
  git_reference_iterator* it_raw = nullptr;
  check(git_reference_iterator_new(&it_raw, raw()), "list refs");
  RefIterPtr it(it_raw);
  std::vector<RefEntry> out;
  for (;;) {
    git_reference* ref_raw = nullptr;
    int rc = git_reference_next(&ref_raw, it.get());
    if (rc == GIT_ITEROVER) break;
    check(rc, "list refs");
    ReferencePtr ref(ref_raw);
    std::string name = git_reference_name(ref.get());
    if (!starts_with(name, prefix)) continue;
    git_reference* resolved_raw = nullptr;
    if (git_reference_resolve(&resolved_raw, ref.get()) < 0) {
      git_error_clear();  // dangling symbolic ref: nothing to report
      continue;
    }
    ReferencePtr resolved(resolved_raw);
    out.push_back({name, oid_hex(*git_reference_target(resolved.get()))});
  }
  std::sort(out.begin(), out.end(), [](const RefEntry& a, const RefEntry& b) { return a.name < b.name; });
  return out;
}

// ---------------------------------------------------------------------------
// Status.

std::optional<std::vector<std::string>> Repo::watched_paths() const {
  if (!watch_) return std::nullopt;
  return watch_->changed(stamp_of(raw()));
}

void Repo::watch_clean(const std::vector<std::string>& kept) {
  if (watch_) watch_->mark_clean(stamp_of(raw()), kept);
}

bool Repo::watch_work_tree() {
  if (is_bare()) return false;
  watch_ = TreeWatch::start(workdir());
  return watch_ != nullptr;
}

std::vector<StatusEntry> Repo::status() const {
  std::optional<std::vector<std::string>> paths = watched_paths();
  std::vector<StatusEntry> out;
  if (paths && paths->empty()) return out;  // nothing written since the tree was clean
  StatusListPtr list = status_list(raw(), GIT_STATUS_SHOW_INDEX_AND_WORKDIR, paths ? &*paths : nullptr);
  for (size_t i = 0, n = git_status_list_entrycount(list.get()); i < n; ++i) {
    const git_status_entry* e = git_status_byindex(list.get(), i);
    if (e->status == GIT_STATUS_CURRENT || (e->status & GIT_STATUS_IGNORED)) continue;
    StatusEntry s;
    s.code = status_letter(e->status);
    const git_diff_delta* d = e->index_to_workdir ? e->index_to_workdir : e->head_to_index;
    if (!d) continue;
    s.path = d->new_file.path ? d->new_file.path : d->old_file.path;
    if (s.code == 'R' && e->head_to_index) s.old_path = e->head_to_index->old_file.path;
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const StatusEntry& a, const StatusEntry& b) { return a.path < b.path; });
  return out;
}

bool Repo::is_clean(const std::vector<std::string>& ignore_prefixes) const {
  for (const StatusEntry& e : status()) {
    if (!under_any(e.path, ignore_prefixes)) return false;
    if (!e.old_path.empty() && !under_any(e.old_path, ignore_prefixes)) return false;
  }
  return true;
}

bool Repo::tracked_clean(const std::vector<std::string>& ignore_prefixes) const {
  for (const StatusEntry& e : status()) {
    if (e.code == '?') continue;
    if (!under_any(e.path, ignore_prefixes)) return false;
    if (!e.old_path.empty() && !under_any(e.old_path, ignore_prefixes)) return false;
  }
  return true;
}

std::vector<std::string> Repo::untracked_files(const std::vector<std::string>& ignore_prefixes) const {
  std::vector<std::string> out;
  for (const StatusEntry& e : status())
    if (e.code == '?' && !under_any(e.path, ignore_prefixes)) out.push_back(e.path);
  return out;
}

std::vector<std::string> Repo::listed_files() const {
  std::vector<std::string> out;
  {
    IndexPtr index = fresh_index(raw());
    for (size_t i = 0, n = git_index_entrycount(index.get()); i < n; ++i) {
      const git_index_entry* e = git_index_get_byindex(index.get(), i);
      if (e && git_index_entry_stage(e) == 0) out.emplace_back(e->path);
    }
  }
  StatusListPtr list = status_list(raw(), GIT_STATUS_SHOW_WORKDIR_ONLY);
  for (size_t i = 0, n = git_status_list_entrycount(list.get()); i < n; ++i) {
    const git_status_entry* e = git_status_byindex(list.get(), i);
    if ((e->status & GIT_STATUS_WT_NEW) && e->index_to_workdir && e->index_to_workdir->new_file.path)
      out.emplace_back(e->index_to_workdir->new_file.path);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// ---------------------------------------------------------------------------
// Commits (reset and checkout: checkout.cc).

std::string Repo::commit_all(const std::string& message, const std::string& author_name,
                             const std::string& author_email, bool include_untracked,
                             const std::vector<std::string>& skip_untracked) {
  std::string out;
  with_lock_wait(index_locks(), false,
                 [&] { out = commit_all_now(message, author_name, author_email, include_untracked, skip_untracked); });
  return out;
}

std::string Repo::commit_all_now(const std::string& message, const std::string& author_name,
                                 const std::string& author_email, bool include_untracked,
                                 const std::vector<std::string>& skip_untracked) {
  IndexPtr index = fresh_index(raw(), !watch_);
  try {
    std::optional<std::vector<std::string>> paths = watched_paths();
    std::vector<std::string> left;
    git_oid tree = stage_workdir(raw(), index.get(), include_untracked, skip_untracked, paths ? &*paths : nullptr,
                                 watch_ ? &left : nullptr);
    // "HEAD" moves the current branch, creates an unborn one, or moves a
    // detached HEAD: exactly git commit's behaviour in all three states.
    std::string sha = create_commit(raw(), "HEAD", tree, message, author_name, author_email);
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

std::string Repo::commit_tracked_and(const std::vector<std::string>& paths, const std::string& message,
                                     const std::string& author_name, const std::string& author_email) {
  std::string out;
  with_lock_wait(index_locks(), false,
                 [&] { out = commit_tracked_and_now(paths, message, author_name, author_email); });
  return out;
}

std::string Repo::commit_tracked_and_now(const std::vector<std::string>& paths, const std::string& message,
                                         const std::string& author_name, const std::string& author_email) {
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
    std::string sha = create_commit(raw(), "HEAD", tree, message, author_name, author_email);
    check(git_index_write(index.get()), "write index");
    record_checkout(raw());
    return sha;
  } catch (...) {
    git_index_read(index.get(), 1);
    throw;
  }
}

std::string Repo::snapshot_workdir(const std::string& message, const std::string& author_name,
                                   const std::string& author_email, bool include_untracked,
                                   const std::vector<std::string>& skip_untracked) {
  IndexPtr index = fresh_index(raw());
  std::string sha;
  try {
    std::optional<std::vector<std::string>> paths = watched_paths();
    git_oid tree =
        stage_workdir(raw(), index.get(), include_untracked, skip_untracked, paths ? &*paths : nullptr, nullptr);
    sha = create_commit(raw(), nullptr, tree, message, author_name, author_email);
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

// ---------------------------------------------------------------------------
// History.

std::vector<std::string> Repo::rev_list(const std::string& from_exclusive, const std::string& to_inclusive) const {
  git_revwalk* w = nullptr;
  check(git_revwalk_new(&w, raw()), "revwalk");
  RevwalkPtr walk(w);
  check(git_revwalk_sorting(walk.get(), GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE), "revwalk sort");
  check(git_revwalk_simplify_first_parent(walk.get()), "revwalk first-parent");
  CommitPtr to = lookup_commit(raw(), to_inclusive);
  check(git_revwalk_push(walk.get(), git_commit_id(to.get())), "revwalk push");
  if (!from_exclusive.empty()) {
    CommitPtr from = lookup_commit(raw(), from_exclusive);
    check(git_revwalk_hide(walk.get(), git_commit_id(from.get())), "revwalk hide");
  }
  std::vector<std::string> out;
  git_oid oid;
  int rc;
  while ((rc = git_revwalk_next(&oid, walk.get())) == 0) out.push_back(oid_hex(oid));
  if (rc != GIT_ITEROVER) check(rc, "revwalk");
  return out;
}

bool Repo::is_ancestor(const std::string& ancestor, const std::string& descendant) const {
  CommitPtr a = lookup_commit(raw(), ancestor);
  CommitPtr d = lookup_commit(raw(), descendant);
  if (git_oid_equal(git_commit_id(a.get()), git_commit_id(d.get()))) return true;
  int rc = git_graph_descendant_of(raw(), git_commit_id(d.get()), git_commit_id(a.get()));
  check(rc, "ancestry");
  return rc == 1;
}

std::string Repo::merge_base(const std::string& a, const std::string& b) const {
  CommitPtr ca = lookup_commit(raw(), a);
  CommitPtr cb = lookup_commit(raw(), b);
  git_oid out;
  const int rc = git_merge_base(&out, raw(), git_commit_id(ca.get()), git_commit_id(cb.get()));
  if (rc == GIT_ENOTFOUND) return "";
  check(rc, "merge base");
  return oid_hex(out);
}

std::string Repo::commit_message(const std::string& rev) const {
  CommitPtr c = lookup_commit(raw(), rev);
  const char* m = git_commit_message(c.get());
  return m ? m : "";
}

std::vector<std::string> Repo::commit_files(const std::string& rev) const {
  CommitPtr c = lookup_commit(raw(), rev);
  TreePtr parent_tree;
  if (git_commit_parentcount(c.get()) > 0) {
    git_commit* p = nullptr;
    check(git_commit_parent(&p, c.get(), 0), "read parent");
    parent_tree = commit_tree(CommitPtr(p).get());
  }
  TreePtr tree = commit_tree(c.get());
  DiffPtr diff = diff_trees(raw(), parent_tree.get(), tree.get(), /*for_patch=*/false);
  return delta_paths(diff.get());
}

std::vector<std::string> Repo::changed_paths(const std::string& from, const std::string& to) const {
  TreePtr a = commit_tree(lookup_commit(raw(), from).get());
  TreePtr b = commit_tree(lookup_commit(raw(), to).get());
  std::vector<std::string> out;
  changed_files(raw(), a.get(), b.get(), "", out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// ---------------------------------------------------------------------------
// Configuration.

std::string Repo::hooks_dir() const {
  std::optional<std::string> configured = config_get("core.hooksPath");
  if (configured && !configured->empty()) {
    std::string p = *configured;
    // git reads core.hooksPath as a pathname: "~/" is the home directory.
    if (p == "~" || starts_with(p, "~/")) {
      const char* home = std::getenv("HOME");
      p = std::string(home ? home : "") + p.substr(1);
    }
    fs::path hp(p);
    if (hp.is_relative()) hp = fs::path(is_bare() ? git_dir() : workdir()) / hp;
    return strip_trailing_slash(hp.lexically_normal().c_str());
  }
  Buf out;
  check(git_repository_item_path(&out.b, raw(), GIT_REPOSITORY_ITEM_HOOKS), "hooks path");
  return strip_trailing_slash(fs::path(out.str()).lexically_normal().c_str());
}

std::optional<std::string> Repo::config_get(const std::string& key) const {
  // A fresh snapshot each time: config files edited since (by `git config`,
  // say) are read again, and one lookup sees one consistent state.
  git_config* cfg_raw = nullptr;
  check(git_repository_config_snapshot(&cfg_raw, raw()), "read config");
  ConfigPtr cfg(cfg_raw);
  git_config_entry* e = nullptr;
  int rc = git_config_get_entry(&e, cfg.get(), key.c_str());
  if (rc == GIT_ENOTFOUND) return std::nullopt;
  check(rc, ("read config " + key).c_str());
  ConfigEntryPtr entry(e);
  return std::string(entry->value ? entry->value : "");
}

void Repo::restore_paths(const std::string& rev, const std::vector<std::string>& paths) {
  CommitPtr commit = lookup_commit(repo_.get(), rev);
  TreePtr tree = commit_tree(commit.get());
  std::string root = workdir();
  for (const auto& rel : paths) {
    if (rel.empty() || rel[0] == '/' || rel.find("..") != std::string::npos) continue;
    fs::path target = fs::path(root) / rel;
    git_tree_entry* raw = nullptr;
    int rc = git_tree_entry_bypath(&raw, tree.get(), rel.c_str());
    if (rc == GIT_ENOTFOUND) {
      std::error_code ec;
      if (fs::is_directory(fs::symlink_status(target, ec))) continue;  // a folder is not a path we restore
      fs::remove(target, ec);
      // Remove folders the patch created and left empty.
      for (fs::path d = target.parent_path(); d != fs::path(root) && d.string().size() > root.size();
           d = d.parent_path()) {
        if (!fs::is_empty(d, ec) || ec) break;
        fs::remove(d, ec);
      }
      continue;
    }
    check(rc, "find path in tree");
    TreeEntryPtr entry(raw);
    git_filemode_t mode = git_tree_entry_filemode(entry.get());
    if (mode == GIT_FILEMODE_TREE || mode == GIT_FILEMODE_COMMIT) continue;
    git_blob* blob_raw = nullptr;
    check(git_blob_lookup(&blob_raw, repo_.get(), git_tree_entry_id(entry.get())), "read blob");
    BlobPtr blob(blob_raw);
    std::string content(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                        static_cast<size_t>(git_blob_rawsize(blob.get())));
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (fs::is_symlink(fs::symlink_status(target, ec)) || fs::is_directory(fs::symlink_status(target, ec)))
      fs::remove_all(target, ec);
    if (mode == GIT_FILEMODE_LINK) {
      fs::remove(target, ec);
      fs::create_symlink(content, target);
      continue;
    }
    util::write_file_atomic(target.string(), content, mode == GIT_FILEMODE_BLOB_EXECUTABLE ? 0755 : 0644);
  }
}

}  // namespace phoenix::gitx

// ---------------------------------------------------------------------------
// Data kept under refs.

namespace phoenix::gitx {

std::string Repo::write_blob_commit(const std::string& ref, const std::string& filename, const std::string& content,
                                    const std::string& message, const std::vector<std::string>& parents) {
  if (filename.empty() || filename.find('/') != std::string::npos)
    throw Error("write_blob_commit: '" + filename + "' is not a plain file name");
  git_oid blob;
  check(git_blob_create_from_buffer(&blob, raw(), content.data(), content.size()), "write blob");
  git_treebuilder* tb_raw = nullptr;
  check(git_treebuilder_new(&tb_raw, raw(), nullptr), "build tree");
  TreeBuilderPtr tb(tb_raw);
  check(git_treebuilder_insert(nullptr, tb.get(), filename.c_str(), &blob, GIT_FILEMODE_BLOB), "build tree");
  git_oid tree_id;
  check(git_treebuilder_write(&tree_id, tb.get()), "write tree");
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, raw(), &tree_id), "read tree");
  TreePtr tree(tree_raw);
  std::vector<CommitPtr> owned;
  std::vector<const git_commit*> parent_ptrs;
  for (const auto& p : parents) {
    owned.push_back(lookup_commit(raw(), p));
    parent_ptrs.push_back(owned.back().get());
  }
  git_signature* sig_raw = nullptr;
  check(git_signature_now(&sig_raw, gitx::kPhoenixAuthor.name, gitx::kPhoenixAuthor.email), "author signature");
  SignaturePtr sig(sig_raw);
  Buf msg;
  check(git_message_prettify(&msg.b, message.c_str(), /*strip_comments=*/0, '#'), "clean message");
  if (msg.str().empty()) throw Error("empty commit message");
  git_oid id;
  // No update_ref here: libgit2 would insist that the ref's current tip is
  // the first parent. The ref is moved (forced) below instead.
  check(git_commit_create(&id, raw(), nullptr, sig.get(), sig.get(), nullptr, msg.b.ptr, tree.get(), parent_ptrs.size(),
                          parent_ptrs.data()),
        "commit");
  std::string sha = oid_hex(id);
  write_ref(ref, sha, message.substr(0, message.find('\n')));
  return sha;
}

std::optional<std::string> Repo::read_blob_at(const std::string& rev, const std::string& path) const {
  CommitPtr commit = lookup_commit(raw(), rev);
  TreePtr tree = commit_tree(commit.get());
  git_tree_entry* raw_entry = nullptr;
  int rc = git_tree_entry_bypath(&raw_entry, tree.get(), path.c_str());
  if (rc == GIT_ENOTFOUND) return std::nullopt;
  check(rc, "find path in tree");
  TreeEntryPtr entry(raw_entry);
  if (git_tree_entry_type(entry.get()) != GIT_OBJECT_BLOB) return std::nullopt;
  git_blob* blob_raw = nullptr;
  check(git_blob_lookup(&blob_raw, raw(), git_tree_entry_id(entry.get())), "read blob");
  BlobPtr blob(blob_raw);
  return std::string(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                     static_cast<size_t>(git_blob_rawsize(blob.get())));
}

}  // namespace phoenix::gitx
