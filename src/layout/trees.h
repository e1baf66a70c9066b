// The persistent trees of one kind that runs side by side share: bisect's
// ("bisect", "bisect-2" ... "bisect-8"), the pre-push hook's ("hook",
// "hook-2" ... "hook-4"), a loop's workers' ("loop-x-w1" ...). Each is
// locked (tree_lock, util::FileLock) by the one run that uses it, for as
// long as it uses it; another run takes the next free one, or waits a
// bounded time saying for whom (the holders' pids and commands), and
// never moves a tree another run holds. A lock whose holder died (the
// kernel released its flock) or whose file does not parse is taken over
// with a warning naming the file.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "util/lock.h"

namespace phoenix::gitx {
class Repo;
}

namespace phoenix::layout {

// A kind of tree: `max` interchangeable members named by `name(i)`
// (i = 0 .. max-1), the lowest taken first; `what` says it in messages
// ("bisect", "hook").
struct TreeFamily {
  std::string what;
  size_t max = 1;
  std::function<std::string(size_t)> name;
};

// "<base>" for member 0, "<base>-<i+1>" after it: bisect, bisect-2, ...
std::string numbered_tree(const std::string& base, size_t i);

// A tree this run holds: its member number, name and lock.
struct HeldTree {
  size_t index = 0;
  std::string name;
  std::unique_ptr<util::FileLock> lock;
};

// Called with each line a person waiting should read: "warning: took over
// the stale lock <file>: ...", "<what>: all 8 <what> trees of this
// repository are in use (...); waiting up to 300 s for one to be free",
// "<what>: bisect-3 is free now".
using SayFn = std::function<void(const std::string&)>;

// Adds to `held` up to `want` members (in all) that no run holds now,
// lowest first, members already in `held` skipped. Never waits.
void take_free_trees(const gitx::Repo& repo, const TreeFamily& family, size_t want, std::vector<HeldTree>& held,
                     const SayFn& say);

// Who holds the family's trees: "bisect, bisect-2 by pid 123 (phoenix run
// --fixer bisect); bisect-3 by pid 456 (...)"; a lock that names no pid is
// "a process that names itself nowhere".
std::string tree_holders(const gitx::Repo& repo, const TreeFamily& family);

// What take_trees() got: the trees (none when the wait ran out), and when
// it had to wait, for whom and how long it was prepared to.
struct TakenTrees {
  std::vector<HeldTree> held;
  std::string holders;
  long long wait_s = 0;
};

// At least one and up to `want` members; when every member is held, says
// so (who holds them, how long it will wait), then polls every 100 ms
// until one is free or `until`. `keep_waiting` is asked before each poll
// (an interrupt: the caller throws from it).
TakenTrees take_trees(const gitx::Repo& repo, const TreeFamily& family, size_t want,
                      std::chrono::steady_clock::time_point until, const SayFn& say,
                      const std::function<void()>& keep_waiting = {});

}  // namespace phoenix::layout
