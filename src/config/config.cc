#include "config/config.h"

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "checks/url.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::config {

using util::Json;

namespace {

const std::vector<std::string> kTopKeys{
    "$schema",         "checks",          "harness",         "fixers",    "budgets",     "session_cap", "diff_cap",
    "patch_files_cap", "patch_bytes_cap", "circuit_breaker", "protected", "hook",        "loop",        "sandbox",
    "prompt_template", "setup",           "bisect",          "git",       "flaky_reruns"};

int positive_int(const Json& j, const std::string& where) {
  if (!j.is_number_integer() || j.get<long long>() < 0 || j.get<long long>() > 1000000)
    throw ConfigError(where + ": must be a whole number >= 0");
  return static_cast<int>(j.get<long long>());
}

double positive_seconds(const Json& j, const std::string& where) {
  if (!j.is_number() || j.get<double>() <= 0) throw ConfigError(where + ": must be a positive number of seconds");
  return j.get<double>();
}

std::string one_of(const Json& j, const std::string& where, const std::vector<std::string>& allowed) {
  std::string all;
  for (const auto& a : allowed) all += (all.empty() ? "" : "|") + a;
  if (!j.is_string()) throw ConfigError(where + ": must be one of " + all);
  std::string v = j.get<std::string>();
  for (const auto& a : allowed)
    if (a == v) return v;
  std::string near = util::nearest(v, allowed);
  throw ConfigError(where + ": '" + v + "' is not one of " + all +
                    (near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

// An enum's words, in the order an error lists them.
template <class E>
struct Word {
  E value;
  const char* word;
};

constexpr Word<Baseline> kBaselineWords[] = {
    {Baseline::kHeal, "heal"}, {Baseline::kIgnore, "ignore"}, {Baseline::kStop, "stop"}};
constexpr Word<OnEscalate> kOnEscalateWords[] = {{OnEscalate::kStop, "stop"}, {OnEscalate::kSkip, "skip"}};
constexpr Word<HookMode> kHookModeWords[] = {{HookMode::kVerify, "verify"}, {HookMode::kHeal, "heal"}};
constexpr Word<WebhookFormat> kWebhookFormatWords[] = {{WebhookFormat::kJson, "json"},
                                                       {WebhookFormat::kNtfy, "ntfy"},
                                                       {WebhookFormat::kSlack, "slack"},
                                                       {WebhookFormat::kDiscord, "discord"},
                                                       {WebhookFormat::kTelegram, "telegram"}};

// The value `j` names, or one_of's error.
template <class E, size_t N>
E word_of(const Json& j, const std::string& where, const Word<E> (&words)[N]) {
  std::vector<std::string> allowed;
  for (const auto& w : words) allowed.push_back(w.word);
  const std::string v = one_of(j, where, allowed);
  for (const auto& w : words)
    if (v == w.word) return w.value;
  return words[0].value;  // not reached: one_of took only these words
}

template <class E, size_t N>
const char* name_of(E e, const Word<E> (&words)[N]) {
  for (const auto& w : words)
    if (w.value == e) return w.word;
  return "?";
}

void parse_bisect(Config& c, const Json& b) {
  if (!b.is_object()) throw ConfigError("bisect: must be an object");
  util::reject_unknown_keys(b, {"parallel"}, "bisect");
  if (!b.contains("parallel")) return;
  const Json& k = b["parallel"];
  if (!k.is_number_integer() || k.get<long long>() < 1 || k.get<long long>() > 64)
    throw ConfigError("bisect.parallel: '" + k.dump() + "' must be a whole number from 1 to 64");
  c.bisect_parallel = static_cast<int>(k.get<long long>());
}

double positive_amount(const Json& j, const std::string& where, const std::string& unit) {
  if (!j.is_number() || j.get<double>() <= 0) throw ConfigError(where + ": must be a positive number of " + unit);
  return j.get<double>();
}

// The name of an environment variable, from loop.notify.<key>.
std::string env_name(const Json& n, const char* key, const std::string& fallback) {
  std::string where = std::string("loop.notify.") + key;
  if (!n.contains(key)) return fallback;
  bool ok = n[key].is_string() && !n[key].get<std::string>().empty();
  for (char c : ok ? n[key].get<std::string>() : "")
    ok = ok && (c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
  if (!ok) throw ConfigError(where + ": must name an environment variable (letters, digits, _), e.g. \"MY_TOKEN\"");
  return n[key].get<std::string>();
}

// loop.notify's webhook: url, format, the secrets' variables, retries.
Webhook parse_webhook(const Json& n) {
  Webhook w;
  if (n.contains("format")) w.format = word_of(n["format"], "loop.notify.format", kWebhookFormatWords);
  bool telegram = w.format == WebhookFormat::kTelegram;
  if (telegram) w.url = "https://api.telegram.org";
  if (n.contains("url")) {
    if (!n["url"].is_string()) throw ConfigError("loop.notify.url: must be an http:// or https:// URL");
    w.url = n["url"].get<std::string>();
  }
  checks::Url u = checks::parse_web_url(w.url, "loop.notify.url");
  if (n.contains("verify") && !(n["verify"].is_boolean() && n["verify"].get<bool>()))
    throw ConfigError("loop.notify.verify: " + n["verify"].dump() +
                      " is not offered: certificates are always verified (trust a private CA with SSL_CERT_FILE)");
  if (telegram && u.target != "/" && !u.target.empty())
    throw ConfigError("loop.notify.url: '" + checks::shown_url(w.url) +
                      "': for telegram give the Bot API's base URL only (https://api.telegram.org); the token "
                      "comes from loop.notify.token_env");
  w.token_env = env_name(n, "token_env", telegram ? "PHOENIX_TELEGRAM_TOKEN" : "");
  w.chat_env = env_name(n, "chat_env", telegram ? "PHOENIX_TELEGRAM_CHAT" : "");
  if (!telegram && n.contains("chat_env")) throw ConfigError("loop.notify.chat_env: only for \"format\": \"telegram\"");
  if (n.contains("attempts")) {
    w.attempts = positive_int(n["attempts"], "loop.notify.attempts");
    if (w.attempts < 1 || w.attempts > 10) throw ConfigError("loop.notify.attempts: must be 1 to 10");
  }
  if (n.contains("timeout_s")) w.timeout_s = positive_seconds(n["timeout_s"], "loop.notify.timeout_s");
  return w;
}

// loop.notify: an argv array (run on each event), or an object with a
// webhook "url" and "format" (and optionally that "command" too).
void parse_notify(const Json& n, Loop& loop) {
  if (n.is_array()) {
    loop.notify = util::string_array(n, "loop.notify");
    return;
  }
  if (!n.is_object())
    throw ConfigError(
        "loop.notify: must be an argv array or an object like {\"url\": \"https://...\", \"format\": \"ntfy\"}");
  util::reject_unknown_keys(n, {"url", "format", "command", "attempts", "timeout_s", "token_env", "chat_env", "verify"},
                            "loop.notify");
  if (n.contains("command")) loop.notify = util::string_array(n["command"], "loop.notify.command");
  if (!n.contains("url") && !n.contains("format")) {
    if (loop.notify.empty()) throw ConfigError("loop.notify: give a \"url\" (a webhook) or a \"command\" (argv)");
    return;
  }
  if (!n.contains("url") && n["format"] != "telegram")
    throw ConfigError("loop.notify.url: missing (the webhook's URL)");
  loop.webhook = parse_webhook(n);
}

// The "loop" object: phoenix-loop's settings.
void parse_loop(const Json& l, Loop& loop) {
  if (!l.is_object()) throw ConfigError("loop: must be an object");
  util::reject_unknown_keys(
      l,
      {"tasks", "prompt", "on_escalate", "max_iterations", "iteration_timeout_s", "baseline", "heartbeat_s",
       "no_progress_limit", "notify", "branch", "max_cost_usd", "max_hours", "workers"},
      "loop");
  auto str = [&](const char* k, std::string& dst) {
    if (!l.contains(k)) return;
    if (!l[k].is_string()) throw ConfigError(std::string("loop.") + k + ": must be a string");
    dst = l[k].get<std::string>();
  };
  str("tasks", loop.tasks);
  str("prompt", loop.prompt);
  str("branch", loop.branch);
  if (l.contains("on_escalate")) loop.on_escalate = word_of(l["on_escalate"], "loop.on_escalate", kOnEscalateWords);
  if (l.contains("baseline")) loop.baseline = word_of(l["baseline"], "loop.baseline", kBaselineWords);
  if (l.contains("max_iterations")) loop.max_iterations = positive_int(l["max_iterations"], "loop.max_iterations");
  if (l.contains("no_progress_limit"))
    loop.no_progress_limit = positive_int(l["no_progress_limit"], "loop.no_progress_limit");
  if (l.contains("iteration_timeout_s"))
    loop.iteration_timeout_s = positive_seconds(l["iteration_timeout_s"], "loop.iteration_timeout_s");
  if (l.contains("heartbeat_s")) loop.heartbeat_s = positive_seconds(l["heartbeat_s"], "loop.heartbeat_s");
  if (l.contains("notify")) parse_notify(l["notify"], loop);
  if (l.contains("max_cost_usd"))
    loop.max_cost_usd = positive_amount(l["max_cost_usd"], "loop.max_cost_usd", "US dollars");
  if (l.contains("max_hours")) loop.max_hours = positive_amount(l["max_hours"], "loop.max_hours", "hours");
  if (l.contains("workers")) loop.workers = positive_int(l["workers"], "loop.workers");
}

// "setup": the steps that prepare a fresh tree.
void parse_setup(Config& c, const Json& ss) {
  if (!ss.is_array())
    throw ConfigError(
        "setup: must be an array of steps like {\"run\": [\"npm\", \"ci\"], \"inputs\": [\"package-lock.json\"]}");
  for (size_t i = 0; i < ss.size(); ++i) {
    std::string where = "setup[" + std::to_string(i) + "]";
    const Json& s = ss[i];
    if (!s.is_object()) throw ConfigError(where + ": must be an object with \"run\" and \"inputs\"");
    util::reject_unknown_keys(s, {"run", "inputs", "timeout_s"}, where);
    SetupStep step;
    if (!s.contains("run")) throw ConfigError(where + ".run: missing (an argv array, e.g. [\"npm\", \"ci\"])");
    step.run = util::string_array(s["run"], where + ".run");
    if (step.run.empty() || step.run[0].empty()) throw ConfigError(where + ".run: the command is empty");
    if (s.contains("inputs")) step.inputs = util::string_array(s["inputs"], where + ".inputs");
    if (s.contains("timeout_s")) step.timeout_s = positive_seconds(s["timeout_s"], where + ".timeout_s");
    c.setup.push_back(std::move(step));
  }
}

// "checks": each parsed by checks::parse_check; ids are unique.
void parse_checks(Config& c, const Json& cs) {
  if (!cs.is_array()) throw ConfigError("checks: must be an array of check objects");
  for (size_t i = 0; i < cs.size(); ++i) {
    std::string where = "checks[" + std::to_string(i) + "]";
    checks::CheckSpec spec = checks::parse_check(cs[i], where, true);
    if (c.find(spec.id)) throw ConfigError(where + ".id: duplicate check id '" + spec.id + "'");
    c.checks.push_back(std::move(spec));
  }
}

// "harness": a preset name, or an object with a preset or a command.
void parse_harness(Config& c, const Json& h) {
  if (h.is_string()) {
    c.harness.preset = one_of(h, "harness", harness_presets());
  } else if (h.is_object()) {
    util::reject_unknown_keys(h, {"preset", "command", "timeout_s", "env", "max_wait_s"}, "harness");
    if (h.contains("preset")) c.harness.preset = one_of(h["preset"], "harness.preset", harness_presets());
    if (h.contains("command")) {
      c.harness.command = util::string_array(h["command"], "harness.command");
      if (c.harness.command.empty()) throw ConfigError("harness.command: the command is empty");
    }
    if (h.contains("timeout_s")) c.harness.timeout_s = positive_seconds(h["timeout_s"], "harness.timeout_s");
    if (h.contains("max_wait_s")) c.harness.max_wait_s = positive_seconds(h["max_wait_s"], "harness.max_wait_s");
    if (h.contains("env")) {
      if (!h["env"].is_object()) throw ConfigError("harness.env: must be an object of strings");
      for (auto it = h["env"].begin(); it != h["env"].end(); ++it) {
        if (!it.value().is_string()) throw ConfigError("harness.env." + it.key() + ": must be a string");
        c.harness.env[it.key()] = it.value().get<std::string>();
      }
    }
    if (c.harness.preset.empty() && c.harness.command.empty())
      throw ConfigError("harness: give a preset name or a command");
  } else {
    throw ConfigError("harness: must be a preset name or an object with a command");
  }
}

// "fixers": the chain, in order.
void parse_fixers(Config& c, const Json& f) {
  c.fixers.clear();
  for (const auto& f : util::string_array(f, "fixers")) {
    c.fixers.push_back(one_of(Json(f), "fixers", {"journal", "bisect", "harness", "noop"}));
  }
}

// "budgets": attempts per failure type.
void parse_budgets(Config& c, const Json& b) {
  if (!b.is_object()) throw ConfigError("budgets: must be an object of failure type -> attempts");
  util::reject_unknown_keys(b, checks::failure_types(), "budgets");
  for (auto it = b.begin(); it != b.end(); ++it) c.budgets[it.key()] = positive_int(it.value(), "budgets." + it.key());
}

// The caps and the paths a fix may not touch.
void parse_caps(Config& c, const Json& j) {
  if (j.contains("session_cap")) c.session_cap = positive_int(j["session_cap"], "session_cap");
  if (j.contains("diff_cap")) c.diff_cap = positive_int(j["diff_cap"], "diff_cap");
  if (j.contains("patch_files_cap")) c.patch_files_cap = positive_int(j["patch_files_cap"], "patch_files_cap");
  if (j.contains("patch_bytes_cap")) c.patch_bytes_cap = positive_int(j["patch_bytes_cap"], "patch_bytes_cap");
  if (j.contains("circuit_breaker")) c.circuit_breaker = positive_int(j["circuit_breaker"], "circuit_breaker");
  if (j.contains("flaky_reruns")) {
    c.flaky_reruns = positive_int(j["flaky_reruns"], "flaky_reruns");
    if (c.flaky_reruns > 10)
      throw ConfigError("flaky_reruns: at most 10 re-runs, not " + std::to_string(c.flaky_reruns));
  }
  if (j.contains("protected")) c.protected_globs = util::string_array(j["protected"], "protected");
  if (j.contains("prompt_template")) {
    if (!j["prompt_template"].is_string()) throw ConfigError("prompt_template: must be a path");
    c.prompt_template = j["prompt_template"].get<std::string>();
  }
}

// "sandbox": what a sandbox carries, and its kind.
void parse_sandbox(Config& c, const Json& s) {
  if (!s.is_object()) throw ConfigError("sandbox: must be an object");
  util::reject_unknown_keys(s, {"carry", "kind"}, "sandbox");
  if (s.contains("carry")) c.sandbox_carry = util::string_array(s["carry"], "sandbox.carry");
  if (s.contains("kind")) {
    const Json& k = s["kind"];
    const std::string v = k.is_string() ? k.get<std::string>() : k.dump();
    if (v != "auto" && v != "copy" && v != "overlay")
      throw ConfigError("sandbox.kind: '" + v + "' is not one of auto, copy, overlay");
    c.sandbox_kind = v;
  }
}

// "hook": the pre-push hook's mode, checks and time (after "checks": it names them).
void parse_hook(Config& c, const Json& h) {
  if (!h.is_object()) throw ConfigError("hook: must be an object");
  util::reject_unknown_keys(h, {"mode", "checks", "timeout_s", "verify_skipped"}, "hook");
  if (h.contains("mode")) c.hook.mode = word_of(h["mode"], "hook.mode", kHookModeWords);
  if (h.contains("checks")) c.hook.checks = util::string_array(h["checks"], "hook.checks");
  if (h.contains("timeout_s")) c.hook.timeout_s = positive_seconds(h["timeout_s"], "hook.timeout_s");
  if (h.contains("verify_skipped")) {
    const Json& v = h["verify_skipped"];
    if (!v.is_boolean()) throw ConfigError("hook.verify_skipped: must be true or false, not " + v.dump());
    c.hook.verify_skipped = v.get<bool>();
  }
  for (size_t i = 0; i < c.hook.checks.size(); ++i)
    if (!c.find(c.hook.checks[i]))
      throw ConfigError("hook.checks[" + std::to_string(i) + "]: no check with id '" + c.hook.checks[i] + "'");
}

// "git": how Phoenix shares the repository with other git users.
void parse_git(Config& c, const Json& g) {
  if (!g.is_object()) throw ConfigError("git: must be an object");
  util::reject_unknown_keys(g, {"lock_wait_s"}, "git");
  if (!g.contains("lock_wait_s")) return;
  const Json& w = g["lock_wait_s"];
  if (!w.is_number() || w.get<double>() < 0 || w.get<double>() > 86400)
    throw ConfigError("git.lock_wait_s: must be a number of seconds from 0 to 86400, not " + w.dump());
  c.git_lock_wait_s = w.get<double>();
}

void parse_into(Config& c, const Json& j) {
  if (!j.is_object()) throw ConfigError("(top level): phoenix.json must hold a JSON object");
  util::reject_unknown_keys(j, kTopKeys, "");
  for (const auto& k : kTopKeys) c.origin[k] = j.contains(k) ? "phoenix.json" : "default";
  if (j.contains("setup")) parse_setup(c, j["setup"]);
  if (j.contains("checks")) parse_checks(c, j["checks"]);
  if (j.contains("harness")) parse_harness(c, j["harness"]);
  if (j.contains("fixers")) parse_fixers(c, j["fixers"]);
  if (j.contains("budgets")) parse_budgets(c, j["budgets"]);
  parse_caps(c, j);
  if (j.contains("sandbox")) parse_sandbox(c, j["sandbox"]);
  if (j.contains("bisect")) parse_bisect(c, j["bisect"]);
  if (j.contains("git")) parse_git(c, j["git"]);
  if (j.contains("hook")) parse_hook(c, j["hook"]);
  if (j.contains("loop")) parse_loop(j["loop"], c.loop);
}

}  // namespace

namespace {

// Default budgets per failure type (invariant 3, docs/invariants.md).
const std::map<std::string, int>& default_budgets() {
  static const std::map<std::string, int> b{{"unit", 3},   {"e2e", 5},       {"build", 2},
                                            {"lint", 3},   {"migration", 1}, {"deploy", 2},
                                            {"visual", 3}, {"contract", 3},  {"health", 1}};
  return b;
}

}  // namespace

const char* baseline_name(Baseline b) { return name_of(b, kBaselineWords); }
const char* on_escalate_name(OnEscalate e) { return name_of(e, kOnEscalateWords); }
void to_json(Json& j, Baseline b) { j = baseline_name(b); }
void to_json(Json& j, OnEscalate e) { j = on_escalate_name(e); }
const char* hook_mode_name(HookMode m) { return name_of(m, kHookModeWords); }
const char* webhook_format_name(WebhookFormat f) { return name_of(f, kWebhookFormatWords); }
WebhookFormat parse_webhook_format(const std::string& word, const std::string& where) {
  return word_of(Json(word), where, kWebhookFormatWords);
}
void to_json(Json& j, HookMode m) { j = hook_mode_name(m); }
void to_json(Json& j, WebhookFormat f) { j = webhook_format_name(f); }

const std::vector<std::string>& harness_presets() {
  static const std::vector<std::string> p{"claude", "codex", "aider", "opencode", "gemini"};
  return p;
}

const checks::CheckSpec* Config::find(const std::string& id) const {
  for (const auto& c : checks)
    if (c.id == id) return &c;
  return nullptr;
}

std::vector<std::string> Config::check_ids() const {
  std::vector<std::string> ids;
  for (const auto& c : checks) ids.push_back(c.id);
  return ids;
}

Config parse(const std::string& text, const std::string& file) {
  Config c;
  c.path = file;
  c.budgets = default_budgets();
  Json j = util::parse_json(text, file);
  c.raw = j;
  try {
    parse_into(c, j);
  } catch (const ConfigError& e) {
    // Point at the field: "<file>:<line>:<col>: <path>: <what>".
    std::string msg = e.what();
    size_t colon = msg.find(": ");
    std::string path = colon == std::string::npos ? std::string() : msg.substr(0, colon);
    auto paths = util::json_paths(text);
    std::string probe = path;
    while (!probe.empty() && !paths.count(probe)) {
      size_t cut = probe.find_last_of(".[");
      probe = cut == std::string::npos ? std::string() : probe.substr(0, cut);
    }
    std::string where = file + (probe.empty() ? "" : ":" + util::line_col(text, paths[probe]));
    if (path.empty() && colon == 0) msg = msg.substr(2);
    throw ConfigError(where + ": " + (msg.rfind(": ", 0) == 0 ? msg.substr(2) : msg));
  }
  return c;
}

namespace {

// Applies PHOENIX_* environment overrides (PHOENIX_SESSION_CAP,
// PHOENIX_DIFF_CAP, PHOENIX_CIRCUIT_BREAKER, PHOENIX_HARNESS, PHOENIX_HOOK_MODE,
// PHOENIX_FIXERS), recording "env NAME" as their origin. load() calls it.
void apply_env(Config& c) {
  auto env = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (!v || !*v) return std::nullopt;
    return std::string(v);
  };
  auto int_env = [&](const char* name, int& dst, const char* key) {
    if (auto v = env(name)) {
      try {
        size_t used = 0;
        int n = std::stoi(*v, &used);
        if (used != v->size() || n < 0) throw std::invalid_argument(*v);
        dst = n;
        c.origin[key] = std::string("env ") + name;
      } catch (const std::exception&) {
        throw ConfigError(std::string(name) + "='" + *v + "': must be a whole number >= 0");
      }
    }
  };
  int_env("PHOENIX_SESSION_CAP", c.session_cap, "session_cap");
  int_env("PHOENIX_DIFF_CAP", c.diff_cap, "diff_cap");
  int_env("PHOENIX_CIRCUIT_BREAKER", c.circuit_breaker, "circuit_breaker");
  int_env("PHOENIX_FLAKY_RERUNS", c.flaky_reruns, "flaky_reruns");
  if (auto v = env("PHOENIX_HARNESS")) {
    c.harness.preset = one_of(Json(*v), "PHOENIX_HARNESS", harness_presets());
    c.harness.command.clear();
    c.origin["harness"] = "env PHOENIX_HARNESS";
  }
  if (auto v = env("PHOENIX_HOOK_MODE")) {
    c.hook.mode = word_of(Json(*v), "PHOENIX_HOOK_MODE", kHookModeWords);
    c.origin["hook"] = "env PHOENIX_HOOK_MODE";
  }
  if (auto v = env("PHOENIX_FIXERS")) {
    c.fixers.clear();
    size_t start = 0;
    while (start <= v->size()) {
      size_t comma = v->find(',', start);
      std::string name = util::trim(v->substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (!name.empty())
        c.fixers.push_back(one_of(Json(name), "PHOENIX_FIXERS", {"journal", "bisect", "harness", "noop"}));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    c.origin["fixers"] = "env PHOENIX_FIXERS";
  }
}

}  // namespace

Config load(const std::string& root, bool required) {
  std::string file = root + "/phoenix.json";
  Config c;
  if (!std::filesystem::exists(file)) {
    if (required) throw ConfigError(file + ": not found (run 'phoenix init' to write one)");
    c.budgets = default_budgets();
    for (const auto& k : kTopKeys) c.origin[k] = "default";
  } else {
    c = parse(util::read_file(file), "phoenix.json");
  }
  apply_env(c);
  return c;
}

}  // namespace phoenix::config
