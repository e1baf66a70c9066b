// Every pre-push hook run leaves one line in .phoenix/hook-runs.jsonl, the
// green path's included (appended, not fsynced: a power cut may lose the
// last lines, which costs at most one warning less). The lines say which
// commits Phoenix measured green, so a later run on the same remote ref can
// tell when that ref got commits no measurement covers: a push made with
// `git push --no-verify` or PHOENIX_SKIP=1. No git here: part of
// phoenix_lite.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hook/pushed_refs.h"
#include "util/json.h"

namespace phoenix::hook {

// How a hook run ended: the push allowed (exit 0), interrupted (130) or
// blocked (any other code); hook-runs.jsonl spells it run_outcome_name's word.
enum class RunOutcome { kAllowed, kBlocked, kInterrupted };
RunOutcome run_outcome(int exit_code);
const char* run_outcome_name(RunOutcome o);

// Appends {ts, by, remote, refs, outcome, green} to layout::hook_runs_file:
// `by` "phoenix-hook" or "phoenix", `green` the commits whose every check
// passed. Best effort: a line that cannot be written is not an error of the
// push.
void log_run(const std::string& root, const std::string& by, const std::string& remote,
             const std::vector<PushedRef>& refs, RunOutcome outcome, const std::vector<std::string>& green);

// What the last lines of the log (its last 256 KiB) say.
struct RunLog {
  std::set<std::string> green;  // commits measured green
  std::set<std::string> seen;   // remote + "\t" + remote ref, for every ref pushed through the hook
  bool covers(const std::string& sha) const { return green.count(sha) > 0; }
  bool saw(const std::string& remote, const std::string& remote_ref) const {
    return seen.count(remote + "\t" + remote_ref) > 0;
  }
};
RunLog read_runs(const std::string& root);

// The refs of this push whose remote end (the remote sha git reports) the
// log does not explain: the commit now there was never measured green, a
// push from this repository put it there (the remote-tracking ref's reflog
// says "update by push" to it; a teammate's commit arrives by a fetch),
// and that push came after Phoenix was there to see it: an earlier run
// pushed that remote ref, or the push came after `phoenix hook install`
// (installed_at_s). Reads the log's tail (only the lines that name the
// commit or the ref are parsed), the reflog file and the install's note,
// and starts no git. The green path hands these pushes to the full hook,
// which also counts a commit covered when it is an ancestor of one
// measured green (that needs git), and names the rest.
std::vector<const PushedRef*> unexplained_remote_ends(const std::string& root, const std::string& remote,
                                                      const std::vector<PushedRef>& refs);

// layout::hook_installed_file: when `phoenix hook install` installed the
// hook, {"installed_at": ISO 8601, "at_s": Unix seconds}. note_install
// writes it when `fresh` (the hook was not there) or when there is none, so
// a reinstall over a hook that stayed keeps the first time; nullopt when
// there is no note or it does not read. Pushes made before it are not
// Phoenix's to name.
void note_install(const std::string& root, bool fresh);
std::optional<long long> installed_at_s(const std::string& root);

// layout::unmeasured_pushes_file: the skipped pushes a hook run noticed,
// {"pushes": [{remote, remote_ref, commit, noticed_at}]}, for `phoenix
// status`. note_ adds one (once), clear_ drops those of a remote ref once a
// push of it went through the hook; both best effort.
void note_unmeasured_push(const std::string& root, const std::string& remote, const std::string& remote_ref,
                          const std::string& commit);
void clear_unmeasured_pushes(const std::string& root, const std::string& remote, const std::string& remote_ref);
// The "pushes" array; empty when there is none or the file does not read.
util::Json unmeasured_pushes(const std::string& root);

}  // namespace phoenix::hook
