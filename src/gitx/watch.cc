#include "gitx/watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <unordered_map>

#include "util/text.h"

namespace phoenix::gitx {

namespace {

constexpr uint32_t kMask = IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO |
                           IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW;

constexpr size_t kMostPaths = 20000;

bool is_git(const char* name) { return std::strcmp(name, ".git") == 0; }

// A file whose change alters the state of files nobody touched.
bool changes_others(const std::string& rel) {
  const std::string base = rel.substr(rel.rfind('/') + 1);
  return base == ".gitignore" || base == ".gitattributes" || base == ".gitmodules";
}

}  // namespace

struct TreeWatch::State {
  std::string top;
  int fd = -1;
  std::unordered_map<int, std::string> dirs;  // watch descriptor -> folder ("" = top)
  std::set<std::string> changed;
  bool unsure = false;  // only a scan can tell
  Stamp clean;
};

std::unique_ptr<TreeWatch> TreeWatch::start(const std::string& workdir) {
  std::unique_ptr<TreeWatch> w(new TreeWatch());
  w->s_ = std::make_unique<State>();
  w->s_->top = workdir;
  while (w->s_->top.size() > 1 && w->s_->top.back() == '/') w->s_->top.pop_back();
  w->s_->fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (w->s_->fd < 0 || !w->watch_tree("")) return nullptr;
  return w;
}

TreeWatch::~TreeWatch() {
  if (s_ && s_->fd >= 0) ::close(s_->fd);
}

// Watches folder `rel` and every folder below it (not .git). False when the
// kernel refuses one (the limits): the watch can no longer tell.
bool TreeWatch::watch_tree(const std::string& rel) {
  std::vector<std::string> todo{rel};
  while (!todo.empty()) {
    std::string dir = std::move(todo.back());
    todo.pop_back();
    const std::string full = dir.empty() ? s_->top : s_->top + "/" + dir;
    int wd = ::inotify_add_watch(s_->fd, full.c_str(), kMask);
    if (wd < 0) {
      if (errno == ENOENT || errno == ENOTDIR) continue;  // gone again already: its parent's event says so
      return false;
    }
    s_->dirs[wd] = dir;
    DIR* d = ::opendir(full.c_str());
    if (!d) continue;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      if (dir.empty() && is_git(e->d_name)) continue;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st {};
        is_dir = ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
      }
      if (is_dir) todo.push_back(dir.empty() ? e->d_name : dir + "/" + e->d_name);
    }
    ::closedir(d);
  }
  return true;
}

void TreeWatch::drain() {
  alignas(struct inotify_event) char buf[64 * 1024];
  while (true) {
    ssize_t n = ::read(s_->fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n < 0 && errno != EAGAIN) s_->unsure = true;
      return;
    }
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        s_->unsure = true;
        continue;
      }
      auto it = s_->dirs.find(ev->wd);
      if (it == s_->dirs.end()) continue;
      if (ev->mask & IN_IGNORED) {
        s_->dirs.erase(it);
        continue;
      }
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        // The folder itself: its parent's event names it. A watched folder
        // moved keeps its descriptor under the old name: only a scan tells.
        if (ev->mask & IN_MOVE_SELF) s_->unsure = true;
        continue;
      }
      if (ev->len == 0) continue;
      const std::string& dir = it->second;
      if (dir.empty() && is_git(ev->name)) continue;
      std::string rel = dir.empty() ? std::string(ev->name) : dir + "/" + ev->name;
      if (!s_->unsure) s_->changed.insert(rel);
      // So many paths (an install, a build in the tree) that one scan is cheaper;
      // it also bounds the set where fs.inotify.max_queued_events was raised.
      if (changes_others(rel) || s_->changed.size() > kMostPaths) s_->unsure = true;
      if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && !watch_tree(rel)) s_->unsure = true;
    }
  }
}

std::optional<std::vector<std::string>> TreeWatch::changed(const Stamp& now) {
  drain();
  if (s_->unsure || !(now == s_->clean)) return std::nullopt;
  return std::vector<std::string>(s_->changed.begin(), s_->changed.end());
}

void TreeWatch::reset() {
  ::close(s_->fd);
  s_->dirs.clear();
  s_->fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  s_->unsure = s_->fd < 0 || !watch_tree("");
}

void TreeWatch::mark_clean(const Stamp& now, const std::vector<std::string>& kept) {
  drain();
  if (s_->unsure) reset();
  s_->changed.clear();
  for (const std::string& k : kept) s_->changed.insert(k);
  s_->clean = now;
}

}  // namespace phoenix::gitx
