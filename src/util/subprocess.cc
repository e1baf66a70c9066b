#include "util/subprocess.h"

// Boost.Process 1.74 compiles its vfork launcher (bp::posix::use_vfork)
// only under old _XOPEN_SOURCE levels, although glibc has vfork under the
// default feature set; it is used below for children without a namespace.
#ifndef BOOST_POSIX_HAS_VFORK
#define BOOST_POSIX_HAS_VFORK 1
#endif

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "util/error.h"
#include "util/signals.h"
#include "util/strays.h"
#include "util/text.h"

namespace bp = boost::process;

namespace phoenix::util {

namespace {

using Clock = std::chrono::steady_clock;

bool is_executable_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

// Whether close_range(CLOSE_RANGE_CLOEXEC) works here (Linux >= 5.11):
// then the child marks every inherited descriptor close-on-exec with one
// system call and no allocation, so it can be started with vfork.
bool cloexec_range_works() {
  static const bool works = [] {
    int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::close_range(static_cast<unsigned>(fd), static_cast<unsigned>(fd), CLOSE_RANGE_CLOEXEC) == 0;
    ::close(fd);
    return ok;
  }();
  return works;
}

// In the child, between fork and exec: a process group of its own, default
// signal dispositions, and no inherited descriptors beyond 0-2 (they would
// keep other children's pipes open). With vfork (see Subprocess) this runs
// in the parent's memory: system calls only, nothing allocated.
struct ChildSetup : bp::extend::handler {
  template <class Executor>
  void on_exec_setup(Executor&) const {
    ::setpgid(0, 0);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) ::signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0) return;
    if (DIR* d = ::opendir("/proc/self/fd")) {
      int self = ::dirfd(d);
      while (struct dirent* e = ::readdir(d)) {
        int fd = std::atoi(e->d_name);
        if (fd > 2 && fd != self) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
      }
      ::closedir(d);
    }
  }
};

// In the child, after ChildSetup: a new user + mount namespace and the
// mounts of ProcessOptions::mount_namespace. Everything it needs is made
// before fork (no allocation between fork and exec); a failure writes one
// line to the output pipe (stderr) and ends the child with 125.
struct NamespaceSetup : bp::extend::handler {
  struct Step {
    std::string what;  // "mount overlay on /x": for the error line
    std::string source, target, fstype, data;
    unsigned long flags = 0;
  };
  std::string uid_map, gid_map, cwd;
  std::vector<Step> steps;

  static NamespaceSetup make(const ChildNamespace& ns, const std::string& cwd) {
    NamespaceSetup n;
    n.uid_map = std::to_string(::getuid()) + " " + std::to_string(::getuid()) + " 1\n";
    n.gid_map = std::to_string(::getgid()) + " " + std::to_string(::getgid()) + " 1\n";
    n.cwd = cwd;
    for (const NamespaceMount& m : ns.mounts) {
      if (!m.fstype.empty()) {
        n.steps.push_back({"mount " + m.fstype + " on " + m.target, m.source, m.target, m.fstype, m.data, 0});
      } else {
        n.steps.push_back({"bind " + m.source + " on " + m.target, m.source, m.target, "", "", MS_BIND | MS_REC});
        if (m.bind_read_only)
          n.steps.push_back(
              {"make " + m.target + " read-only", "", m.target, "", "", MS_REMOUNT | MS_BIND | MS_RDONLY});
      }
    }
    return n;
  }

  static const char* or_null(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }

  [[noreturn]] static void fail(const char* what) {
    const char* why = ::strerror(errno);
    const char* head = "namespace: ";
    (void)!::write(2, head, ::strlen(head));
    (void)!::write(2, what, ::strlen(what));
    (void)!::write(2, ": ", 2);
    (void)!::write(2, why, ::strlen(why));
    (void)!::write(2, "\n", 1);
    ::_exit(125);
  }

  // No allocation here: we are between fork and exec.
  static bool write_proc(const char* file, const char* text) {
    int fd = ::open(file, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const size_t n = ::strlen(text);
    bool ok = ::write(fd, text, n) == static_cast<ssize_t>(n);
    ::close(fd);
    return ok;
  }

  template <class Executor>
  void on_exec_setup(Executor&) const {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) fail("unshare(CLONE_NEWUSER|CLONE_NEWNS)");
    // setgroups must be denied before an unprivileged gid_map is accepted.
    write_proc("/proc/self/setgroups", "deny");
    if (!write_proc("/proc/self/uid_map", uid_map.c_str()) || !write_proc("/proc/self/gid_map", gid_map.c_str()))
      fail("write /proc/self/uid_map");
    // Nothing mounted here propagates back to the caller's namespace.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) fail("make / private");
    for (const Step& s : steps)
      if (::mount(or_null(s.source), s.target.c_str(), or_null(s.fstype), s.flags, or_null(s.data)) != 0)
        fail(s.what.c_str());
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) fail(cwd.c_str());
  }
};

}  // namespace

std::string find_executable(const std::string& name, const std::string& path_env) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), F_OK) == 0 ? name : "";
  std::string path = path_env;
  if (path.empty()) {
    const char* p = std::getenv("PATH");
    path = p ? p : "/usr/local/bin:/usr/bin:/bin";
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";
    std::string cand = dir + "/" + name;
    if (is_executable_file(cand)) return cand;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

struct Subprocess::Impl {
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

  // The steps of starting the child (the constructor's).
  bp::environment child_environment();
  std::string find_program();
  bool spawn_child(const std::string& exe, bp::environment& env, bp::pipe& out);
  void watch_child(bp::pipe& out);

  void reap_nohang() {
    if (reaped || pid <= 0) return;
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) record_status(status);
    else if (r < 0 && errno == ECHILD) {
      reaped = true;
      res.exit_code = 255;
    }
  }

  void record_status(int status) {
    reaped = true;
    if (WIFEXITED(status)) {
      res.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      res.term_signal = WTERMSIG(status);
      res.exit_code = 128 + res.term_signal;
    }
  }

  void kill_group(int sig) {
    if (pid > 0) ::kill(-pid, sig);
  }

  // SIGTERM to the group, SIGKILL after the grace period; reaps the child.
  void terminate_group() {
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
  void kill_strays(std::vector<pid_t> killed) {
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

  void finish_io() {
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

  void call_ended() {
    if (!ended) return;
    auto f = std::move(ended);
    ended = nullptr;
    f();
  }

  std::atomic<bool> reader_done{false};
  std::mutex done_mu;
  std::condition_variable done_cv;
  int pid_fd = -1;  // pidfd_open(pid): readable once the child has exited

  // Until the child exits, `ms` pass, a signal arrives or (with `cancel`)
  // opt.cancel_fd becomes readable, which it returns: with a pidfd the exit
  // wakes us at once, else a short sleep.
  // With inline_io, output that arrives meanwhile is read too (a child
  // blocked on a full pipe would never exit).
  bool await_exit(int ms, int fallback_us, bool cancel = false) {
    struct pollfd p[3] = {{pid_fd, POLLIN, 0},
                          {cancel ? opt.cancel_fd : -1, POLLIN, 0},
                          {inline_io && !out_eof ? out_fd : -1, POLLIN, 0}};
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
  bool read_chunk() {
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

  void read_loop() {
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

  void write_loop(std::string data) {
    std::string_view rest(data);
    while (!rest.empty()) {
      ssize_t n = ::write(in_fd, rest.data(), rest.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        break;  // EPIPE: the child stopped reading; fine
      }
      rest.remove_prefix(static_cast<size_t>(n));
    }
    ::close(in_fd);
    in_fd = -1;
  }
};

Subprocess::Subprocess(ProcessOptions options) : Subprocess(std::move(options), false) {}

// The child's environment: ours, less unset_env, PWD set to where it runs,
// opt.env on top, and a run token when its strays are to be found later.
bp::environment Subprocess::Impl::child_environment() {
  bp::environment env = boost::this_process::environment();
  for (const auto& k : opt.unset_env) env.erase(k);
  // Every child is told where it really is: programs that take their
  // working directory from $PWD (opencode, shells) must not be handed the
  // caller's directory. An explicit PWD in opt.env wins.
  {
    std::error_code pwd_ec;
    const std::filesystem::path dir =
        opt.cwd.empty() ? std::filesystem::current_path(pwd_ec) : std::filesystem::absolute(opt.cwd, pwd_ec);
    std::string pwd = dir.lexically_normal().string();
    while (pwd.size() > 1 && pwd.back() == '/') pwd.pop_back();
    if (!pwd_ec) env["PWD"] = pwd;
  }
  for (const auto& [k, v] : opt.env) env[k] = v;
  if (opt.kill_strays) {
    const std::string token = random_run_token();
    env["PHOENIX_RUN_TOKEN"] = token;
    run_token_entry = "PHOENIX_RUN_TOKEN=" + token;
  }
  return env;
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

// Starts the child (its output into `out`, its input from opt.stdin_data or
// nothing). False, with the result saying why, when exec fails.
bool Subprocess::Impl::spawn_child(const std::string& exe, bp::environment& env, bp::pipe& out) {
  std::vector<std::string> args(opt.argv.begin() + 1, opt.argv.end());
  try {
    const std::string start_dir = opt.cwd.empty() ? std::string(".") : opt.cwd;
    auto spawn = [&](auto&& in_redirect, auto&&... extra) {
      bp::child c(bp::exe = exe, bp::args = args, bp::env = env, (bp::std_out & bp::std_err) > out,
                  std::forward<decltype(in_redirect)>(in_redirect), bp::start_dir = start_dir, ChildSetup{},
                  std::forward<decltype(extra)>(extra)...);
      pid = c.id();
      c.detach();
    };
    auto spawn_ns = [&](auto&& in_redirect) {
      if (opt.mount_namespace) {
        std::error_code cwd_ec;
        const std::string abs_cwd = std::filesystem::absolute(start_dir, cwd_ec).string();
        spawn(std::forward<decltype(in_redirect)>(in_redirect), NamespaceSetup::make(*opt.mount_namespace, abs_cwd));
      } else if (cloexec_range_works()) {
        // vfork: no copy of our page tables, which was most of what
        // starting a short command cost. Not with a namespace: unshare()
        // refuses a process that shares its memory.
        spawn(std::forward<decltype(in_redirect)>(in_redirect), bp::posix::use_vfork);
      } else {
        spawn(std::forward<decltype(in_redirect)>(in_redirect));
      }
    };
    if (opt.stdin_data) {
      bp::pipe in;
      spawn_ns(bp::std_in < in);
      in_fd = ::dup(in.native_sink());
      in.close();
    } else {
      spawn_ns(bp::std_in < bp::null);
    }
  } catch (const bp::process_error& e) {
    int code = e.code().value();
    if (code == ENOENT) {
      res.not_found = true;
      res.exit_code = 127;
    } else if (code == EACCES || code == ENOEXEC) {
      res.not_executable = true;
      res.exit_code = 126;
    } else throw Error("cannot start " + opt.argv[0] + ": " + e.code().message());
    reaped = true;
    return false;
  }
  return true;
}

// The started child's group, output, pidfd, and the threads that read its
// output and write its input.
void Subprocess::Impl::watch_child(bp::pipe& out) {
  // Also from the parent, so a kill(-pid) right after start cannot miss.
  ::setpgid(pid, pid);
  out_fd = ::dup(out.native_source());
  out.close();
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
  bp::environment env = m.child_environment();
  const std::string exe = m.find_program();
  bool spawned = false;
  if (!exe.empty()) {
    try {
      bp::pipe out;
      spawned = m.spawn_child(exe, env, out);
      if (spawned) m.watch_child(out);
    } catch (...) {
      m.call_ended();
      throw;
    }
  }
  if (!spawned) m.call_ended();
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
