// Tests that bite: a change that adds or changes tests must come with
// tests that fail without the change's code (docs/loop.md "Tests that
// bite", docs/checks.md `tests_must_bite`).
//
// The change's files are split by the test globs of the checks it concerns
// (a check's `tests`, or the protected test globs when it names none): its
// tests, and its code. The scratch tree is the change's tree with its code
// put back as it was before the change and its tests kept (one commit,
// gitx::Repo::squash, no ref moved), checked out in a persistent worktree
// of its own ("bite", "bite-2" ...: layout/trees.h, locked while in use,
// given the setup steps like every tree of Phoenix's). Each concerned check
// is measured there fresh (never through the measurement store) until one
// bites: it is red, and where the runner names its failing tests
// (engine/test_runners.h), one of them is the change's (named by a test
// file the change touched, or failing there and not before the change).
// Every concerned check green there: the tests do not test the change.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/json.h"

namespace phoenix::gitx {
class Repo;
}

namespace phoenix::engine {

// What the measurement found.
enum class Bite {
  kNoTests,     // the change adds or changes no test file of a check that must bite: nothing to do
  kExempt,      // the change is tests and nothing else: no code to take away
  kBites,       // a check is red without the change's code, on the change's tests
  kToothless,   // every concerned check is green without the change's code
  kUnmeasured,  // the scratch tree could not be made or measured (Phoenix's own failure, said)
};

// "no-tests", "exempt", "bites", "toothless", "unmeasured": the word in the trace.
const char* bite_name(Bite b);

struct BiteRequest {
  std::string base;    // the commit the change starts from
  std::string change;  // a commit holding the change (a snapshot of the tree)
  // Paths that are neither code nor tests (Phoenix's own, the loop's tasks
  // file): prefixes ending in '/', or files.
  std::vector<std::string> own;
  // tests_must_bite for a check that does not say: true in the loop and
  // `phoenix run`, false in the pre-push hook.
  bool default_on = true;
  // Checks red at `base`, with the failing tests their runner named there
  // (empty when it named none). A check not listed was green at `base`.
  std::map<std::string, std::vector<std::string>> red_before;
  std::set<std::string> skip;  // check ids left out (the loop's ignored checks)
  double tree_wait_s = 300;    // the longest wait for a free scratch tree
};

struct BiteResult {
  Bite verdict = Bite::kNoTests;
  std::vector<std::string> tests;    // the change's added or changed test files
  std::vector<std::string> code;     // its other files
  std::vector<std::string> checks;   // the checks measured in the scratch tree, in order
  std::string bit;                   // the check that was red there (kBites)
  std::vector<std::string> failing;  // its failing tests that are the change's
  std::string tree;                  // the scratch tree's name
  std::string why;                   // one line, for people
  long long duration_ms = 0;
  util::Json to_json() const;  // {verdict, tests, code, checks, bit, failing, tree, why, duration_ms}
};

// A check's test globs: its `tests`, or the protected test globs
// (engine/guards.h) when it names none.
std::vector<std::string> test_globs(const checks::CheckSpec& check);

// Whether `check` takes part: a command_exit check whose tests_must_bite
// (or `default_on`) is true.
bool must_bite(const checks::CheckSpec& check, bool default_on);

// Measures the change's tests without its code (see above). `say` gets the
// lines a person watching reads ("tests bite: measuring unit in bite without
// the change's code"). Never throws for a failure of its own: kUnmeasured.
BiteResult tests_bite(gitx::Repo& repo, const config::Config& cfg, const BiteRequest& req,
                      const std::function<void(const std::string&)>& say = {});

}  // namespace phoenix::engine
