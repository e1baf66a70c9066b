#include "util/strays.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace phoenix::util {

std::vector<pid_t> processes_with_env(const std::string& entry) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  const pid_t self = ::getpid();
  std::string env;
  while (struct dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == self) continue;
    int fd = ::open(("/proc/" + std::string(e->d_name) + "/environ").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    env.clear();
    char buf[8192];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) env.append(buf, static_cast<size_t>(n));
    ::close(fd);
    for (size_t at = env.find(entry); at != std::string::npos; at = env.find(entry, at + 1)) {
      bool starts = at == 0 || env[at - 1] == '\0';
      bool ends = at + entry.size() == env.size() || env[at + entry.size()] == '\0';
      if (starts && ends) {
        out.push_back(static_cast<pid_t>(pid));
        break;
      }
    }
  }
  ::closedir(d);
  return out;
}

std::string random_run_token() {
  unsigned char bytes[16] = {};
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  bool ok = fd >= 0 && ::read(fd, bytes, sizeof bytes) == static_cast<ssize_t>(sizeof bytes);
  if (fd >= 0) ::close(fd);
  if (!ok) {
    // Unique enough for our own children: pid, time, a counter.
    static std::atomic<unsigned> counter{0};
    unsigned long long v[2] = {
        static_cast<unsigned long long>(::getpid()) << 32 | counter++,
        static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count())};
    std::memcpy(bytes, v, sizeof bytes);
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

}  // namespace phoenix::util
