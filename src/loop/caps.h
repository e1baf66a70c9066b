// Money and time caps of phoenix-loop (--max-cost USD, --max-hours H, or
// loop.max_cost_usd / loop.max_hours): no new iteration starts once the
// recorded cost or the elapsed time would pass its cap.
//
// "Would pass": what has been spent so far plus the most one iteration has
// cost so far (its agent run and any heal after it), and the time elapsed
// plus the longest iteration so far. The first iteration has no such figure
// and starts while the cap is not reached yet.
//
// Costs come from the agent CLIs' own reports (agent::RunFacts cost_usd,
// e.g. claude's total_cost_usd). A run that called a model, or may have,
// and reported no cost is counted as a run of unknown cost: never as 0.
// With --max-cost, such runs make the cap unenforceable for what they
// spent; the loop says so once and carries on (the figures show them).
//
// Time is measured on the steady clock from the start of this process,
// plus what earlier processes of the same loop recorded (--resume carries
// the figures on from loop-state.json).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "util/json.h"

namespace phoenix::loop {

struct CapLimits {
  std::optional<double> max_cost_usd;
  std::optional<double> max_hours;
};

class Caps {
 public:
  // `steady_ms` reads a monotonic clock (tests pass their own).
  explicit Caps(CapLimits limits, std::function<long long()> steady_ms = {});

  // One model run: its reported cost, or none. `may_have_cost` is false for
  // a run known to have made no model call (not installed, 0 model calls).
  void add_run(std::optional<double> cost_usd, bool may_have_cost = true);
  // Figures already summed (a heal's proposals).
  void add(double known_usd, int unknown_runs);

  struct Verdict {
    bool stop = false;
    std::string cap;      // "--max-cost" or "--max-hours"
    std::string why;      // one line with the figures
    std::string warning;  // once: "--max-cost: 2 runs reported no cost ..."
  };
  // Before iteration `iterations_done + 1`. The time and cost since the
  // previous call count as one iteration's when `iterations_done` moved
  // since then (a rate-limit wait is not an iteration).
  Verdict before_iteration(int iterations_done);

  // Seconds until --max-hours is reached (a huge number without it), so an
  // agent run or a wait can be clipped to it.
  double seconds_left() const;

  // {"max_cost_usd", "max_hours", "cost_usd" (null while every model run
  // reported no cost), "unknown_cost_runs", "elapsed_s"}: loop-state.json's
  // "caps" and the trace.
  util::Json figures() const;
  // --resume: what earlier processes spent and how long they ran.
  void restore(const util::Json& figures);

  // "0.80 USD", "0.80 USD + 2 runs of unknown cost", "unknown (3 runs reported no cost)".
  std::string spent_text() const;

 private:
  long long elapsed_ms() const;

  CapLimits limits_;
  std::function<long long()> steady_ms_;
  long long start_ms_ = 0;
  long long earlier_ms_ = 0;  // elapsed in earlier processes (--resume)
  double known_usd_ = 0;
  int known_runs_ = 0;
  int unknown_runs_ = 0;
  // The window since the previous before_iteration().
  int mark_iterations_ = -1;
  long long mark_ms_ = 0;
  double mark_usd_ = 0;
  int mark_unknown_ = 0;
  // The most one iteration took.
  double max_iter_usd_ = 0;
  long long max_iter_ms_ = 0;
  bool warned_ = false;
};

// loop-state.json's "caps" for a person: "0.80 USD spent (cap 1.00 USD),
// 12 min elapsed (cap 6 h)"; unknown costs said so.
std::string figures_text(const util::Json& figures);

// "42 s", "12 min", "2.50 h".
std::string duration_text(long long ms);
// "1.20 USD" (up to 4 decimals for small amounts).
std::string usd_text(double usd);

}  // namespace phoenix::loop
