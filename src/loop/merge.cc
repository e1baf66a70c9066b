// Loop: the merge queue's entries onto the branch; shards' pushes and --merge's fetches (loop/internal.h).
#include "loop/internal.h"

#include <set>

#include "engine/cycle.h"
#include "loop/shard.h"
#include "trace/events.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::loop::internal {

// --- shards and the merge (loop/shard.h) -------------------------------------

// A shard's finished task, as one commit on phoenix/task-<id>, pushed.
void Loop::publish(const Task& task) {
  if (!sharded()) return;
  Pushed p = publish_task(*main_repo, root, opt.remote, task, task_before, repo->head_sha(), tasks_rel, *opt.shard);
  trace.append(trace::event::kLoopTaskPushed, {{"task", task.id()},
                                               {"branch", layout::task_branch(task.id())},
                                               {"commit", p.commit},
                                               {"remote", opt.remote},
                                               {"ok", p.ok},
                                               {"error", p.error}});
  if (p.ok) {
    unpushed.erase(task.id());
    say("pushed " + layout::task_branch(task.id()) + " to " + opt.remote);
  } else {
    unpushed.insert(task.id());
    say("cannot push " + layout::task_branch(task.id()) + " to " + opt.remote + ": " + p.error);
  }
}

// --merge: the loop branch onto the remote after every merge; a failure
// is said and retried at the next one, and the last one decides the exit.
void Loop::push_merged() {
  if (!merging()) return;
  Pushed p = push_branch(root, opt.merge_remote, branch);
  trace.append(trace::event::kLoopBranchPushed,
               {{"branch", branch}, {"remote", opt.merge_remote}, {"ok", p.ok}, {"error", p.error}});
  merge_unpushed = p.ok ? "" : p.error;
  if (!p.ok) say("cannot push " + branch + " to " + opt.merge_remote + ": " + p.error);
}

// --merge: the task branches of the remote, queued behind what a resumed
// run had queued already.
void Loop::queue_fetched() {
  std::set<int> have;
  for (const auto& e : queue) have.insert(e.index);
  Fetched f = fetch_task_branches(*main_repo, root, opt.merge_remote, read_tasks(), have);
  for (const auto& n : f.notes) say(n);
  for (const auto& e : f.entries) {
    repo->write_ref(queue_ref(e.id), e.commit, "phoenix-loop: fetched from " + opt.merge_remote);
    queue.push_back(e);
    trace.append(trace::event::kLoopQueued, to_json(e));
  }
  say("queued " + std::to_string(f.entries.size()) + " task branch(es) from " + opt.merge_remote);
  write_run_file();
  publish_queue();
}

// The ids of the tasks neither ticked nor skipped.
std::vector<std::string> Loop::open_ids() {
  std::vector<std::string> ids;
  for (const auto& t : read_tasks())
    if (!t.done && !skipped.count(t.index)) ids.push_back(t.id());
  return ids;
}

// Entry `at` of the queue onto the loop branch's tip, verified.
Loop::Ending Loop::merge_next(size_t at) {
  QueueEntry e = queue[at];
  std::string saved = util::read_file(wt + "/" + tasks_rel);
  std::vector<Task> tasks = parse_tasks(saved, tasks_rel);
  phase(Phase::kMerging, [&](Json& s) {
    s["task"] = Json{{"id", e.id}, {"title", e.title}, {"index", e.index}, {"total", tasks.size()}};
  });
  std::vector<std::string> keep = own_paths();
  const Task* task = e.index < static_cast<int>(tasks.size()) ? &tasks[e.index] : nullptr;
  Tree t = main_tree();
  // The combined tree is measured with the task's acceptance check too.
  config::Config merge_cfg = with_acceptance(cfg, task);
  t.cfg = &merge_cfg;
  MergeResult m = merge_entry(
      t, e, keep,
      [&] {
        if (task) util::write_file_atomic(wt + "/" + tasks_rel, tick_task(saved, *task, tasks_rel));
      },
      [&] { return measure(t); }, [&] { util::write_file_atomic(wt + "/" + tasks_rel, saved); });
  trace.append(trace::event::kLoopMerge, {{"task", e.id},
                                          {"result", kind_name(m.kind)},
                                          {"duration_ms", m.duration_ms},
                                          {"tip", m.tip},
                                          {"commit", m.commit},
                                          {"tries", e.tries},
                                          {"conflicts", m.conflicts},
                                          {"red", m.measure.red}});
  if (m.kind == MergeResult::Kind::kInterrupted || util::interrupted_signal())
    return after_workers([&] { return interrupted(); });
  if (m.kind == MergeResult::Kind::kSetupFailed) return after_workers([&] { return setup_stopped(m.measure); });
  queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(at));
  if (m.kind == MergeResult::Kind::kMerged) {
    merged(e);
    credit_fixed(m.measure, task_ref(e));
  } else {
    not_merged(e, m);
  }
  write_run_file();
  publish_queue();
  phase(drain ? Phase::kStopped : Phase::kAgent, [&](Json& s) { s["task"] = nullptr; });
  return std::nullopt;
}

void Loop::merged(const QueueEntry& e) {
  sync_branch("merged " + e.id);
  bless();
  repo->delete_ref(queue_ref(e.id));
  escalations_in_row = 0;
  failures.erase(e.index);
  Json done{{"iteration", iteration.load()},
            {"task", {{"id", e.id}, {"title", e.title}, {"index", e.index}}},
            {"head", repo->head_sha()},
            {"merged", true},
            {"attempts", 0}};
  // As the loop without workers says it: a task healed in its worker's
  // tree is done healed, by its fixer, after its attempts.
  if (const TaskRecord* rec = book.find(e.id)) {
    done["attempts"] = rec->attempts;
    for (const auto& a : rec->history)
      if (a.outcome == "healed") {
        done["healed"] = true;
        done["fixer"] = a.who;
      }
  }
  trace.append(trace::event::kLoopTaskDone, done);
  say("merged " + e.id + ": " + e.title);
  push_merged();
}

// A conflict or a red combined tree: the task's work is kept, and the
// task goes back to a worker on the new tip, or is given up on.
void Loop::not_merged(const QueueEntry& e, const MergeResult& m) {
  std::string kept = std::string(layout::kAbandonedPrefix) + "task-" + e.id + "-" + std::to_string(util::now_ms());
  repo->write_ref(kept, e.commit, "phoenix-loop: not merged");
  repo->delete_ref(queue_ref(e.id));
  std::string why = m.kind == MergeResult::Kind::kConflict
                        ? "your last attempt conflicted with work merged meanwhile, in " + util::join_argv(m.conflicts)
                        : "your last attempt was green alone but red combined with work merged meanwhile: " +
                              util::join_argv(m.measure.red);
  for (const auto& r : m.measure.results)
    if (!r.ok) why += "\n  " + r.id + ": " + r.signal;
  tries[e.index] = e.tries;
  if (e.tries < kMergeTries) {
    failures[e.index] = why + "\nStart again from the files as they are now.";
    say(e.id + " not merged (" + kind_name(m.kind) + "): back to a worker on the new tip");
    return;
  }
  std::string incident = merge_incident(layout::incidents_dir(root), *repo, e, m, kept);
  escalated_note(incident);
  skip(task_ref(e), incident, std::string(kind_name(m.kind)) + " after " + std::to_string(e.tries) + " tries");
}

}  // namespace phoenix::loop::internal
