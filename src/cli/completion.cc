// `phoenix __complete WORD...` (cli/manual.h): what completions/phoenix.bash
// and completions/_phoenix ask for. The candidates come from the same tables
// --help prints (describe_commands) and from phoenix.json's check ids.
#include <algorithm>
#include <iostream>

#include "cli/app.h"
#include "cli/context.h"
#include "cli/manual.h"
#include "config/config.h"
#include "hook/agent_config.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::cli {

namespace {

std::vector<std::string> check_ids_at(const std::string& cwd) {
  try {
    Context ctx = make_context(cwd);
    return config::load(ctx.root, false).check_ids();
  } catch (...) {
    return {};  // completion never prints an error
  }
}

bool takes_check_id(const std::string& command, const std::string& flag) {
  // sense --check takes a JSON object; snapshot and heal take an id too.
  return flag == "--only" || flag == "--recheck" || (flag == "--check" && command != "sense");
}

}  // namespace

int complete(const std::vector<std::string>& words, const std::string& cwd) {
  std::string cur = words.empty() ? "" : words.back();
  std::vector<std::string> before(words.begin(), words.empty() ? words.begin() : words.end() - 1);
  std::string dir = cwd;
  std::vector<std::string> candidates;
  auto emit = [&](const std::string& prefix_kept, const std::string& partial) {
    for (const auto& c : candidates)
      if (util::starts_with(c, partial)) std::cout << prefix_kept << c << "\n";
    return kExitOk;
  };

  // The command is the first word that is neither an option nor -C's value.
  size_t i = 0;
  while (i < before.size() && util::starts_with(before[i], "-")) {
    if (before[i] == "-C" && i + 1 < before.size()) dir = before[i + 1], i += 2;
    else ++i;
  }
  if (i >= before.size()) {
    if (!before.empty() && before.back() == "-C") return kExitOk;  // a directory: the shell completes it
    if (util::starts_with(cur, "-")) candidates = {"--help", "--version", "-C"};
    else
      for (const auto& c : commands()) candidates.push_back(c.name);
    return emit("", cur);
  }
  std::string command = before[i];
  std::vector<CommandInfo> infos = describe_commands();
  auto info = std::find_if(infos.begin(), infos.end(), [&](const CommandInfo& c) { return c.name == command; });
  if (info == infos.end()) return kExitOk;
  std::vector<std::string> rest(before.begin() + static_cast<long>(i) + 1, before.end());
  for (size_t k = 0; k + 1 < rest.size(); ++k)
    if (rest[k] == "-C" || rest[k] == "--directory") dir = rest[k + 1];

  // The value of the option just before the cursor.
  if (!rest.empty()) {
    const std::string& prev = rest.back();
    for (const auto& o : info->options)
      if ((prev == o.long_name || (!o.short_name.empty() && prev == o.short_name)) && !o.value.empty()) {
        if (o.long_name == "--agent") {
          for (hook::AgentCli cli : hook::agent_clis()) candidates.push_back(hook::agent_name(cli));
          return emit("", cur);
        }
        if (takes_check_id(command, o.long_name)) {
          candidates = check_ids_at(dir);
          // --only a,b,c: complete the last element of the list.
          size_t comma = cur.rfind(',');
          if (o.long_name == "--only" && comma != std::string::npos)
            return emit(cur.substr(0, comma + 1), cur.substr(comma + 1));
          return emit("", cur);
        }
        return kExitOk;  // a free value (or a directory): the shell's default
      }
  }
  if (util::starts_with(cur, "-")) {
    for (const auto& o : info->options) candidates.push_back(o.long_name);
    return emit("", cur);
  }
  std::vector<std::string> positional;
  for (size_t k = 0; k < rest.size(); ++k) {
    if (util::starts_with(rest[k], "-")) {
      for (const auto& o : info->options)
        if ((rest[k] == o.long_name || rest[k] == o.short_name) && !o.value.empty()) ++k;
      continue;
    }
    positional.push_back(rest[k]);
  }
  if (!info->subcommands.empty() && positional.empty()) {
    candidates = info->subcommands;
    if (command == "hook")
      for (const char* word : {"pre-push", "stop"})
        candidates.erase(std::remove(candidates.begin(), candidates.end(), word), candidates.end());
    return emit("", cur);
  }
  if (command == "hook" && positional.size() == 1 && positional[0] == "run") candidates = {"pre-push", "stop"};
  else if (command == "sense") candidates = check_ids_at(dir);
  return emit("", cur);
}

}  // namespace phoenix::cli
