// Verdicts per test: which failures of a red check a change brings
// (DESIGN.md "failing set", "reference tree", "pre-existing", "flaky",
// invariant 14; docs/checks.md "Only the failures a change brings count").
//
// A red check's failing set is the tests its runner names as failing
// (engine/test_runners.h). Each one is
//   - pre-existing: it fails at the reference tree too (the task's start in
//     the loop, the remote's tip for the pre-push hook, known-good for
//     `phoenix run`), known from the store or measured there;
//   - flaky: it passed when run again at the same tree, alone where the
//     runner can select it (engine/selection.h), up to `flaky_reruns` times;
//   - new: neither. Only new failures count against the change.
// A test failing at the reference and passing here is fixed ("also fixed").
// Where no names can be read (a crashed suite, a build error, a check that
// is not a test runner), the whole check is the unit, as it always was: it is
// pre-existing only when the reference failed the same way (the same issue
// signature), and it is not run again.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "checks/check_spec.h"
#include "util/json.h"

namespace phoenix::engine {

// What a check says at one tree: green, red with named failing tests, or
// red as a whole (no names: `signature` tells one such failure from another).
struct FailingSet {
  bool ok = false;
  std::vector<std::string> tests;  // sorted, unique
  std::string signature;           // the issue signature, when red
  bool named() const { return !tests.empty(); }
  // The failing set of `r`, a measurement of the check `check_id`.
  static FailingSet of(const std::string& check_id, const checks::SenseResult& r);
  util::Json to_json() const;  // {"ok", "tests", "signature"}
  static FailingSet from_json(const util::Json& j);
};

// Where a failure stands.
enum class Standing { kNew, kPreExisting, kFlaky };
const char* standing_name(Standing s);  // "new", "pre-existing", "flaky"

struct Verdict {
  std::string check;
  bool red = false;                  // the measurement judged was red
  bool whole = false;                // no names: the check itself is the unit (its id in the lists)
  std::vector<std::string> failing;  // every failing test of the measurement (or the check id, whole)
  std::vector<std::string> new_failures, pre_existing, flaky;
  std::vector<std::string> fixed;  // failing at the reference, passing here
  // Per flaky test: its runs in this judgement until it passed (the first
  // measurement included: 2 when the first re-run passed).
  std::map<std::string, int> runs_to_pass;
  std::string reference;  // how the reference was known ("store", "measured", "known red"), "" unknown
  int reruns = 0;         // runs made again at the tree
  long long rerun_ms = 0;
  std::vector<std::string> rerun_argv;  // the last re-run's command
  std::string signature;                // the issue signature of the new failures ("" when none)
  std::string whole_signature;          // whole: the measurement's issue signature (what a reference is compared by)

  // True when the change brought a failure: something new is red.
  bool counts() const { return red && !new_failures.empty(); }
  // "1 pre-existing (t_net), 1 flaky (t_slow)"; "" when nothing was let by.
  std::string let_by() const;
  util::Json to_json() const;
};

// The verdict before any reference or re-run: every failure new.
Verdict first_verdict(const checks::CheckSpec& check, const checks::SenseResult& r);

// Moves what also fails at `reference` from new to pre-existing and notes
// what it fixed; `how` says where the reference came from.
void against(Verdict& v, const FailingSet& reference, const std::string& how);

// Runs the new failing tests again, alone where the runner can select them,
// up to `reruns` times (where it cannot, the whole check again, once); what
// passes is flaky. A whole check (no names) is not run again.
// `run` measures a check (its target the selection) at the judged tree.
using RunFn = std::function<checks::SenseResult(const checks::CheckSpec&)>;
void rerun(Verdict& v, const checks::CheckSpec& check, const checks::SenseResult& first, int reruns, const RunFn& run);

// Measures the new failures at the reference tree (only them where the
// runner can select them): what fails there too is pre-existing. `run`
// measures a check at the reference tree.
void measure_reference(Verdict& v, const checks::CheckSpec& check, const checks::SenseResult& first, const RunFn& run);

// Sets v.signature: the issue signature over the new failures only, so that
// a flaky or pre-existing test never makes one failure look like another.
void sign(Verdict& v, const checks::SenseResult& first);

struct JudgeOptions {
  int reruns = 2;                       // phoenix.json flaky_reruns
  std::optional<FailingSet> reference;  // the reference tree's failing set, when known
  std::string reference_how = "store";
  RunFn run;               // re-runs at the judged tree; unset: none
  RunFn run_at_reference;  // measures at the reference tree; unset: none
};

// against (when a reference is known), rerun, measure_reference (when new
// failures are left and it can), sign: the whole judgement of one red check.
Verdict judge(const checks::CheckSpec& check, const checks::SenseResult& r, const JudgeOptions& o);

// The flake ledger (journal::Journal::record_flake): each flaky test of
// `v`, at `tree` ("" when the tree had no id), into the journal at
// `journal_path`. Best effort: a journal that cannot be opened or written
// is said through `warn` and costs nothing else.
void note_flakes(const std::string& journal_path, const Verdict& v, const std::string& tree,
                 const std::function<void(const std::string&)>& warn);

}  // namespace phoenix::engine
