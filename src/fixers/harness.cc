#include "fixers/harness.h"

#include <signal.h>
#include <sys/stat.h>
#include <string.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <utility>

#include "gitx/repo.h"
#include "layout/layout.h"
#include "sandbox/sandbox.h"
#include "setup/setup.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/json.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::fixers {
namespace {

using util::Json;

// Output kept from one run (Proposal.log): the start shows what the CLI
// understood, the end holds the result (claude's JSON object is its last
// line, and can be long), so the tail gets most of the room.
constexpr size_t kLogHeadBytes = 32 * 1024;
constexpr size_t kLogTailBytes = 224 * 1024;

// Bounds for the pieces an earlier attempt contributes to the prompt.
constexpr size_t kAttemptPatchBytes = 16 * 1024;
constexpr size_t kAttemptEvidenceBytes = 8 * 1024;
constexpr size_t kErrorTextBytes = 2 * 1024;

// Variables that would point the agent's own git commands at the user's
// repository instead of the sandbox (git exports some of them to hooks, and
// Phoenix runs from a pre-push hook).
const std::vector<std::string> kGitLocationEnv{
    "GIT_DIR",          "GIT_WORK_TREE",          "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_COMMON_DIR",   "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_PREFIX", "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES"};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

bool argv_contains(const std::vector<std::string>& argv, std::string_view needle) {
  return std::any_of(argv.begin(), argv.end(), [&](const std::string& a) { return contains(a, needle); });
}

std::string head_bounded(std::string_view s, size_t n) {
  if (s.size() <= n) return std::string(s);
  return std::string(s.substr(0, n)) + "\n[... " + std::to_string(s.size() - n) + " bytes omitted ...]\n";
}

std::string tail_bounded(std::string_view s, size_t n) {
  if (s.size() <= n) return std::string(s);
  return "[... " + std::to_string(s.size() - n) + " bytes omitted ...]\n" + std::string(s.substr(s.size() - n));
}

std::string one_line(std::string_view s, size_t n = 200) {
  std::string t = util::trim(s);
  for (char& c : t)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (t.size() > n) t = t.substr(0, n) + "…";
  return t;
}

std::string last_line(std::string_view output) {
  std::vector<std::string> lines = util::split_lines(output);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (!util::trim(*it).empty()) return one_line(*it);
  return "";
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

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

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
// Rate limits and usage caps.

// Words of a usage cap: waiting minutes will not help.
const std::vector<std::string_view> kQuotaPhrases{
    "usage limit",         // Claude "Claude AI usage limit reached|<epoch>", codex "You've hit your usage limit"
    "5-hour limit",        "five-hour limit", "5 hour limit", "weekly limit",
    "hit your limit",      // Claude "You've hit your limit · resets 7pm"
    "insufficient_quota",  // OpenAI, sent with HTTP 429
    "credit balance is too low",
};

// Words of a rate limit: wait and retry.
const std::vector<std::string_view> kRatePhrases{
    "rate limit", "rate_limit", "ratelimit", "rate-limit", "too many requests",
    "overloaded",           // Anthropic 529 overloaded_error
    "resource_exhausted",   // Google's 429 status name
};

// "429" as an HTTP status: a number of its own right after a word that
// introduces a status ("HTTP 429", "API Error: 429", "status": 429), not
// "line 429" or "14290".
bool says_429(std::string_view l) {
  for (size_t pos = l.find("429"); pos != std::string_view::npos; pos = l.find("429", pos + 1)) {
    bool left = pos == 0 || !std::isdigit(static_cast<unsigned char>(l[pos - 1]));
    bool right = pos + 3 >= l.size() || !std::isdigit(static_cast<unsigned char>(l[pos + 3]));
    if (!left || !right) continue;
    std::string_view before = l.substr(pos >= 12 ? pos - 12 : 0, pos >= 12 ? 12 : pos);
    for (std::string_view ctx : {"http", "status", "error", "code"})
      if (contains(before, ctx)) return true;
  }
  return false;
}

LimitKind limit_kind(std::string_view l) {
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
  if (says_429(l)) return LimitKind::kRateLimit;
  return LimitKind::kNone;
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
// Presets: the one table. Flags and how the prompt travels are from
// /work/shared/HARNESSES.md (gathered from each CLI's sources), row by row.

const std::vector<HarnessPreset>& presets() {
  static const std::vector<HarnessPreset> table{
      {"claude",
       {"claude",
        "-p",                                // HARNESSES.md claude: print mode, one run without a UI
        "--output-format", "json",           // HARNESSES.md claude: one JSON result (is_error, num_turns, total_cost_usd)
        "--permission-mode", "acceptEdits"}, // HARNESSES.md claude: edits are accepted without asking
       PromptVia::kStdin,                    // HARNESSES.md claude: prompt via stdin
       {}},
      // The tighter claude variant (--allowedTools "Read Edit Write"
      // --disallowedTools "Bash WebFetch WebSearch") is left to
      // harness.command: it also stops the agent from running the tests.
      {"codex",
       {"codex",
        "exec",                              // HARNESSES.md codex: non-interactive run
        "--full-auto",                       // HARNESSES.md codex: may edit files without asking
        "--json",                            // HARNESSES.md codex: JSON-lines events
        "-"},                                // HARNESSES.md codex: "-" reads the prompt from stdin
       PromptVia::kStdin,
       {}},
      {"aider",
       {"aider",
        "--yes-always",                      // HARNESSES.md aider: never waits for a confirmation
        "--no-auto-commits",                 // HARNESSES.md aider: it commits by itself unless told not to
        "--message-file", "{prompt_file}"},  // HARNESSES.md aider: prompt via a file
       PromptVia::kFile,
       {}},
      {"opencode",
       {"opencode",
        "run",                               // HARNESSES.md opencode: non-interactive run
        "--format", "json",                  // HARNESSES.md opencode: JSON events
        "{prompt}"},                         // HARNESSES.md opencode: prompt as the argument
       PromptVia::kArgument,
       {{"OPENCODE_PERMISSION", R"({"*":"allow"})"}}},  // HARNESSES.md opencode: permissions via env
      {"gemini",
       {"gemini",
        "--approval-mode", "yolo",           // HARNESSES.md gemini: approve every tool call (older releases: --yolo)
        "-o", "stream-json",                 // HARNESSES.md gemini: machine-readable result
        "-p", "{prompt}"},                   // HARNESSES.md gemini: prompt as the argument of -p
       PromptVia::kArgument,
       {}},
  };
  return table;
}

const HarnessPreset* find_preset(std::string_view name) {
  for (const HarnessPreset& p : presets())
    if (p.name == name) return &p;
  return nullptr;
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
  inv.argv = substitute_placeholders(argv, too_long ? long_prompt_instruction(inv.prompt_file) : prompt,
                                     inv.prompt_file);
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
        if (e != j.end()) add_error(e->is_object() && e->contains("message") ? json_text((*e)["message"]) : json_text(*e));
      }
    } else if (j.contains("part") && (type == "step_start" || type == "step_finish" || type == "text" || type == "tool_use")) {
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
    if (c->is_error) add_error(c->result.empty() ? c->subtype : c->result + (c->subtype.empty() ? "" : " (" + c->subtype + ")"));
    rep.message = one_line(c->result, 500);
  } else if (codex) {
    rep.format = "codex-jsonl";
    rep.is_error = codex_last_failed;
    if (codex_turns > 0) rep.turns = codex_turns;
    // codex reports tokens, not money: cost stays unknown.
  } else if (opencode) {
    rep.format = "opencode-jsonl";
    if (opencode_error) rep.is_error = true;
    else if (opencode_steps > 0) rep.is_error = false;
    if (opencode_has_cost) rep.cost_usd = opencode_cost;
    if (opencode_steps > 0) rep.turns = opencode_steps;
  } else if (gemini) {
    rep.format = "gemini-stream-json";
    rep.is_error = gemini_error;
  }
  return rep;
}

namespace {

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
  static const std::regex after(std::string(R"(retry[-_ ]?after["']?\s*[:=]?\s*(\d+(?:\.\d+)?)\s*)") + "(?:" + kUnit + ")?",
                                kSyntax);
  if (std::regex_search(text, m, after)) return to_ms(std::stod(m[1].str()) * unit_ms(m[2].str()));
  static const std::regex delay(R"(retrydelay["']?\s*[:=]\s*["']?(\d+(?:\.\d+)?)s)", kSyntax);
  if (std::regex_search(text, m, delay)) return to_ms(std::stod(m[1].str()) * 1000);
  static const std::regex again(std::string(R"((?:try again|retry|retrying) in\s+((?:\d+(?:\.\d+)?\s*)") + kUnit +
                                    R"(\s*)+))",
                                kSyntax);
  if (std::regex_search(text, m, again)) return to_ms(duration(m[1].str()));
  static const std::regex epoch(R"((?:limit reached\||resets?_?at["']?\s*[:=]?\s*)(\d{10,13})(?!\d))", kSyntax);
  if (std::regex_search(text, m, epoch)) {
    long long v = std::stoll(m[1].str());
    long long at_ms = m[1].length() > 10 ? v : v * 1000;
    return to_ms(static_cast<double>(at_ms - now_ms));
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
  for (LimitKind want : {LimitKind::kQuota, LimitKind::kRateLimit}) {
    for (const Said& s : said) {
      if (limit_kind(s.lower) == want) {
        hit.kind = want;
        hit.line = one_line(s.text);
        break;
      }
    }
    if (hit.kind != LimitKind::kNone) break;
  }
  if (hit.kind == LimitKind::kNone) return hit;
  for (const Said& s : said) {
    const std::string& l = s.lower;
    if (!contains(l, "retry") && !contains(l, "try again") && !contains(l, "reset") && !contains(l, "|")) continue;
    if (auto ms = parse_retry_after_ms(l, now_ms)) {
      hit.retry_after_ms = ms;
      break;
    }
  }
  return hit;
}

Classification classify_run(const RunFacts& f, long long now_ms) {
  Classification c;
  const AgentReport rep = parse_agent_report(f.output);
  c.cost_usd = rep.cost_usd;
  c.turns = rep.turns;
  const std::string& prog = f.program;
  const bool changed = f.changed_files > 0;
  const std::string discarded = changed ? "; " + plural(f.changed_files, "changed file", "changed files") + " discarded" : "";

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
  if (f.timed_out) {
    c.status = Status::kTimeout;
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", f.timeout_s);
    c.detail = prog + " was stopped at its timeout of " + secs + " s (its whole process group killed)" + discarded;
    return c;
  }
  if (f.interrupted) {
    c.status = Status::kCrashed;
    c.detail = prog + " was stopped: Phoenix was interrupted" + discarded;
    return c;
  }

  const bool said_ok = rep.is_error.has_value() && !*rep.is_error;
  const bool failed = f.exit_code != 0 || rep.is_error.value_or(false);
  if (!said_ok && (failed || !changed)) {
    LimitHit hit = find_limit(f.output, rep, f.prompt, now_ms);
    if (hit.kind == LimitKind::kQuota) {
      c.status = Status::kQuota;
      c.retry_after_ms = hit.retry_after_ms.value_or(0);
      c.detail = "usage cap: " + hit.line + discarded;
      return c;
    }
    if (hit.kind == LimitKind::kRateLimit) {
      c.status = Status::kRateLimited;
      c.retry_after_ms = hit.retry_after_ms.value_or(kDefaultRetryAfterMs);
      c.detail = "rate limit: " + hit.line + discarded;
      return c;
    }
  }
  if (changed) {
    c.status = Status::kProposed;
    c.detail = plural(f.changed_files, "file", "files") + " changed";
    if (f.term_signal) c.detail += "; " + prog + " ended by " + signal_name(f.term_signal);
    else if (f.exit_code != 0) c.detail += "; " + prog + " exited " + std::to_string(f.exit_code);
    return c;
  }
  if (f.term_signal) {
    c.status = Status::kCrashed;
    c.detail = prog + " was killed by " + signal_name(f.term_signal) + " without changing anything";
    return c;
  }
  if (f.exit_code != 0) {
    c.status = Status::kCrashed;
    std::string tail = rep.message.empty() ? last_line(f.output) : rep.message;
    c.detail = prog + " exited " + std::to_string(f.exit_code) + " without changing anything" +
               (tail.empty() ? "" : ": " + tail);
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

// ---------------------------------------------------------------------------
// Prompt.

namespace {

// A fenced block whose fence is longer than any run of backticks inside, so
// evidence that contains ``` cannot end it early.
std::string fenced(std::string_view text, std::string_view lang = "text") {
  size_t longest = 0, run = 0;
  for (char ch : text) {
    run = ch == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string out = fence + std::string(lang) + "\n" + std::string(text);
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out + fence;
}

std::string bullets(const std::vector<std::string>& items, const std::string& if_empty) {
  if (items.empty()) return if_empty;
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : "\n") + ("- `" + i + "`");
  return out;
}

std::string check_target(const checks::CheckSpec& c) {
  if (c.kind == "command_exit") {
    std::string t = util::join_argv(c.argv) + " (expects exit " + std::to_string(c.expect_exit) + ")";
    return c.cwd.empty() ? t : t + " in " + c.cwd;
  }
  if (c.kind == "file_sha256") return c.path + " (expects sha256 " + c.expect_sha256 + ")";
  if (c.kind == "regex_in_file")
    return c.path + " (pattern /" + c.pattern + "/ must be " + (c.expect_present ? "present" : "absent") + ")";
  if (c.raw.is_object() && c.raw.contains("target")) return json_text(c.raw["target"]);
  return c.kind;
}

}  // namespace

std::string load_prompt_template(const Request& request) {
  if (request.config && !request.config->prompt_template.empty()) {
    fs::path p = request.config->prompt_template;
    if (p.is_relative()) p = fs::path(request.repo_root) / p;
    try {
      return util::read_file(p.string());
    } catch (const Error& e) {
      throw ConfigError(std::string("prompt_template: ") + e.what());
    }
  }
  // The engine passes the shipped folder; an uninstalled build falls back to
  // the install prefix, then to the source tree.
  std::vector<std::string> dirs;
  if (!request.templates_dir.empty()) dirs.push_back(request.templates_dir);
  dirs.emplace_back(PHOENIX_TEMPLATES_DIR);
  dirs.emplace_back(PHOENIX_SOURCE_TEMPLATES_DIR);
  std::string tried;
  for (const std::string& d : dirs) {
    const std::string p = d + "/prompt.md";
    if (util::path_exists(p)) return util::read_file(p);
    tried += (tried.empty() ? "" : ", ") + p;
  }
  throw Error("the prompt template is missing (looked for " + tried + ")");
}

std::map<std::string, std::string> prompt_values(const Request& request) {
  const Failure& f = request.failure;
  const checks::CheckSpec& check = f.check;
  std::map<std::string, std::string> v;
  v["check_id"] = check.id.empty() ? std::string("(unnamed)") : check.id;
  v["check_kind"] = check.kind;
  v["check_target"] = check_target(check);
  v["failure_type"] = f.failure_type.empty() ? check.type : f.failure_type;
  v["signal"] = f.result.signal.empty() ? std::string("(none)") : f.result.signal;
  const std::string& evidence = f.result.evidence.empty() ? f.result.output : f.result.evidence;
  v["evidence"] = fenced(evidence.empty() ? "(the check printed nothing)" : evidence);
  v["failing_tests"] = bullets(f.failing_tests, "(none named in the output)");
  v["editable"] = bullets(check.editable, "(any file that is not protected)");

  // Informational: the engine's guards decide, on the patch, what is
  // protected; this repeats the rule so the agent does not waste its turn.
  std::vector<std::string> prot{"phoenix.json", ".phoenix/", ".git/", "git hooks"};
  if (request.config)
    for (const std::string& g : request.config->protected_globs) prot.push_back(g);
  if (check.protect_tests)
    for (const std::string& t : check.tests) prot.push_back(t);
  std::vector<std::string> unique;
  for (const std::string& p : prot)
    if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(p);
  v["protected"] = bullets(unique, "");

  if (request.earlier.empty()) {
    v["earlier_attempts"] = "(none: this is the first attempt)";
  } else {
    std::string out;
    for (size_t i = 0; i < request.earlier.size(); ++i) {
      const EarlierAttempt& a = request.earlier[i];
      out += "### Attempt " + std::to_string(i + 1) + " (" + (a.fixer.empty() ? "?" : a.fixer) + "): " +
             (a.outcome.empty() ? "did not heal" : a.outcome) + "\n\n";
      std::string files;
      for (const std::string& file : a.files) files += (files.empty() ? "" : ", ") + ("`" + file + "`");
      if (!files.empty()) out += "Files: " + files + "\n\n";
      if (!a.patch.empty()) out += "Patch:\n" + fenced(head_bounded(a.patch, kAttemptPatchBytes), "diff") + "\n\n";
      if (!a.evidence.empty()) out += "What the re-run said:\n" + fenced(tail_bounded(a.evidence, kAttemptEvidenceBytes)) + "\n\n";
    }
    while (!out.empty() && out.back() == '\n') out.pop_back();
    v["earlier_attempts"] = out;
  }
  v["issue_signature"] = f.issue_signature;
  v["head"] = request.head;
  return v;
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

// ---------------------------------------------------------------------------
// The fixer.

namespace {

// argv for the log: a prompt passed as an argument is shown by its size.
std::string shown_argv(const std::vector<std::string>& argv) {
  std::vector<std::string> shown;
  for (const std::string& a : argv) shown.push_back(a.size() > 200 ? "<" + std::to_string(a.size()) + " bytes>" : a);
  return util::join_argv(shown);
}

const char* via_name(PromptVia via) {
  switch (via) {
    case PromptVia::kStdin: return "stdin";
    case PromptVia::kFile: return "file";
    case PromptVia::kArgument: return "argument";
  }
  return "?";
}

// The files of the real repository that make git run programs (its hooks
// folder and its config, where core.hooksPath could point elsewhere): the
// fingerprint of the work tree does not see them, so they are kept here,
// bytes and mode, and put back if the agent wrote to them by absolute path.
struct GitControlFile {
  std::string bytes;
  unsigned mode = 0;
};
struct GitControlFiles {
  std::string config, hooks_dir;  // where they were before the run
  std::map<std::string, GitControlFile> files;
};

// The files now at the places `where` names (its config and hooks folder).
std::map<std::string, GitControlFile> read_git_control_files(const GitControlFiles& where) {
  std::map<std::string, GitControlFile> out;
  std::vector<std::string> paths{where.config};
  std::error_code ec;
  if (!where.hooks_dir.empty())
    for (fs::directory_iterator it(where.hooks_dir, ec), end; !ec && it != end; it.increment(ec))
      paths.push_back(it->path().string());
  for (const std::string& p : paths) {
    struct stat st;
    if (p.empty() || ::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    out[p] = {util::read_file(p), static_cast<unsigned>(st.st_mode & 07777)};
  }
  return out;
}

GitControlFiles git_control_files(const std::string& repo_root) {
  GitControlFiles g;
  try {
    gitx::Repo repo = gitx::Repo::open(repo_root);
    g.config = repo.common_dir() + "/config";
    g.hooks_dir = repo.hooks_dir();
    g.files = read_git_control_files(g);
  } catch (const Error&) {
  }
  return g;
}

// Puts back what changed since `snapshot` was taken; returns the paths.
std::vector<std::string> restore_git_control_files(const GitControlFiles& snapshot) {
  std::vector<std::string> changed;
  const std::map<std::string, GitControlFile>& before = snapshot.files;
  const std::map<std::string, GitControlFile> now = read_git_control_files(snapshot);
  for (const auto& [path, f] : now) {
    auto it = before.find(path);
    if (it == before.end()) {
      changed.push_back(path);
      std::error_code ec;
      fs::remove(path, ec);
    } else if (it->second.bytes != f.bytes || it->second.mode != f.mode) {
      changed.push_back(path);
    }
  }
  for (const auto& [path, f] : before) {
    auto it = now.find(path);
    if (it == now.end() || it->second.bytes != f.bytes || it->second.mode != f.mode) {
      if (it == now.end()) changed.push_back(path);
      util::write_file_atomic(path, f.bytes, f.mode);
    }
  }
  std::sort(changed.begin(), changed.end());
  return changed;
}

std::string first_files(const std::vector<std::string>& files, size_t n = 3) {
  std::string out;
  for (size_t i = 0; i < files.size() && i < n; ++i) out += (i ? ", " : "") + files[i];
  if (files.size() > n) out += ", …";
  return out;
}

}  // namespace

Proposal HarnessFixer::propose(const Request& request) {
  Proposal p;
  p.fixer = name();
  const long long started = util::now_ms();
  auto done = [&](Status s, std::string detail, std::string summary) {
    p.status = s;
    p.detail = std::move(detail);
    p.summary = std::move(summary);
    if (p.duration_ms == 0) p.duration_ms = util::now_ms() - started;
    return p;
  };

  if (!request.config) return done(Status::kUnavailable, "no configuration was given", "harness: not configured");
  const config::Harness& h = request.config->harness;
  const HarnessPreset* preset = h.preset.empty() ? nullptr : find_preset(h.preset);
  const std::vector<std::string>* base_argv = !h.command.empty() ? &h.command : preset ? &preset->argv : nullptr;
  if (!base_argv || base_argv->empty())
    return done(Status::kUnavailable, "no harness configured: set \"harness\" in phoenix.json to a preset or a command",
                "harness: not configured");
  const std::string program = fs::path((*base_argv)[0]).filename().string();

  // Not installed: say so before copying the repository for nothing. A path
  // with '/' is resolved in the sandbox, so only the run can tell.
  if ((*base_argv)[0].find('/') == std::string::npos) {
    auto path_it = h.env.find("PATH");
    if (util::find_executable((*base_argv)[0], path_it != h.env.end() ? path_it->second : "").empty())
      return done(Status::kUnavailable, program + " is not installed (not found on PATH)",
                  "harness: " + program + " not found");
  }

  const std::string prompt = render_prompt(load_prompt_template(request), prompt_values(request));
  // Sandboxes live in the git directory (layout/layout.h), where no test
  // runner of the project finds their copies of the code.
  const std::string sandboxes = layout::sandboxes_dir(gitx::Repo::open(request.repo_root));
  sandbox::Sandbox sb = sandbox::Sandbox::create(request.repo_root, sandboxes, request.config->sandbox_carry,
                                                 sandbox::parse_kind(request.config->sandbox_kind, "sandbox.kind"));
  // The project's environment, so the agent can build and run the tests
  // there too. A setup that fails is noted, not held against the agent:
  // its patch is measured in the real tree either way.
  std::string setup_note;
  if (!request.config->setup.empty()) {
    setup::Result su = setup::ensure(request.config->setup, sb.path(), "", [&](util::ProcessOptions& po) {
      po.unset_env = kGitLocationEnv;
      po.env["GIT_CEILING_DIRECTORIES"] = sb.dir();
      sb.confine(po);
    });
    if (su.interrupted || util::interrupted_signal() != 0)
      return done(Status::kCrashed, "interrupted during the sandbox's setup", "harness " + program + ": interrupted");
    setup_note = su.ok ? "# sandbox setup: " + std::to_string(su.duration_ms) + " ms\n"
                       : "# sandbox " + su.signal + " (the agent works without the environment)\n" + su.evidence + "\n";
  }
  Invocation inv = plan_invocation(h, prompt, [&](const std::string& content) {
    return sb.write_scratch_file("prompt.md", content);
  });

  util::ProcessOptions o;
  o.argv = inv.argv;
  o.cwd = sb.path();
  o.env = inv.env;
  o.env["PHOENIX_SANDBOX"] = "1";
  o.unset_env = kGitLocationEnv;
  // An agent that deletes the sandbox's .git must not find the user's
  // repository (the sandboxes live inside it) by searching upwards.
  o.env["GIT_CEILING_DIRECTORIES"] = sb.dir();
  o.stdin_data = inv.stdin_data;
  o.timeout_s = request.timeout_s > 0 ? request.timeout_s : h.timeout_s;
  o.head_bytes = kLogHeadBytes;
  o.tail_bytes = kLogTailBytes;
  // A daemon the agent started (setsid, double fork) dies with the run too.
  o.kill_strays = true;
  sb.confine(o);  // an overlay sandbox exists only inside its own mount namespace

  // Phoenix's own writes during the run land in the sandboxes folder; leave
  // it out of the fingerprint wherever it is inside the repository.
  std::vector<std::string> ignore;
  {
    std::error_code ec;
    const std::string root = fs::weakly_canonical(request.repo_root, ec).string();
    const std::string base = fs::weakly_canonical(sandboxes, ec).string();
    if (util::starts_with(base, root + "/")) ignore.push_back(fs::relative(base, root).generic_string() + "/");
  }
  const sandbox::RepoFingerprint before = sandbox::fingerprint_repo(request.repo_root, ignore);
  const GitControlFiles control_before = git_control_files(request.repo_root);
  const util::ProcessResult r = util::run_process(o);
  std::vector<std::string> changes;
  try {
    changes = sandbox::fingerprint_changes(before, sandbox::fingerprint_repo(request.repo_root, ignore));
  } catch (const Error& e) {
    changes.push_back(std::string("the repository can no longer be read (") + e.what() + ")");
  }
  // The engine's restore puts back the work tree and refs; git's hooks and
  // config are put back here. Named first: they are the worst of it.
  try {
    std::vector<std::string> put_back;
    for (const std::string& path : restore_git_control_files(control_before))
      put_back.push_back(path + " (put back as it was)");
    changes.insert(changes.begin(), put_back.begin(), put_back.end());
  } catch (const Error& e) {
    changes.insert(changes.begin(), std::string("git's hooks or config changed and cannot be put back (") + e.what() + ")");
  }

  p.exit_code = r.exit_code;
  p.duration_ms = r.duration_ms;
  p.model_calls = r.not_found || r.not_executable ? 0 : 1;
  p.log = "$ " + shown_argv(inv.argv) + "   # in the sandbox; prompt via " + via_name(inv.via) +
          (inv.long_prompt_in_file ? " (too long for an argument: in a file)" : "") + ", " +
          std::to_string(prompt.size()) + " bytes\n";
  if (request.explain) {
    // What the agent could not see, and why (secrets, ignored links...).
    p.log += "# sandbox: " + plural(sb.files().size(), "file", "files") + " copied";
    for (const sandbox::Skipped& s : sb.skipped()) p.log += "; not " + s.path + " (" + s.reason + ")";
    p.log += "\n";
  }
  p.log += setup_note;
  p.log += r.output;
  // Recorded with whatever the outcome is (the trace keeps the detail).
  const std::string strays =
      r.strays_killed ? "; Phoenix killed " + plural(r.strays_killed, "stray process", "stray processes") +
                            " the agent left running"
                      : "";
  if (!strays.empty()) p.log += "\n# " + strays.substr(2) + "\n";
  const AgentReport report = parse_agent_report(r.output);
  p.cost_usd = report.cost_usd;
  p.turns = report.turns;

  if (!changes.empty()) {
    std::string what;
    for (size_t i = 0; i < changes.size() && i < 10; ++i) what += (i ? "; " : "") + changes[i];
    if (changes.size() > 10) what += "; and " + std::to_string(changes.size() - 10) + " more";
    return done(Status::kAborted, "the real repository changed while " + program + " ran: " + what + strays,
                "harness " + program + ": aborted, it changed the real repository");
  }

  std::string patch;
  std::vector<std::string> files;
  try {
    patch = sb.read_patch();
    files = gitx::Repo::patch_files(patch);
  } catch (const Error& e) {
    return done(Status::kCrashed, std::string("cannot read the sandbox's changes: ") + e.what() + strays,
                "harness " + program + ": sandbox unreadable");
  }

  RunFacts facts;
  facts.program = program;
  facts.not_found = r.not_found;
  facts.not_executable = r.not_executable;
  facts.timed_out = r.timed_out;
  facts.interrupted = r.interrupted;
  facts.exit_code = r.exit_code;
  facts.term_signal = r.term_signal;
  facts.timeout_s = o.timeout_s;
  facts.output = r.output;
  facts.prompt = prompt;
  facts.changed_files = files.size();
  Classification c = classify_run(facts, util::now_ms());
  p.retry_after_ms = c.retry_after_ms;
  if (c.status == Status::kProposed) {
    p.patch = std::move(patch);
    p.files = std::move(files);
  }
  std::string summary = "harness " + program + ": ";
  switch (c.status) {
    case Status::kProposed: summary += "changed " + first_files(p.files); break;
    case Status::kRateLimited: summary += "rate-limited, retry in " + std::to_string((c.retry_after_ms + 999) / 1000) + " s"; break;
    case Status::kNothing: summary += "changed nothing"; break;
    default: summary += status_name(c.status); break;
  }
  return done(c.status, c.detail + strays, summary);
}

}  // namespace phoenix::fixers
