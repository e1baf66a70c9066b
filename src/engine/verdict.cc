// Verdicts per test: see engine/verdict.h.
#include "engine/verdict.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include "engine/selection.h"
#include "journal/journal.h"
#include "engine/signature.h"
#include "util/format.h"
#include "util/json.h"

namespace phoenix::engine {

using util::Json;

namespace {

std::vector<std::string> minus(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const auto& x : a)
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  return out;
}

std::vector<std::string> both(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const auto& x : a)
    if (std::find(b.begin(), b.end(), x) != b.end()) out.push_back(x);
  return out;
}

void append(std::vector<std::string>& to, const std::vector<std::string>& more) {
  for (const auto& x : more)
    if (std::find(to.begin(), to.end(), x) == to.end()) to.push_back(x);
}

// "a, b, c and 2 more"
std::string names(const std::vector<std::string>& v) {
  std::string out;
  const size_t shown = std::min<size_t>(v.size(), 3);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + v[i];
  if (v.size() > shown) out += " and " + std::to_string(v.size() - shown) + " more";
  return out;
}

long long ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

FailingSet FailingSet::of(const std::string& check_id, const checks::SenseResult& r) {
  FailingSet f;
  f.ok = r.ok;
  if (r.ok) return f;
  f.tests = extract_failing_tests(r.output);
  f.signature = issue_signature(check_id, r.output);
  return f;
}

Json FailingSet::to_json() const { return Json{{"ok", ok}, {"tests", tests}, {"signature", signature}}; }

FailingSet FailingSet::from_json(const Json& j) {
  FailingSet f;
  f.ok = j.value("ok", false);
  f.tests = util::strings_in(j, "tests");
  std::sort(f.tests.begin(), f.tests.end());
  f.tests.erase(std::unique(f.tests.begin(), f.tests.end()), f.tests.end());
  f.signature = j.value("signature", "");
  return f;
}

const char* standing_name(Standing s) {
  switch (s) {
    case Standing::kNew: return "new";
    case Standing::kPreExisting: return "pre-existing";
    case Standing::kFlaky: return "flaky";
  }
  return "?";
}

std::string Verdict::let_by() const {
  std::string out;
  if (!pre_existing.empty()) out += std::to_string(pre_existing.size()) + " pre-existing (" + names(pre_existing) + ")";
  if (!flaky.empty()) out += (out.empty() ? "" : ", ") + std::to_string(flaky.size()) + " flaky (" + names(flaky) + ")";
  return out;
}

Json Verdict::to_json() const {
  return Json{{"check", check},         {"red", red},
              {"whole", whole},         {"failing", failing},
              {"new", new_failures},    {"pre_existing", pre_existing},
              {"flaky", flaky},         {"fixed", fixed},
              {"reference", reference}, {"reruns", reruns},
              {"rerun_ms", rerun_ms},   {"signature", signature.empty() ? std::string() : util::sha12(signature)}};
}

Verdict first_verdict(const checks::CheckSpec& check, const checks::SenseResult& r) {
  Verdict v;
  v.check = check.id;
  v.red = !r.ok;
  if (r.ok) return v;
  v.failing = extract_failing_tests(r.output);
  v.whole = v.failing.empty();
  if (v.whole) {
    v.failing = {check.id};
    v.whole_signature = issue_signature(check.id, r.output);  // what against() compares
    v.signature = v.whole_signature;
  }
  v.new_failures = v.failing;
  return v;
}

void against(Verdict& v, const FailingSet& ref, const std::string& how) {
  v.reference = how;
  if (!ref.ok && ref.named() && !v.whole) v.fixed = minus(ref.tests, v.red ? v.failing : std::vector<std::string>{});
  if (!v.red || ref.ok) return;
  if (v.whole) {
    // A crash is pre-existing only when the reference crashed the same way.
    if (!ref.named() && !ref.signature.empty() && ref.signature == v.whole_signature) {
      append(v.pre_existing, v.new_failures);
      v.new_failures.clear();
    }
    return;
  }
  const std::vector<std::string> also = both(v.new_failures, ref.tests);
  append(v.pre_existing, also);
  v.new_failures = minus(v.new_failures, also);
}

void rerun(Verdict& v, const checks::CheckSpec& check, const checks::SenseResult& first, int reruns, const RunFn& run) {
  if (!v.red || v.new_failures.empty() || reruns <= 0 || !run) return;
  // No names: the whole check is the unit, and it is not run again (a
  // re-run costs what the whole suite costs, and tells no test from another).
  if (v.whole) return;
  const auto start = std::chrono::steady_clock::now();
  bool selectable = true, ran_whole = false;
  for (int k = 0; k < reruns && !v.new_failures.empty(); ++k) {
    const Selection sel = selectable ? select_tests(check, v.new_failures, first.output) : Selection{};
    // Where the tests cannot be run alone, the whole check runs again, once:
    // a second whole run would cost the whole suite again.
    if (!sel.ok() && std::exchange(ran_whole, true)) break;
    const checks::CheckSpec spec = sel.ok() ? selected_check(check, sel) : check;
    const checks::SenseResult r = run(spec);
    ++v.reruns;
    v.rerun_argv = spec.argv;
    if (r.interrupted) break;
    const std::vector<std::string> still = r.ok ? std::vector<std::string>{} : extract_failing_tests(r.output);
    // A pass proves something only when a test ran; a red without names
    // (the re-run crashed) proves nothing.
    const bool conclusive = r.ok ? !(sel.ok() && sel.runner) || ran_some_tests(*sel.runner, r.output) : !still.empty();
    if (!conclusive) {
      if (!sel.ok()) break;
      selectable = false;  // the selection ran nothing: the whole check from now on
      continue;
    }
    const std::vector<std::string> passed = minus(v.new_failures, still);
    for (const auto& t : passed) v.runs_to_pass[t] = v.reruns + 1;
    append(v.flaky, passed);
    v.new_failures = minus(v.new_failures, passed);
  }
  v.rerun_ms += ms_since(start);
}

void measure_reference(Verdict& v, const checks::CheckSpec& check, const checks::SenseResult& first, const RunFn& run) {
  if (!v.red || v.new_failures.empty() || !run) return;
  const Selection sel = v.whole ? Selection{} : select_tests(check, v.new_failures, first.output);
  const checks::SenseResult r = run(sel.ok() ? selected_check(check, sel) : check);
  if (r.interrupted) return;
  v.reference = "measured";
  if (r.ok) return;
  FailingSet ref = FailingSet::of(check.id, r);
  if (v.whole) {
    against(v, ref, "measured");
    return;
  }
  if (!ref.named()) return;  // the reference crashed: nothing is said of the tests
  const std::vector<std::string> also = both(v.new_failures, ref.tests);
  append(v.pre_existing, also);
  v.new_failures = minus(v.new_failures, also);
}

void sign(Verdict& v, const checks::SenseResult& first) {
  if (!v.red || v.new_failures.empty()) {
    v.signature.clear();
    return;
  }
  v.signature = v.whole ? v.whole_signature : issue_signature_for(v.check, first.output, v.new_failures);
}

Verdict judge(const checks::CheckSpec& check, const checks::SenseResult& r, const JudgeOptions& o) {
  Verdict v = first_verdict(check, r);
  if (o.reference) against(v, *o.reference, o.reference_how);
  rerun(v, check, r, o.reruns, o.run);
  measure_reference(v, check, r, o.run_at_reference);
  sign(v, r);
  return v;
}

}  // namespace phoenix::engine

namespace phoenix::engine {

void note_flakes(const std::string& journal_path, const Verdict& v, const std::string& tree,
                 const std::function<void(const std::string&)>& warn) {
  if (v.flaky.empty()) return;
  try {
    journal::Journal j = journal::Journal::open(journal_path);
    for (const std::string& t : v.flaky) {
      const auto it = v.runs_to_pass.find(t);
      const int runs = it == v.runs_to_pass.end() ? 2 : it->second;
      j.record_flake({v.check, t, tree, runs, runs - 1});
    }
  } catch (const std::exception& e) {
    if (warn) warn(std::string("the flake ledger was not written: ") + e.what());
  }
}

}  // namespace phoenix::engine
