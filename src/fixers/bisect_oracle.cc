// What answers one step of bisect: see fixers/bisect_oracle.h.
#include "fixers/bisect_oracle.h"

#include <utility>

namespace phoenix::fixers {

BisectOracleCheck::BisectOracleCheck(const Failure& failure, bool whole_only) : whole_(failure.check) {
  if (whole_only) {
    why_whole_ = "asked again with the whole check";
  } else if (failure.failing_first && failure.failing_first->read) {
    tests_ = failure.failing_first;
  } else {
    why_whole_ = failure.whole_why.empty() ? "its failing tests cannot be run alone" : failure.whole_why;
  }
}

void BisectOracleCheck::use_whole(std::string why) {
  tests_.reset();
  why_whole_ = std::move(why);
}

TestsAnswer BisectOracleCheck::ask_tests(const RunFn& run, checks::SenseResult* out) const {
  checks::SenseResult r = run(tests_->check);
  const TestsAnswer a = tests_->read(r);
  if (out) *out = std::move(r);
  return a;
}

OracleStep BisectOracleCheck::ask(const RunFn& run) const {
  OracleStep step;
  if (tests_) {
    const TestsAnswer a = ask_tests(run, &step.result);
    ++step.runs;
    if (a != TestsAnswer::kUnknown || step.result.interrupted || step.result.signal == "cancelled") {
      step.green = a == TestsAnswer::kGreen;
      step.selected = true;
      step.note = "failing tests alone";
      return step;
    }
    step.note = "whole check: the failing tests alone said nothing (" +
                (step.result.signal.empty() ? std::string("no test ran") : step.result.signal) + ")";
  } else {
    step.note = "whole check";
  }
  step.result = run(whole_);
  ++step.runs;
  step.green = step.result.ok;
  return step;
}

}  // namespace phoenix::fixers
