// Locks between Phoenix processes.
//
// FileLock: an flock(2) on a lock file, released by the kernel when the
// holder dies, so a crashed run never leaves a lock that blocks the next one.
// The holder writes its pid into the file (blanks once released) so a
// waiting process can say who holds it.
#pragma once

#include <string>

namespace phoenix::util {

class FileLock {
 public:
  // Takes the lock, waiting up to `wait_ms` (0: try once). Throws Error
  // naming the lock file and the holder's pid when it cannot.
  FileLock(const std::string& path, int wait_ms, const std::string& what);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Pid recorded by the current holder of `path`, or 0.
  static long holder_pid(const std::string& path);

  // The processes that have `path` open, as "pid 123 (vim)", comma
  // separated; "" when none (or /proc is not readable). What fuser does,
  // for a lock file that holds no pid (git's index.lock).
  static std::string open_by(const std::string& path);

 private:
  static constexpr size_t kRecordSize = 21;  // a 64-bit pid, padded, and a newline
  void write_record(const std::string& pid) const;
  int fd_ = -1;
  std::string path_;
};

}  // namespace phoenix::util
