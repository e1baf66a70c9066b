// hook.mode "heal": the checked-out commit healed by the repository's own
// session, starting from what the run measured (hook/pre_push.h).
#include "hook/pre_push.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <ostream>

#include "engine/session.h"
#include "engine/timeline.h"
#include "util/error.h"
#include "util/format.h"
#include "util/text.h"

namespace phoenix::hook::pre_push {

namespace fs = std::filesystem;

// heal: only in place, on the branch that is checked out (or a detached
// HEAD pushed as HEAD), with no uncommitted change to a tracked file: that
// is where a fix commit lands for the next push. Untracked files do not
// block, as they do not block `phoenix run`. Returns "" when `t` can be
// healed, else why not and what to do.
std::string PrePush::why_not_healable(const Target& t) {
  if (t.commit != head_)
    return "it is not the checked-out commit (check it out and push again, or run 'phoenix run' there)";
  const bool from_head = std::any_of(t.refs.begin(), t.refs.end(), [&](const PushedRef* r) {
    return r->local_ref == "HEAD" || (!head_branch_.empty() && r->local_ref == "refs/heads/" + head_branch_);
  });
  if (!from_head)
    return "it is not pushed from the checked-out branch (push " +
           (head_branch_.empty() ? std::string("HEAD") : head_branch_) + " itself, or run 'phoenix run' there)";
  if (is_clean()) return "";
  std::vector<std::string> dirty;
  for (const gitx::StatusEntry& e : repo().status()) {
    if (e.code == '?') continue;
    const auto& keep = layout::keep_prefixes();
    if (std::any_of(keep.begin(), keep.end(), [&](const std::string& k) { return util::starts_with(e.path, k); }))
      continue;
    dirty.push_back(e.path);
  }
  if (dirty.empty()) return "";  // untracked files only
  std::string named;
  for (size_t i = 0; i < dirty.size() && i < 5; ++i) named += (i ? ", " : "") + dirty[i];
  if (dirty.size() > 5) named += " and " + std::to_string(dirty.size() - 5) + " more";
  return "the work tree has uncommitted changes (" + named + "): commit or stash them, then push again";
}

// hook.mode "heal": a red commit that cannot be healed in place blocks;
// the checked-out one is healed.
int PrePush::heal() {
  bool heal_head_commit = false;
  int code = kExitOk;
  for (const auto& r : reds_) {
    const std::string why = why_not_healable(*r.target);
    if (why.empty()) {
      heal_head_commit = true;
      continue;
    }
    err_ << "phoenix: push blocked: " << blocked_line(r) << "; it cannot be healed in place: " << why << "\n";
    code = kExitRed;
  }
  if (!heal_head_commit) {
    trace_outcome("blocked");
    return code;
  }
  return heal_head(code);
}

// What a heal of HEAD takes from this run's verdicts: the failing sets of
// the remote's tip (what failed there too is not the push's to heal), and
// the verdicts themselves (no test is run again twice).
void PrePush::judged_for_heal(engine::RunOptions& run) const {
  std::map<std::string, engine::FailingSet> reference;
  bool referenced = false;
  for (const std::vector<Red>* list : {&reds_, &let_by_})
    for (const Red& red : *list) {
      if (red.target->commit != head_) continue;
      run.measured_verdicts.push_back(red.verdict);
      if (red.reference.empty()) continue;
      referenced = true;
      const engine::Verdict& v = red.verdict;
      if (v.pre_existing.empty()) continue;
      reference[v.check] = engine::FailingSet{false, v.whole ? std::vector<std::string>{} : v.pre_existing,
                                              v.whole ? v.whole_signature : std::string()};
    }
  if (!referenced) return;
  run.reference = reference;
  run.reference_name = "the remote's tip";
}

// Heals the checked-out commit with the repository's own session, which
// is handed this run's lock: no other run takes the repository between
// the measurement and the heal.
int PrePush::heal_head(int code) {
  tree_.reset();  // measured: another checkout's hook may have it
  config::Config session_cfg = cfg_;
  double left = std::max(1.0, deadline_->left_s());
  for (auto& c : session_cfg.checks) c.timeout_s = std::min(c.timeout_s, left);
  session_cfg.harness.timeout_s = std::min(session_cfg.harness.timeout_s, left);
  engine::SessionOptions so;
  so.run.templates_dir = opt_.templates_dir;
  so.run.max_wait_s = std::min(cfg_.harness.max_wait_s.value_or(config::kDefaultMaxWaitS), left);
  if (!cfg_.hook.checks.empty()) so.run.only = cfg_.hook.checks;
  // The session starts from what was just measured here, not from a
  // measurement of its own: each check runs once before any fixer.
  so.run.measured = head_results_;
  so.run.measured_head = head_;
  so.run.measured_by = "hook";
  so.run.lock = std::move(lock_);
  so.run.no_cache = opt_.no_cache;
  so.run.tests_must_bite = false;  // a push waits: only checks that ask for it
  judged_for_heal(so.run);
  err_ << "phoenix: hook.mode is heal: healing " << util::sha12(head_) << " on "
       << (head_branch_.empty() ? "HEAD" : head_branch_) << "\n";
  engine::RunResult result = engine::run_session(opt_.root, session_cfg, so, opt_.trace(), [&](const Json& ev) {
    const std::string line = engine::timeline_line(ev, engine::TimelineForm::kHook, false);
    if (!line.empty()) err_ << line << "\n";
  });

  bool healed_any = false;
  for (const auto& i : result.issues) {
    if (i.state == engine::State::kHealed && !i.fix_commit.empty()) {
      err_ << "phoenix: healed " << i.check << " in " << util::sha12(i.fix_commit) << " — push again\n";
      healed_any = true;
    } else if (i.state == engine::State::kEscalated) {
      err_ << "phoenix: " << i.check << " escalated: see " << result.incident << "; push blocked\n";
      if (result.known_good.empty())
        err_ << "phoenix: no known-good commit yet: run `phoenix run` once while green (bisect starts from it)\n";
    } else if (engine::model_unusable(i.state)) {
      err_ << "phoenix: " << result.model_unusable << "; push blocked\n";
    } else if (i.state != engine::State::kHealed) {
      err_ << "phoenix: " << i.check << ": " << i.state << "; push blocked\n";
    }
  }
  if (result.exit_code != kExitOk) code = std::max(code, result.exit_code);
  else if (healed_any) code = std::max(code, static_cast<int>(kExitRed));  // the fix is not in what is being pushed
  else if (result.issues.empty())
    err_ << "phoenix: a fresh run of every check passes at " << util::sha12(head_)
         << " (flaky?); push allowed for it\n";
  trace_outcome(healed_any ? "healed" : code == kExitOk ? "green on re-run" : "blocked");
  return code;
}

}  // namespace phoenix::hook::pre_push
