// One `phoenix hook run pre-push`: its steps in order, the measurement of
// every pushed commit, and what the run leaves in the trace and in
// hook-runs.jsonl (hook/pre_push.h).
#include "hook/pre_push.h"

#include <algorithm>
#include <filesystem>
#include <ostream>

#include "hook/fixed.h"
#include "hook/runs.h"
#include "setup/guard.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/format.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::hook {
namespace pre_push {

namespace fs = std::filesystem;

int PrePush::run() {
  handed_ = take_measured();
  lock_ = take_handed_lock(opt_.root);  // phoenix-hook's, kept across its exec
  if (auto code = load_config()) return *code;
  if (auto code = take_lock()) return *code;
  forget_git_location_env();
  read_head();
  notice_skipped();
  find_targets();
  for (const auto& t : targets_)
    if (auto code = measure(t)) return *code;
  if (auto code = verify_skipped()) return *code;
  if (auto code = judge_against_references()) return *code;
  let_by();
  if (reds_.empty()) {
    // The common case stays cheap: a green push of HEAD in place leaves no
    // trace entry (an fsynced append on every push); a worktree run does.
    if (used_worktree_) trace_outcome("green");
    return kExitOk;
  }
  if (cfg_.hook.mode != config::HookMode::kHeal) return block();
  return heal();
}

std::string PrePush::blocked_line(const Red& r) const {
  std::string line = r.result.id + " is red in " + r.target->label();
  const engine::Verdict& v = r.verdict;
  if (!v.whole && !v.new_failures.empty())
    line += ": " +
            util::plural(static_cast<long long>(v.new_failures.size()), "new failing test", "new failing tests") +
            " (" + util::join_argv(v.new_failures) + ")";
  if (!v.let_by().empty()) line += "; let by: " + v.let_by() + " on " + r.reference_label;
  return line;
}

std::optional<int> PrePush::load_config() {
  try {
    cfg_ = config::load(opt_.root, false);
  } catch (const ConfigError& e) {
    err_ << "phoenix: error: " << e.what() << "\n"
         << "phoenix: push blocked until phoenix.json loads ('PHOENIX_SKIP=1 git push' skips the check once)\n";
    return kExitConfig;
  }
  if (cfg_.path.empty()) {
    err_ << "phoenix: warning: no phoenix.json in " << opt_.root
         << ": nothing measured, push allowed (run 'phoenix init')\n";
    return kExitOk;
  }
  if (commits_to_measure(refs_).empty()) return kExitOk;  // only deletions
  selected_ = hook_checks(cfg_);
  if (selected_.empty()) {
    err_ << "phoenix: warning: phoenix.json has no checks: nothing measured, push allowed\n";
    return kExitOk;
  }
  deadline_.emplace(start_, cfg_.hook.timeout_s);
  return std::nullopt;
}

std::optional<int> PrePush::take_lock() {
  layout::ensure_state_dir(opt_.root);
  try {
    if (!lock_) lock_ = lock_repository(opt_.root);
  } catch (const Error&) {
    long pid = util::FileLock::holder_pid(layout::lock_file(opt_.root));
    if (pid <= 0) throw;  // not a holder: the lock file itself is the problem, and the error says why
    err_ << "phoenix: another Phoenix run (pid " << pid << ") holds this repository; push blocked (try again when it "
         << "ends, or skip once with PHOENIX_SKIP=1)\n";
    return kExitRed;
  }
  return std::nullopt;
}

// The green path — every pushed commit is HEAD, the tree is clean — is
// decided by one `git status`, the scan git itself would make, and libgit2
// (whose start-up alone parses the system's CA bundle) is opened only when
// something else is needed.
void PrePush::read_head() {
  const std::optional<HeadState> fast = head_state_from_git(opt_.root);
  head_ = fast ? fast->head : repo().head_sha();
  head_branch_ = head_.empty() ? "" : fast ? fast->branch : repo().head_branch();
  if (fast && fast->clean) clean_ = true;  // a dirty verdict is left to libgit2, which knows keep_prefixes' exact rules
}

// Annotated tags name tag objects: measure the commit they point to, once.
void PrePush::find_targets() {
  for (const auto& r : refs_) {
    if (r.deletion()) continue;
    std::string commit;
    try {
      commit = !head_.empty() && r.local_sha == head_ ? head_ : repo().resolve(r.local_sha);
    } catch (const Error&) {
      err_ << "phoenix: " << r.local_ref << " (" << util::sha12(r.local_sha)
           << ") does not name a commit: not measured\n";
      continue;
    }
    auto it = std::find_if(targets_.begin(), targets_.end(), [&](const Target& t) { return t.commit == commit; });
    if (it == targets_.end()) targets_.push_back({commit, {&r}});
    else it->refs.push_back(&r);
  }
}

// Every selected check on one commit: in place when it is a clean HEAD,
// else in the hook's worktree.
std::optional<int> PrePush::measure(const Target& t) {
  const bool in_place = t.commit == head_ && is_clean();
  std::string dir = opt_.root;
  // In place, the work tree's phoenix.json is HEAD's; elsewhere the commit
  // is measured by the phoenix.json it carries.
  std::optional<config::Config> own;
  if (!in_place)
    if (auto code = commit_config(t, own)) return code;
  const config::Config& cfg = own ? *own : cfg_;
  const std::vector<checks::CheckSpec> selected = own ? hook_checks(*own) : selected_;
  if (selected.empty()) {
    err_ << "phoenix: warning: the phoenix.json of " << t.label() << " has no checks: nothing measured there\n";
    return std::nullopt;
  }
  if (!in_place)
    if (auto code = enter_worktree(t, cfg, dir)) return code;
  const std::string where = t.label() + (in_place ? "" : " (in the hook's worktree)");
  std::optional<gitx::Repo> tree_repo;
  if (!in_place) tree_repo.emplace(gitx::Repo::open(dir));
  engine::StoreUse store(in_place ? repo() : *tree_repo, dir, cfg, "hook", !engine::no_cache(opt_.no_cache),
                         &opt_.trace());
  for (const auto& spec : selected) {
    std::optional<checks::CheckSpec> capped = deadline_->cap(spec);
    if (!capped) {
      print_out_of_time(err_, cfg_.hook.timeout_s, spec.id, t.label());
      return kExitRed;
    }
    // The hook's worktree shares the user's config, hooks and refs: what a
    // check changes there is put back (setup/guard.h).
    const checks::SenseResult* given =
        in_place && handed_ && handed_->commit == t.commit ? handed_->find(spec.id) : nullptr;
    checks::SenseResult r;
    if (given) {
      r = *given;
      if (!r.ok) store.record(spec, r);  // the tree's failing set, for the pushes that follow
    } else {
      std::optional<setup::Guard> guard;
      if (!in_place) guard.emplace(dir);
      r = store.sense(spec, [&] { return checks::sense(*capped, dir); });
      if (guard) trace_put_back(guard->restore("the check " + spec.id));
    }
    if (r.interrupted || util::interrupted_signal() != 0) {
      print_interrupted(err_);
      return kExitInterrupted;
    }
    print_result(err_, opt_.color, r, where);
    note_measured(t, r, in_place, given != nullptr);
    if (in_place && t.commit == head_) head_results_.push_back(r);
    if (!r.ok) {
      reds_.push_back(judged(t, *capped, r, dir));
      store.judged(spec, reds_.back().verdict);
    }
  }
  say_fixed(t, selected, store);
  return std::nullopt;
}

// One measurement of `t` for the trace and hook-runs.jsonl (`by_thin`:
// phoenix-hook measured it and handed it over).
void PrePush::note_measured(const Target& t, const checks::SenseResult& r, bool in_place, bool by_thin) {
  measured_.push_back({{"commit", t.commit},
                       {"check", r.id},
                       {"ok", r.ok},
                       {"signal", r.signal},
                       {"in_place", in_place},
                       {"duration_ms", r.duration_ms}});
  if (by_thin) measured_.back()["by"] = "phoenix-hook";
}

void PrePush::log_run(int code) {
  std::error_code ec;
  if (!fs::is_directory(layout::state_dir(opt_.root), ec)) return;
  // A commit is measured green when every check measured on it passed, or
  // failed only on what was let by (pre-existing, flaky).
  std::vector<std::string> green, red;
  for (const auto& m : measured_) {
    const std::string c = m.value("commit", "");
    const bool let_by = std::any_of(let_by_.begin(), let_by_.end(), [&](const Red& r) {
      return r.target->commit == c && r.result.id == m.value("check", "");
    });
    if (!m.value("ok", false) && !let_by) red.push_back(c);
    else if (std::find(green.begin(), green.end(), c) == green.end()) green.push_back(c);
  }
  green.erase(std::remove_if(green.begin(), green.end(),
                             [&](const std::string& c) { return std::find(red.begin(), red.end(), c) != red.end(); }),
              green.end());
  hook::log_run(opt_.root, "phoenix", opt_.remote, refs_, run_outcome(code), green);
  if (code == kExitOk)
    for (const auto& r : refs_)
      if (!r.deletion()) clear_unmeasured_pushes(opt_.root, opt_.remote, r.remote_ref);
}

// What setup or a check changed in the user's repository and was put back
// (already said on stderr) goes into the trace too.
void PrePush::trace_put_back(const std::vector<std::string>& lines) {
  if (lines.empty() || !opt_.trace) return;
  for (const std::string& line : lines) opt_.trace().append(trace::event::kGuardPutBack, {{"line", line}});
}

void PrePush::trace_outcome(const std::string& outcome) {
  if (!opt_.trace) return;
  Json pushed = Json::array();
  for (const auto& r : refs_)
    pushed.push_back({{"local_ref", r.local_ref}, {"local_sha", r.local_sha}, {"remote_ref", r.remote_ref}});
  opt_.trace().append(trace::event::kHookPrePush, {{"remote", opt_.remote},
                                                   {"refs", pushed},
                                                   {"measured", measured_},
                                                   {"mode", cfg_.hook.mode},
                                                   {"outcome", outcome}});
}

// hook.mode "verify": every red check blocks the push.
int PrePush::block() {
  for (const auto& r : reds_) err_ << "phoenix: push blocked: " << blocked_line(r) << "\n";
  err_ << "phoenix: fix it and push again ('PHOENIX_SKIP=1 git push' skips the check once)\n";
  trace_outcome("blocked");
  return kExitRed;
}

}  // namespace pre_push

int run_pre_push(const PrePushOptions& opt, const std::vector<PushedRef>& refs, std::ostream& err) {
  pre_push::PrePush pre_push(opt, refs, err);
  const int code = pre_push.run();
  pre_push.log_run(code);
  // Last, so it is the line people see: checks that silently stopped
  // running are worse than a blocked push.
  if (std::optional<HookOwner> owner = hook_owner_of(opt.root); owner && !owner->calls_phoenix)
    err << "phoenix: warning: " << owner->warning << "\n";
  return code;
}

}  // namespace phoenix::hook
