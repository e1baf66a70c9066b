#include "fixers/bisect.h"

#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "checks/check.h"
#include "gitx/worktree.h"
#include "layout/layout.h"
#include "setup/setup.h"
#include "util/error.h"
#include "util/path.h"
#include "util/json.h"
#include "util/subprocess.h"
#include "util/text.h"
#include "util/format.h"

namespace fs = std::filesystem;

namespace phoenix::fixers {
namespace {

using util::short_sha;

std::string subject_of(const gitx::Repo& repo, const std::string& sha) {
  std::string msg = repo.commit_message(sha);
  size_t nl = msg.find('\n');
  return util::trim(nl == std::string::npos ? msg : msg.substr(0, nl));
}

// ---------------------------------------------------------------------------
// The fixer's bookkeeping.

struct Interrupted {
  int signal;
};
struct OutOfTime {};

std::string request_key(const Request& r) {
  const checks::CheckSpec& c = r.failure.check;
  return r.repo_root + '\n' + c.id + '\n' + util::join_argv(c.argv) + '\n' + util::canonical(c.raw) + '\n' +
         r.known_good + '\n' + r.head;
}

std::vector<std::string> changed_paths(const gitx::Repo& repo, const std::vector<std::string>& ignore) {
  std::vector<std::string> out;
  for (const gitx::StatusEntry& e : repo.status()) {
    bool skip = false;
    for (const std::string& p : ignore) skip = skip || util::starts_with(e.path, p) || e.path + "/" == p;
    if (!skip) out.push_back(std::string(1, e.code) + " " + e.path + (e.old_path.empty() ? "" : " <- " + e.old_path));
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------

BisectResult bisect_commits(gitx::Repo& repo, const std::string& worktree_path, const std::string& good,
                            const std::string& bad, const BisectOracle& oracle) {
  BisectResult r;
  const std::string g = repo.resolve(good);
  const std::string b = repo.resolve(bad);
  if (g == b) {
    r.reason = "good and bad are the same commit " + short_sha(g);
    return r;
  }
  if (!repo.is_ancestor(g, b)) {
    r.reason = "good " + short_sha(g) + " is not an ancestor of bad " + short_sha(b);
    return r;
  }
  // Position 0 is `good`, 1..n the first-parent commits after it, n = bad.
  std::vector<std::string> pos{g};
  for (std::string& sha : repo.rev_list(g, b)) pos.push_back(std::move(sha));
  r.range_size = pos.size() - 1;
  if (r.range_size == 0 || pos.back() != b) {
    r.reason = "no first-parent path from " + short_sha(g) + " to " + short_sha(b);
    return r;
  }

  std::optional<gitx::Repo> wt;
  if (!worktree_path.empty()) wt.emplace(gitx::Repo::open(worktree_path));

  // Invariant: the first red position is in [lo, hi]; everything below lo
  // was measured green, hi is red (measured, or `bad`). With s = hi-lo+1
  // possible answers, measuring mid = lo + (hi-lo)/2 leaves ceil(s/2) (red)
  // or floor(s/2) (green): ceil(log2(n+1)) runs at most.
  size_t lo = 0, hi = r.range_size;
  std::set<size_t> skipped;
  std::string last_skip_why;
  while (lo < hi) {
    // The measurable position nearest the middle of [lo, hi).
    const size_t want = lo + (hi - lo) / 2;
    std::optional<size_t> mid;
    for (size_t d = 0; d < hi - lo && !mid; ++d) {
      if (want + d < hi && !skipped.count(want + d)) mid = want + d;
      else if (want >= lo + d && !skipped.count(want - d)) mid = want - d;
    }
    if (!mid) {
      r.verdict = BisectResult::Verdict::kSkipped;
      std::string names;
      for (size_t i = std::max<size_t>(lo, 1); i <= hi; ++i) names += (names.empty() ? "" : ", ") + short_sha(pos[i]);
      r.reason = "the first red commit is one of " + names + ": the commits between could not be measured (" +
                 last_skip_why + ")";
      return r;
    }
    if (wt) gitx::move_worktree(*wt, pos[*mid]);
    bool green = false;
    try {
      green = oracle(pos[*mid]);
    } catch (const BisectSkip& s) {
      skipped.insert(*mid);
      r.skipped.push_back(pos[*mid]);
      last_skip_why = short_sha(pos[*mid]) + ": " + s.why;
      continue;
    }
    r.steps.push_back({pos[*mid], *mid, green});
    if (green) {
      lo = *mid + 1;
    } else {
      hi = *mid;
    }
  }
  if (lo == 0) {
    r.verdict = BisectResult::Verdict::kGoodIsRed;
    return r;
  }
  r.verdict = BisectResult::Verdict::kFound;
  r.culprit = pos[lo];
  r.last_good = pos[lo - 1];
  r.culprit_position = lo;
  return r;
}

BisectWorktree prepare_bisect_worktree(gitx::Repo& repo, const std::string& path, const std::string& rev) {
  gitx::PersistentWorktree w = gitx::prepare_worktree(repo, kBisectWorktreeName, path, rev);
  BisectWorktree out;
  out.path = std::move(w.path);
  out.state = w.state == gitx::PersistentWorktree::State::kCreated  ? BisectWorktree::State::kCreated
              : w.state == gitx::PersistentWorktree::State::kReused ? BisectWorktree::State::kReused
                                                                    : BisectWorktree::State::kRecreated;
  out.damage = std::move(w.damage);
  return out;
}

Proposal BisectFixer::propose(const Request& request) {
  const long long t0 = util::now_ms();
  const std::string key = request_key(request);
  if (auto it = memo_.find(key); it != memo_.end()) {
    Proposal p;
    p.fixer = name();
    p.status = Status::kNothing;
    p.detail = it->second.status == Status::kProposed
                   ? "already proposed: " + it->second.summary + " — bisect has one proposal per culprit"
                   : it->second.detail;
    p.duration_ms = util::now_ms() - t0;
    return p;
  }
  for (const EarlierAttempt& e : request.earlier) {
    if (e.fixer == name()) {
      Proposal p;
      p.fixer = name();
      p.status = Status::kNothing;
      p.detail =
          "bisect already proposed a revert for this issue (" + e.outcome + ") — bisect has one proposal per culprit";
      p.duration_ms = util::now_ms() - t0;
      return p;
    }
  }
  bool memoize = true;
  Proposal p = search(request, &memoize);
  p.fixer = name();
  p.duration_ms = util::now_ms() - t0;
  if (memoize) memo_[key] = p;
  return p;
}

Proposal BisectFixer::search(const Request& request, bool* memoize) {
  Proposal p;
  p.status = Status::kNothing;
  auto nothing = [&](std::string why) {
    p.status = Status::kNothing;
    p.detail = std::move(why);
    return p;
  };
  if (request.known_good.empty()) return nothing("no known-good commit to bisect from");
  if (request.failure.result.ok)
    return nothing("the check " + request.failure.check.id + " is not red: nothing to bisect");

  const long long t0 = util::now_ms();
  const long long deadline = t0 + static_cast<long long>(request.timeout_s * 1000);
  std::map<std::string, std::string> signals;  // sha -> the check's signal there
  std::ostringstream log;

  // Runs the red check, fresh, in the worktree (already at `sha`), after
  // the setup steps whose inputs changed there.
  std::string wt_path, setup_stamp_path;
  auto oracle = [&](const std::string& sha) {
    if (int sig = util::interrupted_signal()) throw Interrupted{sig};
    if (request.timeout_s > 0 && util::now_ms() > deadline) throw OutOfTime{};
    if (request.config && !request.config->setup.empty()) {
      setup::Result su = setup::ensure(request.config->setup, wt_path, setup_stamp_path);
      if (su.interrupted) throw Interrupted{util::interrupted_signal()};
      if (su.ran)
        log << "setup at " << short_sha(sha) << ": " << (su.ok ? "ran" : su.signal) << " (" << su.duration_ms
            << " ms)\n";
      if (!su.ok) {
        signals[sha] = su.signal;
        throw BisectSkip{su.signal};
      }
    }
    checks::SenseResult s = checks::sense(request.failure.check, wt_path);
    ++p.check_runs;
    if (s.interrupted) throw Interrupted{util::interrupted_signal()};
    signals[sha] = s.signal;
    log << "run " << p.check_runs << ": " << short_sha(sha) << " " << (s.ok ? "green" : "red")
        << (s.signal.empty() ? "" : " (" + s.signal + ")") << "\n";
    return s.ok;
  };

  try {
    gitx::Repo repo = gitx::Repo::open(request.repo_root);
    const std::string head = repo.head_sha();
    if (head.empty()) return nothing("the repository has no commit yet");
    if (!request.head.empty() && repo.resolve(request.head) != head) {
      *memoize = false;
      p.status = Status::kAborted;
      p.detail = "HEAD is " + short_sha(head) + ", not " + short_sha(request.head) + " as requested";
      return p;
    }
    std::string good;
    try {
      good = repo.resolve(request.known_good);
    } catch (const Error&) {
      return nothing("known-good " + request.known_good + " is not a commit of this repository");
    }
    if (good == head) return nothing("HEAD is the known-good commit " + short_sha(good) + ": no commit to bisect");
    if (!repo.is_ancestor(good, head))
      return nothing("known-good " + short_sha(good) + " is not an ancestor of HEAD " + short_sha(head) +
                     ": no commit range to bisect");

    // Phoenix's own state (and the worktree inside it) is not the user's
    // change; everything else is, and must not move while we work.
    const std::string root = util::normalize_path(request.repo_root.empty() ? repo.workdir() : request.repo_root);
    const std::string phoenix_dir =
        util::normalize_path(request.phoenix_dir.empty() ? root + "/.phoenix" : request.phoenix_dir);
    std::vector<std::string> ignore{std::string(layout::kStateDirName) + "/"};
    if (util::same_or_inside(phoenix_dir, root) && phoenix_dir != root)
      ignore.push_back(phoenix_dir.substr(root.size() + 1) + "/");
    const std::vector<std::string> before = changed_paths(repo, ignore);

    for (const std::string& line : layout::migrate_legacy_trees(repo)) log << line << "\n";
    BisectWorktree wt = prepare_bisect_worktree(repo, layout::worktree_path(repo, "bisect"), head);
    wt_path = wt.path;
    setup_stamp_path = layout::setup_stamp(repo, "bisect");
    log << "worktree " << wt.path << ": "
        << (wt.state == BisectWorktree::State::kCreated  ? "created"
            : wt.state == BisectWorktree::State::kReused ? "reused"
                                                         : "recreated (" + wt.damage + ")")
        << "\n";

    // The engine's red measurement covers the work tree as it is; with
    // uncommitted changes that is not HEAD's commit, so measure the commit
    // (the worktree is at HEAD already) before blaming history.
    if (!before.empty()) {
      log << "work tree has uncommitted changes: measuring HEAD's commit\n";
      try {
        if (oracle(head))
          return nothing("the check is green at HEAD's commit " + short_sha(head) +
                         ": the failure comes from uncommitted changes, which bisect cannot blame");
      } catch (const BisectSkip& s) {
        return nothing("HEAD's commit " + short_sha(head) + " cannot be measured: " + s.why);
      }
    }

    BisectResult r = bisect_commits(repo, wt.path, good, head, oracle);

    if (repo.head_sha() != head || changed_paths(repo, ignore) != before) {
      *memoize = false;
      p.status = Status::kAborted;
      p.detail = "the repository changed while bisecting (HEAD or its changed files)";
      p.log = log.str();
      return p;
    }

    std::ostringstream steps;
    for (size_t i = 0; i < r.steps.size(); ++i) {
      const BisectStep& s = r.steps[i];
      steps << (i ? "; " : "") << short_sha(s.sha) << " [" << s.position << "/" << r.range_size << "] "
            << (s.green ? "green" : "red");
      const std::string& sig = signals[s.sha];
      if (!s.green && !sig.empty()) steps << " (" << sig << ")";
    }
    const std::string range = "known-good " + short_sha(good) + "..HEAD " + short_sha(head) + " (" +
                              std::to_string(r.range_size) + " first-parent commits)";
    p.log = log.str();

    switch (r.verdict) {
      case BisectResult::Verdict::kEmptyRange: return nothing(r.reason);
      case BisectResult::Verdict::kSkipped: return nothing(r.reason + "; steps: " + steps.str());
      case BisectResult::Verdict::kGoodIsRed: {
        const std::string& sig = signals[good];
        return nothing("the check is red at known-good " + short_sha(good) + (sig.empty() ? "" : " (" + sig + ")") +
                       " too: the failure predates known-good, no commit of " + range +
                       " to blame; steps: " + steps.str());
      }
      case BisectResult::Verdict::kFound: break;
    }

    const std::string subject = subject_of(repo, r.culprit);
    const std::string named = "culprit " + short_sha(r.culprit) + " \"" + subject + "\": first red commit of " + range +
                              ", after " + short_sha(r.last_good) + " (green), found in " +
                              std::to_string(p.check_runs) + " check run" + (p.check_runs == 1 ? "" : "s") +
                              "; steps: " + steps.str();
    log << "culprit: " << r.culprit << " " << subject << "\n";
    p.log = log.str();
    std::string patch;
    try {
      patch = repo.revert_patch(r.culprit);
    } catch (const Error& e) { return nothing(named + "; its revert conflicts with HEAD: " + e.what()); }
    if (patch.empty()) return nothing(named + "; HEAD already lacks its change, so reverting it changes nothing");
    p.status = Status::kProposed;
    p.patch = std::move(patch);
    p.files = gitx::Repo::patch_files(p.patch);
    p.summary = "revert " + short_sha(r.culprit) + " (culprit: " + subject + ")";
    p.detail = named;
    return p;
  } catch (const Interrupted& i) {
    *memoize = false;
    p.log = log.str();
    return nothing("interrupted" + (i.signal ? " by signal " + std::to_string(i.signal) : std::string()) + " after " +
                   std::to_string(p.check_runs) + " check runs");
  } catch (const OutOfTime&) {
    *memoize = false;
    p.status = Status::kTimeout;
    p.log = log.str();
    p.detail = "bisect ran out of its " + std::to_string(static_cast<long long>(request.timeout_s)) + " s after " +
               std::to_string(p.check_runs) + " check runs";
    return p;
  } catch (const std::exception& e) {
    *memoize = false;
    p.status = Status::kCrashed;
    p.log = log.str();
    p.detail = std::string("bisect failed: ") + e.what();
    return p;
  }
}

}  // namespace phoenix::fixers
