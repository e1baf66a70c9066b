#include "gitx/worktree.h"

#include <git2.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <optional>

#include "gitx/internal.h"
#include "gitx/stat_sweep.h"
#include "gitx/libgit2.h"
#include "util/error.h"
#include "util/fault.h"
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
  if (ours->locked) throw Error("worktree '" + name + "' is locked; unlock it with `git worktree unlock " + name + "`");
  if (util::normalize_path(ours->path) != want) return "it is registered at " + ours->path + ", not at " + want;
  if (!folder) return "its folder is missing";
  if (!ours->valid) return "git reports it invalid";

  std::optional<Repo> wt;
  try {
    wt.emplace(Repo::open(want));
  } catch (const std::exception& e) { return std::string("it does not open as a repository (") + e.what() + ")"; }
  if (util::normalize_path(wt->common_dir()) != common)
    return "it belongs to another repository (" + wt->common_dir() + ")";
  if (util::normalize_path(wt->git_dir()) != util::normalize_path((fs::path(common) / "worktrees" / name).string()))
    return "its .git points to another worktree (" + wt->git_dir() + ")";
  if (util::normalize_path(wt->workdir()) != want) return "it opens with work tree " + wt->workdir();
  try {
    if (wt->head_sha().empty()) return "its HEAD names no commit";
  } catch (const std::exception& e) { return std::string("its HEAD cannot be read (") + e.what() + ")"; }
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

void move_worktree(Repo& worktree, const std::string& rev, const std::vector<std::string>& keep_prefixes) {
  CheckoutOptions o;
  o.force = true;
  o.remove_untracked = true;
  o.keep_prefixes = keep_prefixes;
  worktree.checkout_detached(rev, o);
}

PersistentWorktree prepare_worktree(Repo& repo, const std::string& name, const std::string& path,
                                    const std::string& rev, const std::vector<std::string>& keep_prefixes) {
  PersistentWorktree out;
  out.path = util::normalize_path(path);
  const std::string sha = repo.resolve(rev);
  // Damage handling deletes this folder: refuse paths that would take the
  // user's work tree or the repository with it.
  const std::string top = repo.workdir().empty() ? "" : util::normalize_path(repo.workdir());
  const std::string common = util::normalize_path(repo.common_dir());
  // Inside the git directory only below its phoenix/ folder, which git
  // itself never uses (layout/layout.h keeps Phoenix's trees there).
  const bool in_git_dir =
      util::same_or_inside(out.path, common) && !util::same_or_inside(out.path, common + "/phoenix");
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
      move_worktree(wt, sha, keep_prefixes);
      out.state = PersistentWorktree::State::kReused;
      return out;
    } catch (const std::exception& e) { damage = std::string("it cannot be reset (") + e.what() + ")"; }
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

// ---------------------------------------------------------------------------
// Repo's worktree members (repo.h): add, remove, list.

using lg2::check;
using namespace lg2;  // the owner types
using internal::lookup_commit;
using internal::strip_trailing_slash;

void Repo::worktree_add(const std::string& name, const std::string& path, const std::string& rev) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    throw Error("invalid worktree name: '" + name + "'", kExitUsage);
  const fs::path dir = fs::absolute(path).lexically_normal();
  const fs::path admin = fs::path(common_dir()) / "worktrees" / name;
  std::error_code ec;
  // libgit2 creates both with O_EXCL-like mkdirs and does not clean up after
  // itself; checking first lets the failure path below delete only what
  // this call created.
  if (fs::exists(dir, ec)) throw Error("worktree path already exists: " + dir.string());
  if (fs::exists(admin, ec)) throw Error("worktree already exists: " + name);
  PHOENIX_FAULT_IO("worktree-add", dir.string());
  CommitPtr commit = lookup_commit(raw(), rev);
  const git_oid* oid = git_commit_id(commit.get());

  // git_worktree_add insists on a branch; give it a throwaway one at `rev`
  // (so its checkout is already the right tree), then detach and drop it.
  // Named by process and call, not by `name`: worktree names need not be
  // valid ref names, and two Repos may add worktrees at once.
  static std::atomic<unsigned> calls{0};
  const std::string temp_branch =
      "refs/heads/phoenix-tmp/worktree-" + std::to_string(::getpid()) + "-" + std::to_string(calls++);
  git_reference* ref_raw = nullptr;
  check(git_reference_create(&ref_raw, raw(), temp_branch.c_str(), oid, 1, "phoenix: worktree add"),
        "create temporary branch");
  ReferencePtr ref(ref_raw);
  auto drop_temp_branch = [&] {
    git_reference* r = nullptr;
    if (git_reference_lookup(&r, raw(), temp_branch.c_str()) == 0) {
      git_reference_delete(r);
      git_reference_free(r);
    }
  };
  try {
    git_worktree_add_options wo;
    check(git_worktree_add_options_init(&wo, GIT_WORKTREE_ADD_OPTIONS_VERSION), "worktree options");
    wo.ref = ref.get();
    wo.checkout_options.checkout_strategy = GIT_CHECKOUT_FORCE;
    git_worktree* wt_raw = nullptr;
    check(git_worktree_add(&wt_raw, raw(), name.c_str(), dir.c_str(), &wo), ("worktree add " + name).c_str());
    WorktreePtr wt(wt_raw);
    git_repository* sub_raw = nullptr;
    check(git_repository_open_from_worktree(&sub_raw, wt.get()), "open new worktree");
    RepositoryPtr sub(sub_raw);
    check(git_repository_set_head_detached(sub.get(), oid), "detach worktree HEAD");
    internal::record_checkout(sub.get());
  } catch (...) {
    fs::remove_all(dir, ec);
    fs::remove_all(admin, ec);
    drop_temp_branch();
    throw;
  }
  ref.reset();
  drop_temp_branch();
}

bool Repo::worktree_remove(const std::string& name) {
  // libgit2 reports a missing worktree as a bare -1 without a message.
  std::error_code ec;
  if (name.empty() || !fs::is_directory(fs::path(common_dir()) / "worktrees" / name, ec)) return false;
  git_worktree* wt_raw = nullptr;
  int rc = git_worktree_lookup(&wt_raw, raw(), name.c_str());
  if (rc == GIT_ENOTFOUND) return false;
  check(rc, ("find worktree " + name).c_str());
  WorktreePtr wt(wt_raw);
  git_worktree_prune_options po;
  check(git_worktree_prune_options_init(&po, GIT_WORKTREE_PRUNE_OPTIONS_VERSION), "prune options");
  // VALID: prune even a healthy worktree; WORKING_TREE: delete its folder
  // when it still exists (libgit2 skips that step when it is gone).
  po.flags = GIT_WORKTREE_PRUNE_VALID | GIT_WORKTREE_PRUNE_WORKING_TREE;
  check(git_worktree_prune(wt.get(), &po), ("remove worktree " + name).c_str());
  return true;
}

std::vector<WorktreeInfo> Repo::worktree_list() const {
  StrArray names;
  check(git_worktree_list(&names.a, raw()), "list worktrees");
  std::vector<WorktreeInfo> out;
  for (size_t i = 0; i < names.a.count; ++i) {
    git_worktree* wt_raw = nullptr;
    if (git_worktree_lookup(&wt_raw, raw(), names.a.strings[i]) < 0) {
      git_error_clear();  // half-written admin folder: not a worktree
      continue;
    }
    WorktreePtr wt(wt_raw);
    WorktreeInfo info;
    info.name = names.a.strings[i];
    info.path = strip_trailing_slash(git_worktree_path(wt.get()));
    info.valid = git_worktree_validate(wt.get()) == 0;
    if (!info.valid) git_error_clear();
    info.locked = git_worktree_is_locked(nullptr, wt.get()) > 0;
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace phoenix::gitx
