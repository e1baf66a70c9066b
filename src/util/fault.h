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
// In every other build (the CMake default, so any release or package) both
// macros expand to nothing and the point names are not in the binary.
#pragma once

#if defined(PHOENIX_FAULT_POINTS) && PHOENIX_FAULT_POINTS
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <string_view>

namespace phoenix::util {

// True when PHOENIX_FAULT names `name` and this is the hit it asks for.
inline bool fault_armed(const char* name, std::atomic<int>& hits) {
  const char* want = ::getenv("PHOENIX_FAULT");
  if (want == nullptr) return false;
  std::string_view w(want);
  size_t at = w.find('@');
  if (w.substr(0, at) != name) return false;
  int nth = at == std::string_view::npos ? 1 : ::atoi(std::string(w.substr(at + 1)).c_str());
  return ++hits == nth;
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
#else
#define PHOENIX_FAULT(name) ((void)0)
#define PHOENIX_FAULT_TORN(name, path, bytes) ((void)0)
#endif
