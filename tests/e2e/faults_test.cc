// The faults an unattended night meets besides a kill, end to end with the
// built binaries: a write that fails with ENOSPC or EIO at every point
// Phoenix writes (util/fault.h's PHOENIX_FAULT=<point>:enospc|eio), a real
// tmpfs that fills up, a .git/index.lock someone else holds, a read-only
// work tree / .git / .phoenix, and a wall clock stepped by two hours under
// phoenix-loop. After each: one line saying which file and why, the
// documented exit code, and the checks of crash_fixture.h after `phoenix
// recover`.
#include <errno.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>
#include <tuple>

#include "e2e/crash_fixture.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

// This test process in a mount namespace of its own (root only), so the
// mounts it makes are nobody else's and go with it; "" when it is, else why
// not. ctest runs every test in a process of its own.
std::string private_mounts() {
  static const std::string why = []() -> std::string {
    if (::geteuid() != 0) return "not root: mounting a tmpfs or a read-only bind mount needs root";
    if (::unshare(CLONE_NEWNS) != 0) return std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return std::string("mount --make-rprivate /: ") + std::strerror(errno);
    return "";
  }();
  return why;
}

// `dir` read-only for everyone, root included: a read-only bind mount of
// itself (as root) or its write bits taken away (as anyone else, whom the
// bits bind). Undone by the destructor.
class ReadOnly {
 public:
  explicit ReadOnly(std::string dir) : dir_(std::move(dir)) {
    if (::geteuid() != 0) {
      fs::permissions(dir_, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                      fs::perm_options::remove);
      ok_ = true;
      return;
    }
    if (!private_mounts().empty()) return;
    ok_ = ::mount(dir_.c_str(), dir_.c_str(), nullptr, MS_BIND, nullptr) == 0 &&
          ::mount(nullptr, dir_.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0;
    mounted_ = ok_;
  }
  ~ReadOnly() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    else if (ok_) fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::add);
  }
  bool ok() const { return ok_; }

 private:
  std::string dir_;
  bool ok_ = false;
  bool mounted_ = false;
};

// The lines of `out` that say `needle`.
std::vector<std::string> lines_with(const std::string& out, const std::string& needle) {
  std::vector<std::string> found;
  for (const auto& l : util::split_lines(out))
    if (l.find(needle) != std::string::npos) found.push_back(l);
  return found;
}

bool says_cause(const std::string& line, const std::string& mode) {
  // The system's words, or SQLite's for the journal.
  if (mode == "enospc")
    return line.find("No space left on device") != std::string::npos ||
           line.find("database or disk is full") != std::string::npos;
  return line.find("Input/output error") != std::string::npos || line.find("disk I/O error") != std::string::npos;
}

class Faults : public CrashFixture {
 protected:
  CliRun loop(std::vector<std::string> args, const std::vector<std::pair<std::string, std::string>>& env = {},
              double timeout_s = 120) {
#ifdef PHOENIX_LOOP_BIN
    args.insert(args.begin(), PHOENIX_LOOP_BIN);
    auto r = run(args, repo, env, timeout_s);
    return {r.exit_code, r.output};
#else
    (void)args, (void)env, (void)timeout_s;
    return {-1, "phoenix-loop is not built"};
#endif
  }

  Json loop_state() { return Json::parse(read(repo + "/.phoenix/loop-state.json")); }

  // The one line that says what failed: exactly one line of the output
  // names the cause, and it names the file too.
  void expect_one_line(const CliRun& r, const std::string& mode, const std::string& file) {
    std::vector<std::string> said;
    for (const auto& l : util::split_lines(r.out))
      if (says_cause(l, mode)) said.push_back(l);
    ASSERT_EQ(said.size(), 1u) << r.out;
    EXPECT_NE(said[0].find(file), std::string::npos) << said[0];
  }

  // The next phoenix-loop carries on to the end; the user's checkout was
  // never touched.
  void expect_loop_finishes(const std::vector<std::string>& args) {
    CliRun again = loop(args);
    EXPECT_EQ(again.code, 0) << again.out;
    EXPECT_EQ(git(repo, {"show", "phoenix/loop-faults:TASKS.md"}), "- [x] first task\n- [x] second task\n");
    EXPECT_EQ(loop_state()["phase"], "complete");
    EXPECT_EQ(tracked_state(), before);
    expect_consistent("after the loop finished");
  }
};

// ---------------------------------------------------------------------------
// ENOSPC and EIO at every point Phoenix writes.

enum class Scenario {
  kHealing,         // phoenix run, the harness heals
  kJournalHealing,  // phoenix run, journal then harness: the journal records the heal
  kEscalating,      // phoenix run, the fix does not work: incident, rollback
  kLoop,            // phoenix-loop over two tasks
  kSnapshot,        // phoenix snapshot
};

struct Point {
  const char* name;   // the fault point
  const char* fault;  // PHOENIX_FAULT without the mode (the n-th hit where it matters)
  Scenario scenario;
  int code;          // the exit code
  const char* file;  // what the error line names (a part of the path)
};

const Point kPoints[] = {
    // The fourth trace line is written while the harness's proposal is applied.
    {"trace_append", "trace-append@4", Scenario::kHealing, 1, "/.phoenix/trace.jsonl"},
    // The journal is a cache of measured outcomes: the verified heal stands
    // (committed, exit 0) and the journal says on one line that it was not
    // recorded. The first transaction makes the schema; the second records.
    {"journal_write", "journal-write@2", Scenario::kJournalHealing, 0, "/.phoenix/journal.sqlite"},
    {"checkpoint_commit", "checkpoint-commit", Scenario::kHealing, 1, "/.git/objects"},
    {"heal_commit", "heal-commit", Scenario::kHealing, 1, "/.git/objects"},
    {"sandbox_write", "sandbox-write", Scenario::kHealing, 1, "/sandbox-"},
    // No note, no rollback (invariant 10).
    {"incident_write", "incident-write", Scenario::kEscalating, 1, "/incidents/"},
    {"escalated_flag", "escalated-flag", Scenario::kEscalating, 1, "/.phoenix/ESCALATED"},
    // The third state written: the first task's agent is running.
    {"state_write", "state-write@3", Scenario::kLoop, 1, "/.phoenix/loop-state.json"},
    {"worktree_add", "worktree-add", Scenario::kLoop, 1, "/worktrees/loop-faults"},
    {"snapshot_write", "snapshot-write", Scenario::kSnapshot, 1, "/.phoenix/snapshots/"},
};

// gtest names a case by its point, not by the bytes of the struct.
void PrintTo(const Point& p, std::ostream* os) { *os << p.name; }

class WriteFault : public Faults, public ::testing::WithParamInterface<std::tuple<Point, const char*>> {};

TEST_P(WriteFault, OneLineExitCodeNothingLostConsistentAfterRecover) {
  if (!kFaultPoints) GTEST_SKIP() << "fault points not compiled in: configure with -DPHOENIX_FAULT_POINTS=ON";
  const Point& pt = std::get<0>(GetParam());
  const std::string mode = std::get<1>(GetParam());
  const std::vector<std::pair<std::string, std::string>> env{{"PHOENIX_FAULT", std::string(pt.fault) + ":" + mode}};
  switch (pt.scenario) {
    case Scenario::kHealing: configure_healing(); break;
    case Scenario::kJournalHealing: configure_healing({"journal", "harness"}); break;
    case Scenario::kEscalating: configure_escalating(); break;
    case Scenario::kLoop: configure_loop(); break;
    case Scenario::kSnapshot: configure_healing(); break;
  }
  // The user's untracked notes survive whatever happens.
  write(repo, "notes.txt", "my untracked notes\n");
  before = tracked_state();

  if (pt.scenario == Scenario::kLoop) {
#ifndef PHOENIX_LOOP_BIN
    GTEST_SKIP() << "phoenix-loop is not built";
#endif
    CliRun r = loop({"--branch", "phoenix/loop-faults"}, env);
    EXPECT_EQ(r.code, pt.code) << r.out;
    expect_one_line(r, mode, pt.file);
    // Pollers still read a whole state file: the old copy stays when the
    // new one cannot be written.
    if (util::path_exists(repo + "/.phoenix/loop-state.json")) {
      Json st = loop_state();
      EXPECT_TRUE(st.contains("phase")) << st.dump();
    }
    recover();
    expect_consistent("after recover");
    expect_loop_finishes(std::string(pt.name) == "worktree_add"
                             ? std::vector<std::string>{"--branch", "phoenix/loop-faults"}
                             : std::vector<std::string>{"--resume"});
    return;
  }
  if (pt.scenario == Scenario::kSnapshot) {
    Json ok = {{"kind", "regex_in_file"}, {"target", "src/other.sh"}, {"pattern", "A=1"}, {"expect", "present"}};
    CliRun r = run_phoenix(repo, {"snapshot", "src", "--check", ok.dump()}, 60, env);
    EXPECT_EQ(r.code, pt.code) << r.out;
    expect_one_line(r, mode, pt.file);
    // No half snapshot: nothing under snapshots/ but what a whole one leaves.
    if (fs::exists(repo + "/.phoenix/snapshots"))
      EXPECT_TRUE(fs::is_empty(repo + "/.phoenix/snapshots")) << "a failed snapshot left files behind";
    EXPECT_EQ(tracked_state(), before);
    CliRun again = run_phoenix(repo, {"snapshot", "src", "--check", ok.dump()});
    EXPECT_EQ(again.code, 0) << again.out;
    return;
  }

  CliRun r = run_with_fault(env[0].second);
  EXPECT_EQ(r.code, pt.code) << r.out;
  expect_one_line(r, mode, pt.file);
  if (pt.scenario == Scenario::kEscalating) {
    if (std::string(pt.name) == "incident_write") {
      // Invariant 10: without the note on disk nothing was rolled back.
      EXPECT_NE(r.out.find("not rolled back"), std::string::npos) << r.out;
      EXPECT_FALSE(fs::exists(repo + "/.phoenix/ESCALATED"));
      if (fs::exists(repo + "/incidents"))
        EXPECT_TRUE(fs::is_empty(repo + "/incidents")) << "a half incident note was left";
      EXPECT_NE(read(repo + "/.phoenix/trace.jsonl").find("incident.failed"), std::string::npos);
    } else {
      for (const auto& e : fs::directory_iterator(repo + "/incidents"))
        EXPECT_NE(read(e.path().string()).find("## State: rolled back to"), std::string::npos) << e.path();
    }
  }
  recover();
  expect_consistent("after recover");
  EXPECT_EQ(read(repo + "/notes.txt"), "my untracked notes\n");
  if (pt.code == 0) return;  // the heal went through
  CliRun next = run_phoenix(repo, {"run"});
  EXPECT_EQ(next.code, pt.scenario == Scenario::kEscalating ? 2 : 0) << next.out;
  expect_consistent("after the next run");
}

INSTANTIATE_TEST_SUITE_P(EveryPoint, WriteFault,
                         ::testing::Combine(::testing::ValuesIn(kPoints), ::testing::Values("enospc", "eio")),
                         [](const ::testing::TestParamInfo<WriteFault::ParamType>& info) {
                           return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param);
                         });

// ---------------------------------------------------------------------------
// A real full disk: a small tmpfs holding the repository, filled up by the
// agent itself in the middle of the work.

class DiskFull : public Faults {
 protected:
  void SetUp() override {
    why_not = private_mounts();
    if (!why_not.empty()) return;
    Faults::SetUp();
    disk = tmp / "disk";
    fs::create_directories(disk);
    if (::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=8m") != 0) {
      why_not = std::string("mount tmpfs: ") + std::strerror(errno);
      return;
    }
    mounted = true;
    // Phoenix's trees for this repository in a folder of the test's own:
    // in the shared one, another process (outside this mount namespace,
    // where the tmpfs does not exist) would take the repository for gone
    // and prune its trees.
    ::setenv("PHOENIX_TREES_DIR", (tmp / "trees").c_str(), 1);
    fs::copy(repo, disk + "/repo", fs::copy_options::recursive);
    repo = disk + "/repo";
  }
  void TearDown() override {
    if (mounted) ::umount2(disk.c_str(), MNT_DETACH);
    ::unsetenv("PHOENIX_TREES_DIR");
    Faults::TearDown();
  }
  // An agent that fills the disk, then does `then` (a shell command).
  Json filling_agent(const std::string& then) {
    return {{"command", {"sh", "-c", "head -c 100000000 /dev/zero > '" + disk + "/filler' 2>/dev/null; " + then}},
            {"timeout_s", 60}};
  }

  std::string why_not, disk;
  bool mounted = false;
};

TEST_F(DiskFull, HealingRunOnARepositoryThatFillsUp) {
  if (!why_not.empty()) GTEST_SKIP() << why_not;
  configure_healing();
  Json cfg = Json::parse(read(repo + "/phoenix.json"));
  cfg["harness"] = filling_agent("sed -i 's/LIMIT=11/LIMIT=10/' src/conf.sh");
  write(repo, "phoenix.json", cfg.dump(2));
  head = commit_all(repo, "a filling agent");
  write(repo, "notes.txt", "my untracked notes\n");
  before = tracked_state();
  commits_before = all_commits();

  CliRun r = run_phoenix(repo, {"run"});
  EXPECT_EQ(r.code, 1) << r.out;
  std::vector<std::string> errors = lines_with(r.out, "error:");
  ASSERT_EQ(errors.size(), 1u) << r.out;
  EXPECT_TRUE(says_cause(errors[0], "enospc")) << errors[0];
  EXPECT_EQ(read(repo + "/notes.txt"), "my untracked notes\n");

  fs::remove(disk + "/filler");
  recover();
  expect_consistent("after recover with room again");
  // With a well-behaved agent again, the next run heals.
  cfg["harness"] = {{"command", {"sh", "-c", "sed -i 's/LIMIT=11/LIMIT=10/' src/conf.sh"}}, {"timeout_s", 60}};
  write(repo, "phoenix.json", cfg.dump(2));
  git(repo, {"commit", "-qam", "a well-behaved agent"});
  commits_before = all_commits();
  CliRun next = run_phoenix(repo, {"run"});
  EXPECT_EQ(next.code, 0) << next.out;
  EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=10\n");
}

TEST_F(DiskFull, LoopOnARepositoryThatFillsUp) {
  if (!why_not.empty()) GTEST_SKIP() << why_not;
#ifndef PHOENIX_LOOP_BIN
  GTEST_SKIP() << "phoenix-loop is not built";
#endif
  configure_loop("append work.txt 'x\\n'", {{"harness", filling_agent("echo x >> work.txt")}});
  CliRun r = loop({"--branch", "phoenix/loop-faults"});
  EXPECT_EQ(r.code, 1) << r.out;
  std::vector<std::string> errors = lines_with(r.out, "error:");
  ASSERT_EQ(errors.size(), 1u) << r.out;
  EXPECT_TRUE(says_cause(errors[0], "enospc")) << errors[0];
  // The state file is whole: the last copy that could be written.
  EXPECT_TRUE(loop_state().contains("phase"));

  fs::remove(disk + "/filler");
  recover();
  expect_consistent("after recover with room again");
  EXPECT_EQ(tracked_state(), before);
  // The loop's own agent keeps filling the disk; the night is over for it.
  // A person frees space and resumes with an agent that does not.
  Json cfg = Json::parse(read(repo + "/phoenix.json"));
  cfg["harness"] = {{"command", {"sh", "-c", "echo x >> work.txt"}}, {"timeout_s", 60}};
  write(repo, "phoenix.json", cfg.dump(2));
  git(repo, {"commit", "-qam", "a well-behaved agent"});
  before = tracked_state();
  commits_before = all_commits();
  expect_loop_finishes({"--resume"});
}

// ---------------------------------------------------------------------------
// A busy .git/index.lock: waited for, never removed.

TEST_F(Faults, IndexLockReleasedAfterASecondTheRunCarriesOn) {
  configure_healing();
  Json cfg = Json::parse(read(repo + "/phoenix.json"));
  cfg["git"] = {{"lock_wait_s", 60}};
  write(repo, "phoenix.json", cfg.dump(2));
  head = commit_all(repo, "wait for locks");
  commits_before = all_commits();
  const std::string lock = repo + "/.git/index.lock";
  write(repo, ".git/index.lock", "");
  // Someone else's lock, held from before the run until a second after
  // Phoenix starts applying its fix (the trace says APPLYING first).
  std::atomic<bool> done{false};
  std::atomic<bool> released_while_applying{false};
  std::thread holder([&] {
    for (int i = 0; i < 6000 && !done; ++i) {
      std::error_code ec;
      if (fs::exists(repo + "/.phoenix/trace.jsonl", ec) &&
          read(repo + "/.phoenix/trace.jsonl").find("\"APPLYING\"") != std::string::npos) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        released_while_applying = !done;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    fs::remove(lock);
  });
  CliRun r = run_phoenix(repo, {"run"});
  done = true;
  holder.join();
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(released_while_applying) << "the run ended while the lock was held:\n" << r.out;
  EXPECT_EQ(read(repo + "/src/conf.sh"), "LIMIT=10\n");
  expect_consistent("after the heal");
}

TEST_F(Faults, IndexLockNeverReleasedFailsCleanlyNamingItsHolder) {
  configure_healing();
  Json cfg = Json::parse(read(repo + "/phoenix.json"));
  cfg["git"] = {{"lock_wait_s", 1}};
  write(repo, "phoenix.json", cfg.dump(2));
  head = commit_all(repo, "wait a second for locks");
  before = tracked_state();
  commits_before = all_commits();
  const std::string lock = repo + "/.git/index.lock";
  util::ProcessOptions po;
  po.argv = {"sh", "-c", "exec 9>>\"$0\"; exec sleep 120", lock};
  po.timeout_s = 120;
  util::Subprocess holder(po);
  for (int i = 0; i < 500 && !fs::exists(lock); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(lock));

  CliRun r = run_phoenix(repo, {"run"});
  EXPECT_EQ(r.code, 1) << r.out;
  std::vector<std::string> errors = lines_with(r.out, "error:");
  ASSERT_EQ(errors.size(), 1u) << r.out;
  EXPECT_NE(errors[0].find(lock + " is held by pid"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("(sleep)"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("git.lock_wait_s"), std::string::npos) << errors[0];
  EXPECT_TRUE(fs::exists(lock)) << "Phoenix removed a lock it did not take";
  EXPECT_EQ(tracked_state(), before);

  ::kill(static_cast<pid_t>(holder.pid()), SIGKILL);
  holder.wait();
  fs::remove(lock);
  recover();
  expect_consistent("after recover");
  CliRun next = run_phoenix(repo, {"run"});
  EXPECT_EQ(next.code, 0) << next.out;
}

// The same for a ref's lock, through gitx itself.
TEST(GitLockWait, ARefLockHeldBrieflyIsWaitedForOneNeverReleasedIsNamedAndKept) {
  ScopedTempDir tmp;
  const std::string repo = init_repo(tmp / "repo");
  write(repo, "a.txt", "a\n");
  const std::string head = commit_all(repo, "initial");
  gitx::Repo r = gitx::Repo::open(repo);
  const std::string lock = repo + "/.git/refs/phoenix/known-good.lock";
  write(repo, ".git/refs/phoenix/known-good.lock", "");
  gitx::set_lock_wait_s(30);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    fs::remove(lock);
  });
  r.write_ref("refs/phoenix/known-good", head, "test");
  releaser.join();
  EXPECT_EQ(r.read_ref("refs/phoenix/known-good").value_or(""), head);

  write(repo, ".git/refs/phoenix/known-good.lock", "");
  gitx::set_lock_wait_s(0.2);
  try {
    r.write_ref("refs/phoenix/known-good", head, "test");
    ADD_FAILURE() << "wrote a ref whose lock someone else holds";
  } catch (const phoenix::Error& e) {
    EXPECT_NE(std::string(e.what()).find(lock + " is held"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::exists(lock)) << "Phoenix removed a lock it did not take";
  gitx::set_lock_wait_s(5);
}

// ---------------------------------------------------------------------------
// Read-only: said before anything is written; sense and trace verify work.

class ReadOnlyTree : public Faults, public ::testing::WithParamInterface<std::pair<const char*, const char*>> {};

TEST_P(ReadOnlyTree, RunSaysWhichAndWritesNothingSenseAndVerifyWork) {
  configure_healing();
  // A trace and a state folder from an earlier measurement.
  ASSERT_EQ(run_phoenix(repo, {"sense", "unit"}).code, 1);
  const std::string which = GetParam().first;
  const std::string dir = which.empty() ? repo : repo + "/" + which;
  ReadOnly ro(dir);
  if (!ro.ok()) GTEST_SKIP() << "cannot make " << dir << " read-only: " << private_mounts();
  const std::string trace_before = read(repo + "/.phoenix/trace.jsonl");

  CliRun r = run_phoenix(repo, {"run"});
  EXPECT_EQ(r.code, 1) << r.out;
  std::vector<std::string> errors = lines_with(r.out, "error:");
  ASSERT_EQ(errors.size(), 1u) << r.out;
  EXPECT_NE(errors[0].find(std::string(GetParam().second) + " " + dir + " is read-only"), std::string::npos)
      << errors[0];
  EXPECT_EQ(tracked_state(), before);
  EXPECT_EQ(read(repo + "/.phoenix/trace.jsonl"), trace_before) << "something was written";

  CliRun sense = run_phoenix(repo, {"sense", "unit"});
  EXPECT_EQ(sense.code, 1) << sense.out;  // red, measured
  EXPECT_NE(sense.out.find("exit=1"), std::string::npos) << sense.out;
  EXPECT_TRUE(lines_with(sense.out, "error:").empty()) << sense.out;
  CliRun verify = run_phoenix(repo, {"trace", "verify"});
  EXPECT_EQ(verify.code, 0) << verify.out;
}

INSTANTIATE_TEST_SUITE_P(Each, ReadOnlyTree,
                         ::testing::Values(std::make_pair("", "the work tree"),
                                           std::make_pair(".git", "the git directory"),
                                           std::make_pair(".phoenix", "Phoenix's state folder")),
                         [](const ::testing::TestParamInfo<ReadOnlyTree::ParamType>& info) {
                           return std::string(info.param.first).empty()     ? std::string("WorkTree")
                                  : std::string(info.param.first) == ".git" ? std::string("GitDir")
                                                                            : std::string("StateDir");
                         });

// ---------------------------------------------------------------------------
// A wall clock that steps by two hours under phoenix-loop (PHOENIX_FAULT_CLOCK:
// an offset in seconds the agent rewrites while the loop runs).

std::string iso_utc(long long epoch_s) {
  std::time_t t = static_cast<std::time_t>(epoch_s);
  std::tm g{};
  gmtime_r(&t, &g);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &g);
  return buf;
}

long long epoch_now() { return static_cast<long long>(std::time(nullptr)); }

TEST_F(Faults, LoopClockSteppedPastUntilStopsAtOnce) {
  if (!kFaultPoints) GTEST_SKIP() << "fault points not compiled in";
  const std::string clock = tmp / "clock";
  write(tmp.path(), "clock", "0\n");
  // The first agent run steps the clock forward past --until, an hour away.
  configure_loop("write-outside " + clock + " 7200; append work.txt 'x\\n'");
  CliRun r = loop({"--branch", "phoenix/loop-faults", "--until", iso_utc(epoch_now() + 3600)},
                  {{"PHOENIX_FAULT_CLOCK", clock}});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--until"), std::string::npos) << r.out;
  EXPECT_EQ(git(repo, {"show", "phoenix/loop-faults:TASKS.md"}), "- [x] first task\n- [ ] second task\n");
  EXPECT_EQ(loop_state()["phase"], "stopped");
  EXPECT_EQ(run_phoenix(repo, {"trace", "verify"}).code, 0);
}

TEST_F(Faults, LoopClockSteppedBackDoesNotStretchTheNight) {
  if (!kFaultPoints) GTEST_SKIP() << "fault points not compiled in";
  const std::string clock = tmp / "clock";
  // The loop starts 4 s before --until (two hours ahead); the first agent
  // run steps the clock back two hours. Without the monotonic bound the
  // loop would go on to its 100000th iteration.
  write(tmp.path(), "clock", "7200\n");
  configure_loop("write-outside " + clock + " 0; append work.txt 'x\\n'");
  write(repo, "PROMPT.md", "Append a line to work.txt.\n");
  git(repo, {"add", "PROMPT.md"});
  git(repo, {"commit", "-qm", "a prompt"});
  CliRun r = loop({"--branch", "phoenix/loop-faults", "--prompt", "PROMPT.md", "--max-iterations", "100000", "--until",
                   iso_utc(epoch_now() + 7200 + 4)},
                  {{"PHOENIX_FAULT_CLOCK", clock}}, 300);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("--until"), std::string::npos) << r.out;
  EXPECT_EQ(loop_state()["phase"], "stopped");
  // The trace's wall times went backwards; its chain does not care.
  EXPECT_EQ(run_phoenix(repo, {"trace", "verify"}).code, 0);
}

}  // namespace
}  // namespace phoenix::test
