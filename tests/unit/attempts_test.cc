// loop/attempts: the done rule on real commits, and the task's book (the
// same failure twice stops a path; heals count against the task's budget).
#include "loop/attempts.h"

#include <gtest/gtest.h>

#include "config/config.h"
#include "gitx/repo.h"
#include "test_util.h"

namespace phoenix::test {
namespace {

using loop::not_done_why;
using loop::RedFacts;
using loop::Task;
using loop::TaskBook;
using loop::Verdict;

Task task(int index, const std::string& title) {
  Task t;
  t.index = index;
  t.title = title;
  return t;
}

RedFacts red(const std::string& signature, const std::string& type = "unit") {
  RedFacts f;
  f.check = "unit";
  f.failure_type = type;
  f.signal = "exit=1";
  f.signature = signature;
  f.red = {"unit"};
  return f;
}

config::Config cfg_with_unit_budget(int n) {
  config::Config c = config::parse(R"({"checks":[{"id":"unit","kind":"command_exit","target":["true"]}]})", "t");
  c.budgets["unit"] = n;
  return c;
}

class DoneRule : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string repo, start;
  const std::vector<std::string> own{".phoenix/", "incidents/", "TASKS.md"};
  const Task t1 = task(0, "add a feature");

  void SetUp() override {
    repo = init_repo(tmp / "r");
    write(repo, "TASKS.md", "- [ ] add a feature\n");
    write(repo, "src.txt", "one\n");
    start = commit_all(repo, "start");
  }
  std::string why(const std::string& commit) {
    gitx::Repo r = gitx::Repo::open(repo);
    return not_done_why(r, start, commit, own, "TASKS.md", &t1);
  }
};

TEST_F(DoneRule, TheTasksOwnWorkTickedIsDone) {
  write(repo, "src.txt", "two\n");
  write(repo, "TASKS.md", "- [x] add a feature\n");
  EXPECT_EQ(why(commit_all(repo, "work")), "");
}

TEST_F(DoneRule, AnEmptyNetChangeIsNotDoneEvenTicked) {
  write(repo, "TASKS.md", "- [x] add a feature\n");
  write(repo, ".phoenix/note", "state\n");  // Phoenix's own paths do not count
  std::string c = commit_all(repo, "tick only");
  EXPECT_NE(why(c).find("nothing of the task's own work"), std::string::npos) << why(c);
}

TEST_F(DoneRule, AChangeThatWasRevertedIsNotDone) {
  write(repo, "src.txt", "two\n");
  commit_all(repo, "attempt");
  write(repo, "src.txt", "one\n");  // a revert of the attempt, ticked
  write(repo, "TASKS.md", "- [x] add a feature\n");
  std::string c = commit_all(repo, "revert");
  EXPECT_NE(why(c).find("nothing of the task's own work"), std::string::npos) << why(c);
}

TEST_F(DoneRule, ARevertedTickIsNotDone) {
  write(repo, "src.txt", "two\n");
  write(repo, "TASKS.md", "- [x] add a feature\n");
  commit_all(repo, "work");
  write(repo, "TASKS.md", "- [ ] add a feature\n");  // a heal took the tick back out
  std::string c = commit_all(repo, "untick");
  EXPECT_EQ(why(c), "the task is not ticked in TASKS.md");
}

TEST(TaskBook, TheSameSignatureTwiceStopsThePathAcrossIterations) {
  config::Config c = cfg_with_unit_budget(10);
  TaskBook book(c);
  Task t = task(1, "break it");
  EXPECT_EQ(book.red_iteration(t, red("aaaa"), "refs/phoenix/attempts/l/t2/1", "diff1"), Verdict::kGoOn);
  book.heal_spent(t, {{0, "harness", "red: exit=1", "", ""}}, "");
  EXPECT_EQ(book.red_iteration(t, red("bbbb"), "refs/phoenix/attempts/l/t2/2", "diff2"), Verdict::kGoOn);
  EXPECT_EQ(book.red_iteration(t, red("aaaa"), "refs/phoenix/attempts/l/t2/3", "diff3"), Verdict::kSameSignature);
  const loop::TaskRecord* r = book.find("t2");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->attempts, 4);
  EXPECT_EQ(r->last_diff, "diff3") << "the agent's own last diff, for the note";
  ASSERT_EQ(r->history.size(), 4u);
  EXPECT_EQ(r->history[1].who, "harness");
  EXPECT_EQ(r->history[3].ref, "refs/phoenix/attempts/l/t2/3");
  EXPECT_NE(loop::verdict_why(Verdict::kSameSignature, *r).find("the same failure again"), std::string::npos);
  // Another task's signatures are its own.
  EXPECT_EQ(book.red_iteration(task(2, "other"), red("aaaa"), "", ""), Verdict::kGoOn);
}

TEST(TaskBook, HealAttemptsCountAgainstTheTasksBudgetHealedOrNot) {
  config::Config c = cfg_with_unit_budget(3);
  TaskBook book(c);
  Task t = task(0, "t");
  EXPECT_EQ(book.left(t), 0) << "no budget before a failure names its type";
  EXPECT_EQ(book.red_iteration(t, red("s1"), "", ""), Verdict::kGoOn);
  EXPECT_EQ(book.left(t), 2);
  book.heal_spent(t, {}, "harness");  // healed at its first attempt: one spent all the same
  EXPECT_EQ(book.left(t), 1);
  EXPECT_EQ(book.state_of("t1")["retry_count"], 2);
  book.heal_spent(t, {{0, "harness", "red", "", ""}}, "");
  EXPECT_EQ(book.after_heal(t), Verdict::kBudgetSpent);
  EXPECT_EQ(book.red_iteration(t, red("s2"), "", ""), Verdict::kBudgetSpent);
}

TEST(TaskBook, TheBudgetIsTheFailureTypes) {
  config::Config c = cfg_with_unit_budget(3);
  c.budgets["build"] = 1;
  TaskBook book(c);
  EXPECT_EQ(book.red_iteration(task(0, "t"), red("s", "build"), "", ""), Verdict::kBudgetSpent);
}

TEST(AttemptRef, NamesTheLoopTheTaskAndTheRun) {
  EXPECT_EQ(loop::attempt_ref("loop-20261204", "t2", 3), "refs/phoenix/attempts/loop-20261204/t2/3");
  EXPECT_TRUE(loop::changes_outside({"src/a.c", "TASKS.md"}, {"TASKS.md", ".phoenix/"}));
  EXPECT_FALSE(loop::changes_outside({".phoenix/x", "TASKS.md"}, {"TASKS.md", ".phoenix/"}));
}

}  // namespace
}  // namespace phoenix::test
