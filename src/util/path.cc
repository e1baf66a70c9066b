#include "util/path.h"

#include <filesystem>

#include "util/text.h"

namespace phoenix::util {

namespace fs = std::filesystem;

std::string normalize_path(const std::string& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::absolute(p), ec);
  if (ec) c = fs::absolute(p).lexically_normal();
  std::string s = c.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

bool same_or_inside(const std::string& path, const std::string& dir) {
  return path == dir || starts_with(path, dir == "/" ? dir : dir + "/");
}

}  // namespace phoenix::util
