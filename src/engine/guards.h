// Guards: what a proposed patch may not do. Every proposal passes through
// check_patch() before anything is written to the user's repository
// (invariants 4 and 9, docs/invariants.md); a failed guard ends it as
// REJECTED.
#pragma once

#include <string>
#include <vector>

#include "checks/check.h"
#include "config/config.h"

namespace phoenix::engine {

struct PatchFacts {
  std::string patch;               // unified diff, git format
  std::vector<std::string> files;  // every path it touches (old and new names)
  size_t insertions = 0, deletions = 0;
};

struct GuardVerdict {
  bool ok = true;
  std::string guard;   // empty, patch_cap, protected, editable, escape, symlink, diff_cap, destructive
  std::string reason;  // one line for people
};

// The test files of a check that names none in `tests`: tests/**, test/**,
// *_test.*, test_*.* and the like (protected when protect_tests is on; the
// test files whose changes must bite, engine/bite.h).
const std::vector<std::string>& default_test_globs();

// The protected globs for one check (always + config + its tests).
std::vector<std::string> protected_globs(const checks::CheckSpec& check, const config::Config& cfg,
                                         const std::string& root);

// Reads the paths, mode changes and line counts out of a git-format patch.
PatchFacts patch_facts(const std::string& patch);

GuardVerdict check_patch(const PatchFacts& facts, const checks::CheckSpec& check, const config::Config& cfg,
                         const std::string& root);

// Added lines that drop, truncate or destroy: they need a person.
std::vector<std::string> destructive_lines(const std::string& patch);

}  // namespace phoenix::engine
