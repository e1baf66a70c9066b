// Checks: deterministic measurements. A check is defined by a JSON object
// (in phoenix.json's "checks" or given with `--check '{...}'`), parsed in
// check_spec.h, and sensed with sense() (every kind; phoenix_core).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "checks/check_spec.h"
#include "checks/server.h"

namespace phoenix::checks {

// Runs the check once in `root` (the repository's work tree).
SenseResult sense(const CheckSpec& spec, const std::string& root);

// Boots spec.server when the check has one. When it does not become ready,
// fills `r` (signal, evidence, interrupted) and returns false.
bool boot_server(const CheckSpec& spec, const std::string& root, std::unique_ptr<Server>& server, SenseResult& r);

// A contract or baseline that a check records (`rel` under `root`) and
// finds missing is recorded now only on first sight: never when the check
// says "record": "never", and never when git knows the file (it is in HEAD,
// in the index or at refs/phoenix/known-good): then it was deleted, and the
// check fails. So a fixer or a task that deletes a baseline cannot turn a
// regression green, while a new check records its baseline the first time
// it is sensed.
enum class Missing { kRecordNow, kRecordNever, kDeleted };
Missing missing_recording(const CheckSpec& spec, const std::string& root, const std::string& rel,
                          std::string* where_known = nullptr);

}  // namespace phoenix::checks
