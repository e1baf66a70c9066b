// The pure search of fixers/bisect_search.h over plain lists of commit
// names: which position each probe goes to, skipped commits, the verdict.
#include "fixers/bisect_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace phoenix::fixers {
namespace {

// "good", then c01 .. cNN: position i is commit cII, position n is bad.
std::vector<std::string> commits(size_t n) {
  std::vector<std::string> out{"good"};
  for (size_t i = 1; i <= n; ++i) out.push_back((i < 10 ? "c0" : "c") + std::to_string(i));
  return out;
}

enum class Answer { kGreen, kRed, kSkip };

// A search with one probe at a time, as bisect_commits() runs it with one
// worktree: the answer of `oracle` at each position planned, until the
// range has nothing left to measure.
BisectResult search(const std::vector<std::string>& pos, const std::function<Answer(size_t)>& oracle,
                    std::vector<size_t>* probed = nullptr) {
  BisectResult r;
  r.range_size = pos.size() - 1;
  BisectRange range(pos);
  while (range.open()) {
    const std::vector<size_t> next = range.plan({}, 1);
    if (next.empty()) break;
    EXPECT_EQ(next.size(), 1u);
    const size_t p = next[0];
    EXPECT_TRUE(range.wanted(p)) << p;
    EXPECT_LT(p, r.range_size) << "bad is known red and never measured";
    if (probed) probed->push_back(p);
    const Answer a = oracle(p);
    if (a == Answer::kSkip) range.skip(p, "setup failed: exit=1", r);
    else range.measured(p, a == Answer::kGreen, r);
  }
  range.conclude(r);
  return r;
}

// Green below `culprit`, red from it on.
std::function<Answer(size_t)> first_red_at(size_t culprit, std::set<size_t> skip = {}) {
  return [culprit, skip](size_t p) {
    if (skip.count(p)) return Answer::kSkip;
    return p < culprit ? Answer::kGreen : Answer::kRed;
  };
}

int ceil_log2(size_t n) {
  int k = 0;
  while ((size_t{1} << k) < n) ++k;
  return k;
}

TEST(BisectRange, FirstProbeIsTheMidpointAndTheCulpritIsTheFirstRedCommit) {
  std::vector<size_t> probed;
  BisectResult r = search(commits(10), first_red_at(7), &probed);
  ASSERT_EQ(r.verdict, BisectResult::Verdict::kFound);
  EXPECT_EQ(r.culprit, "c07");
  EXPECT_EQ(r.last_good, "c06");
  EXPECT_EQ(r.culprit_position, 7u);
  // 11 possible answers [0, 10]: the first probe at 0 + ceil(11/2) - 1 = 5.
  ASSERT_FALSE(probed.empty());
  EXPECT_EQ(probed[0], 5u);
  EXPECT_EQ(probed, (std::vector<size_t>{5, 8, 7, 6}));
  ASSERT_EQ(r.steps.size(), probed.size());
  EXPECT_EQ(r.steps[0].sha, "c05");
  EXPECT_TRUE(r.steps[0].green);
  EXPECT_FALSE(r.steps[1].green);  // c08
  EXPECT_TRUE(r.skipped.empty());
}

TEST(BisectRange, EveryCulpritPositionIsFoundWithinCeilLog2Probes) {
  for (size_t n = 1; n <= 40; ++n) {
    for (size_t culprit = 1; culprit <= n; ++culprit) {
      std::vector<size_t> probed;
      BisectResult r = search(commits(n), first_red_at(culprit), &probed);
      ASSERT_EQ(r.verdict, BisectResult::Verdict::kFound) << n << " " << culprit;
      EXPECT_EQ(r.culprit_position, culprit) << n;
      EXPECT_EQ(r.culprit, commits(n)[culprit]);
      EXPECT_LE(r.runs(), ceil_log2(n + 1)) << n << " " << culprit;
      // `good` is measured only when the search narrows down to it.
      const bool good_measured = std::find(probed.begin(), probed.end(), 0u) != probed.end();
      if (culprit > 1) EXPECT_FALSE(good_measured) << n << " " << culprit;
    }
  }
}

TEST(BisectRange, RedAtGoodIsGoodIsRed) {
  BisectResult r = search(commits(6), [](size_t) { return Answer::kRed; });
  EXPECT_EQ(r.verdict, BisectResult::Verdict::kGoodIsRed);
  EXPECT_TRUE(r.culprit.empty());
  ASSERT_FALSE(r.steps.empty());
  EXPECT_EQ(r.steps.back().position, 0u);
  EXPECT_FALSE(r.steps.back().green);
}

TEST(BisectRange, ASkippedCommitIsSetAsideAndTheNearestOtherOneTried) {
  std::vector<size_t> probed;
  // The midpoint 5 cannot be measured: 6 (above first) is tried instead.
  BisectResult r = search(commits(10), first_red_at(7, {5}), &probed);
  ASSERT_EQ(r.verdict, BisectResult::Verdict::kFound);
  EXPECT_EQ(r.culprit, "c07");
  EXPECT_EQ(r.last_good, "c06");
  ASSERT_GE(probed.size(), 2u);
  EXPECT_EQ(probed[0], 5u);
  EXPECT_EQ(probed[1], 6u);
  EXPECT_EQ(std::count(probed.begin(), probed.end(), 5u), 1) << "a skipped commit is not tried again";
  EXPECT_EQ(r.skipped, (std::vector<std::string>{"c05"}));
  for (const BisectStep& s : r.steps) EXPECT_NE(s.sha, "c05");
}

TEST(BisectRange, ASkippedCommitJustBeforeTheCulpritLeavesTwoCandidates) {
  // c06 cannot be measured, but c05 green and c07 red leave only c06 or
  // c07 as the first red one: the search cannot tell, and says so.
  BisectResult r = search(commits(10), first_red_at(7, {6}));
  ASSERT_EQ(r.verdict, BisectResult::Verdict::kSkipped);
  EXPECT_EQ(r.skipped, (std::vector<std::string>{"c06"}));
  EXPECT_EQ(r.reason,
            "the first red commit is one of c06, c07: the commits between could not be measured "
            "(c06: setup failed: exit=1)");
  // One just after the culprit does not hide it: c09 is measured instead.
  std::vector<size_t> probed;
  BisectResult after = search(commits(10), first_red_at(7, {8}), &probed);
  ASSERT_EQ(after.verdict, BisectResult::Verdict::kFound);
  EXPECT_EQ(after.culprit, "c07");
  EXPECT_EQ(probed, (std::vector<size_t>{5, 8, 9, 7, 6}));
  EXPECT_EQ(after.skipped, (std::vector<std::string>{"c08"}));
}

TEST(BisectRange, EverythingLeftSkippedNamesEveryCommitThatCouldBeTheCulprit) {
  BisectResult r = search(commits(4), first_red_at(2, {1, 2, 3}));
  ASSERT_EQ(r.verdict, BisectResult::Verdict::kSkipped);
  EXPECT_TRUE(r.culprit.empty());
  EXPECT_EQ(r.reason.rfind("the first red commit is one of c01, c02, c03, c04: ", 0), 0u) << r.reason;
  EXPECT_EQ(std::set<std::string>(r.skipped.begin(), r.skipped.end()), (std::set<std::string>{"c01", "c02", "c03"}));
}

TEST(BisectRange, ProbesAtOnceSplitTheRangeEvenlyAndAvoidTakenPositions) {
  BisectRange range(commits(15));  // 16 possible answers [0, 15]
  EXPECT_EQ(range.plan({}, 3), (std::vector<size_t>{3, 7, 11}));
  // A probe in flight at 7: the three new ones go to the larger pieces.
  std::vector<size_t> around = range.plan({7}, 2);
  ASSERT_EQ(around.size(), 2u);
  EXPECT_EQ(std::count(around.begin(), around.end(), 7u), 0);
  EXPECT_LT(around[0], 7u);
  EXPECT_GT(around[1], 7u);
  // A skipped position is never planned again.
  BisectResult r;
  range.skip(3, "no", r);
  for (size_t p : range.plan({}, 3)) EXPECT_NE(p, 3u);
  // Never more probes than positions left to measure.
  BisectRange small(commits(2));  // positions 0 and 1 can be measured
  EXPECT_EQ(small.plan({}, 8).size(), 2u);
}

TEST(BisectRange, AResultOutsideTheRangeIsNoLongerWanted) {
  BisectRange range(commits(10));
  BisectResult r;
  range.measured(5, true, r);  // green at 5: the answer is in [6, 10]
  EXPECT_FALSE(range.wanted(3));
  EXPECT_TRUE(range.wanted(6));
  range.measured(8, false, r);  // red at 8: in [6, 8]
  EXPECT_FALSE(range.wanted(8));
  EXPECT_FALSE(range.wanted(9));
  EXPECT_TRUE(range.wanted(7));
  EXPECT_TRUE(range.open());
  range.measured(6, false, r);
  EXPECT_FALSE(range.open());
  range.conclude(r);
  EXPECT_EQ(r.verdict, BisectResult::Verdict::kFound);
  EXPECT_EQ(r.culprit, "c06");
  EXPECT_EQ(r.last_good, "c05");
}

}  // namespace
}  // namespace phoenix::fixers
