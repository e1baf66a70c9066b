// The trace read back as events, for the report: one per line that parses
// as a JSON object with a time stamp at or after `since_ms`. A torn or
// foreign line is passed over (`phoenix trace verify` is what reports it).
#pragma once

#include <optional>
#include <string>
#include <string_view>
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

// The events of one report: at or after since_ms, and at or before until_ms
// unless it is -1 (the trace is read once; every rendering reads this).
struct Window {
  long long since_ms = 0;
  long long until_ms = -1;
  bool holds(const Event& e) const { return e.t >= since_ms && (until_ms < 0 || e.t <= until_ms); }
};

// The start of the last loop in the trace (for the default --since), or 0.
long long last_loop_start(const std::vector<Event>& events);
// The end of the loop that started at `start_ms` (its loop.end), or -1
// while it runs: "the last night" is that loop and nothing after it.
long long loop_end_after(const std::vector<Event>& events, long long start_ms);

// What one event says an agent CLI run spent, read one way for every
// report: a loop iteration's agent run (`loop.agent`; "unavailable" is no
// run: the CLI never started) or a harness proposal that ran the CLI
// (`proposal` with a call count, or an unknown one, or a cost). nullopt for
// any other event. A count or a cost the CLI did not report is nullopt,
// never 0.
struct Spend {
  std::optional<long long> calls;
  std::optional<double> cost_usd;
};
std::optional<Spend> spend_of(const Event& e);

// The task an event names (its "task" object), or an empty object.
util::Json task_of(const util::Json& data);

// A heal by this fixer (a `state` event's "fixer") was the journal's replay
// of a fix it remembered (fixers/journal_fixer.h), not a fix of its own.
bool replayed_from_journal(std::string_view fixer);

}  // namespace phoenix::report
