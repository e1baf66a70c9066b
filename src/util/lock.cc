#include "util/lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::util {

FileLock::FileLock(const std::string& path) : path_(path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_errno("cannot open lock " + path);
}

FileLock::FileLock(const std::string& path, int wait_ms, const std::string& what) : FileLock(path) {
  if (!acquire(wait_ms)) {
    long pid = holder_pid(path);
    ::close(fd_);
    fd_ = -1;
    throw Error(what + " is held by another Phoenix process" +
                (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) + "; lock file " + path);
  }
  claim();
}

std::unique_ptr<FileLock> FileLock::try_take(const std::string& path) {
  std::unique_ptr<FileLock> lock(new FileLock(path));
  if (!lock->acquire(0)) {
    // Not ours: closed without touching the holder's record.
    ::close(lock->fd_);
    lock->fd_ = -1;
    return nullptr;
  }
  lock->claim();
  return lock;
}

bool FileLock::acquire(int wait_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  std::mt19937 rng(static_cast<unsigned>(::getpid()));
  int backoff_ms = 2;
  for (;;) {
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int e = errno;
      ::close(fd_);
      fd_ = -1;
      errno = e;
      throw_errno("cannot lock " + path_);
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms + rng() % (backoff_ms + 1)));
    backoff_ms = std::min(backoff_ms * 2, 100);
  }
}

namespace {

bool pid_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

}  // namespace

// The flock is ours, so whatever the file still names is stale: a holder
// that died before blanking its record, or a file written by something
// else. Either is worth a warning; a longer record is cut back to size.
void FileLock::claim() {
  char buf[256];
  const ssize_t n = ::pread(fd_, buf, sizeof buf, 0);
  const std::string old = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  const std::string text = trim(old);
  if (!text.empty()) {
    const bool digits = text.find_first_not_of("0123456789") == std::string::npos && text.size() <= 19;
    if (!digits) {
      taken_over_ = "took over the lock " + path_ + ": its record does not parse (\"" +
                    to_valid_utf8(utf8_head(text, 40)) + (text.size() > 40 ? "..." : "") + "\")";
    } else {
      const long pid = std::stol(text);
      // A live pid is some other process now (pids are reused), or a holder
      // that let go without blanking: named with its command either way.
      taken_over_ = "took over the stale lock " + path_ + ": " +
                    (pid_alive(pid) ? pid_with_command(pid) + " is running but does not hold it"
                                    : "pid " + text + " is not running");
    }
  }
  if (old.size() > kRecordSize && ::ftruncate(fd_, kRecordSize) != 0) {
    // the record below is what counts; a longer tail only costs a warning next time
  }
  write_record(std::to_string(::getpid()));
}

// The file holds one record of fixed size, the holder's pid or blanks,
// rewritten in place: no truncation, which on ext4 costs a journalled
// block release and allocation on every take and release of the lock (a
// tenth of a green pre-push hook's own time).
void FileLock::write_record(const std::string& pid) const {
  std::string record = pid;
  record.resize(kRecordSize - 1, ' ');
  record += '\n';
  if (::pwrite(fd_, record.data(), record.size(), 0) != static_cast<ssize_t>(record.size())) {
    // the pid is a courtesy for the error message; the flock is what counts
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    write_record("");
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

int FileLock::keep_across_exec() {
  const int fd = fd_;
  if (fd >= 0) ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) & ~FD_CLOEXEC);
  fd_ = -1;
  return fd;
}

std::unique_ptr<FileLock> FileLock::adopt(const std::string& path, int fd) {
  struct stat held = {};
  struct stat named = {};
  if (fd < 0 || ::fstat(fd, &held) != 0 || ::stat(path.c_str(), &named) != 0) return nullptr;
  if (held.st_dev != named.st_dev || held.st_ino != named.st_ino) return nullptr;
  // flock on the open file that already holds it succeeds at once; on
  // one that does not (another holder), it fails: not ours to adopt.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) return nullptr;
  ::fcntl(fd, F_SETFD, ::fcntl(fd, F_GETFD) | FD_CLOEXEC);
  std::unique_ptr<FileLock> lock(new FileLock());
  lock->path_ = path;
  lock->fd_ = fd;
  lock->write_record(std::to_string(::getpid()));
  return lock;
}

std::string FileLock::open_by(const std::string& path) {
  std::error_code ec;
  const std::string want = std::filesystem::weakly_canonical(path, ec).string();
  if (ec) return "";
  std::string out;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code fd_ec;
    for (const auto& fd : std::filesystem::directory_iterator(proc.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      if (std::filesystem::read_symlink(fd.path(), link_ec).string() != want) continue;
      std::string comm;
      try {
        comm = read_file(proc.path().string() + "/comm");
      } catch (const Error&) {}
      while (!comm.empty() && comm.back() == '\n') comm.pop_back();
      out += (out.empty() ? "" : ", ") + std::string("pid ") + pid + (comm.empty() ? "" : " (" + comm + ")");
      break;
    }
  }
  return out;
}

std::string FileLock::holder(const std::string& path) {
  const long pid = holder_pid(path);
  return pid <= 0 ? "" : pid_with_command(pid);
}

std::string FileLock::pid_with_command(long pid) {
  std::string cmd;
  try {
    cmd = read_file("/proc/" + std::to_string(pid) + "/cmdline");
  } catch (const Error&) {}
  while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
  for (char& c : cmd)
    if (c == '\0') c = ' ';
  cmd = clip_utf8(to_valid_utf8(cmd), 200);
  return "pid " + std::to_string(pid) + (cmd.empty() ? "" : " (" + cmd + ")");
}

long FileLock::holder_pid(const std::string& path) {
  try {
    std::string s = read_file(path);
    return s.find_first_not_of(" \n") == std::string::npos ? 0 : std::stol(s);
  } catch (...) { return 0; }
}

}  // namespace phoenix::util
