// The overlay sandbox (Kind::kOverlay, sandbox.h): nothing is copied; a
// confined process sees the work tree through an overlay whose hide layer
// takes away what the copying sandbox would not copy, and read_patch()
// reads what the agent wrote in the upper layer.
#include "sandbox/sandbox.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <utility>

#include "gitx/libgit2.h"
#include "gitx/prefix.h"
#include "gitx/repo.h"
#include "sandbox/common.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/overlay.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::sandbox {

using gitx::lg2::check;
using namespace gitx::lg2;  // the owner types
using namespace detail;

namespace {

// ---------------------------------------------------------------------------
// Overlay plumbing.

// Overlay's mount options are a comma-separated list and lowerdir a
// colon-separated one: paths holding either (or a backslash) cannot be
// passed without escapes some kernels do not take.
std::string unmountable_path(const std::string& top, const std::string& dir) {
  for (const std::string* p : {&top, &dir})
    if (std::string why = util::unmountable_path(*p); !why.empty()) return why;
  return "";
}

std::string overlay_options(const std::string& hide, const std::string& lower, const std::string& upper,
                            const std::string& work) {
  return util::overlay_options(hide + ":" + lower, upper, work);
}

using util::is_opaque;
using util::is_whiteout;
using util::make_whiteout;

// The mode git records for what lstat found: link, executable or not.
uint32_t git_mode_of(const struct stat& st) {
  return S_ISLNK(st.st_mode)      ? GIT_FILEMODE_LINK
         : (st.st_mode & S_IXUSR) ? GIT_FILEMODE_BLOB_EXECUTABLE
                                  : GIT_FILEMODE_BLOB;
}

// ---------------------------------------------------------------------------
// Making one: the steps of Sandbox::create_overlay.

// The layers live outside the work tree (the bottom layer): overlay refuses
// layers nested in one another. Normally the sandbox folder holds them;
// when that lies inside the work tree, a folder of their own under $TMPDIR
// does: returned ("" otherwise) for the caller to remove.
std::string own_layers_folder(const std::string& dir, const std::string& top) {
  if (!util::starts_with(dir, top + "/")) return "";
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec) throw Error("sandbox: no temporary folder for the overlay's layers: " + ec.message());
  std::string tmpl = (tmp / "phoenix-layers-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw_errno("sandbox: cannot create a folder in " + tmp.string());
  return tmpl;
}

// meta.git, bare, borrowing the real repository's objects, with a copy of
// the real index (its cached trees make writing the baseline tree cheap).
// Returns the copied index file's stat data before the copy (for racily
// clean entries; zero when there is no index).
struct stat start_meta(const std::string& meta_dir, git_repository* real, const std::string& real_objects) {
  {
    RepositoryPtr made = init_repo(meta_dir, /*bare=*/true);
    util::write_file_atomic(meta_dir + "/objects/info/alternates", real_objects + "\n");
  }
  struct stat index_st {};
  git_index* raw = nullptr;
  check(git_repository_index(&raw, real), "open index");
  IndexPtr real_index(raw);
  const char* real_index_path = git_index_path(real_index.get());
  if (real_index_path && ::stat(real_index_path, &index_st) == 0) {
    std::error_code ec;
    fs::copy_file(real_index_path, meta_dir + "/index", fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error("sandbox: cannot copy the index to " + meta_dir + ": " + ec.message());
  }
  return index_st;
}

// Every folder holding one of `files` (sorted), "" (the top) included.
std::unordered_set<std::string> folders_holding(const std::vector<std::string>& files) {
  std::unordered_set<std::string> folders{""};
  std::string_view last_dir;
  for (const std::string& f : files) {
    const size_t end = f.rfind('/');
    if (end == std::string::npos) continue;
    const std::string_view dir(f.data(), end);
    if (dir == last_dir) continue;  // sorted: a folder's files are neighbours
    last_dir = dir;
    for (size_t slash = f.find('/'); slash != std::string::npos && slash <= end; slash = f.find('/', slash + 1))
      folders.insert(f.substr(0, slash));
  }
  return folders;
}

// The hide layer: a whiteout for every entry of the work tree that is not
// one of the files the agent sees (copier.stats) nor a folder holding one.
// Folders that hold none are hidden whole, without being read
// (node_modules, build/).
void write_hide_layer(const std::string& top, const std::string& hide, const std::vector<std::string>& files,
                      const Copier& copier, const std::string& base_rel) {
  const std::unordered_set<std::string> folders = folders_holding(files);
  std::error_code ec;
  std::vector<std::string> todo{""};
  while (!todo.empty()) {
    const std::string dir = std::move(todo.back());
    todo.pop_back();
    const std::string src = dir.empty() ? top : top + "/" + dir;
    DIR* d = ::opendir(src.c_str());
    if (!d) throw_errno("sandbox: cannot read " + src);
    bool hide_dir_made = dir.empty();
    while (struct dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      const std::string rel = dir.empty() ? name : dir + "/" + name;
      if (copier.stats.find(std::string_view(rel)) != copier.stats.end()) continue;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st;
        is_dir = ::lstat((src + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
      }
      if (is_dir && folders.count(rel) && !is_internal(rel) &&
          !(!base_rel.empty() && gitx::at_or_under_prefix(rel, base_rel))) {
        todo.push_back(rel);
        continue;
      }
      if (!hide_dir_made) {
        fs::create_directories(hide + "/" + dir, ec);
        if (ec) {
          ::closedir(d);
          throw Error("sandbox: cannot create " + hide + "/" + dir + ": " + ec.message());
        }
        hide_dir_made = true;
      }
      try {
        make_whiteout(hide + "/" + rel);
      } catch (...) {
        ::closedir(d);
        throw;
      }
    }
    ::closedir(d);
  }
}

// An index entry whose file the agent sees with the stat data the entry
// records (and not racily clean: not newer than the index file) is kept as
// it is (marked in copier.stats); the others are dropped from `idx`, as are
// conflicts.
void keep_unchanged_entries(git_index* idx, Copier& copier, const struct stat& index_st) {
  auto racy = [&](const git_index_entry* e) {
    return static_cast<time_t>(e->mtime.seconds) > index_st.st_mtim.tv_sec ||
           (static_cast<time_t>(e->mtime.seconds) == index_st.st_mtim.tv_sec &&
            static_cast<long>(e->mtime.nanoseconds) >= index_st.st_mtim.tv_nsec);
  };
  std::vector<std::string> drop;
  for (size_t i = 0, n = git_index_entrycount(idx); i < n; ++i) {
    const git_index_entry* e = git_index_get_byindex(idx, i);
    auto st = copier.stats.find(std::string_view(e->path));
    if (st == copier.stats.end()) {
      drop.emplace_back(e->path);
      continue;
    }
    const struct stat& fst = st->second.st;
    const bool same = git_index_entry_stage(e) == 0 && e->mode == git_mode_of(fst) &&
                      e->file_size == static_cast<uint32_t>(fst.st_size) &&
                      e->mtime.seconds == static_cast<int32_t>(fst.st_mtim.tv_sec) &&
                      e->mtime.nanoseconds == static_cast<uint32_t>(fst.st_mtim.tv_nsec) &&
                      (e->ino == 0 || e->ino == static_cast<uint32_t>(fst.st_ino)) &&
                      !(e->flags_extended & GIT_INDEX_ENTRY_INTENT_TO_ADD) && !racy(e);
    if (same) st->second.kept = true;
    else drop.emplace_back(e->path);
  }
  for (const std::string& path : drop) git_index_remove_bypath(idx, path.c_str());
  git_index_conflict_cleanup(idx);
}

// Hashes again and stages every file the agent sees whose entry was not
// kept (changed in the work tree, conflicted, carried), with its stat data.
void stage_changed_files(git_index* idx, git_repository* meta, const Copier& copier, const std::string& top) {
  // Every entry of stats is one of files_ (index order is restored by git_index_add).
  for (const auto& [f, seen] : copier.stats) {
    if (seen.kept) continue;
    const struct stat& st = seen.st;
    git_index_entry e{};
    e.ctime.seconds = static_cast<int32_t>(st.st_ctim.tv_sec);
    e.ctime.nanoseconds = static_cast<uint32_t>(st.st_ctim.tv_nsec);
    e.mtime.seconds = static_cast<int32_t>(st.st_mtim.tv_sec);
    e.mtime.nanoseconds = static_cast<uint32_t>(st.st_mtim.tv_nsec);
    e.dev = static_cast<uint32_t>(st.st_dev);
    e.ino = static_cast<uint32_t>(st.st_ino);
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.file_size = static_cast<uint32_t>(st.st_size);
    e.mode = git_mode_of(st);
    e.path = f.c_str();
    if (S_ISLNK(st.st_mode)) {
      const std::string target = read_link(fs::path(top) / f);
      check(git_blob_create_from_buffer(&e.id, meta, target.data(), target.size()), "hash " + f);
    } else {
      check(git_blob_create_from_disk(&e.id, meta, (top + "/" + f).c_str()), "hash " + f);
    }
    check(git_index_add(idx, &e), "stage " + f);
  }
}

// The agent's own repository, in the upper layer: the baseline commit on
// "main", the baseline index (stat data of the files it sees), objects
// borrowed from meta.git and the real repository.
void make_agent_repo(const std::string& git_dir, const std::string& meta_dir, const std::string& real_objects,
                     const git_oid& commit_id) {
  {
    RepositoryPtr agent = init_repo(git_dir, /*bare=*/true);
    ConfigPtr cfg = local_config(agent.get());
    check(git_config_set_bool(cfg.get(), "core.bare", 0), "configure sandbox");
    // Overlay reports its own device number: compare what survives it.
    check(git_config_set_string(cfg.get(), "core.checkStat", "minimal"), "configure sandbox");
    configure_agent_identity(cfg.get());
  }
  util::write_file_atomic(git_dir + "/objects/info/alternates", meta_dir + "/objects\n" + real_objects + "\n");
  set_baseline_branch(git_dir, commit_id);
  std::error_code ec;
  fs::copy_file(meta_dir + "/index", git_dir + "/index", fs::copy_options::overwrite_existing, ec);
  if (ec) throw Error("sandbox: cannot write " + git_dir + "/index: " + ec.message());
}

// ---------------------------------------------------------------------------
// Reading one back: the steps of Sandbox::read_overlay_patch.

// Stages into `idx` (the baseline index) what the agent left in the upper
// layer: whiteouts and opaque folders drop what they hide; files and links
// are hashed and staged unless unchanged, or new and ignored by the real
// repository's rules. `.git` and scratch files are not the agent's change.
void stage_upper_layer(git_index* idx, git_repository* meta, const std::string& upper, const std::string& top,
                       const std::vector<std::string>& scratch) {
  RepositoryPtr real;  // opened on the first new file: the ignore rules are the repository's
  auto drop = [&](const std::string& rel) {
    git_index_remove_directory(idx, rel.c_str(), 0);
    if (git_index_get_bypath(idx, rel.c_str(), 0)) check(git_index_remove(idx, rel.c_str(), 0), "drop " + rel);
  };
  std::vector<std::string> todo{""};
  while (!todo.empty()) {
    const std::string dir = std::move(todo.back());
    todo.pop_back();
    const std::string src = dir.empty() ? upper : upper + "/" + dir;
    std::vector<std::string> names;
    if (DIR* d = ::opendir(src.c_str())) {
      while (struct dirent* e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
      ::closedir(d);
    } else {
      throw_errno("sandbox: cannot read " + src);
    }
    for (const std::string& name : names) {
      const std::string rel = dir.empty() ? name : dir + "/" + name;
      if (name == ".git" || std::find(scratch.begin(), scratch.end(), rel) != scratch.end()) continue;
      const std::string path = upper + "/" + rel;
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0) continue;
      if (is_whiteout(st)) {
        drop(rel);
      } else if (S_ISDIR(st.st_mode)) {
        if (is_opaque(path)) drop(rel);
        else if (git_index_get_bypath(idx, rel.c_str(), 0)) check(git_index_remove(idx, rel.c_str(), 0), "drop " + rel);
        todo.push_back(rel);
      } else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
        const git_index_entry* old = git_index_get_bypath(idx, rel.c_str(), 0);
        if (!old) {
          if (!real) real = open_repo(top);
          int ignored = 0;
          check(git_ignore_path_is_ignored(&ignored, real.get(), rel.c_str()), "ignore rules for " + rel);
          if (ignored) continue;
        }
        git_index_entry e{};
        e.mode = git_mode_of(st);
        e.file_size = static_cast<uint32_t>(st.st_size);
        e.path = rel.c_str();
        if (S_ISLNK(st.st_mode)) {
          const std::string target = read_link(path);
          check(git_blob_create_from_buffer(&e.id, meta, target.data(), target.size()), "hash " + rel);
        } else {
          check(git_blob_create_from_disk(&e.id, meta, path.c_str()), "hash " + rel);
        }
        if (old && git_oid_equal(&old->id, &e.id) && old->mode == e.mode) continue;
        git_index_remove_directory(idx, rel.c_str(), 0);
        check(git_index_add(idx, &e), "stage " + rel);
      }
    }
  }
}

// The tree of `idx` committed on top of the baseline in meta.git (no ref
// moves); "" when it is the baseline's own tree.
std::string commit_result(git_index* idx, git_repository* meta, const std::string& baseline) {
  git_oid tree_id;
  check(git_index_write_tree_to(&tree_id, idx, meta), "write the sandbox's tree");
  git_oid base_id;
  check(git_oid_fromstr(&base_id, baseline.c_str()), "baseline id");
  git_commit* base_raw = nullptr;
  check(git_commit_lookup(&base_raw, meta, &base_id), "read baseline");
  CommitPtr base(base_raw);
  if (git_oid_equal(git_commit_tree_id(base.get()), &tree_id)) return "";
  const git_oid after = commit_tree(meta, tree_id, base.get(), nullptr, "phoenix: sandbox result\n",
                                    "read the sandbox's tree", "commit the sandbox's tree");
  return oid_hex(after);
}

}  // namespace

// ---------------------------------------------------------------------------

std::string overlay_unavailable_reason() { return util::overlay_unavailable_reason(); }

std::string Sandbox::why_no_overlay(const std::string& top, const std::string& dir) {
  std::string why = overlay_unavailable_reason();
  if (why.empty()) why = unmountable_path(top, dir);
  if (why.empty()) {
    std::error_code tec;
    const std::string tmp = fs::weakly_canonical(fs::temp_directory_path(tec), tec).string();
    if (util::starts_with(tmp + "/", top + "/")) why = "the temporary folder " + tmp + " is inside the repository";
    else why = unmountable_path(tmp, tmp);
  }
  return why;
}

void Sandbox::create_overlay(Sandbox& sb, const std::string& top, const std::string& base_rel,
                             const std::vector<std::string>& carry_globs, git_repository* real) {
  sb.kind_ = Kind::kOverlay;
  sb.layers_ = own_layers_folder(sb.dir_, top);
  const std::string layers = sb.layers_.empty() ? sb.dir_ : sb.layers_;
  sb.upper_ = layers + "/upper";
  sb.hide_ = layers + "/hide";
  sb.ovl_work_ = layers + "/ovl";
  for (const std::string* d : {&sb.upper_, &sb.hide_, &sb.ovl_work_}) {
    std::error_code ec;
    fs::create_directory(*d, ec);
    if (ec) throw Error("sandbox: cannot create " + *d + ": " + ec.message());
  }

  // The baseline starts as a copy of the real index; objects come from the
  // real repository.
  const std::string real_objects = std::string(git_repository_commondir(real)) + "objects";
  const struct stat index_st = start_meta(sb.meta_, real, real_objects);
  RepositoryPtr meta = open_repo(sb.meta_);
  git_index* idx_raw = nullptr;
  check(git_index_open(&idx_raw, (sb.meta_ + "/index").c_str()), "read baseline index");
  IndexPtr idx(idx_raw);

  // What the agent sees: decided exactly as the copying sandbox decides
  // what it copies, without writing anything.
  Copier copier;
  copier.dry = true;
  copier.src_root = top;
  copier.dst_root = sb.work_;
  copier.stats.reserve(git_index_entrycount(idx.get()));
  take_files(copier, idx.get(), carry_globs, base_rel, sb.files_, sb.skipped_);
  write_hide_layer(top, sb.hide_, sb.files_, copier, base_rel);

  // The baseline: the entries that still describe what the agent sees,
  // the few others hashed again.
  keep_unchanged_entries(idx.get(), copier, index_st);
  stage_changed_files(idx.get(), meta.get(), copier, top);
  git_oid tree_id;
  check(git_index_write_tree_to(&tree_id, idx.get(), meta.get()), "write baseline tree");
  // After the tree: the index keeps the trees just made, for read_patch().
  check(git_index_write(idx.get()), "write baseline index");
  const git_oid commit_id = commit_baseline(meta.get(), tree_id);
  sb.baseline_ = oid_hex(commit_id);

  make_agent_repo(sb.upper_ + "/.git", sb.meta_, real_objects, commit_id);
}

void Sandbox::drop_overlay_attempt() {
  std::error_code rec;
  if (!layers_.empty()) {
    make_writable(layers_);
    fs::remove_all(layers_, rec);
    layers_.clear();
  }
  make_writable(meta_);
  fs::remove_all(meta_, rec);
  files_.clear();
  skipped_.clear();
  upper_.clear();
  hide_.clear();
  ovl_work_.clear();
}

void Sandbox::confine(util::ProcessOptions& options) const {
  if (options.cwd.empty()) options.cwd = work_;
  if (kind_ != Kind::kOverlay) return;
  util::ChildNamespace ns;
  ns.mounts.push_back({"overlay", work_, "overlay", overlay_options(hide_, top_, upper_, ovl_work_), false});
  // The real work tree, read-only from inside (the overlay mounted below
  // it stays writable: it is a mount of its own).
  ns.mounts.push_back({top_, top_, "", "", true});
  options.mount_namespace = std::move(ns);
}

std::string Sandbox::read_overlay_patch() const {
  RepositoryPtr meta = open_repo(meta_);
  git_index* raw = nullptr;
  // A private copy of the baseline index, never written back.
  check(git_index_open(&raw, (meta_ + "/index").c_str()), "read baseline index");
  IndexPtr idx(raw);
  stage_upper_layer(idx.get(), meta.get(), upper_, top_, scratch_);
  const std::string after = commit_result(idx.get(), meta.get(), baseline_);
  if (after.empty()) return "";
  return gitx::Repo::open(meta_).diff_patch(baseline_, after);
}

}  // namespace phoenix::sandbox
