// Phoenix's entry in an agent CLI's stop-hook configuration: see
// hook/agent_config.h.
#include "hook/agent_config.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/json.h"
#include "util/json_edit.h"
#include "util/text.h"

namespace phoenix::hook {

namespace fs = std::filesystem;
using OJson = nlohmann::ordered_json;

namespace {

// What marks a command as Phoenix's stop hook, whatever binary it names.
constexpr const char* kMarker = " hook run stop --agent ";
constexpr const char* kGeminiGuard = "; c=$?; [ $c -eq 0 ] || [ $c -eq 2 ] || exit 1; exit $c";

// The matcher group Phoenix writes. Each CLI's own names: claude and codex
// take the timeout in seconds, gemini in milliseconds and shows `name`.
OJson entry(AgentCli cli, const std::string& command) {
  OJson hook = {{"type", "command"}, {"command", command}};
  if (cli == AgentCli::kGemini) {
    hook["name"] = "phoenix";
    hook["timeout"] = kAgentHookTimeoutS * 1000;
  } else {
    hook["timeout"] = kAgentHookTimeoutS;
  }
  return OJson{{"hooks", OJson::array({hook})}};
}

// The command of a matcher group when it is Phoenix's, else "".
std::string our_command(const util::Json& group) {
  if (!group.is_object() || !group.contains("hooks") || !group["hooks"].is_array()) return "";
  for (const auto& h : group["hooks"]) {
    if (!h.is_object() || !h.contains("command") || !h["command"].is_string()) continue;
    const std::string c = h["command"].get<std::string>();
    if (c.find(kMarker) != std::string::npos) return c;
  }
  return "";
}

struct Settings {
  std::string path;
  bool exists = false;
  std::string text;
  unsigned mode = 0644;
};

// The file, parsed once to name any error (nothing is written then): JSON
// that does not parse, or "hooks" and the event's list of another type
// than the CLI reads, named with line:col.
Settings read_settings(const std::string& path, AgentCli cli) {
  Settings s;
  s.path = path;
  const std::optional<std::string> text = util::read_file_if_exists(path);
  s.exists = text.has_value();
  s.text = text.value_or("");
  struct stat st {};
  if (s.exists && ::stat(path.c_str(), &st) == 0) s.mode = st.st_mode & 07777;
  if (util::trim(s.text).empty()) {
    s.text = "{}\n";
    return s;
  }
  const util::Json doc = util::parse_json(s.text, path);
  if (!doc.is_object()) throw ConfigError(path + ":1:1: the settings are not a JSON object");
  auto where = [&](const std::string& key) {
    const auto paths = util::json_paths(s.text);
    const auto at = paths.find(key);
    return path + ":" + (at == paths.end() ? std::string("1:1") : util::line_col(s.text, at->second));
  };
  if (!doc.contains("hooks")) return s;
  const util::Json& hooks = doc["hooks"];
  if (!hooks.is_object()) throw ConfigError(where("hooks") + ": hooks: must be an object");
  const std::string event = stop_event(cli);
  if (hooks.contains(event) && !hooks[event].is_array())
    throw ConfigError(where("hooks." + event) + ": hooks." + event + ": must be an array");
  return s;
}

// Phoenix's groups in the event's array: index and span, in order.
std::vector<std::pair<size_t, util::JsonSpan>> our_groups(const Settings& s, AgentCli cli) {
  std::vector<std::pair<size_t, util::JsonSpan>> out;
  const std::vector<util::JsonSpan> groups = util::json_elements(s.text, {"hooks", stop_event(cli)});
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string piece = s.text.substr(groups[i].begin, groups[i].end - groups[i].begin);
    util::Json j = util::Json::parse(piece, nullptr, false, true);
    if (!our_command(j).empty()) out.emplace_back(i, groups[i]);
  }
  return out;
}

void write_settings(const Settings& s, const std::string& text) {
  std::error_code ec;
  fs::create_directories(fs::path(s.path).parent_path(), ec);
  if (ec) throw Error("cannot create " + fs::path(s.path).parent_path().string() + ": " + ec.message());
  util::write_file_atomic(s.path, text, s.mode);
}

// Appends "/<file>" to info/exclude unless a line says it already.
bool exclude(const std::string& exclude_file, const std::string& file) {
  const std::string line = "/" + file;
  const std::string text = util::read_file_if_exists(exclude_file).value_or("");
  for (const std::string& l : util::split_lines(text))
    if (util::trim(l) == line || util::trim(l) == file) return false;
  std::error_code ec;
  fs::create_directories(fs::path(exclude_file).parent_path(), ec);
  std::string out = text;
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "# the personal stop hook of an agent CLI ('phoenix hook install --agent')\n" + line + "\n";
  util::write_file_atomic(exclude_file, out);
  return true;
}

std::vector<std::string> files_of(AgentCli cli) {
  std::vector<std::string> out{agent_hook_file(cli, false)};
  if (agent_hook_file(cli, true) != out.front()) out.push_back(agent_hook_file(cli, true));
  return out;
}

}  // namespace

const char* agent_name(AgentCli cli) {
  switch (cli) {
    case AgentCli::kClaude: return "claude";
    case AgentCli::kCodex: return "codex";
    case AgentCli::kGemini: return "gemini";
  }
  return "?";
}

const std::vector<AgentCli>& agent_clis() {
  static const std::vector<AgentCli> all{AgentCli::kClaude, AgentCli::kCodex, AgentCli::kGemini};
  return all;
}

std::optional<AgentCli> parse_agent(const std::string& word) {
  for (AgentCli c : agent_clis())
    if (word == agent_name(c)) return c;
  return std::nullopt;
}

std::string agent_names() {
  std::string out;
  for (AgentCli c : agent_clis()) out += (out.empty() ? "" : ", ") + std::string(agent_name(c));
  return out;
}

const char* stop_event(AgentCli cli) { return cli == AgentCli::kGemini ? "AfterAgent" : "Stop"; }

bool has_personal_layer(AgentCli cli) { return cli == AgentCli::kClaude; }

std::string agent_hook_file(AgentCli cli, bool shared) {
  switch (cli) {
    case AgentCli::kClaude: return shared ? ".claude/settings.json" : ".claude/settings.local.json";
    case AgentCli::kCodex: return ".codex/hooks.json";
    case AgentCli::kGemini: return ".gemini/settings.json";
  }
  return "";
}

std::string agent_hook_command(const std::string& phoenix, AgentCli cli) {
  const std::string command = util::join_argv({phoenix}) + kMarker + agent_name(cli);
  // gemini 0.61 takes any exit but 0 and 1 as a refusal: a phoenix that
  // cannot start (moved, uninstalled: the shell's 127) would hold the
  // session for ever. Every exit but a refusal's 2 is made 1, which gemini
  // shows as a warning and lets the agent stop.
  if (cli == AgentCli::kGemini) return command + kGeminiGuard;
  return command;
}

AgentInstall install_agent_hook(const std::string& workdir, AgentCli cli, bool shared, const std::string& command,
                                const std::string& exclude_file, bool tracked) {
  const std::string rel = agent_hook_file(cli, shared);
  Settings s = read_settings((fs::path(workdir) / rel).string(), cli);
  AgentInstall out;
  out.file = s.path;
  out.command = command;
  const OJson want = entry(cli, command);
  const auto ours = our_groups(s, cli);
  std::string text = s.text;
  if (ours.empty()) {
    text = util::json_append(s.text, {"hooks", stop_event(cli)}, want);
    out.action = "installed";
  } else {
    const util::JsonSpan span = ours.front().second;
    const util::Json have = util::Json::parse(s.text.substr(span.begin, span.end - span.begin), nullptr, false, true);
    if (have == util::Json::parse(want.dump())) {
      out.action = "unchanged";
    } else {
      text = util::json_replace(s.text, span, want);
      out.action = "updated";
    }
  }
  if (out.action != "unchanged" || !s.exists) {
    if (!util::ends_with(text, "\n")) text += "\n";
    write_settings(s, text);
  }
  if (!shared && !tracked) out.excluded = exclude(exclude_file, rel);
  return out;
}

AgentUninstall uninstall_agent_hook(const std::string& workdir, AgentCli cli) {
  AgentUninstall out;
  std::vector<Settings> read;
  for (const std::string& rel : files_of(cli)) {
    const std::string path = (fs::path(workdir) / rel).string();
    if (!util::path_exists(path)) continue;
    read.push_back(read_settings(path, cli));  // every file parses before any is written
  }
  for (const Settings& s : read) {
    auto ours = our_groups(s, cli);
    if (ours.empty()) continue;
    std::string text = s.text;
    for (auto it = ours.rbegin(); it != ours.rend(); ++it)
      text = util::json_remove(text, {"hooks", stop_event(cli)}, it->first);
    out.files.push_back(s.path);
    const util::Json left = util::Json::parse(text, nullptr, false, true);
    if (left.is_object() && left.empty()) {
      if (std::remove(s.path.c_str()) != 0) throw_errno("cannot remove " + s.path);
      std::error_code ec;
      fs::remove(fs::path(s.path).parent_path(), ec);  // only when empty
      out.deleted.push_back(s.path);
    } else {
      write_settings(s, text);
    }
  }
  return out;
}

std::vector<AgentHookState> installed_agent_hooks(const std::string& workdir) {
  std::vector<AgentHookState> out;
  for (AgentCli cli : agent_clis()) {
    for (const std::string& rel : files_of(cli)) {
      const std::string path = (fs::path(workdir) / rel).string();
      if (!util::path_exists(path)) continue;
      AgentHookState st{cli, path, rel == agent_hook_file(cli, true) && has_personal_layer(cli), "", "", ""};
      try {
        const Settings s = read_settings(path, cli);
        for (const auto& [i, span] : our_groups(s, cli)) {
          (void)i;
          st.command =
              our_command(util::Json::parse(s.text.substr(span.begin, span.end - span.begin), nullptr, false, true));
          try {
            const std::vector<std::string> words = util::split_words(st.command);
            st.program = words.empty() ? "" : words.front();
          } catch (const Error&) {
            st.program = st.command;  // an unterminated quote: shown as it is
          }
          break;
        }
      } catch (const Error& e) { st.problem = e.what(); }
      if (!st.command.empty() || !st.problem.empty()) out.push_back(st);
    }
  }
  return out;
}

std::string codex_trust_problem(const std::string& workdir, const std::string& codex_home) {
  const std::string text = util::read_file_if_exists(codex_home + "/config.toml").value_or("");
  const std::string root = fs::path(workdir).lexically_normal().string();
  // [projects."/abs/path"] followed by trust_level = "trusted" before the next table.
  bool project = false;
  const std::string table =
      "[projects.\"" + (root.size() > 1 && root.back() == '/' ? root.substr(0, root.size() - 1) : root) + "\"]";
  if (size_t at = text.find(table); at != std::string::npos) {
    const size_t next = text.find("\n[", at + table.size());
    const std::string body = text.substr(at, next == std::string::npos ? std::string::npos : next - at);
    project = body.find("trust_level = \"trusted\"") != std::string::npos;
  }
  const bool hook = text.find((fs::path(root) / ".codex/hooks.json").string() + ":stop:") != std::string::npos &&
                    text.find("trusted_hash") != std::string::npos;
  if (project && hook) return "";
  std::string why;
  if (!project)
    why = "the project is not trusted (accept 'Trust this folder?' in codex, or run 'codex exec --trust' once)";
  if (!hook)
    why += std::string(why.empty() ? "" : "; ") +
           "the hook is not trusted yet (answer codex's 'Hooks need review' with 'Trust all and continue'; headless: "
           "codex exec --dangerously-bypass-hook-trust)";
  return why;
}

}  // namespace phoenix::hook
