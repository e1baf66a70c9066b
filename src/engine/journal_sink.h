// JournalSink: what the engine measured goes into the journal.
//
// The engine calls an OutcomeSink only after a measurement (a fresh re-run
// of the failing check, or a guard's verdict on a proposal), so this is the
// one place the journal learns from, and it never learns from a fixer's
// claim:
//   healed(): a proposal from the journal itself counts a replay (verified,
//             successes and replays +1, so `phoenix journal stats` can say
//             what it saved); any other fixer's patch becomes (or
//             strengthens) a verified entry, keeping that fixer's time,
//             model calls and cost as what later replays save.
//   failed(): the patch's entry for this signature, if there is one, is
//             demoted (whoever proposed it: the same patch measured failing
//             is stale either way), so the next run tries the next fixer.
//
// It lives in the engine because it is the engine's OutcomeSink: the arrow
// points down (engine -> journal), and journal/ knows nothing of the engine.
#pragma once

#include <functional>
#include <string>

#include "engine/cycle.h"
#include "journal/journal.h"

namespace phoenix::engine {

class JournalSink : public OutcomeSink {
 public:
  // Called with one line when the journal cannot record an outcome (locked
  // too long, damaged meanwhile): a heal that was measured stays a heal, so
  // a journal problem is a warning, never an exception into the engine.
  // Default: "phoenix: warning: ..." on stderr.
  using WarnFn = std::function<void(const std::string&)>;

  explicit JournalSink(journal::Journal& journal, WarnFn warn = {});

  void healed(const fixers::Failure& failure, const fixers::Proposal& proposal, long long verify_ms) override;
  void failed(const fixers::Failure& failure, const fixers::Proposal& proposal, const std::string& why) override;

 private:
  journal::Journal& journal_;
  WarnFn warn_;
};

}  // namespace phoenix::engine
