#include "gitx/repo.h"

#include <git2.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include "gitx/names.h"
#include "gitx/watch.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::gitx {

// ---------------------------------------------------------------------------
// Helpers shared with checkout.cc, diff.cc and worktree.cc (internal.h).

namespace internal {

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

using util::starts_with;

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
