#include "agent/invocation.h"

#include <algorithm>

#include "agent/internal.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::agent {
namespace {

using detail::contains;

bool argv_contains(const std::vector<std::string>& argv, std::string_view needle) {
  return std::any_of(argv.begin(), argv.end(), [&](const std::string& a) { return contains(a, needle); });
}

}  // namespace

// ---------------------------------------------------------------------------
// argv.

std::string long_prompt_instruction(const std::string& prompt_file) {
  return "Your task is too long to pass as a command-line argument. It is in the file " + prompt_file +
         " (at the top of this repository). Read that file and follow its instructions; do not edit or "
         "delete it.";
}

std::vector<std::string> substitute_placeholders(const std::vector<std::string>& argv, const std::string& prompt,
                                                 const std::string& prompt_file) {
  static constexpr std::string_view kFile = "{prompt_file}";
  static constexpr std::string_view kPrompt = "{prompt}";
  std::vector<std::string> out;
  out.reserve(argv.size());
  for (const std::string& a : argv) {
    std::string s;
    for (size_t i = 0; i < a.size();) {
      std::string_view rest = std::string_view(a).substr(i);
      if (util::starts_with(rest, kFile)) {
        s += prompt_file;
        i += kFile.size();
      } else if (util::starts_with(rest, kPrompt)) {
        s += prompt;
        i += kPrompt.size();
      } else {
        s += a[i++];
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

Invocation plan_invocation(const config::Harness& harness, const std::string& prompt,
                           const std::function<std::string(const std::string&)>& write_prompt_file) {
  const HarnessPreset* preset = nullptr;
  if (!harness.preset.empty()) {
    preset = find_preset(harness.preset);
    if (!preset) throw ConfigError("harness: unknown preset '" + harness.preset + "'");
  }
  Invocation inv;
  std::vector<std::string> argv;
  if (!harness.command.empty()) {
    argv = harness.command;
  } else if (preset) {
    argv = preset->argv;
  } else {
    throw ConfigError("harness: no preset or command configured");
  }
  if (preset) inv.env = preset->env;
  for (const auto& [k, v] : harness.env) inv.env[k] = v;

  const bool wants_file = argv_contains(argv, "{prompt_file}");
  const bool wants_arg = argv_contains(argv, "{prompt}");
  const bool too_long = wants_arg && prompt.size() > kMaxPromptArgBytes;
  inv.via = wants_file ? PromptVia::kFile : wants_arg ? PromptVia::kArgument : PromptVia::kStdin;
  if (wants_file || too_long) inv.prompt_file = write_prompt_file(prompt);
  inv.long_prompt_in_file = too_long;
  inv.argv =
      substitute_placeholders(argv, too_long ? long_prompt_instruction(inv.prompt_file) : prompt, inv.prompt_file);
  if (!wants_file && !wants_arg) inv.stdin_data = prompt;
  return inv;
}

std::string render_prompt(std::string_view tmpl, const std::map<std::string, std::string>& values) {
  std::string out;
  out.reserve(tmpl.size() + 1024);
  size_t i = 0;
  while (i < tmpl.size()) {
    size_t open = tmpl.find("{{", i);
    if (open == std::string_view::npos) break;
    size_t close = tmpl.find("}}", open + 2);
    if (close == std::string_view::npos) break;
    out.append(tmpl.substr(i, open - i));
    const std::string name = util::trim(tmpl.substr(open + 2, close - open - 2));
    auto it = values.find(name);
    if (it != values.end()) out += it->second;
    else out.append(tmpl.substr(open, close + 2 - open));
    i = close + 2;
  }
  out.append(tmpl.substr(std::min(i, tmpl.size())));
  return out;
}

}  // namespace phoenix::agent
