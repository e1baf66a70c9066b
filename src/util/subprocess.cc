#include "util/subprocess.h"

// Boost.Process 1.74 compiles its vfork launcher (bp::posix::use_vfork)
// only under old _XOPEN_SOURCE levels, although glibc has vfork under the
// default feature set; it is used below for children without a namespace.
#ifndef BOOST_POSIX_HAS_VFORK
#define BOOST_POSIX_HAS_VFORK 1
#endif

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "util/error.h"
#include "util/strays.h"
#include "util/subprocess_impl.h"

namespace bp = boost::process;

namespace phoenix::util {

namespace {

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

// Starts the child (its output into `out`, its input from opt.stdin_data,
// whose write end goes into `in_fd`, or nothing) and returns its pid;
// bp::process_error when exec fails.
pid_t spawn_child(const ProcessOptions& opt, const std::string& exe, bp::environment& env, bp::pipe& out, int& in_fd) {
  std::vector<std::string> args(opt.argv.begin() + 1, opt.argv.end());
  pid_t pid = -1;
  {
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
  }
  return pid;
}

// The child's environment: ours, less unset_env, PWD set to where it runs,
// opt.env on top, and a run token when its strays are to be found later.
bp::environment child_environment(const ProcessOptions& opt, std::string& run_token_entry) {
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

}  // namespace

// The child started from `exe` with the environment child_environment()
// makes: the constructor's step that Boost.Process takes.
bool Subprocess::Impl::spawn(const std::string& exe) {
  bp::environment env = child_environment(opt, run_token_entry);
  bp::pipe out;
  try {
    pid = spawn_child(opt, exe, env, out, in_fd);
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
  const int fd = ::dup(out.native_source());
  out.close();
  watch_child(fd);
  return true;
}

}  // namespace phoenix::util
