// Every child process Phoenix starts goes through here (and this is the only
// translation unit that includes Boost.Process).
//
// A child runs without a shell, in its own process group, with stdin from
// /dev/null unless data is given; stdout and stderr share one pipe, kept in
// bounded memory (head and tail, total counted). A timeout, or a SIGINT /
// SIGTERM that reached Phoenix (util/signals.h), stops the whole process
// group (grandchildren too): SIGTERM, then SIGKILL after a grace period. The exit status is mapped
// like a shell's: the exit code, or 128+N for a signal; 127 when the
// executable does not exist, 126 when it cannot be executed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace phoenix::util {

// Linux only: the child starts in a user + mount namespace of its own,
// made between fork and exec (where the child is single-threaded, as
// unshare(CLONE_NEWUSER) requires), so no privilege is needed (Linux >= 5.11
// for an overlay mount there). The caller's uid and gid map to themselves;
// after exec the child holds no capability. The mounts are made in order;
// then the child changes to `cwd` again (so it starts inside what was
// mounted over it). A step that fails ends the child before exec with exit
// code 125 and one line on its output: "namespace: <step>: <strerror>".
struct NamespaceMount {
  std::string source;           // device or folder ("overlay" for an overlay)
  std::string target;           // absolute path
  std::string fstype;           // "overlay"; "" for a bind mount
  std::string data;             // fstype options ("lowerdir=...,upperdir=...")
  bool bind_read_only = false;  // fstype "": recursive bind of source on target, then made read-only
};
struct ChildNamespace {
  std::vector<NamespaceMount> mounts;
};

// One confined child: the namespace it starts in, and what to call once it
// has ended (its group killed and reaped), or when it could not be started.
struct ConfinedChild {
  ChildNamespace ns;
  std::function<void()> ended;
};

// While a ConfinedFolder is alive, every child started (Subprocess,
// run_process) with its working directory inside `root` and no
// mount_namespace of its own starts in the namespace `make` returns for it;
// `make` returning nothing lets the child start as it is. The innermost
// root holding the directory wins, and of two equal roots the later one.
// `make` runs on the starting thread, before the child is forked; `ended`
// on the thread that waits for it. `root` is compared as given and as the
// file system resolves it.
class ConfinedFolder {
 public:
  ConfinedFolder(std::string root, std::function<std::optional<ConfinedChild>()> make);
  ~ConfinedFolder();
  ConfinedFolder(const ConfinedFolder&) = delete;
  ConfinedFolder& operator=(const ConfinedFolder&) = delete;

 private:
  unsigned long id_ = 0;
};

// The namespace a child started in `cwd` gets from the innermost live
// ConfinedFolder holding it, or nothing (Subprocess asks it).
std::optional<ConfinedChild> confined_child_for(const std::string& cwd);

struct ProcessOptions {
  std::vector<std::string> argv;           // argv[0] is looked up in PATH when it has no '/'
  std::string cwd;                         // empty: the current directory
  std::map<std::string, std::string> env;  // set (or override) these variables
  std::vector<std::string> unset_env;      // remove these variables
  std::optional<std::string> stdin_data;   // none: stdin is /dev/null
  double timeout_s = 0;                    // 0: no timeout
  double kill_grace_s = 1.0;               // SIGTERM -> SIGKILL delay
  size_t head_bytes = 16 * 1024;           // output kept from the start
  size_t tail_bytes = 64 * 1024;           // output kept from the end
  // Run the child in a namespace of its own (see ChildNamespace).
  std::optional<ChildNamespace> mount_namespace;
  // Called with each chunk of output as it arrives: on a reader thread of
  // a Subprocess, on the calling thread in run_process.
  std::function<void(std::string_view)> on_output;
  // Processes that escape the process group (setsid, a double fork: a
  // daemon) are found too: the child gets PHOENIX_RUN_TOKEN=<random> in its
  // environment, which its descendants inherit, and when it ends every
  // process still carrying that entry (read from /proc/<pid>/environ) is
  // killed. One that empties or replaces its environment escapes this.
  bool kill_strays = false;
  // A descriptor (an eventfd, a pipe's read end) that, once readable, stops
  // the child: its group is killed and ProcessResult::cancelled set. -1: none.
  int cancel_fd = -1;
};

struct ProcessResult {
  int exit_code = -1;      // shell-like: code, 128+signal, 127 not found, 126 not executable
  int term_signal = 0;     // the signal that ended it, or 0
  bool not_found = false;  // the executable does not exist
  bool not_executable = false;
  bool timed_out = false;    // stopped because timeout_s passed
  bool interrupted = false;  // stopped because Phoenix was interrupted
  bool cancelled = false;    // stopped because ProcessOptions::cancel_fd became readable
  std::string output;        // stdout+stderr, head and tail (raw bytes)
  size_t output_bytes = 0;   // total bytes printed
  bool output_truncated = false;
  long long duration_ms = 0;
  long pid = 0;
  std::string executable;    // resolved path, or the name that was not found
  size_t strays_killed = 0;  // with kill_strays: processes left running that were killed
};

// A running child. Destroying a Subprocess that still runs kills its group.
class Subprocess {
 public:
  explicit Subprocess(ProcessOptions options);  // starts it (or records not-found)
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Starts a child whose output is read only by wait(): no reader thread.
  // Its output waits in the pipe meanwhile (a child with more to say than
  // the pipe holds blocks until wait() is called). For a short command
  // started as early as possible and waited for later, as the pre-push
  // hook's `git status`.
  static std::unique_ptr<Subprocess> start_unread(ProcessOptions options);

  bool started() const;
  long pid() const;
  bool running();  // false once it has exited (reaps it)
  // Waits for the child (honouring the timeout counted from start), kills
  // what is left of its process group, and returns the result.
  ProcessResult wait();
  // Stops the whole group now (SIGTERM, grace, SIGKILL) and returns the result.
  ProcessResult stop();
  // The last `n` bytes of output so far (for a server's log tail).
  std::string output_tail(size_t n) const;

 private:
  friend ProcessResult run_process(const ProcessOptions& options);
  // With `inline_io` no reader thread is started: wait() reads the output
  // itself, which only a caller that waits at once (run_process) can do.
  Subprocess(ProcessOptions options, bool inline_io);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs a command to completion. The output is read by the waiting thread
// (no thread is started unless stdin_data must be written).
ProcessResult run_process(const ProcessOptions& options);

// Where `name` is found on PATH (the given PATH value, or Phoenix's), or "".
std::string find_executable(const std::string& name, const std::string& path_env = "");

}  // namespace phoenix::util
