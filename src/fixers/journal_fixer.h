// The journal fixer: the fix that healed this issue before, proposed again.
//
// It is always a first guess, never a verdict: the engine checkpoints,
// guards, applies and re-measures a replayed patch exactly like a fresh
// proposal, so a stale patch costs one check run, never correctness. The
// outcome comes back through engine::JournalSink (a replay that heals is
// counted; one that fails is demoted and not offered again).
//
// propose() offers the verified patches stored for
// Request.failure.issue_signature, one per call, newest verified first,
// skipping any this instance already offered for that signature (the engine
// calls again after a failed attempt) and any whose patch already appears
// in Request.earlier. A stored patch that no longer applies to the user's
// work tree (checked with libgit2, changing nothing) is not proposed: it is
// recorded as failed ("no longer applies: ..."), which demotes it, and the
// next one is tried. When none is left: kNothing, and the engine moves on
// to the next fixer. A journal that cannot be read (locked, damaged) gives
// kUnavailable with the reason, so the run carries on without it.
//
// A replay makes no model call: model_calls = 0 and no cost.
#pragma once

#include <set>
#include <string>

#include "fixers/fixer.h"
#include "journal/journal.h"

namespace phoenix::fixers {

class JournalFixer : public Fixer {
 public:
  explicit JournalFixer(journal::Journal& journal) : journal_(journal) {}
  std::string name() const override { return kJournal; }
  Proposal propose(const Request& request) override;

 private:
  journal::Journal& journal_;
  std::set<std::string> offered_;  // signature + ":" + patch hash, for this run
};

}  // namespace phoenix::fixers
