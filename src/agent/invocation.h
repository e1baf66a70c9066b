// One run's invocation: the argv with the prompt put in (argument, file or
// stdin), its environment; and the prompt's {{placeholders}}.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/presets.h"
#include "config/config.h"

namespace phoenix::agent {

// A prompt longer than this is never put in argv: Linux refuses a single
// argument over 128 KiB (MAX_ARG_STRLEN) and other systems have smaller
// total limits. It goes to a file and the argument becomes
// long_prompt_instruction(file).
inline constexpr size_t kMaxPromptArgBytes = 100 * 1024;

// The short argument that replaces a long prompt.
std::string long_prompt_instruction(const std::string& prompt_file);

// Replaces every "{prompt}" and "{prompt_file}" in each element, whether it
// is the whole element or part of one ("--message={prompt_file}"). One
// element in, one element out: nothing is split or re-parsed, and text that
// came from the prompt is never scanned for placeholders again.
std::vector<std::string> substitute_placeholders(const std::vector<std::string>& argv, const std::string& prompt,
                                                 const std::string& prompt_file);

// What to run for one prompt.
struct Invocation {
  std::vector<std::string> argv;
  std::optional<std::string> stdin_data;   // the prompt, for kStdin
  std::map<std::string, std::string> env;  // preset env, then harness.env
  PromptVia via = PromptVia::kStdin;
  std::string prompt_file;           // "" when no file was written
  bool long_prompt_in_file = false;  // {prompt} was replaced by an instruction
};

// Builds the invocation for `harness`: its `command` when given (a custom
// argv: {prompt_file} → a file, {prompt} → an argument, neither → stdin),
// else its preset's. `write_prompt_file(content)` stores content where the
// agent can read it and returns the path; it is called at most once, and
// only when a file is needed. Throws ConfigError when neither a command nor
// a known preset is configured.
Invocation plan_invocation(const config::Harness& harness, const std::string& prompt,
                           const std::function<std::string(const std::string&)>& write_prompt_file);

// Replaces each {{name}} (spaces inside the braces allowed) whose name is in
// `values`; unknown ones are left as written. One pass: a value containing
// "{{signal}}" stays as it is.
std::string render_prompt(std::string_view tmpl, const std::map<std::string, std::string>& values);

}  // namespace phoenix::agent
