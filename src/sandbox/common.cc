#include "sandbox/common.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <system_error>
#include <utility>

#include "gitx/prefix.h"
#include "layout/layout.h"
#include "util/error.h"
#include "util/overlay.h"
#include "util/glob.h"
#include "util/text.h"

namespace phoenix::sandbox {

using gitx::lg2::check;
using namespace gitx::lg2;  // the owner types

// ---------------------------------------------------------------------------
// Secrets.

const std::vector<std::string>& secret_globs() {
  static const std::vector<std::string> globs{
      ".env",
      ".env.*",  // dotenv files (API keys, database URLs)
      "*.pem",
      "*.key",
      "*.p12",  // private keys and certificates
      "id_rsa*",
      "id_ed25519*",  // ssh keys
      ".npmrc",
      ".pypirc",
      ".netrc",             // registry and login credentials
      "credentials*.json",  // cloud service-account files
  };
  return globs;
}

bool is_secret(std::string_view rel_path) {
  // Every secret glob matches a basename that starts with '.', 'i' or 'c',
  // or ends in ".pem", ".key" or ".p12": others need no glob at all (this
  // runs once per tracked file).
  const size_t slash = rel_path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? rel_path : rel_path.substr(slash + 1);
  auto ends = [&](std::string_view suffix) {
    return base.size() >= suffix.size() && base.substr(base.size() - suffix.size()) == suffix;
  };
  if (base.empty() ||
      (base[0] != '.' && base[0] != 'i' && base[0] != 'c' && !ends(".pem") && !ends(".key") && !ends(".p12")))
    return false;
  return util::glob_match_any(secret_globs(), rel_path);
}

namespace detail {

// ---------------------------------------------------------------------------
// libgit2.

RepositoryPtr open_repo(const std::string& path) {
  ensure_init();
  git_repository* r = nullptr;
  check(git_repository_open_ext(&r, path.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr),
        "open repository at " + path);
  return RepositoryPtr(r);
}

RepositoryPtr init_repo(const std::string& path, bool bare) {
  ensure_init();
  git_repository_init_options o;
  check(git_repository_init_options_init(&o, GIT_REPOSITORY_INIT_OPTIONS_VERSION), "init options");
  o.flags = GIT_REPOSITORY_INIT_MKPATH | (bare ? GIT_REPOSITORY_INIT_BARE : 0);
  o.initial_head = "main";
  git_repository* r = nullptr;
  check(git_repository_init_ext(&r, path.c_str(), &o), "init repository at " + path);
  return RepositoryPtr(r);
}

ConfigPtr local_config(git_repository* repo) {
  git_config* all = nullptr;
  check(git_repository_config(&all, repo), "read config");
  ConfigPtr owned(all);
  git_config* local = nullptr;
  check(git_config_open_level(&local, owned.get(), GIT_CONFIG_LEVEL_LOCAL), "open local config");
  return ConfigPtr(local);
}

git_oid commit_tree(git_repository* meta, const git_oid& tree_id, const git_commit* parent, const char* update_ref,
                    const char* message, const char* read_tree_what, const char* commit_what) {
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, meta, &tree_id), read_tree_what);
  TreePtr tree(tree_raw);
  SignaturePtr sig = signature_now();
  git_oid commit_id;
  const git_commit* parents[] = {parent};
  check(git_commit_create(&commit_id, meta, update_ref, sig.get(), sig.get(), nullptr, message, tree.get(),
                          parent ? 1 : 0, parent ? parents : nullptr),
        commit_what);
  return commit_id;
}

git_oid commit_baseline(git_repository* meta, const git_oid& tree_id) {
  return commit_tree(meta, tree_id, nullptr, "HEAD", "phoenix: sandbox baseline\n", "read baseline tree",
                     "commit baseline");
}

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

void configure_agent_identity(git_config* cfg) {
  check(git_config_set_string(cfg, "user.name", "Phoenix sandbox"), "configure sandbox");
  check(git_config_set_string(cfg, "user.email", "sandbox@phoenix.invalid"), "configure sandbox");
  check(git_config_set_bool(cfg, "commit.gpgsign", 0), "configure sandbox");
  check(git_config_set_bool(cfg, "tag.gpgsign", 0), "configure sandbox");
}

void set_baseline_branch(const std::string& git_dir, const git_oid& commit_id) {
  RepositoryPtr repo = open_repo(git_dir);
  git_reference* ref = nullptr;
  check(git_reference_create(&ref, repo.get(), "refs/heads/main", &commit_id, /*force=*/1, "phoenix: sandbox baseline"),
        "set sandbox branch");
  git_reference_free(ref);
}

// ---------------------------------------------------------------------------
// Paths.

namespace {

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
  for (size_t at = rel.find(".git"); at != std::string_view::npos; at = rel.find(".git", at + 1))
    if ((at == 0 || rel[at - 1] == '/') && (at + 4 == rel.size() || rel[at + 4] == '/')) return true;
  return false;
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

}  // namespace

const std::string& state_dir_prefix() {
  static const std::string prefix = layout::kStateDirPrefix;
  return prefix;
}

bool is_internal(std::string_view rel) {
  return has_dotgit_component(rel) || gitx::at_or_under_prefix(rel, state_dir_prefix());
}

std::string read_link(const fs::path& p) {
  std::error_code ec;
  fs::path t = fs::read_symlink(p, ec);
  return ec ? std::string() : t.string();
}

// Makes everything below `dir` writable (folders traversable) so it can be
// removed; symlinks are not followed.
void make_writable(const fs::path& dir) { util::make_tree_writable(dir.string()); }

// ---------------------------------------------------------------------------
// What a sandbox holds.

Copier::~Copier() {
  if (dir_fd >= 0) ::close(dir_fd);
}

int Copier::lstat_rel(const std::string& rel, struct stat* st) {
  const size_t slash = rel.rfind('/');
  const std::string_view dir = slash == std::string::npos ? std::string_view() : std::string_view(rel).substr(0, slash);
  if (dir_fd < 0 || dir != fd_dir) {
    if (dir_fd >= 0) ::close(dir_fd);
    fd_dir = dir;
    const std::string path = dir.empty() ? src_root.native() : src_root.native() + "/" + fd_dir;
    dir_fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return -1;
  }
  return ::fstatat(dir_fd, rel.c_str() + (slash == std::string::npos ? 0 : slash + 1), st, AT_SYMLINK_NOFOLLOW);
}

bool Copier::beyond_symlink(const std::string& rel) {
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

void Copier::copy(const std::string& rel) {
  // Tracked paths come sorted: one past the last copied cannot be a copy.
  const bool after_last = copied.empty() || *copied.rbegin() < rel;
  if (!after_last && copied.count(rel)) return;
  if (is_secret(rel)) return skip(rel, "secret");
  if (beyond_symlink(rel)) return skip(rel, "inside a symlinked folder");
  // Plain strings (an fs::path splits itself into components): this runs
  // once per tracked file.
  const std::string src = src_root.native() + "/" + rel;
  struct stat st;
  if (lstat_rel(rel, &st) != 0) return skip(rel, "missing from the work tree");
  std::error_code ec;
  if (dry && S_ISREG(st.st_mode)) {
    stats.emplace(rel, Seen{st});
  } else if (S_ISREG(st.st_mode)) {
    const fs::path dst = dst_root / rel;
    fs::create_directories(dst.parent_path(), ec);
    if (!ec) fs::copy_file(src, dst, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error("sandbox: cannot copy " + src + ": " + ec.message());
    // What git records: executable or not. A read-only file in the user's
    // tree stays editable for the agent.
    if (::chmod(dst.c_str(), (st.st_mode & S_IXUSR) ? 0755 : 0644) != 0) throw_errno("sandbox: chmod " + dst.string());
  } else if (S_ISLNK(st.st_mode)) {
    const std::string target = read_link(src);
    // Absolute targets are skipped even when they name a path inside the
    // repository: in the copy they would still point at the real one.
    if (target.empty() || target[0] == '/') return skip(rel, "symlink outside the repository");
    if (dry) {
      stats.emplace(rel, Seen{st});
    } else {
      const fs::path dst = dst_root / rel;
      fs::create_directories(dst.parent_path(), ec);
      if (!ec) fs::create_symlink(target, dst, ec);
      if (ec) throw Error("sandbox: cannot create symlink " + dst.string() + ": " + ec.message());
    }
    links.push_back(rel);
    link_set.insert(rel);
  } else {
    return skip(rel, "not a regular file");
  }
  if (after_last) copied.insert(copied.end(), rel);
  else copied.insert(rel);
}

void Copier::drop_escaping_links() {
  for (const std::string& rel : links) {
    if (resolves_inside(dry ? src_root : dst_root, rel)) continue;
    std::error_code ec;
    if (!dry) fs::remove(dst_root / rel, ec);
    stats.erase(rel);
    copied.erase(rel);
    skip(rel, "symlink outside the repository");
  }
}

namespace {

// Where to look for carried files: the literal folder before the first
// wildcard of each glob ("" = the whole tree, for basename globs like
// "*.local"), so a carry list does not walk node_modules for nothing.
std::vector<std::string> carry_roots(const std::vector<std::string>& globs) {
  std::vector<std::string> roots;
  for (std::string g : globs) {
    if (util::starts_with(g, "./")) g.erase(0, 2);
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
    if (out.empty() || !gitx::under_prefix(r, out.back())) out.push_back(r);
  return out;
}

void carry_files(Copier& copier, const std::vector<std::string>& globs, const std::string& skip_dir_rel) {
  if (globs.empty()) return;
  auto consider = [&](const std::string& rel) {
    if (rel.empty() || is_internal(rel) || (!skip_dir_rel.empty() && gitx::at_or_under_prefix(rel, skip_dir_rel)))
      return;
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
        if (is_internal(rel) || (!skip_dir_rel.empty() && gitx::at_or_under_prefix(rel, skip_dir_rel)))
          it.disable_recursion_pending();
        continue;
      }
      consider(rel);
    }
  }
}

}  // namespace

void take_files(Copier& copier, git_index* index, const std::vector<std::string>& carry_globs,
                const std::string& base_rel, std::vector<std::string>& files, std::vector<Skipped>& skipped) {
  const char* previous = "";
  for (size_t i = 0, n = git_index_entrycount(index); i < n; ++i) {
    const git_index_entry* e = git_index_get_byindex(index, i);
    // Sorted by path: the stages of a conflicted path are neighbours.
    if (std::strcmp(previous, e->path) == 0) continue;
    previous = e->path;
    std::string path = e->path;
    if (is_internal(path)) continue;
    if (e->mode == GIT_FILEMODE_COMMIT) {
      copier.skip(path, "submodule");
      continue;
    }
    copier.copy(path);
  }
  carry_files(copier, carry_globs, base_rel);
  copier.drop_escaping_links();
  files.assign(copier.copied.begin(), copier.copied.end());
  skipped = std::move(copier.skipped);
  std::sort(skipped.begin(), skipped.end(), [](const Skipped& a, const Skipped& b) { return a.path < b.path; });
}

}  // namespace detail
}  // namespace phoenix::sandbox
