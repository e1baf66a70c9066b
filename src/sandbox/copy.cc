// The copying sandbox (Kind::kCopy, sandbox.h): the files a sandbox holds
// copied into work/, a fresh repository there, and meta.git beside it as
// Phoenix's own record of the baseline.
#include "sandbox/sandbox.h"

#include <filesystem>
#include <system_error>

#include "gitx/libgit2.h"
#include "sandbox/common.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace phoenix::sandbox {

using gitx::lg2::check;
using namespace gitx::lg2;  // the owner types
using namespace detail;

namespace {

// What `git init` found out about the file system.
struct FileSystemAnswers {
  bool filemode = true;
  bool symlinks = true;
  bool ignorecase = false;
};

// work/.git: its init probes the file system (file modes, symlinks, case);
// an agent that commits there does so as the sandbox.
FileSystemAnswers init_work_repo(const std::string& work) {
  RepositoryPtr repo = init_repo(work, /*bare=*/false);
  FileSystemAnswers a;
  a.filemode = config_bool(repo.get(), "core.filemode", true);
  a.symlinks = config_bool(repo.get(), "core.symlinks", true);
  a.ignorecase = config_bool(repo.get(), "core.ignorecase", false);
  ConfigPtr cfg = local_config(repo.get());
  configure_agent_identity(cfg.get());
  return a;
}

// meta.git, made bare with work/ as its work tree, takes the same answers.
void init_meta_repo(const std::string& meta, const std::string& work, const FileSystemAnswers& a) {
  RepositoryPtr repo = init_repo(meta, /*bare=*/true);
  ConfigPtr cfg = local_config(repo.get());
  check(git_config_set_bool(cfg.get(), "core.bare", 0), "configure baseline repository");
  check(git_config_set_string(cfg.get(), "core.worktree", work.c_str()), "configure baseline repository");
  check(git_config_set_bool(cfg.get(), "core.filemode", a.filemode), "configure baseline repository");
  check(git_config_set_bool(cfg.get(), "core.symlinks", a.symlinks), "configure baseline repository");
  check(git_config_set_bool(cfg.get(), "core.ignorecase", a.ignorecase), "configure baseline repository");
}

// The copied files staged in meta.git's index and committed as the baseline.
git_oid commit_copied_files(const std::string& meta_dir, const std::vector<std::string>& files) {
  RepositoryPtr meta = open_repo(meta_dir);
  if (!git_repository_workdir(meta.get())) throw Error("sandbox: " + meta_dir + " did not take core.worktree");
  IndexPtr index = fresh_index(meta.get());
  // By path, not "add all": carried files may be ignored by the copied
  // .gitignore, and the baseline must hold exactly what the agent sees.
  for (const std::string& f : files) check(git_index_add_bypath(index.get(), f.c_str()), "stage " + f);
  check(git_index_write(index.get()), "write baseline index");
  git_oid tree_id;
  check(git_index_write_tree(&tree_id, index.get()), "write baseline tree");
  return commit_baseline(meta.get(), tree_id);
}

// work/.git borrows meta.git's objects instead of storing them twice; git
// never deletes objects from an alternate, so nothing the agent does there
// can lose the baseline. Its branch and its index are the baseline's.
void link_work_repo(const std::string& work, const std::string& meta_dir, const git_oid& commit_id) {
  const std::string work_git = work + "/.git";
  util::write_file_atomic(work_git + "/objects/info/alternates", meta_dir + "/objects\n");
  set_baseline_branch(work, commit_id);
  // The same index (same paths, same files, same stat data): the agent's
  // first `git status` finds a clean tree without hashing every file.
  std::error_code ec;
  fs::copy_file(meta_dir + "/index", work_git + "/index", fs::copy_options::overwrite_existing, ec);
  if (ec) throw Error("sandbox: cannot write " + work_git + "/index: " + ec.message());
}

}  // namespace

void Sandbox::create_copy(Sandbox& sb, const std::string& top, const std::string& base_rel,
                          const std::vector<std::string>& carry_globs, git_repository* real) {
  sb.kind_ = Kind::kCopy;
  Copier copier;
  copier.src_root = top;
  copier.dst_root = sb.work_;
  {
    IndexPtr index = fresh_index(real);
    take_files(copier, index.get(), carry_globs, base_rel, sb.files_, sb.skipped_);
  }
  const FileSystemAnswers answers = init_work_repo(sb.work_);
  init_meta_repo(sb.meta_, sb.work_, answers);
  const git_oid commit_id = commit_copied_files(sb.meta_, sb.files_);
  sb.baseline_ = oid_hex(commit_id);
  link_work_repo(sb.work_, sb.meta_, commit_id);
}

}  // namespace phoenix::sandbox
