#include "engine/state.h"

#include <iterator>

namespace phoenix::engine {

namespace {

struct Word {
  State state;
  const char* word;
};

constexpr Word kWords[] = {
    {State::kGreen, "GREEN"},          {State::kDetected, "DETECTED"},
    {State::kProposing, "PROPOSING"},  {State::kNoProposal, "NO_PROPOSAL"},
    {State::kRejected, "REJECTED"},    {State::kWaiting, "WAITING"},
    {State::kApplying, "APPLYING"},    {State::kVerifying, "VERIFYING"},
    {State::kHealed, "HEALED"},        {State::kEscalated, "ESCALATED"},
    {State::kProposed, "PROPOSED"},    {State::kRed, "RED"},
    {State::kWaitedOut, "WAITED_OUT"},
    {State::kUnusable, "MODEL_UNUSABLE"},
};

}  // namespace

const char* state_name(State s) {
  for (const auto& w : kWords)
    if (w.state == s) return w.word;
  return "?";
}

std::optional<State> parse_state(std::string_view word) {
  for (const auto& w : kWords)
    if (word == w.word) return w.state;
  return std::nullopt;
}

void to_json(util::Json& j, State s) { j = state_name(s); }

std::ostream& operator<<(std::ostream& out, State s) { return out << state_name(s); }

}  // namespace phoenix::engine
