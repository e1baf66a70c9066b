#include "loop/workers.h"

#include <algorithm>
#include <chrono>

#include "gitx/worktree.h"
#include "layout/layout.h"
#include "util/error.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::loop {

using util::Json;

WorkerPool::WorkerPool(int n, gitx::Repo& main, std::string name, Work work, std::function<void()> changed,
                       std::function<void(const std::string&)> say)
    : main_(main), name_(std::move(name)), work_(std::move(work)), changed_(std::move(changed)) {
  std::vector<layout::HeldTree> held = take_worker_trees(main_, name_, static_cast<size_t>(n), say);
  for (layout::HeldTree& h : held) {
    auto w = std::make_unique<Worker>();
    w->slot = static_cast<int>(workers_.size()) + 1;
    w->tree.name = h.name;
    w->tree.path = layout::worktree_path(main_, w->tree.name);
    w->lock = std::move(h.lock);
    workers_.push_back(std::move(w));
  }
}

std::vector<layout::HeldTree> WorkerPool::take_worker_trees(const gitx::Repo& main, const std::string& name, size_t n,
                                                            const std::function<void(const std::string&)>& say) {
  const layout::TreeFamily family{"worker", n + kSpareWorkerTrees,
                                  [name](size_t i) { return worker_name(name, static_cast<int>(i) + 1); }};
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(kWorkerTreeWaitS);
  layout::TakenTrees got = layout::take_trees(main, family, n, until, say, [] {
    if (int sig = util::interrupted_signal())
      throw Error("interrupted while waiting for a worker tree (signal " + std::to_string(sig) + ")", kExitInterrupted);
  });
  if (got.held.empty())
    throw Error("phoenix-loop: no worker tree of this loop was free within " + std::to_string(got.wait_s) + " s (" +
                got.holders + ")");
  if (got.held.size() < n && say)
    say("only " + std::to_string(got.held.size()) + " of " + std::to_string(n) + " worker trees free (the others: " +
        layout::tree_holders(main, family) + "): working with " + std::to_string(got.held.size()));
  return std::move(got.held);
}

WorkerPool::~WorkerPool() {
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

std::string WorkerPool::worker_name(const std::string& name, int slot) { return name + "-w" + std::to_string(slot); }

int WorkerPool::busy() const {
  std::lock_guard<std::mutex> g(mu_);
  int n = static_cast<int>(done_.size());
  for (const auto& w : workers_) n += w->busy ? 1 : 0;
  return n;
}

bool WorkerPool::has_free() const {
  std::lock_guard<std::mutex> g(mu_);
  return std::any_of(workers_.begin(), workers_.end(), [](const auto& w) { return !w->busy; });
}

bool WorkerPool::on_task(int index) const {
  std::lock_guard<std::mutex> g(mu_);
  for (const auto& w : workers_)
    if (w->busy && w->job.task.index == index) return true;
  for (const auto& r : done_)
    if (r.job.task.index == index) return true;
  return false;
}

void WorkerPool::start(const Job& job, const std::string& tip) {
  Worker* free = nullptr;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& w : workers_) {
      if (w->busy && w->job.task.index == job.task.index)
        throw Error("phoenix-loop: task " + job.task.id() + " is already being worked on");
      for (const auto& r : done_)
        if (r.job.task.index == job.task.index)
          throw Error("phoenix-loop: task " + job.task.id() + " has a result not taken yet");
      if (!w->busy && !free) free = w.get();
    }
    if (!free) throw Error("phoenix-loop: no free worker");
  }
  if (free->thread.joinable()) free->thread.join();
  // A reused tree gets one incremental checkout of the tip; anything the
  // last task left there is gone (it reached the queue or was kept).
  free->repo.reset();
  gitx::prepare_worktree(main_, free->tree.name, free->tree.path, tip, layout::state_prefixes());
  free->repo.emplace(gitx::Repo::open(free->tree.path));
  free->tree.repo = &*free->repo;
  {
    std::lock_guard<std::mutex> g(mu_);
    free->busy = true;
    free->job = job;
    free->phase = engine::Phase::kAgent;
    free->pid = 0;
    free->started_at = util::now_iso8601();
  }
  if (changed_) changed_();
  free->thread = std::thread([this, free, job] { run_job(*free, job); });
}

void WorkerPool::run_job(Worker& w, Job job) {
  JobResult r;
  try {
    r = work_(w, job);
  } catch (const std::exception& e) {
    r.end = JobResult::End::kError;
    r.why = e.what();
  }
  r.job = job;
  {
    std::lock_guard<std::mutex> g(mu_);
    w.busy = false;
    w.pid = 0;
    done_.push_back(std::move(r));
  }
  cv_.notify_all();
  if (changed_) changed_();
}

std::vector<JobResult> WorkerPool::take_finished(int ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return !done_.empty(); });
  std::vector<JobResult> out(done_.begin(), done_.end());
  done_.clear();
  return out;
}

void WorkerPool::set_phase(Worker& w, engine::Phase phase, long pid) {
  {
    std::lock_guard<std::mutex> g(mu_);
    w.phase = phase;
    w.pid = pid;
  }
  if (changed_) changed_();
}

Json WorkerPool::to_json() const {
  std::lock_guard<std::mutex> g(mu_);
  Json a = Json::array();
  for (const auto& w : workers_) {
    if (!w->busy) continue;
    a.push_back({{"task", {{"id", w->job.task.id()}, {"title", w->job.task.title}, {"index", w->job.task.index}}},
                 {"phase", w->phase},
                 {"pid", w->pid ? Json(w->pid) : Json(nullptr)},
                 {"worktree", w->tree.path},
                 {"started_at", w->started_at}});
  }
  return a;
}

}  // namespace phoenix::loop
