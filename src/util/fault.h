// Named crash points for the crash tests.
//
//   PHOENIX_FAULT("after-checkpoint");
//   PHOENIX_FAULT_TORN("mid-trace-append", path, bytes);
//
// In a build configured with -DPHOENIX_FAULT_POINTS=ON (scripts/test.sh does
// so), the process kills itself with SIGKILL at that line when the
// environment variable PHOENIX_FAULT names the point: no destructor, no
// atexit handler, no flush runs, exactly like `kill -9` or a power cut.
// PHOENIX_FAULT=<name>@<n> fires at the n-th time the point is reached
// (default 1). PHOENIX_FAULT_TORN first appends the first half of `bytes` to
// `path`, leaving the torn write a crash in the middle of it would.
//
// A write can fail instead of the process dying:
//
//   PHOENIX_FAULT_IO("state-write", path);
//
// PHOENIX_FAULT=<name>[@<n>]:enospc (or :eio) makes the write at that point
// fail the way the system fails it, with "No space left on device" or
// "Input/output error": the point throws the Error the write itself would
// throw ("cannot write <path>: <cause>"), so everything above it (the
// caller's cleanup, the one line on stderr, the exit code) runs for real.
// The journal's point ("journal-write") is SQLite's own: its write system
// calls fail for one COMMIT (journal/sqlite.cc), and SQLite reports the disk
// full or the I/O error itself.
//
// The wall clock can step (NTP, a laptop waking up): PHOENIX_FAULT_CLOCK=<file>
// adds the number of seconds the file holds (read at every call, so a test
// steps the clock of a running process by rewriting it) to util::now_ms(),
// Phoenix's one reading of the wall clock. Durations never read it.
//
// In every other build (the CMake default, so any release or package) the
// macros expand to nothing and the point names are not in the binary.
#pragma once

#if defined(PHOENIX_FAULT_POINTS) && PHOENIX_FAULT_POINTS
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <atomic>
#include <string>
#include <string_view>

#include "util/error.h"

namespace phoenix::util {

// PHOENIX_FAULT, parsed: <name>[@<n>][:enospc|:eio].
struct FaultSpec {
  std::string name;
  int nth = 1;
  int err = 0;  // 0: kill; ENOSPC or EIO: fail the write
};

inline FaultSpec fault_spec() {
  FaultSpec f;
  const char* want = ::getenv("PHOENIX_FAULT");
  if (want == nullptr) return f;
  std::string_view w(want);
  size_t colon = w.find(':');
  if (colon != std::string_view::npos) {
    std::string_view mode = w.substr(colon + 1);
    f.err = mode == "enospc" ? ENOSPC : mode == "eio" ? EIO : -1;
    w = w.substr(0, colon);
  }
  size_t at = w.find('@');
  f.name = std::string(w.substr(0, at));
  if (at != std::string_view::npos) f.nth = ::atoi(std::string(w.substr(at + 1)).c_str());
  return f;
}

// True when PHOENIX_FAULT names `name` (to kill) and this is the hit it asks for.
inline bool fault_armed(const char* name, std::atomic<int>& hits) {
  FaultSpec f = fault_spec();
  if (f.err != 0 || f.name != name) return false;
  return ++hits == f.nth;
}

// The errno a write at `name` fails with at this hit, or 0.
inline int fault_errno(const char* name, std::atomic<int>& hits) {
  FaultSpec f = fault_spec();
  if (f.err <= 0 || f.name != name) return 0;
  return ++hits == f.nth ? f.err : 0;
}

// PHOENIX_FAULT_CLOCK's offset in ms, 0 when unset or unreadable.
inline long long fault_clock_offset_ms() {
  const char* file = ::getenv("PHOENIX_FAULT_CLOCK");
  if (file == nullptr || *file == '\0') return 0;
  int fd = ::open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[64] = {0};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  return n > 0 ? static_cast<long long>(::strtod(buf, nullptr) * 1000.0) : 0;
}

[[noreturn]] inline void fault_fail_write(const std::string& path, int err) {
  errno = err;
  throw_errno("cannot write " + path);
}

[[noreturn]] inline void fault_kill(const char* name) {
  std::string msg = std::string("phoenix: fault point ") + name + ": kill -9\n";
  (void)!::write(2, msg.data(), msg.size());
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached
}

inline void fault_torn_append(const char* name, const std::string& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd >= 0) {
    (void)!::write(fd, bytes.data(), bytes.size() / 2);
    ::fsync(fd);
  }
  fault_kill(name);
}

}  // namespace phoenix::util

#define PHOENIX_FAULT(name)                                                                         \
  do {                                                                                              \
    static std::atomic<int> phoenix_fault_hits_{0};                                                 \
    if (::phoenix::util::fault_armed(name, phoenix_fault_hits_)) ::phoenix::util::fault_kill(name); \
  } while (0)
#define PHOENIX_FAULT_TORN(name, path, bytes)                    \
  do {                                                           \
    static std::atomic<int> phoenix_fault_hits_{0};              \
    if (::phoenix::util::fault_armed(name, phoenix_fault_hits_)) \
      ::phoenix::util::fault_torn_append(name, path, bytes);     \
  } while (0)
#define PHOENIX_FAULT_CLOCK_OFFSET_MS() (::phoenix::util::fault_clock_offset_ms())
#define PHOENIX_FAULT_IO(name, path)                                                      \
  do {                                                                                    \
    static std::atomic<int> phoenix_fault_hits_{0};                                       \
    if (int phoenix_fault_err_ = ::phoenix::util::fault_errno(name, phoenix_fault_hits_)) \
      ::phoenix::util::fault_fail_write(path, phoenix_fault_err_);                        \
  } while (0)
#else
#define PHOENIX_FAULT(name) ((void)0)
#define PHOENIX_FAULT_IO(name, path) ((void)0)
#define PHOENIX_FAULT_CLOCK_OFFSET_MS() 0LL
#define PHOENIX_FAULT_TORN(name, path, bytes) ((void)0)
#endif
