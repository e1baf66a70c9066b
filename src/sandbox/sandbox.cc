#include "sandbox/sandbox.h"

#include "gitx/libgit2.h"

#include <git2.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
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

// The sandbox's baseline: `tree` committed as HEAD of its meta repository.
git_oid commit_baseline(git_repository* meta, const git_oid& tree_id) {
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, meta, &tree_id), "read baseline tree");
  TreePtr tree(tree_raw);
  git_signature* sig_raw = nullptr;
  check(git_signature_now(&sig_raw, "Phoenix", "phoenix@localhost"), "signature");
  SignaturePtr sig(sig_raw);
  git_oid commit_id;
  check(git_commit_create(&commit_id, meta, "HEAD", sig.get(), sig.get(), nullptr,
                          "phoenix: sandbox baseline\n", tree.get(), 0, nullptr),
        "commit baseline");
  return commit_id;
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
  for (size_t at = rel.find(".git"); at != std::string_view::npos; at = rel.find(".git", at + 1))
    if ((at == 0 || rel[at - 1] == '/') && (at + 4 == rel.size() || rel[at + 4] == '/')) return true;
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
  ~Copier() {
    if (dir_fd >= 0) ::close(dir_fd);
  }

  // lstat() of src_root/rel (rel checked by beyond_symlink() first).
  int lstat_rel(const std::string& rel, struct stat* st) {
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

  void skip(const std::string& rel, const char* why) { skipped.push_back({rel, why}); }

  // Removes the copied symlinks that lead outside the copy (see
  // resolves_inside). Removing one can only make others dangle, never
  // escape, so one pass is enough.
  void drop_escaping_links() {
    for (const std::string& rel : links) {
      if (resolves_inside(dry ? src_root : dst_root, rel)) continue;
      std::error_code ec;
      if (!dry) fs::remove(dst_root / rel, ec);
      stats.erase(rel);
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

// What a sandbox holds: the tracked paths of `index` (a conflicted path
// once; gitlinks are other repositories' commits, not files) and the carried
// files (the sandboxes' own folder aside), through `copier`; then what it
// took and, sorted by path, what it skipped.
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

// ---------------------------------------------------------------------------
// Overlay plumbing.

// One line on stderr, the first time only (a loop makes many sandboxes).
void say_once(const std::string& line) {
  static std::once_flag once;
  std::call_once(once, [&] { std::cerr << line << "\n"; });
}

// Overlay's mount options are a comma-separated list and lowerdir a
// colon-separated one: paths holding either (or a backslash) cannot be
// passed without escapes some kernels do not take.
std::string unmountable_path(const std::string& top, const std::string& dir) {
  for (const std::string* p : {&top, &dir})
    if (p->find_first_of(",:\\") != std::string::npos) return "the path " + *p + " holds ',', ':' or '\\'";
  return "";
}

std::string overlay_options(const std::string& hide, const std::string& lower, const std::string& upper,
                            const std::string& work) {
  return "lowerdir=" + hide + ":" + lower + ",upperdir=" + upper + ",workdir=" + work + ",userxattr";
}

// A whiteout: what overlay itself writes for a deleted file (a character
// device 0/0); unprivileged since Linux 5.8.
void make_whiteout(const std::string& path) {
  if (::mknod(path.c_str(), S_IFCHR | 0600, 0) != 0) throw_errno("sandbox: cannot hide " + path);
}

bool is_whiteout(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == 0; }

// Overlay marks a folder that replaced a deleted one (hiding everything
// below it in the lower layers) as opaque.
bool is_opaque(const std::string& dir) {
  for (const char* name : {"user.overlay.opaque", "trusted.overlay.opaque"}) {
    char v[4] = {0};
    ssize_t n = ::lgetxattr(dir.c_str(), name, v, sizeof v);
    if (n >= 1 && (v[0] == 'y' || v[0] == 'x')) return true;
  }
  return false;
}

std::string probe_overlay() {
  if (::access("/proc/self/ns/user", F_OK) != 0) return "this system has no user namespaces";
  std::error_code ec;
  const fs::path tmpdir = fs::temp_directory_path(ec);
  if (ec) return "no temporary folder: " + ec.message();
  std::string tmpl = (tmpdir / "phoenix-overlay-probe-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return std::string("cannot create a probe folder: ") + std::strerror(errno);
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      make_writable(dir);
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } cleanup{tmpl};
  if (!unmountable_path(tmpl, tmpl).empty()) return unmountable_path(tmpl, tmpl);
  // As a real sandbox has it: the mount point inside the bottom layer,
  // the other layers beside it.
  for (const char* d : {"lower", "lower/hidden", "lower/hidden/merged", "hide", "upper", "ovl"})
    fs::create_directory(tmpl + "/" + d, ec);
  util::write_file_atomic(tmpl + "/lower/seen", "x\n");
  try {
    make_whiteout(tmpl + "/hide/hidden");
  } catch (const Error& e) {
    return std::string("cannot make overlay whiteouts: ") + e.what();
  }
  const std::string sh = util::find_executable("sh");
  if (sh.empty()) return "no sh on PATH to probe with";
  util::ProcessOptions o;
  o.argv = {sh, "-c", "test -f seen && ! test -e hidden && echo new > made && test -f made"};
  o.cwd = tmpl + "/lower/hidden/merged";
  o.timeout_s = 20;
  util::ChildNamespace ns;
  ns.mounts.push_back({"overlay", tmpl + "/lower/hidden/merged", "overlay",
                       overlay_options(tmpl + "/hide", tmpl + "/lower", tmpl + "/upper", tmpl + "/ovl"), false});
  ns.mounts.push_back({tmpl + "/lower", tmpl + "/lower", "", "", true});
  o.mount_namespace = ns;
  util::ProcessResult r = util::run_process(o);
  if (r.exit_code != 0) {
    std::string out = r.output;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (out.empty()) out = "exit " + std::to_string(r.exit_code);
    return "the kernel refused: " + out;
  }
  if (!util::path_exists(tmpl + "/upper/made")) return "the overlay's upper layer did not take a write";
  return "";
}

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

bool is_secret(std::string_view rel_path) {
  // Every secret glob matches a basename that starts with '.', 'i' or 'c',
  // or ends in ".pem", ".key" or ".p12": others need no glob at all (this
  // runs once per tracked file).
  const size_t slash = rel_path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? rel_path : rel_path.substr(slash + 1);
  auto ends = [&](std::string_view suffix) {
    return base.size() >= suffix.size() && base.substr(base.size() - suffix.size()) == suffix;
  };
  if (base.empty() || (base[0] != '.' && base[0] != 'i' && base[0] != 'c' && !ends(".pem") && !ends(".key") && !ends(".p12")))
    return false;
  return util::glob_match_any(secret_globs(), rel_path);
}

Kind parse_kind(const std::string& value, const std::string& what) {
  if (value == "auto") return Kind::kAuto;
  if (value == "copy") return Kind::kCopy;
  if (value == "overlay") return Kind::kOverlay;
  throw ConfigError(what + ": '" + value + "' is not one of auto, copy, overlay");
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kCopy: return "copy";
    case Kind::kOverlay: return "overlay";
    default: return "auto";
  }
}

Kind effective_kind(Kind configured) {
  const char* env = std::getenv("PHOENIX_SANDBOX");
  if (!env || !*env || std::string_view(env) == "1") return configured;
  return parse_kind(env, "PHOENIX_SANDBOX");
}

std::string overlay_unavailable_reason() {
  static const std::string reason = probe_overlay();
  return reason;
}

Sandbox Sandbox::create(const std::string& repo_root, const std::string& base_dir,
                        const std::vector<std::string>& carry_globs, Kind kind) {
  const Kind wanted = effective_kind(kind);
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
  sb.top_ = top;
  fs::create_directory(sb.work_, ec);
  if (ec) throw Error("sandbox: cannot create " + sb.work_ + ": " + ec.message());
  // The sandboxes' own folder, when it lies inside the repository somewhere
  // other than .phoenix/, is never part of what the agent sees.
  std::string base_rel;
  if (starts_with(base.string(), top + "/")) base_rel = fs::relative(base, top).generic_string() + "/";

  if (wanted != Kind::kCopy) {
    std::string why = overlay_unavailable_reason();
    if (why.empty()) why = unmountable_path(top, sb.dir_);
    if (why.empty()) {
      std::error_code tec;
      const std::string tmp = fs::weakly_canonical(fs::temp_directory_path(tec), tec).string();
      if (starts_with(tmp + "/", top + "/")) why = "the temporary folder " + tmp + " is inside the repository";
      else why = unmountable_path(tmp, tmp);
    }
    if (why.empty()) {
      try {
        create_overlay(sb, top, base_rel, carry_globs, real.get());
        return sb;
      } catch (const Error& e) {
        // E.g. an index libgit2 cannot read (a split index): start again
        // with the copying sandbox, in a clean folder.
        why = e.what();
        std::error_code rec;
        if (!sb.layers_.empty()) {
          make_writable(sb.layers_);
          fs::remove_all(sb.layers_, rec);
          sb.layers_.clear();
        }
        make_writable(sb.meta_);
        fs::remove_all(sb.meta_, rec);
        sb.files_.clear();
        sb.skipped_.clear();
        sb.upper_.clear();
        sb.hide_.clear();
        sb.ovl_work_.clear();
      }
    }
    say_once("phoenix: sandbox: no overlay (" + why + "); using the copying sandbox");
  }
  create_copy(sb, top, base_rel, carry_globs, real.get());
  return sb;
}

void Sandbox::create_copy(Sandbox& sb, const std::string& top, const std::string& base_rel,
                          const std::vector<std::string>& carry_globs, git_repository* real) {
  sb.kind_ = Kind::kCopy;
  std::error_code ec;
  Copier copier;
  copier.src_root = top;
  copier.dst_root = sb.work_;

  // Tracked paths, from the index (conflicted paths once; gitlinks are other
  // repositories' commits, not files we can copy).
  {
    IndexPtr index = fresh_index(real);
    take_files(copier, index.get(), carry_globs, base_rel, sb.files_, sb.skipped_);
  }

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
    commit_id = commit_baseline(meta.get(), tree_id);
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
}

void Sandbox::create_overlay(Sandbox& sb, const std::string& top, const std::string& base_rel,
                             const std::vector<std::string>& carry_globs, git_repository* real) {
  sb.kind_ = Kind::kOverlay;
  std::error_code ec;
  // The layers live outside the work tree (the bottom layer): overlay
  // refuses layers nested in one another. Normally that is a folder of its
  // own under $TMPDIR; a sandbox folder outside the repository holds them.
  std::string layers = sb.dir_;
  if (starts_with(sb.dir_, top + "/")) {
    const fs::path tmp = fs::temp_directory_path(ec);
    if (ec) throw Error("sandbox: no temporary folder for the overlay's layers: " + ec.message());
    std::string tmpl = (tmp / "phoenix-layers-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw_errno("sandbox: cannot create a folder in " + tmp.string());
    sb.layers_ = layers = tmpl;
  }
  sb.upper_ = layers + "/upper";
  sb.hide_ = layers + "/hide";
  sb.ovl_work_ = layers + "/ovl";
  for (const std::string* d : {&sb.upper_, &sb.hide_, &sb.ovl_work_}) {
    fs::create_directory(*d, ec);
    if (ec) throw Error("sandbox: cannot create " + *d + ": " + ec.message());
  }

  // What the agent sees: decided exactly as the copying sandbox decides
  // what it copies, without writing anything.
  // The baseline starts as a copy of the real index (its cached trees make
  // writing the baseline tree cheap); objects come from the real repository.
  const std::string real_objects = std::string(git_repository_commondir(real)) + "objects";
  {
    RepoPtr made = init_repo(sb.meta_, /*bare=*/true);
    util::write_file_atomic(sb.meta_ + "/objects/info/alternates", real_objects + "\n");
  }
  RepoPtr meta = open_repo(sb.meta_);
  struct stat index_st {};
  {
    git_index* raw = nullptr;
    check(git_repository_index(&raw, real), "open index");
    IndexPtr real_index(raw);
    const char* real_index_path = git_index_path(real_index.get());
    if (real_index_path && ::stat(real_index_path, &index_st) == 0) {
      fs::copy_file(real_index_path, sb.meta_ + "/index", fs::copy_options::overwrite_existing, ec);
      if (ec) throw Error("sandbox: cannot copy the index to " + sb.meta_ + ": " + ec.message());
    }
  }
  git_index* idx_raw = nullptr;
  check(git_index_open(&idx_raw, (sb.meta_ + "/index").c_str()), "read baseline index");
  IndexPtr idx(idx_raw);

  Copier copier;
  copier.dry = true;
  copier.src_root = top;
  copier.dst_root = sb.work_;
  copier.stats.reserve(git_index_entrycount(idx.get()));
  take_files(copier, idx.get(), carry_globs, base_rel, sb.files_, sb.skipped_);

  // The hide layer: a whiteout for every entry of the work tree that is not
  // one of files_ nor a folder holding one. Folders that hold none are
  // hidden whole, without being read (node_modules, build/).
  std::unordered_set<std::string> folders{""};
  {
    std::string_view last_dir;
    for (const std::string& f : sb.files_) {
      const size_t end = f.rfind('/');
      if (end == std::string::npos) continue;
      const std::string_view dir(f.data(), end);
      if (dir == last_dir) continue;  // sorted: a folder's files are neighbours
      last_dir = dir;
      for (size_t slash = f.find('/'); slash != std::string::npos && slash <= end; slash = f.find('/', slash + 1))
        folders.insert(f.substr(0, slash));
    }
  }
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
      if (is_dir && folders.count(rel) && !is_internal(rel) && !(!base_rel.empty() && under_prefix(rel, base_rel))) {
        todo.push_back(rel);
        continue;
      }
      if (!hide_dir_made) {
        fs::create_directories(sb.hide_ + "/" + dir, ec);
        if (ec) {
          ::closedir(d);
          throw Error("sandbox: cannot create " + sb.hide_ + "/" + dir + ": " + ec.message());
        }
        hide_dir_made = true;
      }
      try {
        make_whiteout(sb.hide_ + "/" + rel);
      } catch (...) {
        ::closedir(d);
        throw;
      }
    }
    ::closedir(d);
  }

  // The baseline: an index entry whose file the agent sees with the stat
  // data the entry records (and not racily clean) is kept as it is; the few
  // others are dropped (not visible) or hashed again (changed in the work
  // tree, conflicted, carried).
  auto racy = [&](const git_index_entry* e) {
    return static_cast<time_t>(e->mtime.seconds) > index_st.st_mtim.tv_sec ||
           (static_cast<time_t>(e->mtime.seconds) == index_st.st_mtim.tv_sec &&
            static_cast<long>(e->mtime.nanoseconds) >= index_st.st_mtim.tv_nsec);
  };
  auto mode_of = [](const struct stat& st) -> uint32_t {
    return S_ISLNK(st.st_mode) ? GIT_FILEMODE_LINK : (st.st_mode & S_IXUSR) ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
  };
  std::vector<std::string> drop;
  for (size_t i = 0, n = git_index_entrycount(idx.get()); i < n; ++i) {
    const git_index_entry* e = git_index_get_byindex(idx.get(), i);
    auto st = copier.stats.find(std::string_view(e->path));
    if (st == copier.stats.end()) {
      drop.emplace_back(e->path);
      continue;
    }
    const struct stat& fst = st->second.st;
    const bool same = git_index_entry_stage(e) == 0 && e->mode == mode_of(fst) &&
                      e->file_size == static_cast<uint32_t>(fst.st_size) &&
                      e->mtime.seconds == static_cast<int32_t>(fst.st_mtim.tv_sec) &&
                      e->mtime.nanoseconds == static_cast<uint32_t>(fst.st_mtim.tv_nsec) &&
                      (e->ino == 0 || e->ino == static_cast<uint32_t>(fst.st_ino)) &&
                      !(e->flags_extended & GIT_INDEX_ENTRY_INTENT_TO_ADD) && !racy(e);
    if (same) st->second.kept = true;
    else drop.emplace_back(e->path);
  }
  for (const std::string& path : drop) git_index_remove_bypath(idx.get(), path.c_str());
  git_index_conflict_cleanup(idx.get());
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
    e.mode = mode_of(st);
    e.path = f.c_str();
    if (S_ISLNK(st.st_mode)) {
      const std::string target = read_link(fs::path(top) / f);
      check(git_blob_create_from_buffer(&e.id, meta.get(), target.data(), target.size()), "hash " + f);
    } else {
      check(git_blob_create_from_disk(&e.id, meta.get(), (top + "/" + f).c_str()), "hash " + f);
    }
    check(git_index_add(idx.get(), &e), "stage " + f);
  }
  git_oid tree_id, commit_id;
  check(git_index_write_tree_to(&tree_id, idx.get(), meta.get()), "write baseline tree");
  // After the tree: the index keeps the trees just made, for read_patch().
  check(git_index_write(idx.get()), "write baseline index");
  commit_id = commit_baseline(meta.get(), tree_id);
  sb.baseline_ = oid_hex(commit_id);

  // The agent's own repository, in the upper layer: the baseline commit on
  // "main", the baseline index (stat data of the files it sees), objects
  // borrowed from meta.git and the real repository.
  const std::string git_dir = sb.upper_ + "/.git";
  {
    RepoPtr agent = init_repo(git_dir, /*bare=*/true);
    ConfigPtr cfg = local_config(agent.get());
    check(git_config_set_bool(cfg.get(), "core.bare", 0), "configure sandbox");
    // Overlay reports its own device number: compare what survives it.
    check(git_config_set_string(cfg.get(), "core.checkStat", "minimal"), "configure sandbox");
    check(git_config_set_string(cfg.get(), "user.name", "Phoenix sandbox"), "configure sandbox");
    check(git_config_set_string(cfg.get(), "user.email", "sandbox@phoenix.invalid"), "configure sandbox");
    check(git_config_set_bool(cfg.get(), "commit.gpgsign", 0), "configure sandbox");
    check(git_config_set_bool(cfg.get(), "tag.gpgsign", 0), "configure sandbox");
  }
  util::write_file_atomic(git_dir + "/objects/info/alternates", sb.meta_ + "/objects\n" + real_objects + "\n");
  {
    RepoPtr agent = open_repo(git_dir);
    git_reference* ref = nullptr;
    check(git_reference_create(&ref, agent.get(), "refs/heads/main", &commit_id, /*force=*/1, "phoenix: sandbox baseline"),
          "set sandbox branch");
    git_reference_free(ref);
  }
  fs::copy_file(sb.meta_ + "/index", git_dir + "/index", fs::copy_options::overwrite_existing, ec);
  if (ec) throw Error("sandbox: cannot write " + git_dir + "/index: " + ec.message());
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
  RepoPtr meta = open_repo(meta_);
  git_index* raw = nullptr;
  // A private copy of the baseline index, never written back.
  check(git_index_open(&raw, (meta_ + "/index").c_str()), "read baseline index");
  IndexPtr idx(raw);
  RepoPtr real;  // opened on the first new file: the ignore rules are the repository's
  auto drop = [&](const std::string& rel) {
    git_index_remove_directory(idx.get(), rel.c_str(), 0);
    if (git_index_get_bypath(idx.get(), rel.c_str(), 0)) check(git_index_remove(idx.get(), rel.c_str(), 0), "drop " + rel);
  };
  std::vector<std::string> todo{""};
  while (!todo.empty()) {
    const std::string dir = std::move(todo.back());
    todo.pop_back();
    const std::string src = dir.empty() ? upper_ : upper_ + "/" + dir;
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
      if (name == ".git" || std::find(scratch_.begin(), scratch_.end(), rel) != scratch_.end()) continue;
      const std::string path = upper_ + "/" + rel;
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0) continue;
      if (is_whiteout(st)) {
        drop(rel);
      } else if (S_ISDIR(st.st_mode)) {
        if (is_opaque(path)) drop(rel);
        else if (git_index_get_bypath(idx.get(), rel.c_str(), 0)) check(git_index_remove(idx.get(), rel.c_str(), 0), "drop " + rel);
        todo.push_back(rel);
      } else if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) {
        const git_index_entry* old = git_index_get_bypath(idx.get(), rel.c_str(), 0);
        if (!old) {
          if (!real) real = open_repo(top_);
          int ignored = 0;
          check(git_ignore_path_is_ignored(&ignored, real.get(), rel.c_str()), "ignore rules for " + rel);
          if (ignored) continue;
        }
        git_index_entry e{};
        e.mode = S_ISLNK(st.st_mode) ? GIT_FILEMODE_LINK : (st.st_mode & S_IXUSR) ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
        e.file_size = static_cast<uint32_t>(st.st_size);
        e.path = rel.c_str();
        if (S_ISLNK(st.st_mode)) {
          const std::string target = read_link(path);
          check(git_blob_create_from_buffer(&e.id, meta.get(), target.data(), target.size()), "hash " + rel);
        } else {
          check(git_blob_create_from_disk(&e.id, meta.get(), path.c_str()), "hash " + rel);
        }
        if (old && git_oid_equal(&old->id, &e.id) && old->mode == e.mode) continue;
        git_index_remove_directory(idx.get(), rel.c_str(), 0);
        check(git_index_add(idx.get(), &e), "stage " + rel);
      }
    }
  }
  git_oid tree_id;
  check(git_index_write_tree_to(&tree_id, idx.get(), meta.get()), "write the sandbox's tree");
  git_oid base_id;
  check(git_oid_fromstr(&base_id, baseline_.c_str()), "baseline id");
  git_commit* base_raw = nullptr;
  check(git_commit_lookup(&base_raw, meta.get(), &base_id), "read baseline");
  Owned<git_commit, git_commit_free> base(base_raw);
  if (git_oid_equal(git_commit_tree_id(base.get()), &tree_id)) return "";
  git_tree* tree_raw = nullptr;
  check(git_tree_lookup(&tree_raw, meta.get(), &tree_id), "read the sandbox's tree");
  TreePtr tree(tree_raw);
  git_signature* sig_raw = nullptr;
  check(git_signature_now(&sig_raw, "Phoenix", "phoenix@localhost"), "signature");
  SignaturePtr sig(sig_raw);
  git_oid after;
  const git_commit* parents[] = {base.get()};
  check(git_commit_create(&after, meta.get(), nullptr, sig.get(), sig.get(), nullptr, "phoenix: sandbox result\n",
                          tree.get(), 1, parents),
        "commit the sandbox's tree");
  return gitx::Repo::open(meta_).diff_patch(baseline_, oid_hex(after));
}

Sandbox::Sandbox(Sandbox&& other) noexcept
    : kind_(other.kind_),
      top_(std::move(other.top_)),
      layers_(std::move(other.layers_)),
      upper_(std::move(other.upper_)),
      hide_(std::move(other.hide_)),
      ovl_work_(std::move(other.ovl_work_)),
      scratch_(std::move(other.scratch_)),
      dir_(std::move(other.dir_)),
      work_(std::move(other.work_)),
      meta_(std::move(other.meta_)),
      baseline_(std::move(other.baseline_)),
      files_(std::move(other.files_)),
      skipped_(std::move(other.skipped_)) {
  other.dir_.clear();
  other.layers_.clear();
}

Sandbox& Sandbox::operator=(Sandbox&& other) noexcept {
  if (this != &other) {
    remove();
    kind_ = other.kind_;
    top_ = std::move(other.top_);
    layers_ = std::move(other.layers_);
    upper_ = std::move(other.upper_);
    hide_ = std::move(other.hide_);
    ovl_work_ = std::move(other.ovl_work_);
    scratch_ = std::move(other.scratch_);
    dir_ = std::move(other.dir_);
    work_ = std::move(other.work_);
    meta_ = std::move(other.meta_);
    baseline_ = std::move(other.baseline_);
    files_ = std::move(other.files_);
    skipped_ = std::move(other.skipped_);
    other.dir_.clear();
    other.layers_.clear();
  }
  return *this;
}

Sandbox::~Sandbox() { remove(); }

void Sandbox::remove() noexcept {
  if (!layers_.empty()) {
    try {
      make_writable(layers_);
      std::error_code ec;
      fs::remove_all(layers_, ec);
    } catch (...) {
    }
    layers_.clear();
  }
  if (dir_.empty()) return;
  try {
    make_writable(dir_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  } catch (...) {
    // A destructor must not throw; a leftover folder under layout::sandboxes_dir
    // is harmless and the next `phoenix recover` can remove it.
  }
  dir_.clear();
}

std::string Sandbox::write_scratch_file(const std::string& name, std::string_view content) {
  std::string file;
  struct stat st;
  for (int n = 1;; ++n) {
    file = ".phoenix-" + (n == 1 ? std::string() : std::to_string(n) + "-") + name;
    if (kind_ == Kind::kOverlay) {
      // Taken in the agent's view when the upper layer or the real tree
      // (hidden or not: a number more costs nothing) has it.
      if (::lstat((upper_ + "/" + file).c_str(), &st) != 0 && ::lstat((top_ + "/" + file).c_str(), &st) != 0) break;
    } else if (::lstat((work_ + "/" + file).c_str(), &st) != 0) {
      break;
    }
  }
  if (kind_ == Kind::kOverlay) {
    // Written into the upper layer while nothing has it mounted (mounts
    // live only as long as a confined process does).
    scratch_.push_back(file);
    util::write_file_atomic(upper_ + "/" + file, content, 0644);
    return work_ + "/" + file;
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
  if (kind_ == Kind::kOverlay) return read_overlay_patch();
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
