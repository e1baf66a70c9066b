// phoenix config show: every value of phoenix.json and where it came from.
#include <algorithm>
#include <iostream>

#include "cli/app.h"
#include "config/config.h"
#include "util/error.h"

namespace phoenix::cli {

using nlohmann::json;

int cmd_config(const std::vector<std::string>& args) {
  po::options_description desc("config options");
  Parsed p;
  if (!parse_command("config", desc, args, p)) return kExitOk;
  if (p.positional.size() != 1 || p.positional[0] != "show") throw UsageError("config: the subcommand is 'show'");
  config::Config c = config::load(p.ctx.root, false);
  auto o = [&](const std::string& k) { return c.origin.count(k) ? c.origin.at(k) : std::string("default"); };
  json rows = json::array();
  auto add = [&](const std::string& key, const json& value, const std::string& origin) {
    rows.push_back({{"key", key}, {"value", value}, {"origin", origin}});
  };
  json ids = json::array();
  for (const auto& ch : c.checks) ids.push_back(ch.id);
  add("checks", ids, o("checks"));
  add("harness", c.harness.preset.empty() ? json(c.harness.command) : json(c.harness.preset), o("harness"));
  add("harness.timeout_s", c.harness.timeout_s, o("harness"));
  add("fixers", c.fixers, o("fixers"));
  for (const auto& [type, n] : c.budgets) {
    bool set = c.raw.is_object() && c.raw.contains("budgets") && c.raw["budgets"].contains(type);
    add("budgets." + type, n, set ? "phoenix.json" : "default");
  }
  add("session_cap", c.session_cap, o("session_cap"));
  add("diff_cap", c.diff_cap, o("diff_cap"));
  add("patch_files_cap", c.patch_files_cap, o("patch_files_cap"));
  add("patch_bytes_cap", c.patch_bytes_cap, o("patch_bytes_cap"));
  add("circuit_breaker", c.circuit_breaker, o("circuit_breaker"));
  add("flaky_reruns", c.flaky_reruns, o("flaky_reruns"));
  add("protected", c.protected_globs, o("protected"));
  add("hook.mode", c.hook.mode, o("hook"));
  add("hook.checks", c.hook.checks, o("hook"));
  add("hook.verify_skipped", c.hook.verify_skipped, o("hook"));
  add("loop.max_iterations", c.loop.max_iterations, o("loop"));
  add("loop.iteration_timeout_s", c.loop.iteration_timeout_s, o("loop"));
  add("loop.on_escalate", c.loop.on_escalate, o("loop"));
  if (p.ctx.json) {
    print_json(p.ctx,
               {{"file", c.path.empty() ? json(nullptr) : json(p.ctx.root + "/phoenix.json")}, {"values", rows}});
    return kExitOk;
  }
  std::cout << "# " << (c.path.empty() ? std::string("no phoenix.json: defaults") : p.ctx.root + "/phoenix.json")
            << "\n";
  for (const auto& r : rows) {
    std::string k = r["key"];
    k.resize(std::max<size_t>(k.size(), 26), ' ');
    std::string v = r["value"].is_string() ? r["value"].get<std::string>() : r["value"].dump();
    std::cout << k << " " << v << dim(p.ctx, "   (" + r["origin"].get<std::string>() + ")") << "\n";
  }
  return kExitOk;
}

}  // namespace phoenix::cli
