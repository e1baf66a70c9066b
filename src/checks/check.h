// Checks: deterministic measurements. A check is defined by a JSON object
// (in phoenix.json's "checks" or given with `--check '{...}'`), validated
// here with errors that name the field, and sensed with sense().
#pragma once

#include <string>
#include <vector>

#include "util/json.h"

namespace phoenix::checks {

// Failure types pick the retry budget and what healing may do.
const std::vector<std::string>& failure_types();

struct CheckSpec {
  std::string id;
  std::string kind;           // command_exit | file_sha256 | regex_in_file
  std::string type;           // failure type
  // command_exit
  std::vector<std::string> argv;
  int expect_exit = 0;
  double timeout_s = 600;
  std::string cwd;            // relative to the repository root
  // file_sha256 / regex_in_file
  std::string path;
  std::string expect_sha256;  // lowercase hex
  std::string pattern;
  bool expect_present = false;
  // healing
  std::vector<std::string> editable;  // globs a fix may touch
  std::vector<std::string> tests;     // the check's own test files
  bool protect_tests = true;
  util::Json raw;             // the object as given
};

// Validates one check object. `where` names it in errors
// ("phoenix.json: checks[2]", "--check"). Throws ConfigError (exit 78).
CheckSpec parse_check(const util::Json& j, const std::string& where, bool id_required);

// Parses `--check` text: a JSON object (malformed JSON gets line:col).
CheckSpec parse_check_text(const std::string& text);

struct SenseResult {
  std::string id;
  bool ok = false;
  std::string signal;     // short: "exit=1", "absent", "sha256 mismatch"
  std::string evidence;   // bounded proof: output tail, diff, matching lines
  std::string output;     // bounded raw output (for failure signatures)
  long long duration_ms = 0;
  bool interrupted = false;
  util::Json to_json() const;  // {id, ok, signal, evidence}
};

// Runs the check once in `root` (the repository's work tree).
SenseResult sense(const CheckSpec& spec, const std::string& root);

}  // namespace phoenix::checks
