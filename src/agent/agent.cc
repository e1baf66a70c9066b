#include "agent/agent.h"

#include <signal.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <utility>

#include "util/error.h"
#include "util/json.h"
#include "util/subprocess.h"
#include "util/text.h"
#include "util/format.h"

namespace fs = std::filesystem;

namespace phoenix::agent {
namespace {

using util::Json;

constexpr size_t kErrorTextBytes = 2 * 1024;
// A crash's detail: its first error line and at most this many last lines.
constexpr size_t kCrashTailLines = 5;
constexpr size_t kCrashTailBytes = 1024;

using util::lower;

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

bool argv_contains(const std::vector<std::string>& argv, std::string_view needle) {
  return std::any_of(argv.begin(), argv.end(), [&](const std::string& a) { return contains(a, needle); });
}

std::string head_bounded(std::string_view s, size_t n) {
  if (s.size() <= n) return std::string(s);
  return std::string(s.substr(0, n)) + "\n[... " + std::to_string(s.size() - n) + " bytes omitted ...]\n";
}

std::string one_line(std::string_view s, size_t n = 200) {
  std::string t = util::trim(s);
  for (char& c : t)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (t.size() > n) t = t.substr(0, n) + "…";
  return t;
}

std::optional<Json> parse_object(std::string_view text) {
  std::string t = util::trim(text);
  if (t.empty() || (t[0] != '{' && t[0] != '[')) return std::nullopt;
  Json j = Json::parse(t.begin(), t.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::string json_text(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string str_field(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

using util::plural;

// ---------------------------------------------------------------------------
// Claude's result object.

std::optional<ClaudeResult> claude_from(const Json& j) {
  if (!j.is_object() || str_field(j, "type") != "result") return std::nullopt;
  // Gemini's stream-json also ends with a "result" event; Claude's is the
  // one that carries is_error or its cost.
  if (!j.contains("is_error") && !j.contains("total_cost_usd")) return std::nullopt;
  ClaudeResult r;
  auto e = j.find("is_error");
  r.is_error = e != j.end() && e->is_boolean() && e->get<bool>();
  r.subtype = str_field(j, "subtype");
  r.result = str_field(j, "result");
  auto t = j.find("num_turns");
  if (t != j.end() && t->is_number_integer()) r.num_turns = t->get<int>();
  auto c = j.find("total_cost_usd");
  if (c != j.end() && c->is_number()) r.total_cost_usd = c->get<double>();
  return r;
}

// ---------------------------------------------------------------------------
// Quotas, rate limits, unreachable models.

// Words of exhausted credit or billing: waiting will not help.
const std::vector<std::string_view> kQuotaPhrases{
    "insufficient_quota",         // OpenAI, sent with HTTP 429
    "credit balance is too low",  // Anthropic "Your credit balance is too low to access the Anthropic API"
    "credit balance too low",
    "billing",           // "check your plan and billing details"
    "payment required",  // HTTP 402
    "out of credits",
    "exceeded your current quota",
};

// Words of a rate limit or a usage window: wait (until the reset) and retry.
const std::vector<std::string_view> kRatePhrases{
    "rate limit",         "rate_limit",      "ratelimit",    "rate-limit",   "too many requests",
    "usage limit",  // Claude "Claude AI usage limit reached|<epoch>", codex "You've hit your usage limit"
    "5-hour limit",       "five-hour limit", "5 hour limit", "weekly limit", "session limit",
    "hit your limit",      // Claude "You've hit your limit · resets 7pm"
    "resource_exhausted",  // Google's 429 status name
};

// Words of a model that cannot be reached (network, DNS, TLS, the server's
// own 5xx): wait and retry.
const std::vector<std::string_view> kUnreachablePhrases{
    "connection refused",
    "econnrefused",
    "connectionrefused",
    "unable to connect",
    "could not connect",
    "failed to connect",
    "cannot connect",
    "connection error",
    "connection reset",
    "econnreset",
    "socket hang up",
    "network error",
    "networkerror",
    "fetch failed",
    "network is unreachable",
    "enetunreach",
    "ehostunreach",
    "no route to host",
    "reconnecting",
    "waiting for network",  // codex "Reconnecting... 1/5 (stream disconnected ...)"
    "stream disconnected",
    "error sending request",
    "could not resolve",
    "enotfound",
    "getaddrinfo",
    "name resolution",
    "dns error",
    "eai_again",
    "certificate",
    "tls handshake",
    "ssl handshake",
    "ssl error",
    "tls error",
    "overloaded",  // Anthropic 529 overloaded_error
    "internal server error",
    "bad gateway",
    "service unavailable",
    "gateway timeout",
    "server error",
    "api_error",  // Anthropic's 500 error type
    "etimedout",
    "connect timeout",
    "timed out connecting",
    "high demand",        // codex 0.171.0 on HTTP 500: "We're currently experiencing high demand, ..."
    "server-side issue",  // claude 2.1.197 on 500/529: "This is a server-side issue, usually temporary"
    "server had an error",
    "temporarily unavailable",
};

// `code` as an HTTP status: a number of its own right after a word that
// introduces a status ("HTTP 429", "API Error: 429", "status": 429), not
// "line 429" or "14290".
bool says_status(std::string_view l, std::string_view code) {
  for (size_t pos = l.find(code); pos != std::string_view::npos; pos = l.find(code, pos + 1)) {
    bool left = pos == 0 || !std::isdigit(static_cast<unsigned char>(l[pos - 1]));
    bool right = pos + code.size() >= l.size() || !std::isdigit(static_cast<unsigned char>(l[pos + code.size()]));
    if (!left || !right) continue;
    std::string_view before = l.substr(pos >= 12 ? pos - 12 : 0, pos >= 12 ? 12 : pos);
    for (std::string_view ctx : {"http", "status", "error", "code"})
      if (contains(before, ctx)) return true;
  }
  return false;
}

bool says_5xx(std::string_view l) {
  static const char* const kCodes[] = {"500", "502", "503", "504", "529"};
  for (const char* c : kCodes)
    if (says_status(l, c)) return true;
  return false;
}

LimitKind limit_kind_of(std::string_view l) {
  for (auto p : kQuotaPhrases)
    if (contains(l, p)) return LimitKind::kQuota;
  if (contains(l, "quota")) {
    // Google reports per-minute request limits as "Quota exceeded for quota
    // metric ... per minute": a rate limit in quota's words.
    bool per_minute = contains(l, "per minute") || contains(l, "per_minute") || contains(l, "perminute");
    return per_minute ? LimitKind::kRateLimit : LimitKind::kQuota;
  }
  for (auto p : kRatePhrases)
    if (contains(l, p)) return LimitKind::kRateLimit;
  if (says_status(l, "429")) return LimitKind::kRateLimit;
  for (auto p : kUnreachablePhrases)
    if (contains(l, p)) return LimitKind::kUnreachable;
  if (says_5xx(l)) return LimitKind::kUnreachable;
  return LimitKind::kNone;
}

// Where in `l` (lower case) the words of `kind` are, npos when nowhere.
size_t limit_words_at(std::string_view l, LimitKind kind) {
  size_t at = std::string_view::npos;
  auto earliest = [&](const std::vector<std::string_view>& phrases) {
    for (auto p : phrases) at = std::min(at, l.find(p));
  };
  if (kind == LimitKind::kQuota) {
    earliest(kQuotaPhrases);
    at = std::min(at, l.find("quota"));
  } else if (kind == LimitKind::kRateLimit) {
    earliest(kRatePhrases);
    at = std::min({at, l.find("quota"), l.find("429")});
  } else if (kind == LimitKind::kUnreachable) {
    earliest(kUnreachablePhrases);
    for (const char* c : {"500", "502", "503", "504", "529"}) at = std::min(at, l.find(c));
  }
  return at;
}

// A line of a CLI's own log (logfmt: `timestamp=... level=ERROR ...
// message="stream error" ... error.error="AI_APICallError: Overloaded"`, as
// opencode prints with --print-logs): only its error value speaks of the
// model; other log lines (a failed fetch of a model catalogue) do not.
// nullopt for a line that is not such a log line.
std::optional<std::string> log_line_error(std::string_view line) {
  if (!util::starts_with(line, "timestamp=") || !contains(line, " level=")) return std::nullopt;
  for (std::string_view key : {" error.error=\"", " error=\""}) {
    size_t at = line.find(key);
    if (at == std::string_view::npos) continue;
    std::string value;
    for (size_t i = at + key.size(); i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) ++i;
      value += line[i];
    }
    return value;
  }
  return std::string();
}

double unit_ms(const std::string& unit) {
  if (unit.empty()) return 1000;
  if (unit == "ms" || util::starts_with(unit, "milli")) return 1;
  if (unit[0] == 's') return 1000;
  if (unit[0] == 'm') return 60'000;
  if (unit[0] == 'h') return 3'600'000;
  return 1000;
}

const char* const kUnit = "(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)(?![a-z])";

}  // namespace

// ---------------------------------------------------------------------------
// Presets: the one table. Each flag was checked against the `--help` of the
// version named in `checked` (the suite runs each preset against that real
// CLI: tests/e2e/agents_test.cc; docs/agents.md).

const std::vector<HarnessPreset>& presets() {
  static const std::vector<HarnessPreset> table{
      {"claude",
       {"claude",
        "-p",                                 // claude 2.1.197: print mode, one run without a UI
        "--output-format", "json",            // claude 2.1.197: one JSON result (is_error, num_turns, total_cost_usd)
        "--permission-mode", "acceptEdits"},  // claude 2.1.197: edits are accepted without asking
       PromptVia::kStdin,                     // claude 2.1.197: -p without an argument reads the prompt from stdin
       {},
       "npm @anthropic-ai/claude-code",
       "2.1.197"},
      // The tighter claude variant (--allowedTools "Read Edit Write"
      // --disallowedTools "Bash WebFetch WebSearch") is left to
      // harness.command: it also stops the agent from running the tests.
      {"codex",
       {"codex",
        "exec",                          // codex 0.171.0: non-interactive run
        "--sandbox", "workspace-write",  // codex 0.171.0: may write in its working directory (--full-auto is gone)
        "--json",                        // codex 0.171.0: JSON-lines events on stdout
        "-"},                            // codex 0.171.0: "-" reads the prompt from stdin
       PromptVia::kStdin,
       {},
       "npm @openai/codex",
       "0.171.0"},
      {"aider",
       {"aider",
        "--yes-always",                      // aider 0.86: never waits for a confirmation
        "--no-auto-commits",                 // aider 0.86: it commits by itself unless told not to
        "--message-file", "{prompt_file}"},  // aider 0.86: prompt via a file
       PromptVia::kFile,
       {},
       "PyPI aider-chat",
       "0.86 (from its sources; not run in the suite)"},
      {"opencode",
       {"opencode",
        "run",  // opencode 1.18.33: non-interactive run
        // opencode 1.18.33 retries a refused connection, a 5xx, a 429
        // without Retry-After and exhausted credit inside itself, forever,
        // printing nothing on stdout: its log on stderr is the only place
        // that names the cause ("stream error ... AI_APICallError: ...").
        "--print-logs", "--log-level", "WARN", "--format", "json",  // opencode 1.18.33: raw JSON events
        "{prompt}"},  // opencode 1.18.33: the message is the positional argument
       PromptVia::kArgument,
       {{"OPENCODE_PERMISSION", R"({"*":"allow"})"}},  // opencode 1.18.33: every tool allowed without asking
       "npm opencode-ai",
       "1.18.33"},
      {"gemini",
       {"gemini", "--approval-mode", "yolo",  // gemini 0.61.0: approve every tool call (older releases: --yolo)
        "--skip-trust",                       // gemini 0.61.0: a sandbox is no trusted folder (else exit 55)
        "-o", "stream-json",                  // gemini 0.61.0: JSON-lines events
        "-p", "{prompt}"},                    // gemini 0.61.0: headless run with this prompt
       PromptVia::kArgument,
       {{"GEMINI_CLI_TRUST_WORKSPACE", "true"}},  // gemini 0.61.0: the same trust, for releases without --skip-trust
       "npm @google/gemini-cli",
       "0.61.0"},
  };
  return table;
}

const HarnessPreset* find_preset(std::string_view name) {
  for (const HarnessPreset& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

const char* status_name(Status s) {
  switch (s) {
    case Status::kProposed: return "proposed";
    case Status::kNothing: return "nothing";
    case Status::kUnavailable: return "unavailable";
    case Status::kRateLimited: return "rate-limited";
    case Status::kUnreachable: return "unreachable";
    case Status::kQuota: return "quota";
    case Status::kTimeout: return "timeout";
    case Status::kCrashed: return "crashed";
    case Status::kAborted: return "aborted";
    case Status::kOwnFailure: return "phoenix-failure";
  }
  return "?";
}

const std::vector<std::string>& git_location_env() {
  static const std::vector<std::string> names{"GIT_DIR",
                                              "GIT_WORK_TREE",
                                              "GIT_INDEX_FILE",
                                              "GIT_OBJECT_DIRECTORY",
                                              "GIT_COMMON_DIR",
                                              "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                                              "GIT_PREFIX",
                                              "GIT_NAMESPACE",
                                              "GIT_CEILING_DIRECTORIES"};
  return names;
}

std::string program_name(const std::vector<std::string>& argv) {
  if (argv.empty()) return "";
  auto base = [](const std::string& a) { return fs::path(a).filename().string(); };
  if (base(argv[0]) != "env") return base(argv[0]);
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-u" || a == "--unset" || a == "-C" || a == "--chdir" || a == "-S" || a == "--split-string") {
      ++i;  // the option's value
      continue;
    }
    if (a == "--") continue;
    if (!a.empty() && a[0] == '-') continue;
    if (a.find('=') != std::string::npos) continue;  // NAME=value
    return base(a);
  }
  return "env";
}

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

// ---------------------------------------------------------------------------
// Output.

std::optional<ClaudeResult> parse_claude_result(std::string_view output) {
  // The whole output: one object (json), or an array of messages whose last
  // "result" counts (json with --verbose).
  if (std::optional<Json> whole = parse_object(output)) {
    if (whole->is_object()) {
      if (auto r = claude_from(*whole)) return r;
    } else if (whole->is_array()) {
      for (auto it = whole->rbegin(); it != whole->rend(); ++it)
        if (auto r = claude_from(*it)) return r;
    }
  }
  // Otherwise stderr shares the pipe, or it is stream-json: the last line
  // that is a result object.
  std::vector<std::string> lines = util::split_lines(output);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (std::optional<Json> j = parse_object(*it))
      if (auto r = claude_from(*j)) return r;
  }
  return std::nullopt;
}

AgentReport parse_agent_report(std::string_view output) {
  AgentReport rep;
  auto add_error = [&](const std::string& text) {
    if (text.empty()) return;
    rep.error_texts.push_back(head_bounded(text, kErrorTextBytes));
    rep.message = one_line(text, 500);
  };

  bool codex = false, opencode = false, gemini = false;
  int codex_turns = 0, opencode_steps = 0;
  std::optional<bool> codex_last_failed;
  bool opencode_error = false, opencode_has_cost = false;
  double opencode_cost = 0;
  std::optional<bool> gemini_error;

  for (const std::string& line : util::split_lines(output)) {
    std::optional<Json> parsed = parse_object(line);
    if (!parsed || !parsed->is_object()) continue;
    const Json& j = *parsed;
    const std::string type = str_field(j, "type");
    if (util::starts_with(type, "thread.") || util::starts_with(type, "turn.") || util::starts_with(type, "item.")) {
      codex = true;
      if (type == "turn.completed") {
        ++codex_turns;
        codex_last_failed = false;
      } else if (type == "turn.failed") {
        ++codex_turns;
        codex_last_failed = true;
        auto e = j.find("error");
        if (e != j.end())
          add_error(e->is_object() && e->contains("message") ? json_text((*e)["message"]) : json_text(*e));
      }
    } else if (j.contains("part") &&
               (type == "step_start" || type == "step_finish" || type == "text" || type == "tool_use")) {
      opencode = true;
      if (type == "step_finish") {
        ++opencode_steps;
        const Json& part = j["part"];
        if (part.is_object() && part.contains("cost") && part["cost"].is_number()) {
          opencode_has_cost = true;
          opencode_cost += part["cost"].get<double>();
        }
      }
    } else if (type == "result" && j.contains("status") && !j.contains("is_error")) {
      gemini = true;
      gemini_error = str_field(j, "status") != "success";
      if (*gemini_error && j.contains("error")) add_error(json_text(j["error"]));
    } else if (type == "init" && j.contains("model") && !j.contains("part")) {
      gemini = true;
    }
    if (type == "error") {
      // codex {"type":"error","message":...}; opencode {"type":"error","error":{...}};
      // gemini {"type":"error",...}.
      if (j.contains("part")) opencode = true;
      if (j.contains("message")) add_error(json_text(j["message"]));
      else if (j.contains("error")) add_error(json_text(j["error"]));
      else add_error(json_text(j));
      opencode_error = opencode_error || opencode;
    } else if (type != "result" && type != "turn.failed" && j.contains("error") && !j["error"].is_null() &&
               !j["error"].is_boolean()) {
      // A bare API error object ({"error":{"type":"rate_limit_error",...}}).
      add_error(json_text(j["error"]));
    }
  }

  if (std::optional<ClaudeResult> c = parse_claude_result(output)) {
    rep.format = "claude-json";
    rep.is_error = c->is_error;
    rep.cost_usd = c->total_cost_usd;
    rep.turns = c->num_turns;
    // A limit message arrives as is_error with subtype "success": the
    // subtype is worth naming only when it says something.
    const bool say_subtype = !c->subtype.empty() && c->subtype != "success";
    if (c->is_error)
      add_error(c->result.empty() ? c->subtype : c->result + (say_subtype ? " (" + c->subtype + ")" : ""));
    rep.model_calls = c->num_turns;
    rep.message = one_line(c->result, 500);
  } else if (codex) {
    rep.format = "codex-jsonl";
    rep.is_error = codex_last_failed;
    if (codex_turns > 0) rep.turns = codex_turns;
    if (codex_turns > 0) rep.model_calls = codex_turns;
    // codex reports tokens, not money: cost stays unknown.
  } else if (opencode) {
    rep.format = "opencode-jsonl";
    if (opencode_error) rep.is_error = true;
    else if (opencode_steps > 0) rep.is_error = false;
    if (opencode_has_cost) rep.cost_usd = opencode_cost;
    if (opencode_steps > 0) rep.turns = opencode_steps;
    if (opencode_steps > 0) rep.model_calls = opencode_steps;
  } else if (gemini) {
    rep.format = "gemini-stream-json";
    rep.is_error = gemini_error;
  }
  return rep;
}

namespace {

// A calendar day a CLI named: "Dec 3rd, 2026". year 0: not given.
struct Day {
  int year = 0, month = 0, mday = 0;  // month 0..11
};

// The next time the wall clock in `zone` (an IANA name; "" or an unknown
// one: the local zone) shows hour:minute, after now_ms; in ms from now.
// With `day`, that time on that day (the next such day when the year is
// not given), which may be past: negative.
long long until_wall_clock_ms(int hour, int minute, const std::string& zone, long long now_ms,
                              const Day* day = nullptr) {
  // mktime reads TZ: one at a time, and put back as it was.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const char* old = ::getenv("TZ");
  const std::string saved = old ? old : "";
  const bool known = !zone.empty() && zone.find("..") == std::string::npos &&
                     (zone == "UTC" || fs::exists("/usr/share/zoneinfo/" + zone));
  if (known) {
    ::setenv("TZ", zone.c_str(), 1);
    ::tzset();
  }
  const time_t now = static_cast<time_t>(now_ms / 1000);
  struct tm lt {};
  ::localtime_r(&now, &lt);
  const int this_year = lt.tm_year;
  if (day) {
    lt.tm_year = day->year ? day->year - 1900 : this_year;
    lt.tm_mon = day->month;
    lt.tm_mday = day->mday;
  }
  lt.tm_hour = hour;
  lt.tm_min = minute;
  lt.tm_sec = 0;
  lt.tm_isdst = -1;
  time_t at = ::mktime(&lt);
  if (day && !day->year && at <= now) {  // "Jan 2nd" said on Dec 31st: next year's
    lt.tm_year = this_year + 1;
    lt.tm_mon = day->month;
    lt.tm_mday = day->mday;
    lt.tm_hour = hour;
    lt.tm_min = minute;
    lt.tm_sec = 0;
    lt.tm_isdst = -1;
    at = ::mktime(&lt);
  } else if (!day && at <= now) {
    ::localtime_r(&now, &lt);
    lt.tm_mday += 1;
    lt.tm_hour = hour;
    lt.tm_min = minute;
    lt.tm_sec = 0;
    lt.tm_isdst = -1;
    at = ::mktime(&lt);
  }
  if (known) {
    if (old) ::setenv("TZ", saved.c_str(), 1);
    else ::unsetenv("TZ");
    ::tzset();
  }
  return static_cast<long long>(at) * 1000 - now_ms;
}

std::optional<long long> retry_after_ms_or_throw(std::string_view text_in, long long now_ms) {
  // Regexes only ever see one bounded line: libstdc++'s matcher recurses
  // per character.
  const std::string text = lower(text_in.substr(0, kErrorTextBytes));
  // Lower-cased above, so no icase (which libstdc++ makes slow).
  const auto kSyntax = std::regex::ECMAScript;
  std::smatch m;
  auto to_ms = [](double v) -> std::optional<long long> {
    // Nothing sensible waits longer than a year (and llround must not overflow).
    if (!(v > 0) || !(v < 366.0 * 24 * 3600 * 1000)) return std::nullopt;
    return static_cast<long long>(std::llround(v));
  };
  auto duration = [&](const std::string& s) -> double {
    static const std::regex part(std::string("(\\d+(?:\\.\\d+)?)\\s*") + kUnit, kSyntax);
    double total = 0;
    for (auto it = std::sregex_iterator(s.begin(), s.end(), part); it != std::sregex_iterator(); ++it)
      total += std::stod((*it)[1].str()) * unit_ms((*it)[2].str());
    return total;
  };

  static const std::regex after_ms(R"(retry[-_ ]?after[-_ ]?ms["']?\s*[:=]?\s*(\d+))", kSyntax);
  if (std::regex_search(text, m, after_ms)) return to_ms(std::stod(m[1].str()));
  static const std::regex after(
      std::string(R"(retry[-_ ]?after["']?\s*[:=]?\s*(\d+(?:\.\d+)?)\s*)") + "(?:" + kUnit + ")?", kSyntax);
  if (std::regex_search(text, m, after)) return to_ms(std::stod(m[1].str()) * unit_ms(m[2].str()));
  static const std::regex delay(R"(retrydelay["']?\s*[:=]\s*["']?(\d+(?:\.\d+)?)s)", kSyntax);
  if (std::regex_search(text, m, delay)) return to_ms(std::stod(m[1].str()) * 1000);
  static const std::regex again(
      std::string(R"((?:try again|retry|retrying|resets?|available again|available) in\s+((?:\d+(?:\.\d+)?\s*)") +
          kUnit + R"(\s*)+))",
      kSyntax);
  if (std::regex_search(text, m, again)) return to_ms(duration(m[1].str()));
  static const std::regex epoch(R"((?:limit reached\||resets?_?at["']?\s*[:=]?\s*)(\d{10,13})(?!\d))", kSyntax);
  if (std::regex_search(text, m, epoch)) {
    long long v = std::stoll(m[1].str());
    long long at_ms = m[1].length() > 10 ? v : v * 1000;
    return to_ms(static_cast<double>(at_ms - now_ms));
  }
  // A wall-clock time: "try again at 14:05", "resets 3am (Europe/Berlin)",
  // "resets at 7:30 pm"; on another day with the day before it, as codex
  // says a reset past midnight: "try again at Dec 3rd, 2026 1:08 AM". An
  // hour alone needs am/pm.
  static const std::regex clock(
      R"((?:try again|retry|resets?|reset|available again|available)(?: at| on)?\s+)"
      R"((?:(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(?:(\d{4}),?\s+)?(?:at\s+)?)?)"
      R"((\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?)",
      kSyntax);
  if (std::regex_search(text, m, clock) && (m[5].matched || m[6].matched)) {
    Day day;
    if (m[1].matched) {
      static const std::string kMonths = "janfebmaraprmayjunjulaugsepoctnovdec";
      day.month = static_cast<int>(kMonths.find(m[1].str()) / 3);
      day.mday = std::stoi(m[2].str());
      day.year = m[3].matched ? std::stoi(m[3].str()) : 0;
      if (day.mday < 1 || day.mday > 31 || (day.year && (day.year < 1970 || day.year > 9999))) return std::nullopt;
    }
    int hour = std::stoi(m[4].str());
    int minute = m[5].matched ? std::stoi(m[5].str()) : 0;
    if (m[6].matched) {
      if (hour < 1 || hour > 12) return std::nullopt;
      const bool pm = m[6].str()[0] == 'p';
      hour = hour % 12 + (pm ? 12 : 0);
    }
    if (hour > 23 || minute > 59) return std::nullopt;
    // The zone in its own spelling: "(Europe/Berlin)", "(UTC)".
    static const std::regex zone_re(R"(\(([A-Za-z_]+(?:/[A-Za-z0-9_+-]+)+|UTC)\))", kSyntax);
    const std::string orig(text_in.substr(0, kErrorTextBytes));
    std::smatch z;
    std::string zone = std::regex_search(orig, z, zone_re) ? z[1].str() : "";
    return to_ms(static_cast<double>(until_wall_clock_ms(hour, minute, zone, now_ms, m[1].matched ? &day : nullptr)));
  }
  return std::nullopt;
}

}  // namespace

std::optional<long long> parse_retry_after_ms(std::string_view text, long long now_ms) {
  try {
    return retry_after_ms_or_throw(text, now_ms);
  } catch (const std::exception&) {
    // A number too large for stod/stoll says nothing usable.
    return std::nullopt;
  }
}

namespace {

// Which kind one line (lower case) names, if any.
LimitKind limit_kind(std::string_view lower_line) { return limit_kind_of(lower_line); }

}  // namespace

namespace {

// Looks for a quota, a rate limit or an unreachable model in what the CLI
// said: its non-JSON output lines plus report.error_texts, minus every line
// that also appears in `prompt`. Quota wins over a rate limit (OpenAI's
// insufficient_quota arrives as HTTP 429), a rate limit over an unreachable
// model; a "quota … per minute" is a rate limit. `now_ms` turns reset times
// into a delay.
LimitHit find_limit(std::string_view output, const AgentReport& report, std::string_view prompt, long long now_ms) {
  // Lines of the prompt, as the agent may echo them back.
  std::set<std::string> echoed;
  for (const std::string& l : util::split_lines(prompt)) {
    std::string t = lower(util::trim(l));
    if (!t.empty()) echoed.insert(std::move(t));
  }
  struct Said {
    std::string text;   // as printed (trimmed, bounded)
    std::string lower;  // for matching
  };
  std::vector<Said> said;  // what the CLI said itself
  auto take = [&](std::string_view text) {
    for (const std::string& l : util::split_lines(text)) {
      std::string t = util::trim(l);
      if (std::optional<std::string> e = log_line_error(t)) t = util::trim(*e);
      if (t.size() > kErrorTextBytes) t.resize(kErrorTextBytes);
      std::string low = lower(t);
      if (t.empty() || echoed.count(low)) continue;
      said.push_back({std::move(t), std::move(low)});
    }
  };
  // JSON lines are the CLI's structured output: only their error texts
  // count (an agent message or a tool result may quote anything).
  for (const std::string& l : util::split_lines(output))
    if (!parse_object(l)) take(l);
  for (const std::string& e : report.error_texts) take(e);

  LimitHit hit;
  for (LimitKind want : {LimitKind::kQuota, LimitKind::kRateLimit, LimitKind::kUnreachable}) {
    for (const Said& s : said) {
      if (limit_kind(s.lower) == want) {
        hit.kind = want;
        // A long line (a stack, a JSON body) is cut around the words
        // that said so: the cause is what the one-line message names.
        size_t at = limit_words_at(s.lower, want);
        const size_t kBefore = 60;
        if (s.text.size() > 200 && at != std::string::npos && at > kBefore)
          hit.line = "…" + one_line(std::string_view(s.text).substr(at - kBefore));
        else hit.line = one_line(s.text);
        break;
      }
    }
    if (hit.kind != LimitKind::kNone) break;
  }
  if (hit.kind == LimitKind::kNone) return hit;
  for (const Said& s : said) {
    const std::string& l = s.lower;
    if (!contains(l, "retry") && !contains(l, "try again") && !contains(l, "reset") && !contains(l, "|") &&
        !contains(l, "available"))
      continue;
    if (auto ms = parse_retry_after_ms(s.text, now_ms)) {
      hit.retry_after_ms = ms;
      break;
    }
  }
  return hit;
}

}  // namespace

namespace {

// The first line of `output` that reads like an error (not JSON, not an
// echo of the prompt), else the first non-empty line; bounded.
std::string first_error_line(std::string_view output, std::string_view prompt) {
  std::set<std::string> echoed;
  for (const std::string& l : util::split_lines(prompt)) echoed.insert(util::trim(l));
  std::string first;
  for (const std::string& raw : util::split_lines(output)) {
    std::string t = util::trim(raw);
    if (t.empty() || echoed.count(t) || parse_object(t)) continue;
    if (first.empty()) first = one_line(t, 300);
    std::string low = lower(t);
    if (contains(low, "error") || contains(low, "unexpected") || contains(low, "fatal") || contains(low, "failed") ||
        contains(low, "unable") || contains(low, "cannot") || contains(low, "not ") || contains(low, "panic"))
      return one_line(t, 300);
  }
  return first;
}

}  // namespace

namespace {

// The last lines of the output that are not an echo of the prompt,
// bounded, joined by " | ".
std::string last_lines(std::string_view output, std::string_view prompt, size_t n, size_t max_bytes) {
  std::set<std::string> echoed;
  for (const std::string& l : util::split_lines(prompt)) echoed.insert(util::trim(l));
  std::vector<std::string> lines;
  for (const std::string& raw : util::split_lines(output)) {
    std::string t = util::trim(raw);
    if (!t.empty() && !echoed.count(t)) lines.push_back(one_line(t, 300));
  }
  std::string out;
  size_t from = lines.size() > n ? lines.size() - n : 0;
  for (size_t i = from; i < lines.size(); ++i) out += (out.empty() ? "" : " | ") + lines[i];
  if (out.size() > max_bytes) out = "…" + out.substr(out.size() - max_bytes);
  return out;
}

}  // namespace

Classification classify_run(const RunFacts& f, long long now_ms) {
  Classification c;
  const AgentReport rep = parse_agent_report(f.output);
  c.cost_usd = rep.cost_usd;
  c.turns = rep.turns;
  c.model_calls = rep.model_calls;
  const std::string& prog = f.program;
  const bool changed = f.changed_files > 0;
  const std::string discarded =
      changed ? "; " + plural(f.changed_files, "changed file", "changed files") + " discarded" : "";

  if (f.not_found) {
    c.status = Status::kUnavailable;
    c.detail = prog + " is not installed (not found on PATH)";
    return c;
  }
  if (f.not_executable) {
    c.status = Status::kUnavailable;
    c.detail = prog + " cannot be executed";
    return c;
  }
  if (f.interrupted) {
    c.status = Status::kCrashed;
    c.detail = prog + " was stopped: Phoenix was interrupted" + discarded;
    return c;
  }
  c.first_error =
      rep.error_texts.empty() ? first_error_line(f.output, f.prompt) : one_line(rep.error_texts.front(), 300);

  // Quota, rate limit, unreachable: read when the run failed, changed
  // nothing or was stopped at its timeout (a CLI that retries a 429 or a
  // refused connection inside itself until then was never working), and
  // never when its JSON says all went well.
  const bool said_ok = rep.is_error.has_value() && !*rep.is_error;
  const bool failed = f.exit_code != 0 || rep.is_error.value_or(false) || f.timed_out;
  if (!said_ok && (failed || !changed)) {
    LimitHit hit = find_limit(f.output, rep, f.prompt, now_ms);
    if (hit.kind != LimitKind::kNone) c.first_error = hit.line;
    if (hit.kind == LimitKind::kQuota) {
      c.status = Status::kQuota;
      c.retry_after_ms = hit.retry_after_ms.value_or(0);
      c.detail = "quota: " + hit.line + discarded;
      return c;
    }
    if (hit.kind == LimitKind::kRateLimit || hit.kind == LimitKind::kUnreachable) {
      c.status = hit.kind == LimitKind::kRateLimit ? Status::kRateLimited : Status::kUnreachable;
      c.retry_after_ms = hit.retry_after_ms.value_or(0);
      c.retry_after_from_cli = hit.retry_after_ms.has_value();
      // A model that could not be reached answered nothing, whatever turn
      // count the CLI gives its failed run.
      if (hit.kind == LimitKind::kUnreachable) c.model_calls = 0;
      c.detail = std::string(hit.kind == LimitKind::kRateLimit ? "rate limit: " : "unreachable: ") + hit.line +
                 (f.timed_out ? " (until its timeout)" : "") + discarded;
      return c;
    }
  }
  if (f.timed_out) {
    c.status = Status::kTimeout;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", f.timeout_s);
    c.detail = prog + " was stopped at its timeout of " + secs + " s (its whole process group killed)" + discarded;
    return c;
  }
  if (changed) {
    c.status = Status::kProposed;
    c.detail = plural(f.changed_files, "file", "files") + " changed";
    if (f.term_signal) c.detail += "; " + prog + " ended by " + signal_name(f.term_signal);
    else if (f.exit_code != 0) c.detail += "; " + prog + " exited " + std::to_string(f.exit_code);
    return c;
  }
  // A crash keeps the first error line and the last lines: the cause is
  // often printed first ("unexpected argument"), a hint last ("--help").
  auto what_it_said = [&]() {
    std::string first = c.first_error;
    if (first.empty() && !rep.message.empty()) first = rep.message;
    std::string tail = last_lines(f.output, f.prompt, kCrashTailLines, kCrashTailBytes);
    std::string out = first;
    if (!tail.empty() && tail != first) out += (out.empty() ? "" : "; last lines: ") + tail;
    return out.empty() ? std::string() : ": " + out;
  };
  if (f.term_signal) {
    c.status = Status::kCrashed;
    c.detail = prog + " was killed by " + signal_name(f.term_signal) + " without changing anything" + what_it_said();
    return c;
  }
  if (f.exit_code != 0) {
    c.status = Status::kCrashed;
    c.detail = prog + " exited " + std::to_string(f.exit_code) + " without changing anything" + what_it_said();
    return c;
  }
  if (rep.is_error.value_or(false)) {
    c.status = Status::kCrashed;
    c.detail = prog + " reported an error and changed nothing" + (rep.message.empty() ? "" : ": " + rep.message);
    return c;
  }
  c.status = Status::kNothing;
  c.detail = "the agent changed nothing";
  return c;
}

long long wait_ms(const Classification& c, int waits_so_far, long long left_ms) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  // Backoff: 1 s doubling per waiting run in a row, at most 5 min, ±20 %.
  const long long base = std::min<long long>(1000LL << std::min(waits_so_far, 9), 300'000);
  std::uniform_real_distribution<double> spread(0.80, 1.20);
  long long wait = static_cast<long long>(base * spread(rng));
  if (c.retry_after_ms > 0) {
    // What the CLI asked for (a reset time), plus up to 10 % so that many
    // waiting runs do not all come back in the same second; never less
    // than the backoff of a provider that keeps refusing.
    std::uniform_real_distribution<double> jitter(0.0, 0.10);
    wait = std::max(wait, c.retry_after_ms + static_cast<long long>(c.retry_after_ms * jitter(rng)));
  }
  if (left_ms > 0) wait = std::min(wait, left_ms);
  return std::max<long long>(wait, 1);
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

RunFacts run_facts(const std::string& program, const util::ProcessResult& r, double timeout_s,
                   const std::string& prompt, size_t changed_files) {
  RunFacts f;
  f.program = program;
  f.not_found = r.not_found;
  f.not_executable = r.not_executable;
  f.timed_out = r.timed_out;
  f.interrupted = r.interrupted;
  f.exit_code = r.exit_code;
  f.term_signal = r.term_signal;
  f.timeout_s = timeout_s;
  f.output = r.output;
  f.prompt = prompt;
  f.changed_files = changed_files;
  return f;
}

}  // namespace phoenix::agent
