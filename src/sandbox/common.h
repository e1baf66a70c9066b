// What the copying sandbox (copy.cc) and the overlay sandbox (overlay.cc)
// share: deciding which files a sandbox holds (Copier, take_files), the
// libgit2 steps both take to make their repositories, and cleaning up.
// Internal to sandbox/; include only from its .cc files.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gitx/libgit2.h"
#include "sandbox/sandbox.h"

namespace phoenix::sandbox::detail {

namespace fs = std::filesystem;

// --- libgit2 -------------------------------------------------------------
// Errors are "libgit2: open repository at PATH: ..." (no search upwards).
gitx::lg2::RepositoryPtr open_repo(const std::string& path);
// A new repository whose initial branch is "main".
gitx::lg2::RepositoryPtr init_repo(const std::string& path, bool bare);
// The repository's own config file (not global or system ones).
gitx::lg2::ConfigPtr local_config(git_repository* repo);
// An effective boolean setting, `fallback` when unset.
bool config_bool(git_repository* repo, const char* key, bool fallback);
// `tree_id` committed by Phoenix in `meta` on `parent` (nullptr: a root
// commit), moving `update_ref` (nullptr: no ref). The two `what`s name the
// steps in errors.
git_oid commit_tree(git_repository* meta, const git_oid& tree_id, const git_commit* parent, const char* update_ref,
                    const char* message, const char* read_tree_what, const char* commit_what);
// The sandbox's baseline: `tree` committed as HEAD of its meta repository.
git_oid commit_baseline(git_repository* meta, const git_oid& tree_id);
// The agent's identity in a sandbox repository: an agent that commits must
// not fail for want of a name or a signing key, nor sign with the user's.
void configure_agent_identity(git_config* cfg);
// Points `ref` of the repository at `git_dir` at the baseline commit.
void set_baseline_branch(const std::string& git_dir, const git_oid& commit_id);

// --- paths ---------------------------------------------------------------
// ".phoenix/": Phoenix's own state folder in a work tree, as a prefix.
const std::string& state_dir_prefix();
// Paths no sandbox ever holds, whatever the index or the carry globs say:
// `.git` at any depth and Phoenix's own state folder.
bool is_internal(std::string_view rel);
// The target of the symlink at `p`, "" when it cannot be read.
std::string read_link(const fs::path& p);
// Makes everything below `dir` writable (folders traversable) so it can be
// removed; symlinks are not followed.
void make_writable(const fs::path& dir);

// --- what a sandbox holds ------------------------------------------------
struct Copier {
  fs::path src_root;
  fs::path dst_root;
  // Decide only (the overlay sandbox): what would be copied is recorded in
  // `copied` with its lstat data in `stats`, nothing is written.
  bool dry = false;
  struct Seen {
    struct stat st;
    bool kept = false;  // its index entry can be kept as it is
  };
  // Looked up by string_view too, without making a string each time.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Seen, Hash, std::equal_to<>> stats;
  std::set<std::string> copied;
  std::vector<std::string> links;  // symlinks created, checked once all is copied
  std::set<std::string> link_set;
  std::map<std::string, bool> src_dir_is_link;  // lstat cache for parent folders
  std::vector<Skipped> skipped;
  // The folder of the last path looked at, open: tracked paths come sorted,
  // so a folder's files are neighbours and each lstat resolves one name
  // instead of the whole path.
  std::string fd_dir;
  int dir_fd = -1;

  Copier() = default;
  Copier(const Copier&) = delete;
  Copier& operator=(const Copier&) = delete;
  ~Copier();

  // lstat() of src_root/rel (rel checked by beyond_symlink() first).
  int lstat_rel(const std::string& rel, struct stat* st);
  // Whether a parent folder of `rel` is a symlink — in the user's tree (the
  // index may still list files below a folder since replaced by a link, and
  // copying them would read through it) or among the links made here.
  bool beyond_symlink(const std::string& rel);
  // Copies one tracked or carried path; records why when it does not.
  void copy(const std::string& rel);
  void skip(const std::string& rel, const char* why) { skipped.push_back({rel, why}); }
  // Removes the copied symlinks that lead outside the copy (see
  // resolves_inside). Removing one can only make others dangle, never
  // escape, so one pass is enough.
  void drop_escaping_links();
};

// What a sandbox holds: the tracked paths of `index` (a conflicted path
// once; gitlinks are other repositories' commits, not files) and the carried
// files (the sandboxes' own folder `base_rel` aside), through `copier`; then
// what it took and, sorted by path, what it skipped.
void take_files(Copier& copier, git_index* index, const std::vector<std::string>& carry_globs,
                const std::string& base_rel, std::vector<std::string>& files, std::vector<Skipped>& skipped);

}  // namespace phoenix::sandbox::detail
