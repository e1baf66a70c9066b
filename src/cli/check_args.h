// Turning command-line words into checks: an id from phoenix.json, or a
// JSON check object given inline.
#pragma once

#include <string>
#include <vector>

#include "checks/check.h"
#include "cli/context.h"
#include "config/config.h"

namespace phoenix::cli {

// "unit" -> the check with that id in phoenix.json; "{...}" -> parsed
// inline. An unknown id is a UsageError with "did you mean".
checks::CheckSpec resolve_check(const config::Config& cfg, const std::string& arg);

// Prints a sense result for people: "ok   id  signal  (12 ms)" and, when
// red, the evidence indented.
void print_sense(const Context& ctx, const checks::SenseResult& r, bool to_stderr = false);

// Appends a "sense" event for `r` to the trace.
// `durable` false for `phoenix sense` itself, whose line a power cut may
// lose (the measurement stands without it, as on a read-only checkout).
void trace_sense(Context& ctx, const checks::CheckSpec& spec, const checks::SenseResult& r, bool durable = true);

}  // namespace phoenix::cli
