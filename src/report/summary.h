// `phoenix report --json`: tasks done and skipped, each heal (check, fixer,
// attempts, duration, replayed from the journal or not), each incident
// (check, signature, why, the sha it rolled back to), loops, runs, agent
// iterations, agent runs, model calls, time and cost. A cost no CLI
// reported is null, never 0; so is the model-call count when any run
// reported none. Tasks are counted once each, by id.
#pragma once

#include <string>

#include "util/json.h"

namespace phoenix::report {

// Events at or after since_ms, and at or before until_ms unless it is -1.
util::Json summary_json(const std::string& trace_text, long long since_ms, long long until_ms = -1);

}  // namespace phoenix::report
