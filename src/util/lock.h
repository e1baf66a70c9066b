// Locks between Phoenix processes.
//
// FileLock: an flock(2) on a lock file, released by the kernel when the
// holder dies, so a crashed run never leaves a lock that blocks the next one.
// The holder writes its pid into the file (blanks once released) so a
// waiting process can say who holds it. A taker that finds a pid there
// anyway (its holder died without releasing) or a record that does not
// parse takes the lock over and says so (taken_over()).
#pragma once

#include <memory>
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

  // The lock if it is free now, else nullptr: never waits, never throws
  // for a lock that is held (only when the file cannot be opened).
  static std::unique_ptr<FileLock> try_take(const std::string& path);

  // "" when the file was new or released cleanly; otherwise what the last
  // holder left, as a warning naming the file: "took over the stale lock
  // <path>: pid 123 is not running", "...: pid 123 (sleep 30) is running
  // but does not hold it" (a pid reused by another program) or "...: its
  // record does not parse
  // (\"garbage\")". The flock was free, so the lock was stale either way.
  const std::string& taken_over() const { return taken_over_; }

  // Pid recorded by the current holder of `path`, or 0.
  static long holder_pid(const std::string& path);
  // The recorded holder of `path` as "pid 123 (phoenix run --fixer
  // bisect)", its command line from /proc; "pid 123" when that cannot be
  // read; "" when the file names no pid.
  static std::string holder(const std::string& path);

  // The processes that have `path` open, as "pid 123 (vim)", comma
  // separated; "" when none (or /proc is not readable). What fuser does,
  // for a lock file that holds no pid (git's index.lock).
  static std::string open_by(const std::string& path);

  // Handing the lock to the program this process is about to exec: the
  // descriptor loses close-on-exec and this object lets go of it without
  // unlocking. Returns the descriptor.
  int keep_across_exec();
  // The lock held on `fd`, a descriptor kept across exec by
  // keep_across_exec(), when it is open on `path` and this process holds
  // its flock; nullptr otherwise (`fd` is then left as it is).
  static std::unique_ptr<FileLock> adopt(const std::string& path, int fd);

 private:
  static std::string pid_with_command(long pid);  // "pid 123 (its command line)"
  static constexpr size_t kRecordSize = 21;       // a 64-bit pid, padded, and a newline
  FileLock() = default;                           // adopt()'s
  explicit FileLock(const std::string& path);     // opens (creates) the file; takes nothing
  bool acquire(int wait_ms);                      // false when still held at the end of the wait
  void claim();                                   // reads what a stale holder left, then records our pid
  void write_record(const std::string& pid) const;
  int fd_ = -1;
  std::string path_;
  std::string taken_over_;
};

}  // namespace phoenix::util
