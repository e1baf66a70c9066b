// Loop: --resume: what an earlier run left (loop/internal.h).
#include "loop/internal.h"

#include <signal.h>

#include "engine/cycle.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/path.h"
#include "util/text.h"

namespace phoenix::loop::internal {

// --- setup -----------------------------------------------------------------

// --resume: what the run file and the state file of the earlier run say.
// Returns the earlier state (null when unreadable: it costs the counters,
// not the work; the branch holds that).
Json Loop::read_earlier_run(gitx::Repo& main) {
  if (!util::path_exists(layout::loop_run_file(root)))
    throw UsageError("phoenix-loop: --resume: no earlier loop here (" + layout::loop_run_file(root) + " is missing)");
  Json run = util::parse_json(util::read_file(layout::loop_run_file(root)), layout::loop_run_file(root));
  branch = run.value("branch", "");
  wt_name = run.value("worktree_name", "");
  // Where this version keeps it; a loop started by an earlier version
  // had it inside the work tree, and its worktree is remade here.
  wt = wt_name.empty() ? run.value("worktree", "") : layout::worktree_path(main, wt_name);
  if (opt.tasks.empty() && opt.prompt.empty()) {
    tasks_rel = run.value("tasks", "");
    prompt_rel = run.value("prompt", "");
  }
  for (int i : run.value("skipped", std::vector<int>{})) skipped.insert(i);
  for (const auto& c : run.value("ignored", std::vector<std::string>{})) ignored.insert(c);
  restore_known_red(run);
  if (opt.workers == 0) workers = run.value("workers", workers);
  for (const auto& e : run.value("queue", Json::array())) queue.push_back(queue_entry_from_json(e));
  Json prev;
  if (util::path_exists(layout::loop_state_file(root))) {
    try {
      prev = util::parse_json(util::read_file(layout::loop_state_file(root)), layout::loop_state_file(root));
    } catch (const Error&) {
      // An unreadable state file costs the counters, not the work: the branch holds that.
    }
  }
  return prev;
}

// --resume: the counters (and what was spent against the caps) carry on.
void Loop::restore_counters(const Json& prev) {
  iteration = prev.value("iteration", 0);
  session_retries = prev.value("session_retries", 0);
  if (prev.contains("caps")) caps.restore(prev["caps"]);
  if (prev.contains("last_incident") && prev["last_incident"].is_string()) last_incident = prev["last_incident"];
}

// --resume: agents a killed loop left running are stopped, and whatever
// they left in the workers' trees is kept under refs/phoenix/abandoned/.
void Loop::resume_workers(gitx::Repo& main, const Json& prev) {
  if (!prev.is_object() || !prev.contains("workers") || !prev["workers"].is_array()) return;
  for (const auto& w : prev["workers"]) {
    long pid = w.value("pid", Json(nullptr)).is_number() ? w["pid"].get<long>() : 0;
    if (pid > 1 && ::getpgid(static_cast<pid_t>(pid)) == pid) ::kill(-static_cast<pid_t>(pid), SIGKILL);
    std::string path = w.value("worktree", "");
    if (path.empty() || !util::path_exists(path + "/.git")) continue;
    try {
      gitx::Repo t = gitx::Repo::open(path);
      if (t.is_clean(layout::keep_prefixes())) continue;
      std::string wip =
          t.snapshot_workdir("phoenix-loop: left by an interrupted worker", true, layout::state_prefixes());
      main.write_ref(std::string(layout::kAbandonedPrefix) + "loop-worker-" + std::to_string(util::now_ms()), wip,
                     "phoenix-loop: resume");
    } catch (const Error& e) { say("resume: cannot keep what a worker left in " + path + ": " + e.what()); }
  }
}

// A resumed run's entries whose task is ticked on the branch were merged
// before the crash: dropped, never merged twice.
void Loop::drop_merged() {
  std::vector<Task> tasks = read_tasks();
  for (auto it = queue.begin(); it != queue.end();) {
    bool done = it->index < static_cast<int>(tasks.size()) && tasks[it->index].done;
    if (!done) {
      tries[it->index] = it->tries - 1;
      ++it;
      continue;
    }
    repo->delete_ref(queue_ref(it->id));
    trace.append(trace::event::kLoopQueueDropped, {{"task", it->id}, {"why", "ticked on the branch already"}});
    it = queue.erase(it);
  }
  write_run_file();
  publish_queue();
}

}  // namespace phoenix::loop::internal
