#include "util/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <random>

#include "util/error.h"

namespace phoenix::util {

namespace fs = std::filesystem;

namespace {

void write_or_throw(int fd, std::string_view data, const std::string& path) {
  if (!write_all(fd, data)) throw_errno("cannot write " + path);
}

std::string random_suffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  static const char* a = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(a[rng() % 36]);
  return s;
}

}  // namespace

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: some file systems refuse
  ::fsync(fd);
  ::close(fd);
}

void write_file_atomic(const std::string& path, std::string_view content, unsigned mode, Sync sync) {
  fs::path target(path);
  std::string dir = target.parent_path().string();
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error("cannot create directory " + dir + ": " + ec.message());
  }
  // Errors name the file the caller asked for; the temporary one is gone.
  std::string tmp = path + ".tmp." + random_suffix();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw_errno("cannot write " + path);
  try {
    write_or_throw(fd, content, path);
    if (::fchmod(fd, mode) != 0) throw_errno("cannot chmod " + path);
    if (sync == Sync::kDurable && ::fsync(fd) != 0) throw_errno("cannot write " + path);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    errno = e;
    throw_errno("cannot write " + path);
  }
  if (sync == Sync::kDurable) fsync_dir(dir);
}

void append_durable(const std::string& path, std::string_view line, Sync sync) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno("cannot write " + path);
  struct stat st;
  const off_t size_before = ::fstat(fd, &st) == 0 ? st.st_size : -1;
  try {
    write_or_throw(fd, line, path);
    if (sync == Sync::kDurable && ::fdatasync(fd) != 0) throw_errno("cannot write " + path);
  } catch (...) {
    // A full disk can take half a line: cut it off again (best effort; a
    // reader still detects a torn last line when even that fails).
    int e = errno;
    if (size_before >= 0 && ::ftruncate(fd, size_before) == 0) ::fdatasync(fd);
    ::close(fd);
    errno = e;
    throw;
  }
  ::close(fd);
}

void fsync_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot write " + path);
  if (::fdatasync(fd) != 0) {
    int e = errno;
    ::close(fd);
    errno = e;
    throw_errno("cannot write " + path);
  }
  ::close(fd);
}

namespace {

// The rest of read_file once `fd` is open; closes it.
std::string read_open_file(int fd, const std::string& path) {
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      errno = e;
      throw_errno("cannot read " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot read " + path);
  return read_open_file(fd, path);
}

std::optional<std::string> read_file_if_exists(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) return std::nullopt;
  if (fd < 0) throw_errno("cannot read " + path);
  return read_open_file(fd, path);
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace phoenix::util
