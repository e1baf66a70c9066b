#include "fixers/bisect.h"
#include "fixers/bisect_oracle.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <iostream>
#include <filesystem>
#include <mutex>
#include <thread>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "checks/check.h"
#include "gitx/worktree.h"
#include "layout/layout.h"
#include "layout/trees.h"
#include "setup/guard.h"
#include "setup/setup.h"
#include "util/error.h"
#include "util/path.h"
#include "util/json.h"
#include "util/lock.h"
#include "util/signals.h"
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
// Phoenix's own failure, not the code's (its tree, a setup that failed on
// the known-good commit): worth one more try in fresh trees when `retry`.
struct OwnFailure {
  std::string why;
  bool retry = true;
};

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

std::string bisect_tree_name(size_t slot) { return layout::numbered_tree("bisect", slot); }

namespace {
layout::TreeFamily bisect_trees() { return {"bisect", kMaxBisectTrees, bisect_tree_name}; }
}  // namespace

BisectWorktree prepare_bisect_worktree(gitx::Repo& repo, const std::string& path, const std::string& rev, size_t slot) {
  const std::string name =
      slot == 0 ? std::string(kBisectWorktreeName) : layout::worktree_git_name(bisect_tree_name(slot));
  gitx::PersistentWorktree w = gitx::prepare_worktree(repo, name, path, rev, layout::state_prefixes());
  BisectWorktree out;
  out.path = std::move(w.path);
  out.state = w.state == gitx::PersistentWorktree::State::kCreated  ? BisectWorktree::State::kCreated
              : w.state == gitx::PersistentWorktree::State::kReused ? BisectWorktree::State::kReused
                                                                    : BisectWorktree::State::kRecreated;
  out.damage = std::move(w.damage);
  return out;
}

Proposal BisectFixer::propose(const Request& request) {
  const auto t0 = std::chrono::steady_clock::now();
  auto ms_since_t0 = [&t0] {
    return static_cast<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
  };
  const std::string key = request_key(request);
  if (auto it = memo_.find(key); it != memo_.end() && resumes(it->second, request)) {
    // The failing tests alone named a culprit whose revert did not pass
    // the whole check: the same range, asked again with the whole check.
    const Proposal first = it->second;
    bool memoize = true;
    Proposal p = search(request, &memoize, true);
    p.fixer = name();
    if (p.status == Status::kProposed && p.patch == first.patch) {
      p.status = Status::kNothing;
      p.detail =
          "the whole check confirms the culprit of " + first.summary + ", whose revert did not heal; " + p.detail;
      p.patch.clear();
      p.files.clear();
    } else {
      p.detail =
          "asked again with the whole check (the revert of the failing tests' culprit did not heal): " + p.detail;
    }
    p.duration_ms = ms_since_t0();
    if (memoize) memo_[key] = p;
    return p;
  }
  if (auto it = memo_.find(key); it != memo_.end()) {
    Proposal p;
    p.fixer = name();
    p.status = Status::kNothing;
    p.detail = it->second.status == Status::kProposed
                   ? "already proposed: " + it->second.summary + " — bisect has one proposal per culprit"
                   : it->second.detail;
    p.duration_ms = ms_since_t0();
    return p;
  }
  for (const EarlierAttempt& e : request.earlier) {
    if (e.fixer == name()) {
      Proposal p;
      p.fixer = name();
      p.status = Status::kNothing;
      p.detail =
          "bisect already proposed a revert for this issue (" + e.outcome + ") — bisect has one proposal per culprit";
      p.duration_ms = ms_since_t0();
      return p;
    }
  }
  bool memoize = true;
  Proposal p = search(request, &memoize);
  p.fixer = name();
  p.duration_ms = ms_since_t0();
  if (memoize) memo_[key] = p;
  return p;
}

// A culprit found by the failing tests alone whose revert was tried and
// did not heal: the search is asked again with the whole check, once.
bool BisectFixer::resumes(const Proposal& memo, const Request& request) {
  if (memo.status != Status::kProposed || !memo.found_selected) return false;
  for (const EarlierAttempt& e : request.earlier)
    if (e.fixer == name() && e.patch == memo.patch) return true;
  return false;
}

namespace {

// How many worktrees to probe with (see the header): bisect.parallel, 0 =
// the cores, at most 4; 1 without a config or for a check with a server;
// never more than the commits that can be measured.
size_t parallel_slots(const Request& request, size_t commits) {
  if (!request.config || request.failure.check.has_server) return 1;
  size_t k = static_cast<size_t>(request.config->bisect_parallel);
  if (k == 0) k = std::min<size_t>(4, std::max(1u, std::thread::hardware_concurrency()));
  return std::max<size_t>(1, std::min(k, commits));
}

// One search of the fixer: the request, and what it learns on the way.
// Measurements may run on several threads at once: everything they record
// goes through mu_.
class BisectRun {
 public:
  BisectRun(const Request& request, bool whole_only) : req_(request), oracle_(request.failure, whole_only) {
    p_.status = Status::kNothing;
    deadline_ =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(request.timeout_s * 1000));
  }

  // A failure of Phoenix's own (a git error in its trees, the setup
  // failing at known-good) is tried once more in fresh trees; a second one
  // is kOwnFailure, which the engine never counts against the code.
  Proposal search(bool* memoize) {
    if (req_.known_good.empty()) return nothing("no known-good commit to bisect from");
    if (req_.failure.result.ok) return nothing("the check " + req_.failure.check.id + " is not red: nothing to bisect");
    std::string first_why;
    for (int round = 1;; ++round) {
      OwnFailure failed;
      try {
        return search_repo(memoize, round > 1);
      } catch (const Interrupted& i) {
        *memoize = false;
        return nothing("interrupted" + (i.signal ? " by signal " + std::to_string(i.signal) : std::string()) +
                       " after " + std::to_string(p_.check_runs) + " check runs");
      } catch (const OutOfTime&) {
        *memoize = false;
        return ended(Status::kTimeout, "bisect ran out of its " +
                                           std::to_string(static_cast<long long>(req_.timeout_s)) + " s after " +
                                           std::to_string(p_.check_runs) + " check runs");
      } catch (const OwnFailure& f) { failed = f; } catch (const std::exception& e) {
        failed.why = std::string("bisect failed: ") + e.what();
      }
      if (round == 1 && failed.retry) {
        log(failed.why + "; once more, in fresh trees");
        first_why = failed.why;
        stamps_.clear();
        names_.clear();
        head_asked_ = false;
        *memoize = true;  // a definitive answer the second time is kept
        continue;
      }
      *memoize = false;
      if (round == 1) return ended(Status::kOwnFailure, failed.why);
      return ended(Status::kOwnFailure, failed.why == first_why ? failed.why + " (and again in fresh trees)"
                                                                : first_why + "; in fresh trees: " + failed.why);
    }
  }

 private:
  Proposal nothing(std::string why) { return ended(Status::kNothing, std::move(why)); }
  Proposal ended(Status status, std::string detail) {
    p_.status = status;
    p_.detail = std::move(detail);
    p_.log = log_.str();
    return p_;
  }

  // `fresh`: the trees are made anew (folder and setup stamp removed first).
  Proposal search_repo(bool* memoize, bool fresh) {
    gitx::Repo repo = gitx::Repo::open(req_.repo_root);
    std::string head, good;
    if (std::optional<Proposal> stop = check_range(repo, head, good, memoize)) return *stop;
    good_ = good;
    const std::vector<std::string> ignore = own_paths(repo);
    const std::vector<std::string> before = changed_paths(repo, ignore);
    for (const std::string& line : layout::migrate_legacy_trees(repo)) log(line);
    const size_t k = parallel_slots(req_, repo.rev_list(good, head).size());
    // Held until the search ends, whichever way: no other run moves them.
    const std::vector<HeldTree> held = take_trees(repo, k);
    const std::vector<std::string> trees = prepare_trees(repo, head, held, fresh);
    if (std::optional<Proposal> stop = at_head(head, trees[0], !before.empty())) return *stop;
    const auto oracle = [&](const std::string& sha, const BisectProbe& probe) { return measure(sha, probe); };
    BisectResult r = bisect_commits_parallel(repo, trees, good, head, oracle);
    if (r.verdict == BisectResult::Verdict::kGoodIsRed && oracle_.selected()) {
      // Known-good passed the whole check: its failing tests alone being
      // red there says they need the suite's company, not that the failure
      // predates it.
      oracle_.use_whole("the failing tests alone are red at known-good " + short_sha(good) +
                        ", which passed the whole check");
      p_.selection_misleads = oracle_.why_whole();
      log("asking again with the whole check: " + oracle_.why_whole());
      r = bisect_commits_parallel(repo, trees, good, head, oracle);
    }
    if (r.verdict == BisectResult::Verdict::kFound && r.culprit == head && oracle_.selected() && !head_asked_) {
      // Every step was green alone: HEAD, never measured on the failing
      // tests alone, is the culprit only if they are red there alone.
      bool red = true;
      try {
        red = alone_red_at_head(head, trees[0]);
      } catch (const BisectSkip& s) { log("HEAD cannot be measured (" + s.why + "): it stays the culprit"); }
      if (!red) r = bisect_commits_parallel(repo, trees, good, head, oracle);
    }
    if (repo.head_sha() != head || changed_paths(repo, ignore) != before) {
      *memoize = false;
      return ended(Status::kAborted, "the repository changed while bisecting (HEAD or its changed files)");
    }
    return verdict(repo, r, good, head);
  }

  // HEAD and known-good resolved and checked; a Proposal when the search stops here.
  std::optional<Proposal> check_range(gitx::Repo& repo, std::string& head, std::string& good, bool* memoize) {
    head = repo.head_sha();
    if (head.empty()) return nothing("the repository has no commit yet");
    if (!req_.head.empty() && repo.resolve(req_.head) != head) {
      *memoize = false;
      return ended(Status::kAborted, "HEAD is " + short_sha(head) + ", not " + short_sha(req_.head) + " as requested");
    }
    try {
      good = repo.resolve(req_.known_good);
    } catch (const Error&) { return nothing("known-good " + req_.known_good + " is not a commit of this repository"); }
    if (good == head) return nothing("HEAD is the known-good commit " + short_sha(good) + ": no commit to bisect");
    if (!repo.is_ancestor(good, head))
      return nothing("known-good " + short_sha(good) + " is not an ancestor of HEAD " + short_sha(head) +
                     ": no commit range to bisect");
    return std::nullopt;
  }

  // Phoenix's own state (and the worktree inside it) is not the user's
  // change; everything else is, and must not move while we work.
  std::vector<std::string> own_paths(const gitx::Repo& repo) const {
    const std::string root = util::normalize_path(req_.repo_root.empty() ? repo.workdir() : req_.repo_root);
    const std::string phoenix_dir =
        util::normalize_path(req_.phoenix_dir.empty() ? layout::state_dir(root) : req_.phoenix_dir);
    std::vector<std::string> ignore{layout::kStateDirPrefix};
    if (util::same_or_inside(phoenix_dir, root) && phoenix_dir != root)
      ignore.push_back(phoenix_dir.substr(root.size() + 1) + "/");
    return ignore;
  }

  using HeldTree = layout::HeldTree;

  // Up to `want` bisect trees no other run holds, locked for this run,
  // the lowest numbers first: never fewer than one. When every one of the
  // kMaxBisectTrees is held, waits for one (at most kBisectTreeWaitS, and
  // never past the search's own deadline), saying whom it waits for.
  std::vector<HeldTree> take_trees(const gitx::Repo& repo, size_t want) {
    auto wait_end = std::chrono::steady_clock::now() + std::chrono::seconds(kBisectTreeWaitS);
    if (req_.timeout_s > 0) wait_end = std::min(wait_end, deadline_);
    layout::TakenTrees got = layout::take_trees(
        repo, bisect_trees(), want, wait_end, [this](const std::string& line) { say(line); },
        [] {
          if (int sig = util::interrupted_signal()) throw Interrupted{sig};
        });
    if (got.held.empty())
      throw OwnFailure{"no bisect tree of this repository was free within " + std::to_string(got.wait_s) + " s (" +
                           got.holders + ")",
                       false};
    return std::move(got.held);
  }

  // The held trees, each a persistent worktree at HEAD, with their setup
  // stamps; `fresh`: each made anew.
  std::vector<std::string> prepare_trees(gitx::Repo& repo, const std::string& head, const std::vector<HeldTree>& held,
                                         bool fresh) {
    std::vector<std::string> paths;
    for (const HeldTree& h : held) {
      const std::string& name = h.name;
      const std::string path = layout::worktree_path(repo, name);
      const std::string stamp = layout::setup_stamp(repo, name);
      if (fresh) {
        std::error_code ec;
        fs::remove_all(path, ec);
        fs::remove(stamp, ec);
      }
      BisectWorktree wt = prepare_bisect_worktree(repo, path, head, h.index);
      paths.push_back(wt.path);
      names_.push_back(name);
      stamps_.push_back(stamp);
      log("worktree " + wt.path + ": " +
          (wt.state == BisectWorktree::State::kCreated  ? "created"
           : wt.state == BisectWorktree::State::kReused ? "reused"
                                                        : "recreated (" + wt.damage + ")"));
    }
    if (held.size() > 1) log("probing " + std::to_string(held.size()) + " commits at a time");
    return paths;
  }

  // Before the search, with uncommitted changes only: the engine's red
  // measurement covers the work tree as it is, which is not HEAD's commit,
  // so HEAD's commit is measured before history is blamed (the failing
  // tests alone first, where the steps ask them). With a clean tree the red
  // measurement was HEAD's: nothing runs here, and the failing tests alone
  // are asked at HEAD only if the search ends there (alone_red_at_head).
  // A Proposal when the search stops here.
  std::optional<Proposal> at_head(const std::string& head, const std::string& tree, bool uncommitted) {
    if (!oracle_.selected()) log("every step asks the whole check: " + oracle_.why_whole());
    if (!uncommitted) return std::nullopt;
    log("work tree has uncommitted changes: measuring HEAD's commit");
    try {
      if (oracle_.selected() && alone_red_at_head(head, tree)) return std::nullopt;
      if (measure(head, BisectProbe{0, tree, -1}))
        return nothing("the check is green at HEAD's commit " + short_sha(head) +
                       ": the failure comes from uncommitted changes, which bisect cannot blame");
    } catch (const BisectSkip& s) {
      return nothing("HEAD's commit " + short_sha(head) + " cannot be measured: " + s.why);
    }
    return std::nullopt;
  }

  // Whether the failing tests alone are red at HEAD's commit, where the
  // whole check is (measured in `tree`, moved back to HEAD). When they are
  // not, the failure needs the whole suite (order dependence, a test that
  // needs another): from now on every step asks the whole check.
  bool alone_red_at_head(const std::string& head, const std::string& tree) {
    head_asked_ = true;
    gitx::Repo wt = gitx::Repo::open(tree);
    if (wt.head_sha() != head) gitx::move_worktree(wt, head, layout::state_prefixes());
    const BisectProbe probe{0, tree, -1};
    if (req_.config && !req_.config->setup.empty()) set_up(head, probe);
    checks::SenseResult s;
    const TestsAnswer a = oracle_.ask_tests([&](const checks::CheckSpec& c) { return run_check(c, probe); }, &s);
    count_run(true);
    log("the failing tests alone at HEAD " + short_sha(head) + ": " + tests_answer_name(a) +
        (s.signal.empty() ? "" : " (" + s.signal + ")"));
    if (a == TestsAnswer::kRed) return true;
    oracle_.use_whole("the failing tests alone are not red at HEAD " + short_sha(head) +
                      ", where the check is: the failure needs the whole suite");
    p_.selection_misleads = oracle_.why_whole();
    log("every step asks the whole check: " + oracle_.why_whole());
    return false;
  }

  // One run of `check` in the probe's worktree. The worktree shares the
  // user's config, hooks and refs: what the check changes there is put
  // back (setup/guard.h).
  checks::SenseResult run_check(const checks::CheckSpec& check, const BisectProbe& probe) {
    const setup::Guard guard(probe.worktree);
    checks::SenseResult s = check.kind == checks::Kind::kCommandExit
                                ? checks::sense_command_exit(check, probe.worktree, probe.cancel_fd)
                                : checks::sense(check, probe.worktree);
    const std::vector<std::string> put_back = guard.restore("the check " + check.id);
    if (s.interrupted) throw Interrupted{util::interrupted_signal()};
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& line : put_back) log_ << line << "\n";
    return s;
  }

  void count_run(bool selected) {
    std::lock_guard<std::mutex> lock(mu_);
    ++p_.check_runs;
    if (selected) ++p_.selected_runs;
  }

  // The oracle: the failing tests alone or the whole check (BisectOracleCheck),
  // fresh, in the probe's worktree (already at `sha`), after the setup steps
  // whose inputs changed there.
  bool measure(const std::string& sha, const BisectProbe& probe) {
    if (int sig = util::interrupted_signal()) throw Interrupted{sig};
    if (req_.timeout_s > 0 && std::chrono::steady_clock::now() > deadline_) throw OutOfTime{};
    if (req_.config && !req_.config->setup.empty()) set_up(sha, probe);
    const OracleStep step = oracle_.ask([&](const checks::CheckSpec& c) { return run_check(c, probe); });
    const checks::SenseResult& s = step.result;
    std::lock_guard<std::mutex> lock(mu_);
    p_.check_runs += step.runs;
    p_.selected_runs += step.runs - (step.selected ? 0 : 1);
    log_ << "run " << p_.check_runs << ": " << short_sha(sha) << " ";
    if (names_.size() > 1) log_ << "[" << names_.at(probe.slot) << "] ";
    if (s.signal == "cancelled") {
      log_ << "stopped: the answer no longer needs it\n";
      return false;
    }
    signals_[sha] = s.signal;
    log_ << (step.green ? "green" : "red") << (s.signal.empty() ? "" : " (" + s.signal + ")") << ", " << step.note
         << "\n";
    return step.green;
  }

  void set_up(const std::string& sha, const BisectProbe& probe) {
    setup::Result su = setup::ensure(req_.config->setup, probe.worktree, stamps_.at(probe.slot));
    if (su.interrupted) throw Interrupted{util::interrupted_signal()};
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& line : su.put_back) log_ << line << "\n";
    if (su.ran)
      log_ << "setup at " << short_sha(sha) << ": " << (su.ok ? "ran" : su.signal) << " (" << su.duration_ms
           << " ms)\n";
    if (!su.ok) {
      signals_[sha] = su.signal;
      // Every check passed at known-good, its setup included: failing there
      // now is the tree's environment, Phoenix's own failure.
      if (sha == good_)
        throw OwnFailure{"the setup failed at known-good " + short_sha(sha) + " (" + su.signal +
                         "), where it passed before: the tree's environment, not the code"};
      throw BisectSkip{su.signal};
    }
  }

  void log(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    log_ << line << "\n";
  }
  // A line for the person waiting too ("warning: ...", "bisect: ..."), on
  // stderr as the run goes, and in the log.
  void say(const std::string& line) {
    std::cerr << "phoenix: " << line << "\n" << std::flush;
    log(line);
  }

  std::string steps_text(const BisectResult& r) {
    std::ostringstream steps;
    for (size_t i = 0; i < r.steps.size(); ++i) {
      const BisectStep& s = r.steps[i];
      steps << (i ? "; " : "") << short_sha(s.sha) << " [" << s.position << "/" << r.range_size << "] "
            << (s.green ? "green" : "red");
      const std::string& sig = signals_[s.sha];
      if (!s.green && !sig.empty()) steps << " (" << sig << ")";
    }
    if (r.cancelled)
      steps << "; " << r.cancelled << " probe" << (r.cancelled == 1 ? "" : "s") << " stopped as unneeded";
    return steps.str();
  }

  // "5 check runs (4 of the failing tests alone, 1 whole)"
  std::string runs_text() const {
    const int n = p_.check_runs, sel = p_.selected_runs;
    std::string out = std::to_string(n) + " check run" + (n == 1 ? "" : "s");
    if (sel == 0) return out + " of the whole check";
    return out + " (" + std::to_string(sel) + " of the failing tests alone, " + std::to_string(n - sel) + " whole)";
  }

  Proposal verdict(gitx::Repo& repo, const BisectResult& r, const std::string& good, const std::string& head) {
    const std::string steps = steps_text(r);
    const std::string range = "known-good " + short_sha(good) + "..HEAD " + short_sha(head) + " (" +
                              std::to_string(r.range_size) + " first-parent commits)";
    switch (r.verdict) {
      case BisectResult::Verdict::kEmptyRange: return nothing(r.reason);
      case BisectResult::Verdict::kSkipped: return nothing(r.reason + "; steps: " + steps);
      case BisectResult::Verdict::kGoodIsRed: {
        const std::string& sig = signals_[good];
        return nothing("the check is red at known-good " + short_sha(good) + (sig.empty() ? "" : " (" + sig + ")") +
                       " too: the failure predates known-good, no commit of " + range + " to blame; steps: " + steps);
      }
      case BisectResult::Verdict::kFound: break;
    }
    const std::string subject = subject_of(repo, r.culprit);
    const std::string named = "culprit " + short_sha(r.culprit) + " \"" + subject + "\": first red commit of " + range +
                              ", after " + short_sha(r.last_good) + " (green), found in " + runs_text() +
                              "; steps: " + steps;
    p_.found_selected = oracle_.selected();
    log("culprit: " + r.culprit + " " + subject);
    return revert(repo, r.culprit, subject, named);
  }

  Proposal revert(gitx::Repo& repo, const std::string& culprit, const std::string& subject, const std::string& named) {
    std::string patch;
    try {
      patch = repo.revert_patch(culprit);
    } catch (const Error& e) { return nothing(named + "; its revert conflicts with HEAD: " + e.what()); }
    if (patch.empty()) return nothing(named + "; HEAD already lacks its change, so reverting it changes nothing");
    p_.patch = std::move(patch);
    p_.files = gitx::Repo::patch_files(p_.patch);
    p_.summary = "revert " + short_sha(culprit) + " (culprit: " + subject + ")";
    p_.named_by_check = true;
    return ended(Status::kProposed, named);
  }

  const Request& req_;
  BisectOracleCheck oracle_;
  Proposal p_;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<std::string> names_;   // each slot's tree: "bisect", "bisect-3", ...
  std::vector<std::string> stamps_;  // each slot's setup stamp
  std::string good_;                 // known-good, resolved
  bool head_asked_ = false;          // the failing tests alone were asked at HEAD
  std::mutex mu_;
  std::ostringstream log_;
  std::map<std::string, std::string> signals_;  // sha -> the check's signal there
};

}  // namespace

Proposal BisectFixer::search(const Request& request, bool* memoize, bool whole_only) {
  return BisectRun(request, whole_only).search(memoize);
}

}  // namespace phoenix::fixers
