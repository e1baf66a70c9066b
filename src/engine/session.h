// One heal session as the commands run it: the fixer chain built from
// names, the real check runner, the journal when it is in the chain.
// `phoenix run`, the pre-push hook and the loop all come through here.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "engine/cycle.h"
#include "trace/trace.h"

namespace phoenix::engine {

struct SessionOptions {
  RunOptions run;
  std::vector<std::string> fixers;  // names, in order; empty: the config's
  bool no_journal = false;
  // Whose journal: "" is root's. phoenix-loop heals in its own worktrees
  // and passes the user's work tree: one journal per repository.
  std::string journal_root;
};

RunResult run_session(const std::string& root, const config::Config& cfg, SessionOptions options, trace::Trace& trace,
                      EventFn on_event);

}  // namespace phoenix::engine
