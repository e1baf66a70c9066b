// Invariant 12: the fingerprint of what an agent could change in the real
// repository, and what differs between two of them (sandbox.h).
#include "sandbox/sandbox.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <system_error>

#include "gitx/libgit2.h"
#include "gitx/prefix.h"
#include "gitx/repo.h"
#include "sandbox/common.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/format.h"

namespace fs = std::filesystem;

namespace phoenix::sandbox {
namespace {

// A short, stable digest of what is at `path` now.
std::string content_digest(const fs::path& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return "absent";
  if (S_ISLNK(st.st_mode)) return "link " + detail::read_link(path);
  if (S_ISDIR(st.st_mode)) return "folder";
  if (!S_ISREG(st.st_mode)) return "special";
  try {
    return util::sha256_file(path.string()) + ((st.st_mode & S_IXUSR) ? " x" : "");
  } catch (const Error&) { return "unreadable"; }
}

}  // namespace

RepoFingerprint fingerprint_repo(const std::string& repo_root,
                                 const std::vector<std::string>& ignore_untracked_prefixes) {
  gitx::Repo repo = gitx::Repo::open(repo_root);
  const std::string top = repo.workdir();
  RepoFingerprint fp;
  auto& items = fp.items;

  const std::string head = repo.head_sha();
  const std::string branch = repo.head_branch();
  items["HEAD"] =
      (head.empty() ? std::string("unborn") : head) + " " + (branch.empty() ? "(detached)" : "(" + branch + ")");
  for (const gitx::RefEntry& r : repo.list_refs("")) items["ref " + r.name] = r.sha;

  {
    gitx::lg2::RepositoryPtr raw = detail::open_repo(repo_root);
    gitx::lg2::IndexPtr index = gitx::lg2::fresh_index(raw.get());
    for (size_t i = 0, n = git_index_entrycount(index.get()); i < n; ++i) {
      const git_index_entry* e = git_index_get_byindex(index.get(), i);
      int stage = git_index_entry_stage(e);
      std::string key = "index " + std::string(e->path) + (stage ? " (stage " + std::to_string(stage) + ")" : "");
      char mode[16];
      std::snprintf(mode, sizeof mode, "%06o", e->mode);
      items[key] = std::string(mode) + " " + gitx::lg2::oid_hex(e->id);
    }
  }

  std::vector<std::string> skip = ignore_untracked_prefixes;
  skip.push_back(detail::state_dir_prefix());
  for (const gitx::StatusEntry& e : repo.status()) {
    if (e.code == '?' && gitx::at_or_under_any(e.path, skip)) continue;
    std::string v = std::string(1, e.code) + " " + content_digest(fs::path(top) / e.path);
    if (!e.old_path.empty()) v += " from " + e.old_path;
    items["file " + e.path] = v;
  }

  const fs::path config = fs::path(repo.common_dir()) / "config";
  items["config"] = content_digest(config);
  std::error_code ec;
  for (auto it = fs::directory_iterator(repo.hooks_dir(), ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
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
        return util::short_sha(v.substr(0, sp)) + (sp == std::string::npos ? "" : v.substr(sp));
      };
      out.push_back("HEAD moved from " + (had ? show(b->second) : "?") + " to " + (has ? show(a->second) : "?"));
    } else if (kind == "ref") {
      if (!had) out.push_back("ref " + name + " created at " + util::short_sha(a->second));
      else if (!has) out.push_back("ref " + name + " deleted");
      else
        out.push_back("ref " + name + " moved from " + util::short_sha(b->second) + " to " +
                      util::short_sha(a->second));
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
