// Pushes made from here without Phoenix (git push --no-verify,
// PHOENIX_SKIP=1): noticed, and with hook.verify_skipped measured
// (hook/pre_push.h).
#include "hook/pre_push.h"

#include <algorithm>
#include <filesystem>
#include <ostream>

#include "hook/runs.h"
#include "trace/events.h"
#include "util/error.h"
#include "util/format.h"

namespace phoenix::hook::pre_push {

namespace fs = std::filesystem;

// A remote end no measurement of Phoenix's covers (neither measured green
// nor an ancestor of one), put there by a push from here after the hook was
// installed or had pushed that ref (unexplained_remote_ends: the
// remote-tracking ref's reflog says "update by push"): a push made with
// --no-verify or PHOENIX_SKIP=1. Said on stderr and kept for `phoenix
// status`. A commit a teammate pushed arrives by a fetch and is not named.
void PrePush::notice_skipped() {
  const std::vector<const PushedRef*> odd = unexplained_remote_ends(opt_.root, opt_.remote, refs_);
  if (odd.empty()) return;
  const RunLog log = read_runs(opt_.root);
  for (const PushedRef* r : odd) {
    bool covered = false;
    for (const std::string& g : log.green) {
      try {
        covered = repo().is_ancestor(r->remote_sha, g);
      } catch (const Error&) {}
      if (covered) break;
    }
    if (covered) continue;
    const std::string branch = r->remote_ref.substr(std::string("refs/heads/").size());
    err_ << "phoenix: warning: " << opt_.remote << "/" << branch << " is at " << util::sha12(r->remote_sha)
         << ", pushed from here without Phoenix measuring it (git push --no-verify or PHOENIX_SKIP=1); "
         << "'phoenix run' on that commit measures it\n";
    note_unmeasured_push(opt_.root, opt_.remote, r->remote_ref, r->remote_sha);
    if (std::find(skipped_.begin(), skipped_.end(), r->remote_sha) == skipped_.end()) skipped_.push_back(r->remote_sha);
    if (opt_.trace)
      opt_.trace().append(trace::event::kHookUnmeasuredPush,
                          {{"remote", opt_.remote}, {"remote_ref", r->remote_ref}, {"commit", r->remote_sha}});
  }
}

// hook.verify_skipped: each commit a skipped push left on the remote is
// measured now (with its own phoenix.json, in the hook's worktree unless
// it is a clean HEAD), after this push's own commits; a red one is named.
// It is on the remote already, so it does not block this push: this push's
// own commits decide. A green one counts as measured from now on.
std::optional<int> PrePush::verify_skipped() {
  if (!cfg_.hook.verify_skipped) return std::nullopt;
  for (const std::string& commit : skipped_) {
    if (std::any_of(targets_.begin(), targets_.end(), [&](const Target& t) { return t.commit == commit; })) continue;
    err_ << "phoenix: hook.verify_skipped: measuring " << util::sha12(commit) << ", pushed without Phoenix\n";
    const Target skipped{commit, {}};
    const size_t reds_before = reds_.size(), head_before = head_results_.size();
    const std::optional<int> code = measure(skipped);
    std::string red;
    for (size_t i = reds_before; i < reds_.size(); ++i) red += (red.empty() ? "" : ", ") + reds_[i].result.id;
    reds_.resize(reds_before);
    head_results_.resize(head_before);
    if (code == kExitInterrupted) return code;
    if (code) err_ << "phoenix: warning: " << util::sha12(commit) << " (pushed without Phoenix) was not measured\n";
    else if (!red.empty())
      err_ << "phoenix: warning: " << util::sha12(commit) << ", pushed without Phoenix, is red: " << red
           << " ('phoenix run' on that commit heals it)\n";
    if (opt_.trace)
      opt_.trace().append(trace::event::kHookSkippedPushMeasured,
                          {{"commit", commit}, {"red", red}, {"measured", !code.has_value()}});
    if (code) break;  // out of time or unloadable: the rest waits for the next run
  }
  return std::nullopt;
}

}  // namespace phoenix::hook::pre_push
