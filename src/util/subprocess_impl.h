// Subprocess::Impl, a started child's state (util/subprocess.h): shared by
// subprocess.cc, which starts it (the one translation unit that includes
// Boost.Process), and subprocess_wait.cc, which reads its output, waits for
// its exit and ends its group. Include from those two only.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::util {

// Whether `p` is a regular file we may execute.
bool is_executable_file(const std::string& p);

struct Subprocess::Impl {
  using Clock = std::chrono::steady_clock;

  ProcessOptions opt;
  ProcessResult res;
  bool started = false;
  bool reaped = false;
  pid_t pid = -1;
  Clock::time_point start;
  int out_fd = -1;
  int in_fd = -1;
  std::thread reader, writer;
  bool inline_io = false;  // no reader thread: await_exit() and finish_io() read out_fd
  bool out_eof = false;
  std::atomic<bool> stop_reading{false};
  std::string run_token_entry;  // "PHOENIX_RUN_TOKEN=<token>" with kill_strays
  std::function<void()> ended;  // a confined child's (ConfinedFolder): once it has ended
  mutable std::mutex mu;
  HeadTail output{16 * 1024, 64 * 1024};

  // The steps of starting the child (the constructor's): the program to
  // exec; the child spawned (subprocess.cc, where Boost.Process is); its
  // group, output pipe `out`, pidfd and the threads that read and write it.
  std::string find_program();
  bool spawn(const std::string& exe);
  void watch_child(int out);
  void reap_nohang();
  void record_status(int status);
  void kill_group(int sig);

  // SIGTERM to the group, SIGKILL after the grace period; reaps the child.
  void terminate_group();

  // Kills every process carrying our run token, over and over until none is
  // left (a forking one makes new ones between two scans); bounded in time.
  // `left` were found before the group was killed: they count too.
  void kill_strays(std::vector<pid_t> killed);
  void finish_io();
  void call_ended();
  std::atomic<bool> reader_done{false};
  std::mutex done_mu;
  std::condition_variable done_cv;
  int pid_fd = -1;  // pidfd_open(pid): readable once the child has exited

  // Until the child exits, `ms` pass, a signal arrives or (with `cancel`)
  // opt.cancel_fd becomes readable, which it returns: with a pidfd the exit
  // wakes us at once, else a short sleep.
  // With inline_io, output that arrives meanwhile is read too (a child
  // blocked on a full pipe would never exit).
  bool await_exit(int ms, int fallback_us, bool cancel = false);

  // One read of out_fd, which poll said is readable; false (and out_eof)
  // at the end of the pipe or on an error.
  bool read_chunk();
  void read_loop();
  void write_loop(std::string data);
};

}  // namespace phoenix::util
