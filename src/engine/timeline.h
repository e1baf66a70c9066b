// The engine's events (cycle.h's EventFn) as the timeline people read on
// stderr: `phoenix run` and the pre-push hook print each event through here.
#pragma once

#include <string>

#include "util/json.h"

namespace phoenix::engine {

enum class TimelineForm {
  // `phoenix run`: "phoenix: [   1234 ms] CHECK  STATE       details",
  // coloured by state, every detail of the event (signature, guard, agent
  // status, incident note), and the --explain lines.
  kRun,
  // The pre-push hook: "phoenix: heal: CHECK STATE details (1234 ms)", the
  // fixer, signal, summary, reason and commit only.
  kHook,
};

// What `form` prints for one event, without the final newline; "" for an
// event it does not show. `colour`: paint it with SGR codes (kRun only).
std::string timeline_line(const util::Json& ev, TimelineForm form, bool colour);

}  // namespace phoenix::engine
