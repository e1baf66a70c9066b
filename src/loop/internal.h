// What loop/'s own files share: `Loop`, one run of phoenix-loop (loop.h
// says what it does), declared here and defined phase by phase, one file
// each (docs/architecture.md, "One loop iteration"). Not for use outside
// loop/ (and its unit tests); include only from .cc files.
#pragma once

#include <atomic>
#include <deque>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "config/config.h"
#include "engine/model_wait.h"
#include "engine/phase.h"
#include "engine/state.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "loop/acceptance.h"
#include "loop/attempts.h"
#include "loop/caps.h"
#include "loop/loop.h"
#include "loop/queue.h"
#include "loop/state.h"
#include "loop/tasks.h"
#include "loop/tree.h"
#include "loop/workers.h"
#include "setup/setup.h"
#include "trace/trace.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/json.h"
#include "util/lock.h"
#include "util/text.h"

namespace phoenix::engine {
struct SessionOptions;
struct RunResult;
}  // namespace phoenix::engine

namespace phoenix::loop::internal {

using engine::Phase;
using util::Json;

inline constexpr const char* kPromise = "<promise>COMPLETE</promise>";
// The most of one check's evidence the next iteration's prompt shows.
inline constexpr size_t kPromptEvidenceBytes = 4000;

// One task as the loop's steps pass it along: the task itself (in prompt
// mode the pseudo-task "prompt", Loop::prompt_task), how the trace and
// loop-state.json name it ({"id", "title", "index"}, with "total" in an
// iteration's), and its title in messages and commit subjects ("iteration
// N" in prompt mode).
struct TaskRef {
  Task task;
  bool prompt = false;  // prompt mode: no tasks file to tick, no task to publish or skip
  Json json;
  std::string title;

  std::string id() const { return task.id(); }
};

struct Loop {
  const Options& opt;
  const config::Config& cfg;
  trace::Trace& trace;
  std::function<void(const std::string&)> say;

  std::string root, wt, branch, wt_name, tasks_rel, prompt_rel;
  // The files copied from the user's checkout into every tree the loop
  // works in (start.cc: find_carried).
  std::vector<std::string> carried;
  std::string kg_ref;                         // the loop branch's known-good (layout::known_good_ref_of)
  TaskBook book{cfg};                         // every task's attempts over the night (loop/attempts.h)
  std::optional<gitx::Repo> repo;             // the worktree's
  std::optional<gitx::Repo> main_repo;        // the user's repository
  std::unique_ptr<util::FileLock> tree_lock;  // the loop's worktree (wt_name), held for the whole run
  StateFile state{layout::loop_state_file(opt.root)};
  int max_iterations = 0;
  std::atomic<int> iteration{0};        // workers count theirs here too
  std::atomic<int> session_retries{0};  // heal attempts over the whole run, every worker's
  int workers = 1;
  std::deque<QueueEntry> queue;  // the merge queue (--workers N)
  int escalations_in_row = 0;
  int no_progress = 0;
  // Rate-limited or unreachable harness runs in a row, and the time waited
  // on them (harness.max_wait_s bounds it when set).
  engine::ModelWait model_wait;
  std::set<int> skipped;
  std::set<std::string> ignored;  // checks red at the baseline, loop.baseline = ignore (runs before known red)
  // The night's known red (loop/known_red.cc): what failed at the baseline
  // and was not healed, by check: the reference every task is judged
  // against (DESIGN.md "known red"). Unset until the baseline is measured.
  // Workers read it from their threads; the loop's thread writes it.
  std::optional<std::map<std::string, engine::FailingSet>> known_red;
  mutable std::mutex known_mu;
  std::map<std::string, int> idle;  // per task id: agent runs in a row that changed nothing
  std::string last_failure, last_incident;
  // Caps, acceptance checks, webhooks (loop/caps.h, loop/acceptance.h, loop/notify.h).
  Caps caps{CapLimits{opt.max_cost_usd ? opt.max_cost_usd : cfg.loop.max_cost_usd,
                      opt.max_hours ? opt.max_hours : cfg.loop.max_hours}};
  mutable std::mutex caps_mu;  // workers' agent runs and heals add to the caps from their threads
  Json caps_figures() const {
    std::lock_guard<std::mutex> g(caps_mu);
    return caps.figures();
  }
  double caps_seconds_left() const {
    std::lock_guard<std::mutex> g(caps_mu);
    return caps.seconds_left();
  }
  std::optional<config::Config> task_cfg;  // phoenix.json's checks + the current task's acceptance check
  // --shard: the tasks of this shard, the tip before the current task, the
  // task branches that could not be pushed. --merge: why the branch is not
  // on the remote yet ("" when it is).
  std::set<int> mine;
  std::string task_before;
  std::set<std::string> unpushed;
  std::string merge_unpushed;
  bool sharded() const { return opt.shard.has_value(); }
  bool merging() const { return !opt.merge_remote.empty(); }

  Loop(const Options& o, const config::Config& c, trace::Trace& t, std::function<void(const std::string&)> s)
      : opt(o), cfg(c), trace(t), say(std::move(s)), root(o.root) {
    if (opt.deadline_ms) deadline_from_start_ms = *opt.deadline_ms - util::now_ms();
  }

  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  long long deadline_from_start_ms = 0;

  // What the loop measures and heals with now.
  const config::Config& checks_now() const { return task_cfg ? *task_cfg : cfg; }

  bool prompt_mode() const { return !prompt_rel.empty(); }

  Tree main_tree() { return Tree{wt, wt_name, &*repo}; }

  // What a heal of the loop's came to (not engine/cycle_impl.h's Heal, one issue's heal in progress).
  struct HealOutcome {
    int exit_code = 0;
    std::string incident;  // in <root>/incidents, when the engine escalated (the baseline's heal)
    // A task's heal: its failed attempts, who healed it, and whether a
    // proposal only undid the task's change.
    std::vector<TaskAttempt> tried;
    std::string healed_by;
    std::string why_stopped;
    bool undid_change = false;
    std::string model_unusable;  // the engine's one line when the model could not be used
  };

  // A heal of a task's red attempt: the inner cycle mends the agent's
  // change, never history. Bisect does not run (its culprit would be the
  // attempt itself); the journal replays only fixes that kept a change; a
  // proposal that brings the tree back to `start` is a failed attempt; at
  // most `max_attempts` are spent; the tasks file is protected; the loop,
  // not the engine, writes the note and rolls back.
  struct TaskHeal {
    int max_attempts = 0;
    std::string start;   // the commit the task started from
    std::string change;  // the task and the attempt's diff, shown to the harness
    // The red measurement of the attempt, committed as `attempt`: the
    // heal starts from it (and its verdicts), not from a run of its own.
    const Measure* measured = nullptr;
    std::string attempt;
  };

  struct AgentRun {
    agent::Classification cls;
    std::string output;
    std::string program;
    long long duration_ms = 0;
    bool changed = false;
    // Files it wrote in a checkout not its own (kept out; setup/guard.h):
    // the attempt fails, telling it why.
    std::vector<std::string> wrote_elsewhere;
  };

  // What a step decided: an exit code ends the loop; nothing goes on.
  using Ending = std::optional<int>;

  // --workers N
  //
  // The loop's thread hands open tasks to the worker pool (loop/workers.h),
  // takes what the workers return, and alone moves the loop branch: one
  // queued task at a time through the verified merge queue (loop/queue.h).

  struct Drain {  // why the run winds down: no new task starts, the queue empties
    int code = kExitRed;
    Phase phase = Phase::kStopped;
    std::string why;
  };
  std::optional<Drain> drain;
  std::map<int, int> tries;             // failed merges (and unhealed runs) per task index
  std::map<int, std::string> failures;  // per task: why its last run did not reach the branch
  std::unique_ptr<WorkerPool> pool;     // last: destroyed (threads joined) first

  bool queued(int index) const {
    return std::any_of(queue.begin(), queue.end(), [&](const QueueEntry& e) { return e.index == index; });
  }

  std::vector<Task> read_tasks() { return parse_tasks(util::read_file(wt + "/" + tasks_rel), tasks_rel); }

  // --- loop.cc: the loop's state file and run file, its clock, its webhooks (and the public functions of loop.h)
  std::optional<long long> ms_to_deadline() const;
  void phase(Phase p, const std::function<void(Json&)>& more = {}, util::Sync sync = util::Sync::kDurable);
  void sync_branch(const std::string& why);
  void write_run_file();
  Json queue_json() const;
  void notify(const std::string& event, const std::string& incident, const std::string& summary = "");
  double max_wait_s() const;
  void nap(long long ms);

  // --- resume.cc: --resume: what an earlier run left
  Json read_earlier_run(gitx::Repo& main);
  void restore_counters(const Json& prev);
  void resume_workers(gitx::Repo& main, const Json& prev);
  void take_tree(gitx::Repo& main, const Json& prev, const std::string& start);
  void drop_merged();

  // --- start.cc: the start: the task source, the branch and the worktree
  void refuse_bad_shard_or_merge(gitx::Repo& main);
  void refuse_bad_tasks_file();
  void find_carried(const std::string& src);
  void carry_into(const std::string& tree) const;
  void setup();

  // --- measure.cc: the checks measured in a tree
  setup::Result prepare_environment(const Tree& t);
  Measure measure();
  Measure measure(const Tree& t);
  void bless();
  RedFacts red_facts(const Measure& m) const;
  static RedFacts red_facts(const Measure& m, const config::Config& tc);

  // --- known_red.cc: verdicts per test, the night's known red, what a task also fixed
  std::optional<std::map<std::string, engine::FailingSet>> reference_now() const;
  engine::Verdict judge(const checks::CheckSpec& c, const checks::SenseResult& r, const Tree& t,
                        const std::string& tree_id);
  void set_known_red(const Measure& m, const std::string& why);
  void credit_fixed(const Measure& m, const TaskRef& task);
  Json known_red_json() const;
  std::string known_red_text() const;
  void restore_known_red(const Json& run);
  static std::string failure_text(const Measure& m, size_t max_evidence);

  // --- heal.cc: the inner cycle (engine::run_session) on a red tree
  HealOutcome heal(const std::vector<std::string>& red);
  HealOutcome heal(const Tree& t, const std::vector<std::string>& red, bool worker, const TaskHeal* task);
  engine::SessionOptions heal_options(const std::vector<std::string>& red, bool worker, const TaskHeal* task,
                                      const config::Config& base) const;
  config::Config task_heal_config(const config::Config& base) const;
  void heal_state(std::optional<engine::State> st, const Json& ev, const config::Config& tc);
  HealOutcome heal_outcome(const engine::RunResult& r, const std::vector<TaskAttempt>& repeats);
  static std::string change_text(const std::string& title, const std::string& diff);

  // --- agent_run.cc: the prompt and one harness run
  std::string prompt_for(const Task* task, const std::vector<Task>& tasks);
  std::string prompt_for(const Task* task, const std::vector<Task>& tasks, const std::string& failure);
  std::vector<std::string> pinned_files(const Task* task, const std::vector<Task>& tasks) const;
  bool unpin(const PinnedFiles& pins);
  std::vector<std::string> own_paths() const;
  AgentRun run_agent(const std::string& prompt);
  AgentRun run_agent(const std::string& prompt, const Tree& t, const std::function<void(long)>& on_pid);
  static bool promised(const std::string& output, const std::string& prompt);

  // --- driver.cc: the one-task-at-a-time driver: the baseline, the stops, the end of the tasks
  int run();
  std::set<int> not_to_start(const std::vector<Task>& tasks);
  Ending over_cap();
  void skip_blocked(const std::vector<Task>& tasks);
  Ending baseline();
  Ending stop_requested();
  int all_ticked();
  static std::string cause_of(const AgentRun& a);
  static std::string quota_line(const AgentRun& a);
  Ending wait_for_model(const AgentRun& a);
  Ending no_change(const AgentRun& a, const std::string& prompt, const TaskRef& t);
  static std::string idle_why(int runs);

  // --- iteration.cc: one iteration: the agent, the checks, the task landed or its red attempt healed
  Ending iterate(const Task* task, const std::vector<Task>& tasks);
  TaskRef iteration_task(const Task* task, const std::vector<Task>& tasks) const;
  Task prompt_task() const;
  void land(const TaskRef& t, const std::vector<std::string>& attempts, const std::string& healed_by);
  void agent_phase(const TaskRef& t);
  Ending landed_green(const TaskRef& t, bool promised_done, trace::Trace::Batch& batch);
  Ending on_red(const Measure& m, const TaskRef& t);
  struct RedAttempt {
    RedFacts facts;
    std::string diff;
    Verdict verdict = Verdict::kGoOn;
  };
  RedAttempt keep_red_attempt(const Measure& m, const TaskRef& t);
  Ending attempt_failed(const TaskRef& t);
  void task_state(const std::string& id, const RedFacts& facts);

  // --- bite.cc: tests that bite: a task's new tests measured without its code (engine/bite.h)
  std::string tests_bite_why(const Tree& t, const std::string& base, const TaskRef& task);
  RedFacts toothless_facts(const std::string& why) const;
  Ending toothless_attempt(const TaskRef& t, const std::string& why);
  Ending refused_attempt(const TaskRef& t, const RedFacts& facts, const std::string& told,
                         const std::string& ref_message, const Json& extra);

  // --- own_tree.cc: an agent writes only its own tree (setup/guard.h)
  RedFacts elsewhere_facts(const std::vector<std::string>& lines) const;
  static std::string elsewhere_told(const std::vector<std::string>& lines);
  Ending wrote_elsewhere_attempt(const TaskRef& t, const std::vector<std::string>& lines);
  // A worker's attempt refused whatever its checks say (tests that do not
  // bite, writes outside its tree): counted by the loop's thread like a red one.
  JobResult refused_in_worker(JobResult& r, const Tree& t, const RedFacts& facts, const std::string& why,
                              const std::string& ref_message, const Json& extra);

  // --- end.cc: the end of the run and escalations
  int finish(int code, Phase phase_in, const std::string& why_in);
  int setup_stopped(const Measure& m);
  int interrupted();
  std::string session_cap_why() const;
  Ending give_up_task(const TaskRef& t, const std::string& why, bool session_cap);
  // A task given up on: its note, and why the run ends ("": the task is skipped).
  struct TaskEscalation {
    std::string incident;
    std::string end_why;
  };
  TaskEscalation escalate_task(const TaskRef& t, const std::string& why, const std::string& to, bool own_tree,
                               bool session_cap, const std::string& summary);
  std::string task_incident(const TaskRecord& rec, const std::string& why, const std::string& to);
  void escalated_note(const std::string& incident, const std::string& summary = "", bool in_phase = false);

  // --- workers_driver.cc: --workers N: the loop's thread hands tasks to the pool and takes what comes back
  void wind_down(int code, Phase phase_name, const std::string& why);
  void publish_queue();
  int run_workers();
  std::optional<size_t> ready_entry();
  void drop_blocked();
  int after_workers(const std::function<int()>& end);
  void stop_reason();
  void assign();
  static bool after_done(const Task& t, const std::vector<Task>& tasks);
  bool cap_reached();
  void on_job(const JobResult& r);
  void enqueue(const JobResult& r);
  void worker_red(const JobResult& r);
  static TaskRef task_ref(const Task& t);
  static TaskRef task_ref(const QueueEntry& e);
  void skip(const TaskRef& t, const std::string& incident, const std::string& why);

  // --- worker_job.cc: one task on a worker's thread, in its own tree
  JobResult work(WorkerPool::Worker& w, const Job& job);
  JobResult healed_in_worker(JobResult& r, const Tree& t, const Measure& m, int left);
  static JobResult ended(JobResult& r, JobResult::End end);
  static JobResult stop(JobResult& r, Phase phase_name, const std::string& why);

  // --- merge.cc: the merge queue's entries onto the branch; shards' pushes and --merge's fetches
  void publish(const Task& task);
  void push_merged();
  void queue_fetched();
  std::vector<std::string> open_ids();
  Ending merge_next(size_t at);
  void merged(const QueueEntry& e);
  void not_merged(const QueueEntry& e, const MergeResult& m);
};

}  // namespace phoenix::loop::internal
