#include "gitx/shared_state.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <system_error>

#include "gitx/libgit2.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::gitx::internal {

using namespace lg2;

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

namespace {

// How git's documentation spells a key people will recognise.
std::string key_name(const std::string& key) {
  static const std::map<std::string, std::string> known{
      {"core.hookspath", "core.hooksPath"},
      {"core.fsmonitor", "core.fsmonitor"},
      {"core.sshcommand", "core.sshCommand"},
      {"core.worktree", "core.worktree"},
      {"core.bare", "core.bare"},
      {"core.repositoryformatversion", "core.repositoryformatversion"},
      {"include.path", "include.path"}};
  auto it = known.find(key);
  return it == known.end() ? key : it->second;
}

template <typename Map>
std::set<std::string> union_keys(const Map& a, const Map& b) {
  std::set<std::string> keys;
  for (const auto& kv : a) keys.insert(kv.first);
  for (const auto& kv : b) keys.insert(kv.first);
  return keys;
}

}  // namespace

std::vector<std::string> config_changes(const ConfigEntries& before, const ConfigEntries& after, const std::string& who,
                                        const std::string& path) {
  std::vector<std::string> lines;
  for (const std::string& k : union_keys(before, after)) {
    auto b = before.find(k);
    auto a = after.find(k);
    if (b != before.end() && a != after.end() && b->second == a->second) continue;
    if (a == after.end()) {
      lines.push_back(who + " unset " + key_name(k));
      continue;
    }
    std::string values;
    for (const std::string& v : a->second) values += (values.empty() ? "" : ", ") + v;
    lines.push_back(who + " changed " + key_name(k) + " to " + values);
  }
  if (lines.empty()) lines.push_back(who + " rewrote " + path);
  return lines;
}

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

size_t entries_differing(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
  size_t changed = 0;
  for (const std::string& k : union_keys(a, b)) {
    auto x = a.find(k);
    auto y = b.find(k);
    if (x == a.end() || y == b.end() || x->second != y->second) ++changed;
  }
  return changed;
}

std::string ref_value_text(const std::string& v) {
  return util::starts_with(v, "sym:") ? "-> " + v.substr(4) : util::short_sha(v);
}

bool has_prefix(const std::string& name, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return util::starts_with(name, p); });
}

std::string ref_change(const std::string& who, const std::string& name, const std::string& was, const std::string& is) {
  if (was.empty()) return who + " created " + name + " at " + ref_value_text(is);
  if (is.empty()) return who + " deleted " + name + " (was " + ref_value_text(was) + ")";
  return who + " moved " + name + " from " + ref_value_text(was) + " to " + ref_value_text(is);
}

}  // namespace phoenix::gitx::internal
