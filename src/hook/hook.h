// The pre-push hook (docs/hook.md): what git hands the hook,
// the shim that `phoenix hook install` puts where git looks for hooks, and
// what `phoenix hook run pre-push` does with the commits being pushed.
//
//   git push ──> <hooks dir>/pre-push (the shell shim, hooks/pre-push.in)
//                  1. the hook that was there before (pre-push.phoenix-chained)
//                     runs first, same argv and stdin; its failure blocks
//                  2. PHOENIX_SKIP=1: stop here, push allowed
//                  3. exec <recorded phoenix> hook run pre-push REMOTE URL
//                       └─> run_pre_push(): measure each pushed commit,
//                           exit 0 lets the push go, anything else blocks
//
// (When the thin binary phoenix-hook lies beside phoenix, the shim runs it
// instead; it decides a green push of a clean HEAD itself with
// hook/green.h and execs `phoenix hook run pre-push` for anything else.
// Where no hook is chained, the hooks are .git/hooks and the path allows,
// the hook is the direct shim instead, hooks/pre-push-direct.in: its #!
// line makes git start a copy of phoenix-hook kept beside it, no shell.)
// git's stdin is parsed by hook/pushed_refs.h and the green path's parts
// are in hook/green.h: both are included here, and are all of the hook
// that phoenix_lite holds.
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checks/check.h"
#include "hook/green.h"
#include "hook/owner.h"
#include "hook/pushed_refs.h"
#include "trace/trace.h"

namespace phoenix::hook {

// The hook's trees per repository, and the longest wait for one.
inline constexpr size_t kMaxHookTrees = 4;
inline constexpr int kHookTreeWaitS = 300;

// ---------------------------------------------------------------------------
// Install / uninstall.

// The shim from its template (hooks/pre-push.in): @PHOENIX@ becomes the
// binary's absolute path, quoted for sh; @CHAINED_SUFFIX@
// layout::kChainedHookSuffix, under which the original hook is kept.
// Throws Error when the template lacks the marker or a placeholder.
std::string render_shim(std::string_view tmpl, const std::string& phoenix_bin);
// The direct shim from its template (hooks/pre-push-direct.in): a hook
// file whose first line, `#!<program>`, makes git (through the kernel) run
// phoenix-hook with the file's path as its first argument, so no shell
// starts (docs/performance.md "The green path"). `program` is install()'s
// copy of phoenix-hook beside the hook (program_copy_path), so that no
// later removal of `source`, the phoenix-hook it was copied from, leaves
// git a hook it cannot start (git 2.39 then waits forever on the push).
// @PHOENIX_HOOK@ becomes `program`, which must be shebang_safe;
// @PHOENIX_HOOK_SOURCE@ `source`; @PHOENIX@ the phoenix beside `source`.
// Throws Error when the template lacks the marker or a placeholder, or
// `program` is not shebang_safe.
std::string render_direct_shim(std::string_view tmpl, const std::string& program, const std::string& source);
// <hooks_dir>/pre-push.phoenix-hook: where install() copies phoenix-hook
// for a direct shim.
std::string program_copy_path(const std::string& hooks_dir);
// Whether the kernel runs `path` exactly as written on a #! line: absolute,
// no whitespace or control bytes (the kernel splits the line at the first
// blank), at most kMaxShebangPath bytes (older kernels read 128 bytes of a
// script's start, "#!" and the newline included).
inline constexpr size_t kMaxShebangPath = 125;
bool shebang_safe(const std::string& path);
// The phoenix binary a shim records (for a direct shim, the phoenix beside
// the phoenix-hook its program was copied from), "" when the content is
// not a shim.
std::string shim_binary(std::string_view content);
// Makes `program` a copy of `source` (atomically, mode 0755, with the
// source's modification time) unless program_is_current already; returns
// whether it wrote. Throws Error when `source` cannot be read or `program`
// written.
bool refresh_program(const std::string& source, const std::string& program);
// Whether a hook that is not Phoenix's is, or would be on install, kept as
// pre-push.phoenix-chained in `hooks_dir`: only the shell shim runs it.
bool chains(const std::string& hooks_dir);

struct InstallResult {
  std::string hook;     // <hooks dir>/pre-push
  std::string chained;  // where the earlier hook is kept, "" when there was none
  // "installed" (first time), "updated" (a shim was there, recording
  // another binary or an older template), "unchanged" (already this shim).
  std::string action;
};
// Writes `shim` to <hooks_dir>/pre-push (created with its folders, mode
// 0755, atomically). An existing hook that is not a shim is renamed to
// pre-push.phoenix-chained first — a rename, so its bytes, mode and, for a
// symlink, target stay exactly as they were. Idempotent: installing twice
// gives the same files. Throws Error when pre-push is not a shim and a
// chained hook already exists (someone replaced the shim by hand: moving
// theirs would overwrite the one kept before).
// For a direct shim, its program is copied first from the source the shim
// names (refresh_program; "updated" when only the copy was stale); for a
// shell shim, a copy left by an earlier direct one is removed.
InstallResult install(const std::string& hooks_dir, const std::string& shim);

struct UninstallResult {
  std::string hook;
  // "restored" (the chained hook is back under its name), "removed" (the
  // shim went; there was nothing before it), "absent" (no shim here:
  // nothing touched).
  std::string action;
};
// Undoes install(): the chained hook is renamed back over the shim, or the
// shim removed when there was none; a direct shim's program copy goes too.
// A pre-push that is not a shim is left alone, whatever else is there.
UninstallResult uninstall(const std::string& hooks_dir);

// ---------------------------------------------------------------------------
// The run.

struct PrePushOptions {
  std::string root;           // the work tree git runs the hook in
  std::string remote;         // argv[1] from git ("" when run by hand)
  std::string url;            // argv[2]
  std::string templates_dir;  // the engine's prompts (heal mode)
  bool color = false;         // colour on `err`
  bool no_cache = false;      // --no-cache: nothing served from the measurement store
  // The repository's trace, opened only when something is written to it
  // (a green push of HEAD writes nothing there: its line goes to
  // .phoenix/hook-runs.jsonl, hook/runs.h).
  std::function<trace::Trace&()> trace;
};

// Measures each commit being pushed and returns the hook's exit code; all
// output goes to `err` (git shows a hook's output on stderr).
//
// - No phoenix.json: one warning line, 0. A phoenix.json that does not
//   load: the error, 78. No refs left once deletions go: 0.
// - The repository's lock (.phoenix/lock) is taken without waiting; when
//   another Phoenix run holds it: says so (with its pid), 1.
// - Each distinct commit is measured once with the checks `hook.checks`
//   (default: all) of its own phoenix.json: the work tree's in place (a
//   clean HEAD's), else the one read from that commit's tree. A commit
//   without one is measured with HEAD's (and says so); one whose
//   phoenix.json does not load blocks the push with one line naming the
//   commit, 78. In place when it is HEAD and the work tree is clean
//   (untracked files under layout::keep_prefixes() aside), otherwise in the
//   one of the hook's persistent worktrees outside the work tree
//   ("hook", "hook-2" ... kMaxHookTrees, layout/trees.h), locked by this
//   run until it ends (a hook of another checkout of the repository takes
//   the next free one; when all are held it waits up to kHookTreeWaitS,
//   never past hook.timeout_s, naming the holders, then blocks the push, 1),
//   moved to the commit by an incremental checkout and cleaned before use
//   (untracked files removed, ignored build outputs kept), recreated when
//   damaged (gitx/worktree.h), and given the project's environment by
//   phoenix.json's setup steps (setup/setup.h; a failed setup blocks). A check's own timeout is capped by what is
//   left of `hook.timeout_s`; past it, the push is blocked.
// - Green everywhere: one line per check, 0.
// - Red, hook.mode "verify": the evidence, 1.
// - Red, hook.mode "heal": when the red commit is HEAD, no tracked file
//   changed (untracked files do not block) and the pushed ref the
//   checked-out branch (or HEAD itself), a heal session
//   runs (engine::run_session, the config's fixers); HEALED leaves the
//   verified fix commit on the branch and says "phoenix: healed <check> in
//   <sha12> — push again", 1 (a pre-push hook cannot change what is being
//   pushed). Escalated: the session's exit code (2), and how to get a
//   known-good commit when there is none. A red commit that cannot be healed
//   in place is blocked as in verify mode, 1, with why and what to do (the
//   uncommitted paths: "commit or stash them").
// - A phoenix-hook that stopped at a red check of a clean HEAD handed its
//   results over (take_measured): they are taken, not measured again, and
//   a heal starts from them.
// - Interrupted (SIGINT/SIGTERM): 130.
// - Whatever the outcome, when the pre-push hook git will run does not call
//   Phoenix (hook_owner: core.hooksPath changed under it, say), a last line
//   says so: "phoenix: warning: git runs hooks from /x (core.hooksPath),
//   which does not call Phoenix: pushes are not checked ...".
int run_pre_push(const PrePushOptions& options, const std::vector<PushedRef>& refs, std::ostream& err);

}  // namespace phoenix::hook
