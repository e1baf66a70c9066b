// The phases of phoenix-loop, as words: loop-state.json's "phase" (and each
// worker's), the trace's loop.end "phase" and the morning report, which
// reads them back. This is the one place a phase becomes a word and a word
// a phase. It sits in engine/, below both loop/, which writes the phases,
// and report/, which reads them (the layers of docs/architecture.md).
#pragma once

#include <optional>
#include <ostream>
#include <string_view>

#include "util/json.h"

namespace phoenix::engine {

enum class Phase {
  kStarting,    // starting: the run is being set up
  kBaseline,    // baseline: every check measured before the first task
  kAgent,       // agent: the agent CLI runs (or, with workers, tasks are handed out)
  kChecking,    // checking: the checks measure the agent's change
  kHealing,     // healing: the inner cycle mends a red tree
  kCommitting,  // committing: a green task becomes a commit on the branch
  kWaiting,     // waiting: the model is rate-limited or unreachable
  kMerging,     // merging: an entry of the merge queue (--workers N)
  // The run is over: one of these is its last phase.
  kComplete,     // complete: every task done, every check green
  kStopped,      // stopped: a stop reason (STOP, --until, a cap, red at the end)
  kEscalated,    // escalated: a task or the baseline could not be healed
  kInterrupted,  // interrupted: SIGINT / SIGTERM
  kFailed,       // failed: an error Phoenix could not go on after
};

namespace phase_detail {

struct Word {
  Phase phase;
  const char* word;
};

inline constexpr Word kWords[] = {
    {Phase::kStarting, "starting"}, {Phase::kBaseline, "baseline"},   {Phase::kAgent, "agent"},
    {Phase::kChecking, "checking"}, {Phase::kHealing, "healing"},     {Phase::kCommitting, "committing"},
    {Phase::kWaiting, "waiting"},   {Phase::kMerging, "merging"},     {Phase::kComplete, "complete"},
    {Phase::kStopped, "stopped"},   {Phase::kEscalated, "escalated"}, {Phase::kInterrupted, "interrupted"},
    {Phase::kFailed, "failed"},
};

}  // namespace phase_detail

// "agent" for Phase::kAgent.
inline const char* phase_name(Phase p) {
  for (const auto& w : phase_detail::kWords)
    if (w.phase == p) return w.word;
  return "?";
}

// The phase a word names; nullopt for any other word.
inline std::optional<Phase> parse_phase(std::string_view word) {
  for (const auto& w : phase_detail::kWords)
    if (word == w.word) return w.phase;
  return std::nullopt;
}

// JSON and streams carry the word.
inline void to_json(util::Json& j, Phase p) { j = phase_name(p); }
inline std::ostream& operator<<(std::ostream& out, Phase p) { return out << phase_name(p); }

}  // namespace phoenix::engine
