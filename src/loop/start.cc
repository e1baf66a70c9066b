// Loop: the start: the task source, the branch and the worktree (loop/internal.h).
#include "loop/internal.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "engine/cycle.h"
#include "gitx/worktree.h"
#include "loop/shard.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/path.h"
#include "util/text.h"

namespace phoenix::loop::internal {

namespace fs = std::filesystem;

// --shard and --merge need a tasks file and a reachable remote; a shard
// works one task at a time (more machines are more shards).
void Loop::refuse_bad_shard_or_merge(gitx::Repo& main) {
  if (!sharded() && !merging()) return;
  const std::string flag = sharded() ? "--shard " + opt.shard->text() : "--merge " + opt.merge_remote;
  if (sharded() && merging()) throw UsageError("phoenix-loop: --shard and --merge exclude each other");
  if (prompt_mode()) throw UsageError("phoenix-loop: " + flag + " needs a tasks file, not a prompt file");
  if (sharded() && workers > 1)
    throw UsageError("phoenix-loop: " + flag + " works on one task at a time: run more shards instead of --workers " +
                     std::to_string(workers));
  check_remote(main.workdir(), sharded() ? opt.remote : opt.merge_remote);
}

// A bad task source is refused before any branch or worktree is made:
// one outside the repository (the loop ticks it in a commit), one that is
// not there, a tasks file that does not parse. An absolute path inside
// the repository is taken as the path relative to its top.
void Loop::refuse_bad_tasks_file() {
  std::string& src = prompt_mode() ? prompt_rel : tasks_rel;
  const std::string flag = prompt_mode() ? "--prompt" : "--tasks";
  const std::string top = util::normalize_path(root);
  const std::string abs = util::normalize_path(fs::path(src).is_absolute() ? src : root + "/" + src);
  if (!util::starts_with(abs, top + "/"))
    throw UsageError("phoenix-loop: " + flag + " " + src + ": outside the repository " + root +
                     " (the loop ticks it in its commits): copy it into the repository");
  src = abs.substr(top.size() + 1);
  if (!opt.resume && !util::path_exists(abs))
    throw UsageError("phoenix-loop: " + flag + " " + src + ": not found in " + root);
  if (!tasks_rel.empty() && util::path_exists(abs)) parse_tasks(util::read_file(abs), tasks_rel);
}

// The loop's tree, locked and checked out at `start` (a crashed
// iteration's leftovers kept under refs/phoenix/abandoned/ first).
void Loop::take_tree(gitx::Repo& main, const Json& prev, const std::string& start) {
  // The loop's tree is its own for the whole run, as bisect's and the
  // hook's trees are theirs: a second loop of the same branch (--resume
  // from another checkout of the repository) never moves it.
  if (!wt_name.empty()) {
    tree_lock = std::make_unique<util::FileLock>(layout::tree_lock(main, wt_name), 0, "the loop's worktree " + wt_name);
    if (!tree_lock->taken_over().empty()) say("phoenix-loop: " + tree_lock->taken_over());
  }
  bool have_wt = false;
  for (const auto& w : main.worktree_list())
    if (w.name == wt_name) have_wt = w.valid && util::normalize_path(w.path) == util::normalize_path(wt);
  // Not there, or not trustworthy: made (or remade) by gitx's persistent
  // worktrees, which reuse a healthy one with an incremental checkout.
  if (opt.resume) resume_workers(main, prev);
  if (!have_wt) gitx::prepare_worktree(main, wt_name, wt, start, layout::state_prefixes());
  repo.emplace(gitx::Repo::open(wt));
  // The worktree lives as long as the loop: its status asks the kernel
  // what was written instead of scanning every file (gitx/watch.h).
  // PHOENIX_WATCH=0 scans every time, as git's core.fsmonitor=false does.
  if (const char* w = std::getenv("PHOENIX_WATCH"); !w || std::string_view(w) != "0") repo->watch_work_tree();
  if (have_wt) {
    // Resume after a crash: whatever the dead iteration left is kept, then dropped.
    if (!repo->is_clean(own_paths())) {
      std::string wip =
          repo->snapshot_workdir("phoenix-loop: left by an interrupted iteration", true, layout::state_prefixes());
      repo->write_ref(std::string(layout::kAbandonedPrefix) + "loop-" + std::to_string(util::now_ms()), wip,
                      "phoenix-loop: resume");
    }
    repo->reset_hard(start, true, own_paths());
  }
}

void Loop::setup() {
  tasks_rel = opt.tasks.empty() && opt.prompt.empty() ? cfg.loop.tasks : opt.tasks;
  prompt_rel = opt.tasks.empty() && opt.prompt.empty() ? cfg.loop.prompt : opt.prompt;
  if (!tasks_rel.empty() && !prompt_rel.empty())
    throw UsageError("phoenix-loop: give a tasks file or a prompt file, not both");
  if (tasks_rel.empty() && prompt_rel.empty())
    throw UsageError("phoenix-loop: no tasks: pass --tasks FILE or --prompt FILE (or set loop.tasks / loop.prompt)");
  if (cfg.checks.empty()) throw ConfigError("phoenix-loop: phoenix.json has no checks: nothing could tell a task done");
  if (cfg.harness.command.empty() && cfg.harness.preset.empty())
    throw ConfigError("phoenix-loop: no harness configured in phoenix.json");
  max_iterations = opt.max_iterations.value_or(cfg.loop.max_iterations);
  refuse_bad_tasks_file();

  main_repo.emplace(gitx::Repo::discover(root));
  gitx::Repo& main = *main_repo;
  workers = opt.workers > 0 ? opt.workers : cfg.loop.workers;
  if (main.head_sha().empty()) throw UsageError("phoenix-loop: the repository has no commits yet");

  Json prev;
  if (opt.resume) {
    prev = read_earlier_run(main);
  } else {
    branch = !opt.branch.empty()        ? opt.branch
             : sharded()                ? layout::shard_branch(opt.shard->index, opt.shard->count)
             : !cfg.loop.branch.empty() ? cfg.loop.branch
                                        : default_branch(util::now_ms());
    std::string tail = branch.substr(branch.rfind('/') + 1);
    wt_name = "loop-" + (util::starts_with(tail, "loop-") ? tail.substr(5) : tail);
    wt = layout::worktree_path(main, wt_name);
  }
  if (workers > 1 && prompt_mode())
    throw UsageError("phoenix-loop: --workers " + std::to_string(workers) +
                     " needs a tasks file: a prompt file is one task, run again and again");
  refuse_bad_shard_or_merge(main);
  for (const std::string& line : layout::migrate_legacy_trees(main)) say(line);
  std::string ref = "refs/heads/" + branch;
  kg_ref = layout::known_good_ref_of(branch);
  std::optional<std::string> tip = main.read_ref(ref);
  if (!opt.resume && tip)
    throw UsageError("phoenix-loop: branch " + branch + " exists already: pass --resume to carry on, or --branch NAME");
  if (opt.resume && !tip) throw UsageError("phoenix-loop: --resume: branch " + branch + " is gone");
  std::string start = tip ? *tip : main.head_sha();

  take_tree(main, prev, start);
  repo->write_ref(ref, repo->head_sha(), "phoenix-loop: start");

  // The task source lives in the worktree, committed with the ticks.
  std::string src = prompt_mode() ? prompt_rel : tasks_rel;
  if (!util::path_exists(wt + "/" + src) && !util::path_exists(root + "/" + src))
    throw UsageError("phoenix-loop: " + src + " not found in " + root);
  find_carried(src);
  carry_into(wt);

  if (opt.resume && prev.is_object()) restore_counters(prev);
  state.update([&](Json& s) {
    s["max_iterations"] = max_iterations;
    s["deadline"] = opt.deadline_text.empty() ? Json(nullptr) : Json(opt.deadline_text);
    if (!last_incident.empty()) s["last_incident"] = last_incident;
  });
  write_run_file();
  trace.append(trace::event::kLoopStart, {{"branch", branch},
                                          {"worktree", wt},
                                          {"resume", opt.resume},
                                          {"mode", prompt_mode() ? "prompt" : "tasks"},
                                          {"source", src},
                                          {"max_iterations", max_iterations},
                                          {"shard", sharded() ? Json(opt.shard->text()) : Json(nullptr)},
                                          {"merge", merging() ? Json(opt.merge_remote) : Json(nullptr)}});
  say("working on branch " + branch + " in " + wt);
}

// The files the night needs that the branch may not hold: the task source
// and the scripts its tasks' acceptance checks run, as the user keeps them
// in their checkout (often not committed). Each is copied into every tree
// the loop works in where that tree lacks it, and survives every reset and
// rollback there (own_paths()).
void Loop::find_carried(const std::string& src) {
  carried = {src};
  if (prompt_mode()) return;
  const std::string from = util::path_exists(wt + "/" + src) ? wt : root;
  for (const Task& t : parse_tasks(util::read_file(from + "/" + src), src))
    for (const std::string& p : acceptance_scripts(t, root))
      if (std::find(carried.begin(), carried.end(), p) == carried.end()) carried.push_back(p);
}

void Loop::carry_into(const std::string& tree) const {
  for (const std::string& rel : carried) {
    if (util::path_exists(tree + "/" + rel) || !util::path_exists(root + "/" + rel)) continue;
    fs::create_directories(fs::path(tree + "/" + rel).parent_path());
    const auto perms = fs::status(root + "/" + rel).permissions();
    util::write_file_atomic(tree + "/" + rel, util::read_file(root + "/" + rel),
                            static_cast<unsigned>(perms & fs::perms::mask));
  }
}

}  // namespace phoenix::loop::internal
