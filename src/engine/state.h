// The states of one issue (cycle.h) and the outcomes of a run, as words: the
// trace's "state" events and `phoenix run --json` say them, the report and
// the hook read them back. This is the one place a state becomes a word and
// a word a state.
#pragma once

#include <optional>
#include <ostream>
#include <string_view>

#include "util/json.h"

namespace phoenix::engine {

enum class State {
  // The trace has a "state" event for each.
  kGreen,       // GREEN: the check measured green
  kDetected,    // DETECTED: the check measured red
  kProposing,   // PROPOSING: a fixer is asked for a patch
  kNoProposal,  // NO_PROPOSAL: the fixer had nothing to propose
  kRejected,    // REJECTED: a proposal failed, or a guard refused it
  kWaiting,     // WAITING: the model is rate-limited or unreachable
  kApplying,    // APPLYING: the patch goes onto a checkpoint
  kVerifying,   // VERIFYING: the check re-runs fresh
  // These end an issue: IssueOutcome::state is one of them.
  kHealed,     // HEALED: verified green, committed
  kEscalated,  // ESCALATED: budget spent, incident, rollback
  kProposed,   // PROPOSED: a dry run's proposal, not applied
  kRed,        // RED: not healed (uncommitted work, or a stop reason)
  kWaitedOut,  // WAITED_OUT: the model stayed away for max_wait_s
  kUnusable,   // MODEL_UNUSABLE: the model cannot be used (quota: credit or billing)
};

// "HEALED" for State::kHealed.
const char* state_name(State s);
// The state a word names; nullopt for any other word.
std::optional<State> parse_state(std::string_view word);

// JSON and streams carry the word.
void to_json(util::Json& j, State s);
std::ostream& operator<<(std::ostream& out, State s);

}  // namespace phoenix::engine
