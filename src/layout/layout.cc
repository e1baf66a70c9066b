#include "layout/layout.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <system_error>

#include "gitx/repo.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/gitfile.h"
#include "util/hash.h"
#include "util/lock.h"
#include "util/path.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::layout {

namespace {

// The file in a tree root that names the repository it belongs to.
constexpr const char* kOwnerFile = "repository";

// Removes the tree roots of repositories that no longer exist (a deleted
// clone, a test's temporary repository): only folders whose owner file
// names a git directory that is gone. Sandboxes may have lost their write
// bits to an agent; they are given back first.
void prune_orphans(const fs::path& base, const std::string& keep) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(base, ec)) {
    if (!e.is_directory(ec) || e.path().string() == keep) continue;
    const fs::path owner = e.path() / kOwnerFile;
    if (!fs::is_regular_file(owner, ec)) continue;
    std::string common;
    try {
      common = util::trim(util::read_file(owner.string()));
    } catch (const Error&) { continue; }
    if (common.empty() || fs::exists(common, ec)) continue;
    for (auto it = fs::recursive_directory_iterator(e.path(), fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec))
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    // Another process's first claim may be removing the same folder: two
    // remove_all()s racing each stop at the file the other took. Again,
    // until it is gone (a folder that cannot go stays, as before).
    for (int tries = 0; tries < 3 && fs::exists(e.path(), ec); ++tries) fs::remove_all(e.path(), ec);
  }
}

std::string env_dir(const char* name) {
  const char* v = std::getenv(name);
  return v && v[0] == '/' ? std::string(v) : std::string();
}

}  // namespace

std::string trees_root(const gitx::Repo& repo) {
  const std::string common = util::normalize_path(repo.common_dir());
  const std::string top = repo.workdir().empty() ? "" : util::normalize_path(repo.workdir());
  std::string base = env_dir("PHOENIX_TREES_DIR");
  if (base.empty() && !env_dir("XDG_CACHE_HOME").empty()) base = env_dir("XDG_CACHE_HOME") + "/phoenix/trees";
  if (base.empty() && !env_dir("HOME").empty()) base = env_dir("HOME") + "/.cache/phoenix/trees";
  if (!base.empty()) base = util::normalize_path(base);
  // Never inside the work tree (nor the repository): there a test runner
  // that walks the project would find the copies of the code.
  if (base.empty() || (!top.empty() && util::same_or_inside(base, top)) || util::same_or_inside(base, common))
    return common + "/phoenix";
  // One folder per repository, whichever of its worktrees asks (the git
  // names of Phoenix's worktrees are one set per repository too): named
  // after the main work tree, the folder holding .git, when there is one.
  const fs::path common_path(common);
  std::string name =
      (top.empty() || common_path.filename() == ".git" ? common_path.parent_path() : fs::path(top)).filename().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  const std::string root = base + "/" + (name.empty() ? "repo" : name) + "-" + util::sha256_hex(common).substr(0, 12);

  // Once per process: claim the folder for this repository and clear away
  // those of repositories that are gone.
  static std::mutex mu;
  static std::set<std::string> claimed;
  std::lock_guard<std::mutex> g(mu);
  if (claimed.insert(root).second) {
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) throw Error("cannot create " + root + ": " + ec.message());
    const std::string owner = root + "/" + kOwnerFile;
    if (!fs::exists(owner, ec)) util::write_file_atomic(owner, common + "\n");
    prune_orphans(base, root);
  }
  return root;
}
void require_writable(const gitx::Repo& repo) {
  const std::string top = repo.workdir();
  std::vector<std::pair<std::string, std::string>> places;
  if (!top.empty()) places.emplace_back("the work tree", top);
  places.emplace_back("the git directory", repo.git_dir());
  if (repo.common_dir() != repo.git_dir()) places.emplace_back("the git directory", repo.common_dir());
  if (!top.empty()) {
    std::error_code ec;
    if (fs::exists(state_dir(top), ec)) places.emplace_back("Phoenix's state folder", state_dir(top));
  }
  for (const auto& [what, dir] : places) {
    if (::access(dir.c_str(), W_OK) == 0) continue;
    const int e = errno;
    throw Error(what + " " + dir + " is read-only (" + std::strerror(e) +
                "): nothing was written; 'phoenix sense' and 'phoenix trace verify' work read-only");
  }
}

std::string worktree_path(const gitx::Repo& repo, const std::string& name) {
  return trees_root(repo) + "/worktrees/" + name;
}
std::string worktree_git_name(const std::string& name) { return "phoenix-" + name; }
std::string sandboxes_dir(const gitx::Repo& repo) { return trees_root(repo) + "/sandboxes"; }
std::string setup_stamp(const gitx::Repo& repo, const std::string& tree_name) {
  return trees_root(repo) + "/setup/" + tree_name + ".json";
}
std::string tree_lock(const gitx::Repo& repo, const std::string& tree_name) {
  return trees_root(repo) + "/locks/" + tree_name + ".lock";
}

namespace {

// The folder's .git file names a worktree admin folder of this repository.
bool is_our_linked_worktree(const fs::path& dir, const std::string& common) {
  std::error_code ec;
  const fs::path dotgit = dir / ".git";
  if (!fs::is_regular_file(dotgit, ec)) return false;
  const std::optional<std::string> target = util::gitdir_of_file(dotgit.string());
  return target && util::same_or_inside(util::normalize_path(*target), common + "/worktrees");
}

// A worktree's name as a ref name component: what git allows in a
// worktree's name, anything else (an older git's spaces) as '_'; never
// ".lock" or a leading dot.
std::string checkpoint_component(std::string name) {
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  if (name.empty() || name[0] == '.') name = "_" + name;
  while (name.size() >= 5 && name.compare(name.size() - 5, 5, ".lock") == 0) name[name.size() - 5] = '_';
  for (size_t dots; (dots = name.find("..")) != std::string::npos;) name[dots] = '_';
  return name;
}

// The checkpoint refs of Phoenix's trees that are gone (see the header).
void prune_gone_checkpoints(gitx::Repo& repo) {
  const std::string prefix = std::string(kCheckpointsPrefix) + "worktrees/";
  std::set<std::string> live;
  for (const gitx::WorktreeInfo& w : repo.worktree_list()) live.insert(checkpoint_component(w.name));
  std::error_code ec;
  for (const gitx::RefEntry& r : repo.list_refs(prefix)) {
    const std::string rest = r.name.substr(prefix.size());
    const std::string tree = rest.substr(0, rest.find('/'));
    if (live.count(tree)) continue;
    const std::string lock = tree_lock(repo, tree);
    if (!fs::exists(lock, ec) || util::FileLock::holder_pid(lock) > 0) continue;
    repo.delete_ref(r.name);
  }
}

}  // namespace

std::string checkpoint_tree(const gitx::Repo& repo) {
  const std::string git_dir = util::normalize_path(repo.git_dir());
  if (git_dir == util::normalize_path(repo.common_dir())) return "main";
  return "worktrees/" + checkpoint_component(fs::path(git_dir).filename().string());
}
std::string pre_run_ref(const gitx::Repo& repo) { return kCheckpointsPrefix + checkpoint_tree(repo) + "/pre-run"; }
std::string attempt_ref(const gitx::Repo& repo) { return kCheckpointsPrefix + checkpoint_tree(repo) + "/attempt"; }

std::string loop_branch(const std::string& yyyymmdd) { return "phoenix/loop-" + yyyymmdd; }
std::string shard_branch(int index, int count) {
  return "phoenix/shard-" + std::to_string(index) + "-of-" + std::to_string(count);
}
std::string task_branch(const std::string& task_id) { return "phoenix/task-" + task_id; }

std::vector<std::string> migrate_legacy_trees(gitx::Repo& repo) {
  std::vector<std::string> done;
  prune_gone_checkpoints(repo);
  if (repo.workdir().empty()) return done;
  const std::string top = util::normalize_path(repo.workdir());
  const std::string old_wt = legacy_worktrees_dir(top);
  const std::string old_sb = legacy_sandboxes_dir(top);
  std::error_code ec;
  const bool have_wt = fs::exists(old_wt, ec), have_sb = fs::exists(old_sb, ec);
  bool registered_inside = false;
  for (const gitx::WorktreeInfo& w : repo.worktree_list())
    if (util::same_or_inside(util::normalize_path(w.path), old_wt)) registered_inside = true;
  if (!have_wt && !have_sb && !registered_inside) return done;

  const std::string common = util::normalize_path(repo.common_dir());
  for (const gitx::WorktreeInfo& w : repo.worktree_list()) {
    const std::string p = util::normalize_path(w.path);
    if (!util::same_or_inside(p, old_wt)) continue;
    if (w.locked) {
      done.push_back("left the locked old worktree " + p + " (unlock it with `git worktree unlock " + w.name + "`)");
      continue;
    }
    repo.worktree_remove(w.name);
    fs::remove_all(p, ec);
    done.push_back("removed the old worktree " + p.substr(top.size() + 1));
  }
  if (fs::is_directory(old_wt, ec)) {
    for (const auto& e : fs::directory_iterator(old_wt, ec)) {
      // Only what is provably ours: a linked worktree of this repository
      // that git no longer lists, or an empty folder.
      if (!e.is_directory(ec)) continue;
      if (is_our_linked_worktree(e.path(), common) || fs::is_empty(e.path(), ec)) {
        fs::remove_all(e.path(), ec);
        done.push_back("removed the stale old worktree " + e.path().string().substr(top.size() + 1));
      }
    }
    if (fs::is_empty(old_wt, ec)) fs::remove(old_wt, ec);
  }
  if (fs::is_directory(old_sb, ec)) {
    for (const auto& e : fs::directory_iterator(old_sb, ec)) {
      if (!e.is_directory(ec) || !util::starts_with(e.path().filename().string(), "sandbox-")) continue;
      // A sandbox may have had its permissions taken away by an agent.
      for (auto it = fs::recursive_directory_iterator(e.path(), fs::directory_options::skip_permission_denied, ec);
           it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_directory(ec) && !it->is_symlink(ec))
          fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
      }
      fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add, ec);
      fs::remove_all(e.path(), ec);
      done.push_back("removed the old sandbox " + e.path().string().substr(top.size() + 1));
    }
    if (fs::is_empty(old_sb, ec)) fs::remove(old_sb, ec);
  }
  return done;
}

std::string known_good_ref_of(const std::string& branch) {
  return std::string(kKnownGoodPrefix) + (branch.empty() ? "HEAD" : branch);
}

std::string known_good_ref(gitx::Repo& repo) {
  const std::string ref = known_good_ref_of(repo.head_branch());
  if (std::optional<std::string> legacy = repo.read_ref(kLegacyKnownGoodRef)) {
    // refs/phoenix/known-good is a file where the new refs need a folder.
    repo.delete_ref(kLegacyKnownGoodRef);
    const std::string head = repo.head_sha();
    bool ours = false;
    try {
      ours = !head.empty() && repo.is_ancestor(*legacy, head);
    } catch (const Error&) {}
    if (ours && !repo.read_ref(ref)) repo.write_ref(ref, *legacy, "phoenix: known-good, kept per branch");
    else
      repo.write_ref("refs/phoenix/abandoned/known-good-" + util::compact_utc(true), *legacy,
                     "phoenix: the one known-good of an earlier version");
  }
  return ref;
}

std::optional<std::string> known_good_commit(const gitx::Repo& repo, const std::string& ref) {
  if (std::optional<std::string> own = repo.read_ref(ref)) return own;
  const std::string head = repo.head_sha();
  if (head.empty()) return std::nullopt;
  std::optional<std::string> best;
  for (const auto& r : repo.list_refs(kKnownGoodPrefix)) {
    try {
      if (!repo.is_ancestor(r.sha, head)) continue;
      if (!best || repo.is_ancestor(*best, r.sha)) best = r.sha;
    } catch (const Error&) {}
  }
  return best;
}

}  // namespace phoenix::layout
