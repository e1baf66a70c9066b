// gitx/watch: which paths of a work tree may have changed since it was
// last known clean, from the kernel (inotify) instead of a scan.
//
// phoenix-loop's worktree lives as long as the loop: every iteration asks
// "did the agent change anything?" and commits what it did. A status scan
// answers by looking at every file (100,000 lstat calls in a 100,000-file
// tree, twice an iteration); the watch answers with the few paths written
// since the last commit, and Repo (gitx/repo.h) limits its status to them.
//
// What the watch says is a hint that can only widen a scan, never hide a
// change: changed() returns nullopt ("scan it all") whenever it cannot be
// sure —
// - the kernel's queue overflowed, a folder could not be watched (the
//   inotify limits), or a folder was moved or renamed (its watch would name
//   the old path);
// - more than 20,000 paths were written (an install or a build inside the
//   tree; with the kernel's default queue of 16,384 events it overflows
//   first): one scan is cheaper than a status over that many names;
// - a .gitignore, .gitattributes or .gitmodules was touched (files nobody
//   wrote can change state);
// - HEAD or the index changed since mark_clean() (someone ran git: a
//   commit or reset moves files' state without touching them).
// Writes through memory maps raise no event (git's fsmonitor has the same
// limit); no agent CLI edits files that way.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace phoenix::gitx {

class TreeWatch {
 public:
  // Watches every folder under `workdir` except `.git`. `head` and `index`
  // say what HEAD and the index are now (see Stamp). nullptr when the
  // kernel refuses (no inotify, or too many folders for its limits).
  struct Stamp {
    std::string head;   // HEAD's sha
    std::string index;  // the index file's inode, size and mtime, as text
    bool operator==(const Stamp& o) const { return head == o.head && index == o.index; }
  };
  static std::unique_ptr<TreeWatch> start(const std::string& workdir);
  ~TreeWatch();
  TreeWatch(const TreeWatch&) = delete;
  TreeWatch& operator=(const TreeWatch&) = delete;

  // The paths (relative, '/'-separated, sorted; a folder stands for all
  // below it) written, created, deleted or moved since mark_clean(), or
  // nullopt when only a scan can tell (above). `now` is HEAD and the
  // index as they are.
  std::optional<std::vector<std::string>> changed(const Stamp& now);
  // The tree matches HEAD and the index (`now`), except for `kept` paths
  // (e.g. untracked state files a commit left out), which stay changed.
  // Re-watches the whole tree when the last answer was "scan it all".
  void mark_clean(const Stamp& now, const std::vector<std::string>& kept = {});

 private:
  TreeWatch() = default;
  void drain();
  bool watch_tree(const std::string& rel);
  void reset();

  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace phoenix::gitx
