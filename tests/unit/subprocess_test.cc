#include "util/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string_view>
#include <thread>

#include "test_util.h"
#include "util/atomic_file.h"

namespace phoenix::util {
namespace {

TEST(Subprocess, ExitCodeAndOutput) {
  auto r = run_process({.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"}});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.output.find("out"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
  EXPECT_FALSE(r.timed_out);
}

TEST(Subprocess, MissingExecutableIsReportedNotThrown) {
  auto r = run_process({.argv = {"phoenix-no-such-program-xyz"}});
  EXPECT_TRUE(r.not_found);
  EXPECT_EQ(r.exit_code, 127);
  auto r2 = run_process({.argv = {"./no/such/path"}});
  EXPECT_TRUE(r2.not_found);
}

TEST(Subprocess, NotExecutable) {
  test::ScopedTempDir tmp;
  test::write(tmp.path(), "script.sh", "#!/bin/sh\nexit 0\n");
  auto r = run_process({.argv = {tmp / "script.sh"}});
  EXPECT_TRUE(r.not_executable);
  EXPECT_EQ(r.exit_code, 126);
}

// Executable bits but no #! line: only execve itself can refuse it
// (ENOEXEC), after the child was started; the refusal reaches the parent.
TEST(Subprocess, ExecRefusedAfterStartIsNotExecutable) {
  test::ScopedTempDir tmp;
  test::write(tmp.path(), "plain.sh", "echo no interpreter line\n");
  std::filesystem::permissions(tmp / "plain.sh", std::filesystem::perms::owner_all);
  auto r = run_process({.argv = {tmp / "plain.sh"}});
  EXPECT_TRUE(r.not_executable);
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_EQ(r.output, "");
}

// A cancel descriptor that turns readable stops the child's whole group.
TEST(Subprocess, CancelFdStopsTheChild) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ProcessOptions o{.argv = {"sh", "-c", "sleep 600 & sleep 600"}};
  o.cancel_fd = fds[0];
  Subprocess p(o);
  ASSERT_TRUE(p.started());
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  ProcessResult r = p.wait();
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.timed_out);
  // Killed; a reparented one may linger as a zombie until init reaps it.
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(-static_cast<pid_t>(r.pid), 0) == -1;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_TRUE(gone) << "a process of its group survived";
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Subprocess, SignalMapsLikeAShell) {
  auto r = run_process({.argv = {"sh", "-c", "kill -9 $$"}});
  EXPECT_EQ(r.term_signal, 9);
  EXPECT_EQ(r.exit_code, 137);
}

TEST(Subprocess, StdinIsDevNullUnlessGiven) {
  auto r = run_process({.argv = {"cat"}, .timeout_s = 10});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "");
  ProcessOptions o{.argv = {"cat"}};
  o.stdin_data = std::string(300000, 'x');  // larger than a pipe buffer
  auto r2 = run_process(o);
  EXPECT_EQ(r2.output_bytes, 300000u);
}

TEST(Subprocess, TimeoutKillsTheWholeTree) {
  test::ScopedTempDir tmp;
  std::string pidfile = tmp / "grandchild.pid";
  // The grandchild ignores SIGTERM and would run for a minute.
  ProcessOptions o{.argv = {"sh", "-c", "sh -c 'trap \"\" TERM; echo $$ > " + pidfile + "; sleep 60' & sleep 60"}};
  o.timeout_s = 0.5;
  o.kill_grace_s = 0.2;
  auto r = run_process(o);
  EXPECT_TRUE(r.timed_out);
  ASSERT_TRUE(std::filesystem::exists(pidfile));
  long gpid = std::stol(test::read(pidfile));
  // The grandchild is gone (or a zombie reaped by init shortly).
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(static_cast<pid_t>(gpid), 0) != 0;
    if (!gone) usleep(10000);
  }
  EXPECT_TRUE(gone) << "grandchild " << gpid << " survived the timeout";
}

TEST(Subprocess, KillStraysEndsADaemonThatLeftTheGroup) {
  test::ScopedTempDir tmp;
  std::string pidfile = tmp / "daemon.pid";
  // setsid: a session and process group of its own, which killing the
  // child's group does not reach; the child returns once it has started.
  ProcessOptions o{.argv = {"sh", "-c",
                            "setsid sh -c 'echo $$ > " + pidfile + ".tmp; mv " + pidfile + ".tmp " + pidfile +
                                "; exec sleep 60' </dev/null >/dev/null 2>&1 & while [ ! -s " + pidfile +
                                " ]; do sleep 0.01; done"}};
  o.timeout_s = 20;
  o.kill_strays = true;
  auto r = run_process(o);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(std::filesystem::exists(pidfile));
  const pid_t dpid = static_cast<pid_t>(std::stol(test::read(pidfile)));
  EXPECT_GE(r.strays_killed, 1u);
  // Gone, or a zombie until whoever adopted it reaps it.
  auto ended = [&] {
    std::string stat = test::read("/proc/" + std::to_string(dpid) + "/stat");
    size_t close = stat.rfind(')');
    return ::kill(dpid, 0) != 0 || (close != std::string::npos && stat.compare(close, 3, ") Z") == 0);
  };
  bool gone = false;
  for (int i = 0; i < 200 && !(gone = ended()); ++i) usleep(10000);
  EXPECT_TRUE(gone) << "daemon " << dpid << " survived its parent's end";
  if (!gone) ::kill(dpid, SIGKILL);
}

TEST(Subprocess, HugeOutputStaysBounded) {
  // 256 MiB through the pipe; only head and tail are kept.
  ProcessOptions o{.argv = {"sh", "-c", "head -c 268435456 /dev/zero | tr '\\0' 'a'; echo END"}};
  o.head_bytes = 1024;
  o.tail_bytes = 4096;
  auto r = run_process(o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output_bytes, 268435456u + 4);
  EXPECT_TRUE(r.output_truncated);
  EXPECT_LT(r.output.size(), 8192u);
  EXPECT_NE(r.output.find("END"), std::string::npos);
}

// run_process starts no reader thread: the waiting thread reads the pipe,
// also while the child still runs (more than a pipe's buffer, then a pause:
// a child left blocked on a full pipe would never get to "done"). A
// Subprocess, which its owner may not wait on for a while, reads on a
// thread of its own.
TEST(Subprocess, RunProcessReadsOnTheCallingThreadASubprocessOnItsOwn) {
  const std::thread::id caller = std::this_thread::get_id();
  std::set<std::thread::id> readers;
  size_t bytes = 0;
  ProcessOptions o{.argv = {"sh", "-c", "head -c 200000 /dev/zero; sleep 0.2; echo done"}};
  o.timeout_s = 30;
  o.on_output = [&](std::string_view chunk) {
    readers.insert(std::this_thread::get_id());
    bytes += chunk.size();
  };
  ProcessResult r = run_process(o);
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 200);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(bytes, 200005u);
  EXPECT_EQ(r.output_bytes, 200005u);
  EXPECT_EQ(r.output.substr(r.output.size() - 5), "done\n");
  EXPECT_EQ(readers, std::set<std::thread::id>{caller});

  readers.clear();
  bytes = 0;
  Subprocess p(o);
  ProcessResult r2 = p.wait();
  EXPECT_EQ(r2.exit_code, 0);
  EXPECT_EQ(bytes, 200005u);
  ASSERT_EQ(readers.size(), 1u);
  EXPECT_EQ(readers.count(caller), 0u) << "a Subprocess read its output on the thread that waited";
}

TEST(Subprocess, EnvironmentAndCwd) {
  test::ScopedTempDir tmp;
  ProcessOptions o{.argv = {"sh", "-c", "pwd; echo $PHX_X"}};
  o.cwd = tmp.path();
  o.env["PHX_X"] = "hello";
  auto r = run_process(o);
  EXPECT_NE(r.output.find(tmp.path()), std::string::npos);
  EXPECT_NE(r.output.find("hello"), std::string::npos);
}

}  // namespace
}  // namespace phoenix::util
