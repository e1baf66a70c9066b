// A check as phoenix.json or --check define it, parsed and validated with
// errors that name the field, a measurement's result, and the command_exit
// measurement. The lite library (phoenix_lite: the pre-push hook's thin
// binary) has everything declared here (check_spec.cc, check_command.cc);
// check.h adds what needs the rest (the other kinds, servers, git).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/json.h"

namespace phoenix::util {
class Subprocess;
}

namespace phoenix::checks {

// The server a contract or visual check boots (server.h runs it).
struct ServerSpec {
  std::vector<std::string> run;  // argv, started in the repository's work tree
  std::string ready_url;         // http://host:port/path answering 2xx once ready
  double ready_timeout_s = 30;
};

// Failure types pick the retry budget and what healing may do.
const std::vector<std::string>& failure_types();
// The failure type that is never patched: a red health check is rolled
// back at once (CheckSpec::is_health).
inline constexpr const char kHealthType[] = "health";

// What a check measures: its "kind" in phoenix.json.
enum class Kind { kCommandExit, kFileSha256, kRegexInFile, kContract, kVisual };

// "command_exit" for Kind::kCommandExit: the word phoenix.json, the trace
// and --json use.
const char* kind_name(Kind k);
// The kind a word names; nullopt for any other word.
std::optional<Kind> parse_kind(std::string_view word);
// JSON carries the word.
void to_json(util::Json& j, Kind k);

// A test runner whose tests Phoenix can run one by one (engine/selection.h):
// its word in phoenix.json's "select.runner", the trace and docs/checks.md.
enum class Runner { kPytest, kCTest, kGoogleTest, kVitest, kJest, kGo, kCargo };
// "pytest", "ctest", "gtest", "vitest", "jest", "go", "cargo".
const char* runner_name(Runner r);
// The runner a word names; nullopt for any other word.
std::optional<Runner> parse_runner(std::string_view word);
// Every runner's word, in the order of Runner ("pytest, ctest, ...").
std::string runner_words();

// "select" of a command_exit check: how Phoenix runs only some of its
// tests again (a flaky test's re-run, a reference tree's failing tests).
// Unset: the runner is read from the check's own target, whose filters
// are replaced. `command` set: the selection's arguments are appended to it
// as they are (a shell command gets them as "$@"), and `runner` names the
// runner when the command does not show it.
struct SelectSpec {
  bool enabled = true;               // "select": false: the whole check is the unit
  std::optional<Runner> runner;      // "select.runner"
  std::vector<std::string> command;  // "select.command", argv
};

struct CheckSpec {
  std::string id;
  Kind kind = Kind::kCommandExit;
  std::string type;  // failure type
  bool is_health() const { return type == kHealthType; }
  // command_exit
  std::vector<std::string> argv;
  int expect_exit = 0;
  double timeout_s = 600;
  std::string cwd;  // relative to the repository root
  // file_sha256 / regex_in_file
  std::string path;
  std::string expect_sha256;  // lowercase hex
  std::string pattern;
  bool expect_present = false;
  // contract / visual (path holds the URL too, for display)
  std::string url;  // http:// URL of the JSON or the PNG (or the page to screenshot)
  std::string method = "GET";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool strict = false;                  // contract: an added field is a drift too
  bool record = true;                   // "record": "auto" (default) or "never"
  std::vector<std::string> screenshot;  // visual: argv with {out} (and {url})
  double tolerance = 0.1;               // visual: per-pixel YIQ distance, 0..1
  double max_ratio = 0.001;             // visual: share of differing pixels allowed
  bool ignore_anti_aliasing = true;     // visual: anti-aliased pixels do not count
  bool has_server = false;
  ServerSpec server;
  // healing
  std::vector<std::string> editable;  // globs a fix may touch
  std::vector<std::string> tests;     // the check's own test files
  bool protect_tests = true;
  // The measurement store (checks/measured.h, docs/measured.md): "cache"
  // unset leaves the default (command_exit checks only); its "env" names
  // the variables whose values key a measurement, "max_age_h" (0: none) the
  // oldest measurement served.
  std::optional<bool> cache;
  std::vector<std::string> cache_env;
  double cache_max_age_h = 0;
  // "tests_must_bite": unset leaves the caller's default (the loop: true).
  std::optional<bool> tests_must_bite;
  // "select" (command_exit only): running some of its tests alone.
  SelectSpec select;
  // "select_failing": false: bisect's steps and a heal's verification ask
  // the whole check, never its failing tests alone first (docs/checks.md,
  // "Failing tests first").
  bool select_failing = true;
  // Set on a run of some tests alone (engine/selection.h), never on a
  // check as configured: a target "npx <bin> ..." starts the project's own
  // node_modules/.bin/<bin> directly where it is there (the program npx
  // would start), without npm's half second of start-up per run.
  bool npx_direct = false;
  util::Json raw;  // the object as given
};

// Validates one check object. `where` names it in errors
// ("phoenix.json: checks[2]", "--check"). Throws ConfigError (exit 78).
CheckSpec parse_check(const util::Json& j, const std::string& where, bool id_required);

// Parses `--check` text: a JSON object (malformed JSON gets line:col).
CheckSpec parse_check_text(const std::string& text);

// A file a measurement produced as evidence (a visual check's expected,
// actual and diff pictures); the incident writer puts it beside the note.
struct Artifact {
  std::string name;  // "diff.png"
  std::string bytes;
};

struct SenseResult {
  std::string id;
  bool ok = false;
  std::string signal;    // short: "exit=1", "absent", "sha256 mismatch"
  std::string evidence;  // bounded proof: output tail, diff, matching lines
  std::string output;    // bounded raw output (for failure signatures)
  long long duration_ms = 0;
  bool interrupted = false;
  // Served from the measurement store: "measured 14:02 in loop-20261204,
  // trace #812" (checks/measured.h); empty for a fresh run.
  std::string cached;
  std::vector<Artifact> artifacts;
  util::Json to_json() const;  // {id, ok, signal, evidence}
};

// sense() of a command_exit check (check_command.cc: links only
// Boost.Process, for the pre-push hook's thin binary phoenix-hook).
// `cancel_fd`: see util::ProcessOptions::cancel_fd; a run stopped through it
// is red with the signal "cancelled".
SenseResult sense_command_exit(const CheckSpec& spec, const std::string& root, int cancel_fd = -1);

// The same in two steps, for a caller with something else to wait for
// first (the pre-push hook's `git status`): the check starts at
// construction; its output waits in a pipe until wait() (a check that
// prints more than the pipe holds pauses until then). Destroyed without
// wait(), or stopped, its process group is killed.
class StartedCheck {
 public:
  StartedCheck(const CheckSpec& spec, const std::string& root);
  ~StartedCheck();
  StartedCheck(const StartedCheck&) = delete;
  StartedCheck& operator=(const StartedCheck&) = delete;
  SenseResult wait();  // as sense_command_exit would have returned
  void stop();

 private:
  CheckSpec spec_;
  std::string cwd_;
  std::chrono::steady_clock::time_point start_;
  std::unique_ptr<util::Subprocess> run_;
};

// `p` as given when absolute, else under the work tree `root`.
std::string resolve_in(const std::string& root, const std::string& p);

// What sense() does to every kind's result: the id, the duration when the
// kind did not measure one, output defaulting to evidence, secrets redacted.
SenseResult finish_sense(SenseResult r, const CheckSpec& spec, std::chrono::steady_clock::time_point start);

}  // namespace phoenix::checks
