#include "engine/session.h"

#include "layout/layout.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "engine/journal_sink.h"
#include "fixers/factory.h"
#include "fixers/journal_fixer.h"
#include "journal/journal.h"

namespace phoenix::engine {

RunResult run_session(const std::string& root, const config::Config& cfg, SessionOptions options, trace::Trace& trace,
                      EventFn on_event) {
  std::vector<std::string> names = options.fixers.empty() ? cfg.fixers : options.fixers;
  if (options.run.dry_run) {
    // A dry run spends nothing on a model: the harness never runs.
    names.erase(std::remove(names.begin(), names.end(), "harness"), names.end());
  }
  bool use_journal = std::find(names.begin(), names.end(), fixers::kJournal) != names.end() && !options.no_journal;
  if (!use_journal) names.erase(std::remove(names.begin(), names.end(), fixers::kJournal), names.end());
  if (names.empty()) names.push_back("noop");

  // The journal records every verified outcome, whichever fixers run (a
  // heal by --fixer harness too); it replays only when it is in the chain.
  // A damaged one is an error here (never overwritten); --no-journal runs
  // without it, and a dry run verifies nothing it could record.
  const bool record = !options.no_journal && !options.run.dry_run;
  std::optional<journal::Journal> jr;
  std::optional<JournalSink> sink;
  if (use_journal || record) {
    const std::string& home = options.journal_root.empty() ? root : options.journal_root;
    layout::ensure_state_dir(home);
    jr.emplace(journal::Journal::open(layout::journal_file(home)));
    sink.emplace(*jr);
  }
  std::vector<std::unique_ptr<fixers::Fixer>> fx;
  for (const auto& n : names) {
    if (n == fixers::kJournal) {
      fx.push_back(std::make_unique<fixers::JournalFixer>(*jr));
    } else {
      for (auto& f : fixers::make_fixers({n})) fx.push_back(std::move(f));
    }
  }
  // The flake ledger is a table of the same journal (engine/verdict.h).
  if (options.run.journal_root.empty()) options.run.journal_root = options.journal_root;
  if (options.no_journal) options.run.flake_ledger = false;
  SenseRunner runner;
  Engine eng(root, cfg, options.run, runner, std::move(fx), trace, std::move(on_event), sink ? &*sink : nullptr);
  return eng.run();
}

}  // namespace phoenix::engine
