#include "snapshot/snapshot.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "layout/paths.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/hash.h"
#include "util/text.h"

namespace phoenix::snapshot {

namespace fs = std::filesystem;
using util::Json;

namespace {

constexpr int kManifestVersion = 1;

struct Entry {
  std::string rel;  // relative to the snapshotted path ("" for a single file)
  std::string sha;
  unsigned mode;
  uint64_t size;
};

std::vector<Entry> scan(const fs::path& p) {
  std::vector<Entry> out;
  auto add = [&](const fs::path& file, const std::string& rel) {
    struct stat st;
    if (::lstat(file.c_str(), &st) != 0) throw_errno("cannot stat " + file.string());
    if (S_ISLNK(st.st_mode))
      throw UsageError("snapshot: " + file.string() + " is a symbolic link; Phoenix snapshots regular files only");
    out.push_back(
        {rel, util::sha256_file(file), static_cast<unsigned>(st.st_mode & 07777), static_cast<uint64_t>(st.st_size)});
  };
  if (fs::is_directory(fs::symlink_status(p))) {
    for (auto it = fs::recursive_directory_iterator(p); it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_symlink())
        throw UsageError("snapshot: " + it->path().string() +
                         " is a symbolic link; Phoenix snapshots regular files only");
      if (it->is_regular_file()) add(it->path(), fs::relative(it->path(), p).string());
    }
    std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.rel < b.rel; });
  } else {
    add(p, "");
  }
  return out;
}

std::string manifest_hash(const std::vector<Entry>& es) {
  util::Sha256 h;
  for (const auto& e : es) h.update(e.rel + std::string(1, '\0') + e.sha + "\n");
  return h.hex();
}

void copy_file(const fs::path& from, const fs::path& to, unsigned mode) {
  fs::create_directories(to.parent_path());
  PHOENIX_FAULT_IO("snapshot-write", to.string());
  util::write_file_atomic(to.string(), util::read_file(from.string()), mode);
}

}  // namespace

std::string relative_to_root(const std::string& root, const std::string& cwd, const std::string& path) {
  fs::path p = fs::path(path).is_absolute() ? fs::path(path) : fs::path(cwd) / path;
  p = fs::weakly_canonical(p);
  fs::path r = fs::weakly_canonical(root);
  std::string ps = p.string(), rs = r.string();
  if (ps != rs && !util::starts_with(ps, rs + "/"))
    throw UsageError("snapshot: " + path + " is outside the repository " + rs);
  std::string rel = ps == rs ? "." : ps.substr(rs.size() + 1);
  if (rel == ".") throw UsageError("snapshot: " + path + " is the whole repository; use git (or phoenix run) for that");
  std::string first = rel.substr(0, rel.find('/'));
  if (first == ".git" || first == layout::kStateDirName)
    throw UsageError("snapshot: " + path + " is inside " + first + "/, which Phoenix does not snapshot");
  if (!fs::exists(fs::symlink_status(p))) throw UsageError("snapshot: " + path + " does not exist");
  return rel;
}

Snapshot take(const std::string& root, const std::string& rel, const std::string& snapshots_dir,
              const std::string& check_id) {
  fs::path src = fs::path(root) / rel;
  std::vector<Entry> entries = scan(src);
  Snapshot s;
  s.path = rel;
  s.directory = fs::is_directory(fs::symlink_status(src));
  s.check = check_id;
  s.created = util::now_iso8601();
  std::string mh = manifest_hash(entries);
  s.id = util::compact_utc(false) + "-" + util::sha256_hex(rel + "\n" + mh).substr(0, 8);
  fs::path dir = fs::path(snapshots_dir) / s.id;
  if (fs::exists(dir)) return load(snapshots_dir, s.id);  // the same content at the same second
  fs::path tmp = fs::path(snapshots_dir) / (".tmp-" + s.id);
  fs::remove_all(tmp);
  try {
    Json files = Json::array();
    for (const auto& e : entries) {
      copy_file(e.rel.empty() ? src : src / e.rel,
                tmp / "content" / (e.rel.empty() ? fs::path(rel).filename() : fs::path(e.rel)), e.mode);
      files.push_back({{"path", e.rel}, {"sha256", e.sha}, {"mode", e.mode}, {"size", e.size}});
      s.files++;
      s.bytes += e.size;
    }
    fs::create_directories(tmp / "content");
    Json m = {{"version", kManifestVersion}, {"id", s.id},           {"path", rel},          {"directory", s.directory},
              {"check", check_id},           {"created", s.created}, {"content_sha256", mh}, {"files", files}};
    util::write_file_atomic((tmp / "manifest.json").string(), m.dump(2) + "\n");
    // The snapshot appears whole or not at all.
    fs::rename(tmp, dir);
  } catch (const fs::filesystem_error& e) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw Error("cannot write " + e.path1().string() + ": " + e.code().message());
  } catch (const Error&) {
    std::error_code ec;
    fs::remove_all(tmp, ec);  // a full disk leaves no half snapshot behind
    throw;
  }
  util::fsync_dir(snapshots_dir);
  return s;
}

Snapshot load(const std::string& snapshots_dir, const std::string& id) {
  fs::path mf = fs::path(snapshots_dir) / id / "manifest.json";
  if (id.empty() || id.find('/') != std::string::npos || id[0] == '.' || !fs::exists(mf)) {
    std::string known;
    for (const auto& s : list(snapshots_dir)) known += (known.empty() ? "" : ", ") + s.id;
    throw UsageError("unknown snapshot id '" + id + "'" +
                     (known.empty() ? " (there are no snapshots)" : " (known: " + known + ")"));
  }
  Json m = util::parse_json(util::read_file(mf.string()), mf.string());
  if (m.value("version", 0) != kManifestVersion)
    throw Error("snapshot " + id + ": manifest version " + std::to_string(m.value("version", 0)) +
                " is not one this Phoenix reads");
  Snapshot s;
  s.id = id;
  s.path = m.value("path", "");
  s.directory = m.value("directory", false);
  s.check = m.value("check", "");
  s.created = m.value("created", "");
  for (const auto& f : m["files"]) {
    s.files++;
    s.bytes += f.value("size", uint64_t(0));
  }
  return s;
}

std::vector<Snapshot> list(const std::string& snapshots_dir) {
  std::vector<Snapshot> out;
  std::error_code ec;
  if (!fs::is_directory(snapshots_dir, ec)) return out;
  std::vector<std::string> ids;
  for (const auto& e : fs::directory_iterator(snapshots_dir))
    if (e.is_directory() && e.path().filename().string()[0] != '.' && fs::exists(e.path() / "manifest.json"))
      ids.push_back(e.path().filename().string());
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) {
    try {
      out.push_back(load(snapshots_dir, id));
    } catch (const Error&) {
      // an unreadable snapshot is skipped in listings; load() names it when asked for
    }
  }
  return out;
}

void restore(const std::string& root, const std::string& snapshots_dir, const std::string& id) {
  Snapshot s = load(snapshots_dir, id);
  fs::path sdir = fs::path(snapshots_dir) / id;
  Json m = util::parse_json(util::read_file((sdir / "manifest.json").string()), "manifest.json");
  fs::path content = sdir / "content";
  fs::path target = fs::path(root) / s.path;
  // Verify the stored copy before anything is written.
  for (const auto& f : m["files"]) {
    std::string rel = f.value("path", "");
    fs::path stored = rel.empty() ? content / fs::path(s.path).filename() : content / rel;
    if (!fs::exists(stored) || util::sha256_file(stored.string()) != f.value("sha256", ""))
      throw Error("snapshot " + id + " is damaged: " + stored.string() +
                  " does not match its manifest; nothing was restored");
  }
  if (!s.directory) {
    const Json& f = m["files"][0];
    fs::create_directories(target.parent_path());
    util::write_file_atomic(target.string(), util::read_file((content / fs::path(s.path).filename()).string()),
                            f.value("mode", 0644u));
    return;
  }
  std::string suffix = std::to_string(::getpid()) + "-" + std::to_string(util::now_ms());
  fs::path fresh = target.string() + layout::kRestoreSuffix + suffix;
  fs::path old = target.string() + layout::kRestoreOldSuffix + suffix;
  fs::remove_all(fresh);
  fs::create_directories(fresh);
  for (const auto& f : m["files"]) {
    std::string rel = f.value("path", "");
    copy_file(content / rel, fresh / rel, f.value("mode", 0644u));
  }
  bool had = fs::exists(fs::symlink_status(target));
  if (had) fs::rename(target, old);
  fs::rename(fresh, target);
  util::fsync_dir(target.parent_path().string());
  if (had) fs::remove_all(old);
}

}  // namespace phoenix::snapshot
