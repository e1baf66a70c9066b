// phoenix hook install | uninstall [--agent CLI [--shared]] | run pre-push [REMOTE URL] | run stop --agent CLI
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>

#include "cli/app.h"
#include "gitx/repo.h"
#include "hook/agent_config.h"
#include "hook/agent_stop.h"
#include "hook/hook.h"
#include "hook/runs.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The binary the shim will call: this one, by the absolute path the kernel
// knows it by (a relative argv[0] or a symlink on PATH would break later).
std::string self_path() {
  std::error_code ec;
  fs::path self = fs::canonical("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the phoenix binary's own path (/proc/self/exe): " + ec.message());
  return self.string();
}

// hooks/<name>, found like the templates: an installed phoenix has it in
// share/phoenix/hooks beside itself; a build tree uses the source tree's.
std::string shim_template(const std::string& name) {
  std::error_code ec;
  std::vector<fs::path> candidates{
      fs::path(self_path()).parent_path().parent_path() / "share/phoenix/hooks" / name,
      fs::path(PHOENIX_TEMPLATES_DIR).parent_path() / "hooks" / name,
      fs::path(PHOENIX_SOURCE_TEMPLATES_DIR).parent_path() / "hooks" / name,
  };
  for (const auto& c : candidates)
    if (fs::is_regular_file(c, ec)) return util::read_file(c.string());
  std::string tried;
  for (const auto& c : candidates) tried += "\n  " + c.string();
  throw Error("the pre-push hook template is missing; looked for:" + tried);
}

// The hook file for this install. The direct shim (git runs a copy of
// phoenix-hook, kept beside it, as the file's interpreter: no shell) when
// phoenix-hook lies beside this binary, the hooks are the repository's own
// (.git/hooks: a core.hooksPath folder may be in the work tree, or serve
// other repositories), the copy's path can stand on a #! line and no
// earlier hook is to run first; otherwise the shell shim, which runs the
// earlier hook and calls phoenix-hook or phoenix (hook/hook.h).
std::string shim_for(const gitx::Repo& repo, const std::string& hooks_dir, const std::string& self) {
  const std::string thin = (fs::path(self).parent_path() / "phoenix-hook").string();
  const std::string copy = hook::program_copy_path(hooks_dir);
  if (hooks_dir == repo.common_dir() + "/hooks" && hook::shebang_safe(copy) && ::access(thin.c_str(), X_OK) == 0 &&
      !hook::chains(hooks_dir))
    return hook::render_direct_shim(shim_template("pre-push-direct.in"), copy, thin);
  return hook::render_shim(shim_template("pre-push.in"), self);
}

// How a snippet in a shared config file should call Phoenix: by name when
// PATH finds this very binary (teammates have their own), else by path.
std::string phoenix_command(const std::string& self) {
  std::string found = util::find_executable("phoenix");
  std::error_code ec;
  if (!found.empty() && fs::canonical(found, ec) == fs::path(self)) return "phoenix";
  return self;
}

// --agent's value, or nullopt when none was given; an unknown one is a
// usage error naming the CLIs there are.
std::optional<hook::AgentCli> agent_of(const Parsed& p) {
  if (!p.vm.count("agent")) {
    if (p.vm.count("shared")) throw UsageError("hook: --shared goes with --agent " + hook::agent_names());
    return std::nullopt;
  }
  const std::string word = p.vm["agent"].as<std::string>();
  if (auto cli = hook::parse_agent(word)) return cli;
  throw UsageError("hook: unknown agent '" + word + "' (--agent is one of " + hook::agent_names() + ")");
}

// phoenix hook install --agent CLI [--shared]: Phoenix's stop hook in that
// CLI's project configuration (hook/agent_config.h).
int agent_install(Parsed& p, hook::AgentCli cli) {
  gitx::Repo repo = gitx::Repo::discover(p.ctx.root);
  const bool shared = p.vm.count("shared") > 0;
  const std::string rel = hook::agent_hook_file(cli, shared);
  const std::string head = repo.head_sha();
  const bool tracked = !head.empty() && repo.read_blob_at(head, rel).has_value();
  const std::string self = self_path();
  const std::string command = hook::agent_hook_command(shared ? phoenix_command(self) : self, cli);
  const hook::AgentInstall r =
      hook::install_agent_hook(repo.workdir(), cli, shared, command, repo.common_dir() + "/info/exclude", tracked);
  const std::string name = hook::agent_name(cli);
  if (p.ctx.json) {
    print_json(p.ctx, {{"action", r.action},
                       {"agent", name},
                       {"event", hook::stop_event(cli)},
                       {"file", r.file},
                       {"shared", shared},
                       {"command", r.command},
                       {"excluded", r.excluded}});
    return kExitOk;
  }
  std::cout << (r.action == "unchanged" ? "already installed: "
                : r.action == "updated" ? "updated: "
                                        : "installed: ")
            << r.file << " (" << name << "'s " << hook::stop_event(cli) << " hook)\n";
  std::cout << "  when the agent is about to stop, " << name << " runs: " << r.command << "\n";
  std::cout << "  green lets it stop; red refuses the stop with the failing tests, within each check's budget\n";
  if (r.excluded) std::cout << "  .git/info/exclude keeps " << rel << " out of your commits (a personal install)\n";
  if (!shared && tracked && !hook::has_personal_layer(cli))
    std::cout << "  note: git tracks " << rel << ", so this change shows in 'git status'\n";
  if (cli == hook::AgentCli::kCodex)
    std::cout << "  codex runs a project's hooks only in a trusted project and once the hook is trusted: "
                 "open 'codex' here once and trust it, or run 'codex exec --dangerously-bypass-hook-trust' "
                 "(docs/agents.md)\n";
  std::cout << "  'phoenix hook uninstall --agent " << name << "' removes it\n";
  return kExitOk;
}

int agent_uninstall(Parsed& p, hook::AgentCli cli) {
  gitx::Repo repo = gitx::Repo::discover(p.ctx.root);
  const hook::AgentUninstall r = hook::uninstall_agent_hook(repo.workdir(), cli);
  if (p.ctx.json) {
    print_json(p.ctx, {{"action", r.files.empty() ? "absent" : "removed"},
                       {"agent", hook::agent_name(cli)},
                       {"files", r.files},
                       {"deleted", r.deleted}});
    return kExitOk;
  }
  if (r.files.empty()) std::cout << "no Phoenix stop hook for " << hook::agent_name(cli) << ": nothing to do\n";
  for (const auto& f : r.files)
    std::cout << "removed Phoenix's stop hook from " << f
              << (std::find(r.deleted.begin(), r.deleted.end(), f) != r.deleted.end()
                      ? " (nothing else was in it: the file is gone)"
                      : "")
              << "\n";
  return kExitOk;
}

int hook_install(Parsed& p) {
  if (!p.ctx.in_repo) throw UsageError("hook install: " + p.ctx.cwd + " is not inside a git repository");
  if (auto cli = agent_of(p)) return agent_install(p, *cli);
  gitx::Repo repo = gitx::Repo::discover(p.ctx.root);
  const std::string self = self_path();
  const std::string hooks_dir = repo.hooks_dir();
  if (auto m = hook::detect_manager(repo.workdir(), repo.config_get("core.hooksPath"), phoenix_command(self))) {
    // Their tool owns the hooks and would overwrite (or be bypassed by) a
    // shim of ours: the user adds one entry to its configuration instead.
    if (p.ctx.json) {
      print_json(p.ctx, {{"action", m->calls_phoenix ? "already delegated" : "delegated"},
                         {"manager", m->name},
                         {"config", m->config},
                         {"snippet", m->snippet},
                         {"where", m->where},
                         {"then", m->then.empty() ? json(nullptr) : json(m->then)},
                         {"hooks_dir", hooks_dir}});
      return kExitOk;
    }
    std::cout << m->name
              << " manages this repository's git hooks, so Phoenix does not install its own pre-push hook.\n";
    if (m->calls_phoenix) {
      std::cout << m->config << " calls Phoenix already: nothing to add"
                << (m->then.empty() ? std::string() : " (after an edit, run '" + m->then + "')") << ".\n";
      return kExitOk;
    }
    // Flush left, as it goes in the file: pasted as printed, it works.
    std::cout << m->where << ":\n\n" << m->snippet << "\n";
    if (!m->then.empty()) std::cout << "then run '" << m->then << "'.\n";
    std::cout << "Nothing was written.\n";
    return kExitOk;
  }
  const std::string shim = shim_for(repo, hooks_dir, self);
  const std::string program = hook::shim_interpreter(shim);
  hook::InstallResult r = hook::install(hooks_dir, shim);
  // From now on a push from here that no measurement covers is named, on
  // any ref (docs/hook.md, "Skipping it").
  try {
    hook::note_install(p.ctx.root, r.action == "installed");
  } catch (const Error& e) {
    std::cerr << "phoenix: warning: a push skipping the hook before its first run will not be noticed: " << e.what()
              << "\n";
  }
  if (p.ctx.json) {
    print_json(p.ctx, {{"action", r.action},
                       {"hook", r.hook},
                       {"chained", r.chained.empty() ? json(nullptr) : json(r.chained)},
                       {"binary", self},
                       {"runs", program.empty() ? json("sh") : json(program)},
                       {"hooks_dir", hooks_dir}});
    return kExitOk;
  }
  std::cout << (r.action == "unchanged" ? "already installed: "
                : r.action == "updated" ? "updated: "
                                        : "installed: ")
            << r.hook << "\n";
  if (program.empty()) std::cout << "  runs " << self << " hook run pre-push on every git push\n";
  else
    std::cout << "  git runs " << program << " (a copy of " << hook::shim_program_source(shim)
              << ") on every git push, with no shell; it hands all but a green push of a clean HEAD to " << self
              << " hook run pre-push\n";
  if (!r.chained.empty()) std::cout << "  the pre-push hook that was there runs first: " << r.chained << "\n";
  std::cout << "  'phoenix hook uninstall' puts back what was there before\n";
  // A core.hooksPath outside the repository (a global ~/.githooks, say)
  // serves other repositories too: say what the hook does there.
  auto inside = [](const std::string& path, const std::string& dir) {
    return path == dir || util::starts_with(path, dir + "/");
  };
  if (!inside(hooks_dir, repo.workdir()) && !inside(hooks_dir, repo.common_dir()))
    std::cout << "  note: " << hooks_dir << " is outside this repository (core.hooksPath), so other repositories "
              << "using it get this hook too; where there is no phoenix.json it passes with a warning\n";
  return kExitOk;
}

int hook_uninstall(Parsed& p) {
  if (!p.ctx.in_repo) throw UsageError("hook uninstall: " + p.ctx.cwd + " is not inside a git repository");
  if (auto cli = agent_of(p)) return agent_uninstall(p, *cli);
  gitx::Repo repo = gitx::Repo::discover(p.ctx.root);
  hook::UninstallResult r = hook::uninstall(repo.hooks_dir());
  // Files of husky, lefthook or pre-commit are the user's: named, not edited.
  const std::vector<hook::ManagerCall> calls = hook::manager_calls(repo.workdir());
  if (p.ctx.json) {
    json still = json::array();
    for (const auto& c : calls) still.push_back({{"file", c.file}, {"line", c.line}, {"text", c.text}});
    print_json(p.ctx, {{"action", r.action}, {"hook", r.hook}, {"still_calling", still}});
    return kExitOk;
  }
  if (r.action == "restored") std::cout << "restored the earlier pre-push hook: " << r.hook << "\n";
  else if (r.action == "removed") std::cout << "removed Phoenix's pre-push hook: " << r.hook << "\n";
  else
    std::cout << "no Phoenix pre-push hook in " << fs::path(r.hook).parent_path().string()
              << (calls.empty() ? ": nothing to do\n" : "\n");
  if (calls.empty()) return kExitOk;
  std::cout << "these files still call Phoenix on every push; remove the line (with the rest of its job entry):\n";
  for (const auto& c : calls) std::cout << "  " << c.file << ":" << c.line << ": " << c.text << "\n";
  return kExitOk;
}

// A direct shim whose copy of phoenix-hook is no longer the phoenix-hook
// beside this binary (Phoenix upgraded or rebuilt since the install) hands
// every push over to this binary: the copy is refreshed here, so the next
// push is decided by the new one. A copy made from another phoenix-hook is
// left to 'phoenix hook install' (and 'phoenix doctor' names it). The hook
// is found from the .git files (hook::git_dirs), not libgit2, which the
// full hook opens only when a push needs it.
void refresh_hook_copy(const std::string& root) {
  try {
    const auto dirs = hook::git_dirs(root);
    if (!dirs) return;
    const fs::path hooks = dirs->second / "hooks";
    const std::optional<std::string> content = util::read_file_if_exists((hooks / "pre-push").string());
    if (!content) return;
    const std::string source = hook::shim_program_source(*content);
    const std::string program = hook::shim_interpreter(*content);
    const std::string mine = (fs::path(self_path()).parent_path() / "phoenix-hook").string();
    const fs::path folder = fs::path(program).parent_path();
    std::error_code ec;
    if (source != mine || hook::program_copy_path(folder.string()) != program || !fs::equivalent(folder, hooks, ec) ||
        ::access(mine.c_str(), X_OK) != 0)
      return;
    if (hook::refresh_program(source, program))
      std::cerr << "phoenix: refreshed " << program << " from " << source
                << " (it changed since 'phoenix hook install')\n";
  } catch (const Error& e) {
    std::cerr << "phoenix: warning: cannot refresh the hook's copy of phoenix-hook: " << e.what() << "\n";
  }
}

// phoenix hook run stop --agent CLI: what the CLI runs when its agent is
// about to stop (hook/agent_stop.h). Its answer is all on the streams and
// the exit code the CLI reads: 0 lets the agent stop, 2 refuses.
int hook_run_stop(Parsed& p) {
  if (p.positional.size() > 2) throw UsageError("hook run stop: unexpected argument '" + p.positional[2] + "'");
  const std::optional<hook::AgentCli> cli = agent_of(p);
  if (!cli) throw UsageError("hook run stop: --agent is one of " + hook::agent_names());
  if (::isatty(0) == 1)
    throw UsageError("hook run stop reads the agent CLI's JSON on stdin (session_id, cwd, ...); the CLI provides it");
  hook::AgentStopOptions opt;
  opt.cli = *cli;
  opt.input.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  opt.cwd = p.ctx.cwd;
  opt.no_cache = p.vm.count("no-cache") > 0;
  const hook::AgentStopOutcome out = hook::run_agent_stop(opt);
  std::cout << out.stdout_text << std::flush;
  std::cerr << out.stderr_text << std::flush;
  return out.exit_code;
}

int hook_run(Parsed& p) {
  const auto& pos = p.positional;
  if (pos.size() >= 2 && pos[1] == "stop") return hook_run_stop(p);
  if (pos.size() < 2 || pos[1] != "pre-push")
    throw UsageError(
        "hook run: the hook is 'pre-push' (phoenix hook run pre-push [REMOTE URL]) or 'stop' (phoenix hook run stop "
        "--agent CLI)");
  if (pos.size() > 4) throw UsageError("hook run pre-push: unexpected argument '" + pos[4] + "'");
  // Also here, not only in the shim: husky and lefthook call this directly.
  if (!p.ctx.in_repo) throw UsageError("hook run: " + p.ctx.cwd + " is not inside a git repository");
  if (const char* skip = std::getenv("PHOENIX_SKIP"); skip && std::string(skip) == "1") {
    std::cerr << "phoenix: PHOENIX_SKIP=1: pre-push checks skipped\n";
    return kExitOk;
  }
  if (::isatty(0) == 1)
    throw UsageError(
        "hook run pre-push reads git's ref lines on stdin (\"<local ref> <local sha> <remote ref> "
        "<remote sha>\"); git push provides them");
  refresh_hook_copy(p.ctx.root);
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  std::vector<hook::PushedRef> refs = hook::parse_pre_push(input);
  hook::PrePushOptions opt;
  opt.root = p.ctx.root;
  opt.remote = pos.size() > 2 ? pos[2] : "";
  opt.url = pos.size() > 3 ? pos[3] : "";
  opt.templates_dir = templates_dir();
  opt.color = p.ctx.color_err;
  opt.no_cache = p.vm.count("no-cache") > 0;
  Context& ctx = p.ctx;
  opt.trace = [&ctx]() -> trace::Trace& { return ctx.trace(); };
  return hook::run_pre_push(opt, refs, std::cerr);
}

}  // namespace

int cmd_hook(const std::vector<std::string>& args) {
  po::options_description desc("hook options");
  desc.add_options()("no-cache", "run: measure every check fresh, never from the measurement store")(
      "agent", po::value<std::string>(),
      "install|uninstall|run stop: the agent CLI whose stop hook Phoenix is (claude, codex, gemini)")(
      "shared", "install --agent: the project's shared settings file instead of the personal one");
  Parsed p;
  if (!parse_command("hook", desc, args, p)) return kExitOk;
  if (p.positional.empty()) throw UsageError("hook: the subcommand is install, uninstall or run");
  const std::string& sub = p.positional[0];
  if (sub == "install" || sub == "uninstall") {
    if (p.positional.size() > 1) throw UsageError("hook " + sub + ": unexpected argument '" + p.positional[1] + "'");
    return sub == "install" ? hook_install(p) : hook_uninstall(p);
  }
  if (sub == "run") {
    if (p.ctx.json) throw UsageError("hook run: --json is not available (a hook's output is for people)");
    return hook_run(p);
  }
  std::string near = util::nearest(sub, {"install", "uninstall", "run"});
  throw UsageError("hook: unknown subcommand '" + sub + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

}  // namespace phoenix::cli
