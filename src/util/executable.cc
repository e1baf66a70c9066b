// Finding a program on PATH, as a shell does (util/subprocess.h).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "util/subprocess_impl.h"

namespace phoenix::util {

bool is_executable_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

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

}  // namespace phoenix::util
