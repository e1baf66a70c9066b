// `phoenix report --json`: tasks done and skipped, each heal (check, fixer,
// attempts, duration, replayed from the journal or not), each incident
// (check, signature, why, the sha it rolled back to), loops, runs, agent
// iterations, agent runs, model calls, time and cost. A cost no CLI
// reported is null, never 0; so is the model-call count when any run
// reported none. Tasks are counted once each, by id.
#pragma once

#include <memory>

#include "report/events.h"
#include "util/json.h"

namespace phoenix::report {

struct Night;

// The figures of the JSON report, gathered in the one pass over the trace
// that builds the night (read_night): what agent runs spent is the night's
// (report/events.h, spend_of), not counted here a second time.
class Figures {
 public:
  Figures();
  ~Figures();
  Figures(const Figures&) = delete;
  Figures& operator=(const Figures&) = delete;
  void read(const Event& e);
  util::Json json() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The JSON report of a night: its figures, and what its agent runs spent.
util::Json summary_json(const Night& n);

}  // namespace phoenix::report
