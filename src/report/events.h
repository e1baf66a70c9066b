// The trace read back as events, for the report: one per line that parses
// as a JSON object with a time stamp at or after `since_ms`. A torn or
// foreign line is passed over (`phoenix trace verify` is what reports it).
#pragma once

#include <string>
#include <vector>

#include "util/json.h"

namespace phoenix::report {

struct Event {
  long long t = 0;    // ms since the epoch
  std::string ts;     // the stamp as written ("2026-12-01T02:09:41.123Z")
  std::string event;  // "run.start", "state", ...
  util::Json data;    // always an object
};

std::vector<Event> read_events(const std::string& trace_text, long long since_ms);

}  // namespace phoenix::report
