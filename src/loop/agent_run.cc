// Loop: the prompt and one harness run (loop/internal.h).
#include "loop/internal.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "setup/guard.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/path.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::loop::internal {

namespace fs = std::filesystem;

// --- prompt ----------------------------------------------------------------

std::string Loop::prompt_for(const Task* task, const std::vector<Task>& tasks) {
  return prompt_for(task, tasks, last_failure);
}

std::string Loop::prompt_for(const Task* task, const std::vector<Task>& tasks, const std::string& failure) {
  std::string tmpl;
  std::string mine = layout::task_prompt_file(wt);
  if (util::path_exists(mine)) tmpl = util::read_file(mine);
  else if (util::path_exists(opt.templates_dir + "/prompt-task.md"))
    tmpl = util::read_file(opt.templates_dir + "/prompt-task.md");
  else throw Error("phoenix-loop: cannot find prompt-task.md in " + opt.templates_dir);
  std::string progress;
  for (const auto& t : tasks)
    if (t.done) progress += "- done: " + t.title + "\n";
    else if (skipped.count(t.index)) progress += "- skipped (escalated): " + t.title + "\n";
  if (progress.empty()) progress = "(nothing yet)\n";
  std::string task_text;
  if (task) task_text = task->title;
  else task_text = util::read_file(wt + "/" + prompt_rel);
  std::map<std::string, std::string> v{
      {"task", task_text},
      {"tasks_file", prompt_mode() ? prompt_rel : tasks_rel},
      {"progress", progress},
      {"iteration", std::to_string(iteration)},
      {"last_failure", failure.empty() ? "(none)" : failure},
      {"last_incident", last_incident.empty() ? "(none)" : last_incident},
      {"known_red", known_red_text().empty() ? "(none)" : known_red_text()},
  };
  return agent::render_prompt(tmpl, v);
}

// --- one harness run -------------------------------------------------------

// The files only the loop may change while a task runs: the tasks file and
// the scripts the open tasks' acceptance checks run (loop/acceptance.h).
std::vector<std::string> Loop::pinned_files(const Task* task, const std::vector<Task>& tasks) const {
  if (!task) return {};
  std::vector<std::string> out{tasks_rel};
  for (const auto& t : tasks)
    for (const auto& p : t.done ? std::vector<std::string>{} : acceptance_scripts(t, wt))
      if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  return out;
}

// Puts back what the agent changed of them; true when it changed any.
bool Loop::unpin(const PinnedFiles& pins) {
  std::vector<std::string> changed = pins.restore();
  if (changed.empty()) return false;
  trace.append(trace::event::kLoopPinned, {{"iteration", iteration.load()}, {"files", changed}});
  say("the agent changed " + util::join_argv(changed) + ", which only the loop may change: put back");
  return true;
}

// Untracked run-time state and the task source (with the acceptance
// scripts carried beside it) never count as the agent's progress, and
// survive every reset of the loop's trees.
std::vector<std::string> Loop::own_paths() const {
  std::vector<std::string> own = layout::keep_prefixes();
  own.push_back(prompt_mode() ? prompt_rel : tasks_rel);
  for (const std::string& p : carried)
    if (std::find(own.begin(), own.end(), p) == own.end()) own.push_back(p);
  return own;
}

Loop::AgentRun Loop::run_agent(const std::string& prompt) { return run_agent(prompt, main_tree(), {}); }

// With `on_pid` (a worker), the agent's pid is told as it starts.
Loop::AgentRun Loop::run_agent(const std::string& prompt, const Tree& t, const std::function<void(long)>& on_pid) {
  std::string pfile = layout::loop_prompt_file(t.path);
  if (on_pid) fs::create_directories(layout::state_dir(t.path));
  agent::Invocation inv = agent::plan_invocation(cfg.harness, prompt, [&](const std::string& content) {
    util::write_file_atomic(pfile, content, 0644, util::Sync::kAtomic);  // read by the agent only
    return pfile;
  });
  util::ProcessOptions po;
  po.argv = inv.argv;
  po.cwd = t.path;
  po.env = inv.env;
  po.env["PHOENIX_LOOP"] = "1";
  po.unset_env = agent::git_location_env();
  po.stdin_data = inv.stdin_data;
  po.timeout_s = cfg.loop.iteration_timeout_s;
  if (auto left_ms = ms_to_deadline()) {
    double left = static_cast<double>(*left_ms) / 1000.0;
    po.timeout_s = std::max(1.0, std::min(po.timeout_s, left));
  }
  po.timeout_s = std::max(1.0, std::min(po.timeout_s, caps_seconds_left()));  // --max-hours
  util::ProcessResult r;
  std::vector<std::string> elsewhere;
  {
    // The agent writes only its own tree: the user's repository and
    // checkouts stay as they were (setup/guard.h). The loop's branch and
    // Phoenix's refs are the loop's own.
    const setup::Guard guard(t.path, {"refs/heads/" + branch});
    if (on_pid) {
      util::Subprocess proc(po);
      on_pid(proc.pid());
      r = proc.wait();
    } else {
      r = util::run_process(po);
    }
    guard.restore("the agent", &trace, &elsewhere);
  }
  AgentRun a;
  a.wrote_elsewhere = std::move(elsewhere);
  a.output = r.output;
  a.duration_ms = r.duration_ms;
  // Progress is what the agent changed, never the loop's own files: the
  // tasks or prompt file (ticked by the loop, maybe not even committed).
  a.changed = !t.repo->is_clean(own_paths());
  a.program = agent::program_name(inv.argv);
  const agent::RunFacts f = agent::run_facts(a.program, r, po.timeout_s, prompt, a.changed ? 1 : 0);
  a.cls = agent::classify_run(f, util::now_ms());
  {
    std::lock_guard<std::mutex> g(caps_mu);
    caps.add_run(a.cls.cost_usd, a.cls.status != agent::Status::kUnavailable && a.cls.model_calls.value_or(1) != 0);
  }
  Json ev{{"iteration", iteration.load()},
          {"exit_code", r.exit_code},
          {"status", agent::status_name(a.cls.status)},
          {"detail", a.cls.detail},
          {"changed", a.changed},
          {"duration_ms", r.duration_ms},
          {"cost_usd", a.cls.cost_usd ? Json(*a.cls.cost_usd) : Json(nullptr)},
          {"model_calls", a.cls.model_calls ? Json(*a.cls.model_calls) : Json(nullptr)}};
  trace.append(trace::event::kLoopAgent, ev);
  return a;
}

// True when the agent itself said it is complete: the tag on a line of its
// output that is not a line of the prompt (agents echo their prompt).
bool Loop::promised(const std::string& output, const std::string& prompt) {
  std::set<std::string> prompt_lines;
  for (const auto& l : util::split_lines(prompt)) prompt_lines.insert(util::trim(l));
  for (const auto& l : util::split_lines(output)) {
    std::string t = util::trim(l);
    if (t.find(kPromise) != std::string::npos && !prompt_lines.count(t)) return true;
  }
  return false;
}

}  // namespace phoenix::loop::internal
