// util/text's cuts at a UTF-8 character boundary, and util/lock's take-over
// of a lock that a dead holder (or something else) left behind.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "test_util.h"
#include "util/atomic_file.h"
#include "util/lock.h"
#include "util/text.h"

namespace phoenix::util {
namespace {

namespace fs = std::filesystem;

// "…" is E2 80 A6, "é" C3 A9, "𝄞" F0 9D 84 9E.
const std::string kText = "path …/worktrees/bisect é 𝄞!";

// Every cut of a text that mixes 1- to 4-byte characters is whole UTF-8:
// to_valid_utf8 (which escapes any broken sequence) leaves it as it is.
TEST(Utf8Cut, EveryHeadAndTailIsWholeCharacters) {
  for (size_t n = 0; n <= kText.size() + 1; ++n) {
    const std::string head(utf8_head(kText, n)), tail(utf8_tail(kText, n));
    EXPECT_LE(head.size(), n);
    EXPECT_LE(tail.size(), n);
    EXPECT_EQ(to_valid_utf8(head), head) << "head of " << n;
    EXPECT_EQ(to_valid_utf8(tail), tail) << "tail of " << n;
    EXPECT_EQ(kText.compare(0, head.size(), head), 0);
    EXPECT_EQ(kText.compare(kText.size() - tail.size(), tail.size(), tail), 0);
    // At most one character (4 bytes) shorter than asked.
    EXPECT_GE(head.size() + 3, std::min(n, kText.size())) << n;
    EXPECT_GE(tail.size() + 3, std::min(n, kText.size())) << n;
  }
}

TEST(Utf8Cut, ACutInsideACharacterLeavesTheWholeCharacterOut) {
  const std::string s = "ab…cd";  // a b E2 80 A6 c d
  EXPECT_EQ(utf8_head(s, 2), "ab");
  EXPECT_EQ(utf8_head(s, 3), "ab");
  EXPECT_EQ(utf8_head(s, 4), "ab");
  EXPECT_EQ(utf8_head(s, 5), "ab…");
  EXPECT_EQ(utf8_tail(s, 4), "cd");
  EXPECT_EQ(utf8_tail(s, 5), "…cd");
  EXPECT_EQ(utf8_head(s, 100), s);
  EXPECT_EQ(utf8_tail(s, 100), s);
  // Bytes that are not UTF-8 at all are cut like any byte.
  const std::string binary(10, '\x80');
  EXPECT_EQ(utf8_head(binary, 6).size(), 6u);
}

// What users saw: a timeline detail of 160 bytes cut inside "…".
TEST(Utf8Cut, ClipKeepsTheMarkAndWholeCharacters) {
  std::string detail = "bisect failed: not a git repository: /home/u/.cache/phoenix/trees/";
  while (detail.size() < 155) detail += "é";
  detail += "…/worktrees/bisect";
  for (size_t max = 150; max <= 170; ++max) {
    const std::string c = clip_utf8(detail, max);
    EXPECT_LE(c.size(), max);
    EXPECT_EQ(to_valid_utf8(c), c) << max;
    EXPECT_TRUE(ends_with(c, "...")) << c;
  }
  EXPECT_EQ(clip_utf8("short", 160), "short");
}

// HeadTail keeps a head and a tail of bytes: neither side of the omission
// mark holds a piece of a character.
TEST(Utf8Cut, HeadTailCutsOnlyBetweenCharacters) {
  std::string out;
  for (int i = 0; i < 400; ++i) out += "é…𝄞";
  for (size_t head = 1; head <= 9; ++head) {
    HeadTail h(head, 7);
    h.append(out);
    const std::string s = h.str();
    EXPECT_EQ(to_valid_utf8(s), s) << "head " << head << ": " << s;
    EXPECT_NE(s.find("bytes omitted"), std::string::npos);
    const std::string last = h.last(5);
    EXPECT_EQ(to_valid_utf8(last), last);
  }
}

// A lock file the last holder left with its pid (it died without blanking
// it) is taken, and the taker says so, naming the file and the pid.
TEST(FileLockTakeOver, AStaleLockOfADeadPidIsTakenOverWithAWarning) {
  test::ScopedTempDir tmp;
  const std::string path = tmp / "locks/bisect.lock";
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ::waitpid(child, nullptr, 0);  // reaped: that pid is not running
  test::write(tmp.path(), "locks/bisect.lock", std::to_string(child) + "\n");
  std::unique_ptr<FileLock> lock = FileLock::try_take(path);
  ASSERT_TRUE(lock);
  EXPECT_NE(lock->taken_over().find(path), std::string::npos) << lock->taken_over();
  EXPECT_NE(lock->taken_over().find("pid " + std::to_string(child) + " is not running"), std::string::npos)
      << lock->taken_over();
  EXPECT_EQ(FileLock::holder_pid(path), ::getpid());
  lock.reset();
  EXPECT_EQ(FileLock::holder_pid(path), 0);
  // Released cleanly: the next taker has nothing to say.
  lock = FileLock::try_take(path);
  ASSERT_TRUE(lock);
  EXPECT_EQ(lock->taken_over(), "");
}

TEST(FileLockTakeOver, AnUnparseableLockFileIsTakenOverWithAWarning) {
  test::ScopedTempDir tmp;
  const std::string path = tmp / "x.lock";
  test::write(tmp.path(), "x.lock", "this is not a pid, and it is longer than a record\n");
  std::unique_ptr<FileLock> lock = FileLock::try_take(path);
  ASSERT_TRUE(lock);
  EXPECT_NE(lock->taken_over().find("took over the lock " + path + ": its record does not parse"), std::string::npos)
      << lock->taken_over();
  lock.reset();
  // Cut back to one record: no warning the next time.
  lock = FileLock::try_take(path);
  ASSERT_TRUE(lock);
  EXPECT_EQ(lock->taken_over(), "");
  EXPECT_LE(fs::file_size(path), 21u);
}

// A lock file naming a pid that is alive but does not hold the lock (a pid
// reused by another program, here `sleep`): taken over, the warning naming
// the file, the pid and what that process is.
TEST(FileLockTakeOver, ALockNamingALiveProcessThatDoesNotHoldItIsTakenOverWithAWarning) {
  test::ScopedTempDir tmp;
  const std::string path = tmp / "locks/hook.lock";
  const pid_t child = ::fork();
  if (child == 0) {
    ::execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(child, 0);
  // Until the exec has happened, its command line is still ours.
  for (int i = 0; i < 200 && read_file("/proc/" + std::to_string(child) + "/cmdline").rfind("sleep", 0) != 0; ++i)
    ::usleep(10000);
  test::write(tmp.path(), "locks/hook.lock", std::to_string(child) + "\n");
  std::unique_ptr<FileLock> lock = FileLock::try_take(path);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(lock);
  EXPECT_NE(lock->taken_over().find("took over the stale lock " + path + ": pid " + std::to_string(child) +
                                    " (sleep 30) is running but does not hold it"),
            std::string::npos)
      << lock->taken_over();
  EXPECT_EQ(FileLock::holder_pid(path), ::getpid());
}

// A lock that is held is not taken: try_take says no at once, and holder()
// names the holder with its command line.
TEST(FileLockTakeOver, AHeldLockIsNotTakenAndItsHolderIsNamed) {
  test::ScopedTempDir tmp;
  const std::string path = tmp / "held.lock";
  FileLock held(path, 0, "the test's lock");
  EXPECT_EQ(FileLock::try_take(path), nullptr);
  const std::string who = FileLock::holder(path);
  EXPECT_EQ(who.rfind("pid " + std::to_string(::getpid()) + " (", 0), 0u) << who;
  EXPECT_NE(who.find("phoenix_tests"), std::string::npos) << who;
}

// phoenix-hook hands the repository lock to the full hook it execs: the
// descriptor kept across exec still holds it in the program exec'd.
TEST(FileLockHandOver, ALockKeptAcrossExecIsHeldByTheProgramExecd) {
  test::ScopedTempDir tmp;
  const std::string path = tmp / "repo.lock";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::dup2(ready[1], 1);
    FileLock lock(path, 0, "the test's lock");
    lock.keep_across_exec();
    ::execl("/bin/sh", "sh", "-c", "echo ready; exec sleep 30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(ready[1]);
  char buf[8] = {};
  ASSERT_GT(::read(ready[0], buf, sizeof buf), 0);
  ::close(ready[0]);
  EXPECT_EQ(FileLock::try_take(path), nullptr) << "the program exec'd holds it";
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_NE(FileLock::try_take(path), nullptr) << "free once it ends";
}

TEST(FileLockHandOver, AdoptTakesOnlyADescriptorThatHoldsThatLock) {
  test::ScopedTempDir tmp;
  const std::string path = tmp / "repo.lock";
  auto kept = std::make_unique<FileLock>(path, 0, "the test's lock");
  const int fd = kept->keep_across_exec();
  kept.reset();  // lets go of the descriptor without unlocking
  EXPECT_EQ(FileLock::try_take(path), nullptr);
  // A descriptor on another file, or one that is not open, is not adopted.
  write_file_atomic(tmp / "other", "x");
  const int other = ::open((tmp / "other").c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(FileLock::adopt(path, other), nullptr);
  ::close(other);
  EXPECT_EQ(FileLock::adopt(path, 987), nullptr);
  std::unique_ptr<FileLock> adopted = FileLock::adopt(path, fd);
  ASSERT_NE(adopted, nullptr);
  EXPECT_EQ(FileLock::holder_pid(path), ::getpid());
  EXPECT_EQ(FileLock::try_take(path), nullptr);
  adopted.reset();
  EXPECT_NE(FileLock::try_take(path), nullptr);
}

}  // namespace
}  // namespace phoenix::util
