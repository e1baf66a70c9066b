#include "gitx/guard.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>

#include "gitx/libgit2.h"
#include "gitx/repo.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::gitx {

using namespace lg2;

namespace {

// A file's bytes and mode, or a symbolic link's target; absent when
// nothing is there.
struct FileSnap {
  bool exists = false;
  bool link = false;
  std::string data;  // bytes, or the link's target
  unsigned mode = 0;
  bool operator==(const FileSnap& o) const {
    return exists == o.exists && link == o.link && data == o.data && mode == o.mode;
  }
  bool operator!=(const FileSnap& o) const { return !(*this == o); }
};

FileSnap snap(const std::string& path) {
  FileSnap s;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return s;
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    fs::path target = fs::read_symlink(path, ec);
    s.exists = true;
    s.link = true;
    s.data = target.string();
    return s;
  }
  if (!S_ISREG(st.st_mode)) return s;
  try {
    s.data = util::read_file(path);
  } catch (const Error&) { return s; }
  s.exists = true;
  s.mode = st.st_mode & 07777;
  return s;
}

void put_file(const std::string& path, const FileSnap& s) {
  std::error_code ec;
  if (!s.exists) {
    fs::remove(path, ec);
    if (ec) throw Error("cannot remove " + path + ": " + ec.message());
    return;
  }
  if (s.link) {
    fs::remove(path, ec);
    fs::create_symlink(s.data, path, ec);
    if (ec) throw Error("cannot create the link " + path + ": " + ec.message());
    return;
  }
  util::write_file_atomic(path, s.data, s.mode);
}

// The entries of one hooks folder (regular files and links; sub-folders are
// not hooks).
struct Folder {
  bool exists = false;
  std::map<std::string, FileSnap> entries;
};

Folder read_folder(const std::string& dir) {
  Folder f;
  std::error_code ec;
  f.exists = fs::is_directory(dir, ec);
  if (!f.exists) return f;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    FileSnap s = snap(it->path().string());
    if (s.exists) f.entries[it->path().filename().string()] = std::move(s);
  }
  return f;
}

using ConfigEntries = std::map<std::string, std::vector<std::string>>;

// The entries of one config file, by name (libgit2 gives section and key
// lowercase), in file order for a key with several values.
ConfigEntries read_config_entries(const std::string& path) {
  ConfigEntries out;
  git_config* raw = nullptr;
  if (git_config_open_ondisk(&raw, path.c_str()) < 0) {
    git_error_clear();
    return out;
  }
  ConfigPtr cfg(raw);
  git_config_foreach(
      cfg.get(),
      [](const git_config_entry* e, void* payload) {
        (*static_cast<ConfigEntries*>(payload))[e->name].push_back(e->value ? e->value : "");
        return 0;
      },
      &out);
  git_error_clear();
  return out;
}

// How git's documentation spells a key people will recognise.
std::string key_name(const std::string& key) {
  static const std::map<std::string, std::string> known{
      {"core.hookspath", "core.hooksPath"}, {"core.fsmonitor", "core.fsmonitor"},
      {"core.sshcommand", "core.sshCommand"}, {"core.worktree", "core.worktree"},
      {"core.bare", "core.bare"}, {"core.repositoryformatversion", "core.repositoryformatversion"},
      {"include.path", "include.path"}};
  auto it = known.find(key);
  return it == known.end() ? key : it->second;
}

std::string values_text(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string ref_value_text(const std::string& v) {
  return util::starts_with(v, "sym:") ? "-> " + v.substr(4) : util::short_sha(v);
}

bool exempt(const std::string& name, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return util::starts_with(name, p); });
}

// Every ref of the repository outside `prefixes`: "sym:<target>" for a
// symbolic one, the sha for a direct one.
std::map<std::string, std::string> read_refs(git_repository* repo, const std::vector<std::string>& prefixes) {
  std::map<std::string, std::string> out;
  git_reference_iterator* it_raw = nullptr;
  check(git_reference_iterator_new(&it_raw, repo), "list refs");
  RefIterPtr it(it_raw);
  for (;;) {
    git_reference* ref_raw = nullptr;
    int rc = git_reference_next(&ref_raw, it.get());
    if (rc == GIT_ITEROVER) break;
    check(rc, "list refs");
    ReferencePtr ref(ref_raw);
    const std::string name = git_reference_name(ref.get());
    if (exempt(name, prefixes)) continue;
    if (git_reference_type(ref.get()) == GIT_REFERENCE_SYMBOLIC)
      out[name] = "sym:" + std::string(git_reference_symbolic_target(ref.get()));
    else if (const git_oid* oid = git_reference_target(ref.get()))
      out[name] = oid_hex(*oid);
  }
  return out;
}

// The index's entries by path and stage: mode and blob. Stat data is left
// out (a `git status` refreshes it).
std::map<std::string, std::string> read_index_entries(const std::string& path) {
  std::map<std::string, std::string> out;
  git_index* raw = nullptr;
  if (git_index_open(&raw, path.c_str()) < 0) {
    git_error_clear();
    return out;
  }
  IndexPtr index(raw);
  for (size_t i = 0, n = git_index_entrycount(index.get()); i < n; ++i) {
    const git_index_entry* e = git_index_get_byindex(index.get(), i);
    char mode[16];
    std::snprintf(mode, sizeof mode, "%06o", e->mode);
    out[std::string(e->path) + '\0' + std::to_string(git_index_entry_stage(e))] =
        std::string(mode) + " " + oid_hex(e->id);
  }
  return out;
}

// Writes the index back the way git does: under index.lock, which must be
// free (someone holding it is writing the index right now).
void put_index(const std::string& path, const FileSnap& s) {
  const std::string lock = path + ".lock";
  int fd = ::open(lock.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, s.mode ? s.mode : 0644);
  if (fd < 0) {
    if (errno == EEXIST) throw Error(lock + " is held by another process");
    throw_errno("cannot create " + lock);
  }
  size_t off = 0;
  bool ok = true;
  while (ok && off < s.data.size()) {
    ssize_t n = ::write(fd, s.data.data() + off, s.data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) off += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || std::rename(lock.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(lock.c_str());
    errno = saved;
    throw_errno("cannot write " + path);
  }
}

// Every key of either map, sorted: what to compare between two states.
template <typename Map>
std::set<std::string> union_keys(const Map& a, const Map& b) {
  std::set<std::string> keys;
  for (const auto& kv : a) keys.insert(kv.first);
  for (const auto& kv : b) keys.insert(kv.first);
  return keys;
}

bool inside(const std::string& path, const std::string& dir) {
  return !dir.empty() && (path == dir || util::starts_with(path, dir + "/"));
}

}  // namespace

struct RepoGuard::State {
  std::string common;
  std::string checkout;  // the main work tree, "" when bare
  std::vector<std::string> exempt;
  FileSnap config;
  ConfigEntries config_entries;
  std::map<std::string, Folder> hooks;  // by absolute folder
  FileSnap head;
  std::map<std::string, std::string> refs;
  bool has_index = false;  // the index was read (take()'s with_index)
  FileSnap index;
  std::map<std::string, std::string> index_entries;

  std::string config_path() const { return common + "/config"; }
  std::string index_path() const { return common + "/index"; }
};

RepoGuard::RepoGuard() = default;
RepoGuard RepoGuard::none() { return RepoGuard(); }
RepoGuard::RepoGuard(RepoGuard&&) noexcept = default;
RepoGuard& RepoGuard::operator=(RepoGuard&&) noexcept = default;
RepoGuard::~RepoGuard() = default;

std::string RepoGuard::common_dir() const { return state_ ? state_->common : ""; }

RepoGuard RepoGuard::take(const std::string& path, const std::vector<std::string>& exempt_ref_prefixes,
                          bool with_index) {
  RepoGuard g;
  std::string common;
  try {
    common = Repo::open(path).common_dir();
  } catch (const Error&) {
    return g;  // not a repository: nothing to guard
  }
  // The user's repository itself (its main checkout's view): the refs,
  // HEAD and index a linked worktree shares or must not touch.
  Repo repo = Repo::open(common);
  auto s = std::make_unique<State>();
  s->common = common;
  s->checkout = repo.workdir();
  s->exempt = exempt_ref_prefixes;
  s->config = snap(s->config_path());
  s->config_entries = read_config_entries(s->config_path());
  s->hooks[common + "/hooks"] = read_folder(common + "/hooks");
  try {
    const std::string configured = repo.hooks_dir();
    if (inside(configured, s->checkout) || inside(configured, common)) s->hooks[configured] = read_folder(configured);
  } catch (const Error&) {}
  s->head = snap(common + "/HEAD");
  git_repository* raw = nullptr;
  check(git_repository_open_ext(&raw, common.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr),
        "open repository at " + common);
  RepositoryPtr owned(raw);
  s->refs = read_refs(owned.get(), exempt_ref_prefixes);
  if (!s->checkout.empty() && with_index) {
    s->has_index = true;
    s->index = snap(s->index_path());
    if (s->index.exists) s->index_entries = read_index_entries(s->index_path());
  }
  g.state_ = std::move(s);
  return g;
}

namespace {

// Each part of restore() adds its lines; a failure to put one thing back
// is said on that thing's line and the rest goes on.
void restore_config(const RepoGuard::State& s, const std::string& who, std::vector<std::string>& out) {
  const FileSnap now = snap(s.config_path());
  if (now == s.config) return;
  std::vector<std::string> lines;
  if (!now.exists) {
    lines.push_back(who + " deleted " + s.config_path());
  } else {
    const ConfigEntries after = read_config_entries(s.config_path());
    for (const std::string& k : union_keys(s.config_entries, after)) {
      auto b = s.config_entries.find(k);
      auto a = after.find(k);
      if (b != s.config_entries.end() && a != after.end() && b->second == a->second) continue;
      if (a == after.end()) lines.push_back(who + " unset " + key_name(k));
      else lines.push_back(who + " changed " + key_name(k) + " to " + values_text(a->second));
    }
    if (lines.empty()) lines.push_back(who + " rewrote " + s.config_path());
  }
  std::string tail = "; put back";
  try {
    put_file(s.config_path(), s.config);
  } catch (const std::exception& e) { tail = std::string("; could not put back: ") + e.what(); }
  for (std::string& l : lines) out.push_back(l + tail);
}

void restore_hooks(const RepoGuard::State& s, const std::string& who, std::vector<std::string>& out) {
  for (const auto& [dir, before] : s.hooks) {
    const Folder now = read_folder(dir);
    for (const std::string& n : union_keys(before.entries, now.entries)) {
      auto b = before.entries.find(n);
      auto a = now.entries.find(n);
      const FileSnap was = b == before.entries.end() ? FileSnap{} : b->second;
      const FileSnap is = a == now.entries.end() ? FileSnap{} : a->second;
      if (was == is) continue;
      const std::string path = dir + "/" + n;
      std::string line = !was.exists  ? who + " wrote hook " + path + "; removed"
                         : !is.exists ? who + " deleted hook " + path + "; put back"
                                      : who + " changed hook " + path + "; put back";
      try {
        put_file(path, was);
      } catch (const std::exception& e) {
        line = line.substr(0, line.rfind("; ")) + "; could not put back: " + e.what();
      }
      out.push_back(line);
    }
  }
}

void restore_refs(const RepoGuard::State& s, const std::string& who, bool user_works, std::vector<std::string>& out) {
  const FileSnap head = snap(s.common + "/HEAD");
  if (head != s.head && !user_works) {
    std::string line = who + " changed the checkout's HEAD to " + util::trim(head.data) + "; put back";
    try {
      put_file(s.common + "/HEAD", s.head);
    } catch (const std::exception& e) {
      line = who + " changed the checkout's HEAD; could not put back: " + e.what();
    }
    out.push_back(line);
  }
  git_repository* raw = nullptr;
  if (git_repository_open_ext(&raw, s.common.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr) < 0) {
    out.push_back(who + " left " + s.common + " unreadable: " + last_error_message(-1));
    return;
  }
  RepositoryPtr repo(raw);
  std::map<std::string, std::string> now;
  try {
    now = read_refs(repo.get(), s.exempt);
  } catch (const Error& e) {
    out.push_back(who + " left the refs unreadable: " + e.what());
    return;
  }
  for (const std::string& n : union_keys(s.refs, now)) {
    auto b = s.refs.find(n);
    auto a = now.find(n);
    const bool had = b != s.refs.end(), has = a != now.end();
    if (had && has && b->second == a->second) continue;
    if (user_works && !had) continue;  // a branch the user made
    if (user_works && had && has && !util::starts_with(b->second, "sym:") && !util::starts_with(a->second, "sym:")) {
      git_oid was, is;
      if (git_oid_fromstr(&was, b->second.c_str()) == 0 && git_oid_fromstr(&is, a->second.c_str()) == 0 &&
          git_graph_descendant_of(repo.get(), &is, &was) == 1)
        continue;  // moved forward: a commit of the user's
    }
    std::string line = !had   ? who + " created " + n + " at " + ref_value_text(a->second) + "; removed"
                       : !has ? who + " deleted " + n + " (was " + ref_value_text(b->second) + "); put back"
                              : who + " moved " + n + " from " + ref_value_text(b->second) + " to " +
                                    ref_value_text(a->second) + "; put back";
    try {
      git_reference* ref = nullptr;
      if (!had) {
        check(git_reference_lookup(&ref, repo.get(), n.c_str()), "read ref " + n);
        ReferencePtr owned(ref);
        check(git_reference_delete(owned.get()), "delete ref " + n);
      } else if (util::starts_with(b->second, "sym:")) {
        check(git_reference_symbolic_create(&ref, repo.get(), n.c_str(), b->second.substr(4).c_str(), 1,
                                            "phoenix: put back"),
              "write ref " + n);
        git_reference_free(ref);
      } else {
        git_oid oid;
        check(git_oid_fromstr(&oid, b->second.c_str()), "read " + b->second);
        check(git_reference_create(&ref, repo.get(), n.c_str(), &oid, 1, "phoenix: put back"), "write ref " + n);
        git_reference_free(ref);
      }
    } catch (const std::exception& e) {
      line = line.substr(0, line.rfind("; ")) + "; could not put back: " + e.what();
    }
    out.push_back(line);
  }
}

void restore_index(const RepoGuard::State& s, const std::string& who, bool user_works, std::vector<std::string>& out) {
  if (s.checkout.empty() || user_works || !s.has_index) return;
  const FileSnap now = snap(s.index_path());
  if (now.exists == s.index.exists && (!now.exists || now.data == s.index.data)) return;
  const std::map<std::string, std::string> after =
      now.exists ? read_index_entries(s.index_path()) : std::map<std::string, std::string>{};
  if (now.exists == s.index.exists && after == s.index_entries) return;  // stat data refreshed only
  size_t changed = 0;
  for (const std::string& k : union_keys(s.index_entries, after)) {
    auto b = s.index_entries.find(k);
    auto a = after.find(k);
    if (b == s.index_entries.end() || a == after.end() || b->second != a->second) ++changed;
  }
  std::string line = who + " changed the index of " + s.checkout + " (" + util::plural(changed, "entry", "entries") +
                     "); put back";
  try {
    if (s.index.exists) put_index(s.index_path(), s.index);
    else put_file(s.index_path(), s.index);
  } catch (const std::exception& e) {
    line = line.substr(0, line.rfind("; ")) + "; could not put back: " + e.what();
  }
  out.push_back(line);
}

}  // namespace

std::vector<std::string> RepoGuard::restore(const std::string& who, bool user_works) const {
  std::vector<std::string> out;
  if (!state_) return out;
  const State& s = *state_;
  // Config first: while it names another hooks folder, git runs hooks from
  // there.
  const std::vector<std::function<void()>> parts = {
      [&] { restore_config(s, who, out); }, [&] { restore_hooks(s, who, out); },
      [&] { restore_refs(s, who, user_works, out); }, [&] { restore_index(s, who, user_works, out); }};
  for (const auto& part : parts) {
    try {
      part();
    } catch (const std::exception& e) { out.push_back(who + ": the repository could not be compared: " + e.what()); }
  }
  return out;
}

}  // namespace phoenix::gitx
