// Checks: deterministic measurements. A check is defined by a JSON object
// (in phoenix.json's "checks" or given with `--check '{...}'`), validated
// here with errors that name the field, and sensed with sense().
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "checks/server.h"
#include "util/json.h"

namespace phoenix::checks {

// Failure types pick the retry budget and what healing may do.
const std::vector<std::string>& failure_types();

struct CheckSpec {
  std::string id;
  std::string kind;  // command_exit | file_sha256 | regex_in_file | contract | visual
  std::string type;  // failure type
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
  std::vector<Artifact> artifacts;
  util::Json to_json() const;  // {id, ok, signal, evidence}
};

// Runs the check once in `root` (the repository's work tree).
SenseResult sense(const CheckSpec& spec, const std::string& root);

// sense() of a command_exit check (check_command.cc: links only
// Boost.Process, for the pre-push hook's thin binary phoenix-hook).
// `cancel_fd`: see util::ProcessOptions::cancel_fd; a run stopped through it
// is red with the signal "cancelled".
SenseResult sense_command_exit(const CheckSpec& spec, const std::string& root, int cancel_fd = -1);

// `p` as given when absolute, else under the work tree `root`.
std::string resolve_in(const std::string& root, const std::string& p);

// What sense() does to every kind's result: the id, the duration when the
// kind did not measure one, output defaulting to evidence, secrets redacted.
SenseResult finish_sense(SenseResult r, const CheckSpec& spec, std::chrono::steady_clock::time_point start);

// A contract or baseline that a check records (`rel` under `root`) and
// finds missing is recorded now only on first sight: never when the check
// says "record": "never", and never when git knows the file (it is in HEAD,
// in the index or at refs/phoenix/known-good): then it was deleted, and the
// check fails. So a fixer or a task that deletes a baseline cannot turn a
// regression green, while a new check records its baseline the first time
// it is sensed.
// Boots spec.server when the check has one. When it does not become ready,
// fills `r` (signal, evidence, interrupted) and returns false.
bool boot_server(const CheckSpec& spec, const std::string& root, std::unique_ptr<Server>& server, SenseResult& r);

enum class Missing { kRecordNow, kRecordNever, kDeleted };
Missing missing_recording(const CheckSpec& spec, const std::string& root, const std::string& rel,
                          std::string* where_known = nullptr);

}  // namespace phoenix::checks
