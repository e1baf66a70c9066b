#include "hook/owner.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iterator>
#include <vector>

#include "hook/green.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format.h"
#include "util/gitfile.h"
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

std::string shim_interpreter(std::string_view content) {
  if (!is_shim(content) || !util::starts_with(content, "#!/")) return "";
  std::string_view first = content.substr(2, content.find('\n') - 2);
  // A shell shim's first line names the shell.
  return first == "/bin/sh" ? "" : std::string(first);
}

std::string shim_program_source(std::string_view content) {
  if (shim_interpreter(content).empty()) return "";
  constexpr std::string_view kLine = "\n# phoenix-hook: ";
  size_t at = content.find(kLine);
  if (at == std::string_view::npos) return "";
  at += kLine.size();
  return std::string(content.substr(at, content.find('\n', at) - at));
}

bool program_is_current(const std::string& program, const std::string& source) {
  struct stat a {}, b {};
  if (::stat(program.c_str(), &a) != 0 || ::stat(source.c_str(), &b) != 0) return false;
  return a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

// ---------------------------------------------------------------------------
// husky and lefthook

namespace {

// lefthook's own search order.
constexpr const char* kLefthookFiles[] = {
    "lefthook.yml",  ".lefthook.yml",  ".config/lefthook.yml",  "lefthook.yaml", ".lefthook.yaml",
    ".config/lefthook.yaml", "lefthook.toml", ".lefthook.toml", ".config/lefthook.toml", "lefthook.json",
    ".lefthook.json", ".config/lefthook.json"};

bool file_mentions(const fs::path& p, std::string_view what) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return false;
  try {
    return util::read_file(p.string()).find(what) != std::string::npos;
  } catch (const Error&) { return false; }
}

std::string read_or_empty(const fs::path& p) {
  try {
    return util::read_file(p.string());
  } catch (const Error&) { return ""; }
}

bool blank_or_comment(const std::string& line) {
  const std::string t = util::trim(line);
  return t.empty() || t[0] == '#';
}
size_t indent_of(const std::string& line) { return line.find_first_not_of(' '); }

// The lines of a YAML file's top-level `key:` block, the key's own line
// left out; nullopt when the file has no such key.
std::optional<std::vector<std::string>> top_level_block(const std::string& text, const std::string& key) {
  std::optional<std::vector<std::string>> body;
  for (const std::string& line : util::split_lines(text)) {
    if (!body) {
      if (util::starts_with(line, key + ":")) body.emplace();
      continue;
    }
    if (!blank_or_comment(line) && indent_of(line) == 0) break;
    body->push_back(line);
  }
  return body;
}

// The job entry for a `jobs:` list, or a `commands:` map, at `indent`.
std::string yaml_entry(bool jobs, size_t indent, const std::string& run) {
  const std::string pad(indent, ' ');
  return pad + (jobs ? "- name: phoenix\n" : "phoenix:\n") + pad + "  run: " + run + "\n" + pad +
         "  use_stdin: true\n";
}

// A lefthook YAML file: the whole block, or what merges into its pre-push:.
void lefthook_yaml(const std::string& text, const std::string& run, Manager& m) {
  const auto block = top_level_block(text, "pre-push");
  if (!block) {
    m.snippet = "pre-push:\n  jobs:\n" + yaml_entry(true, 4, run);
    return;
  }
  size_t keys = 2;  // where pre-push:'s own keys sit
  for (const std::string& l : *block)
    if (!blank_or_comment(l)) {
      keys = indent_of(l);
      break;
    }
  for (const std::string list : {"jobs", "commands"}) {
    const bool jobs = list == "jobs";
    for (size_t i = 0; i < block->size(); ++i) {
      const std::string& l = (*block)[i];
      if (blank_or_comment(l) || indent_of(l) != keys || !util::starts_with(l.substr(keys), list + ":")) continue;
      size_t entry = keys + 2;  // as its first entry is, else two deeper
      for (size_t j = i + 1; j < block->size(); ++j) {
        const std::string& e = (*block)[j];
        if (blank_or_comment(e)) continue;
        if (indent_of(e) > keys || (jobs && indent_of(e) == keys && e[keys] == '-')) entry = indent_of(e);
        break;
      }
      m.snippet = yaml_entry(jobs, entry, run);
      m.where = "It has a pre-push: " + list + ": " + (jobs ? "list" : "map") + " already: add this entry to it, after its " +
                "last entry, in " + m.config;
      return;
    }
  }
  m.snippet = std::string(keys, ' ') + "jobs:\n" + yaml_entry(true, keys + 2, run);
  m.where = "It has a pre-push: key already: add this under it, in " + m.config;
}

Manager lefthook_manager(const fs::path& top, const std::string& config, const std::string& run_line) {
  Manager m{"lefthook", config, "", "lefthook install", "Add this to " + config, false};
  const std::string text = read_or_empty(top / config);
  m.calls_phoenix = text.find("hook run pre-push") != std::string::npos;
  // use_stdin: lefthook otherwise keeps git's ref lines to itself; {1} {2}
  // are git's arguments (remote name and URL).
  const std::string run = run_line + " {1} {2}";
  if (util::ends_with(config, ".toml")) {
    // An array of tables: it merges with a [pre-push] table already there.
    m.snippet = "[[pre-push.jobs]]\nname = \"phoenix\"\nrun = \"" + run + "\"\nuse_stdin = true\n";
  } else if (util::ends_with(config, ".json")) {
    const std::string job = "{ \"name\": \"phoenix\", \"run\": \"" + run + "\", \"use_stdin\": true }";
    if (text.find("\"pre-push\"") != std::string::npos) {
      m.snippet = job + "\n";
      m.where = "It has a \"pre-push\" already: add this object to its \"jobs\" array, in " + config;
    } else {
      m.snippet = "\"pre-push\": {\n  \"jobs\": [\n    " + job + "\n  ]\n}\n";
    }
  } else {
    lefthook_yaml(text, run, m);
  }
  return m;
}

}  // namespace

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
      // husky runs .husky/pre-push with git's argv and stdin (`sh -e`: it
      // stops at the first line that fails): one line there hands both on.
      const fs::path file = top / ".husky" / "pre-push";
      const bool exists = fs::is_regular_file(file, ec);
      return Manager{"husky", ".husky/pre-push", run_line + " \"$@\"\n", "",
                     exists ? "Append this line to .husky/pre-push (it runs after the lines there)"
                            : "Create .husky/pre-push with this line",
                     file_mentions(file, "hook run pre-push")};
    }
  }
  for (const char* name : kLefthookFiles)
    if (fs::exists(top / name, ec)) return lefthook_manager(top, name, run_line);
  return std::nullopt;
}

std::vector<ManagerCall> manager_calls(const std::string& workdir) {
  std::vector<std::string> files{".husky/pre-push"};
  files.insert(files.end(), std::begin(kLefthookFiles), std::end(kLefthookFiles));
  files.push_back(".pre-commit-config.yaml");
  std::vector<ManagerCall> out;
  for (const std::string& f : files) {
    const std::vector<std::string> lines = util::split_lines(read_or_empty(fs::path(workdir) / f));
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      if (l.find("hook run pre-push") != std::string::npos || l.find("phoenix-hook") != std::string::npos ||
          l.find("phoenix-pre-push") != std::string::npos)
        out.push_back({f, static_cast<int>(i + 1), util::trim(l)});
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// Who runs on push

namespace {

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
    if (m->calls_phoenix) return m->name + "'s " + m->config + " calls Phoenix";
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

// ---------------------------------------------------------------------------
// The hooks folder from git's configuration files

std::optional<std::pair<fs::path, fs::path>> git_dirs(const fs::path& root) {
  std::error_code ec;
  const fs::path dot = root / ".git";
  if (fs::is_directory(dot, ec)) return std::make_pair(dot, dot);
  const std::optional<std::string> named_dir = util::gitdir_of_file(dot.string());
  if (!named_dir) return std::nullopt;
  const fs::path dir = *named_dir;
  fs::path common = dir;
  const fs::path named = dir / "commondir";
  if (fs::exists(named, ec)) {
    try {
      fs::path c = util::trim(util::read_file(named.string()));
      common = c.is_relative() ? dir / c : c;
    } catch (const Error&) { return std::nullopt; }
  }
  return std::make_pair(dir.lexically_normal(), common.lexically_normal());
}

namespace {

// Adds the files `text` (the configuration file at `file`) includes
// ([include] and [includeIf "..."] sections' `path`) to `files`; false when
// a path is written in a way this reader does not follow (quotes,
// escapes).
bool add_includes(const fs::path& file, const std::string& text, std::vector<fs::path>& files) {
  bool in_include = false;
  for (const std::string& raw : util::split_lines(text)) {
    const std::string line = util::trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      in_include = util::starts_with(util::lower(line), "[include");
      continue;
    }
    if (!in_include) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos || util::lower(util::trim(line.substr(0, eq))) != "path") continue;
    const std::string value = util::trim(line.substr(eq + 1));
    if (value.find_first_of("\"\\;#") != std::string::npos) return false;
    fs::path p = value;
    if (util::starts_with(value, "~/")) {
      const char* home = std::getenv("HOME");
      if (!home) return false;
      p = fs::path(home) / value.substr(2);
    } else if (p.is_relative()) {
      p = file.parent_path() / p;
    }
    files.push_back(p);
  }
  return true;
}

}  // namespace

std::optional<HookOwner> hook_owner_from_files(const std::string& root) {
  if (std::getenv("GIT_CONFIG_PARAMETERS") || std::getenv("GIT_CONFIG_COUNT")) return std::nullopt;
  const auto dirs = git_dirs(root);
  if (!dirs) return std::nullopt;
  const auto& [git_dir, common] = *dirs;
  // Every file git may read its configuration from; one too many only
  // sends the question to git.
  std::vector<fs::path> files{"/etc/gitconfig", "/usr/local/etc/gitconfig", common / "config",
                              git_dir / "config.worktree"};
  for (const char* env : {"GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL"})
    if (const char* v = std::getenv(env); v && *v) files.emplace_back(v);
  if (const char* exec = std::getenv("GIT_EXEC_PATH"); exec && *exec)  // <prefix>/lib/git-core
    files.push_back(fs::path(exec).parent_path().parent_path() / "etc/gitconfig");
  if (const char* home = std::getenv("HOME"); home && *home) {
    files.push_back(fs::path(home) / ".gitconfig");
    files.push_back(fs::path(home) / ".config/git/config");
  }
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg) files.push_back(fs::path(xdg) / "git/config");
  for (size_t i = 0; i < files.size(); ++i) {
    if (i > 64) return std::nullopt;  // an include cycle, or more than anyone writes
    std::optional<std::string> read;
    try {
      read = util::read_file_if_exists(files[i].string());
    } catch (const Error&) { return std::nullopt; }  // there but unreadable: git's to say
    if (!read) continue;
    const std::string& text = *read;
    const std::string low = util::lower(text);
    if (low.find("hookspath") != std::string::npos) return std::nullopt;
    if (low.find("include") != std::string::npos && !add_includes(files[i], text, files)) return std::nullopt;
  }
  return hook_owner(root, (common / "hooks").lexically_normal().string(), std::nullopt);
}

std::optional<HookOwner> hook_owner_of(const std::string& root) {
  if (auto o = hook_owner_from_files(root)) return o;
  return hook_owner_from_git(root);
}

}  // namespace phoenix::hook
