#include "gitx/worktree.h"

#include <filesystem>
#include <optional>

#include "util/error.h"
#include "util/path.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::gitx {
namespace {

// Why the worktree `name` at `want` cannot be trusted, "" when it looks
// healthy, or "absent" when there is nothing at all.
std::string diagnose(Repo& repo, const std::string& name, const std::string& want) {
  const std::string common = util::normalize_path(repo.common_dir());
  std::error_code ec;
  const bool folder = fs::exists(want, ec);
  const bool admin = fs::exists(fs::path(common) / "worktrees" / name, ec);

  std::optional<WorktreeInfo> ours;
  for (const WorktreeInfo& w : repo.worktree_list()) {
    if (w.name == name) {
      ours = w;
    } else if (util::normalize_path(w.path) == want) {
      return "another worktree ('" + w.name + "') is registered at " + want;
    }
  }
  if (!ours) {
    if (!folder && !admin) return "absent";
    if (admin) return "its entry in " + common + "/worktrees is unreadable";
    return "the folder exists but the repository does not list it as a worktree";
  }
  if (ours->locked)
    throw Error("worktree '" + name + "' is locked; unlock it with `git worktree unlock " + name + "`");
  if (util::normalize_path(ours->path) != want) return "it is registered at " + ours->path + ", not at " + want;
  if (!folder) return "its folder is missing";
  if (!ours->valid) return "git reports it invalid";

  std::optional<Repo> wt;
  try {
    wt.emplace(Repo::open(want));
  } catch (const std::exception& e) {
    return std::string("it does not open as a repository (") + e.what() + ")";
  }
  if (util::normalize_path(wt->common_dir()) != common) return "it belongs to another repository (" + wt->common_dir() + ")";
  if (util::normalize_path(wt->git_dir()) != util::normalize_path((fs::path(common) / "worktrees" / name).string()))
    return "its .git points to another worktree (" + wt->git_dir() + ")";
  if (util::normalize_path(wt->workdir()) != want) return "it opens with work tree " + wt->workdir();
  try {
    if (wt->head_sha().empty()) return "its HEAD names no commit";
  } catch (const std::exception& e) {
    return std::string("its HEAD cannot be read (") + e.what() + ")";
  }
  return "";
}

// Removes every trace of a damaged worktree: the registration(s) at our
// name or our path, a half-written admin folder, and the folder itself.
void remove_damaged(Repo& repo, const std::string& name, const std::string& want) {
  const std::string common = util::normalize_path(repo.common_dir());
  for (const WorktreeInfo& w : repo.worktree_list()) {
    if (w.name == name || util::normalize_path(w.path) == want) {
      if (w.locked) throw Error("worktree '" + w.name + "' at " + w.path + " is locked; cannot recreate it");
      repo.worktree_remove(w.name);
    }
  }
  std::error_code ec;
  // An admin folder libgit2 cannot even look up is not listed above; it is
  // ours by name, and worktree_add refuses to run while it exists.
  fs::remove_all(fs::path(common) / "worktrees" / name, ec);
  if (ec) throw Error("cannot remove stale worktree entry: " + ec.message());
  fs::remove_all(want, ec);
  if (ec) throw Error("cannot remove damaged worktree " + want + ": " + ec.message());
}

}  // namespace

void move_worktree(Repo& worktree, const std::string& rev) {
  CheckoutOptions o;
  o.force = true;
  o.remove_untracked = true;
  worktree.checkout_detached(rev, o);
}

PersistentWorktree prepare_worktree(Repo& repo, const std::string& name, const std::string& path,
                                    const std::string& rev) {
  PersistentWorktree out;
  out.path = util::normalize_path(path);
  const std::string sha = repo.resolve(rev);
  // Damage handling deletes this folder: refuse paths that would take the
  // user's work tree or the repository with it.
  const std::string top = repo.workdir().empty() ? "" : util::normalize_path(repo.workdir());
  const std::string common = util::normalize_path(repo.common_dir());
  // Inside the git directory only below its phoenix/ folder, which git
  // itself never uses (layout/layout.h keeps Phoenix's trees there).
  const bool in_git_dir = util::same_or_inside(out.path, common) && !util::same_or_inside(out.path, common + "/phoenix");
  if ((!top.empty() && util::same_or_inside(top, out.path)) || in_git_dir || util::same_or_inside(common, out.path) ||
      out.path == common + "/phoenix")
    throw Error("refusing worktree '" + name + "' at " + out.path + ": it overlaps the repository itself");

  std::string damage = diagnose(repo, name, out.path);
  if (damage.empty()) {
    // The clean and the move in one forced checkout: whatever the last user
    // left behind (edited tracked files, staged files, untracked files)
    // goes; ignored files (build outputs) stay so builds stay warm. One
    // that cannot even be checked out is damaged too.
    try {
      Repo wt = Repo::open(out.path);
      move_worktree(wt, sha);
      out.state = PersistentWorktree::State::kReused;
      return out;
    } catch (const std::exception& e) {
      damage = std::string("it cannot be reset (") + e.what() + ")";
    }
  }
  if (damage != "absent") {
    remove_damaged(repo, name, out.path);
    out.state = PersistentWorktree::State::kRecreated;
    out.damage = damage;
  }
  std::error_code ec;
  fs::create_directories(fs::path(out.path).parent_path(), ec);
  if (ec) throw Error("cannot create " + fs::path(out.path).parent_path().string() + ": " + ec.message());
  repo.worktree_add(name, out.path, sha);
  return out;
}

}  // namespace phoenix::gitx
