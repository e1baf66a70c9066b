// The repository's surgery in a run of the cycle: the checkpoint before
// every write (invariant 1), a patch undone byte for byte, what a fixer
// wrote into the user's repository put back (invariant 12), the rollback
// of an escalation (invariant 11), and known-good moved by an all-green end.
#include "engine/cycle.h"

#include <algorithm>

#include "engine/cycle_impl.h"
#include "engine/incident.h"
#include "trace/events.h"
#include "util/fault.h"
#include "util/format.h"
#include "util/text.h"

namespace phoenix::engine {

const char* rollback_name(Rollback r) { return r == Rollback::kKnownGood ? "known-good" : "pre-run"; }

std::optional<Rollback> parse_rollback(std::string_view word) {
  for (Rollback r : {Rollback::kPreRun, Rollback::kKnownGood})
    if (word == rollback_name(r)) return r;
  return std::nullopt;
}

// Invariant 1: a checkpoint commit of the whole work tree precedes every
// write to it. The first one of the run is also the pre-run checkpoint.
std::string Engine::Impl::checkpoint(const std::string& why) {
  PHOENIX_FAULT_IO("checkpoint-commit", repo->common_dir() + "/objects");
  std::string cp = repo->snapshot_workdir("phoenix: checkpoint before " + why, true, layout::state_prefixes());
  if (pre_run.empty()) {
    pre_run = cp;
    repo->write_ref(layout::pre_run_ref(*repo), cp, "phoenix: pre-run checkpoint");
  }
  repo->write_ref(layout::attempt_ref(*repo), cp, "phoenix: checkpoint before " + why);
  trace.append(trace::event::kCheckpoint, {{"commit", cp}, {"why", why}});
  PHOENIX_FAULT("after-checkpoint");
  return cp;
}

// Undo an applied patch byte-for-byte: on a clean tree, reset to the
// commit it was applied on; on a tree with the user's own changes, only
// the patch's paths go back to the checkpoint.
void Engine::Impl::undo_patch(const std::string& checkpoint_commit, const std::string& head_before,
                              const std::vector<std::string>& files) {
  if (!dirty0) {
    repo->reset_hard(head_before, true, keep);
  } else {
    repo->restore_paths(checkpoint_commit, files);
  }
  trace.append(trace::event::kRestore, {{"to", checkpoint_commit}, {"files", files}});
}

void Engine::Impl::undo(const Patch& patch) { undo_patch(patch.checkpoint, patch.head_before, patch.files); }

// RunOptions.task_start: whether the work tree (an applied patch
// included) holds that commit's tree again, Phoenix's paths and the
// untracked files the run found aside.
bool Engine::Impl::undoes_change() const {
  if (opt.task_start.empty()) return false;
  for (const std::string& f : gitx::Repo::patch_files(repo->diff_workdir_patch(opt.task_start))) {
    bool kept = false;
    for (const std::string& k : keep) kept = kept || util::starts_with(f, k);
    if (!kept) return false;
  }
  return true;
}

// Something wrote into the user's repository while a fixer worked. What
// it committed stays reachable under refs/phoenix/abandoned/; the work
// tree returns to the state before the fixer ran.
void Engine::Impl::restore_after_intrusion(const std::string& head_before, const std::string& pre_propose) {
  std::string head = repo->head_sha();
  if (head != head_before)
    repo->write_ref(std::string(layout::kAbandonedPrefix) + util::compact_utc(true) + "-intrusion", head,
                    "phoenix: written during a fixer run");
  if (!dirty0) {
    repo->reset_hard(head_before, true, keep);
  } else {
    if (head != head_before) repo->reset_hard(head_before, false, keep);
    std::vector<std::string> paths;
    for (const auto& st : repo->status()) {
      paths.push_back(st.path);
      if (!st.old_path.empty()) paths.push_back(st.old_path);
    }
    repo->restore_paths(pre_propose, paths);
  }
  trace.append(trace::event::kRestore,
               {{"to", dirty0 ? pre_propose : head_before}, {"why", "the repository changed while a fixer ran"}});
}

// Rollback (invariant 11), once the incident note is on disk: keep what is
// abandoned under a ref, then go back to the pre-run state, or to
// known-good when asked. The note says where the tree went.
void Engine::Impl::roll_back(const std::string& incident, RunResult& result) {
  std::string head = repo->head_sha();
  std::string target = head0;
  if (opt.rollback == Rollback::kKnownGood) {
    if (auto kg = layout::known_good_commit(*repo, known_good_ref)) target = *kg;
  }
  std::string stamp = util::compact_utc(true);
  if (head != target)
    repo->write_ref(std::string(layout::kAbandonedPrefix) + stamp, head, "phoenix: abandoned by rollback");
  PHOENIX_FAULT("mid-rollback");
  if (dirty0 && opt.rollback == Rollback::kKnownGood) {
    // The user's uncommitted work is kept too, as a commit under the same prefix.
    std::string wip =
        repo->snapshot_workdir("phoenix: uncommitted work before rollback", true, layout::state_prefixes());
    repo->write_ref(std::string(layout::kAbandonedPrefix) + stamp + "-worktree", wip, "phoenix: uncommitted work");
  }
  std::string state_line;
  if (head != target || opt.rollback == Rollback::kKnownGood) {
    repo->reset_hard(target, !dirty0, keep);
    state_line = "rolled back to " + target;
  } else {
    state_line = "rolled back to " + target + " (the pre-run state; every attempt was already undone)";
  }
  set_incident_state(incident, state_line);
  result.rolled_back_to = target;
  trace.append(trace::event::kRollback, {{"to", target}, {"abandoned", head}});
}

// Only a green measurement of every check at a clean HEAD blesses it.
void Engine::Impl::bless_known_good() {
  const bool all_green = std::all_of(green.begin(), green.end(), [](bool g) { return g; });
  if (all_green && !let_by_pre_existing && !opt.dry_run && opt.bless_known_good && repo->tracked_clean(keep) &&
      (opt.only.empty() || selected.size() == cfg.checks.size())) {
    std::string head = repo->head_sha();
    repo->write_ref(known_good_ref, head, "phoenix: every check green");
    trace.append(trace::event::kKnownGood, {{"commit", head}});
    explain("known-good := " + util::sha12(head) + " (every check measured green, tree clean)");
  }
}

}  // namespace phoenix::engine
