#include "gitx/guard.h"

#include <filesystem>
#include <functional>
#include <set>
#include <system_error>

#include "gitx/libgit2.h"
#include "gitx/repo.h"
#include "gitx/shared_state.h"
#include "util/error.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::gitx {

using namespace lg2;
using namespace internal;

namespace {

// The branches gitx makes for a moment while it moves a worktree: another
// Phoenix process's, never a program's doing.
const char* const kOwnTemporaryRefs = "refs/heads/phoenix-tmp/";

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
    if (has_prefix(name, prefixes)) continue;
    if (git_reference_type(ref.get()) == GIT_REFERENCE_SYMBOLIC)
      out[name] = "sym:" + std::string(git_reference_symbolic_target(ref.get()));
    else if (const git_oid* oid = git_reference_target(ref.get())) out[name] = oid_hex(*oid);
  }
  return out;
}

bool inside(const std::string& path, const std::string& dir) {
  return !dir.empty() && (path == dir || util::starts_with(path, dir + "/"));
}

RepositoryPtr open_common(const std::string& common) {
  git_repository* raw = nullptr;
  check(git_repository_open_ext(&raw, common.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr),
        "open repository at " + common);
  return RepositoryPtr(raw);
}

}  // namespace

struct RepoGuard::State {
  std::string common;
  std::vector<std::string> exempt;
  FileSnap config;
  ConfigEntries config_entries;
  std::map<std::string, Folder> hooks;  // by absolute folder
  FileSnap head;
  std::map<std::string, std::string> refs;

  std::string config_path() const { return common + "/config"; }
};

RepoGuard::RepoGuard() = default;
RepoGuard RepoGuard::none() { return RepoGuard(); }
RepoGuard::RepoGuard(RepoGuard&&) noexcept = default;
RepoGuard& RepoGuard::operator=(RepoGuard&&) noexcept = default;
RepoGuard::~RepoGuard() = default;

std::string RepoGuard::common_dir() const { return state_ ? state_->common : ""; }

RepoGuard RepoGuard::take(const std::string& path, const std::vector<std::string>& exempt_ref_prefixes) {
  RepoGuard g;
  std::string common;
  try {
    common = Repo::open(path).common_dir();
  } catch (const Error&) {
    return g;  // not a repository: nothing to guard
  }
  // The user's repository itself (its main checkout's view): the refs and
  // HEAD a linked worktree shares.
  Repo repo = Repo::open(common);
  auto s = std::make_unique<State>();
  s->common = common;
  s->exempt = exempt_ref_prefixes;
  s->exempt.push_back(kOwnTemporaryRefs);
  s->config = snap(s->config_path());
  s->config_entries = read_config_entries(s->config_path());
  s->hooks[common + "/hooks"] = read_folder(common + "/hooks");
  try {
    const std::string configured = repo.hooks_dir();
    if (inside(configured, repo.workdir()) || inside(configured, common))
      s->hooks[configured] = read_folder(configured);
  } catch (const Error&) {}
  s->head = snap(common + "/HEAD");
  s->refs = read_refs(open_common(common).get(), s->exempt);
  g.state_ = std::move(s);
  return g;
}

namespace {

// How restore() treats a change: a confined program cannot have made it,
// so it is only said; an unconfined one may have, and what a person does
// not do behind a program (the config, the hooks) is put back.
struct Telling {
  std::string who;
  bool confined = false;

  // "<what> while setup ran, not by setup: left as it is" (confined), or
  // "<what> while setup ran: left as it is" (Phoenix cannot tell whose).
  std::string left(const std::string& what) const {
    return what + " while " + who + " ran" + (confined ? ", not by " + who : "") + ": left as it is";
  }
};

void restore_config(const RepoGuard::State& s, const Telling& t, std::vector<std::string>& out) {
  const FileSnap now = snap(s.config_path());
  if (now == s.config) return;
  if (t.confined) {
    for (const std::string& what :
         config_changes(s.config_entries, read_config_entries(s.config_path()), "", s.config_path()))
      out.push_back(t.left(util::trim(what)));
    return;
  }
  std::vector<std::string> lines =
      now.exists ? config_changes(s.config_entries, read_config_entries(s.config_path()), t.who, s.config_path())
                 : std::vector<std::string>{t.who + " deleted " + s.config_path()};
  std::string tail = "; put back";
  try {
    put_file(s.config_path(), s.config);
  } catch (const std::exception& e) { tail = std::string("; could not put back: ") + e.what(); }
  for (std::string& l : lines) out.push_back(l + tail);
}

void restore_hooks(const RepoGuard::State& s, const Telling& t, std::vector<std::string>& out) {
  for (const auto& [dir, before] : s.hooks) {
    const Folder now = read_folder(dir);
    std::set<std::string> names;
    for (const auto& kv : before.entries) names.insert(kv.first);
    for (const auto& kv : now.entries) names.insert(kv.first);
    for (const std::string& n : names) {
      auto b = before.entries.find(n);
      auto a = now.entries.find(n);
      const FileSnap was = b == before.entries.end() ? FileSnap{} : b->second;
      const FileSnap is = a == now.entries.end() ? FileSnap{} : a->second;
      if (was == is) continue;
      const std::string path = dir + "/" + n;
      if (t.confined) {
        out.push_back(t.left("hook " + path + (!was.exists ? " appeared" : !is.exists ? " was deleted" : " changed")));
        continue;
      }
      std::string line = !was.exists  ? t.who + " wrote hook " + path + "; removed"
                         : !is.exists ? t.who + " deleted hook " + path + "; put back"
                                      : t.who + " changed hook " + path + "; put back";
      try {
        put_file(path, was);
      } catch (const std::exception& e) {
        line = line.substr(0, line.rfind("; ")) + "; could not put back: " + e.what();
      }
      out.push_back(line);
    }
  }
}

// Refs and the checkout's HEAD are never put back: a person commits,
// amends, switches and fetches while a program runs, and nothing here
// tells their doing from the program's.
void tell_refs(const RepoGuard::State& s, const Telling& t, std::vector<std::string>& out) {
  const FileSnap head = snap(s.common + "/HEAD");
  if (head != s.head) out.push_back(t.left("the checkout's HEAD changed to " + util::trim(head.data)));
  std::map<std::string, std::string> now;
  try {
    now = read_refs(open_common(s.common).get(), s.exempt);
  } catch (const Error& e) {
    out.push_back(t.who + " left the refs unreadable: " + e.what());
    return;
  }
  std::set<std::string> names;
  for (const auto& kv : s.refs) names.insert(kv.first);
  for (const auto& kv : now) names.insert(kv.first);
  for (const std::string& n : names) {
    auto b = s.refs.find(n);
    auto a = now.find(n);
    const std::string was = b == s.refs.end() ? "" : b->second;
    const std::string is = a == now.end() ? "" : a->second;
    if (was == is) continue;
    const std::string what = was.empty()  ? n + " was created at " + ref_value_text(is)
                             : is.empty() ? n + " (at " + ref_value_text(was) + ") was deleted"
                                          : n + " moved from " + ref_value_text(was) + " to " + ref_value_text(is);
    out.push_back(t.left(what));
  }
}

}  // namespace

std::vector<std::string> RepoGuard::restore(const std::string& who, bool confined) const {
  std::vector<std::string> out;
  if (!state_) return out;
  const State& s = *state_;
  const Telling t{who, confined};
  // Config first: while it names another hooks folder, git runs hooks from
  // there.
  const std::vector<std::function<void()>> parts = {[&] { restore_config(s, t, out); },
                                                    [&] { restore_hooks(s, t, out); }, [&] { tell_refs(s, t, out); }};
  for (const auto& part : parts) {
    try {
      part();
    } catch (const std::exception& e) { out.push_back(who + ": the repository could not be compared: " + e.what()); }
  }
  return out;
}

}  // namespace phoenix::gitx
