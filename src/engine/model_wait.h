// Waiting on a rate-limited or unreachable model, the same way in the
// engine's heal (engine/cycle_propose.cc) and in the loop's agent runs (loop/): a
// refused run is not a failed attempt; the waits in a row are counted
// against a budget (harness.max_wait_s, or what the caller allows), and
// when it is spent the one line says for how long the model stayed away.
#pragma once

#include <string>

#include "agent/classify.h"
#include "agent/limits.h"

namespace phoenix::engine {

struct ModelWait {
  int waits = 0;            // waits in a row
  long long waited_ms = 0;  // waited in a row, the refused runs themselves included

  // A run the provider refused took `run_ms`: a CLI that retries inside
  // itself waits too.
  void refused(long long run_ms) { waited_ms += run_ms; }

  // What is left of `max_ms` for the waits in a row (<= 0: spent).
  long long left_of(long long max_ms) const { return max_ms - waited_ms; }

  // The next wait (agent::wait_ms: backoff, or the reset time the CLI
  // gave), at most `left_ms`, counted as waited.
  long long next(const agent::Classification& c, long long left_ms) {
    const long long wait = agent::wait_ms(c, waits, left_ms);
    ++waits;
    waited_ms += wait;
    return wait;
  }

  // The one line when the budget is spent: "harness rate-limited for
  // 601 s: claude: <the CLI's first error line>".
  std::string spent_line(const std::string& status, const std::string& program, const std::string& cause) const {
    return agent::unusable_line(status + " for " + std::to_string((waited_ms + 500) / 1000) + " s", program, cause);
  }
};

}  // namespace phoenix::engine
