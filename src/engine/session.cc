#include "engine/session.h"

#include "layout/layout.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "fixers/factory.h"
#include "fixers/journal_fixer.h"
#include "journal/journal.h"
#include "journal/sink.h"

namespace phoenix::engine {

RunResult run_session(const std::string& root, const config::Config& cfg, SessionOptions options, trace::Trace& trace,
                      EventFn on_event) {
  std::vector<std::string> names = options.fixers.empty() ? cfg.fixers : options.fixers;
  if (options.run.dry_run) {
    // A dry run spends nothing on a model: the harness never runs.
    names.erase(std::remove(names.begin(), names.end(), "harness"), names.end());
  }
  bool use_journal = std::find(names.begin(), names.end(), "journal") != names.end() && !options.no_journal;
  if (!use_journal) names.erase(std::remove(names.begin(), names.end(), "journal"), names.end());
  if (names.empty()) names.push_back("noop");

  // The journal is opened only when it is in the chain; a damaged one is an
  // error here (never overwritten), and --no-journal runs without it.
  std::optional<journal::Journal> jr;
  std::optional<journal::JournalSink> sink;
  if (use_journal) {
    layout::ensure_state_dir(root);
    jr.emplace(journal::Journal::open(layout::journal_file(root)));
    sink.emplace(*jr);
  }
  std::vector<std::unique_ptr<fixers::Fixer>> fx;
  for (const auto& n : names) {
    if (n == "journal") {
      fx.push_back(std::make_unique<fixers::JournalFixer>(*jr));
    } else {
      for (auto& f : fixers::make_fixers({n})) fx.push_back(std::move(f));
    }
  }
  SenseRunner runner;
  Engine eng(root, cfg, options.run, runner, std::move(fx), trace, std::move(on_event), sink ? &*sink : nullptr);
  return eng.run();
}

}  // namespace phoenix::engine
