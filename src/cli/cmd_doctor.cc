// phoenix doctor [--json]: one screen that says what works here and what
// does not. Every item is measured (a file opened, a program found, a child
// run), never assumed. Exit 0 only when nothing the configuration needs is
// missing ("fail" items); "warn" items are worth knowing but block nothing.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>

#include "cli/app.h"
#include "cli/manual.h"
#include "config/config.h"
#include "agent/agent.h"
#include "gitx/repo.h"
#include "hook/agent_config.h"
#include "hook/hook.h"
#include "checks/measured.h"
#include "journal/journal.h"
#include "layout/layout.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format.h"
#include "util/overlay.h"
#include "util/subprocess.h"
#include "util/term.h"
#include "util/text.h"

namespace phoenix::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// What an item says: it works (ok), it is worth knowing (warn, info) or
// the configuration needs it and it is missing (fail, exit 1).
enum class Status { kOk, kWarn, kFail, kInfo };

// The word `phoenix doctor` prints and --json carries for each.
const char* status_name(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kWarn: return "warn";
    case Status::kFail: return "fail";
    case Status::kInfo: return "info";
  }
  return "?";
}

struct Item {
  std::string name;
  Status status;
  std::string detail;
  json data = json::object();
};

class Report {
 public:
  Item& add(std::string name, Status status, std::string detail, json data = json::object()) {
    items_.push_back({std::move(name), status, std::move(detail), std::move(data)});
    return items_.back();
  }
  bool ok() const {
    for (const auto& i : items_)
      if (i.status == Status::kFail) return false;
    return true;
  }
  const std::vector<Item>& items() const { return items_; }

 private:
  std::vector<Item> items_;
};

std::string pad(std::string s, size_t n) {
  if (s.size() < n) s.resize(n, ' ');
  return s;
}

std::string first_line(const std::string& s) {
  auto lines = util::split_lines(s);
  return lines.empty() ? "" : util::trim(lines.front());
}

void check_git(Report& r) {
  util::ProcessOptions o;
  o.argv = {"git", "--version"};
  o.timeout_s = 10;
  util::ProcessResult g = util::run_process(o);
  if (g.not_found)
    r.add("git", Status::kFail, "git is not on PATH (the hook, bisect and the loop's worktrees need it)");
  else if (g.exit_code != 0) r.add("git", Status::kFail, "'git --version' exited " + std::to_string(g.exit_code));
  else r.add("git", Status::kOk, first_line(g.output), {{"version", first_line(g.output)}, {"path", g.executable}});
  const std::string v = gitx::libgit2_version();
  r.add("libgit2", Status::kOk, "libgit2 " + v, {{"version", v}});
}

// A hook manager (lefthook, husky, …) runs the hooks: wired to Phoenix or not.
bool hook_by_manager(Report& r, const gitx::Repo& repo, json& data, Status missing_status) {
  auto m = hook::detect_manager(repo.workdir(), repo.config_get("core.hooksPath"), "phoenix");
  if (!m) return false;
  data["manager"] = m->name;
  data["config"] = m->config;
  const bool wired = m->calls_phoenix;
  data["installed"] = wired;
  if (wired) r.add("hook", Status::kOk, m->name + " runs 'phoenix hook run pre-push' (" + m->config + ")", data);
  else
    r.add("hook", missing_status,
          m->name + " manages the hooks and " + m->config + " does not call Phoenix; see 'phoenix hook install'", data);
  return true;
}

// core.hooksPath names a folder whose pre-push does not call Phoenix
// (something set it: a project's `prepare` script, an agent): whatever
// was installed before, git no longer runs it.
void hooks_path_elsewhere(Report& r, const gitx::Repo& repo, const hook::HookOwner& owner, json& data, bool wanted) {
  const std::string hooks_dir = repo.hooks_dir();
  std::error_code ec;
  const std::string ours = repo.common_dir() + "/hooks/pre-push";
  const bool shim_left = fs::is_regular_file(ours, ec) && hook::is_shim(util::read_file(ours));
  // Pointing into a tree of Phoenix's own: set by a program run there
  // before Phoenix put such changes back (a setup step's `prepare`).
  const std::string trees = layout::trees_root(repo);
  const bool into_our_trees = util::starts_with(hooks_dir, trees + "/");
  data["installed"] = false;
  data["into_phoenix_trees"] = into_our_trees;
  r.add("hook", shim_left || wanted || into_our_trees ? Status::kFail : Status::kWarn,
        owner.warning + (shim_left ? "; Phoenix's hook " + ours + " is no longer run" : "") +
            (into_our_trees ? "; " + hooks_dir + " is inside a tree of Phoenix's (" + trees +
                                  "): a program run there set core.hooksPath, so unset it"
                            : ""),
        data);
}

// Phoenix's own shim: the binary and the program it starts still there
// and current.
void check_shim(Report& r, const std::string& hooks_dir, const std::string& content, json& data) {
  std::string bin = hook::shim_binary(content);
  const std::string program = hook::shim_interpreter(content);
  const std::string source = hook::shim_program_source(content);
  data["installed"] = true;
  data["binary"] = bin;
  if (!program.empty()) {
    data["program"] = program;
    data["program_source"] = source;
  }
  // The direct shim's program is started by the kernel: when it is gone,
  // git can only say it "cannot run" the hook (and git 2.39 then waits on
  // the push for ever).
  if (!program.empty() && ::access(program.c_str(), X_OK) != 0) {
    r.add("hook", Status::kFail,
          "installed, but the program on its first line, " + program +
              ", is gone: git cannot start the hook, so every push fails or hangs (run 'phoenix hook install' again)",
          data);
    return;
  }
  if (::access(bin.c_str(), X_OK) != 0) {
    r.add("hook", Status::kFail, "installed, but its binary " + bin + " is gone (run 'phoenix hook install' again)",
          data);
    return;
  }
  if (!program.empty() && ::access(source.c_str(), X_OK) != 0) {
    r.add("hook", Status::kWarn,
          "installed, but " + source + ", which its program " + program +
              " was copied from, is gone: every push takes the full hook (run 'phoenix hook install' again)",
          data);
    return;
  }
  if (!program.empty() && !hook::program_is_current(program, source)) {
    r.add("hook", Status::kWarn,
          "installed, but its program " + program + " is an older copy of " + source +
              ": every push takes the full hook until it is refreshed (the next push, or 'phoenix hook install')",
          data);
    return;
  }
  r.add("hook", Status::kOk,
        "installed in " + hooks_dir + ", runs " +
            (program.empty() ? bin : program + " (a copy of " + source + ", no shell), then " + bin),
        data);
}

// The pre-push hook: installed, and pointing at a binary that exists.
void check_hook(Report& r, const gitx::Repo& repo, bool wanted) {
  std::string hooks_dir = repo.hooks_dir();
  std::string hook = hooks_dir + "/pre-push";
  std::error_code ec;
  json data{{"hooks_dir", hooks_dir}, {"hook", hook}};
  const Status missing_status = wanted ? Status::kFail : Status::kWarn;
  if (hook_by_manager(r, repo, data, missing_status)) return;
  const std::optional<std::string> hooks_path = repo.config_get("core.hooksPath");
  const hook::HookOwner owner = hook::hook_owner(repo.workdir(), hooks_dir, hooks_path);
  data["calls_phoenix"] = owner.calls_phoenix;
  if (owner.from_config && !owner.calls_phoenix) return hooks_path_elsewhere(r, repo, owner, data, wanted);
  if (!fs::exists(fs::symlink_status(hook, ec))) {
    data["installed"] = false;
    r.add("hook", missing_status, "not installed in " + hooks_dir + " (run 'phoenix hook install')", data);
    return;
  }
  std::string content = util::read_file(hook);
  if (!hook::is_shim(content) && owner.calls_phoenix) {
    data["installed"] = true;
    r.add("hook", Status::kOk, owner.how + " (in " + hooks_dir + ")", data);
    return;
  }
  if (!hook::is_shim(content)) {
    data["installed"] = false;
    r.add("hook", missing_status, hook + " is not Phoenix's ('phoenix hook install' chains it)", data);
    return;
  }
  check_shim(r, hooks_dir, content, data);
}

// Phoenix as an agent CLI's stop hook (hook/agent_config.h): where it is
// installed, and whether the phoenix its entry runs is there.
void check_agent_hooks(Report& r, const std::string& workdir) {
  const std::vector<hook::AgentHookState> states = hook::installed_agent_hooks(workdir);
  if (states.empty()) {
    r.add("agent hooks", Status::kInfo,
          "no agent CLI runs Phoenix when it stops ('phoenix hook install --agent " + hook::agent_names() + "')",
          {{"installed", json::array()}});
    return;
  }
  for (const hook::AgentHookState& st : states) {
    const std::string name = std::string("stop hook ") + hook::agent_name(st.cli);
    json data{{"agent", hook::agent_name(st.cli)}, {"file", st.file}, {"shared", st.shared}, {"command", st.command}};
    if (!st.problem.empty()) {
      r.add(name, Status::kWarn, st.problem, data);
      continue;
    }
    const std::string program =
        st.program.find('/') == std::string::npos ? util::find_executable(st.program) : st.program;
    if (program.empty() || ::access(program.c_str(), X_OK) != 0) {
      r.add(name, Status::kFail,
            st.file + " runs " + st.program +
                ", which is not there: the agent's stops go unchecked (run 'phoenix "
                "hook install --agent " +
                hook::agent_name(st.cli) + "' again)",
            data);
      continue;
    }
    std::string detail = std::string(hook::stop_event(st.cli)) + " hook in " + st.file +
                         (!hook::has_personal_layer(st.cli) ? ""
                          : st.shared                       ? " (shared)"
                                                            : " (personal)") +
                         ", runs " + program;
    if (st.cli == hook::AgentCli::kCodex) {
      const char* ch = std::getenv("CODEX_HOME");
      const char* home = std::getenv("HOME");
      const std::string codex_home = ch && *ch ? ch : std::string(home ? home : "") + "/.codex";
      const std::string why = hook::codex_trust_problem(workdir, codex_home);
      data["codex_trusted"] = why.empty();
      if (!why.empty()) {
        r.add(name, Status::kWarn, detail + "; codex does not run it yet: " + why, data);
        continue;
      }
    }
    r.add(name, Status::kOk, detail, data);
  }
}

// Agent CLIs on PATH and the preset each one matches; the configured one
// must be there when the harness fixer is used.
void check_agents(Report& r, const config::Config* cfg) {
  json found = json::array();
  std::string listed;
  for (const auto& p : agent::presets()) {
    std::string path = util::find_executable(p.argv.front());
    if (path.empty()) continue;
    found.push_back({{"name", p.argv.front()}, {"path", path}, {"preset", p.name}});
    listed += (listed.empty() ? "" : ", ") + p.argv.front() + " (preset " + p.name + ")";
  }
  r.add("agents", Status::kInfo, listed.empty() ? "no known agent CLI on PATH" : listed, {{"found", found}});
  if (!cfg) return;
  bool uses_harness = std::find(cfg->fixers.begin(), cfg->fixers.end(), "harness") != cfg->fixers.end();
  std::vector<std::string> argv = cfg->harness.command;
  if (argv.empty() && !cfg->harness.preset.empty())
    if (const auto* p = agent::find_preset(cfg->harness.preset)) argv = p->argv;
  if (argv.empty()) {
    if (uses_harness)
      r.add("harness", Status::kWarn,
            "no harness configured: the harness fixer proposes nothing (set \"harness\" in phoenix.json)");
    return;
  }
  json data{{"command", argv.front()},
            {"preset", cfg->harness.preset.empty() ? json(nullptr) : json(cfg->harness.preset)}};
  std::string path = argv.front().find('/') == std::string::npos ? util::find_executable(argv.front()) : argv.front();
  if (path.empty() || ::access(path.c_str(), X_OK) != 0) {
    r.add("harness", uses_harness ? Status::kFail : Status::kWarn,
          argv.front() + " (the configured harness) is not on PATH", data);
    return;
  }
  data["path"] = path;
  r.add("harness", Status::kOk, argv.front() + " at " + path, data);
}

// What each check runs must exist.
void check_checks(Report& r, const config::Config& cfg, const std::string& root) {
  std::error_code ec;
  for (const auto& c : cfg.checks) {
    json data{{"id", c.id}, {"kind", c.kind}};
    std::string name = "check " + c.id;
    if (c.kind == checks::Kind::kCommandExit) {
      if (c.argv.empty()) {
        r.add(name, Status::kFail, "no command", data);
        continue;
      }
      const std::string& exe = c.argv.front();
      std::string dir = root + (c.cwd.empty() ? "" : "/" + c.cwd);
      std::string path = exe.find('/') == std::string::npos ? util::find_executable(exe)
                                                            : (fs::path(exe).is_absolute() ? exe : dir + "/" + exe);
      data["program"] = exe;
      if (path.empty() || ::access(path.c_str(), X_OK) != 0)
        r.add(name, Status::kFail, exe + " not found (on PATH or in " + dir + ")", data);
      else r.add(name, Status::kOk, util::join_argv(c.argv), data);
    } else {
      std::string file = root + "/" + c.path;
      data["file"] = c.path;
      if (fs::exists(file, ec)) r.add(name, Status::kOk, std::string(checks::kind_name(c.kind)) + " " + c.path, data);
      else r.add(name, Status::kWarn, c.path + " does not exist yet (the check is red until it does)", data);
    }
  }
}

// Whether the kernel lets an unprivileged process mount an overlay in user
// and mount namespaces of its own: the overlay sandbox needs it, and so
// does the confinement of what Phoenix runs in its trees (setup/guard.h).
// Without it sandboxes are plain copies (slower on large repositories),
// and a program in a tree of Phoenix's own is only fingerprinted: its
// changes to the config and hooks are put back, to refs only said.
void check_sandbox(Report& r) {
  const std::string why = util::overlay_unavailable_reason();
  const bool ok = why.empty();
  r.add("sandbox", ok ? Status::kOk : Status::kWarn,
        ok ? "overlay sandboxes available; what Phoenix runs in its trees is confined to them"
           : "no overlay in a namespace here (" + why +
                 "): sandboxes are copies of the tracked files, and what Phoenix runs in its trees is "
                 "fingerprinted, not confined",
        {{"overlay", ok}, {"confined", ok}});
}

// The measurement store: how many records, and where they came from
// (measured here, or pulled from which remote).
void check_measured(Report& r, const std::string& root) {
  const std::string dir = layout::measured_dir(root);
  std::map<std::string, long long> by_origin;
  const auto all = checks::all_measurements(dir);
  for (const auto& m : all) ++by_origin[m.origin.empty() ? "measured here" : "pulled from " + m.origin];
  std::string text = util::plural(static_cast<long long>(all.size()), "green measurement", "green measurements");
  json origins = json::object();
  std::string sep = ": ";
  for (const auto& [from, n] : by_origin) {
    text += sep + std::to_string(n) + " " + from;
    sep = ", ";
    origins[from] = n;
  }
  r.add("measured", Status::kOk, text + " (" + dir + ")",
        {{"path", dir}, {"records", all.size()}, {"origins", origins}});
}

void check_journal(Report& r, const std::string& root) {
  std::string path = layout::journal_file(root);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    r.add("journal", Status::kOk, "none yet (.phoenix/journal.sqlite is created by the first heal)",
          {{"path", path}, {"exists", false}});
    return;
  }
  try {
    journal::OpenOptions o;
    o.create = false;
    o.busy_timeout_ms = 2000;
    journal::Journal j = journal::Journal::open(path, o);
    r.add("journal", Status::kOk, "opens: " + path, {{"path", path}, {"exists", true}});
  } catch (const std::exception& e) { r.add("journal", Status::kFail, e.what(), {{"path", path}, {"exists", true}}); }
}

}  // namespace

int cmd_doctor(const std::vector<std::string>& args) {
  po::options_description desc("doctor options");
  Parsed p;
  if (!parse_command("doctor", desc, args, p, false)) return kExitOk;
  Report r;
  std::error_code ec;
  r.add("phoenix", Status::kOk, "phoenix " PHOENIX_VERSION " at " + fs::canonical("/proc/self/exe", ec).string(),
        {{"version", PHOENIX_VERSION}, {"templates", templates_dir()}});
  check_git(r);

  std::optional<config::Config> cfg;
  if (!p.ctx.in_repo) {
    r.add("repository", Status::kFail, p.ctx.cwd + " is not inside a git repository");
  } else {
    try {
      gitx::Repo repo = gitx::Repo::discover(p.ctx.root);
      r.add("repository", Status::kOk, repo.workdir(),
            {{"workdir", repo.workdir()}, {"git_dir", repo.git_dir()}, {"hooks_dir", repo.hooks_dir()}});
      try {
        cfg = config::load(p.ctx.root, true);
        r.add("config", Status::kOk, cfg->path + ": " + std::to_string(cfg->checks.size()) + " check(s)",
              {{"path", cfg->path}, {"checks", cfg->check_ids()}});
      } catch (const Error& e) {
        bool missing = !fs::exists(p.ctx.root + "/phoenix.json", ec);
        r.add("config", Status::kFail, missing ? "no phoenix.json (run 'phoenix init')" : e.what(),
              {{"path", p.ctx.root + "/phoenix.json"}});
      }
      check_hook(r, repo, cfg && cfg->raw.is_object() && cfg->raw.contains("hook"));
      if (!repo.workdir().empty()) check_agent_hooks(r, repo.workdir());
    } catch (const std::exception& e) { r.add("repository", Status::kFail, e.what()); }
  }
  if (cfg) check_checks(r, *cfg, p.ctx.root);
  check_agents(r, cfg ? &*cfg : nullptr);
  check_sandbox(r);
  if (p.ctx.in_repo) check_journal(r, p.ctx.root);
  if (p.ctx.in_repo) check_measured(r, p.ctx.root);

  if (p.ctx.json) {
    json items = json::array();
    for (const auto& i : r.items())
      items.push_back({{"name", i.name}, {"status", status_name(i.status)}, {"detail", i.detail}, {"data", i.data}});
    print_json(p.ctx, {{"version", 1}, {"ok", r.ok()}, {"items", items}});
  } else {
    for (const auto& i : r.items()) {
      std::string tag = pad(status_name(i.status), 5);
      if (i.status == Status::kOk) tag = green(p.ctx, tag);
      else if (i.status == Status::kFail) tag = red(p.ctx, tag);
      else if (i.status == Status::kWarn) tag = bold(p.ctx, tag);
      else tag = dim(p.ctx, tag);
      std::cout << tag << " " << pad(i.name, 13) << " " << i.detail << "\n";
    }
    std::cout << (r.ok() ? "everything phoenix.json needs is here\n"
                         : "something phoenix.json needs is missing (fail lines above)\n");
  }
  return r.ok() ? kExitOk : kExitRed;
}

}  // namespace phoenix::cli
