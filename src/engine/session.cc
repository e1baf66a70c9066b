#include "engine/session.h"

#include <algorithm>

#include "fixers/factory.h"

namespace phoenix::engine {

RunResult run_session(const std::string& root, const config::Config& cfg, SessionOptions options, trace::Trace& trace,
                      EventFn on_event) {
  std::vector<std::string> names = options.fixers.empty() ? cfg.fixers : options.fixers;
  if (options.run.dry_run) {
    // A dry run spends nothing on a model: the harness never runs.
    names.erase(std::remove(names.begin(), names.end(), "harness"), names.end());
    if (names.empty()) names.push_back("noop");
  }
  SenseRunner runner;
  auto fx = fixers::make_fixers(names);
  Engine eng(root, cfg, options.run, runner, std::move(fx), trace, std::move(on_event));
  return eng.run();
}

}  // namespace phoenix::engine
