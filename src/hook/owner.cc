#include "hook/owner.h"

#include <unistd.h>

#include <filesystem>
#include <vector>

#include "hook/green.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::hook {

namespace fs = std::filesystem;

bool is_shim(std::string_view content) {
  // The marker is the second line; a hook that merely mentions Phoenix
  // further down is somebody else's.
  size_t nl = content.find('\n');
  return nl != std::string_view::npos && content.substr(nl + 1, kShimMarker.size()) == kShimMarker;
}

// ---------------------------------------------------------------------------
// husky and lefthook

std::optional<Manager> detect_manager(const std::string& workdir, const std::optional<std::string>& hooks_path,
                                      const std::string& phoenix_cmd) {
  std::error_code ec;
  const fs::path top(workdir);
  const std::string run_line = phoenix_cmd + " hook run pre-push";
  if (fs::is_directory(top / ".husky", ec) && hooks_path && !hooks_path->empty()) {
    fs::path hp(*hooks_path);
    if (hp.is_relative()) hp = top / hp;
    std::string norm = hp.lexically_normal().string();
    while (norm.size() > 1 && norm.back() == '/') norm.pop_back();
    if (norm == (top / ".husky").string() || norm == (top / ".husky" / "_").string()) {
      // husky runs .husky/pre-push with git's argv and stdin: one line
      // there hands both on.
      return Manager{"husky", ".husky/pre-push", run_line + " \"$@\"\n", ""};
    }
  }
  // lefthook's own search order.
  for (const char* name : {"lefthook.yml", ".lefthook.yml", ".config/lefthook.yml", "lefthook.yaml", ".lefthook.yaml",
                           ".config/lefthook.yaml", "lefthook.toml", ".lefthook.toml", ".config/lefthook.toml",
                           "lefthook.json", ".lefthook.json", ".config/lefthook.json"}) {
    if (!fs::exists(top / name, ec)) continue;
    std::string n = name;
    // use_stdin: lefthook otherwise keeps git's ref lines to itself; {1} {2}
    // are git's arguments (remote name and URL).
    std::string snippet;
    if (util::ends_with(n, ".toml")) {
      snippet = "[[pre-push.jobs]]\nname = \"phoenix\"\nrun = \"" + run_line + " {1} {2}\"\nuse_stdin = true\n";
    } else if (util::ends_with(n, ".json")) {
      snippet = "\"pre-push\": {\n  \"jobs\": [\n    { \"name\": \"phoenix\", \"run\": \"" + run_line +
                " {1} {2}\", \"use_stdin\": true }\n  ]\n}\n";
    } else {
      snippet = "pre-push:\n  jobs:\n    - name: phoenix\n      run: " + run_line + " {1} {2}\n      use_stdin: true\n";
    }
    return Manager{"lefthook", n, snippet, "lefthook install"};
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Who runs on push

namespace {

bool file_mentions(const fs::path& p, std::string_view what) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return false;
  try {
    return util::read_file(p.string()).find(what) != std::string::npos;
  } catch (const Error&) { return false; }
}

// Why the pre-push hook at `hook` calls Phoenix, or nullopt; *why_not says
// what it is otherwise.
std::optional<std::string> calls_phoenix(const fs::path& hook, const std::string& workdir,
                                         const std::optional<std::string>& hooks_path, std::string* why_not) {
  std::error_code ec;
  const fs::file_status st = fs::status(hook, ec);  // a link is followed, as git does
  if (!fs::exists(st)) {
    *why_not = "no pre-push hook there";
    return std::nullopt;
  }
  if (::access(hook.c_str(), X_OK) != 0) {
    *why_not = hook.string() + " is not executable, so git skips it";
    return std::nullopt;
  }
  std::string content;
  try {
    content = util::read_file(hook.string());
  } catch (const Error& e) {
    *why_not = e.what();
    return std::nullopt;
  }
  if (is_shim(content)) return "Phoenix's hook " + hook.string();
  if (content.find("hook run pre-push") != std::string::npos || content.find("phoenix-hook") != std::string::npos)
    return hook.string() + " calls Phoenix";
  if (auto m = detect_manager(workdir, hooks_path, "phoenix")) {
    if (file_mentions(fs::path(workdir) / m->config, "hook run pre-push")) return m->name + "'s " + m->config + " calls Phoenix";
    *why_not = m->name + " runs the hooks and its " + m->config + " does not call Phoenix";
    return std::nullopt;
  }
  if (content.find("pre-commit") != std::string::npos &&
      file_mentions(fs::path(workdir) / ".pre-commit-config.yaml", "phoenix-pre-push"))
    return "pre-commit runs phoenix-pre-push (.pre-commit-config.yaml)";
  *why_not = hook.string() + " does not call Phoenix";
  return std::nullopt;
}

}  // namespace

HookOwner hook_owner(const std::string& workdir, const std::string& hooks_dir,
                     const std::optional<std::string>& hooks_path) {
  HookOwner o;
  o.hooks_dir = hooks_dir;
  o.from_config = hooks_path && !hooks_path->empty();
  std::string why_not;
  if (auto how = calls_phoenix(fs::path(hooks_dir) / "pre-push", workdir, hooks_path, &why_not)) {
    o.calls_phoenix = true;
    o.how = *how;
    return o;
  }
  o.how = why_not;
  o.warning = "git runs hooks from " + hooks_dir + (o.from_config ? " (core.hooksPath)" : "") +
              ", which does not call Phoenix: pushes are not checked (" + why_not + "; " +
              (o.from_config ? "if you did not set core.hooksPath, 'git config --unset core.hooksPath', then "
                             : "") +
              "'phoenix hook install')";
  return o;
}

std::optional<HookOwner> hook_owner_from_git(const std::string& root) {
  util::ProcessOptions po;
  po.argv = {"git", "rev-parse", "--show-toplevel", "--path-format=absolute", "--git-common-dir", "--git-path", "hooks"};
  po.cwd = root;
  po.timeout_s = 10;
  for (const char* v : git_location_env()) po.unset_env.emplace_back(v);
  util::ProcessResult pr = util::run_process(po);
  if (pr.exit_code != 0 || pr.timed_out) return std::nullopt;
  const std::vector<std::string> lines = util::split_lines(pr.output);
  if (lines.size() < 3) return std::nullopt;
  const std::string& top = lines[0];
  const std::string hooks = fs::path(lines[2]).lexically_normal().string();
  std::optional<std::string> configured;
  if (hooks != (fs::path(lines[1]) / "hooks").lexically_normal().string()) configured = hooks;
  return hook_owner(top, hooks, configured);
}

}  // namespace phoenix::hook
