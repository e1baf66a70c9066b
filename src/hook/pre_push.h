// One `phoenix hook run pre-push` (hook/hook.h's run_pre_push) as its
// steps: shared by hook/'s pre_push*.cc files only. pre_push.cc has the run
// and its measurement, pre_push_verdict.cc judges a red check against the
// remote's tip, pre_push_worktree.cc has the hook's worktrees,
// pre_push_skipped.cc the pushes made without Phoenix, pre_push_heal.cc
// hook.mode "heal".
#pragma once

#include <chrono>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checks/check.h"
#include "config/config.h"
#include "engine/cycle.h"
#include "engine/measure.h"
#include "engine/verdict.h"
#include "gitx/repo.h"
#include "hook/hook.h"
#include "layout/layout.h"
#include "layout/trees.h"
#include "util/json.h"
#include "util/lock.h"

namespace phoenix::hook::pre_push {

using Clock = std::chrono::steady_clock;
using util::Json;

// One commit being pushed: the sha git gave (a tag object for an annotated
// tag), the commit it names, and the local refs that push it.
struct Target {
  std::string commit;
  std::vector<const PushedRef*> refs;
  std::string label() const { return push_label(refs, commit); }
};

// A red check of a pushed commit, and its verdict (engine/verdict.h): the
// push is blocked only by failures it brings, judged against the remote's
// tip (`reference`, "" when there is none to judge against).
struct Red {
  const Target* target;
  checks::SenseResult result;
  checks::CheckSpec spec;
  engine::Verdict verdict;
  std::string reference;         // the commit the push is judged against
  std::string reference_label;   // "origin/main", "where it forks from origin/main"
  bool reference_known = false;  // the store said what failed there
};

// One `phoenix hook run pre-push`: its steps, and what they hand each other.
// A step that ends the run returns its exit code; nullopt goes on.
class PrePush {
 public:
  PrePush(const PrePushOptions& opt, const std::vector<PushedRef>& refs, std::ostream& err)
      : opt_(opt), refs_(refs), err_(err), start_(Clock::now()) {}

  int run();
  // This run's line in .phoenix/hook-runs.jsonl (hook/runs.h), once it ended
  // with `code`; an allowed push of a ref clears what was noticed on it.
  void log_run(int code);

 private:
  std::optional<int> load_config();
  std::optional<int> take_lock();
  void notice_skipped();
  std::optional<int> verify_skipped();
  void read_head();
  void find_targets();
  std::optional<int> measure(const Target& t);
  std::optional<int> commit_config(const Target& t, std::optional<config::Config>& out);
  std::optional<int> enter_worktree(const Target& t, const config::Config& cfg, std::string& dir);
  std::optional<int> take_tree();
  Red judged(const Target& t, const checks::CheckSpec& spec, const checks::SenseResult& r, const std::string& dir);
  void reference_of(const Target& t, Red& red);
  void note_measured(const Target& t, const checks::SenseResult& r, bool in_place, bool by_thin);
  void say_fixed(const Target& t, const std::vector<checks::CheckSpec>& selected, const engine::StoreUse& store);
  std::optional<int> judge_against_references();
  void let_by();
  int block();
  int heal();
  int heal_head(int code);
  void judged_for_heal(engine::RunOptions& run) const;
  std::string why_not_healable(const Target& t);
  void trace_outcome(const std::string& outcome);
  void trace_put_back(const std::vector<std::string>& lines);

  gitx::Repo& repo() {
    if (!repo_) repo_.emplace(gitx::Repo::open(opt_.root));
    return *repo_;
  }
  // Asked only when a pushed commit is HEAD.
  bool is_clean() {
    if (!clean_) clean_ = repo().is_clean(layout::keep_prefixes());
    return *clean_;
  }
  // The line that says why `r` blocks the push.
  std::string blocked_line(const Red& r) const;

  const PrePushOptions& opt_;
  const std::vector<PushedRef>& refs_;
  std::ostream& err_;
  const Clock::time_point start_;
  config::Config cfg_;
  std::vector<checks::CheckSpec> selected_;
  std::optional<Deadline> deadline_;
  std::unique_ptr<util::FileLock> lock_;
  std::optional<gitx::Repo> repo_;
  std::string head_;
  std::string head_branch_;
  std::optional<bool> clean_;
  std::vector<Target> targets_;
  std::vector<std::string> skipped_;  // remote ends a skipped push left unmeasured, for hook.verify_skipped
  std::vector<Red> reds_;             // the red checks whose failures the push brings
  std::vector<Red> let_by_;           // red checks whose failures were there before, or are flaky
  Json measured_ = Json::array();
  bool used_worktree_ = false;
  std::optional<layout::HeldTree> tree_;  // the hook tree this run holds, once it needs one
  // phoenix-hook's results for a clean HEAD, when it handed over at a red
  // check (take_measured): taken instead of running those checks again.
  std::optional<Measured> handed_;
  // Every result for HEAD measured in place: a heal starts from them.
  std::vector<checks::SenseResult> head_results_;
};

}  // namespace phoenix::hook::pre_push
