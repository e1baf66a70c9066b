// A started child: its output read, its exit awaited (a timeout, a signal,
// a cancel), its process group and strays ended (util/subprocess.h).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/signals.h"
#include "util/strays.h"
#include "util/subprocess_impl.h"

namespace phoenix::util {

using Clock = std::chrono::steady_clock;

Subprocess::Subprocess(ProcessOptions options) : Subprocess(std::move(options), false) {}

Subprocess::Subprocess(ProcessOptions options, bool inline_io) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.opt = std::move(options);
  m.inline_io = inline_io;
  m.output = HeadTail(m.opt.head_bytes, m.opt.tail_bytes);
  m.start = Clock::now();
  if (m.opt.argv.empty()) throw Error("cannot run an empty command");
  ::signal(SIGPIPE, SIG_IGN);
  if (!m.opt.mount_namespace) {
    if (std::optional<ConfinedChild> c = confined_child_for(m.opt.cwd)) {
      m.opt.mount_namespace = std::move(c->ns);
      m.ended = std::move(c->ended);
    }
  }
  const std::string exe = m.find_program();
  bool spawned = false;
  if (!exe.empty()) {
    try {
      spawned = m.spawn(exe);
    } catch (...) {
      m.call_ended();
      throw;
    }
  }
  if (!spawned) m.call_ended();
}

// The program to exec for argv[0], or "" with the result saying why not
// (127 not found, 126 not executable).
std::string Subprocess::Impl::find_program() {
  const std::string& name = opt.argv[0];
  std::string exe;
  if (name.find('/') != std::string::npos) {
    exe = name;
    if (name[0] != '/' && !opt.cwd.empty()) exe = opt.cwd + "/" + name;
    // Inside a mount namespace a relative path names a file of what is
    // mounted there, which only exec can see.
    const bool in_ns = opt.mount_namespace && name[0] != '/';
    if (!in_ns && ::access(exe.c_str(), F_OK) != 0) exe.clear();
  } else {
    auto it = opt.env.find("PATH");
    exe = find_executable(name, it != opt.env.end() ? it->second : "");
  }
  res.executable = exe.empty() ? name : exe;
  if (exe.empty()) {
    res.not_found = true;
    res.exit_code = 127;
    reaped = true;
    return "";
  }
  if (!(opt.mount_namespace && name[0] != '/' && name.find('/') != std::string::npos) && !is_executable_file(exe)) {
    res.not_executable = true;
    res.exit_code = 126;
    reaped = true;
    return "";
  }
  return exe;
}

// The started child's group, output (`out`, a descriptor of our own),
// pidfd, and the threads that read its output and write its input.
void Subprocess::Impl::watch_child(int out) {
  // Also from the parent, so a kill(-pid) right after start cannot miss.
  ::setpgid(pid, pid);
  out_fd = out;
  ::fcntl(out_fd, F_SETFD, FD_CLOEXEC);
  started = true;
  res.pid = pid;
#ifdef SYS_pidfd_open
  pid_fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pid_fd >= 0) ::fcntl(pid_fd, F_SETFD, FD_CLOEXEC);
#endif
  if (!inline_io) reader = std::thread([this] { read_loop(); });
  if (in_fd >= 0) {
    ::fcntl(in_fd, F_SETFD, FD_CLOEXEC);
    writer = std::thread([this, data = *opt.stdin_data] { write_loop(data); });
  }
}

void Subprocess::Impl::reap_nohang() {
  if (reaped || pid <= 0) return;
  int status = 0;
  pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == pid) record_status(status);
  else if (r < 0 && errno == ECHILD) {
    reaped = true;
    res.exit_code = 255;
  }
}

void Subprocess::Impl::record_status(int status) {
  reaped = true;
  if (WIFEXITED(status)) {
    res.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res.term_signal = WTERMSIG(status);
    res.exit_code = 128 + res.term_signal;
  }
}

void Subprocess::Impl::kill_group(int sig) {
  if (pid > 0) ::kill(-pid, sig);
}

// SIGTERM to the group, SIGKILL after the grace period; reaps the child.
void Subprocess::Impl::terminate_group() {
  kill_group(SIGTERM);
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long>(opt.kill_grace_s * 1000));
  while (!reaped && Clock::now() < deadline) {
    reap_nohang();
    if (!reaped) await_exit(5, 5000);
  }
  kill_group(SIGKILL);
  if (!reaped) {
    int status = 0;
    if (::waitpid(pid, &status, 0) == pid) record_status(status);
    else reaped = true;
  }
}

// Kills every process carrying our run token, over and over until none is
// left (a forking one makes new ones between two scans); bounded in time.
// `left` were found before the group was killed: they count too.
void Subprocess::Impl::kill_strays(std::vector<pid_t> killed) {
  if (run_token_entry.empty()) return;
  for (pid_t p : killed) ::kill(p, SIGKILL);
  const auto deadline = Clock::now() + std::chrono::seconds(3);
  for (;;) {
    std::vector<pid_t> found = processes_with_env(run_token_entry);
    if (found.empty() || Clock::now() >= deadline) break;
    for (pid_t p : found) {
      ::kill(p, SIGKILL);
      if (std::find(killed.begin(), killed.end(), p) == killed.end()) killed.push_back(p);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  res.strays_killed = killed.size();
}

void Subprocess::Impl::finish_io() {
  // Whatever is left in the group (a grandchild holding the pipe) goes too,
  // and with kill_strays whatever left the group.
  std::vector<pid_t> left;
  if (!run_token_entry.empty()) left = processes_with_env(run_token_entry);
  kill_group(SIGKILL);
  kill_strays(std::move(left));
  if (reader.joinable()) {
    std::unique_lock<std::mutex> lock(done_mu);
    done_cv.wait_for(lock, std::chrono::milliseconds(300), [this] { return reader_done.load(); });
  } else if (inline_io) {
    // What the child wrote before it ended, up to the end of the pipe;
    // a process that escaped the group and holds the pipe open is given
    // the same 300 ms the reader thread is.
    const auto until = Clock::now() + std::chrono::milliseconds(300);
    while (!out_eof) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0) break;
      struct pollfd p {
        out_fd, POLLIN, 0
      };
      int r = ::poll(&p, 1, static_cast<int>(left));
      if (r < 0 && errno != EINTR) break;
      if (r > 0) read_chunk();
    }
  }
  stop_reading = true;
  if (reader.joinable()) reader.join();
  if (writer.joinable()) writer.join();
  if (out_fd >= 0) {
    ::close(out_fd);
    out_fd = -1;
  }
  if (pid_fd >= 0) {
    ::close(pid_fd);
    pid_fd = -1;
  }
  std::lock_guard<std::mutex> lock(mu);
  res.output = output.str();
  res.output_bytes = output.total();
  res.output_truncated = output.truncated();
  res.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  call_ended();
}

void Subprocess::Impl::call_ended() {
  if (!ended) return;
  auto f = std::move(ended);
  ended = nullptr;
  f();
}

// Until the child exits, `ms` pass, a signal arrives or (with `cancel`)
// opt.cancel_fd becomes readable, which it returns: with a pidfd the exit
// wakes us at once, else a short sleep.
// With inline_io, output that arrives meanwhile is read too (a child
// blocked on a full pipe would never exit).
bool Subprocess::Impl::await_exit(int ms, int fallback_us, bool cancel) {
  struct pollfd p[3] = {
      {pid_fd, POLLIN, 0}, {cancel ? opt.cancel_fd : -1, POLLIN, 0}, {inline_io && !out_eof ? out_fd : -1, POLLIN, 0}};
  if (pid_fd >= 0) {
    ::poll(p, 3, ms);
  } else if (p[1].fd >= 0 || p[2].fd >= 0) {
    ::poll(p + 1, 2, std::max(1, std::min(fallback_us / 1000, ms)));
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(std::min(fallback_us, ms * 1000)));
  }
  if (p[2].fd >= 0 && (p[2].revents & (POLLIN | POLLHUP | POLLERR)) != 0) read_chunk();
  return p[1].fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

// One read of out_fd, which poll said is readable; false (and out_eof)
// at the end of the pipe or on an error.
bool Subprocess::Impl::read_chunk() {
  char buf[65536];
  ssize_t n;
  do n = ::read(out_fd, buf, sizeof buf);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN) return true;
  if (n <= 0) {
    out_eof = true;
    return false;
  }
  std::string_view chunk(buf, static_cast<size_t>(n));
  {
    std::lock_guard<std::mutex> lock(mu);
    output.append(chunk);
  }
  if (opt.on_output) opt.on_output(chunk);
  return true;
}

void Subprocess::Impl::read_loop() {
  for (;;) {
    struct pollfd p {
      out_fd, POLLIN, 0
    };
    int r = ::poll(&p, 1, 50);
    if (r < 0 && errno != EINTR) break;
    if (r > 0) {
      if (!read_chunk()) break;
      continue;
    }
    if (stop_reading) break;
  }
  {
    std::lock_guard<std::mutex> lock(done_mu);
    reader_done = true;
  }
  done_cv.notify_all();
}

void Subprocess::Impl::write_loop(std::string data) {
  util::write_all(in_fd, data);  // false on EPIPE: the child stopped reading; fine
  ::close(in_fd);
  in_fd = -1;
}

Subprocess::~Subprocess() {
  if (!impl_) return;
  Impl& m = *impl_;
  if (m.started) {
    if (!m.reaped) m.terminate_group();
    m.finish_io();
    m.started = false;
  }
}

std::unique_ptr<Subprocess> Subprocess::start_unread(ProcessOptions options) {
  return std::unique_ptr<Subprocess>(new Subprocess(std::move(options), true));
}

bool Subprocess::started() const { return impl_->started; }
long Subprocess::pid() const { return impl_->pid; }

bool Subprocess::running() {
  impl_->reap_nohang();
  return impl_->started && !impl_->reaped;
}

ProcessResult Subprocess::wait() {
  Impl& m = *impl_;
  if (!m.started) return m.res;
  auto deadline = m.opt.timeout_s > 0
                      ? m.start + std::chrono::milliseconds(static_cast<long long>(m.opt.timeout_s * 1000))
                      : Clock::time_point::max();
  int sleep_us = 100;
  while (!m.reaped) {
    m.reap_nohang();
    if (m.reaped) break;
    if (interrupted_signal() != 0) {
      m.res.interrupted = true;
      m.terminate_group();
      break;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      m.res.timed_out = true;
      m.terminate_group();
      break;
    }
    // The child's exit wakes us through its pidfd (a short command such as
    // a hook's `git status` is noticed at once); the wait is cut into 20 ms
    // slices so that a signal or the deadline is seen in time. Without a
    // pidfd (Linux < 5.3), sleeps growing to 0.5 ms in the first 100 ms,
    // then 20 ms.
    const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    if (m.await_exit(static_cast<int>(std::min<long long>(20, left_ms)), sleep_us, true)) {
      m.reap_nohang();
      if (m.reaped) break;
      m.res.cancelled = true;
      m.terminate_group();
      break;
    }
    sleep_us = std::min(sleep_us * 2, Clock::now() - m.start < std::chrono::milliseconds(100) ? 500 : 20000);
  }
  m.finish_io();
  m.started = false;
  return m.res;
}

ProcessResult Subprocess::stop() {
  Impl& m = *impl_;
  if (!m.started) return m.res;
  if (!m.reaped) m.terminate_group();
  m.finish_io();
  m.started = false;
  return m.res;
}

std::string Subprocess::output_tail(size_t n) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->output.last(n);
}

ProcessResult run_process(const ProcessOptions& options) {
  Subprocess p(options, true);
  return p.wait();
}

}  // namespace phoenix::util
