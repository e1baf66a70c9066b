// The bisect fixer: no model at all. It finds the commit since known-good
// that turned the red check red, using the check itself as the oracle, and
// proposes that commit's revert.
//
// Contract of BisectFixer::propose():
// - Needs Request.known_good; without one: kNothing "no known-good commit to
//   bisect from". known_good must be a first-parent-walkable ancestor of
//   Request.head (and differ from it), else kNothing saying why.
// - Request.head must still be the repository's HEAD, and HEAD plus the list
//   of changed paths must not move while it works: otherwise kAborted
//   (invariant 12). Nothing is ever written to the user's work tree, index or
//   refs: every measurement runs in a persistent linked worktree of the
//   repository's bisect trees, layout::worktree_path(repo, "bisect"),
//   "bisect-2" ... "bisect-8" (kMaxBisectTrees; git names "phoenix-bisect",
//   "phoenix-bisect-2", ...), outside the work tree, created on first use,
//   reused (cleaned, moved incrementally) afterwards, recreated when found
//   damaged. Ignored files there (build outputs) survive between runs on
//   purpose, so builds stay warm; the check must cope with that.
//   phoenix.json's `setup` runs there before each measurement whose inputs
//   changed (setup/setup.h); a commit whose setup fails is skipped, as
//   `git bisect skip` does.
// - One run per tree: a run locks each tree it uses
//   (layout::tree_lock, util::FileLock) for the whole search and takes the
//   lowest-numbered trees no other run holds, so runs at the same time in
//   worktrees of one repository never share or move each other's trees.
//   When all kMaxBisectTrees are held it waits for one, saying for whom
//   (pid and command), at most kBisectTreeWaitS and never past its own
//   timeout; then kOwnFailure. A lock file that does not parse, or that
//   names a pid no longer holding it, is taken over with a warning naming
//   the file (on stderr and in the log).
// - Parallel: with Request.config's bisect.parallel = k > 1 (default: the
//   number of cores, at most 4; 1 without a config, and for a check that
//   starts a server, whose port k copies would share) the search runs
//   bisect_commits_parallel() over k persistent worktrees (fewer when
//   other runs hold the rest), each with its own setup stamp, so each stays
//   set up across runs; never more worktrees than commits to measure.
//   check_runs then counts every run started, the ones stopped because the
//   answer no longer needed them too.
// - The red measurement at HEAD is Request.failure: it is reused, HEAD is not
//   measured again — except when the user's work tree has uncommitted
//   changes (outside .phoenix/), because then the engine measured those
//   changes, not HEAD's commit; HEAD's commit is measured once and a green
//   result ends with kNothing (the failure is not in any commit).
// - Known-good is treated as one more position of the search instead of a
//   separate up-front run: positions 0 (known-good) .. n (HEAD, known red),
//   answer = first red position. That is n+1 possible answers, so the search
//   needs at most ceil(log2(n+1)) runs: 8 for up to 255 commits, e.g. 200.
//   Known-good is measured exactly when the search narrows down to the
//   bottom of the range (every other measurement was red); when the culprit
//   lies higher, its predecessor was itself measured green, so the
//   green->red transition that names the culprit is measured on both sides
//   and known-good's own state cannot change the answer. Red at known-good:
//   kNothing (the failure predates known-good).
// - The check is assumed deterministic and monotonic over the range (one
//   green->red transition), as with `git bisect`; a run that times out counts
//   as red. Request.timeout_s (> 0) bounds the whole search, checked between
//   runs (a started run is bounded by the check's own timeout_s): kTimeout.
//   A SIGINT/SIGTERM ends it with kNothing "interrupted" (not memoized).
// - Phoenix's own failures are not the code's: a git failure (libgit2's
//   reason: a tree taken away, a folder that is not a repository any more)
//   or a setup that fails at known-good (where it passed) ends the search,
//   which runs once more from the start in fresh trees (folders and setup
//   stamps removed); failing again, it is kOwnFailure with both reasons,
//   not memoized, and the engine spends no attempt on it.
// - Found: kProposed with patch = revert of the culprit against HEAD,
//   computed in memory (gitx revert_patch), files = its paths, summary
//   "revert 1a2b3c4 (culprit: <subject>)", detail with every step. A revert
//   that conflicts with HEAD, or that changes nothing, is kNothing naming why.
// - The oracle (fixers/bisect_oracle.h): the failing tests of the red
//   measurement alone where the engine could select them
//   (Request.failure.failing_first); the whole check where they cannot be,
//   at a step where they say nothing, when they call known-good red, and
//   when they are not red alone at HEAD (then the search runs again whole).
//   HEAD is asked alone only where the search ends there (every step green)
//   or, before the search, when uncommitted changes made the red
//   measurement something other than HEAD's commit.
//   Proposal.selection_misleads says why when the failing tests alone were
//   found misleading (not red at HEAD, red at known-good): the engine then
//   verifies with the whole check only. The revert is named_by_check: the
//   engine verifies it with the whole check at once.
// - check_runs = the check runs made by this call (0 for a memoized one);
//   selected_runs = those of the failing tests alone.
// - Memoized per (repository, check, known-good, head): a second call returns
//   kNothing without searching again — bisect has exactly one proposal per
//   culprit; if its revert failed verification, the next fixer (harness)
//   takes over with the evidence. (Chaining "revert the culprit plus the next
//   red-introducing commit" was considered and left out: once the culprit's
//   revert is red, the range no longer has a single transition to find, and
//   a guess there is the harness's job.) A fresh BisectFixer that sees an
//   earlier attempt by "bisect" in Request.earlier also returns kNothing.
//   One exception: a culprit found by the failing tests alone
//   (Proposal.found_selected) whose revert was tried and failed is searched
//   for again, once, with the whole check at every step over the same range
//   (nothing of the first search kept); the same culprit again is kNothing.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fixers/bisect_search.h"
#include "fixers/fixer.h"
#include "gitx/repo.h"

namespace phoenix::fixers {

// true = the check is green at `sha`. Called with the worktree (if any)
// already checked out at `sha`. May throw BisectSkip when `sha` cannot be
// measured (its setup failed), as `git bisect skip` does; any other
// exception aborts the search (it propagates out of bisect_commits).
using BisectOracle = std::function<bool(const std::string& sha)>;
struct BisectSkip {
  std::string why;  // "setup failed: npm ci: exit=1"
};

// Binary-searches the first red commit among `good` and the first-parent
// commits good..bad (`git rev-list --first-parent good..bad`). `bad` is
// known red and never measured; `good` is measured only when the search
// narrows to it (see the header comment): at most ceil(log2(range_size+1))
// oracle calls when nothing is skipped. A skipped commit is set aside and
// the measurable commit nearest the middle of what is left is tried
// instead; when nothing measurable is left the verdict is kSkipped, naming
// the commits that could be the culprit (fixers/bisect_search.h chooses
// every commit measured). `good` and `bad` are revs of `repo`.
//
// `worktree_path`: a linked worktree of `repo` (see prepare_bisect_worktree)
// that is moved to each commit before the oracle runs — incremental
// checkout, local modifications and untracked files of the previous step
// discarded, ignored files kept. "" = no checkout: the oracle judges the sha
// on its own (unit tests, oracles that read objects).
BisectResult bisect_commits(gitx::Repo& repo, const std::string& worktree_path, const std::string& good,
                            const std::string& bad, const BisectOracle& oracle);

// Where one probe of a parallel bisect runs.
struct BisectProbe {
  size_t slot = 0;       // which of the worktrees (0-based)
  std::string worktree;  // its path, "" when the search moves none
  int cancel_fd = -1;    // readable once the answer no longer needs this probe: stop (the result is ignored)
};
using ParallelBisectOracle = std::function<bool(const std::string& sha, const BisectProbe& probe)>;

// Multisection: the search of bisect_commits() with one worker per entry
// of `worktree_paths` (each a linked worktree of `repo` as above, or "" for
// none), probing up to that many commits of the remaining range at once.
// Free workers are placed so that the probes in flight split what is left
// into near-equal parts (with one worker: exactly bisect_commits()'s
// choices), so the rounds fall from log2(n+1) towards log(k+1)(n+1). The
// moment a result makes another probe useless (its commit is now known
// green or red) that probe is told through its cancel_fd and its result,
// whatever it is, is ignored. `oracle` is called on the workers' threads,
// concurrently, each worker in its own worktree already moved to `sha`;
// BisectSkip as in bisect_commits(). Any other exception stops every probe
// and propagates once all have ended. The verdict equals bisect_commits()'s
// for a deterministic, monotonic check; `steps` holds the results used, in
// the order they arrived.
BisectResult bisect_commits_parallel(gitx::Repo& repo, const std::vector<std::string>& worktree_paths,
                                     const std::string& good, const std::string& bad,
                                     const ParallelBisectOracle& oracle);

// The git name of bisect's first worktree (under <common_dir>/worktrees/);
// the further ones are "phoenix-bisect-2", "-3", ...
inline constexpr const char* kBisectWorktreeName = "phoenix-bisect";
// The bisect trees a repository may have: runs at the same time each take
// their own, up to this many in all; a run that finds all of them held
// waits (see the header comment).
inline constexpr size_t kMaxBisectTrees = 8;
// How long a run waits for one of them at most.
inline constexpr int kBisectTreeWaitS = 300;
// The layout name (layout::worktree_path, layout::setup_stamp,
// layout::tree_lock) of bisect tree number `slot` (0-based): "bisect",
// "bisect-2", "bisect-3", ...
std::string bisect_tree_name(size_t slot);

struct BisectWorktree {
  enum class State { kCreated, kReused, kRecreated };
  std::string path;  // absolute
  State state = State::kCreated;
  std::string damage;  // kRecreated: what was wrong with the old one
};

// Makes `path` a healthy linked worktree of `repo` named kBisectWorktreeName,
// clean (reset to its HEAD, untracked files removed, ignored ones kept) and
// at `rev`. An existing one is reused only when it is listed by the
// repository under that name at that path, valid, opens as a worktree of
// this repository, and resets cleanly; anything else (folder missing, .git
// link broken or pointing elsewhere, admin entry gone, another worktree
// registered at the path) is removed and created afresh — never trusted.
// Throws phoenix::Error when it cannot (e.g. the worktree is locked).
// `slot` > 0: the same for a parallel bisect's further worktree (git name
// layout::worktree_git_name(bisect_tree_name(slot))).
BisectWorktree prepare_bisect_worktree(gitx::Repo& repo, const std::string& path, const std::string& rev,
                                       size_t slot = 0);

class BisectFixer : public Fixer {
 public:
  std::string name() const override { return "bisect"; }
  Proposal propose(const Request& request) override;

 private:
  // `whole_only`: every step asks the whole check (fixers/bisect_oracle.h).
  Proposal search(const Request& request, bool* memoize, bool whole_only = false);
  bool resumes(const Proposal& memo, const Request& request);
  // Definitive outcomes (proposed, or nothing for a stated reason) by
  // request key; transient ones (timeout, interrupted, aborted) are not kept.
  std::map<std::string, Proposal> memo_;
};

}  // namespace phoenix::fixers
