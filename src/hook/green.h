// The pre-push hook's green path (docs/performance.md "The green path"):
// what decides that every pushed commit is a clean HEAD whose checks pass,
// without libgit2, OpenSSL or SQLite. The thin binary phoenix-hook
// (src/cli/main_phoenix_hook.cc) is built from it, with config and the
// command_exit check alone (phoenix_lite); `phoenix hook run pre-push`
// (hook/hook.h) uses the same parts, so both say the same.
#pragma once

#include <chrono>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checks/check_spec.h"
#include "hook/pushed_refs.h"

namespace phoenix::config {
struct Config;
}
namespace phoenix::util {
class FileLock;
}

namespace phoenix::hook {

// ---------------------------------------------------------------------------
// The parts both hooks use.

// HEAD and whether the work tree is clean, as `git status` sees them.
struct HeadState {
  std::string head;    // "" while the branch is unborn
  std::string branch;  // "" when detached
  bool clean = false;  // no change at all outside layout::keep_prefixes()
};
// From one `git status --porcelain=v2 --branch -z -unormal` in `root`;
// nullopt when git cannot say (not installed, fails, output not understood).
std::optional<HeadState> head_state_from_git(const std::string& root);

// git exports these to hooks in some set-ups (a push from a linked
// worktree, `git --git-dir`); a check's own git commands must find the
// repository of the folder they run in — the hook's worktree included —
// so Phoenix's children do not inherit them. Unsets GIT_DIR, GIT_WORK_TREE
// and the like in this process.
void forget_git_location_env();
// The names forget_git_location_env() unsets.
const std::vector<const char*>& git_location_env();

// The work tree `cwd` is in: GIT_WORK_TREE when git set it to a folder,
// else the nearest folder up from `cwd` with a .git entry (a directory, or
// the file of a linked worktree or submodule), as git finds it; nullopt
// outside any. A walk rather than libgit2's discovery: initialising libgit2
// parses the system's CA bundle.
std::optional<std::string> find_work_tree(const std::string& cwd);

// The checks the hook runs: phoenix.json's hook.checks (ids validated by
// config::load), or every check when that is empty.
std::vector<checks::CheckSpec> hook_checks(const config::Config& cfg);

// The repository's lock (.phoenix/lock), taken without waiting. Throws
// Error when another Phoenix run holds it (or the file cannot be opened).
std::unique_ptr<util::FileLock> lock_repository(const std::string& root);

// hook.timeout_s, counted from the hook's start: each check's own timeout
// is capped by what is left of it.
class Deadline {
 public:
  Deadline(std::chrono::steady_clock::time_point start, double timeout_s);
  double timeout_s() const { return timeout_s_; }
  // Seconds left; zero or less once it has passed.
  double left_s() const;
  // `spec` with its timeout capped by what is left; nullopt once nothing is.
  std::optional<checks::CheckSpec> cap(const checks::CheckSpec& spec) const;

 private:
  double timeout_s_;
  // In double nanoseconds: any timeout_s phoenix.json allows fits.
  decltype(std::chrono::steady_clock::now() + std::chrono::duration<double>()) at_;
};

// One check's line on the hook's output ("phoenix: ok   unit  exit=0
// (840 ms)  main@3f2c1a9b7d10"), then the end of its evidence when red.
// The *_text forms are what the print_ ones write, for phoenix-hook, which
// starts no C++ stream (run_green).
std::string result_text(bool color, const checks::SenseResult& r, const std::string& where);
void print_result(std::ostream& err, bool color, const checks::SenseResult& r, const std::string& where);
// "phoenix: hook.timeout_s (N s) ran out before CHECK in WHERE; push blocked"
std::string out_of_time_text(double timeout_s, const std::string& check, const std::string& where);
void print_out_of_time(std::ostream& err, double timeout_s, const std::string& check, const std::string& where);
// "phoenix: interrupted; push blocked"
inline constexpr const char* kInterruptedLine = "phoenix: interrupted; push blocked\n";
void print_interrupted(std::ostream& err);

// The fast path's measurement, handed to the full hook when it stops at a
// red check, so that a red push runs each check once: phoenix-hook writes
// .phoenix/hook-measured.json (the pid, the commit, that the tree was clean,
// the results, the red one last) and names it in PHOENIX_HOOK_MEASURED
// before it execs `phoenix hook run pre-push`, which keeps its pid.
inline constexpr const char* kMeasuredEnv = "PHOENIX_HOOK_MEASURED";
struct Measured {
  std::string commit;                        // the clean HEAD measured in place
  std::vector<checks::SenseResult> results;  // in the order run
  const checks::SenseResult* find(const std::string& id) const;
};
// Writes the file (no fsync: it lives for one exec) and sets the variable;
// does nothing when the file cannot be written (the full hook measures).
void hand_measured(const std::string& root, const Measured& m);
// The measurement handed to this process: the variable is unset and the
// file removed whatever they hold, and nullopt unless the file names this
// process (the pid exec kept) and reads whole. The caller still trusts it
// only for its commit, as HEAD, on a clean tree.
std::optional<Measured> take_measured();

// The repository lock goes with the exec too: phoenix-hook keeps its
// descriptor open across it and names it in PHOENIX_HOOK_LOCK_FD, and the
// full hook adopts it, so no other run takes the repository between the
// two (and the full hook hands it on to a heal: engine::RunOptions::lock).
inline constexpr const char* kLockEnv = "PHOENIX_HOOK_LOCK_FD";
void hand_lock(std::unique_ptr<util::FileLock> lock);
// The lock handed to this process, when the variable names a descriptor
// that holds the lock of `root`; nullptr otherwise. The variable is unset
// either way, and the descriptor is closed on exec again.
std::unique_ptr<util::FileLock> take_handed_lock(const std::string& root);

// ---------------------------------------------------------------------------
// The thin binary's whole run.

// The green path of phoenix-hook, or nullopt to hand over to the full hook
// (`phoenix hook run pre-push`). Says nothing in `err` before it knows the
// push is green — or interrupted, or out of time: then what the full hook
// would print at that point, as it would — and returns the exit code. The
// caller writes `err` to stderr: phoenix-hook starts no C++ stream, whose
// set-up (libstdc++'s standard streams and locale) was a tenth of its own
// CPU. Nothing here throws on the way to a green verdict either: the first
// exception of a static binary sorts its whole unwind table.
//
// Handled here: phoenix.json loads, some ref is not a deletion, the hook's
// checks are all command_exit, the lock is free, and every pushed commit is
// the checked-out HEAD on a clean tree. `git status` and the checks run at
// the same time; the moment git's answer is anything but that, the check
// still running is stopped (its process group killed) and nullopt returned.
// Checks stop at the first red one (nullopt, with the results handed over:
// hand_measured).
// Ctrl-C blocks the push whatever git said (kExitInterrupted).
//
// Every run it decides leaves its line in .phoenix/hook-runs.jsonl
// (hook/runs.h); a push whose remote end no earlier run explains (a
// skipped push, maybe) is handed over for the full hook to judge.
std::optional<int> run_green(const std::vector<PushedRef>& refs, const std::string& root, const std::string& remote,
                             std::string& err);

}  // namespace phoenix::hook
