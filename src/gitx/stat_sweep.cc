#include "gitx/stat_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <deque>
#include <cstring>
#include <fstream>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "gitx/internal.h"
#include "util/atomic_file.h"

namespace phoenix::gitx::internal {

namespace {

constexpr mode_t kLinkMode = 0120000;
constexpr mode_t kGitlinkMode = 0160000;

// A folder of the work tree and what the index holds in it.
struct Folder {
  std::string path;  // "" for the top, else "a/b"
  std::vector<const git_index_entry*> files;
  std::vector<std::string_view> names;    // files' and tracked subfolders' names, sorted
  std::vector<std::string_view> subdirs;  // tracked subfolders' names, sorted
};

bool time_at_or_after(const git_index_time& t, const timespec& ts) {
  return t.seconds > ts.tv_sec || (t.seconds == ts.tv_sec && t.nanoseconds >= static_cast<uint32_t>(ts.tv_nsec));
}

enum class Stat { kSame, kDiffers, kCtimeOnly };

// The stat comparison `git status` trusts (core.trustctime on, as git's
// default): kCtimeOnly where only the ctime tells (content edited and its
// mtime put back, as cp -p or tar do), which libgit2's status ignores.
Stat compare(const git_index_entry& e, const struct stat& st, const timespec& index_mtime) {
  if (git_index_entry_stage(&e) != 0 || (e.flags_extended & GIT_INDEX_ENTRY_EXTENDED_FLAGS)) return Stat::kDiffers;
  if (e.mode == kGitlinkMode) return Stat::kDiffers;
  if (e.mode == kLinkMode) {
    if (!S_ISLNK(st.st_mode)) return Stat::kDiffers;
  } else if (!S_ISREG(st.st_mode) || ((st.st_mode & 0100) != 0) != ((e.mode & 0100) != 0)) {
    return Stat::kDiffers;
  }
  if (e.file_size != static_cast<uint32_t>(st.st_size) || e.ino != static_cast<uint32_t>(st.st_ino) ||
      e.mtime.seconds != static_cast<int32_t>(st.st_mtim.tv_sec) ||
      e.mtime.nanoseconds != static_cast<uint32_t>(st.st_mtim.tv_nsec))
    return Stat::kDiffers;
  // Racily clean: written no earlier than the index, so an edit in the same
  // tick would not show in the stat data.
  if (time_at_or_after(e.mtime, index_mtime)) return Stat::kDiffers;
  if (e.ctime.seconds != static_cast<int32_t>(st.st_ctim.tv_sec) ||
      e.ctime.nanoseconds != static_cast<uint32_t>(st.st_ctim.tv_nsec))
    return Stat::kCtimeOnly;
  return Stat::kSame;
}

std::string join(const std::string& dir, std::string_view name) {
  return dir.empty() ? std::string(name) : dir + "/" + std::string(name);
}

bool holds(const std::vector<std::string_view>& sorted, std::string_view name) {
  return std::binary_search(sorted.begin(), sorted.end(), name);
}

// One folder: its tracked files stat'ed relative to it, its names read.
// false when it cannot tell (a folder it may not read, no descriptors left).
bool sweep_folder(int top_fd, const Folder& f, const timespec& index_mtime, Sweep& out) {
  const int fd = f.path.empty() ? ::dup(top_fd)
                                : ::openat(top_fd, f.path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (f.path.empty() || (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)) return false;
    // Gone, or a file or link now: every file below differs.
    for (const git_index_entry* e : f.files) out.paths.emplace_back(e->path);
    out.paths.push_back(f.path);
    return true;
  }
  for (const git_index_entry* e : f.files) {
    const char* name = std::strrchr(e->path, '/');
    name = name ? name + 1 : e->path;
    struct stat st {};
    const Stat c = ::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ? Stat::kDiffers : compare(*e, st, index_mtime);
    if (c == Stat::kDiffers) out.paths.emplace_back(e->path);
    if (c == Stat::kCtimeOnly) out.ctime_only.emplace_back(e->path);
  }
  DIR* d = ::fdopendir(fd);  // takes fd
  if (!d) {
    ::close(fd);
    return false;
  }
  while (const dirent* de = ::readdir(d)) {
    const std::string_view name = de->d_name;
    if (name == "." || name == ".." || (f.path.empty() && name == ".git")) continue;
    if (!holds(f.names, name)) {
      out.paths.push_back(join(f.path, name));  // untracked or ignored: the status decides
    } else if (holds(f.subdirs, name) && de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) {
      out.paths.push_back(join(f.path, name));  // a tracked folder became a file or link
    }
  }
  ::closedir(d);
  return true;
}

// The index file's size and trailing checksum (a SHA-1): what changes
// whenever anything (git add, a commit, another checkout) rewrites it.
std::string index_fingerprint(git_repository* repo) {
  std::ifstream in(index_file(repo), std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  unsigned char sum[GIT_OID_RAWSZ];
  if (size < static_cast<std::streamoff>(sizeof sum)) return "";
  in.seekg(size - static_cast<std::streamoff>(sizeof sum));
  if (!in.read(reinterpret_cast<char*>(sum), sizeof sum)) return "";
  git_oid checksum;
  git_oid_fromraw(&checksum, sum);
  return std::to_string(size) + ":" + lg2::oid_hex(checksum);
}

std::string stamp_path(git_repository* repo) { return std::string(git_repository_path(repo)) + "phoenix-checkout"; }

std::string stamp_now(git_repository* repo) {
  git_oid head;
  if (git_reference_name_to_id(&head, repo, "HEAD") != 0) return "";
  const std::string index = index_fingerprint(repo);
  if (index.empty()) return "";
  return lg2::oid_hex(head) + " " + index + "\n";
}

}  // namespace

std::optional<Sweep> stat_sweep(git_repository* repo, git_index* index) {
  const char* workdir = git_repository_workdir(repo);
  if (!workdir) return std::nullopt;
  struct stat ist {};
  if (::stat(index_file(repo).c_str(), &ist) != 0) return std::nullopt;

  // The folders, each with its files and the names the index holds there.
  std::deque<Folder> folders;                       // a deque: the views below point into its paths
  std::unordered_map<std::string_view, size_t> at;  // folder path -> index in folders
  auto folder = [&](std::string_view path) -> size_t {
    auto it = at.find(path);
    if (it != at.end()) return it->second;
    folders.push_back({std::string(path), {}, {}, {}});
    const size_t i = folders.size() - 1;
    at.emplace(std::string_view(folders[i].path), i);
    return i;
  };
  folder("");
  const size_t n = git_index_entrycount(index);
  for (size_t i = 0; i < n; ++i) {
    const git_index_entry* e = git_index_get_byindex(index, i);
    const std::string_view path = e->path;
    const size_t slash = path.rfind('/');
    const std::string_view dir = slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
    if (!at.count(dir)) {
      // A new folder: it and every parent not seen yet name their children.
      for (std::string_view child = dir; !child.empty();) {
        const size_t s = child.rfind('/');
        const std::string_view parent = s == std::string_view::npos ? std::string_view() : child.substr(0, s);
        const bool known = at.count(child) > 0;
        const size_t c = folder(child);
        if (known) break;
        const std::string_view name = std::string_view(folders[c].path).substr(s == std::string_view::npos ? 0 : s + 1);
        const size_t p = folder(parent);
        folders[p].names.push_back(name);
        folders[p].subdirs.push_back(name);
        child = parent;
      }
    }
    Folder& f = folders[at.at(dir)];
    f.files.push_back(e);
    f.names.push_back(path.substr(slash == std::string_view::npos ? 0 : slash + 1));
  }
  for (Folder& f : folders) {
    std::sort(f.names.begin(), f.names.end());
    std::sort(f.subdirs.begin(), f.subdirs.end());
  }

  const int top_fd = ::open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top_fd < 0) return std::nullopt;
  const size_t threads =
      std::clamp<size_t>(std::thread::hardware_concurrency(), 1, std::min<size_t>(4, 1 + folders.size() / 8));
  std::vector<Sweep> found(threads);
  std::atomic<size_t> next{0};
  std::atomic<bool> unsure{false};
  auto work = [&](size_t t) {
    for (size_t i = next++; i < folders.size() && !unsure; i = next++)
      if (!sweep_folder(top_fd, folders[i], ist.st_mtim, found[t])) unsure = true;
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& t : pool) t.join();
  ::close(top_fd);
  if (unsure) return std::nullopt;

  Sweep out;
  for (Sweep& part : found) {
    out.paths.insert(out.paths.end(), std::make_move_iterator(part.paths.begin()),
                     std::make_move_iterator(part.paths.end()));
    out.ctime_only.insert(out.ctime_only.end(), std::make_move_iterator(part.ctime_only.begin()),
                          std::make_move_iterator(part.ctime_only.end()));
  }
  out.narrows = out.paths.size() <= n / 8 + 64;
  std::sort(out.paths.begin(), out.paths.end());
  out.paths.erase(std::unique(out.paths.begin(), out.paths.end()), out.paths.end());
  std::sort(out.ctime_only.begin(), out.ctime_only.end());
  return out;
}

bool index_is_heads_tree(git_repository* repo) {
  if (!git_repository_is_worktree(repo)) return false;
  std::ifstream in(stamp_path(repo));
  std::string recorded((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return !recorded.empty() && recorded == stamp_now(repo);
}

void record_checkout(git_repository* repo) {
  if (!git_repository_is_worktree(repo)) return;
  const std::string stamp = stamp_now(repo);
  try {
    if (stamp.empty()) std::remove(stamp_path(repo).c_str());
    else util::write_file_atomic(stamp_path(repo), stamp, 0644, util::Sync::kAtomic);
  } catch (const std::exception&) {
    // A hint only: without it the next move scans, as before.
  }
}

}  // namespace phoenix::gitx::internal
