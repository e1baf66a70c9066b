// phoenix.json: the repository's configuration.
//
// JSON with comments. Every error names the file, line:col and the field
// path, suggests the nearest known key for a typo, and exits 78.
// Precedence of values (`phoenix config show` prints each with its origin):
// command-line flag > environment (PHOENIX_*) > phoenix.json > default.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checks/check_spec.h"
#include "util/json.h"

namespace phoenix::config {

struct Harness {
  std::string preset;                // claude | codex | aider | opencode | gemini | "" (custom)
  std::vector<std::string> command;  // argv with {prompt} / {prompt_file}; empty: none configured
  double timeout_s = 900;
  std::map<std::string, std::string> env;
  // The longest one run waits in total on a rate-limited or unreachable
  // model; unset: kDefaultMaxWaitS in `phoenix run` and the hook, the time
  // to --until (or the usage window's reset) in the loop.
  std::optional<double> max_wait_s;
};

inline constexpr double kDefaultMaxWaitS = 600;

// hook.mode: a red push is blocked (verify), or its checked-out commit
// healed with a verified fix (heal).
enum class HookMode { kVerify, kHeal };
// loop.notify.format: the body a webhook is posted (loop/notify.h).
enum class WebhookFormat { kJson, kNtfy, kSlack, kDiscord, kTelegram };

// The word phoenix.json spells each with ("verify", "telegram"); JSON
// carries the word. parse_webhook_format reads one, or throws ConfigError
// naming `where` and the words allowed.
const char* hook_mode_name(HookMode m);
const char* webhook_format_name(WebhookFormat f);
WebhookFormat parse_webhook_format(const std::string& word, const std::string& where);
void to_json(util::Json& j, HookMode m);
void to_json(util::Json& j, WebhookFormat f);

struct Hook {
  HookMode mode = HookMode::kVerify;
  std::vector<std::string> checks;  // empty: all
  double timeout_s = 600;
  // A commit on a pushed remote ref that no measurement of Phoenix's covers
  // (a push made with --no-verify or PHOENIX_SKIP=1) is measured at the
  // next hook run on that ref, red ones named; false: only named.
  bool verify_skipped = false;
};

// loop.notify given as an object: a webhook the loop POSTs to on an
// escalation, at the end and while it waits on a rate limit, over http:// or
// https:// (docs/loop.md "Notify"). Secrets are never in phoenix.json: the
// Telegram bot token and chat id, and a bearer token for the other formats,
// are read from the environment variables named here (loop/notify.h).
struct Webhook {
  std::string url;  // http(s)://host[:port]/path; telegram: the Bot API's base URL
  WebhookFormat format = WebhookFormat::kJson;
  int attempts = 4;       // deliveries tried before giving up
  double timeout_s = 10;  // per attempt
  std::string token_env;  // telegram: the bot token's variable; others: a bearer token's ("" none)
  std::string chat_env;   // telegram: the chat id's variable
};

// loop.baseline: what phoenix-loop does with a check red before its first
// task: heal it like any red (heal), leave it out of every verdict
// (ignore), or stop (stop).
enum class Baseline { kHeal, kIgnore, kStop };
// loop.on_escalate: after a task is given up on, the loop stops (exit 2)
// or skips the task and goes on.
enum class OnEscalate { kStop, kSkip };

// The word phoenix.json spells each with ("ignore", "skip"); JSON carries
// the word. phoenix.json's words are read in config.cc, once.
const char* baseline_name(Baseline b);
const char* on_escalate_name(OnEscalate e);
void to_json(util::Json& j, Baseline b);
void to_json(util::Json& j, OnEscalate e);

struct Loop {
  std::string tasks;   // tasks file (Markdown "- [ ]" lines)
  std::string prompt;  // prompt file (ralph mode)
  OnEscalate on_escalate = OnEscalate::kStop;
  int max_iterations = 50;
  double iteration_timeout_s = 1800;
  Baseline baseline = Baseline::kHeal;
  double heartbeat_s = 5;
  int no_progress_limit = 3;
  std::vector<std::string> notify;  // argv (loop.notify as an array, or its "command")
  std::optional<Webhook> webhook;   // loop.notify as an object with a "url"
  std::string branch;
  int workers = 1;                     // tasks worked on at once (--workers), each in its own worktree
  std::optional<double> max_cost_usd;  // no iteration starts that would pass it (loop/caps.h)
  std::optional<double> max_hours;
};

// One step of `setup`: what gives a tree of Phoenix's own (the loop's,
// bisect's and the hook's worktrees, a fixer's sandbox) the project's
// environment before anything is measured there. Run with the tree as its
// working directory, again only when the hash of the files matching
// `inputs` (and of the steps themselves) changed since that tree's last
// setup. See engine/setup.h.
struct SetupStep {
  std::vector<std::string> run;     // argv, no shell
  std::vector<std::string> inputs;  // globs (util/glob.h) relative to the tree
  double timeout_s = 1800;
};

// flaky_reruns' default: see docs/checks.md for why 2.
inline constexpr int kDefaultFlakyReruns = 2;

struct Config {
  std::string path;  // file it came from, "" for defaults only
  std::vector<SetupStep> setup;
  std::vector<checks::CheckSpec> checks;
  Harness harness;
  std::vector<std::string> fixers{"journal", "bisect", "harness"};
  std::map<std::string, int> budgets;  // every failure type, defaults filled in
  int session_cap = 10;
  int diff_cap = 200;
  int patch_files_cap = 2000;              // most files one proposed patch may touch
  int patch_bytes_cap = 50 * 1024 * 1024;  // largest proposed patch, in bytes (binary content counts here)
  int circuit_breaker = 3;
  // How many times a new failing test is run again (alone where its runner
  // can select it) before it counts against a change; a pass makes it
  // flaky (engine/verdict.h, docs/checks.md "flaky_reruns").
  int flaky_reruns = kDefaultFlakyReruns;
  std::vector<std::string> protected_globs;
  std::vector<std::string> sandbox_carry;
  std::string sandbox_kind = "auto";  // auto | copy | overlay (PHOENIX_SANDBOX overrides)
  std::string prompt_template;        // path relative to the repository, "" for the shipped one
  int bisect_parallel = 0;            // bisect.parallel: worktrees probed at once, 0 = the cores (at most 4)
  // git.lock_wait_s: how long a write waits for .git/index.lock or a ref's
  // lock that another process holds, before the step fails naming it.
  double git_lock_wait_s = 5;
  Hook hook;
  Loop loop;
  util::Json raw;
  // Where each top-level value came from: "phoenix.json" or "default".
  std::map<std::string, std::string> origin;

  const checks::CheckSpec* find(const std::string& id) const;
  std::vector<std::string> check_ids() const;
};

// The names of the harness presets.
const std::vector<std::string>& harness_presets();

// Loads <root>/phoenix.json. A missing file gives the defaults (path "")
// unless `required`, in which case it is a ConfigError.
Config load(const std::string& root, bool required);

// Parses config text (for tests and `phoenix init`); `file` names it in errors.
Config parse(const std::string& text, const std::string& file);

}  // namespace phoenix::config
