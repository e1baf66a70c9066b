// End-to-end: the thin pre-push binary phoenix-hook (src/cli/main_phoenix_hook.cc)
// against `phoenix hook run pre-push`, with the built binaries on real
// repositories: same exit code, same output, in every case; and it runs the
// green case itself and hands every other case over to the full hook.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <thread>

#include "test_util.h"
#include "util/lock.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;

const char* kConfig = R"({ "checks": [{ "id": "state", "kind": "command_exit",
    "target": ["sh", "-c", "grep -q GOOD state.txt || { echo 'FAIL state_test: want GOOD'; exit 1; }"] }] })";

std::string thin_bin() { return (fs::path(phoenix_bin()).parent_path() / "phoenix-hook").string(); }

util::ProcessResult run_with_stdin(std::vector<std::string> argv, const std::string& cwd, const std::string& in,
                                   std::map<std::string, std::string> env = {}) {
  util::ProcessOptions o;
  o.argv = std::move(argv);
  o.cwd = cwd;
  o.stdin_data = in;
  o.env = std::move(env);
  if (!o.env.count("PHOENIX_SKIP")) o.unset_env = {"PHOENIX_SKIP"};
  o.timeout_s = 120;
  return util::run_process(o);
}

// Durations differ from run to run; nothing else may.
std::string normalized(const std::string& out) {
  return std::regex_replace(out, std::regex(R"(\(\d+ ms\))"), "(N ms)");
}

class HookThin : public ::testing::Test {
 protected:
  void SetUp() override {
    repo = init_repo(tmp / "repo");
    write(repo, "state.txt", "GOOD\n");
    write(repo, ".gitignore", ".phoenix/\n");
    write(repo, "phoenix.json", kConfig);
    head = commit_all(repo, "initial");
  }
  std::string line(const std::string& sha, const std::string& ref = "refs/heads/main") {
    return ref + " " + sha + " " + ref + " " + std::string(40, '0') + "\n";
  }
  // The thin binary and the full hook on the same input give the same
  // verdict and the same words; returns the thin one's result. Both measure
  // (the second would otherwise be answered by the measurement store).
  util::ProcessResult same(const std::string& in, std::map<std::string, std::string> env = {}) {
    env.emplace("PHOENIX_NO_CACHE", "1");
    auto thin = run_with_stdin({thin_bin(), "pre-push", "origin", "/nowhere.git"}, repo, in, env);
    auto full = run_with_stdin({phoenix_bin(), "hook", "run", "pre-push", "origin", "/nowhere.git"}, repo, in, env);
    EXPECT_EQ(thin.exit_code, full.exit_code) << "thin:\n" << thin.output << "full:\n" << full.output;
    EXPECT_EQ(normalized(thin.output), normalized(full.output));
    return thin;
  }
  // phoenix-hook copied beside a `phoenix` that only says it ran: whether
  // the thin binary handed over, and with which arguments and stdin.
  util::ProcessResult with_stand_in(const std::string& in, std::map<std::string, std::string> env = {},
                                    std::vector<std::string> args = {"pre-push", "origin", "/nowhere.git"},
                                    const std::string& cwd = "") {
    args.insert(args.begin(), stand_in());
    return run_with_stdin(args, cwd.empty() ? repo : cwd, in, env);
  }
  // phoenix-hook's copy beside the stand-in phoenix.
  std::string stand_in() {
    fs::create_directories(tmp / "bin");
    std::string copy = tmp / "bin/phoenix-hook";
    if (!fs::exists(copy)) fs::copy_file(thin_bin(), copy);
    write(tmp.path(), "bin/phoenix", "#!/bin/sh\necho \"FULL HOOK: $*\"\ncat\nexit 99\n");
    ::chmod((tmp / "bin/phoenix").c_str(), 0755);
    return copy;
  }

  ScopedTempDir tmp;
  std::string repo, head;
};

TEST_F(HookThin, GreenHeadIsRunByTheThinBinaryItself) {
  auto r = same(line(head));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: ok   state  exit=0"), std::string::npos) << r.output;
  auto alone = with_stand_in(line(head));
  EXPECT_EQ(alone.exit_code, 0) << alone.output;
  EXPECT_EQ(alone.output.find("FULL HOOK"), std::string::npos) << alone.output;
}

TEST_F(HookThin, RedHeadIsHandedOverWithArgvAndStdin) {
  write(repo, "state.txt", "BAD\n");
  std::string red = commit_all(repo, "break");
  auto r = same(line(red));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("phoenix: push blocked: state is red in main@" + red.substr(0, 12)), std::string::npos)
      << r.output;
  auto h = with_stand_in(line(red));
  EXPECT_EQ(h.exit_code, 99) << h.output;
  EXPECT_EQ(h.output, "FULL HOOK: hook run pre-push origin /nowhere.git\n" + line(red));
}

TEST_F(HookThin, ACommitThatIsNotHeadIsHandedOver) {
  write(repo, "state.txt", "GOOD 2\n");
  commit_all(repo, "second");
  auto r = same(line(head, "refs/heads/old"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(in the hook's worktree)"), std::string::npos) << r.output;
  EXPECT_EQ(with_stand_in(line(head, "refs/heads/old")).exit_code, 99);
}

TEST_F(HookThin, ADirtyTreeIsHandedOver) {
  write(repo, "state.txt", "BAD but not committed\n");
  auto r = same(line(head));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(in the hook's worktree)"), std::string::npos) << r.output;
  EXPECT_EQ(with_stand_in(line(head)).exit_code, 99);
}

// git status and the check start together; a dirty tree stops the check
// still running in place. Here the check would sleep for ten minutes in
// the user's (dirty) work tree and returns at once in the hook's worktree,
// where the untracked file is not: only the stop lets the push finish
// before the test's own timeout, and the in-place run's pid is dead.
TEST_F(HookThin, ADirtyTreeStopsTheCheckAlreadyRunningInPlace) {
  const std::string pidfile = tmp / "inplace.pid";
  write(repo, "phoenix.json",
        R"({ "checks": [{ "id": "slow-in-place", "kind": "command_exit",
      "target": ["sh", "-c", "if [ -f untracked.txt ]; then echo $$ > )" +
            pidfile + R"(; exec sleep 600; fi"] }] })");
  head = commit_all(repo, "a check that is slow only in a dirty tree");
  write(repo, "untracked.txt", "not committed\n");
  auto r = run_with_stdin({thin_bin(), "pre-push", "origin", "/nowhere.git"}, repo, line(head));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(in the hook's worktree)"), std::string::npos) << r.output;
  // The in-place run may have been stopped before its shell wrote its pid
  // (or between creating the file and writing it).
  const std::string pid = fs::exists(pidfile) ? util::trim(read(pidfile)) : "";
  if (!pid.empty()) {
    std::string stat = read("/proc/" + pid + "/stat");
    EXPECT_TRUE(stat.empty() || stat.find(") Z ") != std::string::npos) << "the in-place check survived: " << stat;
  }
}

// A clean HEAD: the check started beside git status counts, and runs once.
TEST_F(HookThin, ACleanHeadRunsEachCheckOnceBesideGitStatus) {
  const std::string runs = tmp / "runs.txt";
  write(repo, "phoenix.json",
        R"({ "checks": [{ "id": "counted", "kind": "command_exit",
      "target": ["sh", "-c", "echo run >> )" +
            runs + R"("] }] })");
  head = commit_all(repo, "a check that counts its runs");
  auto r = run_with_stdin({thin_bin(), "pre-push", "origin", "/nowhere.git"}, repo, line(head));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: ok   counted  exit=0"), std::string::npos) << r.output;
  EXPECT_EQ(read(runs), "run\n");
}

// Ctrl-C while a check runs in place blocks the push with 130 instead of
// handing over (the full hook would run the ten-minute check again and
// meet the test's timeout instead).
TEST_F(HookThin, AnInterruptedCheckBlocksThePushWith130) {
  const std::string started = tmp / "started";
  write(repo, "phoenix.json",
        R"({ "checks": [{ "id": "slow", "kind": "command_exit",
      "target": ["sh", "-c", "touch )" +
            started + R"(; exec sleep 600"] }] })");
  head = commit_all(repo, "a slow check");
  util::ProcessOptions o;
  o.argv = {thin_bin(), "pre-push", "origin", "/nowhere.git"};
  o.cwd = repo;
  o.stdin_data = line(head);
  o.unset_env = {"PHOENIX_SKIP"};
  o.timeout_s = 120;
  util::Subprocess hook(o);
  for (int i = 0; i < 400 && !fs::exists(started); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(fs::exists(started)) << "the check never started";
  ::kill(static_cast<pid_t>(hook.pid()), SIGINT);
  auto r = hook.wait();
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_NE(r.output.find("phoenix: interrupted; push blocked"), std::string::npos) << r.output;
}

TEST_F(HookThin, ADeletionIsHandedOver) {
  std::string del = "(delete) " + std::string(40, '0') + " refs/heads/gone " + head + "\n";
  auto r = same(del);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(with_stand_in(del).exit_code, 99);
}

TEST_F(HookThin, PhoenixSkipIsHandedOver) {
  auto r = same(line(head), {{"PHOENIX_SKIP", "1"}});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("PHOENIX_SKIP=1: pre-push checks skipped"), std::string::npos) << r.output;
  EXPECT_EQ(with_stand_in(line(head), {{"PHOENIX_SKIP", "1"}}).exit_code, 99);
}

TEST_F(HookThin, MissingPhoenixJsonIsHandedOver) {
  fs::remove(repo + "/phoenix.json");
  std::string h = commit_all(repo, "no config");
  auto r = same(line(h));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no phoenix.json"), std::string::npos) << r.output;
  EXPECT_EQ(with_stand_in(line(h)).exit_code, 99);
}

TEST_F(HookThin, InvalidPhoenixJsonGivesTheSameErrorAndExit78) {
  write(repo, "phoenix.json", "{\n  \"checks\": [],\n  \"hook\": { \"mode\": \"verfy\" }\n}\n");
  std::string h = commit_all(repo, "broken config");
  auto r = same(line(h));
  EXPECT_EQ(r.exit_code, 78) << r.output;
  EXPECT_NE(r.output.find("hook.mode"), std::string::npos) << r.output;
  EXPECT_EQ(with_stand_in(line(h)).exit_code, 99);
}

TEST_F(HookThin, MalformedStdinGivesTheSameUsageError) {
  auto r = same("refs/heads/main 1234 refs/heads/main\n");
  EXPECT_EQ(r.exit_code, 64) << r.output;
}

TEST_F(HookThin, TheInstalledShimRunsTheThinBinaryAndFallsBackWithoutIt) {
  ASSERT_EQ(run_phoenix(repo, {"hook", "install"}).code, 0);
  std::string shim = read(repo + "/.git/hooks/pre-push");
  EXPECT_NE(shim.find("phoenix-hook"), std::string::npos) << shim;
  // An install whose phoenix has no phoenix-hook beside it (older
  // packages) runs `phoenix hook run pre-push` as before.
  fs::create_directories(tmp / "old");
  std::string old = tmp / "old/phoenix";
  fs::copy_file(phoenix_bin(), old);
  ASSERT_EQ(run({old, "hook", "install"}, repo).exit_code, 0);
  auto r = run_with_stdin({repo + "/.git/hooks/pre-push", "origin", "/nowhere.git"}, repo, line(head));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("phoenix: ok   state  exit=0"), std::string::npos) << r.output;
}

// The reasons phoenix-hook hands a push over (docs/hook.md, "What
// phoenix-hook hands over"), one each, beside those above.

TEST_F(HookThin, AnotherHookNameOrArgumentsAreHandedOver) {
  auto r = with_stand_in(line(head), {}, {"pre-commit"});
  EXPECT_EQ(r.exit_code, 99) << r.output;
  EXPECT_EQ(r.output.find("FULL HOOK: hook run pre-commit\n"), 0u) << r.output;
  EXPECT_EQ(with_stand_in(line(head), {}, {"pre-push", "origin", "/nowhere.git", "extra"}).exit_code, 99);
}

TEST_F(HookThin, AStdinThatIsATerminalIsHandedOver) {
  if (util::find_executable("script").empty()) GTEST_SKIP() << "script(1) is not installed";
  const std::string copy = stand_in();
  // script(1) runs the hook with a terminal as its stdin.
  auto r = run_with_stdin({"script", "-qec", copy + " pre-push origin /nowhere.git", "/dev/null"}, repo, "");
  EXPECT_EQ(r.exit_code, 99) << r.output;
  EXPECT_NE(r.output.find("FULL HOOK: hook run pre-push origin /nowhere.git"), std::string::npos) << r.output;
}

TEST_F(HookThin, OutsideAWorkTreeIsHandedOver) {
  fs::create_directories(tmp / "outside");
  auto r = with_stand_in(line(head), {}, {"pre-push", "origin", "/nowhere.git"}, tmp / "outside");
  EXPECT_EQ(r.exit_code, 99) << r.output;
  EXPECT_EQ(r.output, "FULL HOOK: hook run pre-push origin /nowhere.git\n" + line(head));
}

TEST_F(HookThin, GitThatCannotStartIsHandedOver) {
  auto r = with_stand_in(line(head), {{"PATH", (tmp / "no-git-here").c_str()}});
  EXPECT_EQ(r.exit_code, 99) << r.output;
  EXPECT_NE(r.output.find("FULL HOOK: hook run pre-push"), std::string::npos) << r.output;
}

TEST_F(HookThin, NoChecksOrACheckOfAnotherKindIsHandedOver) {
  write(repo, "phoenix.json", R"({ "checks": [] })");
  std::string h = commit_all(repo, "no checks");
  auto none = same(line(h));
  EXPECT_EQ(none.exit_code, 0) << none.output;
  EXPECT_NE(none.output.find("phoenix.json has no checks"), std::string::npos) << none.output;
  EXPECT_EQ(with_stand_in(line(h)).exit_code, 99);

  write(repo, "phoenix.json",
        R"({ "checks": [{ "id": "good", "kind": "regex_in_file", "target": "state.txt", "pattern": "GOOD",
      "expect": "present" }] })");
  h = commit_all(repo, "a regex check");
  auto regex = same(line(h));
  EXPECT_EQ(regex.exit_code, 0) << regex.output;
  EXPECT_NE(regex.output.find("phoenix: ok   good"), std::string::npos) << regex.output;
  EXPECT_EQ(with_stand_in(line(h)).exit_code, 99);
}

TEST_F(HookThin, AHeldLockIsHandedOver) {
  fs::create_directories(repo + "/.phoenix");
  util::FileLock held(repo + "/.phoenix/lock", 0, "the test");
  auto r = same(line(head));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("another Phoenix run (pid " + std::to_string(::getpid()) + ") holds this repository"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(with_stand_in(line(head)).exit_code, 99);
}

// A remote end that a push from here put there after the install, and that
// no measurement covers, goes to the full hook, which names it; one pushed
// before the install, or fetched, does not.
TEST_F(HookThin, ARemoteEndPushedPastTheHookIsHandedOver) {
  const std::string bare = tmp / "remote.git";
  ASSERT_EQ(run({"git", "init", "-q", "--bare", "-b", "main", bare}).exit_code, 0);
  git(repo, {"remote", "add", "origin", bare});
  git(repo, {"push", "-q", "origin", "main"});  // before the install: not Phoenix's to name
  const auto wait_next_second = [] {
    const auto now = std::chrono::system_clock::now();
    std::this_thread::sleep_until(std::chrono::ceil<std::chrono::seconds>(now) + std::chrono::milliseconds(10));
  };
  wait_next_second();  // the reflog counts whole seconds
  ASSERT_EQ(run_phoenix(repo, {"hook", "install"}).code, 0);
  write(repo, "state.txt", "GOOD 1\n");
  const std::string next = commit_all(repo, "next");
  const std::string before_install = "refs/heads/main " + next + " refs/heads/main " + head + "\n";
  auto quiet = with_stand_in(before_install);
  EXPECT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("FULL HOOK"), std::string::npos) << quiet.output;

  write(repo, "state.txt", "BAD\n");
  const std::string skipped = commit_all(repo, "pushed past the hook");
  ASSERT_EQ(run({"git", "-C", repo, "push", "-q", "--no-verify", "origin", "main"}).exit_code, 0);
  write(repo, "state.txt", "GOOD 2\n");
  const std::string mended = commit_all(repo, "mended");
  const std::string past_hook = "refs/heads/main " + mended + " refs/heads/main " + skipped + "\n";
  EXPECT_EQ(with_stand_in(past_hook).exit_code, 99);
}

// A teammate's commit at the remote end (fetched, then built on) is the
// thin binary's own to decide: the reflog says no push from here put it
// there. (It used to send every such push to the full hook.)
TEST_F(HookThin, ATeammatesCommitAtTheRemoteEndIsDecidedByTheThinBinary) {
  const std::string bare = tmp / "remote.git";
  ASSERT_EQ(run({"git", "init", "-q", "--bare", "-b", "main", bare}).exit_code, 0);
  git(repo, {"remote", "add", "origin", bare});
  git(repo, {"push", "-q", "origin", "main"});
  auto first = with_stand_in(line(head));  // the hook has pushed main
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const std::string mate = tmp / "mate";
  ASSERT_EQ(run({"git", "clone", "-q", bare, mate}).exit_code, 0);
  git(mate, {"config", "user.name", "Mate"});
  git(mate, {"config", "user.email", "mate@example.com"});
  write(mate, "mate.txt", "from a teammate\n");
  const std::string theirs = commit_all(mate, "a teammate's commit");
  git(mate, {"push", "-q", "origin", "main"});
  git(repo, {"pull", "-q", "--ff-only", "origin", "main"});
  write(repo, "state.txt", "GOOD 2\n");
  const std::string mine = commit_all(repo, "mine, on top");
  auto r = with_stand_in("refs/heads/main " + mine + " refs/heads/main " + theirs + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("FULL HOOK"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("phoenix: ok   state  exit=0"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace phoenix::test
