// The search over a range of commits, serial or with several probes at
// once (multisection): bisect_commits() and bisect_commits_parallel() of
// fixers/bisect.h. The oracle is the caller's; the worktrees are moved here.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "fixers/bisect.h"
#include "gitx/worktree.h"
#include "layout/layout.h"
#include "util/error.h"
#include "util/format.h"

namespace phoenix::fixers {

using util::short_sha;
// ---------------------------------------------------------------------------

namespace {

// Resolves good..bad into `range`; false (and r.reason) when there is no
// range to search.
bool open_range(gitx::Repo& repo, const std::string& good, const std::string& bad, BisectRange& range,
                BisectResult& r) {
  const std::string g = repo.resolve(good);
  const std::string b = repo.resolve(bad);
  if (g == b) {
    r.reason = "good and bad are the same commit " + short_sha(g);
    return false;
  }
  if (!repo.is_ancestor(g, b)) {
    r.reason = "good " + short_sha(g) + " is not an ancestor of bad " + short_sha(b);
    return false;
  }
  std::vector<std::string> pos = {g};
  for (std::string& sha : repo.rev_list(g, b)) pos.push_back(std::move(sha));
  r.range_size = pos.size() - 1;
  if (r.range_size == 0 || pos.back() != b) {
    r.reason = "no first-parent path from " + short_sha(g) + " to " + short_sha(b);
    return false;
  }
  range = BisectRange(std::move(pos));
  return true;
}

// The outcome of one probe.
struct Outcome {
  size_t slot = 0, position = 0;
  bool green = false, skipped = false;
  std::string why;  // skipped: the oracle's reason
  std::exception_ptr error;
};

// Runs the probes of one search on its workers (inline when there is one)
// and folds their outcomes into the range.
class Multisection {
 public:
  Multisection(const std::vector<std::string>& paths, const ParallelBisectOracle& oracle, BisectRange& range,
               BisectResult& r)
      : oracle_(oracle), range_(range), r_(r), slots_(paths.size()) {
    for (size_t i = 0; i < paths.size(); ++i) {
      slots_[i].path = paths[i];
      if (!paths[i].empty()) slots_[i].repo.emplace(gitx::Repo::open(paths[i]));
    }
  }
  ~Multisection() { stop_all(); }

  void run() {
    while (range_.open()) {
      std::vector<size_t> free;
      for (size_t i = 0; i < slots_.size(); ++i)
        if (!slots_[i].busy) free.push_back(i);
      const std::vector<size_t> plan = range_.plan(in_flight(), free.size());
      for (size_t i = 0; i < plan.size(); ++i) launch(free[i], plan[i]);
      if (in_flight().empty()) break;
      apply(wait_one());
    }
    stop_all();
  }

 private:
  struct Slot {
    std::string path;
    std::optional<gitx::Repo> repo;
    bool busy = false, cancelled = false;
    size_t position = 0;
    int cancel_fd = -1;
    std::thread thread;
  };

  std::set<size_t> in_flight() const {
    std::set<size_t> out;
    for (const Slot& s : slots_)
      if (s.busy && !s.cancelled) out.insert(s.position);
    return out;
  }

  // Moves the slot's worktree and asks the oracle; never throws.
  Outcome probe(size_t slot, size_t position, int cancel_fd) {
    Outcome o;
    o.slot = slot;
    o.position = position;
    try {
      const std::string& sha = range_.pos[position];
      if (slots_[slot].repo) gitx::move_worktree(*slots_[slot].repo, sha, layout::state_prefixes());
      o.green = oracle_(sha, BisectProbe{slot, slots_[slot].path, cancel_fd});
    } catch (const BisectSkip& s) {
      o.skipped = true;
      o.why = s.why;
    } catch (...) { o.error = std::current_exception(); }
    return o;
  }

  void launch(size_t slot, size_t position) {
    Slot& s = slots_[slot];
    s.busy = true;
    s.cancelled = false;
    s.position = position;
    if (slots_.size() == 1) {
      done_.push_back(probe(slot, position, -1));
      return;
    }
    s.cancel_fd = ::eventfd(0, EFD_CLOEXEC);
    if (s.cancel_fd < 0) throw Error("bisect: eventfd: " + std::string(std::strerror(errno)));
    s.thread = std::thread([this, slot, position, fd = s.cancel_fd] {
      Outcome o = probe(slot, position, fd);
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(o));
      cv_.notify_all();
    });
  }

  Outcome wait_one() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !done_.empty(); });
    Outcome o = std::move(done_.front());
    done_.pop_front();
    lock.unlock();
    release(slots_[o.slot]);
    return o;
  }

  void release(Slot& s) {
    if (s.thread.joinable()) s.thread.join();
    if (s.cancel_fd >= 0) ::close(s.cancel_fd);
    s.cancel_fd = -1;
    s.busy = false;
  }

  void apply(const Outcome& o) {
    const bool wanted = !slots_[o.slot].cancelled && range_.wanted(o.position);
    slots_[o.slot].cancelled = false;
    if (!wanted) {
      ++r_.cancelled;
      return;
    }
    if (o.error) {
      stop_all();
      std::rethrow_exception(o.error);
    }
    if (o.skipped) {
      range_.skip(o.position, o.why, r_);
      return;
    }
    range_.measured(o.position, o.green, r_);
    cancel_unneeded();
  }

  // Tells every probe whose commit is now known green or red to stop.
  void cancel_unneeded() {
    for (Slot& s : slots_) {
      if (!s.busy || s.cancelled || range_.wanted(s.position)) continue;
      s.cancelled = true;
      const uint64_t one = 1;
      if (s.cancel_fd >= 0 && ::write(s.cancel_fd, &one, sizeof one) < 0) {
        // The probe then runs to its end; its result is ignored all the same.
      }
    }
  }

  // Stops and waits for every probe still running; their results are ignored.
  void stop_all() {
    for (Slot& s : slots_) {
      if (!s.busy) continue;
      const uint64_t one = 1;
      if (s.cancel_fd >= 0 && ::write(s.cancel_fd, &one, sizeof one) < 0) {
        // see cancel_unneeded()
      }
      ++r_.cancelled;
      release(s);
    }
    std::lock_guard<std::mutex> lock(mu_);
    done_.clear();
  }

  const ParallelBisectOracle& oracle_;
  BisectRange& range_;
  BisectResult& r_;
  std::vector<Slot> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Outcome> done_;
};

}  // namespace

BisectResult bisect_commits_parallel(gitx::Repo& repo, const std::vector<std::string>& worktree_paths,
                                     const std::string& good, const std::string& bad,
                                     const ParallelBisectOracle& oracle) {
  if (worktree_paths.empty()) throw Error("bisect: no worker to probe with");
  BisectResult r;
  BisectRange range;
  if (!open_range(repo, good, bad, range, r)) return r;
  Multisection(worktree_paths, oracle, range, r).run();
  range.conclude(r);
  return r;
}

BisectResult bisect_commits(gitx::Repo& repo, const std::string& worktree_path, const std::string& good,
                            const std::string& bad, const BisectOracle& oracle) {
  return bisect_commits_parallel(repo, {worktree_path}, good, bad,
                                 [&](const std::string& sha, const BisectProbe&) { return oracle(sha); });
}

}  // namespace phoenix::fixers
