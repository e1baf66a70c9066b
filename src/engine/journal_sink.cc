#include "engine/journal_sink.h"

#include <iostream>

#include "util/error.h"
#include "util/format.h"

namespace phoenix::engine {

JournalSink::JournalSink(journal::Journal& journal, WarnFn warn) : journal_(journal), warn_(std::move(warn)) {
  if (!warn_) warn_ = [](const std::string& line) { std::cerr << "phoenix: warning: " << line << "\n"; };
}

void JournalSink::healed(const fixers::Failure& failure, const fixers::Proposal& proposal, long long verify_ms) {
  try {
    if (proposal.from_journal()) {
      if (!journal_.record_replay(failure.issue_signature, journal::patch_hash(proposal.patch)))
        warn_("journal: the replayed fix for " + util::sha12(failure.issue_signature) +
              " was forgotten meanwhile; its replay is not counted");
      return;
    }
    // The one conversion of a heal into the journal's words; the journal
    // keeps these facts as the entry's own (journal::Entry is a Fix).
    journal::Fix fix;
    fix.signature = failure.issue_signature;
    fix.check = failure.check.id;
    fix.failure_type = failure.failure_type;
    fix.patch = proposal.patch;
    fix.files = proposal.files;
    fix.fixer = proposal.fixer;
    fix.duration_ms = proposal.duration_ms;
    fix.verify_ms = verify_ms;
    fix.model_calls = proposal.model_calls;
    fix.cost_usd = proposal.cost_usd;
    journal_.record_healed(fix);
  } catch (const Error& e) { warn_(std::string("journal: the heal was not recorded: ") + e.what()); }
}

void JournalSink::failed(const fixers::Failure& failure, const fixers::Proposal& proposal, const std::string& why) {
  if (proposal.patch.empty()) return;
  try {
    journal_.record_failed(failure.issue_signature, journal::patch_hash(proposal.patch), why);
  } catch (const Error& e) {
    warn_(std::string("journal: a failed replay was not recorded (it may be tried again): ") + e.what());
  }
}

}  // namespace phoenix::engine
