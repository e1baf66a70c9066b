// The noop fixer proposes nothing: a run with it only detects, and it ends
// the fixer list for tests and --dry-run comparisons.
#pragma once

#include "fixers/fixer.h"

namespace phoenix::fixers {

class NoopFixer : public Fixer {
 public:
  std::string name() const override { return "noop"; }
  Proposal propose(const Request&) override {
    Proposal p;
    p.status = Status::kNothing;
    p.detail = "the noop fixer proposes nothing";
    return p;
  }
};

}  // namespace phoenix::fixers
