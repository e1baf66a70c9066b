// The worker pool of phoenix-loop --workers N.
//
// Up to N tasks are worked on at once, each by one worker: a thread of the
// loop with a persistent worktree of its own (layout::worktree_path,
// "<loop worktree name>-w<slot>", set up by phoenix.json's setup steps with
// a stamp of its own), moved to the loop branch's tip when the worker takes
// a task. There the worker runs the agent (its own process group), measures
// every check and runs its own heal cycle with its own budget; what it
// returns goes to the loop's thread, which alone moves the loop branch
// (through the merge queue, loop/queue.h), ticks tasks and decides when the
// run ends. The session cap and the circuit breaker count over the whole run.
//
// Each worker's tree is locked (layout/trees.h) for the pool's life: a
// tree another run holds (a loop of the same name elsewhere, a leftover
// process) is never moved; the pool takes the next free name
// ("<name>-w<N+1>" ..., up to kSpareWorkerTrees beyond N), waits up to
// kWorkerTreeWaitS saying for whom when none is free, and works with
// fewer workers (saying so) when only some are.
//
// The pool hands a task to at most one worker (start() refuses a task one
// is on), so no two workers ever work on the same task. Its slots are what
// loop-state.json's "workers" lists: task, phase, pid (the agent's, while
// it runs), worktree, started_at.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/phase.h"
#include "gitx/repo.h"
#include "layout/trees.h"
#include "loop/attempts.h"
#include "loop/tasks.h"
#include "loop/tree.h"
#include "util/json.h"

namespace phoenix::loop {

// One task handed to a worker.
struct Job {
  Task task;
  int tries = 1;                        // merge attempts including this run
  std::string prompt;                   // the agent's prompt, made by the loop's thread
  int run = 1;                          // the agent's runs on this task, this one included (names its attempt ref)
  int attempts = 0;                     // the task's attempts so far (loop/attempts.h), against its budget
  std::vector<std::string> signatures;  // of its red iterations so far
};

// How a worker's run of a task ended.
struct JobResult {
  enum class End {
    kQueued,       // green in the worker's tree: commit (on base) goes to the merge queue
    kNoChange,     // the agent changed nothing
    kRed,          // red in the worker's tree and not healed: the attempt (kept under its ref) failed
    kWait,         // rate-limited or unreachable model: waited, the task goes back
    kStop,         // the run must stop (quota, harness unavailable, setup failed): why
    kInterrupted,  // SIGINT / SIGTERM
    kError         // an unexpected error in the worker: why; the task goes back
  };
  Job job;
  End end = End::kError;
  std::string base, commit;  // kQueued
  std::string why;           // kStop, kError; also a failure to tell the next run
  // A red attempt (kRed, or kQueued after a heal): its ref, what was red,
  // the agent's diff, what the heal tried and who healed it.
  std::string attempt_ref;
  RedFacts red;
  std::string diff;
  std::vector<TaskAttempt> tried;
  std::string healed_by;
  // A refused attempt's own facts for its loop.attempt event
  // ({"tests_bite": false}, {"wrote_elsewhere": [...]}).
  util::Json extra = util::Json::object();
  int code = 0;                                   // kStop: the exit code
  engine::Phase phase = engine::Phase::kStopped;  // kStop: the phase the run ends in
};

inline constexpr size_t kSpareWorkerTrees = 4;
inline constexpr int kWorkerTreeWaitS = 300;

class WorkerPool {
 public:
  struct Worker {
    int slot = 0;
    Tree tree;
    std::unique_ptr<util::FileLock> lock;  // on the tree, for the pool's life
    std::optional<gitx::Repo> repo;
    bool busy = false;
    Job job;
    engine::Phase phase = engine::Phase::kAgent;
    long pid = 0;
    std::string started_at;
    std::thread thread;
  };
  using Work = std::function<JobResult(Worker&, const Job&)>;

  // `name` is the loop worktree's name; workers' trees are name-w1..wN
  // (the next free names when some are held). `changed` is called (on any
  // thread, no lock held) after every change of what to_json() returns;
  // `say`, with what a person waiting should read. Throws Error when no
  // tree was free in time.
  WorkerPool(int n, gitx::Repo& main, std::string name, Work work, std::function<void()> changed,
             std::function<void(const std::string&)> say = {});
  ~WorkerPool();  // joins every thread
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }
  // Workers on a job, plus finished jobs whose result take_finished() has
  // not returned yet: a job ends between two of the loop thread's calls, and
  // until its result is taken its task is neither free nor done.
  int busy() const;
  bool has_free() const;
  // A worker is on task `index`, or its result waits to be taken.
  bool on_task(int index) const;
  // Moves a free worker's tree to `tip` (on the caller's thread: worktree
  // bookkeeping is not shared with other threads), then runs the job on
  // the worker's thread. Throws Error when none is free or a worker is
  // already on that task.
  void start(const Job& job, const std::string& tip);
  // The results of finished jobs, waiting up to `ms` for one.
  std::vector<JobResult> take_finished(int ms);
  // A worker's phase (and the agent's pid, 0 for none).
  void set_phase(Worker& w, engine::Phase phase, long pid = 0);
  // loop-state.json's "workers".
  util::Json to_json() const;
  // The worktree names a pool of `n` workers of loop worktree `name` uses.
  static std::string worker_name(const std::string& name, int slot);

 private:
  void run_job(Worker& w, Job job);
  static std::vector<layout::HeldTree> take_worker_trees(const gitx::Repo& main, const std::string& name, size_t n,
                                                         const std::function<void(const std::string&)>& say);

  gitx::Repo& main_;
  std::string name_;
  Work work_;
  std::function<void()> changed_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::deque<JobResult> done_;
};

}  // namespace phoenix::loop
