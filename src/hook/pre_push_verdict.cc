// A red check of a pushed commit judged (engine/verdict.h): its failing
// tests run again, measured on the remote's tip, and let by when the push
// did not bring them (hook/pre_push.h).
#include "hook/pre_push.h"

#include <algorithm>
#include <filesystem>
#include <ostream>

#include "engine/selection.h"
#include "hook/fixed.h"
#include "setup/guard.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/format.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::hook::pre_push {

namespace fs = std::filesystem;

// A red check of `t` measured in `dir`: its new failing tests run again
// there (alone where its runner can select them); a pass makes one flaky.
Red PrePush::judged(const Target& t, const checks::CheckSpec& spec, const checks::SenseResult& r,
                    const std::string& dir) {
  Red red{&t, r, spec, engine::first_verdict(spec, r), "", "", false};
  if (t.refs.empty()) return red;  // a commit measured to be named (hook.verify_skipped), not pushed
  reference_of(t, red);
  if (!red.reference.empty()) {
    // What the store knows of the remote's tip costs nothing: first.
    try {
      engine::StoreUse store(repo(), opt_.root, cfg_, "hook", false, nullptr);
      if (auto f = store.reference(spec, repo().tree_of(red.reference))) {
        engine::against(red.verdict, *f, red.reference_label);
        red.reference_known = true;
      }
    } catch (const Error&) {}  // the tip is not here (not fetched): nothing known of it
  }
  std::optional<setup::Guard> guard;
  if (dir != opt_.root) guard.emplace(dir);
  engine::rerun(red.verdict, spec, r, cfg_.flaky_reruns, [&](const checks::CheckSpec& c) {
    std::optional<checks::CheckSpec> capped = deadline_->cap(c);
    return capped ? checks::sense(*capped, dir) : checks::SenseResult{};
  });
  if (guard) trace_put_back(guard->restore("a re-run of " + spec.id));
  return red;
}

// The checks of `selected` green in `t` that the store knows red on the
// remote's tip: the push fixes them, and says so (hook/fixed.h).
void PrePush::say_fixed(const Target& t, const std::vector<checks::CheckSpec>& selected,
                        const engine::StoreUse& store) {
  std::vector<checks::CheckSpec> green;
  for (const auto& spec : selected)
    if (std::none_of(reds_.begin(), reds_.end(),
                     [&](const Red& r) { return r.target == &t && r.result.id == spec.id; }))
      green.push_back(spec);
  std::vector<PushedRef> refs;
  for (const PushedRef* r : t.refs) refs.push_back(*r);
  for (const std::string& line : also_fixed_lines(store.dir(), refs, opt_.remote, green, t.label())) {
    err_ << line << "\n";
    if (opt_.trace) opt_.trace().append(trace::event::kHookAlsoFixed, {{"commit", t.commit}, {"line", line}});
  }
}

// The commit a push of `t` is judged against: the remote end of the ref it
// updates; for a new branch, where it forks from the remote's default
// branch. None when run by hand (no remote) or when git cannot say.
void PrePush::reference_of(const Target& t, Red& red) {
  if (opt_.remote.empty()) return;
  for (const PushedRef* r : t.refs) {
    if (!r->creation()) {
      red.reference = r->remote_sha;
      const bool branch = util::starts_with(r->remote_ref, "refs/heads/");
      red.reference_label = opt_.remote + "/" + (branch ? r->remote_ref.substr(11) : r->remote_ref);
      return;
    }
  }
  for (const std::string name : {"HEAD", "main", "master"}) {
    try {
      const std::optional<std::string> tip = repo().read_ref("refs/remotes/" + opt_.remote + "/" + name);
      if (!tip) continue;
      const std::string base = repo().merge_base(t.commit, *tip);
      if (base.empty()) return;
      red.reference = base;
      red.reference_label = "where it forks from " + opt_.remote + (name == "HEAD" ? "" : "/" + name);
      return;
    } catch (const Error&) {}
  }
}

// The new failures the store could not place are measured at the
// reference, in the hook's worktree, those tests alone (where the runner
// cannot select them, they stay the push's): what fails there too was
// there before the push.
std::optional<int> PrePush::judge_against_references() {
  for (Red& red : reds_) {
    engine::Verdict& v = red.verdict;
    if (!v.counts() || red.reference.empty() || red.reference_known) continue;
    // Only the failing tests, alone: a check whose failures cannot be named
    // or selected would cost a whole run at the tip (its store record, when
    // there is one, said what it could).
    if (v.whole || !engine::select_tests(red.spec, v.new_failures, red.result.output).ok()) continue;
    try {
      repo().tree_of(red.reference);  // the commit is here (fetched)
    } catch (const Error&) { continue; }
    const Target ref{red.reference, {}};
    std::string dir;
    if (auto code = enter_worktree(ref, cfg_, dir)) return code;
    err_ << "phoenix: measuring " << red.spec.id << "'s failing tests on " << red.reference_label << " ("
         << util::sha12(red.reference) << ")\n";
    std::optional<setup::Guard> guard;
    guard.emplace(dir);
    engine::measure_reference(v, red.spec, red.result, [&](const checks::CheckSpec& c) {
      std::optional<checks::CheckSpec> capped = deadline_->cap(c);
      return capped ? checks::sense(*capped, dir) : checks::SenseResult{};
    });
    trace_put_back(guard->restore("the check " + red.spec.id + " on " + red.reference_label));
    if (util::interrupted_signal() != 0) {
      print_interrupted(err_);
      return kExitInterrupted;
    }
  }
  return std::nullopt;
}

// Red checks whose failures the push did not bring are let by, and said;
// what the push fixed is said too.
void PrePush::let_by() {
  std::vector<Red> counting;
  for (Red& red : reds_) {
    engine::sign(red.verdict, red.result);
    const engine::Verdict& v = red.verdict;
    if (opt_.trace) {
      Json ev = v.to_json();
      ev["commit"] = red.target->commit;
      ev["reference"] = red.reference;
      opt_.trace().append(trace::event::kHookVerdict, ev);
    }
    if (!v.flaky.empty()) {
      std::string tree;
      try {
        tree = repo().tree_of(red.target->commit);
      } catch (const Error&) {}
      engine::note_flakes(layout::journal_file(opt_.root), v, tree,
                          [&](const std::string& line) { err_ << "phoenix: warning: " << line << "\n"; });
    }
    if (!v.fixed.empty())
      err_ << "phoenix: " << red.target->label() << " also fixes " << v.check << " on " << red.reference_label << ": "
           << util::join_argv(v.fixed) << "\n";
    if (v.counts()) {
      counting.push_back(red);
      continue;
    }
    err_ << "phoenix: let by: " << v.check << " in " << red.target->label() << ": " << v.let_by()
         << (v.pre_existing.empty() ? "" : " (pre-existing: failing on " + red.reference_label + " too)")
         << "; not this push's failures\n";
    let_by_.push_back(red);
  }
  reds_ = counting;
}

}  // namespace phoenix::hook::pre_push
