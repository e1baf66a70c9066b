#include "fixers/bisect.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <random>
#include <sstream>

#include "checks/check.h"
#include "gitx/repo.h"
#include "test_util.h"
#include "util/error.h"
#include "util/subprocess.h"
#include "layout/layout.h"
#include "util/path.h"
#include "util/lock.h"
#include <thread>
#include <chrono>

namespace fs = std::filesystem;

namespace phoenix::fixers {
namespace {

using test::git;
using test::init_repo;
using test::read;
using test::ScopedTempDir;
using test::trim;
using test::write;

int ceil_log2(size_t n) {
  int k = 0;
  while ((size_t{1} << k) < n) ++k;
  return k;
}

// How a generated history looks. Commit 0 is the root (known-good); commits
// 1..n each bump counter.txt (but the culprit). state.txt reads GOOD until commit `culprit`
// writes BAD (culprit 0: BAD from the root on, -1: never).
struct History {
  int n = 200;
  int culprit = -1;
  int rewrite_state_at = -1;  // this commit rewrites state.txt's line again (revert conflicts)
};

// Builds the history with one `git fast-import` (200 `git commit`s would
// take seconds), then checks out main. Returns the sha of every commit.
std::vector<std::string> make_repo(const std::string& dir, const History& h) {
  init_repo(dir);
  std::ostringstream s;
  auto data = [&](const std::string& d) { s << "data " << d.size() << "\n" << d << "\n"; };
  for (int k = 0; k <= h.n; ++k) {
    s << "commit refs/heads/main\nmark :" << (k + 1) << "\n";
    s << "committer Test User <test@example.com> " << (1700000000 + k) << " +0000\n";
    data(k == 0           ? "initial\n"
         : k == h.culprit ? "commit " + std::to_string(k) + ": switch state to BAD\n"
                          : "commit " + std::to_string(k) + "\n");
    if (k == 0) {
      s << "M 100644 inline .gitignore\n";
      data(".phoenix/\nbuild/\n");
      s << "M 100644 inline stable.txt\n";
      data("never changes\n");
    }
    if (k == 0 || k == h.culprit) {
      s << "M 100644 inline state.txt\n";
      data(k >= h.culprit && h.culprit >= 0 ? "BAD\n" : "GOOD\n");
    }
    if (k == h.rewrite_state_at) {
      s << "M 100644 inline state.txt\n";
      data("BAD, and then some\n");
    }
    // The culprit touches state.txt alone, so its revert applies on HEAD.
    if (k != h.culprit || k == 0) {
      s << "M 100644 inline counter.txt\n";
      data(std::to_string(k) + "\n");
    }
  }
  const std::string marks = dir + "/.git/phoenix-test-marks";
  util::ProcessOptions o;
  o.argv = {"git", "-C", dir, "fast-import", "--quiet", "--export-marks=" + marks};
  o.stdin_data = s.str();
  o.timeout_s = 60;
  util::ProcessResult r = util::run_process(o);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  git(dir, {"reset", "-q", "--hard", "main"});
  std::vector<std::string> shas(h.n + 1);
  std::istringstream in(read(marks));
  for (std::string line; std::getline(in, line);) {
    int mark = std::stoi(line.substr(1, line.find(' ') - 1));
    shas.at(mark - 1) = line.substr(line.find(' ') + 1);
  }
  fs::remove(marks);
  return shas;
}

checks::CheckSpec grep_check() {
  return checks::parse_check_text(
      R"({"id":"state","kind":"command_exit","target":["sh","-c","grep -q GOOD state.txt"]})");
}

// What the engine hands a fixer after measuring the check red in the user's tree.
Request make_request(const std::string& root, const std::string& known_good) {
  Request r;
  r.repo_root = root;
  r.phoenix_dir = root + "/.phoenix";
  r.failure.check = grep_check();
  r.failure.result = checks::sense(r.failure.check, root);
  EXPECT_FALSE(r.failure.result.ok) << "the check should be red in the user's tree";
  r.failure.failure_type = "unit";
  r.head = test::rev_parse(root, "HEAD");
  r.known_good = known_good;
  r.timeout_s = 120;
  return r;
}

std::string wt_path(const std::string& root) { return layout::worktree_path(gitx::Repo::open(root), "bisect"); }

// Every file of the work tree (not .git, not .phoenix) with its bytes.
std::map<std::string, std::string> tree_files(const std::string& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    std::string rel = fs::relative(it->path(), root).string();
    if (rel == ".git" || rel == ".phoenix") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) out[rel] = read(it->path().string());
  }
  return out;
}

// --- the search itself, with a free oracle -----------------------------------

TEST(BisectSearch, ACommitThatCannotBeMeasuredIsSkippedAsGitBisectSkipDoes) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 16});
  std::map<std::string, int> index;
  for (size_t i = 0; i < shas.size(); ++i) index[shas[i]] = static_cast<int>(i);
  gitx::Repo repo = gitx::Repo::open(root);
  // Every culprit is still found when a few commits around it cannot be
  // measured (their setup fails), as long as a measurable neighbour tells.
  const std::set<int> broken{7, 8, 12};
  for (int culprit = 1; culprit <= 16; ++culprit) {
    SCOPED_TRACE("culprit=" + std::to_string(culprit));
    std::vector<int> asked;
    BisectResult r = bisect_commits(repo, "", shas[0], shas[16], [&](const std::string& sha) {
      asked.push_back(index.at(sha));
      if (broken.count(index.at(sha))) throw BisectSkip{"setup failed: npm ci: exit=1"};
      return index.at(sha) < culprit;
    });
    std::sort(asked.begin(), asked.end());
    EXPECT_EQ(std::adjacent_find(asked.begin(), asked.end()), asked.end()) << "a commit asked twice";
    if (broken.count(culprit) || broken.count(culprit - 1)) {
      // The green->red step touches a commit nobody could measure: the
      // answer is a range, named, never a guess.
      if (r.verdict == BisectResult::Verdict::kSkipped) {
        EXPECT_NE(r.reason.find("could not be measured"), std::string::npos) << r.reason;
        EXPECT_NE(r.reason.find(shas[culprit].substr(0, 7)), std::string::npos) << r.reason;
        EXPECT_NE(r.reason.find("setup failed: npm ci: exit=1"), std::string::npos) << r.reason;
        continue;
      }
    }
    ASSERT_EQ(r.verdict, BisectResult::Verdict::kFound) << r.reason;
    EXPECT_EQ(r.culprit, shas[culprit]);
    for (const auto& s : r.skipped) EXPECT_TRUE(broken.count(index.at(s)));
  }
}

TEST(BisectSearch, EveryCulpritPositionWithinCeilLog2Runs) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 255});
  std::map<std::string, int> index;
  for (size_t i = 0; i < shas.size(); ++i) index[shas[i]] = static_cast<int>(i);
  gitx::Repo repo = gitx::Repo::open(root);

  // Ranges of several lengths over the same history: good = commit 0, bad = commit n.
  for (int n : {1, 2, 3, 4, 5, 7, 8, 9, 100, 199, 200, 255}) {
    int worst = 0;
    for (int culprit = 0; culprit <= n; ++culprit) {
      SCOPED_TRACE("n=" + std::to_string(n) + " culprit=" + std::to_string(culprit));
      std::vector<std::string> asked;
      BisectResult r = bisect_commits(repo, "", shas[0], shas[n], [&](const std::string& sha) {
        asked.push_back(sha);
        return index.at(sha) < culprit;
      });
      ASSERT_EQ(r.range_size, static_cast<size_t>(n));
      EXPECT_LE(r.runs(), ceil_log2(n + 1));
      EXPECT_EQ(asked.size(), r.steps.size());
      // `bad` is known red and never asked; no commit is asked twice.
      EXPECT_EQ(std::count(asked.begin(), asked.end(), shas[n]), 0);
      std::sort(asked.begin(), asked.end());
      EXPECT_EQ(std::adjacent_find(asked.begin(), asked.end()), asked.end());
      if (culprit == 0) {
        EXPECT_EQ(r.verdict, BisectResult::Verdict::kGoodIsRed);
      } else {
        ASSERT_EQ(r.verdict, BisectResult::Verdict::kFound);
        EXPECT_EQ(r.culprit, shas[culprit]);
        EXPECT_EQ(r.last_good, shas[culprit - 1]);
        EXPECT_EQ(r.culprit_position, static_cast<size_t>(culprit));
      }
      // Known-good is measured only when the search ends at the bottom.
      bool asked_good = std::count(asked.begin(), asked.end(), shas[0]) > 0;
      EXPECT_EQ(asked_good, culprit <= 1);
      worst = std::max(worst, r.runs());
    }
    EXPECT_EQ(worst, ceil_log2(n + 1)) << "n=" << n;
  }
}

TEST(BisectSearch, EmptyOrUnrelatedRangeIsNotSearched) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 3});
  gitx::Repo repo = gitx::Repo::open(root);
  int calls = 0;
  auto oracle = [&](const std::string&) { return ++calls, true; };
  BisectResult same = bisect_commits(repo, "", shas[2], shas[2], oracle);
  EXPECT_EQ(same.verdict, BisectResult::Verdict::kEmptyRange);
  BisectResult backwards = bisect_commits(repo, "", shas[3], shas[1], oracle);
  EXPECT_EQ(backwards.verdict, BisectResult::Verdict::kEmptyRange);
  EXPECT_NE(backwards.reason.find("not an ancestor"), std::string::npos) << backwards.reason;
  EXPECT_EQ(calls, 0);
}

TEST(BisectSearch, WorktreeIsCleanAndAtTheCommitForEveryRun) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 60, .culprit = 23});
  gitx::Repo repo = gitx::Repo::open(root);
  BisectWorktree wt = prepare_bisect_worktree(repo, wt_path(root), shas[60]);
  EXPECT_EQ(wt.state, BisectWorktree::State::kCreated);
  std::map<std::string, int> index;
  for (size_t i = 0; i < shas.size(); ++i) index[shas[i]] = static_cast<int>(i);

  // A messy check: edits a tracked file, stages a new one, leaves untracked
  // files and an ignored build output behind. The next run must not see any
  // of it but the ignored file.
  int runs = 0;
  BisectResult r = bisect_commits(repo, wt.path, shas[0], shas[60], [&](const std::string& sha) {
    gitx::Repo w = gitx::Repo::open(wt.path);
    EXPECT_EQ(w.head_sha(), sha);
    EXPECT_TRUE(w.is_clean()) << "run " << runs;
    const int k = index.at(sha);
    EXPECT_EQ(read(wt.path + "/counter.txt"), std::to_string(k == 23 ? k - 1 : k) + "\n");
    if (runs > 0) EXPECT_TRUE(fs::exists(wt.path + "/build/out.o"));
    write(wt.path, "counter.txt", "scribbled\n");
    write(wt.path, "junk/untracked.txt", "x");
    write(wt.path, "staged.txt", "y");
    git(wt.path, {"add", "staged.txt"});
    write(wt.path, "build/out.o", "warm");
    ++runs;
    return read(wt.path + "/state.txt") == "GOOD\n";
  });
  ASSERT_EQ(r.verdict, BisectResult::Verdict::kFound);
  EXPECT_EQ(r.culprit, shas[23]);
  EXPECT_EQ(runs, r.runs());
  // The user's checkout saw none of it.
  EXPECT_EQ(trim(git(root, {"status", "--porcelain"})), "");
}

// --- multisection: several probes at once --------------------------------------

TEST(BisectParallel, SameVerdictAsSerialForEveryCulpritAndWorkerCount) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 40});
  std::map<std::string, int> index;
  for (size_t i = 0; i < shas.size(); ++i) index[shas[i]] = static_cast<int>(i);
  gitx::Repo repo = gitx::Repo::open(root);
  // With and without commits that cannot be measured: a skipped commit is
  // never blamed, and the answer is either the culprit or a named range.
  for (const std::set<int>& broken : {std::set<int>{}, std::set<int>{9, 10, 27}}) {
    for (size_t k : {2, 3, 4}) {
      for (int culprit = 0; culprit <= 40; ++culprit) {
        SCOPED_TRACE("k=" + std::to_string(k) + " culprit=" + std::to_string(culprit) +
                     " broken=" + std::to_string(broken.size()));
        std::mutex mu;
        std::vector<int> asked;
        BisectResult r = bisect_commits_parallel(repo, std::vector<std::string>(k), shas[0], shas[40],
                                                 [&](const std::string& sha, const BisectProbe& p) {
                                                   EXPECT_LT(p.slot, k);
                                                   EXPECT_GE(p.cancel_fd, 0);
                                                   const int at = index.at(sha);
                                                   {
                                                     std::lock_guard<std::mutex> lock(mu);
                                                     asked.push_back(at);
                                                   }
                                                   if (broken.count(at)) throw BisectSkip{"setup failed"};
                                                   return at < culprit;
                                                 });
        std::sort(asked.begin(), asked.end());
        EXPECT_EQ(std::adjacent_find(asked.begin(), asked.end()), asked.end()) << "a commit asked twice";
        EXPECT_EQ(std::count(asked.begin(), asked.end(), 40), 0) << "bad is known red";
        if (broken.count(culprit) || broken.count(culprit - 1)) {
          if (r.verdict == BisectResult::Verdict::kSkipped) {
            EXPECT_NE(r.reason.find(shas[culprit].substr(0, 7)), std::string::npos) << r.reason;
            continue;
          }
        }
        if (culprit == 0) {
          EXPECT_EQ(r.verdict, BisectResult::Verdict::kGoodIsRed);
          continue;
        }
        ASSERT_EQ(r.verdict, BisectResult::Verdict::kFound) << r.reason;
        EXPECT_EQ(r.culprit, shas[culprit]);
        EXPECT_EQ(r.last_good, shas[culprit - 1]);
        // Fewer rounds than serial bisect's ceil(log2(41)) = 6 runs would
        // need: the used results alone (k of them may land per round).
        if (broken.empty()) EXPECT_LE(r.runs(), 6 * 2);
      }
    }
  }
}

TEST(BisectParallel, AProbeTheAnswerNoLongerNeedsIsStopped) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 3});
  gitx::Repo repo = gitx::Repo::open(root);
  // Two workers over answers 0..3 probe commits 1 and 2 at once. Commit 1
  // answers red at once, which makes commit 2 (known red now) useless:
  // its probe waits for the cancel descriptor and must be told.
  std::atomic<bool> told{false};
  BisectResult r =
      bisect_commits_parallel(repo, {"", ""}, shas[0], shas[3], [&](const std::string& sha, const BisectProbe& p) {
        if (sha == shas[2]) {
          pollfd f{p.cancel_fd, POLLIN, 0};
          told = ::poll(&f, 1, 60 * 1000) == 1;
          return true;  // a wrong answer, ignored
        }
        return sha == shas[0];
      });
  EXPECT_TRUE(told);
  EXPECT_EQ(r.cancelled, 1u);
  ASSERT_EQ(r.verdict, BisectResult::Verdict::kFound) << r.reason;
  EXPECT_EQ(r.culprit, shas[1]);
}

TEST(BisectParallel, FixerFindsTheSameCulpritAsSerialInItsWorktrees) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 60, .culprit = 37});
  // A real check run in each worktree; `build/` is ignored and survives.
  const checks::CheckSpec check = checks::parse_check_text(
      R"({"id":"state","kind":"command_exit","target":["sh","-c","mkdir -p build && echo x >> build/runs && grep -q GOOD state.txt"]})");
  auto propose = [&](int parallel) {
    config::Config cfg;
    cfg.bisect_parallel = parallel;
    Request req = make_request(root, shas[0]);
    req.failure.check = check;
    req.config = &cfg;
    return BisectFixer().propose(req);
  };
  Proposal serial = propose(1);
  Proposal parallel = propose(3);
  ASSERT_EQ(serial.status, Status::kProposed) << serial.detail;
  ASSERT_EQ(parallel.status, Status::kProposed) << parallel.detail;
  EXPECT_EQ(parallel.summary, serial.summary);
  EXPECT_EQ(parallel.patch, serial.patch);
  EXPECT_NE(parallel.log.find("probing 3 commits at a time"), std::string::npos) << parallel.log;
  gitx::Repo repo = gitx::Repo::open(root);
  for (const char* name : {"bisect", "bisect-2", "bisect-3"}) {
    const std::string wt = layout::worktree_path(repo, name);
    EXPECT_TRUE(fs::exists(wt + "/build/runs")) << name << " measured nothing";
    EXPECT_NE(parallel.log.find("worktree " + wt + ": "), std::string::npos) << parallel.log;
  }
  // The user's checkout saw none of it.
  EXPECT_EQ(trim(git(root, {"status", "--porcelain"})), "");
  // Again: the three worktrees are reused, not created.
  Proposal again = propose(3);
  ASSERT_EQ(again.status, Status::kProposed) << again.detail;
  EXPECT_EQ(again.summary, serial.summary);
  EXPECT_EQ(again.log.find(": created"), std::string::npos) << again.log;
}

// --- the fixer on 200-commit histories ----------------------------------------

TEST(BisectFixer, Finds200CommitCulpritAnywhereInAtMost8Runs) {
  // The first and the last commit of the range, plus seeded random positions.
  std::vector<int> positions{1, 200, 2, 199, 100};
  std::mt19937 rng(20240611);
  for (int i = 0; i < 4; ++i) positions.push_back(std::uniform_int_distribution<int>(1, 200)(rng));

  std::ostringstream measured;
  for (int culprit : positions) {
    SCOPED_TRACE("culprit at commit " + std::to_string(culprit));
    ScopedTempDir tmp;
    const std::string root = tmp / "repo";
    auto shas = make_repo(root, {.n = 200, .culprit = culprit});
    BisectFixer fixer;
    EXPECT_EQ(fixer.name(), "bisect");
    Proposal p = fixer.propose(make_request(root, shas[0]));
    ASSERT_EQ(p.status, Status::kProposed) << p.detail;
    EXPECT_EQ(p.fixer, "bisect");
    EXPECT_LE(p.check_runs, 8);
    EXPECT_GE(p.check_runs, 1);
    EXPECT_EQ(p.summary, "revert " + shas[culprit].substr(0, 7) + " (culprit: commit " + std::to_string(culprit) +
                             ": switch state to BAD)");
    EXPECT_NE(p.detail.find("culprit " + shas[culprit].substr(0, 7)), std::string::npos) << p.detail;
    EXPECT_NE(p.detail.find("steps: "), std::string::npos) << p.detail;
    EXPECT_EQ(p.files, std::vector<std::string>{"state.txt"});
    EXPECT_EQ(p.model_calls, 0);
    measured << culprit << ":" << p.check_runs << " ";

    // (3) The proposal, applied to the user's repository, makes the check green.
    gitx::Repo repo = gitx::Repo::open(root);
    repo.apply_patch(p.patch);
    EXPECT_TRUE(checks::sense(grep_check(), root).ok);
  }
  std::cout << "[ measured ] culprit position:check runs  " << measured.str() << "\n";
}

TEST(BisectFixer, LeavesTheUsersCheckoutByteForByteUntouched) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 200, .culprit = 77});
  // Local work the user has not committed: a modified file, a staged file,
  // an untracked file.
  write(root, "counter.txt", "my local edit\n");
  write(root, "notes/untracked.txt", "mine\n");
  write(root, "staged.txt", "staged\n");
  git(root, {"add", "staged.txt"});
  Request req = make_request(root, shas[0]);

  // Snapshot before anything runs `git status` (which may refresh the index).
  const std::string index_before = read(root + "/.git/index");
  const auto files_before = tree_files(root);
  const std::string head_before = read(root + "/.git/HEAD");
  const std::string refs_before = git(root, {"for-each-ref"});

  BisectFixer fixer;
  Proposal p = fixer.propose(req);
  ASSERT_EQ(p.status, Status::kProposed) << p.detail;
  EXPECT_NE(p.summary.find(shas[77].substr(0, 7)), std::string::npos);
  // Dirty tree: HEAD's commit is measured once on top of the search.
  EXPECT_LE(p.check_runs, 9);
  EXPECT_NE(p.log.find("uncommitted changes"), std::string::npos) << p.log;

  EXPECT_EQ(read(root + "/.git/index"), index_before);
  EXPECT_EQ(tree_files(root), files_before);
  EXPECT_EQ(read(root + "/.git/HEAD"), head_before);
  EXPECT_EQ(git(root, {"for-each-ref"}), refs_before);
  // Exactly the expected local state (the worktree lives in ignored .phoenix/).
  EXPECT_EQ(test::porcelain(root), " M counter.txt\nA  staged.txt\n?? notes/untracked.txt\n");
  // The measurements happened in the worktree.
  EXPECT_TRUE(fs::exists(wt_path(root) + "/.git"));
}

TEST(BisectFixer, GreenAtHeadsCommitMeansUncommittedChangesAreToBlame) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 30});
  write(root, "state.txt", "BAD\n");  // red only in the work tree
  BisectFixer fixer;
  Proposal p = fixer.propose(make_request(root, shas[0]));
  EXPECT_EQ(p.status, Status::kNothing);
  EXPECT_NE(p.detail.find("uncommitted changes"), std::string::npos) << p.detail;
  EXPECT_EQ(p.check_runs, 1);
  EXPECT_EQ(read(root + "/state.txt"), "BAD\n");
}

// --- the persistent worktree ---------------------------------------------------

TEST(BisectWorktree, ReusedCleanedAndMovedIncrementallyOnTheNextBisect) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 200, .culprit = 150});
  gitx::Repo repo = gitx::Repo::open(root);

  Proposal first = BisectFixer().propose(make_request(root, shas[0]));
  ASSERT_EQ(first.status, Status::kProposed) << first.detail;
  EXPECT_NE(first.log.find(": created"), std::string::npos) << first.log;
  ASSERT_EQ(repo.worktree_list().size(), 1u);
  const gitx::WorktreeInfo info = repo.worktree_list()[0];
  EXPECT_EQ(info.name, kBisectWorktreeName);
  EXPECT_EQ(info.path, wt_path(root));

  // Leftovers of a previous check: an ignored build output (kept: it is the
  // point of reusing), an untracked file and an edit (both discarded).
  const std::string wt = wt_path(root);
  write(wt, "build/cache.o", "warm");
  write(wt, "leftover.txt", "x");
  write(wt, "counter.txt", "edited by a check\n");
  // stable.txt never changes in the history: an incremental move leaves it alone.
  const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(24);
  fs::last_write_time(wt + "/stable.txt", old_time);

  // A new fixer (a new run): nothing memoized, the search runs again.
  Proposal second = BisectFixer().propose(make_request(root, shas[0]));
  ASSERT_EQ(second.status, Status::kProposed) << second.detail;
  EXPECT_EQ(second.summary, first.summary);
  EXPECT_LE(second.check_runs, 8);
  EXPECT_NE(second.log.find(": reused"), std::string::npos) << second.log;
  auto list = repo.worktree_list();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].path, info.path);
  EXPECT_TRUE(list[0].valid);
  EXPECT_TRUE(fs::exists(wt + "/build/cache.o")) << "the worktree was recreated, not reused";
  EXPECT_FALSE(fs::exists(wt + "/leftover.txt"));
  EXPECT_EQ(fs::last_write_time(wt + "/stable.txt"), old_time) << "an unchanged file was rewritten";
}

// Damages a created worktree in one way, then checks it is recreated.
void expect_recreated(const std::string& how, const std::function<void(const std::string& root)>& damage) {
  SCOPED_TRACE(how);
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 20, .culprit = 9});
  gitx::Repo repo = gitx::Repo::open(root);
  const std::string path = wt_path(root);
  ASSERT_EQ(prepare_bisect_worktree(repo, path, shas[5]).state, BisectWorktree::State::kCreated);
  write(path, "build/marker", "from the old worktree");
  damage(root);

  BisectWorktree again = prepare_bisect_worktree(repo, path, shas[7]);
  EXPECT_EQ(again.state, BisectWorktree::State::kRecreated);
  EXPECT_FALSE(again.damage.empty());
  std::cout << "[ damage   ] " << how << " -> " << again.damage << "\n";
  EXPECT_FALSE(fs::exists(path + "/build/marker"));
  auto list = repo.worktree_list();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].name, kBisectWorktreeName);
  EXPECT_EQ(list[0].path, path);
  EXPECT_TRUE(list[0].valid);
  gitx::Repo w = gitx::Repo::open(path);
  EXPECT_EQ(w.head_sha(), shas[7]);
  EXPECT_EQ(fs::canonical(w.common_dir()), fs::canonical(repo.common_dir()));
  EXPECT_TRUE(w.is_clean());

  // And the fixer works through it.
  Proposal p = BisectFixer().propose(make_request(root, shas[0]));
  ASSERT_EQ(p.status, Status::kProposed) << p.detail;
  EXPECT_NE(p.summary.find(shas[9].substr(0, 7)), std::string::npos);
}

TEST(BisectWorktree, RecreatedWhenItsFolderIsDeleted) {
  expect_recreated("folder deleted", [](const std::string& root) { fs::remove_all(wt_path(root)); });
}

TEST(BisectWorktree, RecreatedWhenItsGitFileIsCorrupted) {
  expect_recreated(".git corrupted",
                   [](const std::string& root) { write(wt_path(root), ".git", "gitdir: /nonexistent/place\n"); });
}

TEST(BisectWorktree, RecreatedWhenTheRepositoryNoLongerListsIt) {
  expect_recreated("not listed",
                   [](const std::string& root) { fs::remove_all(root + "/.git/worktrees/" + kBisectWorktreeName); });
}

TEST(BisectWorktree, RecreatedWhenItPointsIntoAnotherRepository) {
  ScopedTempDir other;
  expect_recreated("wrong repo", [&](const std::string& root) {
    const std::string o = other / "other";
    make_repo(o, {.n = 1});
    git(o, {"worktree", "add", "-q", "--detach", other / "other-wt"});
    write(wt_path(root), ".git", "gitdir: " + o + "/.git/worktrees/other-wt\n");
  });
}

TEST(BisectWorktree, RefusesAPathThatOverlapsTheRepository) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  make_repo(root, {.n = 1});
  gitx::Repo repo = gitx::Repo::open(root);
  EXPECT_THROW(prepare_bisect_worktree(repo, root, "HEAD"), Error);
  EXPECT_THROW(prepare_bisect_worktree(repo, tmp.path(), "HEAD"), Error);
  EXPECT_THROW(prepare_bisect_worktree(repo, root + "/.git/wt", "HEAD"), Error);
  EXPECT_TRUE(fs::exists(root + "/counter.txt"));
}

// --- assumptions verified, not trusted -------------------------------------------

TEST(BisectFixer, RedAtKnownGoodIsNothingWithTheReason) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 200, .culprit = 0});  // red from the root on
  Proposal p = BisectFixer().propose(make_request(root, shas[0]));
  EXPECT_EQ(p.status, Status::kNothing);
  EXPECT_NE(p.detail.find("red at known-good " + shas[0].substr(0, 7)), std::string::npos) << p.detail;
  EXPECT_NE(p.detail.find("predates known-good"), std::string::npos) << p.detail;
  EXPECT_LE(p.check_runs, 8);
  EXPECT_TRUE(p.patch.empty());
}

TEST(BisectFixer, NoKnownGoodIsNothing) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  make_repo(root, {.n = 5, .culprit = 3});
  Proposal p = BisectFixer().propose(make_request(root, ""));
  EXPECT_EQ(p.status, Status::kNothing);
  EXPECT_EQ(p.detail, "no known-good commit to bisect from");
  EXPECT_EQ(p.check_runs, 0);
  EXPECT_FALSE(fs::exists(root + "/.phoenix/worktrees"));
  EXPECT_FALSE(fs::exists(wt_path(root)));
}

TEST(BisectFixer, KnownGoodThatIsHeadOrNotAnAncestorIsNothing) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 5, .culprit = 3});
  Proposal at_head = BisectFixer().propose(make_request(root, shas[5]));
  EXPECT_EQ(at_head.status, Status::kNothing);
  EXPECT_NE(at_head.detail.find("HEAD is the known-good commit"), std::string::npos) << at_head.detail;

  git(root, {"checkout", "-q", "-b", "side", shas[1]});
  write(root, "other.txt", "side\n");
  const std::string side = test::commit_all(root, "side work");
  git(root, {"checkout", "-q", "main"});
  Proposal unrelated = BisectFixer().propose(make_request(root, side));
  EXPECT_EQ(unrelated.status, Status::kNothing);
  EXPECT_NE(unrelated.detail.find("not an ancestor"), std::string::npos) << unrelated.detail;
  EXPECT_EQ(unrelated.check_runs + at_head.check_runs, 0);

  Proposal unknown = BisectFixer().propose(make_request(root, "0123456789abcdef0123456789abcdef01234567"));
  EXPECT_EQ(unknown.status, Status::kNothing);
  EXPECT_NE(unknown.detail.find("not a commit"), std::string::npos) << unknown.detail;
}

TEST(BisectFixer, ConflictingRevertIsNothingWithTheReason) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  // Commit 40 breaks state.txt; commit 120 edits the same line again, so
  // undoing 40 on top of HEAD conflicts.
  auto shas = make_repo(root, {.n = 200, .culprit = 40, .rewrite_state_at = 120});
  Proposal p = BisectFixer().propose(make_request(root, shas[0]));
  EXPECT_EQ(p.status, Status::kNothing);
  EXPECT_NE(p.detail.find("culprit " + shas[40].substr(0, 7)), std::string::npos) << p.detail;
  EXPECT_NE(p.detail.find("conflicts"), std::string::npos) << p.detail;
  EXPECT_NE(p.detail.find("state.txt"), std::string::npos) << p.detail;
  EXPECT_LE(p.check_runs, 8);
  EXPECT_TRUE(p.patch.empty());
}

TEST(BisectFixer, HeadMovedSinceTheRequestIsAborted) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 10, .culprit = 4});
  Request req = make_request(root, shas[0]);
  req.head = shas[9];
  Proposal p = BisectFixer().propose(req);
  EXPECT_EQ(p.status, Status::kAborted);
  EXPECT_EQ(p.check_runs, 0);
}

// --- memoization -------------------------------------------------------------------

TEST(BisectFixer, SecondCallForTheSameIssueDoesNotSearchAgain) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 200, .culprit = 123});
  BisectFixer fixer;
  Request req = make_request(root, shas[0]);
  Proposal first = fixer.propose(req);
  ASSERT_EQ(first.status, Status::kProposed) << first.detail;

  // The engine comes back after the revert failed verification.
  req.earlier.push_back({"bisect", first.patch, first.files, "red: exit=1", "..."});
  Proposal again = fixer.propose(req);
  EXPECT_EQ(again.status, Status::kNothing);
  EXPECT_EQ(again.check_runs, 0);
  EXPECT_NE(again.detail.find("already proposed: " + first.summary), std::string::npos) << again.detail;

  // A fresh fixer learns the same from Request.earlier.
  Proposal fresh = BisectFixer().propose(req);
  EXPECT_EQ(fresh.status, Status::kNothing);
  EXPECT_EQ(fresh.check_runs, 0);

  // Definitive "nothing" answers are memoized too.
  ScopedTempDir tmp2;
  const std::string red_root = tmp2 / "repo";
  auto red = make_repo(red_root, {.n = 20, .culprit = 0});
  Request red_req = make_request(red_root, red[0]);
  Proposal n1 = fixer.propose(red_req);
  Proposal n2 = fixer.propose(red_req);
  EXPECT_EQ(n1.status, Status::kNothing);
  EXPECT_GT(n1.check_runs, 0);
  EXPECT_EQ(n2.status, Status::kNothing);
  EXPECT_EQ(n2.check_runs, 0);
  EXPECT_EQ(n2.detail, n1.detail);
}

// --- one run per tree (runs at the same time never share one) -------------------

// Every bisect tree's lock of the repository at `root`, taken by this
// process (alive, so no run may take them over).
std::vector<std::unique_ptr<util::FileLock>> hold_trees(const std::string& root, size_t n) {
  gitx::Repo repo = gitx::Repo::open(root);
  std::vector<std::unique_ptr<util::FileLock>> held;
  for (size_t t = 0; t < n; ++t)
    held.push_back(std::make_unique<util::FileLock>(layout::tree_lock(repo, bisect_tree_name(t)), 0, "the test"));
  return held;
}

TEST(BisectTrees, ATreeAnotherRunHoldsIsLeftAloneAndTheNextFreeOneTaken) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 12, .culprit = 7});
  // A first search made "bisect"; then another run holds it.
  ASSERT_EQ(BisectFixer().propose(make_request(root, shas[0])).status, Status::kProposed);
  const std::string first = wt_path(root);
  const std::string first_head = trim(git(first, {"rev-parse", "HEAD"}));
  auto held = hold_trees(root, 1);
  Proposal p = BisectFixer().propose(make_request(root, shas[0]));
  ASSERT_EQ(p.status, Status::kProposed) << p.detail << "\n" << p.log;
  const std::string second = layout::worktree_path(gitx::Repo::open(root), "bisect-2");
  EXPECT_NE(p.log.find("worktree " + second + ": created"), std::string::npos) << p.log;
  EXPECT_EQ(p.log.find("worktree " + first + ":"), std::string::npos) << p.log;
  EXPECT_EQ(trim(git(first, {"rev-parse", "HEAD"})), first_head) << "the held tree was moved";
}

TEST(BisectTrees, AllTreesHeldWaitsNamingTheHolderThenIsPhoenixsOwnFailure) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 12, .culprit = 7});
  auto held = hold_trees(root, kMaxBisectTrees);
  Request req = make_request(root, shas[0]);
  req.timeout_s = 1;
  const auto t0 = std::chrono::steady_clock::now();
  Proposal p = BisectFixer().propose(req);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(p.status, Status::kOwnFailure) << p.detail;
  EXPECT_EQ(p.check_runs, 0);
  EXPECT_NE(p.detail.find("no bisect tree of this repository was free within 1 s"), std::string::npos) << p.detail;
  EXPECT_NE(p.detail.find("(bisect, bisect-2, bisect-3, bisect-4, bisect-5, bisect-6, bisect-7, bisect-8 by pid " +
                          std::to_string(::getpid()) + " ("),
            std::string::npos)
      << p.detail;
  EXPECT_NE(p.log.find("all 8 bisect trees of this repository are in use"), std::string::npos) << p.log;
  EXPECT_GE(waited, 0.9);
  EXPECT_LT(waited, 10);
  // No tree was touched: none exists.
  EXPECT_FALSE(fs::exists(wt_path(root)));
}

TEST(BisectTrees, AWaitingRunTakesTheFirstTreeFreed) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 12, .culprit = 7});
  auto held = hold_trees(root, kMaxBisectTrees);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    held[5].reset();  // "bisect-6"
  });
  Proposal p = BisectFixer().propose(make_request(root, shas[0]));
  release.join();
  ASSERT_EQ(p.status, Status::kProposed) << p.detail;
  EXPECT_NE(p.log.find("bisect-6 is free now"), std::string::npos) << p.log;
  EXPECT_NE(p.log.find("worktree " + layout::worktree_path(gitx::Repo::open(root), "bisect-6") + ": created"),
            std::string::npos)
      << p.log;
}

// --- Phoenix's own failures -----------------------------------------------------------

// The setup passed at known-good once (every check was green there); failing
// there now is the tree's environment: one more try in a fresh tree, then
// kOwnFailure, never a blame on the code.
TEST(BisectOwnFailure, SetupFailingAtKnownGoodIsRetriedInAFreshTreeThenPhoenixsOwn) {
  ScopedTempDir tmp;
  const std::string root = tmp / "repo";
  auto shas = make_repo(root, {.n = 4, .culprit = 1});  // the search narrows to known-good
  config::Config cfg;
  cfg.bisect_parallel = 1;
  // Fails where state.txt is GOOD and counter.txt 0: known-good only.
  cfg.setup.push_back(
      {{"sh", "-c", "! { grep -qx GOOD state.txt && grep -qx 0 counter.txt; }"}, {"counter.txt", "state.txt"}, 60});
  Request req = make_request(root, shas[0]);
  req.config = &cfg;
  BisectFixer fixer;
  Proposal p = fixer.propose(req);
  EXPECT_EQ(p.status, Status::kOwnFailure) << p.detail;
  EXPECT_NE(p.detail.find("the setup failed at known-good " + shas[0].substr(0, 7)), std::string::npos) << p.detail;
  EXPECT_NE(p.detail.find("(and again in fresh trees)"), std::string::npos) << p.detail;
  EXPECT_NE(p.log.find("once more, in fresh trees"), std::string::npos) << p.log;
  // Not memoized: the next call searches again.
  Proposal again = fixer.propose(req);
  EXPECT_EQ(again.status, Status::kOwnFailure) << again.detail;
}

}  // namespace
}  // namespace phoenix::fixers
