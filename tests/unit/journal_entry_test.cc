// journal/entry.h: an entry's totals from its per-origin tallies, merging
// two journals' views of one entry, and what replays saved. Pure values: no
// SQLite, no files.
#include "journal/entry.h"

#include <gtest/gtest.h>

#include <string>

namespace phoenix::journal {
namespace {

const std::string kOriginA(32, 'a');
const std::string kOriginB(32, 'b');

Tally tally(long long successes, long long failures, long long last_verified, long long last_failed,
            const std::string& why = "") {
  Tally t;
  t.attempts = successes + failures;
  t.successes = successes;
  t.failures = failures;
  t.first_seen = 100;
  t.last_seen = std::max(last_verified, last_failed);
  t.last_verified = last_verified;
  t.last_failed = last_failed;
  t.last_failure = why;
  return t;
}

TEST(JournalEntry, RecomputeSumsCountsAndTakesTheNewestTimes) {
  Entry e;
  e.tallies[kOriginA] = tally(2, 0, 500, 0);
  e.tallies[kOriginB] = tally(1, 1, 300, 400, "red again");
  e.recompute();
  EXPECT_EQ(e.attempts, 4);
  EXPECT_EQ(e.successes, 3);
  EXPECT_EQ(e.failures, 1);
  EXPECT_EQ(e.first_seen, 100);
  EXPECT_EQ(e.last_verified, 500);
  EXPECT_EQ(e.last_failed, 400);
  EXPECT_EQ(e.last_failure, "red again");
  EXPECT_TRUE(e.verified);  // the newest success is newer than the newest failure
}

TEST(JournalEntry, ATieBetweenSuccessAndFailureIsNotVerified) {
  Entry e;
  e.tallies[kOriginA] = tally(1, 0, 700, 0);
  e.tallies[kOriginB] = tally(0, 1, 0, 700, "stale");
  e.recompute();
  EXPECT_FALSE(e.verified);
}

TEST(JournalEntry, MergeTakesTheLargerCountsPerOriginAndIsIdempotent) {
  Entry mine, theirs;
  mine.tallies[kOriginA] = tally(3, 0, 900, 0);
  theirs.tallies[kOriginA] = tally(2, 0, 800, 0);  // an older copy of my own counts
  theirs.tallies[kOriginB] = tally(1, 0, 600, 0);
  mine.recompute();
  theirs.recompute();
  Entry merged = merge_entries(mine, theirs);
  EXPECT_EQ(merged.successes, 4);  // 3 of A (not 3 + 2) and 1 of B
  EXPECT_EQ(merged.tallies.size(), 2u);
  EXPECT_TRUE(same_entry(merge_entries(merged, theirs), merged));
  EXPECT_TRUE(same_entry(merge_entries(merged, mine), merged));
  EXPECT_EQ(merge_entries(theirs, mine).successes, merged.successes);
}

TEST(JournalEntry, MergeKeepsMyFactsAndFillsInOnlyUnknownOnes) {
  Entry mine, theirs;
  mine.duration_ms = 1000;
  theirs.duration_ms = 5;
  theirs.model_calls = 3;
  theirs.cost_usd = 0.25;
  Entry merged = merge_entries(mine, theirs);
  EXPECT_EQ(merged.duration_ms, 1000);
  EXPECT_EQ(merged.model_calls, 3);
  EXPECT_EQ(merged.cost_usd, 0.25);
  EXPECT_FALSE(merged.verify_ms.has_value());
}

TEST(JournalEntry, SavedIsReplaysTimesTheOriginalAndUnknownStaysUnknown) {
  Entry e;
  e.replays = 3;
  e.duration_ms = 2000;
  e.model_calls = 4;
  EXPECT_EQ(e.saved_ms(), 6000);
  EXPECT_EQ(e.saved_model_calls(), 12);
  EXPECT_FALSE(e.saved_cost_usd().has_value());
  e.replays = 0;
  EXPECT_EQ(e.saved_cost_usd(), 0.0);  // nothing replayed: nothing saved, known
}

TEST(JournalEntry, SameTallySeesEveryField) {
  Tally a = tally(1, 0, 10, 0);
  Tally b = a;
  EXPECT_TRUE(same_tally(a, b));
  b.last_failure = "x";
  EXPECT_FALSE(same_tally(a, b));
}

TEST(JournalEntry, PatchHashIsSha256Hex) {
  EXPECT_EQ(patch_hash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_TRUE(is_lower_hex(patch_hash("diff"), 64));
}

TEST(JournalEntry, IsLowerHex) {
  EXPECT_TRUE(is_lower_hex("0123abcdef"));
  EXPECT_TRUE(is_lower_hex(std::string(32, 'f'), 32));
  EXPECT_FALSE(is_lower_hex(std::string(31, 'f'), 32));
  EXPECT_FALSE(is_lower_hex("ABCDEF"));
  EXPECT_FALSE(is_lower_hex("xyz"));
}

}  // namespace
}  // namespace phoenix::journal
