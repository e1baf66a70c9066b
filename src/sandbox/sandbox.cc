#include "sandbox/sandbox.h"

#include "gitx/libgit2.h"

#include <git2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <system_error>
#include <utility>

#include "gitx/repo.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/glob.h"
#include "util/hash.h"

namespace fs = std::filesystem;

namespace phoenix::sandbox {
namespace {

// ---------------------------------------------------------------------------
// libgit2 plumbing (see the header for why this file talks to libgit2).

using gitx::lg2::check;
using gitx::lg2::Owned;
void ensure_libgit2() { gitx::lg2::ensure_init(); }

using RepoPtr = Owned<git_repository, git_repository_free>;
using IndexPtr = Owned<git_index, git_index_free>;
using ConfigPtr = Owned<git_config, git_config_free>;
using TreePtr = Owned<git_tree, git_tree_free>;
using SignaturePtr = Owned<git_signature, git_signature_free>;
using ReferencePtr = Owned<git_reference, git_reference_free>;

RepoPtr open_repo(const std::string& path) {
  ensure_libgit2();
  git_repository* r = nullptr;
  check(git_repository_open_ext(&r, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr),
        "open repository at " + path);
  return RepoPtr(r);
}

RepoPtr init_repo(const std::string& path, bool bare) {
  ensure_libgit2();
  git_repository_init_options o;
  check(git_repository_init_options_init(&o, GIT_REPOSITORY_INIT_OPTIONS_VERSION), "init options");
  o.flags = GIT_REPOSITORY_INIT_MKPATH | (bare ? GIT_REPOSITORY_INIT_BARE : 0);
  o.initial_head = "main";
  git_repository* r = nullptr;
  check(git_repository_init_ext(&r, path.c_str(), &o), "init repository at " + path);
  return RepoPtr(r);
}

IndexPtr fresh_index(git_repository* repo) {
  git_index* raw = nullptr;
  check(git_repository_index(&raw, repo), "open index");
  IndexPtr index(raw);
  check(git_index_read(index.get(), /*force=*/1), "read index");
  return index;
}

// The repository's own config file (not global or system ones).
ConfigPtr local_config(git_repository* repo) {
  git_config* all = nullptr;
  check(git_repository_config(&all, repo), "read config");
  ConfigPtr owned(all);
  git_config* local = nullptr;
  check(git_config_open_level(&local, owned.get(), GIT_CONFIG_LEVEL_LOCAL), "open local config");
  return ConfigPtr(local);
}

// An effective boolean setting, `fallback` when unset.
bool config_bool(git_repository* repo, const char* key, bool fallback) {
  git_config* snap = nullptr;
  check(git_repository_config_snapshot(&snap, repo), "read config");
  ConfigPtr owned(snap);
  int value = 0;
  int rc = git_config_get_bool(&value, owned.get(), key);
  if (rc == GIT_ENOTFOUND) {
    git_error_clear();
    return fallback;
  }
  check(rc, std::string("read ") + key);
  return value != 0;
}

std::string oid_hex(const git_oid& oid) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  return hex;
}

// ---------------------------------------------------------------------------
// Paths.

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Same meaning as gitx::Repo::is_clean's prefixes.
bool under_prefix(std::string_view path, std::string_view prefix) {
  if (prefix.empty()) return false;
  if (prefix.back() == '/') return starts_with(path, prefix) || path == prefix.substr(0, prefix.size() - 1);
  return path == prefix || (starts_with(path, prefix) && path.size() > prefix.size() && path[prefix.size()] == '/');
}

bool under_any(std::string_view path, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) { return under_prefix(path, p); });
}

std::vector<std::string> components(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > start) out.emplace_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

bool has_dotgit_component(std::string_view rel) {
  for (const std::string& c : components(rel))
    if (c == ".git") return true;
  return false;
}

// Paths no sandbox ever holds, whatever the index or the carry globs say.
bool is_internal(std::string_view rel) {
  return has_dotgit_component(rel) || under_prefix(rel, gitx::kStateDir);
}

std::string read_link(const fs::path& p) {
  std::error_code ec;
  fs::path t = fs::read_symlink(p, ec);
  return ec ? std::string() : t.string();
}

// Whether following the symlink at `rel` stays inside `top`, resolving every
// symlink met on the way as the kernel would. A purely textual check is not
// enough: "d/../x" leaves the tree when d is itself a link. A component that
// does not exist ends the walk: nothing can be reached beyond it.
bool resolves_inside(const fs::path& top, const std::string& rel) {
  std::vector<std::string> resolved;
  std::deque<std::string> todo;
  for (auto& c : components(rel)) todo.push_back(std::move(c));
  int links = 0;
  while (!todo.empty()) {
    std::string c = std::move(todo.front());
    todo.pop_front();
    if (c == ".") continue;
    if (c == "..") {
      if (resolved.empty()) return false;
      resolved.pop_back();
      continue;
    }
    fs::path here = top;
    for (const auto& r : resolved) here /= r;
    here /= c;
    struct stat st;
    if (::lstat(here.c_str(), &st) != 0) return true;
    if (S_ISLNK(st.st_mode)) {
      if (++links > 40) return false;  // ELOOP for the kernel too
      std::string target = read_link(here);
      if (target.empty() || target[0] == '/') return false;
      std::vector<std::string> tc = components(target);
      todo.insert(todo.begin(), tc.begin(), tc.end());
      continue;
    }
    resolved.push_back(std::move(c));
  }
  return true;
}

// ---------------------------------------------------------------------------
// Copying.

struct Copier {
  fs::path src_root;
  fs::path dst_root;
  std::set<std::string> copied;
  std::vector<std::string> links;  // symlinks created, checked once all is copied
  std::set<std::string> link_set;
  std::map<std::string, bool> src_dir_is_link;  // lstat cache for parent folders
  std::vector<Skipped> skipped;

  // Whether a parent folder of `rel` is a symlink — in the user's tree (the
  // index may still list files below a folder since replaced by a link, and
  // copying them would read through it) or among the links made here.
  bool beyond_symlink(const std::string& rel) {
    for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1)) {
      const std::string parent = rel.substr(0, slash);
      if (link_set.count(parent)) return true;
      auto [it, fresh] = src_dir_is_link.try_emplace(parent, false);
      if (fresh) {
        struct stat st;
        it->second = ::lstat((src_root / parent).c_str(), &st) == 0 && S_ISLNK(st.st_mode);
      }
      if (it->second) return true;
    }
    return false;
  }

  // Copies one tracked or carried path; records why when it does not.
  void copy(const std::string& rel) {
    if (copied.count(rel)) return;
    if (is_secret(rel)) return skip(rel, "secret");
    if (beyond_symlink(rel)) return skip(rel, "inside a symlinked folder");
    const fs::path src = src_root / rel;
    const fs::path dst = dst_root / rel;
    struct stat st;
    if (::lstat(src.c_str(), &st) != 0) return skip(rel, "missing from the work tree");
    std::error_code ec;
    if (S_ISREG(st.st_mode)) {
      fs::create_directories(dst.parent_path(), ec);
      if (!ec) fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec);
      if (ec) throw Error("sandbox: cannot copy " + src.string() + ": " + ec.message());
      // What git records: executable or not. A read-only file in the user's
      // tree stays editable for the agent.
      if (::chmod(dst.c_str(), (st.st_mode & S_IXUSR) ? 0755 : 0644) != 0) throw_errno("sandbox: chmod " + dst.string());
    } else if (S_ISLNK(st.st_mode)) {
      const std::string target = read_link(src);
      // Absolute targets are skipped even when they name a path inside the
      // repository: in the copy they would still point at the real one.
      if (target.empty() || target[0] == '/') return skip(rel, "symlink outside the repository");
      fs::create_directories(dst.parent_path(), ec);
      if (!ec) fs::create_symlink(target, dst, ec);
      if (ec) throw Error("sandbox: cannot create symlink " + dst.string() + ": " + ec.message());
      links.push_back(rel);
      link_set.insert(rel);
    } else {
      return skip(rel, "not a regular file");
    }
    copied.insert(rel);
  }

  void skip(const std::string& rel, const char* why) { skipped.push_back({rel, why}); }

  // Removes the copied symlinks that lead outside the copy (see
  // resolves_inside). Removing one can only make others dangle, never
  // escape, so one pass is enough.
  void drop_escaping_links() {
    for (const std::string& rel : links) {
      if (resolves_inside(dst_root, rel)) continue;
      std::error_code ec;
      fs::remove(dst_root / rel, ec);
      copied.erase(rel);
      skip(rel, "symlink outside the repository");
    }
  }
};

// Where to look for carried files: the literal folder before the first
// wildcard of each glob ("" = the whole tree, for basename globs like
// "*.local"), so a carry list does not walk node_modules for nothing.
std::vector<std::string> carry_roots(const std::vector<std::string>& globs) {
  std::vector<std::string> roots;
  for (std::string g : globs) {
    if (starts_with(g, "./")) g.erase(0, 2);
    while (!g.empty() && g[0] == '/') g.erase(0, 1);
    if (g.empty()) continue;
    std::string body = g.back() == '/' ? g.substr(0, g.size() - 1) : g;
    if (body.find('/') == std::string::npos && g.back() != '/') return {""};
    std::string root;
    for (const std::string& c : components(body)) {
      if (c.find_first_of("*?[") != std::string::npos) break;
      root += (root.empty() ? "" : "/") + c;
    }
    if (root.empty()) return {""};
    roots.push_back(root);
  }
  std::sort(roots.begin(), roots.end());
  std::vector<std::string> out;
  for (const std::string& r : roots)
    if (out.empty() || !under_prefix(r, out.back())) out.push_back(r);
  return out;
}

void carry_files(Copier& copier, const std::vector<std::string>& globs, const std::string& skip_dir_rel) {
  if (globs.empty()) return;
  auto consider = [&](const std::string& rel) {
    if (rel.empty() || is_internal(rel) || (!skip_dir_rel.empty() && under_prefix(rel, skip_dir_rel))) return;
    if (util::glob_match_any(globs, rel)) copier.copy(rel);
  };
  const std::string src_prefix = copier.src_root.generic_string() + "/";
  for (const std::string& root : carry_roots(globs)) {
    const fs::path start = root.empty() ? copier.src_root : copier.src_root / root;
    std::error_code ec;
    fs::file_status st = fs::symlink_status(start, ec);
    if (ec || !fs::exists(st)) continue;
    if (!fs::is_directory(st)) {
      consider(root);
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(start, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      // Below `start`, itself below src_root: the relative path is a suffix
      // (fs::relative would resolve every entry's path again).
      const std::string rel = it->path().generic_string().substr(src_prefix.size());
      const bool is_dir = !it->is_symlink() && it->is_directory();
      if (is_dir) {
        if (is_internal(rel) || (!skip_dir_rel.empty() && under_prefix(rel, skip_dir_rel)))
          it.disable_recursion_pending();
        continue;
      }
      consider(rel);
    }
  }
}

// Makes everything below `dir` writable (folders traversable) so it can be
// removed; symlinks are not followed.
void make_writable(const fs::path& dir) {
  std::error_code ec;
  ::chmod(dir.c_str(), 0700);
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    if (it->is_symlink(e2)) continue;
    if (it->is_directory(e2)) ::chmod(it->path().c_str(), 0700);
    else ::chmod(it->path().c_str(), 0600);
  }
}

// A short, stable digest of what is at `path` now.
std::string content_digest(const fs::path& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return "absent";
  if (S_ISLNK(st.st_mode)) return "link " + read_link(path);
  if (S_ISDIR(st.st_mode)) return "folder";
  if (!S_ISREG(st.st_mode)) return "special";
  try {
    return util::sha256_file(path.string()) + ((st.st_mode & S_IXUSR) ? " x" : "");
  } catch (const Error&) {
    return "unreadable";
  }
}

std::string short_sha(const std::string& v) { return v.size() > 7 ? v.substr(0, 7) : v; }

}  // namespace

// ---------------------------------------------------------------------------

const std::vector<std::string>& secret_globs() {
  static const std::vector<std::string> globs{
      ".env",         ".env.*",                 // dotenv files (API keys, database URLs)
      "*.pem",        "*.key",  "*.p12",         // private keys and certificates
      "id_rsa*",      "id_ed25519*",            // ssh keys
      ".npmrc",       ".pypirc", ".netrc",      // registry and login credentials
      "credentials*.json",                      // cloud service-account files
  };
  return globs;
}

bool is_secret(std::string_view rel_path) { return util::glob_match_any(secret_globs(), rel_path); }

Sandbox Sandbox::create(const std::string& repo_root, const std::string& base_dir,
                        const std::vector<std::string>& carry_globs) {
  RepoPtr real = open_repo(repo_root);
  if (git_repository_is_bare(real.get())) throw Error("sandbox: " + repo_root + " is a bare repository");
  std::string top = git_repository_workdir(real.get());
  while (top.size() > 1 && top.back() == '/') top.pop_back();

  std::error_code ec;
  fs::create_directories(base_dir, ec);
  if (ec) throw Error("sandbox: cannot create " + base_dir + ": " + ec.message());
  const fs::path base = fs::canonical(base_dir, ec);
  if (ec) throw Error("sandbox: cannot resolve " + base_dir + ": " + ec.message());
  std::string tmpl = (base / "sandbox-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw_errno("sandbox: cannot create a folder in " + base.string());

  // From here on the destructor cleans up whatever a failure leaves.
  Sandbox sb;
  sb.dir_ = tmpl;
  sb.work_ = sb.dir_ + "/work";
  sb.meta_ = sb.dir_ + "/meta.git";
  fs::create_directory(sb.work_, ec);
  if (ec) throw Error("sandbox: cannot create " + sb.work_ + ": " + ec.message());

  Copier copier;
  copier.src_root = top;
  copier.dst_root = sb.work_;

  // Tracked paths, from the index (conflicted paths once; gitlinks are other
  // repositories' commits, not files we can copy).
  {
    IndexPtr index = fresh_index(real.get());
    std::set<std::string> seen;
    for (size_t i = 0, n = git_index_entrycount(index.get()); i < n; ++i) {
      const git_index_entry* e = git_index_get_byindex(index.get(), i);
      std::string path = e->path;
      if (!seen.insert(path).second || is_internal(path)) continue;
      if (e->mode == GIT_FILEMODE_COMMIT) {
        copier.skip(path, "submodule");
        continue;
      }
      copier.copy(path);
    }
  }
  // Carried files. The sandboxes' own folder is skipped when it lies inside
  // the repository somewhere other than .phoenix/.
  std::string base_rel;
  if (starts_with(base.string(), top + "/")) base_rel = fs::relative(base, top).generic_string() + "/";
  carry_files(copier, carry_globs, base_rel);
  copier.drop_escaping_links();

  sb.files_.assign(copier.copied.begin(), copier.copied.end());
  sb.skipped_ = std::move(copier.skipped);
  std::sort(sb.skipped_.begin(), sb.skipped_.end(),
            [](const Skipped& a, const Skipped& b) { return a.path < b.path; });

  // work/.git first: its init probes the file system (file modes, symlinks,
  // case), and meta.git, made bare, takes the same answers.
  bool filemode = true, symlinks = true, ignorecase = false;
  {
    RepoPtr work = init_repo(sb.work_, /*bare=*/false);
    filemode = config_bool(work.get(), "core.filemode", true);
    symlinks = config_bool(work.get(), "core.symlinks", true);
    ignorecase = config_bool(work.get(), "core.ignorecase", false);
    ConfigPtr cfg = local_config(work.get());
    // An agent that commits must not fail for want of an identity or a
    // signing key, nor sign with the user's.
    check(git_config_set_string(cfg.get(), "user.name", "Phoenix sandbox"), "configure sandbox");
    check(git_config_set_string(cfg.get(), "user.email", "sandbox@phoenix.invalid"), "configure sandbox");
    check(git_config_set_bool(cfg.get(), "commit.gpgsign", 0), "configure sandbox");
    check(git_config_set_bool(cfg.get(), "tag.gpgsign", 0), "configure sandbox");
  }
  {
    RepoPtr meta = init_repo(sb.meta_, /*bare=*/true);
    ConfigPtr cfg = local_config(meta.get());
    check(git_config_set_bool(cfg.get(), "core.bare", 0), "configure baseline repository");
    check(git_config_set_string(cfg.get(), "core.worktree", sb.work_.c_str()), "configure baseline repository");
    check(git_config_set_bool(cfg.get(), "core.filemode", filemode), "configure baseline repository");
    check(git_config_set_bool(cfg.get(), "core.symlinks", symlinks), "configure baseline repository");
    check(git_config_set_bool(cfg.get(), "core.ignorecase", ignorecase), "configure baseline repository");
  }
  git_oid commit_id;
  {
    RepoPtr meta = open_repo(sb.meta_);
    if (!git_repository_workdir(meta.get())) throw Error("sandbox: " + sb.meta_ + " did not take core.worktree");
    IndexPtr index = fresh_index(meta.get());
    // By path, not "add all": carried files may be ignored by the copied
    // .gitignore, and the baseline must hold exactly what the agent sees.
    for (const std::string& f : sb.files_) check(git_index_add_bypath(index.get(), f.c_str()), "stage " + f);
    check(git_index_write(index.get()), "write baseline index");
    git_oid tree_id;
    check(git_index_write_tree(&tree_id, index.get()), "write baseline tree");
    git_tree* tree_raw = nullptr;
    check(git_tree_lookup(&tree_raw, meta.get(), &tree_id), "read baseline tree");
    TreePtr tree(tree_raw);
    git_signature* sig_raw = nullptr;
    check(git_signature_now(&sig_raw, "Phoenix", "phoenix@localhost"), "signature");
    SignaturePtr sig(sig_raw);
    check(git_commit_create(&commit_id, meta.get(), "HEAD", sig.get(), sig.get(), nullptr,
                            "phoenix: sandbox baseline\n", tree.get(), 0, nullptr),
          "commit baseline");
  }
  sb.baseline_ = oid_hex(commit_id);

  // work/.git borrows meta.git's objects instead of storing them twice; git
  // never deletes objects from an alternate, so nothing the agent does there
  // can lose the baseline.
  const std::string work_git = sb.work_ + "/.git";
  util::write_file_atomic(work_git + "/objects/info/alternates", sb.meta_ + "/objects\n");
  {
    RepoPtr work = open_repo(sb.work_);
    git_reference* ref = nullptr;
    check(git_reference_create(&ref, work.get(), "refs/heads/main", &commit_id, /*force=*/1,
                               "phoenix: sandbox baseline"),
          "set sandbox branch");
    git_reference_free(ref);
  }
  // The same index (same paths, same files, same stat data): the agent's
  // first `git status` finds a clean tree without hashing every file.
  fs::copy_file(sb.meta_ + "/index", work_git + "/index", fs::copy_options::overwrite_existing, ec);
  if (ec) throw Error("sandbox: cannot write " + work_git + "/index: " + ec.message());
  return sb;
}

Sandbox::Sandbox(Sandbox&& other) noexcept
    : dir_(std::move(other.dir_)),
      work_(std::move(other.work_)),
      meta_(std::move(other.meta_)),
      baseline_(std::move(other.baseline_)),
      files_(std::move(other.files_)),
      skipped_(std::move(other.skipped_)) {
  other.dir_.clear();
}

Sandbox& Sandbox::operator=(Sandbox&& other) noexcept {
  if (this != &other) {
    remove();
    dir_ = std::move(other.dir_);
    work_ = std::move(other.work_);
    meta_ = std::move(other.meta_);
    baseline_ = std::move(other.baseline_);
    files_ = std::move(other.files_);
    skipped_ = std::move(other.skipped_);
    other.dir_.clear();
  }
  return *this;
}

Sandbox::~Sandbox() { remove(); }

void Sandbox::remove() noexcept {
  if (dir_.empty()) return;
  try {
    make_writable(dir_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  } catch (...) {
    // A destructor must not throw; a leftover folder under .phoenix/sandboxes
    // is harmless and the next `phoenix recover` can remove it.
  }
  dir_.clear();
}

std::string Sandbox::write_scratch_file(const std::string& name, std::string_view content) {
  std::string file;
  struct stat st;
  for (int n = 1;; ++n) {
    file = ".phoenix-" + (n == 1 ? std::string() : std::to_string(n) + "-") + name;
    if (::lstat((work_ + "/" + file).c_str(), &st) != 0) break;
  }
  // Excluded first, so no reader of the patch can ever see it half made.
  const std::string exclude = meta_ + "/info/exclude";
  std::string rules = util::path_exists(exclude) ? util::read_file(exclude) : std::string();
  if (!rules.empty() && rules.back() != '\n') rules += '\n';
  rules += "/" + file + "\n";
  std::error_code ec;
  fs::create_directories(meta_ + "/info", ec);
  util::write_file_atomic(exclude, rules);
  const std::string path = work_ + "/" + file;
  util::write_file_atomic(path, content, 0644);
  return path;
}

std::string Sandbox::read_patch() const {
  return gitx::Repo::open(meta_).diff_workdir_patch(baseline_);
}

// ---------------------------------------------------------------------------
// Fingerprints.

RepoFingerprint fingerprint_repo(const std::string& repo_root, const std::vector<std::string>& ignore_untracked_prefixes) {
  gitx::Repo repo = gitx::Repo::open(repo_root);
  const std::string top = repo.workdir();
  RepoFingerprint fp;
  auto& items = fp.items;

  const std::string head = repo.head_sha();
  const std::string branch = repo.head_branch();
  items["HEAD"] = (head.empty() ? std::string("unborn") : head) + " " + (branch.empty() ? "(detached)" : "(" + branch + ")");
  for (const gitx::RefEntry& r : repo.list_refs("")) items["ref " + r.name] = r.sha;

  {
    RepoPtr raw = open_repo(repo_root);
    IndexPtr index = fresh_index(raw.get());
    for (size_t i = 0, n = git_index_entrycount(index.get()); i < n; ++i) {
      const git_index_entry* e = git_index_get_byindex(index.get(), i);
      int stage = git_index_entry_stage(e);
      std::string key = "index " + std::string(e->path) + (stage ? " (stage " + std::to_string(stage) + ")" : "");
      char mode[16];
      std::snprintf(mode, sizeof mode, "%06o", e->mode);
      items[key] = std::string(mode) + " " + oid_hex(e->id);
    }
  }

  std::vector<std::string> skip = ignore_untracked_prefixes;
  skip.emplace_back(gitx::kStateDir);
  for (const gitx::StatusEntry& e : repo.status()) {
    if (e.code == '?' && under_any(e.path, skip)) continue;
    std::string v = std::string(1, e.code) + " " + content_digest(fs::path(top) / e.path);
    if (!e.old_path.empty()) v += " from " + e.old_path;
    items["file " + e.path] = v;
  }

  const fs::path config = fs::path(repo.common_dir()) / "config";
  items["config"] = content_digest(config);
  std::error_code ec;
  for (auto it = fs::directory_iterator(repo.hooks_dir(), ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code e2;
    if (it->is_directory(e2) && !it->is_symlink(e2)) continue;
    items["hook " + it->path().filename().string()] = content_digest(it->path());
  }
  return fp;
}

std::vector<std::string> fingerprint_changes(const RepoFingerprint& before, const RepoFingerprint& after) {
  std::set<std::string> keys;
  for (const auto& [k, v] : before.items) keys.insert(k);
  for (const auto& [k, v] : after.items) keys.insert(k);
  std::vector<std::string> out;
  for (const std::string& key : keys) {
    auto b = before.items.find(key);
    auto a = after.items.find(key);
    const bool had = b != before.items.end(), has = a != after.items.end();
    if (had && has && b->second == a->second) continue;
    const size_t space = key.find(' ');
    const std::string kind = key.substr(0, space);
    const std::string name = space == std::string::npos ? std::string() : key.substr(space + 1);
    if (kind == "HEAD") {
      auto show = [](const std::string& v) {
        size_t sp = v.find(' ');
        return short_sha(v.substr(0, sp)) + (sp == std::string::npos ? "" : v.substr(sp));
      };
      out.push_back("HEAD moved from " + (had ? show(b->second) : "?") + " to " + (has ? show(a->second) : "?"));
    } else if (kind == "ref") {
      if (!had) out.push_back("ref " + name + " created at " + short_sha(a->second));
      else if (!has) out.push_back("ref " + name + " deleted");
      else out.push_back("ref " + name + " moved from " + short_sha(b->second) + " to " + short_sha(a->second));
    } else if (kind == "index") {
      out.push_back("index entry of " + name + (!had ? " added" : !has ? " removed" : " changed"));
    } else if (kind == "file") {
      if (!has) {
        out.push_back(name + " changed back to its committed content");
      } else {
        const char code = a->second.empty() ? 'M' : a->second[0];
        const char* what = code == '?' ? " created" : code == 'D' ? " deleted" : " modified";
        out.push_back(name + (had ? " changed again" : what) + " in the work tree");
      }
    } else if (kind == "config") {
      out.push_back("the repository's config file changed");
    } else if (kind == "hook") {
      out.push_back("hook " + name + (!had ? " added" : !has ? " removed" : " changed"));
    } else {
      out.push_back(key + " changed");
    }
  }
  return out;
}

}  // namespace phoenix::sandbox
