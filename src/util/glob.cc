#include "util/glob.h"

namespace phoenix::util {

namespace {

bool match(std::string_view p, std::string_view s) {
  while (!p.empty()) {
    if (p.substr(0, 2) == "**") {
      std::string_view rest = p.substr(2);
      bool slash = !rest.empty() && rest[0] == '/';
      if (slash) rest.remove_prefix(1);
      // "**/" also matches zero folders.
      for (size_t i = 0; i <= s.size(); ++i) {
        if (slash && i > 0 && s[i - 1] != '/') continue;
        if (match(rest, s.substr(i))) return true;
      }
      return false;
    }
    if (p[0] == '*') {
      std::string_view rest = p.substr(1);
      for (size_t i = 0; i <= s.size(); ++i) {
        if (match(rest, s.substr(i))) return true;
        if (i < s.size() && s[i] == '/') return false;
      }
      return false;
    }
    if (s.empty()) return false;
    if (p[0] == '?') {
      if (s[0] == '/') return false;
    } else if (p[0] == '[') {
      size_t close = p.find(']', 1);
      if (close == std::string_view::npos) {
        if (s[0] != '[') return false;
      } else {
        std::string_view set = p.substr(1, close - 1);
        bool negate = !set.empty() && (set[0] == '!' || set[0] == '^');
        if (negate) set.remove_prefix(1);
        bool hit = false;
        for (size_t i = 0; i < set.size(); ++i) {
          if (i + 2 < set.size() && set[i + 1] == '-') {
            hit = hit || (s[0] >= set[i] && s[0] <= set[i + 2]);
            i += 2;
          } else {
            hit = hit || s[0] == set[i];
          }
        }
        if (hit == negate || s[0] == '/') return false;
        p.remove_prefix(close + 1);
        s.remove_prefix(1);
        continue;
      }
    } else if (p[0] != s[0]) {
      return false;
    }
    p.remove_prefix(1);
    s.remove_prefix(1);
  }
  return s.empty();
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view path) {
  if (pattern.empty()) return false;
  if (pattern.size() > 2 && pattern.substr(0, 2) == "./") pattern.remove_prefix(2);
  // "dir/" means everything below dir.
  if (pattern.back() == '/') {
    std::string p(pattern);
    p += "**";
    return glob_match(p, path);
  }
  if (pattern.find('/') == std::string_view::npos) {
    size_t slash = path.rfind('/');
    std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
    return match(pattern, base) || match(pattern, path);
  }
  if (pattern[0] == '/') pattern.remove_prefix(1);
  return match(pattern, path);
}

bool glob_match_any(const std::vector<std::string>& patterns, std::string_view path) {
  for (const auto& p : patterns)
    if (glob_match(p, path)) return true;
  return false;
}

}  // namespace phoenix::util
