// `phoenix report --json`: tasks done and skipped, each heal (check, fixer,
// attempts, duration, replayed from the journal or not), each incident
// (check, signature, why, the sha it rolled back to), loops, runs, agent
// iterations, model calls, time and cost. A cost no CLI reported is null,
// never 0.
#pragma once

#include <string>

#include "util/json.h"

namespace phoenix::report {

util::Json summary_json(const std::string& trace_text, long long since_ms);

}  // namespace phoenix::report
